"""Output merging (seed 002, "Output merging" and "Internal Merging"; the JEDI task parameter `mergeOutput`).

"If the task is submitted with --mergeOutput and jobs successfully produce pre-merged files, their status will
change to merging and those jobs will wait until other jobs at the same site are finished/failed/cancelled. Once
all jobs at the site are done, merge jobs will be generated with priority=5000. When merge jobs successfully
finish, merged files are added to output dataset containers and job status will change from merging to finished
... Merge jobs themselves are tried at most three times. If the final attempt for the merge job fails, the status
of merging jobs will change to cancelled and input files will be retried."

So a pre-merged job ends its payload in `merging` (its outputs stay at its queue: no transfer to the nucleus), and
its input files stay taken. Once no other job of its task at that queue is active, the merging jobs there get merge
jobs, `nFilesPerMergeJob` pre-merged files each (JEDI's default 10 when the task does not set it), made by job
generation like any job set. A merge job that fails is tried again with the same pre-merged jobs (its next attempt,
MERGE_MAX_ATTEMPTS at most); when it finishes, its pre-merged jobs finish and their inputs with them; when its last
attempt fails, they are cancelled (panda-server's EC_MergeFailed, 113) and their inputs go back for another attempt
(as a closed job's: the attempt counts, the failure does not).

Merge jobs are pre-assigned to the queue holding the pre-merged files "to avoid transferring small pre-merged
files", and "the pre-assignment is ignored if the relevant queues have been skipped for 24 hours" (seed 000, job
brokerage). The first skip of a queue is recorded in MergePreassignment; job brokerage reads the hours since then
(`jobs.preassignedSkippedHours`) and drops the pre-assignment itself. A task whose outputs are merged is done only
when no job of it is merging and no merge job is active.

panda-server 1.0.4 differs in one place, kept in docs/decisions.md: its pre-merged jobs take the status of the merge
job's last attempt (failed, jobSubStatus merge_failed; JobComplexModule.updateUnmergedJobs) where the seed says
cancelled; ours follow the seed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Q

from brokerage.event_service import ES_MERGE_FAILED
from brokerage.job_errors import TASK_BUFFER_MERGE_FAILED
from brokerage.models import Event, Job, MergePreassignment
from brokerage.services.bulk import bulk_update_values
from brokerage.services.outputs import output_files_merge_take
from brokerage.services.status import job_status_transition_many
from brokerage.states import (
    ES_JOB,
    ES_MERGE_JOB,
    JOB_ACTIVE,
    JUMBO_JOB,
    MERGE_FAILED_SUBSTATUS,
    MERGE_MAX_ATTEMPTS,
    WAITING_CO_JUMBO,
)

# JEDI's nFilesPerMergeJob when the task does not set it
MERGE_FILES_DEFAULT = 10
# how a merge job's attempt ends badly: failed, or closed by the watchdog before it ran
MERGE_ATTEMPT_FAILED = ("failed", "closed")
# the jobs of a task at a queue that keep its merging jobs waiting ("until other jobs at the same site are
# finished/failed/cancelled"): active production jobs, merging ones aside
PRODUCTION_ACTIVE = tuple(status for status in JOB_ACTIVE if status != "merging")
ACTOR = "merging"
MB = 1024**2


@dataclass(frozen=True)
class MergeSet:
    """The pre-merged outputs one merge job takes: merging jobs of a task at one queue, and which attempt it is."""

    task_id: int
    site: str
    job_ids: tuple[int, ...]
    input_bytes: int
    skipped_hours: float
    attempt: int = 1
    event_service: bool = False  # an ES merge job: the ES jobs of one job set (seed 002, "Final status of ES jobs")

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
    """A task whose jobs' outputs are merged: mergeOutput, or event service (its ES merge jobs)."""
    return bool((task.get("taskParams") or {}).get("mergeOutput")) or merges_events(task)


def merges_events(task: dict[str, Any]) -> bool:
    """An event service task: its ES and co-jumbo jobs wait in merging for their job set's ES merge job."""
    return task.get("eventService") == ES_JOB


def premerged_split(*, job_ids: list[int]) -> tuple[list[int], list[int]]:
    """Of jobs whose payload just ended well, (the pre-merged ones — production jobs of tasks whose outputs are
    merged — the others). One query."""
    if not job_ids:
        return [], []
    premerged = set(
        Job.objects.filter(pk__in=job_ids, isMerge=False, task__taskParams__mergeOutput=True).values_list(
            "pk", flat=True
        )
    )
    return [pk for pk in job_ids if pk in premerged], [pk for pk in job_ids if pk not in premerged]


