"""Reading timeout states: which rule watches a job, when it times out and how long is left (seed 000), for the
monitor, the API and the watchdog. The rules themselves are brokerage.watchdog's plain functions."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Sum

from brokerage.adapters.grid import last_start_subquery
from brokerage.grid_clock import grid_speed
from brokerage.models import (
    Job,
    JobTimeoutSummary,
    PandaQueue,
)
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.states import CO_JUMBO_JOB
from brokerage.watchdog import TimeoutJob, TimeoutLimits, TimeoutQueue, TimeoutState, job_timeout_state

JOB_FIELDS = (
    "pk",
    "jobStatus",
    "currentPriority",
    "stateChangeTime",
    "modificationTime",
    "jobSubStatus",
    "computingSite",
    "prodSourceLabel",
    "eventService",
)
ANALYSIS_LABELS = ("user", "panda")


def timeout_queues(*, now: datetime, names: list[str] | None = None) -> dict[str, TimeoutQueue]:
    """The queues (all, or those named) as the timeout rules see them, with the time a job last started there
    (one query). The last start is read per queue from the end of its (computingSite, startTime) index, not
    by grouping a week of jobs (issue 32: that grew with the history, three times slower after a week)."""
    queues = PandaQueue.objects.all() if names is None else PandaQueue.objects.filter(name__in=names)
    return {
        row["name"]: TimeoutQueue(
            status=row["status"],
            catchall=row["catchall"],
            workflow=row["workflow"],
            lastStart=row["last_start"],
            transtimehi=row["transtimehi"],
            transtimelo=row["transtimelo"],
        )
        for row in queues.annotate(last_start=last_start_subquery(now=now)).values(
            "name", "status", "catchall", "workflow", "transtimehi", "transtimelo", "last_start"
        )
    }


def timeout_limits(*, queues: dict[str, TimeoutQueue], vo: str = "atlas") -> TimeoutLimits:
    config = gdpconfig_view(vo=vo)
    return TimeoutLimits.from_config(
        config.get, workflows=sorted({q.workflow for q in queues.values() if q.workflow}), grid_speed=grid_speed()
    )


def timeout_job(row: dict) -> TimeoutJob:
    return TimeoutJob(
        jobStatus=row["jobStatus"],
        currentPriority=row["currentPriority"],
        stateChangeTime=row["stateChangeTime"],
        modificationTime=row["modificationTime"],
        jobSubStatus=row["jobSubStatus"],
        analysis=row["prodSourceLabel"] in ANALYSIS_LABELS,
        co_jumbo=row["eventService"] == CO_JUMBO_JOB,
    )


def job_timeout_states(*, job_ids: list[int], now: datetime) -> dict[int, TimeoutState]:
    """The timeout state of each job at `now` (four queries whatever the number of jobs): for the monitor and
    the API. A job at a queue we do not know is judged as at an online queue that never started a job."""
    rows = list(Job.objects.filter(pk__in=job_ids).values(*JOB_FIELDS))
    queues = timeout_queues(now=now, names=sorted({row["computingSite"] for row in rows}))
    limits = timeout_limits(queues=queues)
    return {
        row["pk"]: job_timeout_state(timeout_job(row), queues.get(row["computingSite"], TimeoutQueue()), limits, now)
        for row in rows
    }


def timeout_pass_latest() -> datetime | None:
    latest = JobTimeoutSummary.objects.order_by("-taken_at").values_list("taken_at", flat=True).first()
    return latest


def timeouts_overview(*, now: datetime) -> dict[str, Any]:
    """The latest watchdog pass by rule and by queue, the passes over the last day, and the active jobs closest
    to their deadline among the oldest ones of each watched status."""
    latest = timeout_pass_latest()
    rows = JobTimeoutSummary.objects.filter(taken_at=latest) if latest else JobTimeoutSummary.objects.none()
    by_rule = list(
        rows.values("rule")
        .annotate(watched=Sum("watched"), approaching=Sum("approaching"), timed_out=Sum("timed_out"))
        .order_by("rule")
    )
    by_queue = list(
        rows.values("computingSite")
        .annotate(watched=Sum("watched"), approaching=Sum("approaching"), timed_out=Sum("timed_out"))
        .order_by("-timed_out", "-approaching", "computingSite")[:50]
    )
    history = [
        {"time": row["taken_at"], "status": row["rule"], "count": row["n"]}
        for row in JobTimeoutSummary.objects.filter(taken_at__gte=now - timedelta(days=1))
        .values("taken_at", "rule")
        .annotate(n=Sum("timed_out"))
        .order_by("taken_at")
    ]
    oldest = []
    for status in ("assigned", "activated", "starting", "sent", "running", "transferring", "holding"):
        oldest += list(
            Job.objects.filter(jobStatus=status).order_by("stateChangeTime").values_list("pk", flat=True)[:10]
        )
    states_now = job_timeout_states(job_ids=oldest, now=now) if oldest else {}
    jobs = {
        row["pk"]: row
        for row in Job.objects.filter(pk__in=oldest).values("pk", "jobStatus", "computingSite", "task_id")
    }
    closest = sorted(
        ({"job": jobs[pk], "state": state} for pk, state in states_now.items() if state.rule is not None),
        key=lambda item: item["state"].left,
    )[:40]
    return {"latest": latest, "by_rule": by_rule, "by_queue": by_queue, "history": history, "closest": closest}
