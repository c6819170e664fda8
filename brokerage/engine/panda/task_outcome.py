"""How a task ends once its master inputs all have an outcome (seed 002, "Task status" and the JEDI_Tasks columns
GOAL, TERMCONDITION, FAILURERATE; JEDI_Dataset_Contents MAXFAILURE), with panda-server 1.0.4 where the seed is
silent (pandajedi/jedipprocess/PostProcessorBase.py getFinalTaskStatus and doPreCheck, jedirefine/TaskRefinerBase.py
for the parameters, db_proxy_mods/job_complex_module.py for a file's last attempt).

- completeness, in ‰: the events processed over the task's input events when its files count events, else the
  files finished over its files;
- the outcome: done when every file finished, failed when none did, else finished; a finished task that sets
  failWhenGoalUnreached fails when its completeness is under its goal (1000 ‰ when it sets none); a finished task
  that sets useExhausted and has not reached its goal stops exhausted for a human instead (a task without a goal
  never reaches it), and once passed ends by the same rule;
- the goal: the task parameter `goal` in percent, kept ×10, none above 100 %;
- the termination condition: a task whose `termCondition` is reached ("90%": that share of its files finished)
  stops getting jobs and finishes when its running ones end (seed 002: "to terminate task when 90% of files are
  successfully processed"). panda-server 1.0.4 keeps the task's osInfo in that column and reads no such condition;
  its tasks never carry the parameter, so the panda profile never meets it;
- the failure rate: the share of the inputs' attempts that failed, in percent;
- a file's last attempt: when its attempts reach maxAttempt or its failed attempts reach maxFailure (attempts of a
  closed job, rebrokered or cancelled, count against the first only).

Pure: no Django. The words of each outcome come back with it, for the task's log and page.
"""

from __future__ import annotations

from dataclasses import dataclass

FULL_GOAL = 1000  # ‰: a task without a goal is complete only when whole


@dataclass(frozen=True)
class TaskInputCounts:
    """A task's master input files and events: how many, how many finished, how many failed for good; the
    attempts made and the failed ones among them."""

    files: int
    finished: int
    failed: int = 0
    events: int = 0
    events_finished: int = 0
    attempts: int = 0
    failed_attempts: int = 0


def task_goal(value: object) -> int | None:
    """The goal a task parameter asks for, in ‰ (TaskRefinerBase: int(float(goal) × 10), none above 1000)."""
    try:
        goal = int(float(value) * 10)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return goal if 0 <= goal <= FULL_GOAL else None


def task_completeness(counts: TaskInputCounts) -> float:
    """In ‰, by events when the inputs count them (PostProcessorBase.getTaskCompleteness)."""
    if counts.events:
        return counts.events_finished * 1000.0 / counts.events
    if counts.files:
        return counts.finished * 1000.0 / counts.files
    return 0.0


def task_failure_rate(counts: TaskInputCounts) -> int | None:
    """Percent of the inputs' attempts that failed; None before the first attempt."""
    if not counts.attempts:
        return None
    return min(100, counts.failed_attempts * 100 // counts.attempts)


@dataclass(frozen=True)
class TaskOutcome:
    """The status a complete task goes to, and why, in a sentence."""

    status: str
    reason: str


def task_outcome(
    counts: TaskInputCounts,
    *,
    goal: int | None,
    fail_goal_unreached: bool = False,
    use_exhausted: bool = False,
    passed: bool = False,
) -> TaskOutcome:
    """The outcome of a task whose inputs all have one (module docstring). `passed`: a human or the 10 days let
    an exhausted task go on to its final status."""
    done = f"{counts.finished:,} of {counts.files:,} input files finished, {counts.failed:,} failed"
    if counts.files and counts.finished == counts.files:
        return TaskOutcome("done", done)
    if counts.finished == 0:
        return TaskOutcome("failed", done)
    completeness = task_completeness(counts)
    wanted = FULL_GOAL if goal is None else goal
    reached = goal is not None and completeness >= goal
    said = f"{done}: {completeness / 10:.1f}% complete against a goal of {wanted / 10:.1f}%"
    if use_exhausted and not passed and not reached:
        return TaskOutcome("exhausted", f"{said}, waiting for a human")
    if fail_goal_unreached and completeness < wanted:
        return TaskOutcome("failed", f"{said}, and the task fails when the goal is not reached")
    return TaskOutcome("finished", said if goal is not None else done)


def termination_percent(value: object) -> float | None:
    """The share of files a termination condition asks for ("90%", "90" or 90), or None when it names none."""
    text = str(value).strip().rstrip("%").strip() if value not in (None, "") else ""
    try:
        percent = float(text)
    except ValueError:
        return None
    return percent if 0 < percent <= 100 else None


def termination_reached(condition: object, counts: TaskInputCounts) -> bool:
    """Whether the task's termination condition is met: that share of its files finished."""
    percent = termination_percent(condition)
    return percent is not None and counts.files > 0 and counts.finished * 100 >= percent * counts.files


def file_attempts_used_up(
    *, attempt_nr: int, max_attempt: int | None, failed_attempt: int, max_failure: int | None, failed: bool
) -> bool:
    """Whether the attempt just ended was the file's last (job_complex_module.py 1.0.4: maxAttempt > attemptNr and
    maxFailure > failedAttempt, both counted after this attempt, allow another). `failed`: the job failed, so the
    attempt counts against maxFailure too; a closed job's does not."""
    attempts = attempt_nr + 1
    failures = failed_attempt + (1 if failed else 0)
    return (max_attempt is not None and attempts >= max_attempt) or (
        max_failure is not None and failures >= max_failure
    )


def file_attempt_limits(params: dict) -> tuple[int, int | None]:
    """The maxAttempt and maxFailure a task's new master input files get (ContentsFeeder 1.0.4): maxAttempt from
    the task (3 when it sets none), maxFailure only when the task sets it."""
    max_failure = params.get("maxFailure")
    return int(params.get("maxAttempt") or 3), int(max_failure) if max_failure not in (None, "") else None
