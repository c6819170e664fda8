"""The job dispatcher for real pilots at pilot-driven queues (issue 36): what panda-server's JobDispatcher does for
the PanDA pilot's `getJob`, `updateJob` and `getStatus` (jobdispatcher/JobDispatcher.py; the pilot 3.7.0.36 still
speaks this protocol, panda-server 1.0.4 answers it with a 403).

- getJob: the asking queue's activated job of the global share furthest below its pledge, then of highest
  priority, then the oldest (JobDispatcher's getCriteriaForGlobalShares, adapters.shares.global_share_order) goes
  to `sent`, taken with SKIP LOCKED so that two pilots never get the same job; nothing when the queue has none (or
  is not pilot-driven, or not online).
- updateJob: the pilot's state moves the job along seed 000's job machine (sent → starting → running → holding /
  transferring → finished | failed); a state the machine reaches only through others goes through them (a pilot
  that reports `running` first starts the job too). Every update is a heartbeat (modificationTime), so the
  watchdog's heartbeat rule times out a job whose pilot died. The end of a job updates its files as the simulator's
  ends do (retries, attempts). A job the monitor killed or closed meanwhile answers `tobekilled`.
- getStatus: each job's status and command.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q

from brokerage.adapters.shares import global_share_order, share_rank
from brokerage.event_service import ES_PILOT_FAILED
from brokerage.models import Job, PandaQueue
from brokerage.models.jobs import JOB_ENDED
from brokerage.services.event_service import ENDING_FROM, es_jobs_end, es_jobs_split, es_merge_corrupted_mark
from brokerage.services.merging import premerged_split
from brokerage.services.retries import job_inputs_after_end, job_tasks_lock
from brokerage.services.status import job_status_transition_many
from brokerage.states import JOB

ACTOR = "pilot"
# the pilot's states and the job statuses they mean (pilot/control/job.py: starting, running, holding,
# transferring, finished, failed; "closed" when the pilot gives a job up)
PILOT_STATES = ("starting", "running", "holding", "transferring", "finished", "failed", "closed")
# the statuses a pilot's job passes through on its way to finished, in the job machine's order
PILOT_STEPS = ("sent", "starting", "running", "holding", "transferring", "finished")


def steps_to(current: str, state: str) -> tuple[str, ...] | None:
    """The shortest way through seed 000's job machine from `current` to the pilot's `state`, over the statuses
    a pilot's job passes through; None when there is none (or the job is there already)."""
    ways = {current: ()}
    frontier = [current]
    while frontier:
        following = []
        for status in frontier:
            for step in JOB.allowed_from(status):
                if step in PILOT_STEPS and step not in ways:
                    ways[step] = (*ways[status], step)
                    following.append(step)
        frontier = following
    return ways.get(state) or None


# the pilot's error columns that updateJob may set (JobDispatcher.updateJob), with their column lengths
ERROR_FIELDS = {
    "pilotErrorCode": None,
    "pilotErrorDiag": 500,
    "exeErrorCode": None,
    "exeErrorDiag": 500,
    "supErrorCode": None,
    "supErrorDiag": 250,
    "ddmErrorCode": None,
    "ddmErrorDiag": 500,
}
MEASURED_FIELDS = {"cpuConsumptionTime": "cpuConsumptionTime", "maxRSS": "maxRSS", "maxPSS": "maxPSS"}


class DispatcherRefused(ValueError):
    """The request names something the dispatcher cannot serve (a job that is not there, a state the pilot does not
    have); the message says which."""


# getJobs' labels (panda-server 1.0.4 job_complex_module.py): what a pilot asking for a label may get
LABELS_FOR_USER = ("user", "panda", "install")
LABELS_FOR_MANAGED = ("managed", "test", "prod_test", "install")
LABELS_FOR_TEST = ("prod_test", "install", "test")
LABELS_FOR_UNIFIED = (*LABELS_FOR_MANAGED, "user", "panda")
# the most jobs one acquire hands (a request's cost is bounded; Harvester asks for tens)
ACQUIRE_MAX = 200


