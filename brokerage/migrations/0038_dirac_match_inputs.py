"""Issue 34: what every DIRAC matching request drew from (DiracMatchInputs), partitioned by day on PostgreSQL as
the decisions' inputs are (0037)."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

import brokerage.models.base

PARTITIONING = importlib.import_module("brokerage.migrations.0023_time_partitions")
LAYOUT = (("dirac_match_inputs", "at", "day", ("record_id", "at"), "", "", False),)


def partition(apps, schema_editor):
    PARTITIONING.partition(apps, schema_editor, layout=LAYOUT)


def unpartition(apps, schema_editor):
    PARTITIONING.unpartition(apps, schema_editor, layout=LAYOUT)


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0037_replay_inputs_and_revisions"),
    ]

    operations = [
        migrations.CreateModel(
            name="DiracMatchInputs",
            fields=[
                (
                    "record",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="stored_inputs",
                        serialize=False,
                        to="brokerage.diracmatchrecord",
                    ),
                ),
                ("at", models.DateTimeField(help_text="The request's time: what retention goes by.")),
                (
                    "config",
                    models.CharField(help_text="Digest of the ScenarioPart holding the configuration.", max_length=32),
                ),
                (
                    "trail",
                    brokerage.models.base.CompactJSONField(
                        help_text="The tries, the task queues drawn and the claims, in order."
                    ),
                ),
            ],
            options={
                "verbose_name": "DIRAC matching request's inputs",
                "verbose_name_plural": "DIRAC matching requests' inputs",
                "db_table": "dirac_match_inputs",
                "indexes": [models.Index(fields=["at"], name="dirac_match_inputs_at")],
            },
        ),
        migrations.RunPython(partition, unpartition),
    ]
