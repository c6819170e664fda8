"""`/metrics` in Prometheus's text format (issue 53): what every process counted (django-prometheus's requests,
brokerage.metrics' decisions, candidates removed, job moves, housekeeping rows, Celery tasks' waits and run times,
summed over the processes' files in PROMETHEUS_MULTIPROC_DIR) and the grid's state read at the scrape
(brokerage/selectors/metrics.py), kept METRICS_CACHE_SECONDS in the cache every process shares, so that a flood of
scrapes costs one round of queries a period.

Read with `Authorization: Bearer <METRICS_BEARER_TOKEN>` when that is set (Prometheus' `authorization` setting),
else by the API's read rule (anonymous in a demo, a signed-in user in production). No throttle: the cache bounds the
cost. The metrics and their labels: README, "Metrics".
"""

from __future__ import annotations

import hmac
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily

from brokerage.selectors.metrics import (
    JOB_LABELS,
    metrics_celery_queues,
    metrics_jobs,
    metrics_shares,
    metrics_tasks,
)
from monitor.api.permissions import read_allowed

CACHE_KEY = "metrics:grid-state"
_lock = threading.Lock()


def grid_state() -> dict:
    """The grid's state as plain rows, from the shared cache or read now (one process at a time in this one)."""
    state = cache.get(CACHE_KEY)
    if state is not None:
        return state
    with _lock:
        state = cache.get(CACHE_KEY)
        if state is None:
            began = time.perf_counter()
            jobs = metrics_jobs(series_max=settings.METRICS_JOB_SERIES)
            state = {
                "jobs": jobs.rows,
                "sites_folded": jobs.sites_folded,
                "tasks": metrics_tasks(),
                "shares": metrics_shares(),
                "celery": metrics_celery_queues(timeout=settings.METRICS_BROKER_TIMEOUT_SECONDS),
                "at": time.time(),
            }
            state["seconds"] = time.perf_counter() - began
            cache.set(CACHE_KEY, state, timeout=settings.METRICS_CACHE_SECONDS)
    return state


class GridStateCollector:
    """The grid's state as gauges, from grid_state()."""

    def collect(self):
        state = grid_state()
        jobs = GaugeMetricFamily(
            "panda_jobs", "Jobs not ended, by status, global share, queue, its cloud, nucleus and resource type.",
            labels=JOB_LABELS,
        )  # fmt: skip
        for labels, n in state["jobs"]:
            jobs.add_metric(labels, n)
        yield jobs
        folded = GaugeMetricFamily(
            "brokerage_metrics_job_sites_folded",
            'Queues whose jobs are counted under computingsite="other" to keep panda_jobs within METRICS_JOB_SERIES.',
        )
        folded.add_metric([], state["sites_folded"])
        yield folded
        tasks = GaugeMetricFamily("panda_tasks", "Tasks by status and work queue.", labels=("status", "workqueue"))
        for status, queue, n in state["tasks"]:
            tasks.add_metric((status, queue), n)
        yield tasks
        for key, name, text in (
            ("executing", "panda_share_executing_hs06", "HS06 of the share's sent and running jobs."),
            ("queued", "panda_share_queued_hs06", "HS06 of the share's activated jobs."),
            ("target", "panda_share_target_hs06", "The share's target: its part of the grid's executing HS06."),
        ):
            family = GaugeMetricFamily(name, text, labels=("gshare",))
            for share in state["shares"]:
                family.add_metric((share["share"],), share[key])
            yield family
        celery = GaugeMetricFamily("brokerage_celery_queue_length", "Messages waiting in Celery's queue.",
                                   labels=("queue",))  # fmt: skip
        for queue, n in (state["celery"] or {}).items():
            celery.add_metric((queue,), n)
        yield celery
        up = GaugeMetricFamily("brokerage_metrics_broker_up", "1 when the broker answered the queue lengths' query.")
        up.add_metric([], 0 if state["celery"] is None else 1)
        yield up
        age = GaugeMetricFamily("brokerage_metrics_state_age_seconds", "How old the grid's state is (it is cached).")
        age.add_metric([], max(0.0, time.time() - state["at"]))
        yield age
        cost = GaugeMetricFamily("brokerage_metrics_state_seconds", "How long reading the grid's state took.")
        cost.add_metric([], state["seconds"])
        yield cost


def metrics_allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_BEARER_TOKEN
    if token:
        sent = request.headers.get("Authorization", "")
        return sent.startswith("Bearer ") and hmac.compare_digest(sent[7:].encode(), token.encode())
    return read_allowed(request)


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        return HttpResponse("metrics: send the bearer token (METRICS_BEARER_TOKEN) or sign in\n", status=403,
                            content_type="text/plain")  # fmt: skip
    # the classic text format, which every Prometheus reads (2.x reads version=1.0.0 only by falling back to it)
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_PLAIN_0_0_4)


def metrics_text(*, path: str | None = None) -> bytes:
    """What a scrape answers: the processes' files in `path` (PROMETHEUS_MULTIPROC_DIR) summed, and the grid's state."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path or settings.PROMETHEUS_MULTIPROC_DIR)
    registry.register(GridStateCollector())
    return generate_latest(registry)
