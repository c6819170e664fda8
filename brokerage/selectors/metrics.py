"""The grid's state as /metrics reports it at a scrape (issue 53; monitor.metrics): jobs not ended by the dimensions
ATLAS's job dashboards group by, tasks by status and work queue, the global shares' running HS06 against their
targets, and the length of Celery's queues. Each is one grouped query (or one broker call) whatever the grid's
size; the caller keeps the answer METRICS_CACHE_SECONDS."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from brokerage.adapters.shares import global_share_usage
from brokerage.models import Job, PandaQueue, Task
from brokerage.models.jobs import JOB_ENDED
from brokerage.states import JOB

# the statuses a job is counted in: every status of seed 000's machine but the ended ones (those grow with history;
# their rate is brokerage_job_moves_total)
JOB_ACTIVE = tuple(status for status in JOB.statuses if status not in JOB_ENDED)
JOB_LABELS = ("status", "gshare", "computingsite", "cloud", "nucleus", "resource_type")
OTHER = "other"


@dataclass(frozen=True)
class JobSeries:
    """The jobs' series: (labels in JOB_LABELS' order, count) each, and how many queues were folded into
    computingsite="other" to keep the series within the limit."""

    rows: list[tuple[tuple[str, ...], int]]
    sites_folded: int


def metrics_jobs(*, series_max: int) -> JobSeries:
    """Jobs not ended, counted by status × gshare × computingsite × cloud (of the queue's site) × nucleus × resource
    type. Past `series_max` series the queues with the fewest jobs are folded into computingsite "other", as few as
    keep the series within it; the counts add up to the same total either way."""
    clouds = dict(PandaQueue.objects.values_list("name", "site__cloud"))
    grouped = (
        Job.objects.filter(jobStatus__in=JOB_ACTIVE)
        .values_list("jobStatus", "gshare", "computingSite", "nucleus", "resource_type")
        .annotate(n=Count("pk"))
        .order_by()
    )
    rows = [
        ((status, gshare, site, clouds.get(site) or "", nucleus, resource_type), n)
        for status, gshare, site, nucleus, resource_type, n in grouped
    ]
    kept = _sites_kept(rows, series_max)
    if kept is None:
        return JobSeries(rows=sorted(rows), sites_folded=0)
    folded: dict[tuple[str, ...], int] = {}
    for labels, n in rows:
        key = labels if labels[2] in kept else (*labels[:2], OTHER, *labels[3:])
        folded[key] = folded.get(key, 0) + n
    sites = {labels[2] for labels, _ in rows}
    return JobSeries(rows=sorted(folded.items()), sites_folded=len(sites - kept))


def _sites_kept(rows: list[tuple[tuple[str, ...], int]], series_max: int) -> set[str] | None:
    """The queues whose series stay their own (the most jobs first), None when all of them fit: the most queues
    that keep the series within `series_max` (found by halving: fewer queues kept never makes more series)."""
    if len(rows) <= series_max:
        return None
    totals: dict[str, int] = {}
    for labels, n in rows:
        totals[labels[2]] = totals.get(labels[2], 0) + n
    ranked = sorted(totals, key=lambda site: (-totals[site], site))

    def series(k: int) -> int:
        kept = set(ranked[:k])
        return len({labels if labels[2] in kept else (*labels[:2], OTHER, *labels[3:]) for labels, _ in rows})

    low, high = 0, len(ranked)  # series(low) may still exceed the limit: then every queue is folded
    while low < high:
        middle = (low + high + 1) // 2
        if series(middle) <= series_max:
            low = middle
        else:
            high = middle - 1
    return set(ranked[:low])


def metrics_tasks() -> list[tuple[str, str, int]]:
    """(status, work queue name, tasks) for every status and work queue that has tasks ("" for none)."""
    grouped = Task.objects.values_list("status", "workQueue__queue_name").annotate(n=Count("pk")).order_by()
    return sorted((status, queue or "", n) for status, queue, n in grouped)


def metrics_shares() -> list[dict[str, Any]]:
    """Each leaf global share's executing and queued HS06 and its target (adapters.shares.global_share_usage)."""
    return [
        {"share": row["share"].name, "executing": row["executing_hs06"], "queued": row["queued_hs06"],
         "target": row["target_hs06"]}
        for row in global_share_usage()
        if row["leaf"]
    ]  # fmt: skip


def metrics_celery_queues(*, timeout: float, url: str | None = None) -> dict[str, int] | None:
    """The messages waiting in each of Celery's queues (the broker's own count; a queue no worker declared yet has
    none), None when the broker (Celery's, or the one at `url`) does not answer within `timeout` seconds."""
    from config.celery import app

    names = [app.conf.task_default_queue or "celery"]
    try:
        with app.connection_for_read(url) as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout)
            channel = connection.default_channel
            # declared as a worker declares it (not passive: RabbitMQ closes the channel on an unknown queue)
            return {name: int(channel.queue_declare(queue=name, durable=True, auto_delete=False).message_count)
                    for name in names}  # fmt: skip
    except Exception:  # the broker away or the queue not declared yet: the scrape says so (source up 0)
        return None
