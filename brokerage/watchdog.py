"""The watchdog's rules, as plain functions: job timeouts (seed 000, "Timeout Rules"), memory increase on retry,
task parameters from scout jobs, and the task-state rules around them (seed 002).

`job_timeout_state(job, queue, limits, now)` says, for one job at one moment, which rule applies, when the job
times out and how long is left; the periodic watchdog, the monitor and the API all call it. A job times out
once `now` reaches its deadline (exactly one hour after a job became pending it has been pending for one hour).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

HIGH_PRIORITY = 800  # seed 000: "job.currentPriority>=800"
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)

# rule → (statuses, the gdpconfig duration key, human sentence); see job_timeout_state for the conditions
RULE_SENTENCES = {
    "pending": "pending for {limit}",
    "waiting": "waiting for {limit}",
    "defined": "defined for {limit}",
    "assigned": "assigned for {limit}",
    "throttled": "throttled for {limit}",
    "activated": "activated or starting for {limit}",
    "activated_high_priority": (
        "priority ≥ 800, activated or starting for {limit} at an inactive, test or offline queue"
    ),
    "sent": "sent for {limit}",
    "running": "running for {limit}",
    "heartbeat": "no heartbeat for {limit}",
    "transferring_heartbeat": "transferring with its own stage-out and no heartbeat for {limit}",
    "transferring": "transferring for {limit}",
    "holding": "holding for {limit}",
    "holding_high_priority": "priority ≥ 800, holding for {limit}",
    "analysis_rebrokerage": "analysis job not started within {limit}: reattempted elsewhere",
}
# Statuses the watchdog closes (they never ran) and those it fails (they ran or were running).
CLOSE_ON_TIMEOUT = ("pending", "waiting", "defined", "assigned", "throttled", "activated", "starting", "sent")
FAIL_ON_TIMEOUT = ("running", "holding", "transferring")
WATCHED_STATUSES = CLOSE_ON_TIMEOUT + FAIL_ON_TIMEOUT


@dataclass(frozen=True)
class TimeoutJob:
    """What the rules read of a job."""

    jobStatus: str
    currentPriority: int
    stateChangeTime: datetime
    modificationTime: datetime  # the last heartbeat
    jobSubStatus: str = ""
    analysis: bool = False
    # a co-jumbo job (eventService 5): waiting, it waits for jumbo jobs, not for its input, and the hourly co-jumbo
    # check decides its end (services.jumbo; copyArchive.py 1.0.4 leaves co-jumbo jobs out of its kill of waiting
    # jobs)
    co_jumbo: bool = False


@dataclass(frozen=True)
class TimeoutQueue:
    """What the rules read of the job's queue; `lastStart` is when a job last started there (SiteData)."""

    status: str = "online"
    catchall: str = ""
    workflow: str = ""
    lastStart: datetime | None = None
    transtimehi: float | None = None  # days
    transtimelo: float | None = None  # days

    @property
    def reassign_disabled(self) -> bool:
        return "disableReassign" in {item.split("=")[0].strip() for item in self.catchall.split(",")}


