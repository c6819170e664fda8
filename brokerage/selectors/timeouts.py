"""Reading timeout states: which rule watches a job, when it times out and how long is left (seed 000), for the
monitor, the API and the watchdog. The rules themselves are brokerage.watchdog's plain functions."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Max

from brokerage.models import Job, PandaQueue
from brokerage.models.jobs import job_archive_window
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.watchdog import TimeoutJob, TimeoutLimits, TimeoutQueue, TimeoutState, job_timeout_state

LAST_START_WINDOW = timedelta(days=7)
JOB_FIELDS = (
    "pk",
    "jobStatus",
    "currentPriority",
    "stateChangeTime",
    "modificationTime",
    "jobSubStatus",
    "computingSite",
    "prodSourceLabel",
)
ANALYSIS_LABELS = ("user", "panda")


def timeout_queues(*, now: datetime, names: list[str] | None = None) -> dict[str, TimeoutQueue]:
    """The queues (all, or those named) as the timeout rules see them, with the time a job last started there
    (two queries)."""
    started = Job.objects.filter(job_archive_window(now - LAST_START_WINDOW), startTime__gte=now - LAST_START_WINDOW)
    queues = PandaQueue.objects.all()
    if names is not None:
        started, queues = started.filter(computingSite__in=names), queues.filter(name__in=names)
    last_start = dict(
        started.values("computingSite").annotate(last=Max("startTime")).values_list("computingSite", "last")
    )
    return {
        row["name"]: TimeoutQueue(
            status=row["status"],
            catchall=row["catchall"],
            workflow=row["workflow"],
            lastStart=last_start.get(row["name"]),
            transtimehi=row["transtimehi"],
            transtimelo=row["transtimelo"],
        )
        for row in queues.values("name", "status", "catchall", "workflow", "transtimehi", "transtimelo")
    }


def timeout_limits(*, queues: dict[str, TimeoutQueue], vo: str = "atlas") -> TimeoutLimits:
    view = gdpconfig_view(vo=vo)
    return TimeoutLimits.from_config(view.get, workflows=sorted({q.workflow for q in queues.values() if q.workflow}))


def timeout_job(row: dict) -> TimeoutJob:
    return TimeoutJob(
        jobStatus=row["jobStatus"],
        currentPriority=row["currentPriority"],
        stateChangeTime=row["stateChangeTime"],
        modificationTime=row["modificationTime"],
        jobSubStatus=row["jobSubStatus"],
        analysis=row["prodSourceLabel"] in ANALYSIS_LABELS,
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
