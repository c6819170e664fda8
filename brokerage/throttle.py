"""The job throttler of seed 002 ("Job throttling"): before generating jobs for a work queue and resource type,
decide whether enough jobs already wait (SKIP) or more are needed (PASS), and with PASS how many may be made.

Seed 002 gives the rules in a garbled line each; our reading, the one JEDI's JobThrottlerBase implements
(docs/decisions.md, "Job throttler"):

* SKIP when the queue holds enough: no job running and more queued than the queue limit (pilots are not
  running or DDM has a problem); queued > threshold × running *and* more queued than the queue limit; more
  defined than the queue limit (brokerage is stuck); more waiting than max(4 × running, 2 × the bunch); more
  running than NRUNNINGCAP; more queued than NQUEUECAP. "Queued" is assigned + activated + starting + defined.
  Except for the running cap, a SKIP turns into a PASS restricted to the highest waiting priority when a task
  of higher priority than any queued job waits (production only), so urgent work is never held back.
* PASS computes the maximum number of jobs ("Normal case: (500 < remaining jobs to the 2nRunning < 600) / 2"):
  the bunch is threshold × running − queued clipped to [500, 600], and half of it may be generated (two
  generators work in parallel). With NQUEUECAP set: cap / 5. With a queue limit and fewer than 0.9 × the limit
  queued (or fewer queued than running): max(limit / 20, the normal case) — "not enough jobs queued".

Plain Python: the service counts the jobs, this module decides, and the decision is stored with its numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# JobThrottlerBase's constants; seed 002 quotes 500, 600 and the halving.
BUNCH_MIN = 500
BUNCH_MAX = 600
BUNCHES = 4
PARALLEL_GENERATORS = 2
PARALLEL_GENERATORS_WITH_CAP = 5
WAITING_PER_RUNNING = 4
WAITING_BUNCHES = 2
# Below this total walltime (seconds) of the queued jobs the "enough queued" rules do not apply.
MIN_TOTAL_WALLTIME = 50 * 1000 * 1000
DEFAULT_THRESHOLD = 2.0
# Work queues throttled as a whole, not per resource type: event service tasks make SCORE and MCORE jobs.
WHOLE_QUEUE_WORK_QUEUES = ("eventservice",)

QUEUED_STATUSES = ("assigned", "activated", "starting")


def resource_type_for(*, core_count: int | None, ram_per_core_mb: float | None) -> str:
    """JEDI's resource types: SCORE or MCORE by cores, _HIMEM above 2 GB per core."""
    cores = core_count or 1
    kind = "MCORE" if cores > 1 else "SCORE"
    if ram_per_core_mb is not None and ram_per_core_mb > 2000:
        kind += "_HIMEM"
    return kind


@dataclass(frozen=True)
class JobCounts:
    """Jobs of one work queue (or of one of its resource types) by the states the throttler compares."""

    running: int = 0
    queued: int = 0  # assigned + activated + starting ("not run")
    defined: int = 0
    waiting: int = 0

    @classmethod
    def from_statuses(cls, counts: dict[str, int]) -> JobCounts:
        return cls(
            running=counts.get("running", 0),
            queued=sum(counts.get(status, 0) for status in QUEUED_STATUSES),
            defined=counts.get("defined", 0),
            waiting=counts.get("waiting", 0),
        )


@dataclass(frozen=True)
class ThrottleLimits:
    """The work queue's gdpconfig limits (NQUEUELIMIT_<queue>, NQUEUECAP_<queue>, NRUNNINGCAP_<queue>)."""

    threshold: float = DEFAULT_THRESHOLD
    queue_limit: int | None = None
    queue_cap: int | None = None
    running_cap: int | None = None


@dataclass(frozen=True)
class ThrottleVerdict:
    """SKIP or PASS; with PASS the most jobs to generate now and the lowest task priority allowed (None: any)."""

    action: str
    rule: str
    max_jobs: int | None
    min_priority: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.action == "PASS"

    @property
    def message(self) -> str:
        numbers = ", ".join(f"{key}={value}" for key, value in self.detail.items())
        return f"{self.action} {self.rule}" + (f" ({numbers})" if numbers else "")