@dataclass(frozen=True)
class TimeoutLimits:
    """The durations, from gdpconfig (hours unless said). `heartbeat_for(workflow)` resolves
    HEARTBEAT_TIMEOUT_<workflow>; `workflow_has_own_heartbeat(workflow)` tells whether that key exists."""

    pending: float = 1
    waiting: float = 0.5
    defined: float = 4
    assigned: float = 12
    throttled: float = 168
    activated: float = 48
    activated_high_priority: float = 4
    inactive_queue: float = 2
    sent: float = 0.5
    running: float = 504
    heartbeat: float = 2
    holding: float = 72
    holding_high_priority: float = 3
    transferring_days: float = 3
    transferring_high_priority_days: float = 2
    analysis_not_started: float = 12
    workflow_heartbeats: Mapping[str, float] = field(default_factory=dict)
    # grid minutes per real minute (brokerage.grid_clock): 1 in production; in the demo the deadlines come as fast
    # as the simulated grid moves, so jobs do time out there (issue 35). The rules' figures stay the grid's.
    grid_speed: float = 1.0

    @classmethod
    def from_config(
        cls, get: Callable[..., Any], workflows: Sequence[str] = (), grid_speed: float = 1.0
    ) -> TimeoutLimits:
        """From a gdpconfig view's `get` (ConfigView.get); the workflows listed get their own heartbeat when
        HEARTBEAT_TIMEOUT_<workflow> is stored."""
        own = {}
        for workflow in workflows:
            if workflow:
                value = get("HEARTBEAT_TIMEOUT", workflow=workflow)
                if value != get("HEARTBEAT_TIMEOUT"):
                    own[workflow] = value
        return cls(
            pending=get("TIMEOUT_PENDING"),
            waiting=get("TIMEOUT_WAITING"),
            defined=get("TIMEOUT_DEFINED"),
            assigned=get("TIMEOUT_ASSIGNED"),
            throttled=get("TIMEOUT_THROTTLED"),
            activated=get("TIMEOUT_ACTIVATED"),
            activated_high_priority=get("TIMEOUT_ACTIVATED_HIGH_PRIORITY"),
            inactive_queue=get("INACTIVE_QUEUE_HOURS"),
            sent=get("TIMEOUT_SENT"),
            running=get("TIMEOUT_RUNNING"),
            heartbeat=get("HEARTBEAT_TIMEOUT"),
            holding=get("TIMEOUT_HOLDING"),
            holding_high_priority=get("TIMEOUT_HOLDING_HIGH_PRIORITY"),
            transferring_days=get("TIMEOUT_TRANSFERRING"),
            transferring_high_priority_days=get("TIMEOUT_TRANSFERRING_HIGH_PRIORITY"),
            analysis_not_started=get("ANALY_TIMEOUT"),
            workflow_heartbeats=own,
            grid_speed=grid_speed,
        )

    def heartbeat_for(self, workflow: str) -> float:
        return self.workflow_heartbeats.get(workflow, self.heartbeat)


@dataclass(frozen=True)
class TimeoutState:
    """Which rule watches the job, when it times out and how long is left; `rule` None when no rule applies
    (a final status, or every rule disabled at the queue)."""

    rule: str | None
    deadline: datetime | None
    left: timedelta | None
    timed_out: bool
    sentence: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def left_seconds(self) -> float | None:
        return None if self.left is None else self.left.total_seconds()


def _limit_text(duration: timedelta) -> str:
    hours = duration.total_seconds() / 3600
    if hours >= 48 and hours % 24 == 0:
        return f"{hours / 24:g} days"
    if hours < 1:
        return f"{hours * 60:g} min"
    return f"{hours:g} h"


def _candidates(job: TimeoutJob, queue: TimeoutQueue, limits: TimeoutLimits, now: datetime):
    """(rule, clock start, duration) of every rule that watches the job."""
    status, high = job.jobStatus, job.currentPriority >= HIGH_PRIORITY
    changed, heartbeat = job.stateChangeTime, job.modificationTime
    simple = {
        "pending": limits.pending,
        "waiting": limits.waiting,
        "defined": limits.defined,
        "assigned": limits.assigned,
        "throttled": limits.throttled,
        "sent": limits.sent,
    }
    if status in simple:
        yield status, changed, simple[status] * HOUR
    elif status in ("activated", "starting"):
        inactive = queue.lastStart is None or now - queue.lastStart > limits.inactive_queue * HOUR / limits.grid_speed
        if high and (inactive or queue.status in ("test", "offline")):
            yield "activated_high_priority", changed, limits.activated_high_priority * HOUR
        else:
            yield "activated", changed, limits.activated * HOUR
        if job.analysis and status == "activated":
            # seed 002 job rebrokerage: analysis jobs that do not start within ANALY_TIMEOUT are reattempted
            yield "analysis_rebrokerage", changed, limits.analysis_not_started * HOUR
        if status == "starting":
            yield "heartbeat", heartbeat, limits.heartbeat_for(queue.workflow) * HOUR
    elif status == "running":
        yield "running", changed, limits.running * HOUR
        yield "heartbeat", heartbeat, limits.heartbeat_for(queue.workflow) * HOUR
    elif status == "transferring":
        if job.jobSubStatus and queue.workflow in limits.workflow_heartbeats:
            yield "transferring_heartbeat", heartbeat, limits.workflow_heartbeats[queue.workflow] * HOUR
        else:
            days = queue.transtimehi if high else queue.transtimelo
            if days is None:
                days = limits.transferring_high_priority_days if high else limits.transferring_days
            yield "transferring", changed, days * DAY
    elif status == "holding":
        if high:
            yield "holding_high_priority", changed, limits.holding_high_priority * HOUR
        else:
            yield "holding", changed, limits.holding * HOUR