@dataclass(frozen=True)
class AcquireCriteria:
    """What the asking worker can run (panda-server 1.0's acquire_jobs, its getJobs filters): memory (MB) and disk
    (MB) for the job's minRamCount and maxDiskCount (0 on the job: any), remaining wall time (s) for its maxWalltime,
    its resource type, the pilot's label, the user whose jobs alone it may run, a task."""

    memory: int = 0
    disk_space: int = 0
    remaining_time: int = 0
    resource_type: str | None = None
    prod_source_label: str | None = None
    computing_element: str | None = None
    prod_user: str | None = None
    task_id: int | None = None

    def condition(self) -> Q:
        condition = Q()
        if self.memory > 0:
            condition &= Q(minRamCount__lte=self.memory) | Q(minRamCount=0) | Q(minRamCount__isnull=True)
        if self.disk_space > 0:
            condition &= Q(maxDiskCount__lte=self.disk_space) | Q(maxDiskCount=0) | Q(maxDiskCount__isnull=True)
        if self.remaining_time > 0:
            condition &= Q(maxWalltime__isnull=True) | Q(maxWalltime__lte=self.remaining_time)
        if self.resource_type is not None:
            condition &= Q(resource_type=self.resource_type)
        label = self.prod_source_label
        if label == "user":
            condition &= Q(prodSourceLabel__in=LABELS_FOR_USER)
        elif label in (None, "managed"):
            condition &= Q(prodSourceLabel__in=LABELS_FOR_MANAGED)
        elif label == "test" and self.computing_element is not None:
            condition &= Q(processingType="gangarobot") | Q(prodSourceLabel__in=LABELS_FOR_TEST)
        elif label == "unified":
            condition &= Q(prodSourceLabel__in=LABELS_FOR_UNIFIED)
        else:
            condition &= Q(prodSourceLabel=label)
        if self.prod_user is not None:
            condition &= Q(prodUserName=self.prod_user)
        if self.task_id is not None:
            condition &= Q(task_id=self.task_id)
        return condition


def pilot_job_acquire(*, queue: str, node: str, now: datetime, computing_element: str = "") -> Job | None:
    """getJob: the queue's next activated job, now `sent` to the pilot on `node` (and `computing_element`, kept on the
    job with the node); None when there is none. The old protocol's getJob, which asks for no label."""
    jobs = pilot_jobs_acquire(queue=queue, node=node, now=now, computing_element=computing_element)
    return jobs[0] if jobs else None


def pilot_jobs_acquire(
    *,
    queue: str,
    node: str,
    now: datetime,
    computing_element: str = "",
    n_jobs: int = 1,
    criteria: AcquireCriteria | None = None,
) -> list[Job]:
    """The queue's next `n_jobs` (at most ACQUIRE_MAX) activated jobs that meet `criteria` (None: any), in the order
    getJob hands them, now `sent` to the pilot on `node`; [] when there is none."""
    row = PandaQueue.objects.filter(name=queue).values("status", "pilot_driven").first()
    if row is None or not row["pilot_driven"] or row["status"] != "online":
        return []
    order = global_share_order()
    wanted = max(1, min(n_jobs, ACQUIRE_MAX))
    condition = criteria.condition() if criteria else Q()
    sent: list[int] = []
    # PostgreSQL locks the pick (SKIP LOCKED) until the move; SQLite has no row locks, so another pilot may move
    # the picked job first (the move then moves nothing): pick again
    for _ in range(3):
        with transaction.atomic():
            picked = list(
                Job.objects.select_for_update(skip_locked=True, no_key=True)
                .filter(condition, computingSite=queue, jobStatus="activated")
                .annotate(share_rank=share_rank(order))
                .order_by("share_rank", "-currentPriority", "pk")
                .values_list("pk", flat=True)[: wanted - len(sent)]
            )
            if not picked:
                break
            moved = job_status_transition_many(
                from_status="activated",
                to_status="sent",
                job_ids=picked,
                reason=f"getJob by a pilot on {node or 'an unnamed node'}"[:250],
                actor=ACTOR,
                now=now,
            )
            if moved:
                Job.objects.filter(pk__in=moved).update(
                    modificationHost=node[:128], computingElement=computing_element[:128]
                )
                sent += moved
        if len(sent) >= wanted:
            break
    ranks = {job_id: position for position, job_id in enumerate(sent)}
    return sorted(Job.objects.select_related("task").filter(pk__in=sent), key=lambda job: ranks[job.pk])


