"""Hourly summaries (issue 32): the jobs that ended badly, counted per hour, queue, status, main error and attempt
(JobErrorHour), so that the overview's and the queue page's error summaries read a day of summaries and an hour
or two of jobs, not every failed job of the day.

The housekeeping rolls up every whole hour since the last one rolled up (SummaryMark), once the hour has been
over for ROLLUP_GRACE: a cycle stamps its jobs with its own `now`, which can lag the clock by the cycle's length.
Each hour is replaced whole in one transaction with the mark, so a run killed half-way leaves every hour either
rolled up and marked, or neither, and a second run never counts an hour twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from brokerage.models import JobErrorHour, SummaryMark
from brokerage.selectors.jobs import JOB_ERROR_HOURS, hour_start, job_error_rows

ROLLUP_GRACE = timedelta(minutes=10)
# the first rollup starts this far back: the summaries serve windows of a day
FIRST_ROLLUP = timedelta(days=2)


def job_error_hours_rollup(*, now: datetime, dry_run: bool = False) -> int:
    """Rolls up the whole hours not rolled up yet; returns how many hours."""
    mark = SummaryMark.objects.filter(name=JOB_ERROR_HOURS).values_list("until", flat=True).first()
    hour = mark if mark is not None else hour_start(now - FIRST_ROLLUP)
    hours = 0
    while hour + timedelta(hours=1) <= now - ROLLUP_GRACE:
        if not dry_run:
            job_error_hour_rollup(hour=hour)
        hour += timedelta(hours=1)
        hours += 1
    return hours


@transaction.atomic
def job_error_hour_rollup(*, hour: datetime) -> list[JobErrorHour]:
    """Replaces one hour's summary rows by a count of its jobs, and moves the mark past it."""
    end = hour + timedelta(hours=1)
    JobErrorHour.objects.filter(hour=hour).delete()
    rows = JobErrorHour.objects.bulk_create(
        JobErrorHour(hour=hour, **{**row, "diag": (row["diag"] or "")[:500]})
        for row in job_error_rows(since=hour, until=end)
    )
    SummaryMark.objects.update_or_create(name=JOB_ERROR_HOURS, defaults={"until": end})
    return rows