def job_timeout_state(job: TimeoutJob, queue: TimeoutQueue, limits: TimeoutLimits, now: datetime) -> TimeoutState:
    """The timeout state of `job` at `now` (module docstring); the earliest deadline wins when several rules
    watch a job (running: 21 days in the status or 2 hours without heartbeat)."""
    if job.jobStatus not in WATCHED_STATUSES:
        return TimeoutState(None, None, None, False, f"no timeout in status {job.jobStatus}")
    if job.jobStatus == "waiting" and job.co_jumbo:
        return TimeoutState(
            None, None, None, False, "no timeout for a co-jumbo job waiting: the hourly co-jumbo check ends it"
        )
    if queue.status == "paused" or queue.reassign_disabled:
        why = "the queue is paused" if queue.status == "paused" else "the queue has disableReassign in catchall"
        return TimeoutState(None, None, None, False, f"timeouts disabled: {why}", {"queue_status": queue.status})
    best = None
    for rule, since, duration in _candidates(job, queue, limits, now):
        deadline = since + duration / limits.grid_speed
        if best is None or deadline < best[1]:
            best = (rule, deadline, since, duration)
    rule, deadline, since, duration = best
    left = deadline - now
    return TimeoutState(
        rule=rule,
        deadline=deadline,
        left=left,
        timed_out=left <= timedelta(0),
        sentence=RULE_SENTENCES[rule].format(limit=_limit_text(duration))
        + (f" (grid time: the demo's grid runs {limits.grid_speed:g}× faster)" if limits.grid_speed != 1 else ""),
        detail={"since": since.isoformat(), "limit_seconds": duration.total_seconds()},
    )


# --- memory increase on retry (seed 002, "Memory increase in job retry") -----------------------------------------

RAM_STEPS = (1000, 2000, 3000, 4000, 6000, 8000)
OUT_OF_MEMORY_FRACTION = 0.3


def next_ram_count(*, max_pss_mb: float | None, ram_count: float | None) -> int:
    """The next value of 1000, 2000, 3000, 4000, 6000, 8000 above max(maxPSS, ramCount); past 8000, 8000."""
    floor = max(max_pss_mb or 0, ram_count or 0)
    return next((step for step in RAM_STEPS if step > floor), RAM_STEPS[-1])


def task_needs_more_memory(*, failed_for_memory: int, jobs: int) -> bool:
    """seed 002: "When 30% of the jobs in a task have failed because of insufficient memory" (30 % or more)."""
    return jobs > 0 and failed_for_memory / jobs >= OUT_OF_MEMORY_FRACTION


# --- task parameters from scout jobs (seed 002, "Memory probe", "IO intensity", "HS06sPerEvent") -------------------

SCOUTS_FOR_PARAMETERS = 5
CPU_SAFETY_FACTOR = 1.5
DEFAULT_CPU_EFFICIENCY = 90
DEFAULT_BASE_WALLTIME = 600


@dataclass(frozen=True)
class ScoutJob:
    """A finished scout as the pilot reported it (PSS in kB, sizes in bytes, times in seconds)."""

    maxPSS_kB: float
    coreCount: int
    startTime: datetime
    endTime: datetime
    nEvents: int
    inputBytes: float
    outputBytes: float
    corePower: float
    diskReadBytes: float = 0.0
    diskWriteBytes: float = 0.0

    @property
    def walltime(self) -> float:
        return max((self.endTime - self.startTime).total_seconds(), 1.0)


def _percentile_95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(0.95 * len(ordered)) - 1, 0)]


