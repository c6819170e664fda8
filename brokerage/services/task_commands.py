"""Commands a shifter or a user gives a task, and the task states the watchdog keeps (seed 002).

Commands: retry (finished or exhausted tasks; failed inputs get new attempts; children retried too unless
aborted, broken or failed), abort (queued and running jobs killed, the task aborted), finish (queued jobs
killed, running ones may end, then finished), and marking input files lost or broken (never used again).

Watch: a task whose largest attemptNr reached a multiple of 5 is throttled for 120 × int(attemptNr/5)²
minutes; an exhausted task left alone for 10 days, or finished by a shifter, is passed (then closed by the completion
check); a task pending in the brokerage for longer than
TASK_PENDING_TIMEOUT is exhausted.
"""

from __future__ import annotations

import json
from datetime import datetime

from django.db import transaction
from django.db.models import F, Max, Q

from brokerage.grid_clock import grid_minutes, grid_speed, throttled_until
from brokerage.job_errors import TASK_BUFFER_KILLED
from brokerage.models import Dataset, DatasetFile, Event, Job, Task
from brokerage.params import whole_number
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.services.counters import dataset_counters_refresh, datasets_of_files
from brokerage.services.retries import event_files_give_back
from brokerage.services.status import (
    job_status_transition_many,
    status_transition,
    status_transition_many,
    task_status_transition_many,
)
from brokerage.states import INPUT_FILE, IllegalTransition, throttled_period_minutes
from brokerage.task_actions import RETRYABLE
from brokerage.throttle import DATA_MOTION_MARK
from brokerage.watchdog import EXHAUSTED_TIMEOUT

QUEUED_JOB_STATUSES = ("pending", "defined", "waiting", "assigned", "throttled", "activated")
RUNNING_JOB_STATUSES = ("sent", "starting", "running", "holding", "merging", "transferring")
NOT_RETRIED_CHILDREN = ("aborted", "broken", "failed")
GENERATING = ("ready", "scouting", "running")

# a priority is a 32-bit integer column (JEDI_Tasks.currentPriority)
PRIORITY_LIMIT = 2**31 - 1


class TaskCommandRefused(ValueError):
    """The command does not apply to the task in its status; nothing changed."""


def _kill_jobs(*, task_ids: list[int], statuses: tuple[str, ...], reason: str, actor: str, now: datetime) -> list[int]:
    """Jobs killed by a command are cancelled (seed 002: "cancelled state if they are killed manually")."""
    jobs = Job.objects.filter(task_id__in=task_ids, jobStatus__in=statuses)
    return _cancel(jobs, reason=reason, actor=actor, now=now)


def _cancel(jobs, *, reason: str, actor: str, now: datetime) -> list[int]:
    killed: list[int] = []
    rows = jobs.values_list("pk", "jobStatus")
    by_status: dict[str, list[int]] = {}
    for pk, status in rows:
        by_status.setdefault(status, []).append(pk)
    for status, ids in by_status.items():
        killed += job_status_transition_many(
            from_status=status,
            to_status="cancelled",
            job_ids=ids,
            reason=reason,
            actor=actor,
            now=now,
            columns={"taskBufferErrorCode": TASK_BUFFER_KILLED, "taskBufferErrorDiag": f"killed: {reason}"[:300]},
        )
    # their files are free again (a killed job is no attempt)
    freed = DatasetFile.objects.filter(PandaID__in=killed, status__in=("picked", "running"))
    touched = datasets_of_files(file_filter=Q(PandaID__in=killed, status__in=("picked", "running")))
    touched |= datasets_of_files(file_filter=Q(events__PandaID__in=killed))
    freed.update(status="ready")
    # their event ranges (seed 002, "Transition of event status"): processed ones discarded ("the ES job was killed
    # in the merging state after the event range had finished"), the others cancelled ("killed before the event
    # range was successfully processed"), as killEventServiceConsumers (1.0.4) does; the cancelled are cut again
    Event.objects.filter(PandaID__in=killed, status__in=("finished", "done")).update(status="discarded")
    Event.objects.filter(PandaID__in=killed, status__in=("ready", "sent", "running")).update(status="cancelled")
    event_files_give_back(job_ids=killed, now=now)
    dataset_counters_refresh(dataset_ids=touched, now=now)
    return killed


