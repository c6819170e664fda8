"""Status lists and allowed transitions of every entity with a life cycle, in one declarative table each.

The statuses and their meaning are those of seed 002 ("Transition of task/dataset/file/event status") and, for
PanDA jobs, REFERENCE.md ("Job statuses"). The seed draws the transitions only as pictures, so the arrows below
are reconstructed from the status descriptions of seed 002 and seed 000 and are listed with their reasons in
docs/decisions.md ("State machines"). Everything here is plain Python: the engine and the services both read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


class IllegalTransition(ValueError):
    """A status change the entity's state machine does not allow; nothing was changed."""

    def __init__(self, entity: str, identifier: object, from_status: str, to_status: str, allowed: Iterable[str]):
        self.entity = entity
        self.identifier = identifier
        self.from_status = from_status
        self.to_status = to_status
        self.allowed = tuple(sorted(allowed))
        allowed_text = ", ".join(self.allowed) if self.allowed else "none: it is a final status"
        super().__init__(
            f"{entity} {identifier}: cannot go from '{from_status}' to '{to_status}' "
            f"(allowed from '{from_status}': {allowed_text})"
        )


class UnknownStatus(ValueError):
    """A status that is not in the entity's list at all."""

    def __init__(self, entity: str, status: str, known: Iterable[str]):
        self.entity = entity
        self.status = status
        article = "an" if entity[:1] in "aeiou" else "a"
        super().__init__(f"'{status}' is not {article} {entity} status (known: {', '.join(known)})")


@dataclass(frozen=True)
class StateMachine:
    """The allowed moves of one entity: status → statuses it may go to next. Statuses keep the seed's order."""

    entity: str
    transitions: Mapping[str, frozenset[str]]
    initial: frozenset[str]
    statuses: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "statuses", tuple(self.transitions))
        for source, targets in self.transitions.items():
            unknown = targets - set(self.transitions)
            if unknown:
                raise ValueError(f"{self.entity}: '{source}' leads to unknown statuses {sorted(unknown)}")
            if source in targets:
                raise ValueError(f"{self.entity}: '{source}' must not lead to itself")
        if not self.initial <= set(self.transitions):
            raise ValueError(f"{self.entity}: unknown initial statuses {sorted(self.initial - set(self.transitions))}")

    @property
    def final(self) -> frozenset[str]:
        return frozenset(status for status, targets in self.transitions.items() if not targets)

    def allowed_from(self, status: str) -> frozenset[str]:
        self.require_known(status)
        return self.transitions[status]

    def require_known(self, status: str) -> None:
        if status not in self.transitions:
            raise UnknownStatus(self.entity, status, self.statuses)

    def check(self, from_status: str, to_status: str, *, identifier: object = "") -> None:
        """Raises IllegalTransition (or UnknownStatus) unless from_status → to_status is an allowed move."""
        self.require_known(to_status)
        if to_status not in self.allowed_from(from_status):
            raise IllegalTransition(self.entity, identifier, from_status, to_status, self.transitions[from_status])

    def is_allowed(self, from_status: str, to_status: str) -> bool:
        return to_status in self.transitions.get(from_status, frozenset())

    def choices(self) -> list[tuple[str, str]]:
        return [(status, status) for status in self.statuses]


def _machine(entity: str, initial: Iterable[str], table: Mapping[str, Iterable[str]]) -> StateMachine:
    return StateMachine(entity, {source: frozenset(targets) for source, targets in table.items()}, frozenset(initial))


# Commands an operator can give a task while it is alive (seed 002: abort, finish, pause, broken definition).
_TASK_COMMANDS = ("aborting", "finishing", "paused", "tobroken")
# Where a paused or pending task goes back to: the status it had before (JEDI keeps it in oldStatus).
_TASK_RESUMABLE = ("defined", "assigning", "ready", "scouting", "scouted", "running")