def pilot_job_update(*, job_id: int, state: str, report: dict[str, Any], now: datetime) -> str:
    """updateJob: the pilot's `state` for the job, with its error codes and measurements (`report`). Returns the
    command for the pilot: "NULL", or "tobekilled" when the job has ended here (killed, closed by the watchdog)."""
    if state not in PILOT_STATES:
        raise DispatcherRefused(f"state: one of {', '.join(PILOT_STATES)}, not {state!r}")
    job = Job.objects.filter(pk=job_id).values("jobStatus").first()
    if job is None:
        raise DispatcherRefused(f"jobId: no job {job_id}")
    current = job["jobStatus"]
    if current in JOB_ENDED:
        return "NULL" if current == state else "tobekilled"
    if current == "merging" and state == "finished":
        return "NULL"  # the pilot's final update again: its pre-merged outputs wait for their merge (merging.py)
    columns = _report_columns(report)
    if state in ("failed", "closed"):
        if state not in JOB.allowed_from(current):
            raise DispatcherRefused(f"state: job {job_id} is {current}, it cannot become {state}")
        # the pilot's jobSubStatus (panda-server 1.0.4 keeps it): pilot_failed fails an ES job whatever its ranges
        lost = ES_PILOT_FAILED if report.get("jobSubStatus") == ES_PILOT_FAILED else ""
        if state == "failed" and _event_service_end(job_id, current, ok=False, columns=columns, now=now, lost=lost):
            return "NULL"
        # an ES merge job names the ES outputs it could not read (panda-server 1.0.4 keeps them as its files)
        corrupted = [name for name in str(report.get("corruptedFiles") or "").split(",") if name not in ("", "NULL")]
        _end(job_id, current, state, columns, now, corrupted=corrupted)
        return "NULL"
    # a job the pilot did not get (still activated) has no way there: getJob first
    steps = steps_to(current, state) if current in PILOT_STEPS[:-1] else None
    if steps is None:
        if state == current:  # a heartbeat
            Job.objects.filter(pk=job_id, jobStatus=current).update(modificationTime=now, **columns)
            return "NULL"
        raise DispatcherRefused(f"state: job {job_id} is {current}, it cannot become {state}")
    for step in steps[:-1]:
        job_status_transition_many(
            from_status=current, to_status=step, job_ids=[job_id], reason=f"pilot reported {state}", actor=ACTOR,
            now=now,
        )  # fmt: skip
        current = step
    if steps[-1] == "finished":
        # a pre-merged job's outputs stay at its queue for their merge: merging, not finished (merging.py)
        premerged = current != "transferring" and premerged_split(job_ids=[job_id])[0]
        if _event_service_end(job_id, current, ok=True, columns=columns, now=now):
            pass  # an ES job's end is its ranges' (services.event_service)
        elif premerged:
            job_status_transition_many(
                from_status=current, to_status="merging", job_ids=[job_id], now=now, columns=columns, actor=ACTOR,
                reason="pilot reported finished: its pre-merged outputs wait for the merge",
            )  # fmt: skip
        else:
            _end(job_id, current, "finished", columns, now)
    else:
        job_status_transition_many(
            from_status=current, to_status=steps[-1], job_ids=[job_id], reason="pilot reported it", actor=ACTOR,
            now=now, columns=columns,
        )  # fmt: skip
    return "NULL"


