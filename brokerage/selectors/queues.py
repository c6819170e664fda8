"""PanDA queues as the pages read them: the list by status, one queue with its jobs and latest decisions."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from brokerage import states
from brokerage.models import (
    Decision,
    Job,
    JobCountNow,
    JobTimeoutSummary,
    PandaQueue,
    SummaryMark,
)
from brokerage.selectors.decisions import decision_candidate_many
from brokerage.selectors.jobs import job_error_rows_recent, job_error_summary, job_state_rows_recent
from brokerage.selectors.timeouts import timeout_pass_latest


def queue_detail(*, name: str, now: datetime, decisions: int = 40) -> dict[str, Any] | None:
    """The queue page: its attributes, jobs now and by state over the last day, its weight in recent job
    decisions, the reasons it was skipped most often, and its timeouts."""
    queue = PandaQueue.objects.select_related("site").filter(name=name).first()
    if queue is None:
        return None
    jobs_now = list(  # the jobs not yet archived: the archive's year behind would make the page slower each day
        Job.objects.filter(computingSite=name, archiveDay__isnull=True)
        .values("jobStatus")
        .annotate(count=Count("pk"))
        .values("jobStatus", "count")
        .order_by("jobStatus")
    )
    since = now - timedelta(days=1)
    # status moves per hour: the whole hours from their summaries (JobStateHour), the edges from the logs
    moves: Counter = Counter()
    for row in job_state_rows_recent(since=since, queue=name, now=now):
        moves[(row["hour"], row["new_status"])] += row["n"]
    over_time = [{"time": hour, "status": status, "count": count} for (hour, status), count in sorted(moves.items())]
    weights, skips = [], Counter()
    recent = list(
        Decision.objects.filter(
            plugin__in=("atlas_prod_job", "atlas_anal_job"), created__gte=now - timedelta(days=2)
        ).order_by("-created", "-pk")[:decisions]
    )
    candidates = decision_candidate_many(decisions=recent, name=name)
    for decision in recent:
        entry = candidates[decision.pk]
        if entry["weight"] is not None:
            weights.append({"time": decision.created, "weight": entry["weight"], "decision": decision.pk})
        if entry["skip_code"]:
            skips[entry["skip_code"]] += 1
    from brokerage.engine import reason_title

    timeouts = list(
        JobTimeoutSummary.objects.filter(computingSite=name, taken_at=timeout_pass_latest())
        .values("rule", "watched", "approaching", "timed_out")
        .order_by("rule")
    )
    return {
        "queue": queue,
        "cric": sorted((queue.cric or {}).items()),
        "storages": list(queue.storages.select_related("endpoint").values_list("role", "endpoint__name")),
        "jobs_now": jobs_now,
        "archive_after_days": settings.JOB_ARCHIVE_AFTER_DAYS,
        "over_time": over_time,
        "weights": weights,
        "skipped": [{"code": c, "title": reason_title(c), "count": n} for c, n in skips.most_common(12)],
        "decisions_read": len(recent),
        "errors": job_error_summary(rows=job_error_rows_recent(queue=name, since=now - timedelta(days=1)), limit=10),
        "timeouts": timeouts,
    }


JOB_COUNTS = "job_counts_now"  # the SummaryMark of JobCountNow: `until` is when the jobs were counted


def job_counts_fresh_for() -> timedelta:
    """How old the periodic count of active jobs may be and still be shown: three of its beats (one late or missed
    refresh is no reason to count half a million jobs on every visit; three are: the beat or its worker is down)."""
    return timedelta(seconds=3 * settings.JOB_COUNTS_INTERVAL_SECONDS)


def job_count_rows_active(*, queues: list[str] | None = None) -> list[tuple[str, str, int]]:
    """(queue, status, n) of the jobs not yet ended, counted now (one query), of `queues` or all. No archiveDay
    filter: only ended jobs are archived (the constraint job_archived_only_ended), and without it PostgreSQL reads
    the count from the index (computingSite, jobStatus) rather than the rows."""
    jobs = Job.objects.filter(jobStatus__in=states.JOB_ACTIVE)
    if queues is not None:
        jobs = jobs.filter(computingSite__in=queues)
    return list(jobs.values_list("computingSite", "jobStatus").annotate(n=Count("pk")).order_by())


def jobs_by_queue(
    names: list[str], *, now: datetime | None = None
) -> tuple[dict[str, list[tuple[str, int]]], datetime | None]:
    """Active jobs by status at each of these queues, sorted by status, and when they were counted: from the
    periodic count (JobCountNow) while it is recent (job_counts_fresh_for, against the real clock `now`), else by
    counting the jobs themselves (None: counted now). One or two queries."""
    now = now or timezone.now()
    counted_at = SummaryMark.objects.filter(name=JOB_COUNTS).values_list("until", flat=True).first()
    if counted_at is not None and now - counted_at <= job_counts_fresh_for():
        rows = JobCountNow.objects.filter(computingSite__in=names).values_list("computingSite", "jobStatus", "n")
    else:
        counted_at, rows = None, job_count_rows_active(queues=names)
    counts: dict[str, dict[str, int]] = {}
    for queue, status, n in rows:
        counts.setdefault(queue, {})[status] = n
    return {name: sorted(counts.get(name, {}).items()) for name in names}, counted_at


def queue_list(*, status: str = "") -> dict[str, Any]:
    """PanDA queues with their site and active jobs by status (jobs_by_queue), optionally of one status (three queries
    at most)."""
    from brokerage.models import choices

    problems = {}
    queues = PandaQueue.objects.select_related("site").order_by("name")
    if status and status not in choices.QueueStatus.values:
        problems["status"] = f"{status!r} is not a queue status; one of {', '.join(choices.QueueStatus.values)}"
    elif status:
        queues = queues.filter(status=status)
    rows = list(queues.values("name", "status", "site__name"))
    jobs, counted_at = jobs_by_queue([row["name"] for row in rows])
    for row in rows:
        row["jobs"] = jobs[row["name"]]
    return {
        "queues": rows,
        "counted_at": counted_at,
        "problems": problems,
        "status": "" if problems else status,
        "statuses": choices.QueueStatus.values,
    }
