"""Why a task is in its state and what a shifter can do about it, for every state a shifter asks about (issue 35):
throttled, exhausted, failed, broken, finished with failures, running with a failure rate or jobs merging, scouting,
paused. A
pending task is answered by its brokerage decisions (advice.py); this adds the states that no decision explains.

The words come from the table of sentences (reasons.py, codes `state_*` and `fault_*`) and the actions from the
table beside it (advice.py ACTIONS), like the reasons of a skipped candidate. Who is at fault for a job error — the
task, the site or the data — comes from its code (FAULT_OF_ERROR; pilot codes from pilot3's
pilot/common/errorcodes.py, task-buffer codes from panda-server's taskbuffer/ErrorCode.py).

A task that could get jobs but does not because the job throttler holds its work queue back (brokerage/throttle.py)
is told so too, with the throttler's numbers (codes `throttle_*`).
Pure: the selector gathers the facts (`TaskFacts`), `task_state_explain` returns the lines and the advice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from brokerage.engine.core.advice import ACTIONS, Advice, advice_unique
from brokerage.engine.core.reasons import explain

# Who is at fault for a job's main error, by (component, code). A code missing here is read from the component:
# the payload's own codes (exe) are the task's, the data-management ones (ddm) the data's, others the site's.
TASK_FAULT, SITE_FAULT, DATA_FAULT = "task", "site", "data"
FAULT_OF_ERROR: dict[tuple[str, int], str] = {
    ("pilot", 1305): TASK_FAULT,  # failed to execute payload: the transform (release, configuration) crashed
    ("pilot", 1212): TASK_FAULT,  # payload ran out of memory: the task's memory request
    ("pilot", 1235): TASK_FAULT,  # payload exceeded the maximum allowed memory
    ("pilot", 1213): TASK_FAULT,  # batch time limit: the task's walltime estimate or job size
    ("pilot", 1150): TASK_FAULT,  # looping job: the payload stopped writing
    ("pilot", 1099): DATA_FAULT,  # stage-in failed
    ("pilot", 1151): DATA_FAULT,  # stage-in timed out
    ("pilot", 1361): DATA_FAULT,  # remote input could not be opened
    ("pilot", 1137): SITE_FAULT,  # stage-out: the site's storage refused the upload
    ("pilot", 1098): SITE_FAULT,  # not enough local space on the worker node
    ("pilot", 1201): SITE_FAULT,  # killed by SIGTERM: the batch system
    ("pilot", 1324): SITE_FAULT,  # a service not available
    ("pilot", 1377): SITE_FAULT,  # CVMFS not responding
    ("pilot", 1008): SITE_FAULT,  # general pilot error, see the batch log
    ("taskbuffer", 100): TASK_FAULT,  # killed (by its owner or a shifter)
    ("taskbuffer", 101): DATA_FAULT,  # transfer timeout
    ("taskbuffer", 102): SITE_FAULT,  # expired: no pilot took it
    ("taskbuffer", 113): SITE_FAULT,  # its merge job failed three times: that job's own error says why
}
FAULT_OF_COMPONENT = {"exe": TASK_FAULT, "ddm": DATA_FAULT}

# Which exhausted rule (brokerage/watchdog.py exhausted_reason) a stored reason is, by how its sentence begins.
EXHAUSTED_RULES = (
    ("timed out while pending", "state_exhausted_pending"),
    ("scouts' cpuTime", "state_exhausted_scout_cpu"),
    ("all reattempts done", "state_exhausted_attempts"),
)
SHORT_JOBS_MARK = "ran less than 4 minutes"
# how the data-motion throttle says why it throttled a task (JEDI's errorDialog, brokerage/throttle.py)
DATA_MOTION_MARK = "throttled since transferring large data volume"
# how the completion check says a task met its termination condition (services/progress.py)
TERMINATED_MARK = "termination condition"
# a running task whose recently ended jobs fail at least this often gets a Why and advice
FAILURE_RATE_SHOWN = 0.2


def error_fault(component: str, code: int | None) -> str:
    """task, site or data: who can clear a job error of this code."""
    if code is None:
        return SITE_FAULT
    return FAULT_OF_ERROR.get((component, code), FAULT_OF_COMPONENT.get(component, SITE_FAULT))


@dataclass(frozen=True)
class MainError:
    """The commonest error of the task's jobs that ended badly, and the queues it happened at (most first)."""

    label: str
    component: str
    code: int | None
    count: int
    queues: tuple[tuple[str, int], ...] = ()

    @property
    def fault(self) -> str:
        return error_fault(self.component, self.code)

    def where(self, limit: int = 3) -> str:
        shown = ", ".join(f"{queue} ({n})" for queue, n in self.queues[:limit] if queue)
        more = len(self.queues) - limit
        return (shown or "no queue") + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class TaskFacts:
    """What the page knows of a task, as plain data. `entered_reason` is the reason stored with its move into the
    current status; `recent_*` count its jobs that ended in the last `recent_hours`."""

    status: str
    entered_reason: str = ""
    entered_by: str = ""
    entered_at: datetime | None = None
    error_dialog: str = ""
    old_status: str = ""
    throttle_level: int = 0
    release_at: datetime | None = None
    top_attempt: int = 0
    top_attempt_file: str = ""
    jobs_total: int = 0
    jobs_ended_badly: int = 0
    recent_hours: int = 6
    recent_finished: int = 0
    recent_failed: int = 0
    scouts_wanted: int = 0
    scouts_done: int = 0
    scouts_failed: int = 0
    # a task whose outputs are merged: its jobs in merging, its merge jobs active and merge attempts failed
    merging_jobs: int = 0
    merge_jobs_active: int = 0
    merge_attempts_failed: int = 0
    # a task with jumbo jobs (useJumbo W, R, P or L): its flag in words, its active jumbo jobs, its co-jumbo jobs
    # waiting at WAITING_CO_JUMBO
    jumbo_flag: str = ""
    jumbo_jobs_active: int = 0
    fake_co_jumbo_waiting: int = 0
    main_error: MainError | None = None
    sentences: list[str] = field(default_factory=list)
    # the job throttler holding its work queue's new jobs back now: (reason code `throttle_*`, its numbers)
    generation_hold: tuple[str, dict] | None = None


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _time(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "its next run"


def _error_lines(facts: TaskFacts) -> tuple[list[str], list[Advice]]:
    """The main error: what, how many, where, and whose fault, with the action for that fault."""
    error = facts.main_error
    if error is None:
        return [], []
    code = f"fault_{error.fault}"
    detail = {"error": error.label, "count": error.count, "ended": facts.jobs_ended_badly, "where": error.where()}
    action = ACTIONS[code]
    evidence = (
        f"{error.count} of the {facts.jobs_ended_badly} jobs that ended badly: {error.label}, at {error.where()}."
    )
    return [explain(code, detail)], [Advice(action.kind, action.text, evidence, (code,))]


def _exhausted_code(reason: str) -> str:
    if SHORT_JOBS_MARK in reason:
        return "state_exhausted_short_jobs"
    for start, code in EXHAUSTED_RULES:
        if reason.startswith(start):
            return code
    return "state_exhausted"


# statuses said in one sentence of who and when, with what to do (seed 002, "Transition of task status")
SAID_AS_IS = (
    "paused",
    "topreprocess",
    "preprocessing",
    "aborting",
    "aborted",
    "finishing",
    "passed",
    "toretry",
    "toincexec",
    "rerefine",
)


def task_state_explain(facts: TaskFacts) -> tuple[list[str], list[Advice]]:
    """(why, advice) for the task's state; both empty for a state that needs no explaining (a running task whose
    jobs mostly succeed, a task finished without failures, a pending one: its decisions answer)."""
    status = facts.status
    reason = facts.entered_reason or facts.error_dialog
    lines: list[str] = []
    codes: list[str] = []
    detail: dict = {"reason": reason, "by": facts.entered_by or "someone", "at": _time(facts.entered_at)}
    with_error = False
    if status == "throttled" and DATA_MOTION_MARK in reason:
        codes.append("state_throttled_data_motion")
    elif status == "throttled":
        if facts.top_attempt_file:
            detail["file"] = facts.top_attempt_file
        detail.update(
            attempt=facts.top_attempt or 5 * max(facts.throttle_level, 1),
            # the multiple of 5 it was throttled for: the top attempt may have moved on since (a retry, a rerun)
            threshold=5 * max(facts.throttle_level, 1),
            level=max(facts.throttle_level, 1),
            until=_time(facts.release_at),
            back=facts.old_status or "its previous status",
        )
        codes.append("state_throttled")
        with_error = True
    elif status == "exhausted":
        codes.append(_exhausted_code(reason))
        with_error = codes[0] in ("state_exhausted_attempts", "state_exhausted")
    elif status in ("failed", "broken"):
        codes.append(f"state_{status}")
        with_error = True
    elif status == "finished" and facts.jobs_ended_badly:
        detail.update(failed=facts.jobs_ended_badly, total=facts.jobs_total)
        codes.append("state_finished_failures")
        with_error = True
    elif status == "running":
        ended = facts.recent_finished + facts.recent_failed
        if ended and facts.recent_failed / ended >= FAILURE_RATE_SHOWN:
            detail.update(
                rate=round(100 * facts.recent_failed / ended),
                failed=facts.recent_failed,
                ended=ended,
                hours=facts.recent_hours,
            )
            codes.append("state_running_failing")
            with_error = True
        if facts.merging_jobs:  # seed 002, "Output merging" (services/merging.py)
            detail.update(
                merging=facts.merging_jobs,
                merges=_counted(facts.merge_jobs_active, "merge job"),
                failed_merges=_counted(facts.merge_attempts_failed, "merge attempt"),
            )
            codes.append("state_running_merging")
        if facts.jumbo_flag:  # seed 002, "Jumbo jobs and co-jumbo jobs" (services/jumbo.py)
            detail.update(
                flag=facts.jumbo_flag,
                jumbo=_counted(facts.jumbo_jobs_active, "active jumbo job"),
                fakes=_counted(facts.fake_co_jumbo_waiting, "co-jumbo job"),
            )
            codes.append("state_running_jumbo")
    elif status == "scouting":
        detail.update(wanted=facts.scouts_wanted, done=facts.scouts_done, failed=facts.scouts_failed)
        codes.append("state_scouting")
    elif status == "finishing" and reason.startswith(TERMINATED_MARK):
        codes.append("state_finishing_terminated")
    elif status in SAID_AS_IS:
        codes.append(f"state_{status}")
    numbers = {code: detail for code in codes}
    if facts.generation_hold is not None:  # "why does this task get no jobs"
        hold, hold_detail = facts.generation_hold
        codes.append(hold)
        numbers[hold] = hold_detail
    advice: list[Advice] = []
    for code in codes:
        lines.append(explain(code, numbers[code]))
        action = ACTIONS.get(code)
        if action is not None:
            advice.append(Advice(action.kind, action.text, lines[-1], (code,)))
    if with_error:
        error_lines, error_advice = _error_lines(facts)
        lines += error_lines
        # the fault's action first: it says who clears the cause; the state's own (retry, wait) follows
        advice = error_advice + advice
    return lines, advice_unique(advice)


__all__ = ["MainError", "TaskFacts", "error_fault", "task_state_explain"]