TASK = _machine(
    "task",
    initial=("registered",),
    table={
        "registered": ("defined", "pending", "aborting", "tobroken"),
        "defined": ("assigning", "ready", "topreprocess", "pending", *_TASK_COMMANDS),
        "assigning": ("ready", "pending", *_TASK_COMMANDS),
        "ready": ("scouting", "running", "pending", "throttled", "prepared", "assigning", *_TASK_COMMANDS),
        # seed 002 exhausted: "also ... if they are timed-out while pending in the brokerage"
        "pending": (*_TASK_RESUMABLE, "exhausted", *_TASK_COMMANDS),
        # seed 002 exhausted: scouts' cpuTime > 2 × the definition, or too many short analysis scouts
        "scouting": ("scouted", "running", "pending", "throttled", "exhausted", "prepared", *_TASK_COMMANDS),
        # scouted → pending: the job set after the scouts found no queue (job brokerage, retried in 60 min)
        "scouted": ("running", "ready", "pending", "exhausted", "aborting", "finishing", "paused"),
        "running": ("prepared", "pending", "throttled", "scouting", *_TASK_COMMANDS),
        # prepared → running when an open input dataset receives new files (seed 002, open dataset handling)
        "prepared": ("done", "finished", "failed", "exhausted", "running"),
        "done": ("toincexec",),
        "failed": ("toincexec",),
        "finished": ("toretry", "toincexec"),
        "aborting": ("aborted",),
        "aborted": (),
        "finishing": ("prepared", "finished"),
        "topreprocess": ("preprocessing", "aborting", "tobroken"),
        "preprocessing": ("defined", "ready", "aborting", "tobroken"),
        "tobroken": ("broken",),
        "broken": (),
        # seed 002 task retry: finished or exhausted tasks can be retried
        "toretry": ("ready", "running"),
        "toincexec": ("rerefine",),
        "rerefine": ("defined", "ready", "running", "tobroken"),
        "paused": (*_TASK_RESUMABLE, "pending", "throttled", "aborting", "finishing"),
        # throttled: 120 × int(max(attemptNr)/5)² minutes, then back to generating jobs
        "throttled": ("ready", "scouting", "running", "aborting", "finishing", "paused"),
        "exhausted": ("toretry", "passed", "aborting", "finishing"),
        "passed": ("done", "finished", "failed"),
    },
)
# the status of a task waiting for task brokerage to choose its nucleus (seed 000)
WAITING_FOR_NUCLEUS = "assigning"

INPUT_DATASET = _machine(
    "input dataset",
    initial=("defined",),
    table={
        "defined": ("toupdate", "ready", "pending", "broken"),
        "toupdate": ("defined", "ready", "pending", "broken"),
        "pending": ("toupdate", "ready", "broken"),
        "broken": (),
        "ready": ("toupdate", "pending", "done", "broken"),
        # a retried task or an open dataset with new files is used again
        "done": ("ready", "toupdate"),
    },
)

OUTPUT_DATASET = _machine(
    "output dataset",
    initial=("defined",),
    table={
        "defined": ("ready",),
        "ready": ("running", "prepared", "done"),
        "running": ("prepared", "done"),
        # a retried task adds files to its output datasets again
        "prepared": ("done", "running"),
        "done": ("running",),
    },
)

INPUT_FILE = _machine(
    "input file",
    initial=("ready", "missing"),
    table={
        "ready": ("picked", "missing", "lost", "broken"),
        "missing": ("ready", "lost"),
        "lost": ("ready",),
        "broken": (),
        # picked → ready: the job was closed before it started, the file goes back for a new attempt
        "picked": ("running", "ready", "finished", "failed", "lost", "broken"),
        "running": ("finished", "failed", "ready", "partial", "lost", "broken"),
        "finished": (),
        # failed → ready: task retry tries failed files again (seed 002, task retry)
        "failed": ("ready",),
        "partial": ("picked", "running", "finished", "failed"),
    },
)

