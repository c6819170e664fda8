"""Merge job sets (the JEDI task parameter `mergeOutput`).

The finished jobs of such a task leave pre-merged files at their queue. Once `nFilesPerMergeJob` of them are
there, or the task has no input and no production job left, a merge job set takes them. Merge jobs are
pre-assigned to the queue holding the pre-merged files "to avoid transferring small pre-merged files", and "the
pre-assignment is ignored if the relevant queues have been skipped for 24 hours" (seed 000, job brokerage). The
first skip of a queue is recorded in MergePreassignment; job brokerage reads the hours since then
(`jobs.preassignedSkippedHours`) and drops the pre-assignment itself. A task whose outputs are merged is done only
when every pre-merged file is merged and no merge job is active.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Q

from brokerage.models import Job, MergePreassignment
from brokerage.services.bulk import bulk_update_values
from brokerage.states import JOB_ACTIVE

# JEDI's nFilesPerMergeJob when the task does not set it
MERGE_FILES_DEFAULT = 10
MB = 1024**2


@dataclass(frozen=True)
class MergeSet:
    """The pre-merged outputs one merge job takes: finished jobs of a task at one queue."""

    task_id: int
    site: str
    job_ids: tuple[int, ...]
    input_bytes: int
    skipped_hours: float

    def jobs(self) -> dict[str, Any]:
        """The scenario's `jobs` object of the merge job set."""
        return {
            "nFiles": len(self.job_ids),
            "inputSizeMB": self.input_bytes / MB,
            "nJobs": 1,
            "isMerge": True,
            "preassigned": [self.site],
            "preassignedSkippedHours": self.skipped_hours,
        }


def merges_output(task: dict[str, Any]) -> bool:
    return bool((task.get("taskParams") or {}).get("mergeOutput"))


def merge_sets(*, tasks: dict[int, dict[str, Any]], inputs_left: set[int], now: datetime) -> list[MergeSet]:
    """The merge job sets due for the tasks (rows with taskParams): full sets of nFilesPerMergeJob pre-merged
    files per queue, and the rest once the task has no input left (`inputs_left` lists those that have) and no
    production job active. Three queries for any number of tasks."""
    merging = [pk for pk, task in tasks.items() if merges_output(task)]
    if not merging:
        return []
    unmerged: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
    for pk, task_id, site, size in (
        Job.objects.filter(task_id__in=merging, jobStatus="finished", isMerge=False, mergeJob__isnull=True)
        .order_by("pk")
        .values_list("pk", "task_id", "computingSite", "outputFileBytes")
    ):
        unmerged[(task_id, site)].append((pk, size or 0))
    busy = set(
        Job.objects.filter(task_id__in=merging, jobStatus__in=JOB_ACTIVE, isMerge=False).values_list(
            "task_id", flat=True
        )
    )
    skipped = {
        (row.task_id, row.computingSite): row.skipped_since
        for row in MergePreassignment.objects.filter(task_id__in=merging)
    }
    sets = []
    for (task_id, site), outputs in sorted(unmerged.items()):
        size = int((tasks[task_id]["taskParams"] or {}).get("nFilesPerMergeJob") or MERGE_FILES_DEFAULT)
        last_call = task_id not in inputs_left and task_id not in busy
        since = skipped.get((task_id, site))
        hours = max((now - since).total_seconds() / 3600, 0.0) if since is not None else 0.0
        for start in range(0, len(outputs), size):
            group = outputs[start : start + size]
            if len(group) < size and not last_call:
                break
            sets.append(
                MergeSet(task_id, site, tuple(pk for pk, _ in group), sum(bytes_ for _, bytes_ in group), hours)
            )
    return sets


def merge_outcomes_apply(*, chosen: list[tuple[MergeSet, int]], skipped: list[MergeSet], now: datetime) -> None:
    """Links the pre-merged jobs to the merge job that took them (and forgets the queue's skips); records the
    first skip of the pre-assigned queue of merge job sets that found no queue."""
    bulk_update_values(
        Job, fields=("mergeJob",), rows=[(pk, merge_job_id) for merge, merge_job_id in chosen for pk in merge.job_ids]
    )
    done = [(merge.task_id, merge.site) for merge, _ in chosen]
    if done:
        condition = Q()
        for task_id, site in done:
            condition |= Q(task_id=task_id, computingSite=site)
        MergePreassignment.objects.filter(condition).delete()
    MergePreassignment.objects.bulk_create(
        [MergePreassignment(task_id=merge.task_id, computingSite=merge.site, skipped_since=now) for merge in skipped],
        ignore_conflicts=True,  # the first skip is the one that counts
    )


def merges_pending(*, task_ids: list[int]) -> set[int]:
    """Of the tasks, those whose outputs are merged and that still have a pre-merged file to merge or a merge
    job active (one query)."""
    if not task_ids:
        return set()
    rows = (
        Job.objects.filter(task_id__in=task_ids, task__taskParams__mergeOutput=True)
        .values("task_id")
        .annotate(
            unmerged=Count("pk", filter=Q(jobStatus="finished", isMerge=False, mergeJob__isnull=True)),
            merging=Count("pk", filter=Q(jobStatus__in=JOB_ACTIVE, isMerge=True)),
        )
    )
    return {row["task_id"] for row in rows if row["unmerged"] or row["merging"]}
