"""A user's page (BigPanDA's user page): their tasks and jobs, by status, and the errors of their jobs."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count

from brokerage.models import Job, Task
from brokerage.models.jobs import job_archive_window
from brokerage.selectors.jobs import job_error_rows, job_error_summary

USER_WINDOW = timedelta(days=7)  # the jobs a user page counts: those changed in the last week
USER_TASKS_SHOWN = 50


def user_detail(*, name: str, now: datetime) -> dict[str, Any] | None:
    """The tasks of `name` (userName) by status and the latest of them, their jobs changed in the last week (by
    prodUserName) by status and queue, and those jobs' errors; None when the name has neither task nor job."""
    tasks = Task.objects.filter(userName=name)
    since = now - USER_WINDOW
    jobs = Job.objects.filter(job_archive_window(since), prodUserName=name, stateChangeTime__gte=since)
    task_statuses = list(tasks.order_by().values("status").annotate(count=Count("pk")).order_by("-count", "status"))
    job_statuses = list(jobs.order_by().values("jobStatus").annotate(count=Count("pk")).order_by("-count", "jobStatus"))
    if not task_statuses and not job_statuses:
        return None
    return {
        "name": name,
        "window_days": USER_WINDOW.days,
        "task_statuses": task_statuses,
        "tasks_total": sum(row["count"] for row in task_statuses),
        "tasks": list(
            tasks.order_by("-modificationTime").values(
                "jediTaskID", "taskName", "status", "currentPriority", "progress", "modificationTime", "gshare"
            )[:USER_TASKS_SHOWN]
        ),
        "job_statuses": [{"status": row["jobStatus"], "count": row["count"]} for row in job_statuses],
        "jobs_total": sum(row["count"] for row in job_statuses),
        "queues": list(
            jobs.order_by().values("computingSite").annotate(count=Count("pk")).order_by("-count", "computingSite")[:20]
        ),
        "errors": job_error_summary(rows=job_error_rows(user=name, since=since), limit=20),
    }