@transaction.atomic
def job_kill(*, job_ids: list[int], actor: str, now: datetime, reason: str = "kill command") -> list[bool]:
    """Kills jobs by PandaID (panda-client's killJobs, pbook's kill of jobs): each one still queued or running is
    cancelled like the jobs of an aborted task, its files ready again. Returns, in the order given, whether each
    was killed (TaskBuffer.killJobs answers so): False for an id that is no job or a job that had already ended."""
    killed = set(
        _cancel(
            Job.objects.filter(pk__in=job_ids, jobStatus__in=QUEUED_JOB_STATUSES + RUNNING_JOB_STATUSES),
            reason=reason,
            actor=actor,
            now=now,
        )
    )
    return [job_id in killed for job_id in job_ids]


def _command(task: Task, target: str, reason: str, actor: str, now: datetime) -> None:
    try:
        status_transition(obj=task, new_status=target, reason=reason, actor=actor, now=now)
    except IllegalTransition as refused:
        raise TaskCommandRefused(f"task {task.pk} is {task.status}: cannot {reason.split(':')[0]}") from refused


@transaction.atomic
def task_abort(*, task_id: int, actor: str, now: datetime, reason: str = "abort command") -> list[int]:
    """Aborts a task: every queued or running job cancelled, the task aborting then aborted. Returns the
    jobs killed."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    _command(task, "aborting", reason, actor, now)
    killed = _kill_jobs(
        task_ids=[task_id], statuses=QUEUED_JOB_STATUSES + RUNNING_JOB_STATUSES, reason=reason, actor=actor, now=now
    )
    status_transition(obj=task, new_status="aborted", reason=f"{len(killed)} jobs killed", actor=actor, now=now)
    return killed


@transaction.atomic
def task_finish(*, task_id: int, actor: str, now: datetime, reason: str = "finish command") -> list[int]:
    """Finishes a task soon: no more jobs, queued jobs cancelled, running ones may end; the completion check
    then closes it as finished (or done). Returns the jobs killed."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status == "exhausted":
        # nothing runs: the command is done at once, and the task is passed on to its final status (JEDI's
        # commandStatusMap: finish is "finishing" while doing, "passed" when done; seed 002 passed)
        _command(task, "passed", f"{reason}: manual intervention", actor, now)
        return []
    _command(task, "finishing", reason, actor, now)
    return _kill_jobs(task_ids=[task_id], statuses=QUEUED_JOB_STATUSES, reason=reason, actor=actor, now=now)


@transaction.atomic
def task_pause(*, task_id: int, actor: str, now: datetime, reason: str = "pause command") -> str:
    """Pauses a task (seed 002: "paused and doesn't do anything until it is resumed"): no new jobs, no brokerage;
    its queued and running jobs go on, as JEDI's pause leaves them. Returns the status it had."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    was = task.status
    _command(task, "paused", reason, actor, now)
    return was


@transaction.atomic
def task_resume(*, task_id: int, actor: str, now: datetime, reason: str = "resume command") -> str:
    """Resumes a paused task to the status it had before (JEDI keeps it in oldStatus). Returns it."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status != "paused":
        raise TaskCommandRefused(f"task {task_id} is {task.status}: only a paused task can be resumed")
    back = task.oldStatus or "ready"
    _command(task, back, reason, actor, now)
    return back


# the statuses a task can be resubmitted with new parameters from (seed 002 task status: toincexec)
INCEXEC_FROM = ("done", "failed", "finished")


@transaction.atomic
def task_incexec(
    *, task_id: int, params: dict, actor: str, now: datetime, reason: str = "resubmitted with new parameters"
) -> str:
    """Resubmits an ended task with new parameters (seed 002 "Task resubmission"; JEDI's incexec command, panda-client's
    retryTask with newParams): toincexec now, the refiner applying those a resubmission may change
    (services.progress.RESUBMIT_PARAMS) and looking the input up again for new files. Returns the reason logged."""
    from brokerage.services.progress import INCEXEC_PARAMS

    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status not in INCEXEC_FROM:
        raise TaskCommandRefused(
            f"task {task_id} is {task.status}: only done, failed or finished tasks are resubmitted"
        )
    said = f"{reason}: " + ", ".join(f"{key}={value}" for key, value in sorted(params.items()))
    Task.objects.filter(pk=task_id).update(taskParams={**(task.taskParams or {}), INCEXEC_PARAMS: params})
    _command(task, "toincexec", said[:500], actor, now)
    return said


