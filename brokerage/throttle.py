"""The job throttler of seed 002 ("Job throttling"): before generating jobs for a work queue and resource type,
decide whether enough jobs already wait (SKIP) or more are needed (PASS), and with PASS how many may be made.

Seed 002 gives the rules in a garbled line each; where it is silent panda-server 1.0.4's JobThrottlerBase
(pandajedi/jedithrottle/JobThrottlerBase.py) decides, and tools/peer/throttle_compare.py checks this module against
it, run side by side (docs/decisions.md, "Job throttler"):

* Three levels. Each limit (NQUEUELIMIT, NQUEUECAP, NRUNNINGCAP) is looked up for the work queue and resource type
  (`NQUEUELIMIT_MC_16_SCORE_HIMEM`), then for its MCORE or SCORE family (`NQUEUELIMIT_MC_16_SCORE*`), then for the
  work queue (`NQUEUELIMIT_MC_16`); a limit found at one level is compared with the jobs counted at that level
  (LimitLevel). A value of 0 is no limit, as there (`if value:`).
* SKIP when the queue holds enough: no job running and more queued than the queue limit (pilots are not
  running or DDM has a problem); queued > threshold × running *and* more queued than the queue limit; more
  defined than the queue limit (brokerage is stuck); more waiting than max(4 × running, 2 × the bunch); more
  running than NRUNNINGCAP; more queued than NQUEUECAP. "Queued" is assigned + activated + starting + defined;
  the ratio is of the resource type's own jobs, "more than the limit" counts at the limit's level. Except for
  the running cap, a SKIP turns into a PASS restricted to the highest waiting priority when a task of higher
  priority than any queued job waits (production only), so urgent work is never held back. A SKIP holds back
  new jobs, not merge jobs (JobThrottlerBase's level 5, "merge unthrottled").
* PASS computes the maximum number of jobs ("Normal case: (500 < remaining jobs to the 2nRunning < 600) / 2"):
  the bunch is threshold × running − queued clipped to [500, 600], and half of it may be generated (two
  generators work in parallel). With NQUEUECAP set: cap / 5. With fewer than 0.9 × the queue limit queued (or
  fewer queued than running): max(limit / 20, the normal case) — "not enough jobs queued". The work queues
  "Heavy Ion" and "Reprocessing default" take a bunch up to what the queue limit leaves (prestaging).

Plain Python: the service counts the jobs, this module decides, and the decision is stored with its numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from brokerage.engine.core.plugin import Variants
from brokerage.engine.panda.task_states import DATA_MOTION_MARK

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
# Work queues whose bunch grows to what the queue limit leaves (JobThrottlerBase: "use nPrestage for reprocessing")
PRESTAGING_WORK_QUEUES = ("Heavy Ion", "Reprocessing default")


class LimitLevel:
    """Where a limit was found, and so which jobs it is compared with (JobThrottlerBase's LEVEL_RT, _MS, _GS)."""

    RESOURCE_TYPE = "resource type"  # NQUEUELIMIT_<work queue>_<resource type>, or no limit at all
    FAMILY = "MCORE/SCORE"  # NQUEUELIMIT_<work queue>_<MCORE|SCORE>*
    WORK_QUEUE = "work queue"  # NQUEUELIMIT_<work queue>


def throttle_threshold(*, config) -> float:
    """THROTTLE_THRESHOLD, or while WORK_SHORTAGE is on THROTTLE_THRESHOLD_FOR_WORK_SHORTAGE; either unset is 2.0
    (JobThrottlerBase.toBeThrottledBase, 1.0.4: the seeds do not name the work-shortage threshold)."""
    key = "THROTTLE_THRESHOLD_FOR_WORK_SHORTAGE" if config.get("WORK_SHORTAGE") else "THROTTLE_THRESHOLD"
    value = config.get(key)
    return DEFAULT_THRESHOLD if value is None else value


def resource_family(resource_type: str) -> str:
    """MCORE for MCORE and MCORE_HIMEM, SCORE for the rest (JobThrottlerBase.__prepareJobStats)."""
    return "MCORE" if resource_type.startswith("MCORE") else "SCORE"


def limit_keys(tag: str, work_queue: str, resource_type: str) -> tuple[tuple[str, str], ...]:
    """The keys a limit is looked up by, most specific first, each with its level. The family key names MCORE or
    SCORE only for resource types of those names, as JobThrottlerBase.__getConfiguration does."""
    family = "MCORE" if resource_type.startswith("MCORE") else "SCORE" if resource_type.startswith("SCORE") else None
    return (
        (f"{tag}_{work_queue}_{resource_type}", LimitLevel.RESOURCE_TYPE),
        (f"{tag}_{work_queue}_{family}*", LimitLevel.FAMILY),
        (f"{tag}_{work_queue}", LimitLevel.WORK_QUEUE),
    )


HIMEM_MB_PER_CORE = 2000  # a resource type is _HIMEM above this memory a core


def resource_type_for(*, core_count: int | None, ram_per_core_mb: float | None) -> str:
    """JEDI's resource types: SCORE or MCORE by cores, _HIMEM above 2 GB per core."""
    cores = core_count or 1
    kind = "MCORE" if cores > 1 else "SCORE"
    if ram_per_core_mb is not None and ram_per_core_mb > HIMEM_MB_PER_CORE:
        kind += "_HIMEM"
    return kind


def task_resource_type(*, core_count: int | None, ram_count: float | None, ram_unit: str | None) -> str:
    """A task's resource type from its cores and memory (ramCount per core when its unit says PerCore, per job
    otherwise)."""
    per_core = (
        ram_count if (ram_unit or "").endswith("PerCore") or ram_count is None else ram_count / max(core_count or 1, 1)
    )
    return resource_type_for(core_count=core_count, ram_per_core_mb=per_core)


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

    def __add__(self, other: JobCounts) -> JobCounts:
        return JobCounts(
            self.running + other.running,
            self.queued + other.queued,
            self.defined + other.defined,
            self.waiting + other.waiting,
        )


@dataclass(frozen=True)
class ThrottleLimits:
    """The work queue's gdpconfig limits (NQUEUELIMIT, NQUEUECAP, NRUNNINGCAP: limit_keys), each with the level it
    was found at and the key that set it (None: the limit is unset)."""

    threshold: float = DEFAULT_THRESHOLD
    queue_limit: int | None = None
    queue_cap: int | None = None
    running_cap: int | None = None
    queue_limit_level: str = LimitLevel.RESOURCE_TYPE
    queue_cap_level: str = LimitLevel.RESOURCE_TYPE
    running_cap_level: str = LimitLevel.RESOURCE_TYPE
    keys: dict[str, str] = field(default_factory=dict)


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
    family: JobCounts | None = None,
    highest_waiting_priority: int | None = None,
    highest_queued_priority: int | None = None,
    queued_at_highest_priority: int = 0,
    total_walltime: float | None = None,
    analysis: bool = False,
) -> ThrottleVerdict:
    """The throttler's verdict for one work queue and resource type (module docstring for the rules). `resource`,
    `family` (its MCORE or SCORE family; the resource type's own jobs when not given) and `whole_queue` are the
    jobs at the three levels. No waiting task or no queued job is a priority of 0, as the real queries answer."""
    if not throttled:
        return ThrottleVerdict("PASS", "unthrottled", None, detail={"work_queue": work_queue})
    family = resource if family is None else family
    at_level = {LimitLevel.RESOURCE_TYPE: resource, LimitLevel.FAMILY: family, LimitLevel.WORK_QUEUE: whole_queue}
    per_queue = work_queue in WHOLE_QUEUE_WORK_QUEUES
    counts = whole_queue if per_queue else resource
    threshold = limits.threshold
    remaining_slots = int(counts.running * threshold - counts.queued)
    bunch = min(max(BUNCH_MIN, remaining_slots), BUNCH_MAX)
    queue_limit = limits.queue_limit if limits.queue_limit else bunch * BUNCHES
    limit_counts = at_level[limits.queue_limit_level if limits.queue_limit else LimitLevel.RESOURCE_TYPE]
    limited = limit_counts.queued + limit_counts.defined  # queued jobs, counted at the queue limit's level
    if work_queue in PRESTAGING_WORK_QUEUES and queue_limit > limited and queue_limit - limited > bunch:
        bunch = min(queue_limit - limited, BUNCH_MAX)
    if not limits.queue_cap:
        max_jobs = bunch // PARALLEL_GENERATORS
    else:
        max_jobs = limits.queue_cap // PARALLEL_GENERATORS_WITH_CAP
    queued_total = counts.queued + counts.defined
    enough_walltime = total_walltime is None or total_walltime > MIN_TOTAL_WALLTIME or per_queue
    # production only: a waiting task of higher priority than anything queued is let through
    waiting_top = highest_waiting_priority or 0
    queued_top, at_top = (highest_queued_priority, queued_at_highest_priority) if highest_queued_priority else (0, 0)
    high_priority_waiting = not analysis and (
        waiting_top > queued_top or (waiting_top == queued_top and at_top < BUNCH_MIN)
    )
    base = {"running": counts.running, "queued": queued_total, "queue_limit": queue_limit}
    if limited != queued_total:
        base["queued_at_limit_level"] = limited
    skip: tuple[str, dict] | None = None
    if counts.running == 0 and limited > queue_limit and enough_walltime:
        skip = ("no_running_enough_queued", base)
    elif counts.running and queued_total / counts.running > threshold and limited > queue_limit and enough_walltime:
        skip = ("queued_over_threshold", {**base, "threshold": threshold})
    elif limit_counts.defined > queue_limit:
        skip = ("too_many_defined", {"defined": limit_counts.defined, "queue_limit": queue_limit})
    elif resource.waiting > max(resource.running * WAITING_PER_RUNNING, bunch * WAITING_BUNCHES):
        skip = (
            "too_many_waiting",
            {"waiting": resource.waiting, "running": resource.running, "bunch": bunch},
        )
    elif limits.running_cap and at_level[limits.running_cap_level].running > limits.running_cap:
        # the running cap holds even for urgent work
        running = at_level[limits.running_cap_level].running
        return ThrottleVerdict("SKIP", "running_cap", 0, detail={"running": running, "running_cap": limits.running_cap})
    elif limits.queue_cap and (queued := _queued(at_level[limits.queue_cap_level])) > limits.queue_cap:
        skip = ("queue_cap", {"queued": queued, "queue_cap": limits.queue_cap})
    if skip is not None:
        rule, detail = skip
        if not high_priority_waiting:
            return ThrottleVerdict("SKIP", rule, 0, detail=detail)
        return ThrottleVerdict(
            "PASS",
            f"{rule}_but_higher_priority_waiting",
            max_jobs,
            min_priority=waiting_top,
            detail={**detail, "highest_waiting_priority": waiting_top},
        )
    if limited < queue_limit * 0.9 or queued_total < counts.running:
        return ThrottleVerdict(
            "PASS",
            "not_enough_queued",
            # a fraction is one more job: the real generator takes jobs off the float until it is ≤ 0
            math.ceil(max(max_jobs, queue_limit / 20)),
            detail={**base, "bunch": bunch},
        )
    return ThrottleVerdict("PASS", "normal", max_jobs, detail={**base, "bunch": bunch})


