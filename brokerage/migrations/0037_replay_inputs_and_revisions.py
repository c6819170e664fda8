"""Issue 34: what every decision was decided on (ScenarioPart, CycleInputs, DecisionTrace.inputs), partitioned by
day on PostgreSQL as the traces are (0023), and gdpconfig revisions (the first one holds the rows as found)."""

import hashlib
import importlib
import json

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

PARTITIONING = importlib.import_module("brokerage.migrations.0023_time_partitions")
LAYOUT = (
    ("brokerage_scenario_parts", "day", "day", ("id", "day"), "", "", False),
    ("brokerage_cycle_inputs", "started", "day", ("cycle_id", "started"), "", "", False),
)


def partition(apps, schema_editor):
    PARTITIONING.partition(apps, schema_editor, layout=LAYOUT)


def unpartition(apps, schema_editor):
    PARTITIONING.unpartition(apps, schema_editor, layout=LAYOUT)


def first_revision(apps, schema_editor):
    rows = sorted(
        [row.app, row.component, row.key, row.vo, row.value, row.type, row.is_custom]
        for row in apps.get_model("brokerage", "GdpConfig").objects.all()
    )
    if not rows:
        return
    digest = hashlib.blake2b(json.dumps(rows, separators=(",", ":")).encode(), digest_size=16).hexdigest()
    apps.get_model("brokerage", "GdpConfigRevision").objects.create(
        action="first", summary=f"{len(rows)} rows as found", rows=rows, digest=digest
    )


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0036_archive_without_site_start"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="decisiontrace",
            name="inputs",
            field=models.BinaryField(
                blank=True,
                help_text="The decision's own side of its scenario (task, job set, datasets; zlib JSON): with its cycle's inputs (CycleInputs), what replay runs it again on. Empty for decisions stored before inputs were kept.",
                null=True,
            ),
        ),
        migrations.CreateModel(
            name="CycleInputs",
            fields=[
                (
                    "cycle",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="stored_inputs",
                        serialize=False,
                        to="brokerage.brokeragecycle",
                    ),
                ),
                ("started", models.DateTimeField(help_text="The cycle's start: what retention goes by.")),
                ("head", models.JSONField(default=dict, help_text="The scenario's own small keys (plugin, now).")),
                (
                    "parts",
                    models.JSONField(
                        default=dict, help_text="Part name → digest of the ScenarioPart of the cycle's day."
                    ),
                ),
            ],
            options={
                "db_table": "brokerage_cycle_inputs",
                "indexes": [models.Index(fields=["started"], name="cycle_inputs_started")],
            },
        ),
        migrations.CreateModel(
            name="GdpConfigRevision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("first", "first revision (the rows as found)"),
                            ("save", "a row saved"),
                            ("delete", "a row deleted"),
                            ("profile", "a profile applied"),
                            ("restore", "an earlier revision restored"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "summary",
                    models.CharField(blank=True, default="", help_text="What changed, in a line.", max_length=256),
                ),
                ("comment", models.CharField(blank=True, default="", max_length=256)),
                (
                    "username",
                    models.CharField(blank=True, default="", help_text="Kept if the user is deleted.", max_length=150),
                ),
                ("rows", models.JSONField(default=list, help_text="Every stored row after the change.")),
                (
                    "digest",
                    models.CharField(
                        help_text="BLAKE2b-128 of the rows: equal configurations, equal digests.", max_length=32
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="gdpconfig_revisions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "gdpconfig revision",
                "verbose_name_plural": "gdpconfig revisions",
                "db_table": "gdpconfig_revisions",
                "ordering": ["-created", "-id"],
            },
        ),
        migrations.AddField(
            model_name="brokeragecycle",
            name="revision",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                help_text="The gdpconfig revision the cycle ran under (none before revisions were kept).",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="cycles",
                to="brokerage.gdpconfigrevision",
            ),
        ),
        migrations.CreateModel(
            name="ScenarioPart",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "day",
                    models.DateTimeField(
                        help_text="Midnight (UTC) of the day of the cycles that read it: what retention goes by."
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        help_text="Which part of the scenario: queues, queue_stats, network, …", max_length=24
                    ),
                ),
                ("digest", models.CharField(help_text="BLAKE2b-128 of the part's canonical JSON.", max_length=32)),
                ("size", models.PositiveIntegerField(help_text="Bytes of the JSON before compression.")),
                ("data", models.BinaryField()),
            ],
            options={
                "db_table": "brokerage_scenario_parts",
                "constraints": [models.UniqueConstraint(fields=("day", "digest"), name="scenario_part_once_a_day")],
            },
        ),
        migrations.AddConstraint(
            model_name="gdpconfigrevision",
            constraint=models.CheckConstraint(
                condition=models.Q(("action__in", ["first", "save", "delete", "profile", "restore"])),
                name="gdpconfig_revision_action_known",
            ),
        ),
        migrations.AddField(
            model_name="gdpconfigchange",
            name="revision",
            field=models.ForeignKey(
                blank=True,
                help_text="The revision this change made (none for changes made before revisions were kept).",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="changes",
                to="brokerage.gdpconfigrevision",
            ),
        ),
        migrations.RunPython(partition, unpartition),
        migrations.RunPython(first_revision, migrations.RunPython.noop),
    ]