@transaction.atomic
def task_retry(*, task_id: int, actor: str, now: datetime, reason: str = "retry command") -> list[int]:
    """Retries a finished or exhausted task and, unless aborted, broken or failed, its finished or exhausted
    children: failed input files get as many new attempts as the task allows, input datasets are used again,
    and the task goes toretry → running (ready when none of its inputs finished yet). Returns the tasks
    retried."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status not in RETRYABLE:
        raise TaskCommandRefused(f"task {task_id} is {task.status}: only finished or exhausted tasks can be retried")
    retried = [task_id]
    children = list(Task.objects.filter(parent_id=task_id).exclude(status__in=NOT_RETRIED_CHILDREN))
    for child in children:
        if child.status in RETRYABLE:
            retried += task_retry(task_id=child.pk, actor=actor, now=now, reason=f"parent {task_id} retried")
    _command(task, "toretry", reason, actor, now)
    max_attempt = int((task.taskParams or {}).get("maxAttempt", 3))
    again = DatasetFile.objects.filter(task_id=task_id, status="failed", type__in=("input", "pseudo_input"))
    # task_complex_module.py 1.0.4: maxFailure grows by the same attempts (NULL stays NULL)
    again.update(status="ready", maxAttempt=F("attemptNr") + max_attempt, maxFailure=F("maxFailure") + max_attempt)
    dataset_counters_refresh(dataset_ids=Dataset.objects.filter(task_id=task_id).values_list("pk", flat=True), now=now)
    status_transition_many(
        model=Dataset,
        ids=Dataset.objects.filter(task_id=task_id, type__in=("input", "pseudo_input"), status="done").values_list(
            "pk", flat=True
        ),
        from_status="done",
        to_status="ready",
        reason=reason,
        actor=actor,
        now=now,
    )
    some_finished = DatasetFile.objects.filter(task_id=task_id, status="finished").exists()
    status_transition(
        obj=task,
        new_status="running" if some_finished else "ready",
        reason="failed inputs ready again",
        actor=actor,
        now=now,
    )
    return retried


PRIORITY_RANGE = (0, 100_000)


@transaction.atomic
def task_priority_change(*, task_id: int, priority: int, actor: str, now: datetime) -> int:
    """Sets a task's priority, and that of its jobs still queued (JEDI changeTaskPriority). Returns the jobs
    changed."""
    low, high = PRIORITY_RANGE
    if isinstance(priority, bool) or not isinstance(priority, int) or not low <= priority <= high:
        raise TaskCommandRefused(f"a priority is a whole number from {low} to {high:,}, not {priority!r}")
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status in ("done", "finished", "failed", "aborted", "broken"):
        raise TaskCommandRefused(f"task {task_id} is {task.status}: its priority no longer matters")
    Task.objects.filter(pk=task_id).update(currentPriority=priority, modificationTime=now)
    return Job.objects.filter(task_id=task_id, jobStatus__in=QUEUED_JOB_STATUSES).update(
        currentPriority=priority, modificationTime=now
    )


@transaction.atomic
def task_reassign(*, task_id: int, nucleus: str, actor: str, now: datetime) -> str:
    """Sends a task to another nucleus (JEDI reassignTask): its next job sets are brokered there; a task pending
    after a failed job brokerage is brokered again at once. Returns the new nucleus."""
    from brokerage.models import Site

    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status not in ("pending", "ready", "scouting", "scouted", "running", "assigning"):
        raise TaskCommandRefused(f"task {task_id} is {task.status}: only a live task can be reassigned")
    if task.prodSourceLabel == "user":
        raise TaskCommandRefused(f"task {task_id} is an analysis task: it has no nucleus to reassign")
    if not Site.objects.filter(name=nucleus, role="nucleus").exists():
        raise TaskCommandRefused(f"{nucleus!r} is not a nucleus")
    Task.objects.filter(pk=task_id).update(nucleus=nucleus, modificationTime=now)
    task.refresh_from_db()
    if task.status == "pending" and task.oldStatus in ("ready", "scouted", "running"):
        status_transition(obj=task, new_status=task.oldStatus, reason=f"reassigned to {nucleus}", actor=actor, now=now)
    return nucleus


@transaction.atomic
def task_brokerage_retry_now(*, task_id: int, actor: str, now: datetime) -> str:
    """A task pending after a failed brokerage is brokered again at its next cycle instead of after its retry
    delay (what a shifter does once the cause is fixed). Returns the status it goes back to."""
    task = Task.objects.select_for_update(no_key=True).get(pk=task_id)
    if task.status != "pending" or task.oldStatus not in ("assigning", "ready", "scouted", "running"):
        raise TaskCommandRefused(
            f"task {task_id} is {task.status}: only a task pending in brokerage can be retried now"
        )
    target = task.oldStatus
    status_transition(obj=task, new_status=target, reason="brokerage retried now by a shifter", actor=actor, now=now)
    return target


def task_action_run(*, task_id: int, action: str, user, params: dict, now: datetime, via: str = "monitor") -> str:
    """Runs one action from the task page (or from panda-client, `via`) through its service and records it in the
    task's admin history (who, what, with which values). Returns a sentence saying what was done;
    TaskCommandRefused says why not."""
    from django.contrib.admin.models import CHANGE, LogEntry

    actor = f"{user.get_username()} ({via})"
    task = Task.objects.filter(pk=task_id).first()
    if task is None:
        raise TaskCommandRefused(f"no task {task_id}")
    from brokerage.task_actions import task_actions_available

    if action not in task_actions_available(task):
        raise TaskCommandRefused(f"task {task_id} is {task.status}: {action} does not apply")
    if action == "retry":
        retried = task_retry(task_id=task_id, actor=actor, now=now, reason=f"retry from the {via}")
        done = f"Task {task_id} retried" + (f" with {len(retried) - 1} children" if len(retried) > 1 else "") + "."
    elif action == "broker_now":
        done = f"Task {task_id} goes back to {task_brokerage_retry_now(task_id=task_id, actor=actor, now=now)}."
    elif action == "reassign":
        nucleus = str(params.get("nucleus") or "").strip()
        done = f"Task {task_id} reassigned to {task_reassign(task_id=task_id, nucleus=nucleus, actor=actor, now=now)}."
    elif action == "priority":
        raw = str(params.get("priority") or "").strip()
        priority = whole_number(raw.removeprefix("-"), maximum=PRIORITY_LIMIT)
        if priority is None:
            raise TaskCommandRefused(
                f"priority: a whole number from −{PRIORITY_LIMIT} to {PRIORITY_LIMIT}, not {raw!r}"
            )
        priority = -priority if raw.startswith("-") else priority
        changed = task_priority_change(task_id=task_id, priority=priority, actor=actor, now=now)
        done = f"Task {task_id} priority set to {priority} ({changed} queued jobs too)."
    elif action == "incexec":
        new = params.get("new_parameters") or {}
        if isinstance(new, str):  # the task page's field
            try:
                new = json.loads(new[:1000])
            except ValueError:
                new = None
        if not isinstance(new, dict) or not new:
            raise TaskCommandRefused('new_parameters: a JSON object of task parameters, e.g. {"nFilesPerJob": 2}')
        done = f"Task {task_id} " + task_incexec(task_id=task_id, params=new, actor=actor, now=now) + "."
    elif action == "pause":
        done = f"Task {task_id} paused (it was {task_pause(task_id=task_id, actor=actor, now=now)})."
    elif action == "resume":
        done = f"Task {task_id} resumed: {task_resume(task_id=task_id, actor=actor, now=now)} again."
    elif action == "finish":
        killed = task_finish(task_id=task_id, actor=actor, now=now, reason=f"finish from the {via}")
        done = f"Task {task_id} finishing: {len(killed)} queued jobs cancelled."
    else:
        killed = task_abort(task_id=task_id, actor=actor, now=now, reason=f"abort from the {via}")
        done = f"Task {task_id} aborted: {len(killed)} jobs killed."
    LogEntry.objects.log_actions(  # the admin's History of the task shows it
        user_id=user.pk,
        queryset=[Task.objects.get(pk=task_id)],
        action_flag=CHANGE,
        change_message=done,
        single_object=True,
    )
    return done


@transaction.atomic
def dataset_files_mark(*, file_ids: list[int], status: str, actor: str, now: datetime) -> int:
    """Marks input files lost (gone from DDM) or broken (unusable): job generation skips them and a task whose
    inputs are all processed closes without them. Returns how many were marked."""
    if status not in ("lost", "broken"):
        raise ValueError(f"files can be marked lost or broken, not {status}")
    # every status the input-file machine lets move to `status`
    markable = [source for source in INPUT_FILE.statuses if status in INPUT_FILE.allowed_from(source)]
    touched = datasets_of_files(file_filter=Q(pk__in=file_ids))
    marked = DatasetFile.objects.filter(pk__in=file_ids, status__in=markable).update(status=status, lastAttemptTime=now)
    dataset_counters_refresh(dataset_ids=touched, now=now)
    return marked


def throttle_reason(*, top: int) -> str:
    """The status log's why of a throttling: the attempt that crossed the multiple of 5 may be past it (attempts
    can come faster than the watchdog), so both are said, and the period in the grid's clock."""
    multiple = 5 * (top // 5)
    crossed = f"reached {multiple}" if top == multiple else f"is {top}, past {multiple}"
    clock = "" if grid_speed() == 1 else " of grid time"
    return (
        f"the largest input attemptNr {crossed}, a multiple of 5: throttled for "
        f"{throttled_period_minutes(top)} min{clock} (level {top // 5})"
    )


def task_watch(*, now: datetime, vo: str = "atlas") -> dict[str, list[int]]:
    """Throttles tasks at every fifth attempt and releases them after their period, finishes tasks exhausted
    for 10 days, and exhausts tasks pending in the brokerage beyond TASK_PENDING_TIMEOUT. The throttled period
    and the pending timeout are grid time (brokerage.grid_clock)."""
    moved: dict[str, list[int]] = {}
    # throttled: the largest attemptNr of the task's files is a multiple of 5, once per multiple. A multiple
    # passed between two watchdog runs still counts (attempts can come faster than the watchdog): the task is
    # throttled when its attemptNr has reached a multiple of 5 it was not yet throttled for.
    attempts = dict(
        DatasetFile.objects.filter(task__status__in=GENERATING, type__in=("input", "pseudo_input"))
        .values("task_id")
        .annotate(top=Max("attemptNr"))
        .values_list("task_id", "top")
    )
    info = dict(Task.objects.filter(pk__in=list(attempts)).values_list("pk", "numThrottled"))
    due = {pk: top for pk, top in attempts.items() if info.get(pk, 0) < top // 5}
    statuses = dict(Task.objects.filter(pk__in=list(due)).values_list("pk", "status"))
    for status in GENERATING:
        ids = [pk for pk, s in statuses.items() if s == status]
        if ids:
            moved.setdefault("throttled", []).extend(
                task_status_transition_many(
                    from_status=status,
                    moves={
                        pk: (
                            "throttled",
                            throttle_reason(top=due[pk]),
                        )
                        for pk in ids
                    },
                    extra={pk: {"throttledTime": now, "numThrottled": due[pk] // 5} for pk in ids},
                    actor="watchdog",
                    now=now,
                )
            )
    # release after 120 × int(attemptNr/5)² minutes, to the status the task had
    released = [
        (pk, old)
        for pk, old, since, level in Task.objects.filter(status="throttled", throttledTime__isnull=False)
        # a task throttled for its user's data in motion is released by that throttle (services/user_caps.py)
        .exclude(errorDialog__startswith=DATA_MOTION_MARK)
        .values_list("pk", "oldStatus", "throttledTime", "numThrottled")
        if throttled_until(since=since, level=level) <= now and old in GENERATING
    ]
    for status in GENERATING:
        ids = [pk for pk, old in released if old == status]
        if ids:
            moved.setdefault("released", []).extend(
                task_status_transition_many(
                    from_status="throttled",
                    moves={pk: (status, "throttled period over") for pk in ids},
                    actor="watchdog",
                    now=now,
                )
            )
    # exhausted for 10 days: passed on to its final status (seed 002 passed: "ready to go to a final state after
    # manual intervention or timeout"; the completion check decides done, finished or failed)
    stale = list(
        Task.objects.filter(status="exhausted", stateChangeTime__lte=now - EXHAUSTED_TIMEOUT).values_list(
            "pk", flat=True
        )
    )
    if stale:
        moved["passed"] = task_status_transition_many(
            from_status="exhausted",
            moves={pk: ("passed", "exhausted for 10 days without intervention") for pk in stale},
            actor="watchdog",
            now=now,
        )
    # pending in the brokerage too long: exhausted
    hours = gdpconfig_view(vo=vo).get("TASK_PENDING_TIMEOUT")
    limit = grid_minutes(60 * hours)
    timed_out = list(
        Task.objects.filter(status="pending", brokeragePendingSince__lte=now - limit).values_list("pk", flat=True)
    )
    if timed_out:
        moved["exhausted"] = task_status_transition_many(
            from_status="pending",
            moves={pk: ("exhausted", f"timed out while pending in the brokerage for {hours:g} h") for pk in timed_out},
            extra={pk: {"errorDialog": "timed out while pending in the brokerage"} for pk in timed_out},
            actor="watchdog",
            now=now,
        )
    return moved
