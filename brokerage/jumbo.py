"""JumboWatchDog (seed 002, "Jumbo job switcher"): every ten minutes, switch jumbo jobs on and off in event service
tasks, and (panda-server 1.0.4) lift the priority of tasks near their end.

A task's `useJumbo` flag (JediTaskSpec.enum_useJumbo, 1.0.4): '' never enabled, W enabled and waiting for its
first jumbo jobs, R jumbo jobs made and every input file given out, P jumbo jobs made and files left, L lacking
an active jumbo job (kicked: the next job generation makes jumbo jobs only), D disabled.

The two profiles, chosen by JUMBO_DOG_RULE (written once each, `jumbo_rules`):

* seed: "JumboWatchDog tries to find event service tasks which have not enabled jumbo jobs yet, and have more
  remaining events than JUMBO_MIN_EVENTS_ENABLE, lower priorities than JUMBO_MAX_CURR_PRIO, transUse which is
  available at one or more jumbo-job-enabled PQs, and taskParam.inFilePosEvtNum=True, nFilesPerJob=1, or
  nEventsPerJob<nEventsPerInputFile … when the number of active tasks with jumbo jobs is less than JUMBO_MAX_TASKS
  and the total number of remaining events in active tasks with jumbo jobs is less than JUMBO_MAX_EVENTS. [It]
  enables jumbo jobs in a task with the largest number of remains events … and then repeats the procedure until
  the system has enough tasks and events. At the same time, [it] disables jumbo jobs in tasks which have less
  remains events than JUMBO_MIN_EVENTS_DISABLE." Enabling sets nJumboJobs = JUMBO_PER_TASK and maxJumboPerSite =
  JUMBO_PER_SITE ("The number of jumbo jobs per task / per site for each task"). "This machinery is disabled if
  the task sets the site parameter."
* panda (pandajedi/jedidog/JumboWatchDog.py, 1.0.4): never enables (its enabling code is gone; tasks ask for jumbo
  jobs with the nJumboJobs task parameter); disables as the seed says; lifts a disabled task to
  JUMBO_PRIO_DISABLED; lifts to 900 a task whose remaining events are under JUMBO_PROG_TO_BOOST % of its events
  with fewer than JUMBO_MAX_FILES_TO_BOOST files left (the code's test, `remaining × 100 // nEvents < 95`, though
  its log line speaks of events done); kicks a pending or running task with no active jumbo job (useJumbo → L);
  and asks a task at priority 900 or more to give back the inputs no active job holds, so co-jumbo jobs are made
  again. It reads every task's flags as they were at the start of the round.

tools/peer/jumbo_compare.py runs the panda variant beside the real JumboWatchDog on generated rounds.
Plain Python: the service (brokerage.services.jumbo) reads the tasks, this module decides, the service applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brokerage.engine.core.plugin import Variants
from brokerage.states import USE_JUMBO

# JediTaskSpec.enum_useJumbo (1.0.4), in words in states.USE_JUMBO
WAITING, RUNNING, PENDING, LACK, DISABLED = "W", "R", "P", "L", "D"
USE_JUMBO_FLAGS = tuple(flag for flag in USE_JUMBO if flag)
# getTaskWithJumbo_JEDI reads tasks in these statuses
STATUSES_READ = ("running", "pending", "scouting", "ready", "scouted")
# JumboWatchDog.run: prioToBoost, a constant there
PRIORITY_TO_BOOST = 900
# the job statuses getTaskWithJumbo's kick counts as an active jumbo job
ACTIVE_JUMBO_STATUSES = ("defined", "assigned", "activated", "sent", "starting", "running", "transferring", "holding")


@dataclass(frozen=True)
class JumboTask:
    """What the watchdog reads of one event service task (getTaskWithJumbo_JEDI's row, and for enabling the
    seed's criteria). `site` is the task's site parameter ('' when unset); `jumbo_jobs` its jumbo jobs by status
    (active ones and those that ended in the last day)."""

    jediTaskID: int
    status: str
    useJumbo: str
    currentPriority: int
    site: str
    nEvents: int
    nEventsDone: int
    nFiles: int
    nFilesDone: int
    jumbo_jobs: dict[str, int] = field(default_factory=dict)
    # the seed's enabling criteria
    at_jumbo_queue: bool = False  # its transUses is available at a queue taking jumbo jobs
    positional_events: bool = False  # inFilePosEvtNum, nFilesPerJob 1, or nEventsPerJob < nEventsPerInputFile

    @property
    def remaining(self) -> int:
        return self.nEvents - self.nEventsDone


@dataclass(frozen=True)
class JumboLimits:
    """The jumbo_dog parameters (gdpconfig), with the derived defaults already applied."""

    max_tasks: int = 1
    min_events_disable: int = 100_000
    min_events_enable: int = 1_000_000
    max_events: int = 500_000
    per_task: int = 1
    per_site: int = 1
    max_current_priority: int = 500
    progress_to_boost: int = 95
    max_files_to_boost: int = 500
    priority_when_disabled: int = 500


@dataclass(frozen=True)
class JumboAction:
    """One thing the watchdog does to a task: enable (nJumboJobs, maxJumboPerSite), disable, keep, boost (to
    `priority`), kick (useJumbo → L) or reset (give back inputs no active job holds); `detail` holds the numbers
    compared, `rule` names the test."""

    task_id: int
    action: str
    rule: str
    detail: dict[str, Any]
    priority: int | None = None

    @property
    def message(self) -> str:
        numbers = ", ".join(f"{key}={value}" for key, value in self.detail.items())
        return f"{self.action} {self.rule}" + (f" ({numbers})" if numbers else "")


@dataclass(frozen=True)
class JumboRound:
    """A round's actions in the order taken, and the tasks left with jumbo jobs: their count, events, events left."""

    actions: tuple[JumboAction, ...]
    tasks_with_jumbo: int
    total_events: int
    events_to_process: int


def jumbo_jobs_asked(*, use_jumbo: str, params: dict, site: str) -> int:
    """The jumbo jobs a task's job generation keeps making (JediTaskSpec.getNumJumboJobs): its nJumboJobs while its
    flag is on (W, R, P or L) and it names no site; 0 otherwise."""
    if use_jumbo not in (WAITING, RUNNING, PENDING, LACK) or site:
        return 0
    asked = params.get("nJumboJobs")
    return asked if isinstance(asked, int) and asked > 0 else 0


def _enabled(task: JumboTask) -> bool:
    return task.useJumbo not in ("", DISABLED)


def _disable_or_keep(task: JumboTask, limits: JumboLimits) -> JumboAction:
    numbers = {"events_to_process": task.remaining, "JUMBO_MIN_EVENTS_DISABLE": limits.min_events_disable}
    if task.remaining < limits.min_events_disable:
        return JumboAction(task.jediTaskID, "disable", "few_events_left", numbers)
    return JumboAction(task.jediTaskID, "keep", "enough_events_left", numbers)


def jumbo_round_seed(*, tasks: list[JumboTask], limits: JumboLimits) -> JumboRound:
    """Seed 002's switcher (module docstring): disable where few events are left, then enable the eligible task
    with the most events left while the tasks with jumbo jobs are fewer than JUMBO_MAX_TASKS and their events left
    fewer than JUMBO_MAX_EVENTS."""
    actions: list[JumboAction] = []
    kept: list[JumboTask] = []
    for task in tasks:
        if task.site or not _enabled(task) or task.status not in STATUSES_READ:
            continue
        action = _disable_or_keep(task, limits)
        actions.append(action)
        if action.action == "keep":
            kept.append(task)
    eligible = sorted(
        (
            task
            for task in tasks
            if task.useJumbo == ""
            and not task.site
            and task.status in STATUSES_READ
            and task.remaining > limits.min_events_enable
            and task.currentPriority < limits.max_current_priority
            and task.at_jumbo_queue
            and task.positional_events
        ),
        key=lambda task: (-task.remaining, task.jediTaskID),
    )
    active, events = len(kept), sum(task.remaining for task in kept)
    for task in eligible:
        if active >= limits.max_tasks or events >= limits.max_events:
            break
        actions.append(
            JumboAction(
                task.jediTaskID,
                "enable",
                "most_events_left",
                {
                    "events_to_process": task.remaining,
                    "JUMBO_MIN_EVENTS_ENABLE": limits.min_events_enable,
                    "currentPriority": task.currentPriority,
                    "JUMBO_MAX_CURR_PRIO": limits.max_current_priority,
                    "tasks_with_jumbo": active,
                    "JUMBO_MAX_TASKS": limits.max_tasks,
                    "events_in_jumbo_tasks": events,
                    "JUMBO_MAX_EVENTS": limits.max_events,
                    "nJumboJobs": limits.per_task,
                    "maxJumboPerSite": limits.per_site,
                },
            )
        )
        kept.append(task)
        active, events = active + 1, events + task.remaining
    return JumboRound(
        tuple(actions),
        len(kept),
        sum(task.nEvents for task in kept),
        sum(task.remaining for task in kept),
    )


def jumbo_round_panda(*, tasks: list[JumboTask], limits: JumboLimits) -> JumboRound:
    """JumboWatchDog.run of panda-server 1.0.4, step by step over getTaskWithJumbo's tasks (those whose useJumbo is
    set, in STATUSES_READ), each read once at the start of the round (module docstring)."""
    actions: list[JumboAction] = []
    count = total = done = 0
    for task in tasks:
        if task.useJumbo == "" or task.status not in STATUSES_READ:
            continue
        if task.useJumbo != DISABLED and not task.site:
            action = _disable_or_keep(task, limits)
            actions.append(action)
            if action.action == "keep":
                count, total, done = count + 1, total + task.nEvents, done + task.nEventsDone
        if task.useJumbo == DISABLED and task.currentPriority < limits.priority_when_disabled:
            actions.append(
                JumboAction(
                    task.jediTaskID,
                    "boost",
                    "jumbo_disabled",
                    {"currentPriority": task.currentPriority, "JUMBO_PRIO_DISABLED": limits.priority_when_disabled},
                    priority=limits.priority_when_disabled,
                )
            )
        files_left = task.nFiles - task.nFilesDone
        if (
            task.nEvents > 0
            and task.remaining * 100 // task.nEvents < limits.progress_to_boost
            and task.currentPriority < PRIORITY_TO_BOOST
            and files_left < limits.max_files_to_boost
        ):
            actions.append(
                JumboAction(
                    task.jediTaskID,
                    "boost",
                    "near_the_end",
                    {
                        "percent_of_events_left": task.remaining * 100 // task.nEvents,
                        "JUMBO_PROG_TO_BOOST": limits.progress_to_boost,
                        "files_left": files_left,
                        "JUMBO_MAX_FILES_TO_BOOST": limits.max_files_to_boost,
                    },
                    priority=PRIORITY_TO_BOOST,
                )
            )
        if task.status in ("pending", "running") and task.useJumbo in (PENDING, RUNNING):
            active = sum(n for status, n in task.jumbo_jobs.items() if status in ACTIVE_JUMBO_STATUSES)
            if active == 0:
                actions.append(JumboAction(task.jediTaskID, "kick", "no_active_jumbo_job", {"active_jumbo_jobs": 0}))
        if task.currentPriority >= PRIORITY_TO_BOOST:
            actions.append(
                JumboAction(task.jediTaskID, "reset", "high_priority", {"currentPriority": task.currentPriority})
            )
    return JumboRound(tuple(actions), count, total, total - done)


jumbo_rules = Variants("JUMBO_DOG_RULE", seed=jumbo_round_seed, panda=jumbo_round_panda)