def job_throttle(
    *,
    work_queue: str,
    throttled: bool,
    resource: JobCounts,
    whole_queue: JobCounts,
    limits: ThrottleLimits,
    highest_waiting_priority: int | None = None,
    highest_queued_priority: int | None = None,
    queued_at_highest_priority: int = 0,
    total_walltime: float | None = None,
    analysis: bool = False,
) -> ThrottleVerdict:
    """The throttler's verdict for one work queue and resource type (module docstring for the rules)."""
    if not throttled:
        return ThrottleVerdict("PASS", "unthrottled", None, detail={"work_queue": work_queue})
    per_queue = work_queue in WHOLE_QUEUE_WORK_QUEUES
    counts = whole_queue if per_queue else resource
    threshold = limits.threshold
    remaining_slots = int(counts.running * threshold - counts.queued)
    bunch = min(max(BUNCH_MIN, remaining_slots), BUNCH_MAX)
    queue_limit = limits.queue_limit if limits.queue_limit is not None else bunch * BUNCHES
    if limits.queue_cap is None:
        max_jobs = bunch // PARALLEL_GENERATORS
    else:
        max_jobs = limits.queue_cap // PARALLEL_GENERATORS_WITH_CAP
    queued_total = counts.queued + counts.defined
    enough_walltime = total_walltime is None or total_walltime > MIN_TOTAL_WALLTIME or per_queue
    # production only: a waiting task of higher priority than anything queued is let through
    high_priority_waiting = (
        not analysis
        and highest_waiting_priority is not None
        and (
            highest_queued_priority is None
            or highest_waiting_priority > highest_queued_priority
            or (highest_waiting_priority == highest_queued_priority and queued_at_highest_priority < BUNCH_MIN)
        )
    )
    base = {"running": counts.running, "queued": queued_total, "queue_limit": queue_limit}
    skip: tuple[str, dict] | None = None
    if counts.running == 0 and queued_total > queue_limit and enough_walltime:
        skip = ("no_running_enough_queued", base)
    elif (
        counts.running and queued_total / counts.running > threshold and queued_total > queue_limit and enough_walltime
    ):
        skip = ("queued_over_threshold", {**base, "threshold": threshold})
    elif counts.defined > queue_limit:
        skip = ("too_many_defined", {"defined": counts.defined, "queue_limit": queue_limit})
    elif resource.waiting > max(resource.running * WAITING_PER_RUNNING, bunch * WAITING_BUNCHES):
        skip = (
            "too_many_waiting",
            {"waiting": resource.waiting, "running": resource.running, "bunch": bunch},
        )
    elif limits.running_cap and counts.running > limits.running_cap:
        # the running cap holds even for urgent work
        return ThrottleVerdict(
            "SKIP", "running_cap", 0, detail={"running": counts.running, "running_cap": limits.running_cap}
        )
    elif limits.queue_cap and queued_total > limits.queue_cap:
        skip = ("queue_cap", {"queued": queued_total, "queue_cap": limits.queue_cap})
    if skip is not None:
        rule, detail = skip
        if not high_priority_waiting:
            return ThrottleVerdict("SKIP", rule, 0, detail=detail)
        return ThrottleVerdict(
            "PASS",
            f"{rule}_but_higher_priority_waiting",
            max_jobs,
            min_priority=highest_waiting_priority,
            detail={**detail, "highest_waiting_priority": highest_waiting_priority},
        )
    if queued_total < queue_limit * 0.9 or queued_total < counts.running:
        return ThrottleVerdict(
            "PASS",
            "not_enough_queued",
            int(max(max_jobs, queue_limit / 20)),
            detail={**base, "bunch": bunch},
        )
    return ThrottleVerdict("PASS", "normal", max_jobs, detail={**base, "bunch": bunch})
