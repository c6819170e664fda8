"""Benchmark of the dashboard pages on a big database: the task page of a task with 100,000 jobs in a database of
1,000,000 jobs, the task list and the queue page, server time through Django's test client (PostgreSQL through
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
    insert_series(
        Job,
        count=count,
        computed={
            "task": task_of,
            "jobStatus": case_status,
            "computingSite": case_queue,
            "jobsetID": f"({task_of}) * 10 + n %% 10",
        },
        value_of=lambda field: (
            an_hour_ago
            if field.name in ("creationTime", "modificationTime", "stateChangeTime")
            else field.get_default()
        ),
    )


@benchmark("pages")
def pages(*, quick: bool = False) -> list[Row]:
    """Server time of the task page (one task with 100,000 jobs, 1,000,000 in the database), the task list and
    the queue page; the rows are removed afterwards."""
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
                ("task list", "/tasks/?refresh=0"),
                ("task list filtered", "/tasks/?status=running&sort=-priority&refresh=0"),
                ("queue page", f"/queues/{queues[0].name}/?refresh=0"),
            )
        ]
        rows = time_pages(
            "pages", requests, repeat=repeat, params={"jobs": total, "task_jobs": big, "database": connection.vendor}
        )
        transaction.set_rollback(True)
    BrokerageCycle.objects.filter(pk=cycle.pk).delete()
    return rows
