"""Benchmark of a growing history (issue 32): `manage.py bench history [--days N] [--jobs-per-day M] [--json]`.

It builds N days of a grid's history at M jobs a day, as the housekeeping would find them: the jobs that ended each
day (a tenth failed, closed or cancelled) with seven status-log rows each, a job-brokerage decision per ten jobs
with a real trace and its cycle's frame, a DIRAC match record per ten jobs, and a steady set of active jobs (a
quarter of a day's). The days are laid down from the newest back, so that after k of them the database holds the
last k days of a grid that has run k days, ending now: the pages, which read the clock, see what a shifter would.
After each day the housekeeping runs (archive, summaries, retention), and the shifter's pages and the API are
timed after the first day and after the last, with the query plans of the windowed reads. It reports the rate of
the archive move, the time to drop a day of expired history, and the bytes each table takes per day, projected to
a year under the default retention.

On PostgreSQL the tables are partitioned (brokerage.partitions) and the partitions of the past days are made as
a backfill would; on SQLite the same runs on plain tables (no sizes). Everything is removed afterwards."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from brokerage.engine import parse_scenario, trace_encode
from brokerage.engine.panda.synthetic import job_brokerage_scenario
from brokerage.models import (
    BrokerageCycle,
    CycleFrame,
    Decision,
    DiracMatchRecord,
    Job,
    PandaQueue,
    Site,
    Task,
)
from brokerage.partitions import PARTITIONED, partition_drop, partition_name, partitioned, partitions_make
from brokerage.plugins import plugin_registry
from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_row
from brokerage.services.housekeeping import housekeeping_run, jobs_archive

from .runner import Row, benchmark, insert_series, series_sql, time_pages

PREFIX = "BENCH-HISTORY-"
QUEUES = 200
TASKS = 2_000
DAY = 86_400
# a year under the default retention: how many days of each table are kept
KEPT_DAYS = {
    "panda_jobs": "JOB_DAYS",
    "panda_job_status_log": "JOB_STATUS_LOG_DAYS",
    "brokerage_decisions": "DECISION_DAYS",
    "brokerage_decision_hours": "DECISION_DAYS",
    "brokerage_decision_traces": "DECISION_TRACE_DAYS",
    "brokerage_cycle_frames": "DECISION_TRACE_DAYS",
    "brokerage_cycles": "DECISION_DAYS",
    "dirac_match_records": "DECISION_DAYS",
}


def _at(seconds_expr: str) -> str:
    """SQL for the %s parameter (a time) plus `seconds_expr` seconds, in this database's dialect."""
    if connection.vendor == "postgresql":
        return f"%s::timestamptz + ({seconds_expr}) * interval '1 second'"
    return f"datetime(%s, ({seconds_expr}) || ' seconds')"


TIMES = ("creationTime", "startTime", "endTime", "stateChangeTime", "modificationTime")


def _jobs_of_day(*, start: datetime, count: int, first_task: int, big_task: int | None, big: int) -> None:
    """`count` jobs that ended between `start` and a day later; the first `big` belong to `big_task`."""
    # inside the day, with the status logs (up to six seconds before)
    spread = f"(CAST(n AS BIGINT) * {DAY - 60}) / {count} + 30"
    task = (
        f"CASE WHEN n < {big} THEN {big_task} ELSE {first_task} + n %% {TASKS} END"
        if big_task
        else (f"{first_task} + n %% {TASKS}")
    )
    queue = "CASE " + " ".join(f"WHEN n %% {QUEUES} = {i} THEN '{PREFIX}Q{i:03d}'" for i in range(QUEUES)) + " END"
    insert_series(
        Job,
        count=count,
        computed={
            "task": task,
            "jobsetID": "n / 10",
            "jobStatus": "CASE n %% 20 WHEN 0 THEN 'failed' WHEN 1 THEN 'failed' WHEN 2 THEN 'closed' "
            "WHEN 3 THEN 'cancelled' ELSE 'finished' END",
            "computingSite": queue,
            "pilotErrorCode": "CASE WHEN n %% 20 < 2 THEN CASE n %% 3 WHEN 0 THEN 1099 WHEN 1 THEN 1137 "
            "ELSE 1213 END END",
            "creationTime": _at(f"{spread} - 7200"),
            "startTime": _at(f"{spread} - 3600"),
            "endTime": _at(spread),
            "stateChangeTime": _at(spread),
            "modificationTime": _at(spread),
        },
        computed_params={name: [start] for name in TIMES},
        value_of=lambda field: field.get_default(),
    )


