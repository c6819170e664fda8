"""The home page's numbers: row counts per entity and status breakdowns, each one aggregate query."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from brokerage import models, states
from brokerage.models.jobs import JOB_ENDED
from brokerage.selectors.jobs import job_error_rows_recent, job_error_summary, job_state_rows_recent

JOB_NOT_ENDED = tuple(status for status in states.JOB.statuses if status not in JOB_ENDED)

# What the overview counts, in the order it is shown: (label, model, the dashboard page that lists them or None).
# Reading never sends a shifter to the admin (a login page for most of them).
COUNTED = (
    ("Tasks", models.Task, "monitor:tasks"),
    ("Datasets", models.Dataset, None),
    ("Files", models.DatasetFile, None),
    ("Event ranges", models.Event, None),
    ("Active jobs", models.Job, "monitor:jobs"),
    ("Work queues", models.WorkQueue, "monitor:shares"),
    ("Global shares", models.GlobalShare, "monitor:shares"),
    ("Sites", models.Site, "monitor:sites"),
    ("PanDA queues", models.PandaQueue, "monitor:queues"),
    ("Storage endpoints", models.StorageEndpoint, None),
    ("Network links", models.NetworkLink, None),
    ("Software tags", models.SoftwareTags, None),
    ("GPU summaries", models.GpuSummary, None),
    ("gdpconfig overrides", models.GdpConfig, "monitor:gdpconfig"),
)


@dataclass(frozen=True)
class StatusCount:
    status: str
    count: int


def _by_status(queryset, field: str, order: tuple[str, ...]) -> list[StatusCount]:
    # COUNT(*), not COUNT(pk): PostgreSQL then counts from an index on the status alone
    counts = dict(queryset.order_by().values_list(field).annotate(n=Count("*")).values_list(field, "n"))
    ordered = [StatusCount(status, counts[status]) for status in order if status in counts]
    ordered += [StatusCount(status, n) for status, n in sorted(counts.items()) if status not in order]
    return ordered


# Above this many rows a count card shows PostgreSQL's estimate (the planner's statistics, kept by autovacuum)
# instead of counting: files and event ranges grow into the tens of millions, and count(*) reads them all.
ESTIMATE_FROM = 1_000_000


def _row_estimates(counted) -> dict[str, int]:
    """PostgreSQL's row estimate of each table (one query); -1 where it has none (never analysed), and nothing on
    SQLite."""
    if connection.vendor != "postgresql":
        return {}
    tables = [model._meta.db_table for model in counted]
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reltuples::bigint FROM pg_class WHERE relname = ANY(%s)", [tables])
        return dict(cursor.fetchall())


def _integrity_alert() -> models.IntegrityCheck | None:
    latest = models.IntegrityCheck.objects.order_by("-started", "-id").first()
    return latest if latest is not None and latest.n_findings else None


def _housekeeping_latest() -> models.HousekeepingRun | None:
    return models.HousekeepingRun.objects.filter(dry_run=False).order_by("-started", "-id").first()


# The trend of the last 24 h: jobs entering these states per hour (what a shifter watches: starts, ends, failures)
TREND_STATUSES = ("running", "finished", "failed", "closed")
FAILING_QUEUES_SHOWN = 10


def _failing_queues(per_queue: dict[str, Counter]) -> list[dict[str, Any]]:
    """The queues whose jobs failed or were closed most over the last day, with how many finished there and the
    failed share of the jobs that ended."""
    rows = []
    for queue, counts in per_queue.items():
        bad = counts["failed"] + counts["closed"]
        if bad and queue:
            ended = bad + counts["finished"]
            rows.append(
                {"queue": queue, "failed": bad, "finished": counts["finished"], "rate": round(100 * bad / ended)}
            )
    rows.sort(key=lambda row: (-row["failed"], -row["rate"], row["queue"]))
    return rows[:FAILING_QUEUES_SHOWN]


# How far back the overview looks (BigPanDA shows days and weeks): from the hourly summaries, so 30 days cost what a
# day does; beyond two days the trend is drawn per day
OVERVIEW_SPANS = {"1d": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
SPAN_LABELS = {"1d": "day", "7d": "7 days", "30d": "30 days"}


def database_overview(*, now=None, span: str = "1d") -> dict[str, Any]:
    """Counts per entity, tasks/jobs/queues by status, the most recently modified tasks, the latest integrity
    check when it found something (None when the latest found nothing) and the latest housekeeping run.

    Jobs are counted by status while active; those that ended, over the last day from the hourly summaries (issue
    32): the archive is a year of history, and counting it, or the days of ended jobs waiting to be archived, on
    every visit would make the overview slower with the grid's rate."""
    now = now or timezone.now()
    length = OVERVIEW_SPANS[span]
    since = now - length
    bucket = "hour" if length <= timedelta(days=2) else "day"
    tasks_by_status = _by_status(models.Task.objects.all(), "status", states.TASK.statuses)
    jobs_by_status = _by_status(
        models.Job.objects.filter(archiveDay__isnull=True, jobStatus__in=JOB_NOT_ENDED), "jobStatus", JOB_NOT_ENDED
    )
    # the jobs that ended: those of the last day, from the hourly status moves (a day of ended jobs waits in the
    # active partition JOB_ARCHIVE_AFTER_DAYS, a million a day at a real grid's rate: too many to count each visit)
    ended: Counter = Counter()
    per_hour: Counter = Counter()
    per_queue: dict[str, Counter] = {}
    for row in job_state_rows_recent(since=since, now=now):
        status = row["new_status"]
        if status in TREND_STATUSES:
            when = row["hour"] if bucket == "hour" else row["hour"].replace(hour=0, minute=0, second=0, microsecond=0)
            per_hour[(when, status)] += row["n"]
        if status in JOB_ENDED:
            ended[status] += row["n"]
            per_queue.setdefault(row["computingSite"] or "", Counter())[status] += row["n"]
    # tasks and jobs are the sums of their status counts (a second scan of the biggest table saved)
    summed = {models.Task: tasks_by_status, models.Job: jobs_by_status}
    estimates = _row_estimates([model for _, model, _ in COUNTED if model not in summed])
    counts = []
    for label, model, page in COUNTED:
        estimate = estimates.get(model._meta.db_table, -1)
        if model in summed:
            count = sum(c.count for c in summed[model])
        else:
            count = estimate if estimate >= ESTIMATE_FROM else model.objects.count()
        counts.append({"label": label, "count": count, "page": page, "estimated": estimate >= ESTIMATE_FROM})
    return {
        "counts": counts,
        "tasks_by_status": tasks_by_status,
        "jobs_by_status": jobs_by_status,
        "span": span,
        "span_label": SPAN_LABELS[span],
        "spans": list(OVERVIEW_SPANS),
        "bucket": bucket,
        "jobs_ended_last_day": [StatusCount(status, ended[status]) for status in JOB_ENDED if ended[status]],
        "job_trend": [{"time": hour, "status": status, "count": n} for (hour, status), n in sorted(per_hour.items())],
        "failing_queues": _failing_queues(per_queue),
        "queues_by_status": _by_status(
            models.PandaQueue.objects.all(), "status", tuple(models.choices.QueueStatus.values)
        ),
        "integrity": _integrity_alert(),
        "housekeeping": _housekeeping_latest(),
        "retention": {
            key: getattr(settings, key) for key in ("JOB_ARCHIVE_AFTER_DAYS", "DECISION_DAYS", "DECISION_TRACE_DAYS")
        },
        "errors": job_error_summary(rows=job_error_rows_recent(since=since), limit=10),
        "recent_tasks": list(
            models.Task.objects.order_by("-modificationTime").values(
                "jediTaskID", "taskName", "status", "currentPriority", "nucleus", "gshare", "modificationTime"
            )[:15]
        ),
    }
