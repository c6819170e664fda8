"""Issue 32: on PostgreSQL three more tables that only grow become range-partitioned on their time column, as
0023 did for the others (its code, with this layout): the watchdog's counts per pass by day, the hourly job error
and state summaries by month. The housekeeping then drops them whole (TIMEOUT_SUMMARY_DAYS, HISTORY_DAYS).
SQLite keeps plain tables: nothing runs there."""

import importlib

from django.db import migrations

PARTITIONING = importlib.import_module("brokerage.migrations.0023_time_partitions")

# table, column, period, primary key of the parent, unique column, default partition's check, dated
LAYOUT = (
    ("job_timeout_summary", "taken_at", "day", ("id", "taken_at"), "", "", False),
    ("panda_job_error_hours", "hour", "month", ("id", "hour"), "", "", False),
    ("panda_job_state_hours", "hour", "month", ("id", "hour"), "", "", False),
)


def partition(apps, schema_editor):
    PARTITIONING.partition(apps, schema_editor, layout=LAYOUT)


def unpartition(apps, schema_editor):
    PARTITIONING.unpartition(apps, schema_editor, layout=LAYOUT)


class Migration(migrations.Migration):
    atomic = True

    dependencies = [
        ("brokerage", "0026_job_state_hours"),
    ]

    operations = [migrations.RunPython(partition, unpartition)]