def _queued(counts: JobCounts) -> int:
    return counts.queued + counts.defined


# --- A user's activated jobs throttled while the user runs too much (seed 002, "Throttled jobs and tasks") ---

# panda-server 1.0.4 (AtlasAnalWatchDog.doForPriorityMassage): an unset cap is 10,000, and only jobs longer than six
# hours are throttled (DBProxy.throttleUserJobs: maxCpuCount > 6 × 60 × 60)
USER_CAP_UNSET_PANDA = 10_000
USER_CAP_LONGER_THAN_SECONDS = 6 * 60 * 60
USER_CAP_RELEASE_FRACTION_PANDA = 0.9


@dataclass(frozen=True)
class UserCapVerdict:
    """What to do with one user's (or one user's in one working group) analysis jobs: "throttle" the activated
    ones, "release" the throttled ones, or "keep" things as they are; with the numbers that decided it."""

    action: str
    measure: str = ""  # "jobs" or "cores"
    running: int = 0
    compared: str = ""  # how `running` stood to `cap`: ">", "≥" or "<"
    cap: float | None = None
    key: str = ""
    longer_than_seconds: int | None = None  # throttle only the jobs whose walltime limit is longer than this

    @property
    def sentence(self) -> str:
        """'running jobs 1,200 > CAP_RUNNING_USER_JOBS 1,000'; empty for "keep"."""
        if self.action == "keep":
            return ""
        cap = "unset" if self.cap is None else f"{self.cap:,g}"
        return f"running {self.measure} {self.running:,} {self.compared} {self.key} {cap}"


