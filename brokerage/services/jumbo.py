"""Jumbo jobs (seed 002, "Jumbo jobs and co-jumbo jobs" and "Jumbo job switcher"): the watchdog round that switches
them on and off (brokerage.jumbo decides, this applies) and the hourly check of co-jumbo jobs.

* `jumbo_watch_run` every ten minutes: each action on a task is written with its numbers in the task's status log
  (status unchanged, actor "jumbo watchdog"), as the priority boost writes its own.
* `co_jumbo_check` ("A cron hourly checks co-jumbo jobs in waiting/assigned/activated state and finishes them if
  all events in corresponding jobsets are done"): such a job ends as an ES job whose payload ended, its events
  processed by jumbo jobs done ("Those events are changed to done when co-jumbo jobs are finished"), and it waits in
  merging for its job set's ES merge job ("Then co-jumbo jobs generate merge jobs similarly as conventional event
  service jobs"; a fake one's merge goes to its jumbo job's queue: services.merging). A fake co-jumbo job waiting at
  WAITING_CO_JUMBO whose task disabled jumbo jobs, or older than six hours, is closed and its inputs go back for a
  real co-jumbo job (getCoJumboJobsToBeFinished, 1.0.4).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, F, OuterRef

from brokerage import jumbo
from brokerage.jumbo import JumboLimits, JumboRound
from brokerage.models import DatasetFile, Event, Job, Task, TaskStatusLog
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.selectors.jumbo import jumbo_task_facts
from brokerage.services.bulk import rows_lock
from brokerage.services.event_service import es_jobs_end
from brokerage.services.retries import event_files_give_back, job_inputs_after_end
from brokerage.services.status import job_status_transition_many, task_note
from brokerage.states import CO_JUMBO_JOB, EVENTS_PROCESSED, FAKE_CO_JUMBO_HOURS, JOB_ACTIVE, WAITING_CO_JUMBO

ACTOR = "jumbo watchdog"
# the co-jumbo jobs the hourly check looks at (seed 002)
CHECKED_STATUSES = ("waiting", "assigned", "activated")


def jumbo_limits(*, config) -> JumboLimits:
    """The jumbo_dog parameters from a configuration view (derived defaults applied by the registry)."""
    return JumboLimits(
        max_tasks=config.get("JUMBO_MAX_TASKS"),
        min_events_disable=config.get("JUMBO_MIN_EVENTS_DISABLE"),
        min_events_enable=config.get("JUMBO_MIN_EVENTS_ENABLE"),
        max_events=config.get("JUMBO_MAX_EVENTS"),
        per_task=config.get("JUMBO_PER_TASK"),
        per_site=config.get("JUMBO_PER_SITE"),
        max_current_priority=config.get("JUMBO_MAX_CURR_PRIO"),
        progress_to_boost=config.get("JUMBO_PROG_TO_BOOST"),
        max_files_to_boost=config.get("JUMBO_MAX_FILES_TO_BOOST"),
        priority_when_disabled=config.get("JUMBO_PRIO_DISABLED"),
    )


def jumbo_watch_run(*, now: datetime, vo: str = "atlas") -> JumboRound:
    """One JumboWatchDog round: reads the tasks, decides (JUMBO_DOG_RULE's variant) and applies every action in
    one transaction, the tasks locked in the one lock order."""
    config = gdpconfig_view(vo=vo)
    decided = jumbo.jumbo_rules.pick(config)(tasks=jumbo_task_facts(now=now), limits=jumbo_limits(config=config))
    if not decided.actions:
        return decided
    with transaction.atomic():
        locked = set(rows_lock(Task, {action.task_id for action in decided.actions}))
        tasks = {task.pk: task for task in Task.objects.filter(pk__in=locked)}
        logs = []
        for action in decided.actions:
            task = tasks.get(action.task_id)
            if task is None or not _apply(task, action):
                continue
            task.modificationTime = now
            logs.append(task_note(task=task, actor=ACTOR, reason=action.message, now=now))
        Task.objects.bulk_update(
            list(tasks.values()), ["useJumbo", "taskParams", "currentPriority", "modificationTime"]
        )
        TaskStatusLog.objects.bulk_create(logs)
        for action in decided.actions:
            if action.action == "reset" and action.task_id in tasks:
                co_jumbo_inputs_reset(task_id=action.task_id, now=now)
    return decided


def _apply(task: Task, action: jumbo.JumboAction) -> bool:
    """One action on a locked task; False when there is nothing to do (the task moved on since it was read)."""
    params = dict(task.taskParams or {})
    if action.action == "enable":
        # enableJumboJobs (1.0.4): useJumbo W, nJumboJobs and maxJumboPerSite set (JEDI's NJ and MJ split rules)
        task.useJumbo = jumbo.WAITING
        params.update(nJumboJobs=action.detail["nJumboJobs"], maxJumboPerSite=action.detail["maxJumboPerSite"])
    elif action.action == "disable":
        task.useJumbo = jumbo.DISABLED
        params.update(nJumboJobs=0, maxJumboPerSite=0)
    elif action.action == "boost":
        if task.currentPriority >= action.priority:
            return False
        task.currentPriority = action.priority
    elif action.action == "kick":
        # kickPendingTasksWithJumbo_JEDI: only a pending or running task with useJumbo P or R, not locked
        if task.useJumbo not in (jumbo.PENDING, jumbo.RUNNING) or task.status not in ("pending", "running"):
            return False
        if task.lockedBy:
            return False
        task.useJumbo = jumbo.LACK
    elif action.action not in ("keep", "reset"):
        raise ValueError(f"unknown jumbo action {action.action!r}")
    task.taskParams = params
    return True


def co_jumbo_inputs_reset(*, task_id: int, now: datetime) -> int:
    """resetInputToReGenCoJumbo_JEDI (1.0.4): the task's master input files still running that no active job holds
    go back to ready with one more attempt allowed (maxAttempt and maxFailure one more; NULL stays NULL), so job
    generation makes real co-jumbo jobs for them. Returns how many."""
    holders = Job.objects.filter(pk=OuterRef("PandaID"), jobStatus__in=JOB_ACTIVE)
    return (
        DatasetFile.objects.filter(
            task_id=task_id, type__in=("input", "pseudo_input"), dataset__master__isnull=True, status="running"
        )
        .exclude(Exists(holders))
        .update(
            status="ready",
            attemptNr=F("attemptNr") + 1,
            maxAttempt=F("maxAttempt") + 1,
            maxFailure=F("maxFailure") + 1,
            lastAttemptTime=now,
        )
    )


def co_jumbo_check(*, now: datetime) -> dict[str, list[int]]:
    """The hourly check (module docstring): the co-jumbo jobs ended (in merging) because their events are processed,
    and the fake ones closed to make room for real ones."""
    jobs = list(
        Job.objects.filter(eventService=CO_JUMBO_JOB, jobStatus__in=CHECKED_STATUSES).values_list(
            "pk", "jobStatus", "computingSite", "creationTime", "task__useJumbo"
        )
    )
    if not jobs:
        return {}
    ids = [pk for pk, *_ in jobs]
    open_events = set(
        Event.objects.filter(PandaID__in=ids).exclude(status__in=EVENTS_PROCESSED).values_list("PandaID", flat=True)
    )
    with_events = set(Event.objects.filter(PandaID__in=ids).values_list("PandaID", flat=True))
    done = [pk for pk in ids if pk in with_events and pk not in open_events]
    too_old = now - timedelta(hours=FAKE_CO_JUMBO_HOURS)
    given_back = [
        pk
        for pk, status, site, created, use_jumbo in jobs
        if pk not in done
        and status == "waiting"
        and site == WAITING_CO_JUMBO
        and (use_jumbo == jumbo.DISABLED or created < too_old)
    ]
    closed: list[int] = []
    with transaction.atomic():
        # its events done and itself in merging for its job set's ES merge job, as an ES job whose payload ended
        # (services.event_service: es_wait while others of its set wait, es_merge for the last)
        ended = es_jobs_end(succeeded=done, failed=[], now=now, reported=True)
        closed += job_status_transition_many(
            from_status="waiting",
            to_status="closed",
            job_ids=given_back,
            reason="fake co-jumbo job given back for a real co-jumbo job (jumbo disabled or waiting over "
            f"{FAKE_CO_JUMBO_HOURS} h)",
            actor=ACTOR,
            now=now,
            columns={"jobSubStatus": "co_jumbo_reset"},
        )
        # the given-back jobs' events not yet processed are cancelled, and their files go back to ready with one
        # attempt more (as resetInputToReGenCoJumbo_JEDI's): job generation cuts those ranges again for real jobs
        Event.objects.filter(PandaID__in=closed, status="ready").update(status="cancelled")
        job_inputs_after_end(finished=[], failed=[], closed=closed, now=now)
        event_files_give_back(job_ids=closed, now=now)
    moved: dict[str, list[int]] = defaultdict(list)
    for pk, outcome in sorted(ended.items()):
        moved[outcome.status].append(pk)
    if closed:
        moved["closed"] += closed
    return dict(moved)
