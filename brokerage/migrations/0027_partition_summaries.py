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


# A unique constraint (0023's tables had none) is taken off while the table is rebuilt and put back on the parent:
# it holds the partition column, so PostgreSQL keeps it across the partitions.
UNIQUE = {"job_timeout_summary": ("timeout_summary_unique", '("taken_at", "computingSite", "rule")')}


def _unique(schema_editor, *, add: bool) -> None:
    for table, (name, columns) in UNIQUE.items():
        if add:
            schema_editor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" UNIQUE {columns}')
        else:
            schema_editor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')


def partition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    _unique(schema_editor, add=False)
    PARTITIONING.partition(apps, schema_editor, layout=LAYOUT)
    _unique(schema_editor, add=True)


def unpartition(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    _unique(schema_editor, add=False)
    PARTITIONING.unpartition(apps, schema_editor, layout=LAYOUT)
    _unique(schema_editor, add=True)


class Migration(migrations.Migration):
    atomic = True

    dependencies = [
        ("brokerage", "0026_job_state_hours"),
    ]

    operations = [migrations.RunPython(partition, unpartition)]
