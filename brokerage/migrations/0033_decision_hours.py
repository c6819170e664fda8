"""Issue 32: the decision explorer counts a window's decisions from hourly summaries (DecisionHour), partitioned
monthly on PostgreSQL as the job summaries are (0027); a summary mark says from which hour it holds the hours
(`since`), so that a window reaching back past it counts the earlier hours from the rows. Marks made before this
take the first hour their summary holds a row of."""

import importlib

from django.db import migrations, models
from django.db.models import Min

PARTITIONING = importlib.import_module("brokerage.migrations.0023_time_partitions")
LAYOUT = (("brokerage_decision_hours", "hour", "month", ("id", "hour"), "", "", False),)
SUMMARY_OF_MARK = {"job_error_hours": "JobErrorHour", "job_state_hours": "JobStateHour"}


def marks_since(apps, schema_editor):
    marks = apps.get_model("brokerage", "SummaryMark")
    for mark in marks.objects.filter(since__isnull=True):
        model = SUMMARY_OF_MARK.get(mark.name)
        first = apps.get_model("brokerage", model).objects.aggregate(first=Min("hour"))["first"] if model else None
        mark.since = min(first, mark.until) if first is not None else mark.until
        mark.save(update_fields=["since"])


def partition(apps, schema_editor):
    PARTITIONING.partition(apps, schema_editor, layout=LAYOUT)


def unpartition(apps, schema_editor):
    PARTITIONING.unpartition(apps, schema_editor, layout=LAYOUT)


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0032_match_record_no_site_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="DecisionHour",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "hour",
                    models.DateTimeField(help_text="The hour's start (UTC); decisions whose `created` falls in it."),
                ),
                ("plugin", models.CharField(max_length=64)),
                (
                    "outcome",
                    models.CharField(
                        choices=[
                            ("assigned", "assigned"),
                            ("pending", "pending"),
                            ("throttled", "throttled"),
                            ("matched", "matched"),
                            ("no_match", "no_match"),
                        ],
                        max_length=16,
                    ),
                ),
                ("primary_reason", models.CharField(blank=True, default="", max_length=32)),
                ("n", models.PositiveIntegerField()),
            ],
            options={
                "db_table": "brokerage_decision_hours",
                "ordering": ["-hour"],
            },
        ),
        migrations.AddField(
            model_name="summarymark",
            name="since",
            field=models.DateTimeField(blank=True, help_text="The first hour rolled up.", null=True),
        ),
        migrations.RunPython(marks_since, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="summarymark",
            name="until",
            field=models.DateTimeField(help_text="The end of the last hour rolled up."),
        ),
        migrations.AddConstraint(
            model_name="summarymark",
            constraint=models.CheckConstraint(
                condition=models.Q(("since__isnull", True), ("since__lte", models.F("until")), _connector="OR"),
                name="summary_mark_span",
            ),
        ),
        migrations.AddIndex(
            model_name="decisionhour",
            index=models.Index(fields=["hour"], name="decision_hour"),
        ),
        migrations.AddConstraint(
            model_name="decisionhour",
            constraint=models.CheckConstraint(condition=models.Q(("n__gt", 0)), name="decision_hour_counts_decisions"),
        ),
        migrations.RunPython(partition, unpartition),
    ]