def user_cap_verdict_seed(*, running: dict[str, int], caps: dict[str, int | None], group: bool, throttled: bool):
    """seed 002: "If a user has more running jobs than CAP_RUNNING_USER_JOBS, activated jobs go to throttled …
    They are automatically changed to activated": over a set cap (jobs or cores; a working group's caps for a
    group's jobs) throttles, none over releases. An unset cap is no cap."""
    prefix = "CAP_RUNNING_GROUP" if group else "CAP_RUNNING_USER"
    for measure in ("JOBS", "CORES"):
        cap = caps.get(measure)
        if cap is not None and running[measure] > cap:
            return UserCapVerdict("throttle", measure.lower(), running[measure], ">", cap, f"{prefix}_{measure}")
    if throttled:
        cap = caps.get("JOBS")
        return UserCapVerdict("release", "jobs", running["JOBS"], "≤", cap, f"{prefix}_JOBS")
    return UserCapVerdict("keep")


def user_cap_verdict_panda(*, running: dict[str, int], caps: dict[str, int | None], group: bool, throttled: bool):
    """panda-server 1.0.4 (AtlasAnalWatchDog.doForPriorityMassage): an unset cap is 10,000; at or over a cap
    throttles; a throttled user is released once both measures are under 90 % of their caps."""
    prefix = "CAP_RUNNING_GROUP" if group else "CAP_RUNNING_USER"
    effective = {m: USER_CAP_UNSET_PANDA if caps.get(m) is None else caps[m] for m in ("JOBS", "CORES")}
    for measure in ("JOBS", "CORES"):
        if running[measure] >= effective[measure]:
            key, longer = f"{prefix}_{measure}", USER_CAP_LONGER_THAN_SECONDS
            return UserCapVerdict("throttle", measure.lower(), running[measure], "≥", effective[measure], key, longer)
    if throttled and all(running[m] < effective[m] * USER_CAP_RELEASE_FRACTION_PANDA for m in effective):
        cap = effective["JOBS"] * USER_CAP_RELEASE_FRACTION_PANDA
        return UserCapVerdict("release", "jobs", running["JOBS"], "<", cap, f"0.9 × {prefix}_JOBS")
    return UserCapVerdict("keep")