OUTPUT_FILE = _machine(
    "output file",
    initial=("defined",),
    table={
        # a job's files follow it (brokerage/outputs.py): a job can hold or finish without our seeing it run (a pilot
        # that reported holding first; a co-jumbo job finished where it waited, its events processed by jumbo jobs)
        "defined": ("running", "prepared", "finished", "failed"),
        "running": ("prepared", "finished", "failed"),
        "prepared": ("merging", "finished", "failed"),
        "merging": ("finished", "failed"),
        "finished": (),
        "failed": (),
    },
)

EVENT = _machine(
    "event",
    initial=("ready",),
    table={
        "ready": ("sent", "cancelled"),
        "sent": ("running", "ready", "cancelled", "failed"),
        "running": ("finished", "failed", "fatal", "cancelled"),
        "finished": ("done", "discarded", "corrupted"),
        "cancelled": ("ready",),
        "discarded": ("ready",),
        "done": ("merged", "discarded", "corrupted"),
        "failed": ("ready", "fatal"),
        "fatal": (),
        "merged": (),
        # corrupted: "flagged ... in order to be re-processed"
        "corrupted": ("ready",),
    },
)

_JOB_ENDINGS = ("failed", "cancelled", "closed")

JOB = _machine(
    "job",
    initial=("pending", "defined"),
    table={
        "pending": ("defined", *_JOB_ENDINGS),
        "defined": ("waiting", "assigned", "throttled", "activated", *_JOB_ENDINGS),
        # a co-jumbo job whose events jumbo jobs processed ends where it waits (seed 002: "A cron hourly checks
        # co-jumbo jobs in waiting/assigned/activated state and finishes them … Then co-jumbo jobs generate merge jobs
        # similarly as conventional event service jobs"): in merging for its job set's ES merge job
        "waiting": ("assigned", "activated", "merging", *_JOB_ENDINGS),
        "assigned": ("activated", "throttled", "merging", *_JOB_ENDINGS),
        # throttled jobs go back to activated, or are closed after 7 days (seed 000 timeout rules)
        "throttled": ("activated", *_JOB_ENDINGS),
        "activated": ("sent", "starting", "throttled", "merging", *_JOB_ENDINGS),
        "sent": ("starting", "running", *_JOB_ENDINGS),
        "starting": ("running", *_JOB_ENDINGS),
        "running": ("holding", "merging", "transferring", "finished", *_JOB_ENDINGS),
        "holding": ("merging", "transferring", "finished", *_JOB_ENDINGS),
        "merging": ("finished", *_JOB_ENDINGS),
        "transferring": ("finished", *_JOB_ENDINGS),
        "finished": (),
        "failed": (),
        "closed": (),
        "cancelled": (),
    },
)

# Output merging (seed 002, "Output merging"; services/merging.py): "merge jobs will be generated with
# priority=5000", "tried at most three times"; the pre-merged jobs of a merge whose last attempt failed are cancelled
# with panda-server 1.0.4's jobSubStatus for it (JobComplexModule.updateUnmergedJobs)
MERGE_PRIORITY = 5000
# how a preprocess job is told apart (JobSpec's specialHandling, as JEDI tags its special jobs)
PREPROCESS_HANDLING = "preprocess"
MERGE_MAX_ATTEMPTS = 3
MERGE_FAILED_SUBSTATUS = "merge_failed"

# Jumbo, co-jumbo and event service jobs (seed 002, "Jumbo jobs and co-jumbo jobs", "Final status of Event Service
# jobs"; services/jumbo.py, services/event_service.py): Job.eventService as panda-server 1.0.4 numbers them
# (EventServiceUtils: esJobFlagNumber 1, esMergeJobFlagNumber 2, jumboJobFlagNumber 4, coJumboJobFlagNumber 5), the
# queue name of fake co-jumbo jobs (siteIdForWaitingCoJumboJobs) and the CRIC catchall key of queues that take jumbo
# jobs. A fake co-jumbo job older than this many hours is given back for a real one (getCoJumboJobsToBeFinished).
ES_JOB = 1
ES_MERGE_JOB = 2
# A task's useJumbo flag (JediTaskSpec.enum_useJumbo, 1.0.4) and what each says (brokerage/jumbo.py moves it)
USE_JUMBO = {
    "": "never enabled",
    "W": "enabled, no jumbo job made yet",
    "R": "jumbo jobs made, every input given out",
    "P": "jumbo jobs made, inputs left",
    "L": "lacking an active jumbo job: the next job generation makes jumbo jobs only",
    "D": "disabled",
}
JUMBO_JOB = 4
CO_JUMBO_JOB = 5
WAITING_CO_JUMBO = "WAITING_CO_JUMBO"
JUMBO_USE_CATCHALL = "useJumboJobs"
FAKE_CO_JUMBO_HOURS = 6
# the events a job has processed: finished by it (or a jumbo job), done once its job ended, merged
EVENTS_PROCESSED = ("finished", "done", "merged")

