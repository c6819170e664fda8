"""Issue 32: on PostgreSQL the tables that only grow become range-partitioned on their time column (the layout is
brokerage.partitions.PARTITIONED; the housekeeping makes partitions ahead and drops expired ones whole). Each table
is rebuilt: renamed aside, a partitioned parent made like it (columns, defaults, identity, checks), partitions for
the rows it holds and a default one, the rows copied, its indexes and foreign keys made again on the parent, the
old table dropped. Unapplying does the reverse. SQLite keeps plain tables: nothing runs there.

The layout is copied here rather than imported, so that this migration keeps doing what it did when the code
moves on."""

from datetime import UTC, date, datetime, timedelta

from django.db import migrations

# The job archive's slim set on each archived month (brokerage.partitions.ARCHIVED_JOB_SQL, as of this migration);
# the model's indexes stay on the default partition, the active jobs.
ARCHIVED_JOB_SQL = (
    'CREATE UNIQUE INDEX ON {name} ("PandaID")',
    'CREATE INDEX ON {name} ("jediTaskID", "jobStatus", "computingSite")',
    'CREATE INDEX ON {name} ("jediTaskID", "stateChangeTime")',
    'CREATE INDEX ON {name} ("stateChangeTime" DESC, "PandaID" DESC)',
    'CREATE INDEX ON {name} ("computingSite", "startTime")',
    'CREATE INDEX ON {name} ("mergeJob_id") WHERE "mergeJob_id" IS NOT NULL',
    "ALTER TABLE {name} ADD CHECK (\"jobStatus\" IN ('finished', 'failed', 'closed', 'cancelled'))",
)

# table, column, period, primary key of the parent (empty: a unique index per partition), unique column, default
# partition's check, dated
LAYOUT = (
    ("panda_jobs", "archiveDay", "month", (), "PandaID", '"archiveDay" IS NULL', True),
    ("panda_job_status_log", "timestamp", "day", ("id", "timestamp"), "", "", False),
    ("jedi_task_status_log", "timestamp", "month", ("id", "timestamp"), "", "", False),
    ("jedi_dataset_status_log", "timestamp", "month", ("id", "timestamp"), "", "", False),
    ("dirac_job_status_log", "timestamp", "month", ("id", "timestamp"), "", "", False),
    ("wmcore_request_status_log", "timestamp", "month", ("id", "timestamp"), "", "", False),
    ("wmcore_element_status_log", "timestamp", "month", ("id", "timestamp"), "", "", False),
    ("brokerage_cycles", "started", "month", ("id", "started"), "", "", False),
    ("brokerage_decisions", "created", "month", ("id", "created"), "", "", False),
    ("brokerage_decision_traces", "created", "day", ("decision_id", "created"), "", "", False),
    ("brokerage_cycle_frames", "started", "day", ("cycle_id", "started"), "", "", False),
    ("dirac_match_records", "at", "month", ("id", "at"), "", "", False),
    ("wmcore_jobsubmitter_reports", "at", "month", ("id", "at"), "", "", False),
)


def q(name):
    return '"' + name.replace('"', '""') + '"'


def period_start(day, period):
    return day if period == "day" else day.replace(day=1)


def period_next(start, period):
    return start + timedelta(days=1) if period == "day" else (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def bound(day, dated):
    return f"'{day.isoformat()}'" if dated else f"'{day.isoformat()} 00:00:00+00'"


def _definitions(cursor, table):
    """The table's primary key name, its other indexes (name, definition) and foreign keys (name, definition)."""
    cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'", [table])
    primary = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = %s::regclass AND NOT i.indisprimary",
        [table],
    )
    indexes = cursor.fetchall()
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'",
        [table],
    )
    return primary, indexes, cursor.fetchall()


def _identity_columns(cursor, table):
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attidentity <> '' AND NOT attisdropped",
        [table],
    )
    return [row[0] for row in cursor.fetchall()]