user_cap_rules = Variants("USER_JOB_CAP_RULE", seed=user_cap_verdict_seed, panda=user_cap_verdict_panda)


# A user's data in motion (seed 002, "Throttled jobs and tasks": "If the total size of staging/transferring data
# from TAPE/DISK is larger than PRESTAGE_LIMIT for a user, tasks for the user with data staging/transfers are
# throttled until the total size drops below the limit"). panda-server 1.0.4's AtlasAnalWatchDog.doForPreStaging
# compares each kind (prestaging from tape, transfer from disk) with its own limit (USER_PRESTAGE_LIMIT,
# USER_TRANSFER_LIMIT, 1,024 GB each when unset), in whole GB, strictly over; it throttles running tasks for
# 120 minutes at a time and releases them once the user is no longer over.
DATA_MOTION_KINDS = ("prestaging", "transfer")
DATA_MOTION_UNSET_PANDA_TB = 1.0  # 1,024 GB
DATA_MOTION_THROTTLE_MINUTES = 120


@dataclass(frozen=True)
class DataMotionVerdict:
    """One user's data in motion over the limit: the kinds it throttles (the tasks moving data of those kinds),
    the total compared in GB and the limit in GB; no kinds when not over."""

    kinds: tuple[str, ...]
    total_gb: int = 0
    limit_gb: float | None = None

    @property
    def sentence(self) -> str:
        """JEDI's errorDialog: 'throttled since transferring large data volume in total=2048GB > limit=1024GB
        type=transfer'."""
        if not self.kinds:
            return ""
        kind = "+".join(self.kinds)
        return f"{DATA_MOTION_MARK} in total={self.total_gb}GB > limit={self.limit_gb:g}GB type={kind}"


def data_motion_verdict_seed(*, gigabytes: dict[str, float], limit_tb: float | None) -> DataMotionVerdict:
    """seed 002: the staging and transferring data together over PRESTAGE_LIMIT (TB); an unset limit is none."""
    if limit_tb is None:
        return DataMotionVerdict(())
    total = int(sum(gigabytes.values()))
    limit = limit_tb * 1024
    if total > limit:
        return DataMotionVerdict(tuple(kind for kind in DATA_MOTION_KINDS if gigabytes.get(kind)), total, limit)
    return DataMotionVerdict((), total, limit)


def data_motion_verdict_panda(*, gigabytes: dict[str, float], limit_tb: float | None) -> DataMotionVerdict:
    """panda-server 1.0.4 (AtlasAnalWatchDog.doForPreStaging): each kind against the limit on its own (one limit
    here for both of 1.0.4's), 1 TB when unset; the first kind over is the one said."""
    limit = (DATA_MOTION_UNSET_PANDA_TB if limit_tb is None else limit_tb) * 1024
    over = [(kind, int(gigabytes.get(kind, 0))) for kind in DATA_MOTION_KINDS if int(gigabytes.get(kind, 0)) > limit]
    if not over:
        return DataMotionVerdict((), 0, limit)
    return DataMotionVerdict(tuple(kind for kind, _ in over), over[0][1], limit)


data_motion_rules = Variants("PRESTAGE_RULE", seed=data_motion_verdict_seed, panda=data_motion_verdict_panda)
