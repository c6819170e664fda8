"""Hourly summaries (issue 32), so that the overview's and the queue page's summaries read a day of summary rows
and an hour or two of raw rows, not every failed job or status move of the day:
- the jobs that ended badly, counted per hour, queue, status, main error and attempt (JobErrorHour);
- the job status moves, counted per hour, queue and new status (JobStateHour);
- the decisions, counted per hour, plugin, outcome and main reason (DecisionHour), for the decision explorer;
- and, not hourly, the active jobs per queue and status, counted every minute for the site and queue lists
  (JobCountNow, job_counts_refresh).

The housekeeping rolls up every whole hour since the last one rolled up (SummaryMark), once the hour has been
over for ROLLUP_GRACE: a cycle stamps its jobs with its own `now`, which can lag the clock by the cycle's length.
Each hour is replaced whole in one transaction with the mark, so a run killed half-way leaves every hour either
rolled up and marked, or neither, and a second run never counts an hour twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from brokerage.models import (
    BrokerageCycle,
    CycleStatus,
    DecisionHour,
    JobCountNow,
    JobErrorHour,
    JobStateHour,
    SummaryMark,
)
from brokerage.selectors.decisions import DECISION_HOURS, decision_count_rows
from brokerage.selectors.hours import hour_start
from brokerage.selectors.jobs import JOB_ERROR_HOURS, JOB_STATE_HOURS, job_error_rows, job_state_rows
from brokerage.selectors.queues import JOB_COUNTS, job_count_rows_active

ROLLUP_GRACE = timedelta(minutes=10)
# the first rollup starts this far back: the job summaries serve windows of a day, the decision explorer's reach
# back a week (selectors.paging.WINDOWS)
FIRST_ROLLUP = timedelta(days=2)
FIRST_DECISION_ROLLUP = timedelta(days=8)
ABANDONED_CYCLE = timedelta(days=1)


def _hours_rollup(
    *,
    mark_name: str,
    rollup,
    now: datetime,
    dry_run: bool,
    first: timedelta = FIRST_ROLLUP,
    bound: datetime | None = None,
) -> int:
    """Calls `rollup(hour=…)` for each whole hour after the mark `mark_name` (the first time, from `first` back)
    that is over ROLLUP_GRACE before `now` and ends by `bound`; returns how many hours."""
    mark = SummaryMark.objects.filter(name=mark_name).values_list("until", flat=True).first()
    hour = mark if mark is not None else hour_start(now - first)
    last_end = min(now - ROLLUP_GRACE, bound) if bound is not None else now - ROLLUP_GRACE
    hours = 0
    while hour + timedelta(hours=1) <= last_end:
        if not dry_run:
            rollup(hour=hour)
        hour += timedelta(hours=1)
        hours += 1
    return hours


def decision_hours_rollup(*, now: datetime, dry_run: bool = False) -> int:
    """Rolls up the whole hours of DecisionHour not rolled up yet; returns how many hours. A cycle stamps its
    decisions with its start and writes them as it goes: an hour in which a cycle still running started waits for
    it (a cycle running for over a day is taken as abandoned)."""
    oldest_running = (
        BrokerageCycle.objects.filter(status=CycleStatus.RUNNING, started__gte=now - ABANDONED_CYCLE)
        .order_by("started")
        .values_list("started", flat=True)
        .first()
    )
    return _hours_rollup(
        mark_name=DECISION_HOURS,
        rollup=decision_hour_rollup,
        now=now,
        dry_run=dry_run,
        first=FIRST_DECISION_ROLLUP,
        bound=oldest_running,
    )


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
    # the first hour rolled up starts the summary: readers count the hours before it from the rows
    SummaryMark.objects.update_or_create(
        name=mark_name, defaults={"until": end}, create_defaults={"since": hour, "until": end}
    )
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


def decision_hour_rollup(*, hour: datetime) -> list[DecisionHour]:
    """Replaces one hour's DecisionHour rows by a count of its decisions, and moves the mark past it."""
    return _hour_replace(
        model=DecisionHour,
        mark_name=DECISION_HOURS,
        hour=hour,
        summaries=lambda end: [DecisionHour(hour=hour, **row) for row in decision_count_rows(since=hour, until=end)],
    )


@transaction.atomic
def job_counts_refresh(*, now: datetime) -> int:
    """Counts the active jobs per queue and status and replaces JobCountNow by the count, its mark JOB_COUNTS
    stamped `now`, in one transaction: a reader sees the old count or the new one, never half of each. Refreshes
    queue behind the mark's row lock (taken before counting, so the later one also counts later) and never
    interleave their replacements. Returns how many rows."""
    SummaryMark.objects.get_or_create(name=JOB_COUNTS, defaults={"until": now})
    SummaryMark.objects.select_for_update().filter(name=JOB_COUNTS).values_list("pk", flat=True).get()
    rows = job_count_rows_active()
    JobCountNow.objects.all().delete()
    JobCountNow.objects.bulk_create(
        (JobCountNow(computingSite=queue, jobStatus=status, n=n) for queue, status, n in rows), batch_size=2000
    )
    SummaryMark.objects.filter(name=JOB_COUNTS).update(until=now)
    return len(rows)
