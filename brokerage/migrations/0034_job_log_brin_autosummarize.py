"""Issue 32: the job status log's BRIN index on the time (0028) summarises each range of pages as soon as the next
one is begun (autosummarize), instead of waiting for a vacuum: a BRIN index skips only summarised ranges, so reads
of the last hours (the hourly roll-up, the overview's and the queue page's newest hour) scanned every page written
since the table was last vacuumed. A partitioned index takes no ALTER INDEX … SET: it is made again, and its
partitions' indexes with it (they take the parent's options). SQLite keeps its B-tree."""

from django.db import migrations

TIME_INDEX = "joblog_time"


def autosummarize(apps, schema_editor, *, on: bool = True):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP INDEX {TIME_INDEX}")
    options = " WITH (autosummarize = on)" if on else ""
    schema_editor.execute(f'CREATE INDEX {TIME_INDEX} ON panda_job_status_log USING brin ("timestamp"){options}')


def no_autosummarize(apps, schema_editor):
    autosummarize(apps, schema_editor, on=False)


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0033_decision_hours"),
    ]

    operations = [migrations.RunPython(autosummarize, no_autosummarize)]
