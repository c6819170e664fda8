"""Hourly summaries (issue 32), so that the overview's and the queue page's summaries read a day of summary rows
and an hour or two of raw rows, not every failed job or status move of the day:
- the jobs that ended badly, counted per hour, queue, status, main error and attempt (JobErrorHour);
- the job status moves, counted per hour, queue and new status (JobStateHour).

The housekeeping rolls up every whole hour since the last one rolled up (SummaryMark), once the hour has been
over for ROLLUP_GRACE: a cycle stamps its jobs with its own `now`, which can lag the clock by the cycle's length.
Each hour is replaced whole in one transaction with the mark, so a run killed half-way leaves every hour either
rolled up and marked, or neither, and a second run never counts an hour twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from brokerage.models import JobErrorHour, JobStateHour, SummaryMark
from brokerage.selectors.jobs import JOB_ERROR_HOURS, JOB_STATE_HOURS, hour_start, job_error_rows, job_state_rows

ROLLUP_GRACE = timedelta(minutes=10)
# the first rollup starts this far back: the summaries serve windows of a day
FIRST_ROLLUP = timedelta(days=2)


def _hours_rollup(*, mark_name: str, rollup, now: datetime, dry_run: bool) -> int:
    """Calls `rollup(hour=…)` for each whole hour after the mark `mark_name`; returns how many hours."""
    mark = SummaryMark.objects.filter(name=mark_name).values_list("until", flat=True).first()
    hour = mark if mark is not None else hour_start(now - FIRST_ROLLUP)
    hours = 0
    while hour + timedelta(hours=1) <= now - ROLLUP_GRACE:
        if not dry_run:
            rollup(hour=hour)
        hour += timedelta(hours=1)
        hours += 1
    return hours


def job_error_hours_rollup(*, now: datetime, dry_run: bool = False) -> int:
    """Rolls up the whole hours of JobErrorHour not rolled up yet; returns how many hours."""
    return _hours_rollup(mark_name=JOB_ERROR_HOURS, rollup=job_error_hour_rollup, now=now, dry_run=dry_run)


def job_state_hours_rollup(*, now: datetime, dry_run: bool = False) -> int:
    """Rolls up the whole hours of JobStateHour not rolled up yet; returns how many hours."""
    return _hours_rollup(mark_name=JOB_STATE_HOURS, rollup=job_state_hour_rollup, now=now, dry_run=dry_run)


@transaction.atomic
def _hour_replace(*, model, mark_name: str, hour: datetime, summaries) -> list:
    """Replaces one hour's rows of `model` by `summaries(end)` (the hour's counts, up to `end`) and moves the mark
    `mark_name` past it, in one transaction."""
    end = hour + timedelta(hours=1)
    model.objects.filter(hour=hour).delete()
    rows = model.objects.bulk_create(summaries(end))
    SummaryMark.objects.update_or_create(name=mark_name, defaults={"until": end})
    return rows


def job_error_hour_rollup(*, hour: datetime) -> list[JobErrorHour]:
    """Replaces one hour's JobErrorHour rows by a count of its jobs, and moves the mark past it."""
    return _hour_replace(
        model=JobErrorHour,
        mark_name=JOB_ERROR_HOURS,
        hour=hour,
        summaries=lambda end: [
            JobErrorHour(hour=hour, **{**row, "diag": (row["diag"] or "")[:500]})
            for row in job_error_rows(since=hour, until=end)
        ],
    )


def job_state_hour_rollup(*, hour: datetime) -> list[JobStateHour]:
    """Replaces one hour's JobStateHour rows by a count of its status moves, and moves the mark past it."""
    return _hour_replace(
        model=JobStateHour,
        mark_name=JOB_STATE_HOURS,
        hour=hour,
        summaries=lambda end: [
            JobStateHour(hour=hour, computingSite=row["computingSite"], new_status=row["new_status"], n=row["n"])
            for row in job_state_rows(since=hour, until=end)
        ],
    )