# DIRAC job statuses and moves (REFERENCE.md, from DIRAC's JobStatus module).
DIRAC_JOB = _machine(
    "DIRAC job",
    initial=("Submitting", "Received"),
    table={
        "Submitting": ("Received", "Checking", "Deleted", "Killed"),
        "Received": ("Scouting", "Checking", "Waiting", "Failed", "Deleted", "Killed"),
        "Checking": ("Scouting", "Staging", "Waiting", "Rescheduled", "Failed", "Deleted", "Killed"),
        "Staging": ("Checking", "Waiting", "Failed", "Killed"),
        "Scouting": ("Checking", "Failed", "Stalled", "Killed"),
        "Waiting": ("Matched", "Rescheduled", "Deleted", "Killed"),
        "Matched": ("Running", "Failed", "Rescheduled", "Killed"),
        "Running": ("Stalled", "Done", "Failed", "Rescheduled", "Completing", "Killed", "Received"),
        "Stalled": ("Running", "Failed", "Killed"),
        "Completing": ("Done", "Failed", "Completed", "Stalled", "Killed"),
        "Completed": ("Done", "Failed"),
        "Rescheduled": ("Waiting", "Received", "Deleted", "Failed", "Killed"),
        "Failed": ("Rescheduled", "Deleted"),
        "Done": ("Deleted",),
        "Killed": ("Deleted",),
        "Deleted": (),
    },
)

# CMS WMCore (seed 004). Work-queue elements never move backwards (REFERENCE.md, "WMCore"); going back to
# Available is an explicit reset (brokerage.services.wmcore.element_reset), not a transition.
WMCORE_ELEMENT = _machine(
    "work-queue element",
    initial=("Available", "Negotiating", "Acquired"),
    table={
        "Available": ("Negotiating", "Acquired", "Running", "Failed", "CancelRequested", "Canceled"),
        "Negotiating": ("Acquired", "Running", "Failed", "CancelRequested", "Canceled"),
        "Acquired": ("Running", "Done", "Failed", "CancelRequested", "Canceled"),
        "Running": ("Done", "Failed", "CancelRequested"),
        "Done": (),
        "Failed": (),
        "CancelRequested": ("Canceled",),
        "Canceled": (),
    },
)

# ReqMgr2 request statuses (lower case, seed 004: "the collection of WQE status"), in their life-cycle order.
WMCORE_REQUEST = _machine(
    "request",
    initial=("new",),
    table={
        "new": ("assignment-approved", "rejected"),
        "assignment-approved": ("assigned", "rejected"),
        "assigned": ("staging", "acquired", "aborted", "failed"),
        "staging": ("staged", "aborted"),
        "staged": ("acquired", "aborted", "failed"),
        "acquired": ("running-open", "running-closed", "completed", "aborted", "failed"),
        "running-open": ("running-closed", "force-complete", "completed", "aborted", "failed"),
        "running-closed": ("force-complete", "completed", "aborted", "failed"),
        "force-complete": ("completed",),
        "completed": ("closed-out", "rejected"),
        "closed-out": ("announced", "rejected"),
        "announced": ("normal-archived",),
        "normal-archived": (),
        "aborted": ("aborted-completed",),
        "aborted-completed": ("aborted-archived",),
        "aborted-archived": (),
        "failed": ("rejected",),
        "rejected": ("rejected-archived",),
        "rejected-archived": (),
    },
)

