"""Benchmark of the dashboard pages on a big database: the task page of a task with 100,000 jobs in a database of
1,000,000 jobs, its error summary, a job page, the job list, the task list, the queue page, the overview and the
search, server time through Django's test client (PostgreSQL through scripts/with_postgres.sh). The jobs are
inserted with one INSERT … SELECT over a generated series, so the setup takes seconds, not an hour; their state
changes are spread over the last day, as a running grid's are.

The rows are committed and the jobs table vacuumed and analysed before timing, the state autovacuum keeps a busy
table in (PostgreSQL ≥ 13 vacuums after inserts too): the visibility map lets the per-status counts be read from
the index alone. The day's whole hours are then rolled up into the hourly summaries, as the housekeeping does every
hour on a running grid (a day of jobs with no summaries is only ever seen in the first hours after installing), and
the active jobs counted per queue, as the beat does every minute (JobCountNow).
Everything is removed afterwards, the summaries and their marks with the jobs when the benchmark made them."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from brokerage.models import (
    BrokerageCycle,
    Job,
    JobCountNow,
    JobErrorHour,
    JobStateHour,
    PandaQueue,
    Site,
    SummaryMark,
    Task,
)
from brokerage.selectors.jobs import JOB_ERROR_HOURS, JOB_STATE_HOURS
from brokerage.selectors.queues import JOB_COUNTS
from brokerage.services.decisions import cycle_finish, cycle_start
from brokerage.services.summaries import job_counts_refresh, job_error_hours_rollup, job_state_hours_rollup

from .runner import Row, benchmark, insert_series, time_pages

STATUSES = ("finished", "finished", "finished", "running", "activated", "assigned", "failed", "defined", "starting")
PREFIX = "BENCH-PAGES-"


def _insert_jobs(*, count: int, task_of: str, queues: list[str], now) -> None:
    """count jobs; `task_of` is an SQL expression of n giving the jediTaskID."""
    case_status = (
        "CASE " + " ".join(f"WHEN n %% {len(STATUSES)} = {i} THEN '{s}'" for i, s in enumerate(STATUSES)) + " END"
    )
    case_queue = "CASE " + " ".join(f"WHEN n %% {len(queues)} = {i} THEN '{q}'" for i, q in enumerate(queues)) + " END"
    failed = STATUSES.index("failed")
    # a job's last change n × 37 seconds modulo a day ago (SQL interval arithmetic in both dialects' words)
    if connection.vendor == "postgresql":
        changed = "%s::timestamptz - ((n * 37) %% 86400) * interval '1 second'"
    else:
        changed = "datetime(%s, '-' || ((n * 37) %% 86400) || ' seconds')"
    insert_series(
        Job,
        count=count,
        computed={
            "task": task_of,
            "jobStatus": case_status,
            "computingSite": case_queue,
            "jobsetID": f"({task_of}) * 10 + n %% 10",
            # failed jobs carry one of four pilot errors, as the simulator's do
            "pilotErrorCode": f"CASE WHEN n %% {len(STATUSES)} = {failed} THEN "
            f"CASE n %% 4 WHEN 0 THEN 1099 WHEN 1 THEN 1137 WHEN 2 THEN 1213 ELSE 1305 END END",
            "attemptNr": "1 + n %% 3",
            # 50 users and 5 clouds, for the job list's facets, the errors page and the user page
            "prodUserName": "'benchuser' || (n %% 50)",
            "cloud": "CASE n %% 5 WHEN 0 THEN 'CERN' WHEN 1 THEN 'DE' WHEN 2 THEN 'US' WHEN 3 THEN 'UK' ELSE 'FR' END",
            "stateChangeTime": changed,
            "modificationTime": changed,
        },
        value_of=lambda field: now - timedelta(days=1) if field.name == "creationTime" else field.get_default(),
        computed_params={"stateChangeTime": [now], "modificationTime": [now]},
    )


def _cleanup(*, marks_made: tuple[str, ...] = ()) -> None:
    """Removes the benchmark's rows (raw deletes: a million jobs through the ORM's collector would take minutes),
    its queues' hourly summaries and the summary marks it made (`marks_made`: those that were not there before)."""
    tasks = list(Task.objects.filter(taskName__startswith="bench.pages.").values_list("pk", flat=True))
    if tasks:
        with connection.cursor() as cursor:
            table, column = Job._meta.db_table, Job._meta.get_field("task").column
            quote = connection.ops.quote_name
            cursor.execute(
                f"DELETE FROM {quote(table)} WHERE {quote(column)} IN ({', '.join(['%s'] * len(tasks))})", tasks
            )
    Task.objects.filter(pk__in=tasks).delete()
    PandaQueue.objects.filter(name__startswith=PREFIX).delete()
    Site.objects.filter(name__startswith=PREFIX).delete()
    JobErrorHour.objects.filter(computingSite__startswith=PREFIX).delete()
    JobStateHour.objects.filter(computingSite__startswith=PREFIX).delete()
    JobCountNow.objects.filter(computingSite__startswith=PREFIX).delete()
    SummaryMark.objects.filter(name__in=marks_made).delete()