def _event_service_end(
    job_id: int, current: str, *, ok: bool, columns: dict[str, Any], now: datetime, lost: str = ""
) -> bool:
    """An ES job's final update: the pilot's report kept, then its end decided from the ranges the pilot reported
    (updateEventRanges): merging, failed or closed with its substatus. False for any other job."""
    if current not in ENDING_FROM or es_jobs_split(job_ids=[job_id])[0] != [job_id]:
        return False
    with transaction.atomic():
        if job_id not in job_tasks_lock(job_ids=[job_id]):
            raise DispatcherRefused(f"jobId: job {job_id}'s task is busy, send the update again")
        Job.objects.filter(pk=job_id).update(modificationTime=now, **columns)
        es_jobs_end(succeeded=[job_id] if ok else [], failed=[] if ok else [job_id], now=now, reported=True, lost=lost)
    return True


def _end(
    job_id: int, current: str, state: str, columns: dict[str, Any], now: datetime, *, corrupted: list[str] = ()
) -> None:
    """A job's end, as the simulator ends jobs: its task locked first (the one lock order), then the move and its
    files' attempts, in one transaction. `corrupted`: the ES outputs a failed ES merge job could not read."""
    with transaction.atomic():
        if job_id not in job_tasks_lock(job_ids=[job_id]):
            raise DispatcherRefused(f"jobId: job {job_id}'s task is busy, send the update again")
        if corrupted and state == "failed":
            es_merge_corrupted_mark(
                merge_job_id=job_id, lfns=corrupted, pilot_error_code=columns.get("pilotErrorCode"), now=now
            )
        moved = job_status_transition_many(
            from_status=current, to_status=state, job_ids=[job_id], reason=f"pilot reported {state}", actor=ACTOR,
            now=now, columns=columns,
        )  # fmt: skip
        if moved:
            job_inputs_after_end(
                finished=moved if state == "finished" else [],
                failed=moved if state == "failed" else [],
                closed=moved if state == "closed" else [],
                now=now,
            )


def _report_columns(report: dict[str, Any]) -> dict[str, Any]:
    """The error codes, diagnostics and measurements of an update, as our columns (bad numbers are left out)."""
    columns: dict[str, Any] = {}
    for field, length in ERROR_FIELDS.items():
        value = report.get(field)
        if value in (None, "", "NULL"):
            continue
        if length is None:
            number = _whole(value)
            if number is not None:
                columns[field] = number
        else:
            columns[field] = str(value)[:length]
    for field, column in MEASURED_FIELDS.items():
        number = _whole(report.get(field))
        if number is not None and number >= 0:
            columns[column] = number
    for field, column, length in (("node", "modificationHost", 128), ("batchID", "batchID", 80),
                                  ("pilotID", "pilotID", 250)):  # fmt: skip
        value = report.get(field)
        if value not in (None, "", "NULL"):
            columns[column] = str(value)[:length]
    cores = _whole(report.get("coreCount"))
    if cores is not None and cores > 0:
        columns["actualCoreCount"] = cores
    return columns


def _whole(value: Any) -> int | None:
    try:
        number = int(float(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return number if -(2**31) <= number < 2**31 else None


def pilot_job_statuses(*, job_ids: list[int]) -> list[tuple[str, str]]:
    """getStatus: (status, command) per job, in the order asked; "notfound" for an id that is no job."""
    statuses = dict(Job.objects.filter(pk__in=job_ids).values_list("pk", "jobStatus"))
    return [
        (statuses.get(job_id, "notfound"), "tobekilled" if statuses.get(job_id) in ("cancelled", "closed") else "NULL")
        for job_id in job_ids
    ]
