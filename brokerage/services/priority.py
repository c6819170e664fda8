"""Automatic priority boost for quick completion of tasks (seed 002): tasks that are 95 % complete and have fewer
than 100 jobs to do get priority 900 and the Express global share."""

from __future__ import annotations

import math
from datetime import datetime

from django.db import transaction
from django.db.models import Q, Sum

from brokerage.models import Dataset, Task, TaskStatusLog
from brokerage.services.status import task_note

BOOST_FRACTION = 0.95
BOOST_MAX_JOBS_LEFT = 100
BOOST_PRIORITY = 900
BOOST_GSHARE = "Express"
# only tasks that are generating or running jobs can be hurried along
BOOSTABLE_STATUSES = ("ready", "scouting", "running")


def task_progress(*, task_ids: list[int]) -> dict[int, tuple[float, int]]:
    """(fraction of master input files finished, jobs still to do) per task, from the dataset counters in one
    query. Jobs to do = unfinished master input files / nFilesPerJob (task parameter, default 1), rounded up."""
    rows = (
        Dataset.objects.filter(task_id__in=task_ids, type__in=("input", "pseudo_input"), master__isnull=True)
        .values("task_id")
        .annotate(files=Sum("nFiles"), finished=Sum("nFilesFinished"), failed=Sum("nFilesFailed"))
    )
    per_job = dict(Task.objects.filter(pk__in=task_ids).values_list("jediTaskID", "taskParams"))
    result = {}
    for row in rows:
        files, finished, failed = row["files"] or 0, row["finished"] or 0, row["failed"] or 0
        params = per_job.get(row["task_id"]) or {}
        files_per_job = max(int(params.get("nFilesPerJob") or 1), 1)
        fraction = finished / files if files else 0.0
        result[row["task_id"]] = (fraction, math.ceil(max(files - finished - failed, 0) / files_per_job))
    return result


def task_priority_boost(*, now: datetime) -> list[int]:
    """Boosts every eligible task; returns their ids. A boost never lowers a priority, is recorded in the task's
    status log (status unchanged, the reason says what changed) and is done once (Express tasks are skipped)."""
    candidates = list(
        Task.objects.filter(status__in=BOOSTABLE_STATUSES)
        .exclude(Q(gshare=BOOST_GSHARE) & Q(currentPriority__gte=BOOST_PRIORITY))
        .values_list("jediTaskID", flat=True)
    )
    progress = task_progress(task_ids=candidates)
    chosen = [
        task_id
        for task_id, (fraction, jobs_left) in progress.items()
        if fraction >= BOOST_FRACTION and jobs_left < BOOST_MAX_JOBS_LEFT
    ]
    if not chosen:
        return []
    with transaction.atomic():
        tasks = list(
            Task.objects.select_for_update(no_key=True).filter(pk__in=chosen).order_by("pk")
        )  # the one lock order
        logs = []
        for task in tasks:
            fraction, jobs_left = progress[task.pk]
            old = (task.currentPriority, task.gshare)
            task.currentPriority = max(task.currentPriority, BOOST_PRIORITY)
            task.gshare = BOOST_GSHARE
            task.modificationTime = now
            logs.append(
                task_note(
                    task=task,
                    actor="priority boost",
                    reason=f"{fraction:.0%} done, {jobs_left} jobs left: priority {old[0]} → {task.currentPriority}, "
                    f"gshare {old[1] or '—'} → {BOOST_GSHARE}",
                    now=now,
                )
            )
        Task.objects.bulk_update(tasks, ["currentPriority", "gshare", "modificationTime"])
        TaskStatusLog.objects.bulk_create(logs)
    return sorted(chosen)