def merge_sets(*, tasks: dict[int, dict[str, Any]], now: datetime) -> list[MergeSet]:
    """The merge job sets due for the tasks (rows with taskParams): at each queue where no production job of the
    task is active any more, the merging jobs no merge job took, nFilesPerMergeJob a set; and the next attempt of
    each merge job that failed, with the same jobs, whatever runs there now. Three queries for any number of
    tasks."""
    merging = [pk for pk, task in tasks.items() if merges_output(task)]
    if not merging:
        return []
    # an ES task's jobs merge by job set (the merge goes to the queue of its last ES job), the others' by queue
    by_jobset = {pk for pk in merging if merges_events(tasks[pk])}
    fresh: dict[tuple[int, str | int], list[tuple[int, int]]] = defaultdict(list)
    retried: dict[tuple[int, str | int, int, int], list[tuple[int, int]]] = defaultdict(list)
    site_of: dict[tuple[int, str | int], str] = {}
    for pk, task_id, site, jobset, size, merge_id, merge_attempt in (
        Job.objects.filter(task_id__in=merging, jobStatus="merging", isMerge=False)
        .filter(Q(mergeJob__isnull=True) | Q(mergeJob__jobStatus__in=MERGE_ATTEMPT_FAILED))
        .order_by("pk")
        .values_list(
            "pk", "task_id", "computingSite", "jobsetID", "outputFileBytes", "mergeJob_id", "mergeJob__attemptNr"
        )
    ):
        key = (task_id, jobset if task_id in by_jobset else site)
        site_of[key] = site
        if merge_id is None:
            fresh[key].append((pk, size or 0))
        elif (merge_attempt or 1) < MERGE_MAX_ATTEMPTS:  # the last failure ends them (merge_jobs_after_end)
            retried[(*key, merge_id, (merge_attempt or 1) + 1)].append((pk, size or 0))
    busy = {
        (task_id, jobset if task_id in by_jobset else site)
        for task_id, site, jobset in Job.objects.filter(
            task_id__in=merging, jobStatus__in=PRODUCTION_ACTIVE, isMerge=False
        )
        .values_list("task_id", "computingSite", "jobsetID")
        .distinct()
    }
    skipped = {
        (row.task_id, row.computingSite): row.skipped_since
        for row in MergePreassignment.objects.filter(task_id__in=merging)
    }
    # fake co-jumbo jobs' merges go to the queue of their task's jumbo job, whose events they are (1.0.4's
    # ppEventServiceJob: "use siteid of jumbo jobs to generate merge jobs for fake co-jumbo"); the latest one's
    jumbo_site = dict(
        Job.objects.filter(task_id__in=by_jobset, eventService=JUMBO_JOB)
        .order_by("task_id", "pk")
        .values_list("task_id", "computingSite")
    )

    def hours(task_id: int, site: str) -> float:
        since = skipped.get((task_id, site))
        return max((now - since).total_seconds() / 3600, 0.0) if since is not None else 0.0

    def merge_set(key: tuple[int, str | int], group: list[tuple[int, int]], attempt: int) -> MergeSet:
        task_id, site = key[0], site_of[key]
        site = jumbo_site.get(task_id, site) if site == WAITING_CO_JUMBO else site
        jobs, total = tuple(pk for pk, _ in group), sum(bytes_ for _, bytes_ in group)
        return MergeSet(task_id, site, jobs, total, hours(task_id, site), attempt, task_id in by_jobset)

    # a failed attempt's next one at once: the queue was quiet for the first, and its jobs' files wait merged or not
    sets = [
        merge_set((task_id, where), group, attempt) for (task_id, where, _, attempt), group in sorted(retried.items())
    ]
    for key, outputs in sorted(fresh.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        if key in busy:
            continue
        if key[0] in by_jobset:  # one ES merge job for the job set's ES jobs
            sets.append(merge_set(key, outputs, 1))
            continue
        size = int((tasks[key[0]]["taskParams"] or {}).get("nFilesPerMergeJob") or MERGE_FILES_DEFAULT)
        sets += [merge_set(key, outputs[at : at + size], 1) for at in range(0, len(outputs), size)]
    return sets


def merge_outcomes_apply(*, chosen: list[tuple[MergeSet, int]], skipped: list[MergeSet], now: datetime) -> None:
    """Links the pre-merged jobs to the merge job that took them (and forgets the queue's skips); records the
    first skip of the pre-assigned queue of merge job sets that found no queue."""
    bulk_update_values(
        Job, fields=("mergeJob",), rows=[(pk, merge_job_id) for merge, merge_job_id in chosen for pk in merge.job_ids]
    )
    output_files_merge_take(job_ids=[pk for merge, _ in chosen for pk in merge.job_ids])
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


def merge_jobs_after_end(*, finished: list[int], failed: list[int], now: datetime) -> tuple[list[int], list[int]]:
    """What the merge jobs among jobs that just ended do to their pre-merged jobs: a finished merge finishes them; a
    merge whose last attempt failed cancels them (EC_MergeFailed); an earlier failed attempt leaves them merging
    for the next (merge_sets). Returns (the pre-merged jobs finished, those cancelled), for their input files.
    The caller holds their tasks (the one lock order: services.retries.job_tasks_lock)."""
    merges = dict(Job.objects.filter(pk__in=[*finished, *failed], isMerge=True).values_list("pk", "attemptNr"))
    if not merges:
        return [], []
    ended = {pk: "finished" for pk in finished if pk in merges}
    ended |= {pk: "failed" for pk in failed if pk in merges and (merges[pk] or 1) >= MERGE_MAX_ATTEMPTS}
    by_merge: dict[int, list[int]] = defaultdict(list)
    for pk, merge_id in Job.objects.filter(mergeJob_id__in=list(ended), jobStatus="merging").values_list(
        "pk", "mergeJob_id"
    ):
        by_merge[merge_id].append(pk)
    finished_premerged: list[int] = []
    cancelled: list[int] = []
    event_service = set(Job.objects.filter(pk__in=list(ended), eventService=ES_MERGE_JOB).values_list("pk", flat=True))
    for merge_id, job_ids in sorted(by_merge.items()):
        if ended[merge_id] == "finished":
            finished_premerged += job_status_transition_many(
                from_status="merging", to_status="finished", job_ids=job_ids, now=now, actor=ACTOR,
                reason=f"outputs merged by merge job {merge_id}",
            )  # fmt: skip
            # an ES merge job's event ranges: done → merged ("the corresponding ES merge job successfully finished")
            Event.objects.filter(PandaID__in=job_ids, status="done").update(status="merged")
        elif merge_id in event_service:
            # seed 002: ES jobs "go to status=finished or failed (jobsubstatus=es_merge_failed) once corresponding
            # ES-merge jobs are finished or failed"; their done ranges stay done
            diag = f"ES merge job {merge_id} failed its attempt {merges[merge_id]} of {MERGE_MAX_ATTEMPTS}"
            job_status_transition_many(
                from_status="merging", to_status="failed", job_ids=job_ids, now=now, actor=ACTOR, reason=diag,
                columns={"jobSubStatus": ES_MERGE_FAILED, "taskBufferErrorCode": TASK_BUFFER_MERGE_FAILED,
                         "taskBufferErrorDiag": diag},
            )  # fmt: skip
        else:
            diag = f"merge job {merge_id} failed its attempt {merges[merge_id]} of {MERGE_MAX_ATTEMPTS}"
            cancelled += job_status_transition_many(
                from_status="merging", to_status="cancelled", job_ids=job_ids, now=now, actor=ACTOR,
                reason=f"{diag}: inputs retried",
                columns={"jobSubStatus": MERGE_FAILED_SUBSTATUS, "taskBufferErrorCode": TASK_BUFFER_MERGE_FAILED,
                         "taskBufferErrorDiag": diag},
            )  # fmt: skip
    return finished_premerged, cancelled


def merges_pending(*, task_ids: list[int]) -> set[int]:
    """Of the tasks, those that still have a job merging or a merge job active: their outputs, or their ES jobs'
    events, are not merged yet (one query)."""
    if not task_ids:
        return set()
    rows = (
        Job.objects.filter(task_id__in=task_ids)
        .filter(Q(jobStatus="merging") | Q(isMerge=True, jobStatus__in=JOB_ACTIVE))
        .values("task_id")
        .annotate(
            merging=Count("pk", filter=Q(jobStatus="merging")),
            merges=Count("pk", filter=Q(jobStatus__in=JOB_ACTIVE, isMerge=True)),
        )
    )
    return {row["task_id"] for row in rows if row["merging"] or row["merges"]}
