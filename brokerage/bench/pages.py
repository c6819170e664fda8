"""Benchmark of the dashboard pages on a big database: the task page of a task with 100,000 jobs in a database of
1,000,000 jobs, its error summary, a job page, the job list, the task list, the queue page, the overview and the
search, server time through Django's test client (PostgreSQL through
scripts/with_postgres.sh). The jobs are inserted with one INSERT … SELECT over a generated series, so the
setup takes seconds, not an hour; everything is removed afterwards."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from brokerage.models import BrokerageCycle, Job, PandaQueue, Site, Task
from brokerage.services.decisions import cycle_finish, cycle_start

from .runner import Row, benchmark, insert_series, time_pages

STATUSES = ("finished", "finished", "finished", "running", "activated", "assigned", "failed", "defined", "starting")


def _insert_jobs(*, count: int, task_of: str, queues: list[str], now) -> None:
    """count jobs; `task_of` is an SQL expression of n giving the jediTaskID."""
    case_status = (
        "CASE " + " ".join(f"WHEN n %% {len(STATUSES)} = {i} THEN '{s}'" for i, s in enumerate(STATUSES)) + " END"
    )
    case_queue = "CASE " + " ".join(f"WHEN n %% {len(queues)} = {i} THEN '{q}'" for i, q in enumerate(queues)) + " END"
    an_hour_ago = now - timedelta(hours=1)
    failed = STATUSES.index("failed")
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
        },
        value_of=lambda field: (
            an_hour_ago
            if field.name in ("creationTime", "modificationTime", "stateChangeTime")
            else field.get_default()
        ),
    )


@benchmark("pages")
def pages(*, quick: bool = False) -> list[Row]:
    """Server time of the pages a shifter opens on a task with 100,000 jobs in a database of 1,000,000 (module
    docstring); the rows are removed afterwards. The goal: the task page within 100 ms (issue 18)."""
    total, big = (20_000, 2_000) if quick else (1_000_000, 100_000)
    tasks_count = 1_000
    now = timezone.now()
    with transaction.atomic():
        site = Site.objects.create(name="BENCH-PAGES-SITE", role="nucleus")
        queues = [PandaQueue.objects.create(name=f"BENCH-PAGES-Q{i:02d}", site=site) for i in range(50)]
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
        _insert_jobs(count=big, task_of=str(big_task.pk), queues=[q.name for q in queues], now=now)
        _insert_jobs(
            count=total - big, task_of=f"{first_id} + n %% {tasks_count - 1}", queues=[q.name for q in queues], now=now
        )
        job_of_big_task = Job.objects.filter(task=big_task).order_by("pk").values_list("pk", flat=True)[500]
        cycle = cycle_start(plugin="atlas_prod_job", now=now)
        cycle_finish(cycle=cycle, now=now)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE panda_jobs")
        repeat = 5 if quick else 15
        requests = [
            (name, url, lambda name: {"page": name})
            for name, url in (
                ("task page", f"/tasks/{big_task.pk}/?refresh=0"),
                ("task error summary", f"/tasks/{big_task.pk}/errors/"),
                ("job page", f"/jobs/{job_of_big_task}/"),
                ("job list of the task", f"/jobs/?task={big_task.pk}&status=failed"),
                ("task list", "/tasks/?refresh=0"),
                ("task list filtered", "/tasks/?status=running&sort=-priority&refresh=0"),
                ("queue page", f"/queues/{queues[0].name}/?refresh=0"),
                ("overview", "/"),
                ("search listing matches", "/search/?q=BENCH-PAGES-Q1"),
            )
        ]
        rows = time_pages(
            "pages", requests, repeat=repeat, params={"jobs": total, "task_jobs": big, "database": connection.vendor}
        )
        transaction.set_rollback(True)
    BrokerageCycle.objects.filter(pk=cycle.pk).delete()
    return rows
