"""Issue 32: the archived months lose their (computingSite, startTime) index, 88 of the 383 bytes an archived job
takes. Its one reader, the last job start per queue, now reads the active jobs alone: a job is archived
JOB_ARCHIVE_AFTER_DAYS after it ended, so every job that started since then is still active, and the rules that
read the last start compare it with a few hours (selectors.timeouts.last_start_window)."""

from django.db import migrations

COLUMNS = '("computingSite", "startTime")'


def _archived_months(cursor) -> list[str]:
    cursor.execute(
        "SELECT relid::regclass::text FROM pg_partition_tree('panda_jobs') "
        "WHERE isleaf AND relid::regclass::text <> 'panda_jobs_default'"
    )
    return [row[0] for row in cursor.fetchall()]


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        months = _archived_months(cursor)
        cursor.execute(
            "SELECT format('%%I.%%I', schemaname, indexname) FROM pg_indexes "
            "WHERE format('%%I.%%I', schemaname, tablename)::regclass::text = ANY(%s) AND indexdef LIKE %s",
            [months, f"%{COLUMNS}"],
        )
        indexes = [row[0] for row in cursor.fetchall()]
    for index in indexes:
        schema_editor.execute(f"DROP INDEX {index}")


def make(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        months = _archived_months(cursor)
    for month in months:
        schema_editor.execute(f"CREATE INDEX ON {month} {COLUMNS}")


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0035_time_indexes_ascending"),
    ]

    operations = [migrations.RunPython(drop, make)]