def _status_logs(*, since_pk: int) -> None:
    """Seven status-log rows for each job inserted after `since_pk`, a second apart up to its last change."""
    quote = connection.ops.quote_name
    if connection.vendor == "postgresql":
        when = "j.\"stateChangeTime\" - (6 - series.n) * interval '1 second'"
    else:
        when = "datetime(j.\"stateChangeTime\", '-' || (6 - series.n) || ' seconds')"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote('panda_job_status_log')} (timestamp, old_status, new_status, reason, actor, "
            f'"PandaID", "computingSite") SELECT {when}, \'\', CASE series.n WHEN 6 THEN j."jobStatus" ELSE '
            f"'running' END, 'bench', 'bench', j.\"PandaID\", j.\"computingSite\" FROM panda_jobs j, {series_sql(7)} "
            f'WHERE j."PandaID" > %s',
            [since_pk],
        )


def _decisions_of_day(*, start: datetime, count: int, template: Decision, trace: bytes, first_task: int) -> None:
    spread = f"(CAST(n AS BIGINT) * {DAY}) / {count}"
    insert_series(
        Decision,
        count=count,
        computed={
            "task": f"{first_task} + n %% {TASKS}",
            "jobsetID": "n",
            "created": _at(spread),
            "outcome": "CASE WHEN n %% 5 = 0 THEN 'pending' ELSE 'assigned' END",
            "chosen": f"CASE WHEN n %% 5 = 0 THEN '' ELSE '{template.chosen}' END",
        },
        computed_params={"created": [start]},
        value_of=lambda field: getattr(template, field.attname),
    )
    end = start + timedelta(days=1)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO brokerage_decision_traces (decision_id, created, trace) SELECT id, created, %s "
            "FROM brokerage_decisions WHERE cycle_id = %s AND created >= %s AND created < %s",
            [trace, template.cycle_id, start, end],
        )
    insert_series(
        DiracMatchRecord,
        count=count,
        computed={"at": _at(spread), "matched": "n %% 4 <> 0", "job": "n", "seed": "n"},
        computed_params={"at": [start]},
        value_of=lambda field: {
            "site": "LCG.BENCH.ch",
            "gridCE": "ce01.bench.ch",
            "setup": "Production",
            "cpuTime": 86_400,
            # what a pilot of the DIRAC demo sends beside the columns (services.dirac: match_resource_stored)
            "resource": {"tags": ["MultiProcessor"], "platform": "x86_64-el9"},
        }.get(field.name, field.get_default()),
    )


def table_bytes() -> dict[str, int]:
    """Bytes of each partitioned table (all its partitions, indexes and TOAST), PostgreSQL only."""
    if not partitioned():
        return {}
    sizes = {}
    with connection.cursor() as cursor:
        for table in PARTITIONED:
            cursor.execute("SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree(%s)", [table])
            sizes[table] = int(cursor.fetchone()[0])
    return sizes


def _archive_bytes(*, jobs_per_day: int) -> dict[str, int] | None:
    """Bytes of the active jobs' partition, and of the archive per day of `jobs_per_day` jobs at the bytes a job it
    takes now (PostgreSQL only)."""
    if not partitioned():
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(pg_total_relation_size(relid)) FILTER (WHERE relid::regclass::text <> "
            "'panda_jobs_default' AND isleaf), 0), pg_total_relation_size('panda_jobs_default') "
            "FROM pg_partition_tree('panda_jobs')"
        )
        archived_bytes, active = cursor.fetchone()
        cursor.execute('SELECT count(*) FROM panda_jobs WHERE "archiveDay" IS NOT NULL')
        archived = cursor.fetchone()[0]
    return {"per_day": round(int(archived_bytes) / max(archived, 1) * jobs_per_day), "active": int(active)}


def _explain(queryset) -> list[str]:
    """The partitions a read touches, from its plan."""
    plan = queryset.explain()
    return sorted({word for word in plan.replace("(", " ").split() if "_p2" in word or word.endswith("_default")})


def _cleanup() -> None:
    tasks = list(Task.objects.filter(taskName__startswith="bench.history.").values_list("pk", flat=True))
    with connection.cursor() as cursor:
        if tasks:
            marks = ", ".join(["%s"] * len(tasks))
            cursor.execute(
                f'DELETE FROM panda_job_status_log WHERE "PandaID" IN (SELECT "PandaID" FROM panda_jobs '
                f'WHERE "jediTaskID" IN ({marks}))',
                tasks,
            )
            cursor.execute(f'DELETE FROM panda_jobs WHERE "jediTaskID" IN ({marks})', tasks)
            cursor.execute(
                f"DELETE FROM brokerage_decision_traces WHERE decision_id IN (SELECT id FROM "
                f'brokerage_decisions WHERE "jediTaskID" IN ({marks}))',
                tasks,
            )
            cursor.execute(f'DELETE FROM brokerage_decisions WHERE "jediTaskID" IN ({marks})', tasks)
        cursor.execute("DELETE FROM dirac_match_records WHERE site = 'LCG.BENCH.ch'")
    BrokerageCycle.objects.filter(worker="bench-history").delete()
    Task.objects.filter(pk__in=tasks).delete()
    PandaQueue.objects.filter(name__startswith=PREFIX).delete()
    Site.objects.filter(name__startswith=PREFIX).delete()