def _rebuild(cursor, table, aside, make_parent, make_children, *, indexes_from=None, indexes_to=None):
    """Renames `table` to `aside`, makes the new `table` (make_parent), moves the indexes (read from
    `indexes_from`, made on `indexes_to`: the table itself by default) and foreign keys over, copies the rows,
    drops `aside`."""
    cursor.execute(f"ALTER TABLE {q(table)} RENAME TO {q(aside)}")
    primary, indexes, foreign = _definitions(cursor, aside)
    # unique constraints (issue 34's parts, unique on day and digest: they hold the partition key) move as
    # constraints; the indexes behind them are theirs
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'u'",
        [aside],
    )
    uniques = cursor.fetchall()
    indexes = [(name, d) for name, d in indexes if name not in {u for u, _ in uniques}]
    if indexes_from is not None:
        indexes = [(name, d) for name, d in _definitions(cursor, indexes_from)[1] if "UNIQUE" not in d]
    for name in primary:
        cursor.execute(f"ALTER TABLE {q(aside)} DROP CONSTRAINT {q(name)}")
    for name, _ in uniques:
        cursor.execute(f"ALTER TABLE {q(aside)} DROP CONSTRAINT {q(name)}")
    for name, _ in foreign:
        cursor.execute(f"ALTER TABLE {q(aside)} DROP CONSTRAINT {q(name)}")
    for name, _ in indexes:
        cursor.execute(f"DROP INDEX {q(name)}")
    make_parent()
    make_children()
    cursor.execute(f"INSERT INTO {q(table)} SELECT * FROM {q(aside)}")
    for column in _identity_columns(cursor, table):
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence(%s, %s), coalesce((SELECT max({q(column)}) FROM {q(table)}), 0) + 1, "
            "false)",
            [q(table), column],
        )
    target = indexes_to or table
    sources = {aside, indexes_from} - {None}
    for name, definition in indexes:
        for source in sources:
            for only in ("ONLY ", ""):
                definition = definition.replace(f" ON {only}public.{q(source)} ", f" ON public.{q(target)} ")
                definition = definition.replace(f" ON {only}public.{source} ", f" ON public.{q(target)} ")
        cursor.execute(definition)
    for name, definition in [*uniques, *foreign]:
        cursor.execute(f"ALTER TABLE {q(table)} ADD CONSTRAINT {q(name)} {definition}")
    cursor.execute(f"DROP TABLE {q(aside)} CASCADE")


def partition(apps, schema_editor, layout=LAYOUT):
    """Partitions each table of `layout` (later migrations partition more tables with it)."""
    if schema_editor.connection.vendor != "postgresql":
        return
    today = datetime.now(UTC).date()
    with schema_editor.connection.cursor() as cursor:
        for table, column, period, key, unique, default_check, dated in layout:
            aside = f"{table}_unpartitioned"

            def make_parent():
                cursor.execute(
                    f"CREATE TABLE {q(table)} (LIKE {q(aside)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
                    f"INCLUDING IDENTITY) PARTITION BY RANGE ({q(column)})"
                )
                if key:
                    cursor.execute(f"ALTER TABLE {q(table)} ADD PRIMARY KEY ({', '.join(q(c) for c in key)})")

            def make_children():
                default = f"{table}_default"
                cursor.execute(f"CREATE TABLE {q(default)} PARTITION OF {q(table)} DEFAULT")
                if default_check:
                    cursor.execute(
                        f"ALTER TABLE {q(default)} ADD CONSTRAINT {q(default + '_check')} CHECK ({default_check})"
                    )
                if unique:
                    cursor.execute(f"CREATE UNIQUE INDEX ON {q(default)} ({q(unique)})")
                cursor.execute(f"SELECT min({q(column)}), max({q(column)}) FROM {q(aside)}")
                first, last = cursor.fetchone()
                first = first.date() if isinstance(first, datetime) else first
                last = last.date() if isinstance(last, datetime) else last
                start = period_start(min(first or today, today), period)
                until = max(last or today, today)
                while start <= until:
                    end = period_next(start, period)
                    name = f"{table}_p{start:%Y%m%d}" if period == "day" else f"{table}_p{start:%Y%m}"
                    cursor.execute(
                        f"CREATE TABLE {q(name)} PARTITION OF {q(table)} FOR VALUES FROM ({bound(start, dated)}) "
                        f"TO ({bound(end, dated)})"
                    )
                    for statement in ARCHIVED_JOB_SQL if table == "panda_jobs" else ():
                        cursor.execute(statement.format(name=q(name)))
                    start = end

            # the jobs' model indexes go to the active jobs only (the archive has its slim set)
            to = f"{table}_default" if table == "panda_jobs" else None
            _rebuild(cursor, table, aside, make_parent, make_children, indexes_to=to)


def unpartition(apps, schema_editor, layout=LAYOUT):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table, column, period, key, unique, default_check, dated in reversed(layout):
            aside = f"{table}_partitioned"

            def make_parent():
                cursor.execute(
                    f"CREATE TABLE {q(table)} (LIKE {q(aside)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
                    "INCLUDING IDENTITY)"
                )
                cursor.execute(f"ALTER TABLE {q(table)} ADD PRIMARY KEY ({q(key[0] if key else unique)})")

            source = f"{table}_default" if table == "panda_jobs" else None
            _rebuild(cursor, table, aside, make_parent, lambda: None, indexes_from=source)


class Migration(migrations.Migration):
    atomic = True

    dependencies = [
        ("brokerage", "0022_no_constraints_into_partitioned"),
    ]

    operations = [migrations.RunPython(partition, unpartition)]