@benchmark("pages")
def pages(*, quick: bool = False) -> list[Row]:
    """Server time of the pages a shifter opens on a task with 100,000 jobs in a database of 1,000,000 (module
    docstring); the rows are removed afterwards. The goal: the task page within 100 ms (issue 18)."""
    total, big = (20_000, 2_000) if quick else (1_000_000, 100_000)
    tasks_count = 1_000
    now = timezone.now()
    _cleanup()
    cycle = None
    marks = (JOB_ERROR_HOURS, JOB_STATE_HOURS, JOB_COUNTS)
    marks_made = tuple(set(marks) - set(SummaryMark.objects.filter(name__in=marks).values_list("name", flat=True)))
    try:
        with transaction.atomic():
            site = Site.objects.create(name=f"{PREFIX}SITE", role="nucleus")
            queues = [PandaQueue.objects.create(name=f"{PREFIX}Q{i:02d}", site=site) for i in range(50)]
            tasks = Task.objects.bulk_create(
                Task(
                    taskName=f"bench.pages.{i}",
                    status="running",
                    gshare="MC 16",
                    currentPriority=500,
                    creationDate=now,
                    modificationTime=now,
                )
                for i in range(tasks_count)
            )
            big_task, first_id = tasks[0], tasks[1].pk
            names = [q.name for q in queues]
            _insert_jobs(count=big, task_of=str(big_task.pk), queues=names, now=now)
            _insert_jobs(count=total - big, task_of=f"{first_id} + n %% {tasks_count - 1}", queues=names, now=now)
            cycle = cycle_start(plugin="atlas_prod_job", now=now)
            cycle_finish(cycle=cycle, now=now)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(Job._meta.db_table)}")
        job_error_hours_rollup(now=now)  # what the hourly housekeeping has done on a running grid
        job_state_hours_rollup(now=now)
        job_counts_refresh(now=timezone.now())  # the beat's, every minute: the site and queue lists read it
        job_of_big_task = Job.objects.filter(task=big_task).order_by("pk").values_list("pk", flat=True)[big // 2]
        repeat = 5 if quick else 15
        # the search box sends an ID naming one thing straight to its page (302) and shows a choice (200) when
        # it names several: which the job's ID does depends on the IDs the database's sequences gave out
        answers = {"search an ID": (200, 302)}
        requests = [
            (name, url, lambda name: {"page": name}, answers.get(name, (200,)))
            for name, url in (
                ("task page", f"/tasks/{big_task.pk}/?refresh=0"),
                ("task error summary", f"/tasks/{big_task.pk}/errors/"),
                ("job page", f"/jobs/{job_of_big_task}/"),
                ("job list of the task", f"/jobs/?task={big_task.pk}&status=failed"),
                ("task list", "/tasks/?refresh=0"),
                ("task list filtered", "/tasks/?status=running&sort=-priority&refresh=0"),
                ("queue page", f"/queues/{queues[0].name}/?refresh=0"),
                ("overview", "/"),
                ("search listing matches", f"/search/?q={PREFIX}Q1"),
                ("search an ID", f"/search/?q={job_of_big_task}"),
                ("site list", "/sites/"),
                # issue 50: BigPanDA's pages
                ("job list with facets", "/jobs/?refresh=0"),
                ("job list by user and error", "/jobs/?user=benchuser7&error=pilot:1305&refresh=0"),
                ("errors page", "/errors/?refresh=0"),
                ("errors page of a user", "/errors/?user=benchuser7&refresh=0"),
                ("user page", "/users/benchuser7/?refresh=0"),
                ("site page", f"/sites/{PREFIX}SITE/?refresh=0"),
                ("overview 7 days", "/?span=7d"),
                ("overview 30 days", "/?span=30d"),
            )
        ]
        return time_pages(
            "pages", requests, repeat=repeat, params={"jobs": total, "task_jobs": big, "database": connection.vendor}
        )
    finally:
        _cleanup(marks_made=marks_made)
        if cycle is not None:
            BrokerageCycle.objects.filter(pk=cycle.pk).delete()
