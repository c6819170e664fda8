"""Issue 32: the job status log (seven rows a job, kept 90 days) loses two of its four B-tree indexes. A job's history
is read through the foreign key's index on PandaID, so (PandaID, timestamp) goes; the index on the time becomes a
BRIN index on PostgreSQL (rows arrive in time order: a few pages for a day of rows, instead of an entry each), a
B-tree on SQLite. Django's BrinIndex exists on PostgreSQL only, so the time index is made here, not by the model."""

from django.db import migrations, models

TIME_INDEX = "joblog_time"


def time_index(apps, schema_editor):
    method = "USING brin " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(f'CREATE INDEX {TIME_INDEX} ON panda_job_status_log {method}("timestamp")')


def no_time_index(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX {TIME_INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0027_partition_summaries"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="jobstatuslog",
            name="joblog_job_time",
        ),
        migrations.AlterField(
            model_name="jobstatuslog",
            name="timestamp",
            field=models.DateTimeField(),
        ),
        migrations.RunPython(time_index, no_time_index),
    ]