# WMBS job states (WMCore's JobStateMachine): created jobs wait in the JobSubmitter cache, executing ones are in
# the pool (pending or running there).
WMBS_JOB = _machine(
    "WMBS job",
    initial=("new", "created"),
    table={
        "new": ("created", "createfailed", "killed"),
        "created": ("executing", "submitfailed", "createfailed", "killed"),
        "executing": ("complete", "jobfailed", "killed"),
        "complete": ("success", "jobfailed"),
        "success": ("cleanout",),
        "jobfailed": ("jobcooloff", "exhausted", "retrydone", "killed"),
        "submitfailed": ("submitcooloff", "exhausted", "retrydone", "killed"),
        "createfailed": ("createcooloff", "exhausted", "retrydone", "killed"),
        "jobcooloff": ("created", "killed"),
        "submitcooloff": ("created", "killed"),
        "createcooloff": ("new", "killed"),
        "retrydone": ("exhausted",),
        "exhausted": ("cleanout",),
        "killed": ("cleanout",),
        "cleanout": (),
    },
)
WMBS_JOB_ACTIVE = ("new", "created", "executing", "complete", "jobcooloff", "submitcooloff", "createcooloff")
# WMBS jobs that ended (retrydone only waits to become exhausted)
WMBS_JOB_ENDED = ("success", "exhausted", "killed", "cleanout")
# DIRAC jobs that ended: what DIRAC's own purge removes
DIRAC_JOB_ENDED = ("Done", "Failed", "Killed", "Deleted")

# Job statuses with a way out: the job is not over (scouting, finishing and the watchdog wait for them).
JOB_ACTIVE = tuple(status for status in JOB.statuses if JOB.allowed_from(status))

MACHINES: dict[str, StateMachine] = {
    machine.entity: machine
    for machine in (
        TASK,
        INPUT_DATASET,
        OUTPUT_DATASET,
        INPUT_FILE,
        OUTPUT_FILE,
        EVENT,
        JOB,
        DIRAC_JOB,
        WMCORE_ELEMENT,
        WMCORE_REQUEST,
        WMBS_JOB,
    )
}

# Dataset and file types (JEDI_Datasets.TYPE). Pseudo inputs carry random seeds and serial numbers (seed 002).
# task statuses whose tasks get new jobs; scouting tasks wait for their scouts (seed 002 task statuses)
TASK_GENERATING = ("ready", "scouted", "running")
INPUT_TYPES = ("input", "pseudo_input")
OUTPUT_TYPES = ("output", "log", "lib", "tmpl_output", "tmpl_log")
DATASET_TYPES = INPUT_TYPES + OUTPUT_TYPES


def dataset_machine(dataset_type: str) -> StateMachine:
    return INPUT_DATASET if dataset_type in INPUT_TYPES else OUTPUT_DATASET


def file_machine(file_type: str) -> StateMachine:
    return INPUT_FILE if file_type in INPUT_TYPES else OUTPUT_FILE


def union_choices(*machines: StateMachine) -> list[tuple[str, str]]:
    """Choices for a column shared by several machines (a dataset's status is input or output), seed order."""
    seen: dict[str, None] = {}
    for machine in machines:
        seen.update(dict.fromkeys(machine.statuses))
    return [(status, status) for status in seen]


def throttled_period_minutes(max_attempt_nr: int) -> int:
    """How long a task stays throttled: 120 × int(max(attemptNr)/5)² minutes (seed 002, task status 'throttled').

    A task is throttled when its largest attemptNr is a multiple of 5, so the period grows 2 h, 8 h, 18 h, …
    """
    if max_attempt_nr < 0:
        raise ValueError(f"attemptNr cannot be negative (got {max_attempt_nr})")
    return 120 * (max_attempt_nr // 5) ** 2