def _pages(*, big_active: int, big_archived: int | None, job_active: int, job_archived: int | None) -> list:
    pages = [
        ("overview", "/"),
        ("task page, 100k jobs active", f"/tasks/{big_active}/"),
        ("job page, active", f"/jobs/{job_active}/"),
        ("job list", "/jobs/"),
        ("decision list", "/decisions/"),
        ("queue page", f"/queues/{PREFIX}Q007/"),
        ("api jobs", "/api/v1/jobs/"),
        ("api decisions", "/api/v1/decisions/"),
    ]
    if big_archived is not None:
        pages += [
            ("task page, 100k jobs archived", f"/tasks/{big_archived}/"),
            ("job page, archived", f"/jobs/{job_archived}/"),
        ]
    return pages


@benchmark("history")
def history(*, quick: bool = False, days: int = 7, jobs_per_day: int = 1_000_000) -> list[Row]:
    """Day 1 against the last day, every page; archive rate, a day's drop, bytes per day (module docstring)."""
    if quick:
        days, jobs_per_day = min(days, 4), min(jobs_per_day, 4_000)
    big = min(100_000, jobs_per_day // 5)
    now = timezone.now().replace(microsecond=0)
    today = now.replace(hour=0, minute=0, second=0) - timedelta(days=1)  # day 1: yesterday, midnight to midnight
    _cleanup()
    site = Site.objects.create(name=f"{PREFIX}SITE", role="nucleus")
    PandaQueue.objects.bulk_create(PandaQueue(name=f"{PREFIX}Q{i:03d}", site=site) for i in range(QUEUES))
    tasks = Task.objects.bulk_create(
        Task(taskName=f"bench.history.{i}", status="running", creationDate=now, modificationTime=now)
        for i in range(TASKS + 2)
    )
    first_task, big_active, big_archived = tasks[0].pk, tasks[TASKS].pk, tasks[TASKS + 1].pk
    scenario = parse_scenario(job_brokerage_scenario(queues=1000, seed=1))
    broker = plugin_registry().get(scenario.plugin)()
    frame = broker.frame(scenario)
    engine_decision = broker.decide(scenario)
    cycle = cycle_start(plugin=scenario.plugin, now=now - timedelta(days=days), frame=frame)
    # the history's decisions share one cycle, closed at once: a cycle still running holds back the hourly roll-up
    # of the decisions it may yet write (services.summaries)
    BrokerageCycle.objects.filter(pk=cycle.pk).update(
        worker="bench-history", status="succeeded", finished=cycle.started
    )
    template = decision_row(cycle=cycle, item=DecisionToStore(engine_decision, task_id=first_task))
    trace = trace_encode(engine_decision, frame=frame)
    rows: list[Row] = []
    params = {"days": days, "jobs_per_day": jobs_per_day, "database": connection.vendor}
    sizes_before = table_bytes()
    archive_rates, housekeeping_seconds = [], []
    first_archive: dict[str, int] | None = None
    job_active = job_archived = None
    try:
        active = {"jobStatus": "running", "computingSite": f"{PREFIX}Q001", "stateChangeTime": now, "startTime": now}
        with transaction.atomic():  # the steady set of active jobs
            insert_series(
                Job,
                count=jobs_per_day // 4,
                computed={"task": f"{first_task} + n %% {TASKS}"},
                value_of=lambda field: active.get(field.name, field.get_default()),
            )
        for day in range(1, days + 1):
            start = today - timedelta(days=day - 1)
            if partitioned():
                for table in PARTITIONED:
                    if table != "panda_jobs":
                        partitions_make(table, since=start.date(), until=(start + timedelta(days=1)).date())
            last = Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
            with transaction.atomic():
                big_task = big_active if day == 1 else big_archived if day == days else None
                _jobs_of_day(start=start, count=jobs_per_day, first_task=first_task, big_task=big_task, big=big)
                _status_logs(since_pk=last)
                _decisions_of_day(
                    start=start, count=jobs_per_day // 10, template=template, trace=trace, first_task=first_task
                )
            if day == 1:
                job_active = last + 1
            if day == days:
                job_archived = last + 1
            if partitioned():
                # what autovacuum does over a day as the rows come in (visibility, hint bits, BRIN ranges and
                # statistics), so that the day is read, archived and dropped as a day of a running grid would be
                with connection.cursor() as cursor:
                    cursor.execute("VACUUM (ANALYZE)")
            began = time.perf_counter()
            moved = jobs_archive(now=now, batch=settings.HOUSEKEEPING_BATCH)
            if moved:
                archive_rates.append(moved / (time.perf_counter() - began))
                # a grid archives its days oldest first, each after the one before, so the archive's time-ordered
                # indexes grow at their right edge; the benchmark lays its days down newest first, so every day
                # after the first one archived splits pages in the middle of those indexes: the archive's bytes
                # a day are those of its first day, which arrives as a grid's days do
                first_archive = first_archive or _archive_bytes(jobs_per_day=jobs_per_day)
            began = time.perf_counter()
            run = housekeeping_run(now=now)
            housekeeping_seconds.append(time.perf_counter() - began)
            if run.errors:
                raise RuntimeError(f"housekeeping failed on day {day}: {run.errors}")
            if day in (1, days):
                if partitioned():
                    with connection.cursor() as cursor:
                        cursor.execute("VACUUM ANALYZE panda_jobs")
                archived = day == days and days > 3
                pages = _pages(
                    big_active=big_active,
                    big_archived=big_archived if archived else None,
                    job_active=job_active,
                    job_archived=job_archived if archived else None,
                )
                timed = [(name, url, lambda name, day=day: {"page": name, "day": day}) for name, url in pages]
                rows += time_pages("history", timed, repeat=5 if quick else 15, params=params)
        sizes = table_bytes()
        window = Decision.objects.filter(created__gte=now - timedelta(days=1))
        per_day = {table: round((sizes[table] - sizes_before.get(table, 0)) / days) for table in sizes}
        year = {
            table: per_day[table] * int(getattr(settings, KEPT_DAYS.get(table, "HISTORY_DAYS"))) for table in per_day
        }
        archive = first_archive and {**first_archive, "active": _archive_bytes(jobs_per_day=jobs_per_day)["active"]}
        if archive is not None:
            # the jobs: the active partition holds the last JOB_ARCHIVE_AFTER_DAYS of ended jobs (and the active
            # ones) under the model's twelve indexes, as big at day 7 as in a year; the archive grows by a day of
            # jobs under its slim set each day
            per_day["panda_jobs_archive"] = archive["per_day"]
            year["panda_jobs"] = archive["per_day"] * settings.JOB_DAYS + archive["active"]
        drop_ms, dropped = None, 0
        if partitioned():
            oldest = partition_name("panda_job_status_log", (today - timedelta(days=days - 1)).date(), "day")
            with connection.cursor() as cursor:  # the partition counted once first, as the drop does
                cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(oldest)}")
            began = time.perf_counter()
            dropped = partition_drop("panda_job_status_log", oldest)
            drop_ms = round((time.perf_counter() - began) * 1000, 1)
        # what a DELETE of the next day's rows costs instead (and leaves dead rows for the vacuum)
        second = today - timedelta(days=days - 2)
        began = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM panda_job_status_log WHERE timestamp >= %s AND timestamp < %s",
                [second, second + timedelta(days=1)],
            )
            deleted = cursor.rowcount
        delete_ms = round((time.perf_counter() - began) * 1000, 1)
        rows.append(
            {
                "bench": "history",
                "params": {**params, "measure": "housekeeping"},
                "median_ms": round(sorted(housekeeping_seconds)[len(housekeeping_seconds) // 2] * 1000, 1),
                "p95_ms": round(max(housekeeping_seconds) * 1000, 1),
                "n": days,
                "archive_jobs_per_s": round(min(archive_rates)) if archive_rates else None,
                "drop_day_ms": drop_ms,
                "drop_day_rows": dropped,
                "delete_day_ms": delete_ms,
                "delete_day_rows": deleted,
                "decision_window_partitions": _explain(window),
                "bytes_per_day": per_day,
                "bytes_per_year_gb": round(sum(year.values()) / 1e9, 1),
                "bytes_per_year_per_table_gb": {table: round(value / 1e9, 2) for table, value in year.items()},
            }
        )
    finally:
        CycleFrame.objects.filter(cycle_id=cycle.pk).delete()
        cycle_finish(cycle=cycle, now=now)
        _cleanup()
    return rows
