"""Time partitions of what only grows, on PostgreSQL (issue 32): PostgreSQL's own declarative range partitioning,
managed here so that `now` is an input like everywhere else (the housekeeping's --now, the tests moving it past a
boundary). docs/decisions.md says why not pg_partman or django-postgres-extra.

Each table in PARTITIONED is range-partitioned on a time column, by day or by month, with a DEFAULT partition
that catches a row no partition covers (an old timestamp, a housekeeping that has not run), so a write never
fails for want of a partition. The housekeeping makes the coming partitions ahead (moving any rows the default
partition holds for them), and drops whole partitions once everything in them is past retention: never a DELETE of
a partition's rows.

Partitions are named after their first day (`<table>_p20261124`, `<table>_p202611`): the name is the bound.

`panda_jobs` is partitioned on `archiveDay`: its default partition is the active table (`archiveDay` null, a
CHECK says so) and carries the model's indexes; archived jobs go to monthly partitions by the day they ended,
each with the archive's slim set (ARCHIVED_JOB_SQL). It can have no primary key on the parent (the key would have
to include the nullable `archiveDay`): each partition has a unique index on PandaID, and the PandaID sequence
keeps them unique across partitions.

SQLite, the embedded default, keeps plain tables: nothing here runs there, and the housekeeping deletes in batches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import connection, transaction


@dataclass(frozen=True)
class Partitioning:
    table: str
    column: str
    period: str  # "day" or "month"
    ahead: int  # periods made ahead of now
    key: tuple[str, ...] = ()  # the parent's primary key (with the column); empty: a unique index per partition
    unique_per_partition: str = ""  # the column each partition keeps unique when the parent has no primary key
    default_check: str = ""  # a CHECK on the default partition (the active jobs: archiveDay IS NULL)
    dated: bool = False  # the column is a date, not a timestamp
    # statements for each new time partition ({name}: its quoted name): the archive's own slim indexes and checks
    partition_sql: tuple[str, ...] = ()


# The job archive keeps five indexes, not the active table's twelve (issue 32: bytes and the move's speed): what
# the readers of archived jobs use (a job by PandaID, a task's jobs by status and queue and its latest ones, the
# job list's window, merge links), and a CHECK that lets the planner skip the archive for active statuses. The last
# start per queue is read from the active jobs only (selectors.timeouts.last_start_subquery), so the archive has no
# (computingSite, startTime): 88 of its 383 bytes a job.
ARCHIVED_JOB_SQL = (
    'CREATE UNIQUE INDEX ON {name} ("PandaID")',
    'CREATE INDEX ON {name} ("jediTaskID", "jobStatus", "computingSite")',
    'CREATE INDEX ON {name} ("jediTaskID", "stateChangeTime")',
    'CREATE INDEX ON {name} ("stateChangeTime", "PandaID")',
    'CREATE INDEX ON {name} ("mergeJob_id") WHERE "mergeJob_id" IS NOT NULL',
    "ALTER TABLE {name} ADD CHECK (\"jobStatus\" IN ('finished', 'failed', 'closed', 'cancelled'))",
)


PARTITIONED: dict[str, Partitioning] = {
    p.table: p
    for p in (
        Partitioning("panda_jobs", "archiveDay", "month", 1, unique_per_partition="PandaID",
                     default_check='"archiveDay" IS NULL', dated=True, partition_sql=ARCHIVED_JOB_SQL),
        Partitioning("panda_job_status_log", "timestamp", "day", 3),  # no key: migration 0029
        Partitioning("jedi_task_status_log", "timestamp", "month", 1, key=("id", "timestamp")),
        Partitioning("jedi_dataset_status_log", "timestamp", "month", 1, key=("id", "timestamp")),
        Partitioning("dirac_job_status_log", "timestamp", "month", 1, key=("id", "timestamp")),
        Partitioning("wmcore_request_status_log", "timestamp", "month", 1, key=("id", "timestamp")),
        Partitioning("wmcore_element_status_log", "timestamp", "month", 1, key=("id", "timestamp")),
        Partitioning("brokerage_cycles", "started", "month", 1, key=("id", "started")),
        Partitioning("brokerage_decisions", "created", "month", 1, key=("id", "created")),
        Partitioning("brokerage_decision_traces", "created", "day", 3, key=("decision_id", "created")),
        Partitioning("brokerage_cycle_frames", "started", "day", 3, key=("cycle_id", "started")),
        Partitioning("brokerage_scenario_parts", "day", "day", 3, key=("id", "day")),
        Partitioning("brokerage_cycle_inputs", "started", "day", 3, key=("cycle_id", "started")),
        Partitioning("dirac_match_inputs", "at", "day", 3, key=("record_id", "at")),
        Partitioning("dirac_match_records", "at", "month", 1, key=("id", "at")),
        Partitioning("wmcore_jobsubmitter_reports", "at", "month", 1, key=("id", "at")),
        Partitioning("job_timeout_summary", "taken_at", "day", 3, key=("id", "taken_at")),
        Partitioning("panda_job_error_hours", "hour", "month", 1, key=("id", "hour")),
        Partitioning("panda_job_state_hours", "hour", "month", 1, key=("id", "hour")),
        Partitioning("brokerage_decision_hours", "hour", "month", 1, key=("id", "hour")),
    )
}  # fmt: skip


def partitioned() -> bool:
    return connection.vendor == "postgresql"


def period_start(day: date, period: str) -> date:
    return day if period == "day" else day.replace(day=1)


def period_next(start: date, period: str) -> date:
    if period == "day":
        return start + timedelta(days=1)
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def partition_name(table: str, start: date, period: str) -> str:
    return f"{table}_p{start:%Y%m%d}" if period == "day" else f"{table}_p{start:%Y%m}"


NAME = re.compile(r"_p(\d{8}|\d{6})$")


def _bound(spec: Partitioning, day: date) -> str:
    return f"'{day.isoformat()}'" if spec.dated else f"'{day.isoformat()} 00:00:00+00'"


def partitions_list(table: str) -> list[tuple[str, date, date]]:
    """The table's time partitions as (name, first day, day after the last), oldest first (not the default)."""
    spec = PARTITIONED[table]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [table],
        )
        names = [row[0] for row in cursor.fetchall()]
    found = []
    for name in names:
        match = NAME.search(name)
        if match is None:
            continue
        digits = match.group(1)
        start = date(int(digits[:4]), int(digits[4:6]), int(digits[6:8]) if len(digits) == 8 else 1)
        found.append((name, start, period_next(start, spec.period)))
    return sorted(found, key=lambda item: item[1])


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def partition_make(table: str, start: date) -> bool:
    """Makes the partition of `table` that begins on `start` (a period's first day) if it is missing, moving into
    it whatever rows the default partition holds for its range. Returns whether it made one. One transaction."""
    spec = PARTITIONED[table]
    name = partition_name(table, start, spec.period)
    end = period_next(start, spec.period)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # as in partition_drop
        cursor.execute("SELECT to_regclass(%s)", [name])
        if cursor.fetchone()[0] is not None:
            return False
        column, default = _quote(spec.column), _quote(f"{table}_default")
        lower, upper = _bound(spec, start), _bound(spec, end)
        cursor.execute(f"CREATE TABLE {_quote(name)} (LIKE {_quote(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
        for statement in spec.partition_sql:
            cursor.execute(statement.format(name=_quote(name)))
        if not spec.default_check:  # rows that came before their partition: moved in, then the range is attached
            cursor.execute(
                f"WITH moved AS (DELETE FROM {default} WHERE {column} >= {lower} AND {column} < {upper} RETURNING *) "
                f"INSERT INTO {_quote(name)} SELECT * FROM moved"
            )
        cursor.execute(
            f"ALTER TABLE {_quote(table)} ATTACH PARTITION {_quote(name)} FOR VALUES FROM ({lower}) TO ({upper})"
        )
    return True


def partitions_make(table: str, *, since: date, until: date) -> list[str]:
    """Makes every missing partition of `table` from the period holding `since` to the one holding `until`."""
    spec = PARTITIONED[table]
    made, start = [], period_start(since, spec.period)
    while start <= until:
        if partition_make(table, start):
            made.append(partition_name(table, start, spec.period))
        start = period_next(start, spec.period)
    return made


def partitions_ahead(table: str, *, now: datetime) -> list[str]:
    """The partitions the coming writes need: the current period and `ahead` more."""
    spec = PARTITIONED[table]
    start = period_start(now.astimezone(UTC).date(), spec.period)
    until = start
    for _ in range(spec.ahead):
        until = period_next(until, spec.period)
    return partitions_make(table, since=start, until=until)


def partitions_missing(*, now: datetime) -> list[str]:
    """The partitions of the current and the next period that no partitioned table may be without (the housekeeping
    makes them ahead), named as they would be; one query for every table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent::regclass::text = ANY(%s)",
            [list(PARTITIONED)],
        )
        present = {row[0] for row in cursor.fetchall()}
    missing = []
    for table, spec in PARTITIONED.items():
        start = period_start(now.astimezone(UTC).date(), spec.period)
        for first in (start, period_next(start, spec.period)):
            name = partition_name(table, first, spec.period)
            if name not in present:
                missing.append(name)
    return missing


def partitions_expired(table: str, *, before: datetime | date) -> list[tuple[str, date, date]]:
    """Partitions whose every row is older than `before` (their range ends at or before it)."""
    day = before if isinstance(before, date) and not isinstance(before, datetime) else None
    limit = day or before.astimezone(UTC).date()
    exact_midnight = day is not None or before.astimezone(UTC).time() == datetime.min.time()
    return [
        (name, start, end)
        for name, start, end in partitions_list(table)
        if end < limit or (end == limit and exact_midnight)
    ]


def brin_ranges_summarize(table: str, *, since: date) -> int:
    """Summarises the BRIN ranges not summarised yet in the partitions of `table` that reach past `since` (and its
    default partition); returns how many. A BRIN index skips only summarised ranges: until autovacuum gets to the
    rows just written (autosummarize queues a bounded number of requests, and a bulk load overflows it), a read by
    time scans every page written since, which for the job status log is up to a day's seven million rows. The
    housekeeping calls this before it rolls up the hours, so that reading the last hour reads an hour of pages."""
    names = [name for name, _start, end in partitions_list(table) if end > since] + [f"{table}_default"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(brin_summarize_new_values(i.indexrelid)), 0) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
            "WHERE am.amname = 'brin' AND i.indrelid = ANY(SELECT to_regclass(name) FROM unnest(%s::text[]) name)",
            [names],
        )
        return int(cursor.fetchone()[0])


def partition_drop(table: str, name: str) -> int:
    """Drops one partition whole; returns the rows it held. The rows are counted first, outside the lock (an
    expired partition takes no more writes), so the table is locked only for DETACH and DROP; that transaction is
    bounded by the session's lock timeout (a busy table is left for the next run)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {_quote(name)}")
        rows = cursor.fetchone()[0]
    with transaction.atomic(), connection.cursor() as cursor:
        # fire the deferred foreign-key checks of this transaction's earlier writes now: PostgreSQL refuses to drop
        # a table with such events pending
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE {_quote(table)} DETACH PARTITION {_quote(name)}")
        cursor.execute(f"DROP TABLE {_quote(name)}")
    return rows