def scout_task_parameters(
    scouts: Sequence[ScoutJob],
    *,
    ram_unit: str,
    base_ram_count: float | None,
    cpu_efficiency: float | None,
    base_walltime: float | None,
) -> dict[str, Any]:
    """The task parameters the first finished scouts set (seed 002). Needs SCOUTS_FOR_PARAMETERS scouts:

    - ramCount: MBPerCore → (max(maxPSS) − baseRamCount) / coreCount, else max(maxPSS), in MB;
    - ioIntensity: max over scouts of (input + output) / walltime / cores, in kB/s per core;
    - diskIO: max of (read + written bytes on local disk) / walltime / cores, kB/s per core;
    - cpuTime (HS06 s per event): from the scout at the 95th percentile of walltime × corePower,
      max(0, wall − baseWalltime) × corePower × cores × cpuEfficiency / nEvents × 1.5;
    - outDiskCount: max output per MB of input, in kB/MB;
    - walltime: max walltime per MB of input, in s/MB.
    """
    if len(scouts) < SCOUTS_FOR_PARAMETERS:
        raise ValueError(f"{SCOUTS_FOR_PARAMETERS} finished scouts are needed, {len(scouts)} given")
    scouts = list(scouts)[:SCOUTS_FOR_PARAMETERS]
    max_pss_mb = max(s.maxPSS_kB for s in scouts) / 1024
    per_core = ram_unit.endswith("PerCore")
    cores = max(s.coreCount for s in scouts) or 1
    ram = (max_pss_mb - (base_ram_count or 0)) / cores if per_core else max_pss_mb
    efficiency = (cpu_efficiency if cpu_efficiency is not None else DEFAULT_CPU_EFFICIENCY) / 100
    base = base_walltime if base_walltime is not None else DEFAULT_BASE_WALLTIME
    reference = _percentile_95([s.walltime * s.corePower for s in scouts])
    slowest = next(s for s in scouts if s.walltime * s.corePower == reference)
    cpu_time = (
        max(0.0, slowest.walltime - base) * slowest.corePower * slowest.coreCount * efficiency / max(slowest.nEvents, 1)
    ) * CPU_SAFETY_FACTOR
    with_input = [s for s in scouts if s.inputBytes > 0]
    return {
        "ramCount": max(math.ceil(ram), 0) if max_pss_mb > 0 else None,  # no memory reported: keep the task's
        "ioIntensity": _ceil_max((s.inputBytes + s.outputBytes) / 1024 / s.walltime / s.coreCount for s in scouts),
        "diskIO": _ceil_max((s.diskReadBytes + s.diskWriteBytes) / 1024 / s.walltime / s.coreCount for s in scouts),
        "cpuTime": math.ceil(cpu_time),
        "outDiskCount": _ceil_max(s.outputBytes / 1024 / (s.inputBytes / 1024**2) for s in with_input),
        "walltime": _ceil_max(s.walltime / (s.inputBytes / 1024**2) for s in with_input),
        "cpuTimeUnit": "HS06sPerEvent",
        "ramUnit": ram_unit or "MB",
    }


def _ceil_max(values) -> int | None:
    values = list(values)
    return math.ceil(max(values)) if values else None


# --- task states (seed 002) ----------------------------------------------------------------------------------------

SHORT_SCOUT_SECONDS = 4 * 60
SHORT_SCOUTS_LIMIT = 5
EXPECTED_JOBS_LIMIT = 1000
SCOUT_CPU_FACTOR = 2
EXHAUSTED_TIMEOUT = timedelta(days=10)


def exhausted_reason(
    *,
    analysis: bool,
    scout_cpu_time: float | None = None,
    defined_cpu_time: float | None = None,
    short_scouts: int = 0,
    expected_jobs: int = 0,
    pending_timed_out: bool = False,
    attempts_used_up: bool = False,
    exhausted_configured: bool = False,
) -> str | None:
    """Why a task goes to exhausted (seed 002, task status "exhausted"), or None:

    - production: the scouts' cpuTime is more than twice the task definition's;
    - production: every reattempt done, some inputs unsuccessful, and the task is configured to wait;
    - analysis: more than 5 scouts ran less than 4 minutes and more than 1000 jobs are expected;
    - both: timed out while pending in the brokerage.
    """
    if pending_timed_out:
        return "timed out while pending in the brokerage"
    if analysis:
        if short_scouts > SHORT_SCOUTS_LIMIT and expected_jobs > EXPECTED_JOBS_LIMIT:
            return (
                f"{short_scouts} scout jobs ran less than 4 minutes and {expected_jobs} jobs are expected: "
                "change nFilesPerJob or similar for longer jobs"
            )
        return None
    if scout_cpu_time is not None and defined_cpu_time and scout_cpu_time > SCOUT_CPU_FACTOR * defined_cpu_time:
        return f"scouts' cpuTime {scout_cpu_time:g} > 2 × the defined {defined_cpu_time:g}"
    if attempts_used_up and exhausted_configured:
        return "all reattempts done, some inputs unsuccessful"
    return None


def throttled_attempt(max_attempt_nr: int) -> bool:
    """seed 002 throttled: the largest attemptNr in the task is a (non-zero) multiple of 5. The watchdog applies it
    by level (services.task_commands.task_watch: attemptNr // 5 above the task's numThrottled), which is this rule
    whenever it sees every attempt and does not miss a multiple passed between two of its runs."""
    return max_attempt_nr > 0 and max_attempt_nr % 5 == 0
