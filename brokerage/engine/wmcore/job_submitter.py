"""WMCore JobSubmitter (seed 004): which cached jobs go to the pool and where, by the submit rules, the job
priorities of the task types and the schedd free slots."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from brokerage.engine.wmcore.elements import DETAIL_SITES, IO_BOUND_TYPES


@dataclass(frozen=True)
class SubmitSite:
    """A site as the JobSubmitter sees it: state, total slots and, per job type, (pending slots, running slots)."""

    name: str
    state: str = "Normal"
    pending_slots: int = 0
    running_slots: int = 0
    task_slots: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    state_since: float | None = None  # POSIX seconds the site entered its state (the drain grace period)


@dataclass
class SiteLoad:
    """Jobs already pending and running at a site, in total and per job type, and the highest priority of each
    type's jobs there (None when it has none)."""

    pending: int = 0
    running: int = 0
    task_pending: dict[str, int] = field(default_factory=dict)
    task_running: dict[str, int] = field(default_factory=dict)
    highest_priority: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CachedJob:
    """A job in the JobSubmitter cache: id, priority, job type and the sites it may run at."""

    id: int
    priority: float
    task_type: str
    possible_sites: tuple[str, ...]


@dataclass
class Submission:
    """Jobs handed to the pool with their site, the reason each other job stays in the cache, and the count of
    conditions met per (site, job type, condition) as WMCore logs them."""

    submitted: list[tuple[int, str]]
    waiting: dict[int, tuple[str, dict[str, Any]]]
    conditions: dict[tuple[str, str, str], int]
    limit: int
    failed: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # WMCore exit code → submitfailed


# wmbs_sub_types.priority (wmcoredb initial_wmbs_data.sql): the JobSubmitter's task priority
TASK_TYPE_PRIORITY = {
    "Production": 0,
    "Processing": 0,
    "Cleanup": 1,
    "LogCollect": 2,
    "Skim": 3,
    "Merge": 4,
    "Harvesting": 5,
}
MAX_TASK_PRIORITY = 1e7  # JobSubmitterPoller.maxTaskPriority: job priority = task priority × this + workflow's


@dataclass(frozen=True)
class SubmitRules:
    """The gdpconfig parameters where today's JobSubmitterPoller (wmagent 2.4.5.9) departs from seed 004; the
    defaults are the seed's (docs/gdpconfig.md, profile `wmcore`)."""

    task_priority: bool = False  # WMCORE_TASK_PRIORITY: order by task priority × 10^7 + workflow priority
    merge_ignores_pending: bool = False  # WMCORE_MERGE_IGNORES_PENDING: Merge jobs skip NoPendingSlot
    locations: str = "seed"  # WMCORE_SUBMIT_LOCATIONS: seed | wmcore (refreshCache's location rules)
    drain_grace_hours: float = 48.0  # WMCORE_DRAIN_GRACE_HOURS: drainGracePeriod (wmcore locations)

    @classmethod
    def from_config(cls, config: Any) -> SubmitRules:
        return cls(
            task_priority=bool(config.get("WMCORE_TASK_PRIORITY")),
            merge_ignores_pending=bool(config.get("WMCORE_MERGE_IGNORES_PENDING")),
            locations=config.get("WMCORE_SUBMIT_LOCATIONS"),
            drain_grace_hours=float(config.get("WMCORE_DRAIN_GRACE_HOURS")),
        )


SEED_SUBMIT_RULES = SubmitRules()


def job_priority(job: CachedJob, rules: SubmitRules = SEED_SUBMIT_RULES) -> float:
    """The priority the JobSubmitter orders by (and compares with a site's highest for the overflow)."""
    if rules.task_priority:
        return TASK_TYPE_PRIORITY.get(job.task_type, 0) * MAX_TASK_PRIORITY + job.priority
    return job.priority


def submit_condition(
    job: CachedJob,
    site: SubmitSite,
    load: SiteLoad,
    *,
    overflow_fraction: float,
    initial: SiteLoad,
    rules: SubmitRules = SEED_SUBMIT_RULES,
) -> tuple[str, dict[str, Any]]:
    """'' when the job may go to the site, else the first condition that stops it and its numbers. A job with a
    priority above every job of its type at the site (and not I/O-bound) may overflow the pending thresholds by
    `overflow_fraction` of the pending slots (seed 004: 20 %, configurable)."""
    task_pending_slots, task_running_slots = site.task_slots.get(job.task_type, (0, 0))
    highest = load.highest_priority.get(job.task_type)
    bypass = highest is not None and job_priority(job, rules) > highest and job.task_type not in IO_BOUND_TYPES
    if bypass:
        total_pending_threshold = max(site.pending_slots, initial.pending) + site.pending_slots * overflow_fraction
        task_pending_threshold = (
            max(task_pending_slots, initial.task_pending.get(job.task_type, 0)) + task_pending_slots * overflow_fraction
        )
    else:
        total_pending_threshold = site.pending_slots
        task_pending_threshold = task_pending_slots
    total_job_threshold = total_pending_threshold + site.running_slots
    if rules.merge_ignores_pending and job.task_type == "Merge":
        # _getJobSubmitCondition (2.4.5.9 release): after the running threshold is set, only NoPendingSlot goes
        total_pending_threshold = math.inf
    task_pending = load.task_pending.get(job.task_type, 0)
    task_running = load.task_running.get(job.task_type, 0)
    checks = (
        ("no_pending_slot", load.pending, total_pending_threshold),
        ("no_task_pending_slot", task_pending, task_pending_threshold),
        ("no_running_slot", load.pending + load.running, total_job_threshold),
        ("no_task_running_slot", task_pending + task_running, task_pending_threshold + task_running_slots),
    )
    for code, current, limit in checks:
        if current >= limit:
            return code, {
                "site": site.name,
                "taskType": job.task_type,
                "current": current,
                "threshold": limit,
                "bypass": bypass,
            }
    return "", {}


def assign_locations(
    jobs: Sequence[CachedJob],
    sites: Mapping[str, SubmitSite],
    loads: Mapping[str, SiteLoad],
    *,
    overflow_fraction: float,
    limit: int,
    rules: SubmitRules = SEED_SUBMIT_RULES,
    now: float = 0.0,
) -> Submission:
    """The JobSubmitter's pass over its cache (seed 004, "JobSubmitter Cache to GlideIn"): jobs by priority
    descending then id; Down/Aborted sites dropped, draining sites dropped when the job has another site (I/O-bound
    jobs keep them), sites with no pending slot for the job type dropped; the first site whose conditions pass
    takes the job and its counters grow. `limit` (the schedd's free room, at most the jobs per cycle) stops it.
    Sites are walked in name order (the real poller walks a frozenset, in string-hash order). Under the wmcore
    location rule the cache is built as refreshCache builds it (`cache_locations`): some jobs fail, some are not
    cached while their draining sites are within the grace period; `now` (POSIX seconds) dates that period."""
    loads = {name: _copy_load(loads.get(name, SiteLoad())) for name in sites}
    initial = {name: _copy_load(load) for name, load in loads.items()}
    submitted: list[tuple[int, str]] = []
    waiting: dict[int, tuple[str, dict[str, Any]]] = {}
    failed: dict[int, tuple[str, dict[str, Any]]] = {}
    conditions: dict[tuple[str, str, str], int] = {}
    located: dict[int, list[str]] = {}
    if rules.locations == "wmcore":
        drain_since = {name: site.state_since for name, site in sites.items() if site.state == "Draining"}
        for job in jobs:
            outcome, found = cache_locations(job, sites, drain_since, rules=rules, now=now)
            if outcome == "failed":
                failed[job.id] = found
            elif outcome == "waiting":
                waiting[job.id] = found
            else:
                located[job.id] = found
        jobs = [job for job in jobs if job.id in located]
    ordered = sorted(jobs, key=lambda job: (-job_priority(job, rules), job.id))
    for position, job in enumerate(ordered):
        if len(submitted) >= limit:
            detail = {"limit": limit}
            code = "schedd_limit" if limit <= 0 else "cycle_limit"
            waiting.update({later.id: (code, detail) for later in ordered[position:]})
            break
        if rules.locations == "wmcore":
            usable = [name for name in sorted(located[job.id]) if name in sites]  # checkZeroTaskThresholds
        else:
            possible = [name for name in sorted(job.possible_sites) if name in sites]
            usable = [name for name in possible if sites[name].state not in ("Down", "Aborted")]
            if not usable:
                waiting[job.id] = ("no_resources", {"possible": sorted(job.possible_sites)[:DETAIL_SITES]})
                continue
            if job.task_type not in IO_BOUND_TYPES:
                normal = [name for name in usable if sites[name].state != "Draining"]
                if normal:
                    usable = normal
        usable = [name for name in usable if sites[name].task_slots.get(job.task_type, (0, 0))[0] > 0]
        if not usable:
            waiting[job.id] = ("no_task_threshold", {"taskType": job.task_type})
            continue
        first_reason: tuple[str, dict[str, Any]] | None = None
        for name in usable:
            code, detail = submit_condition(
                job, sites[name], loads[name], overflow_fraction=overflow_fraction, initial=initial[name], rules=rules
            )
            if code:
                conditions[(name, job.task_type, code)] = conditions.get((name, job.task_type, code), 0) + 1
                first_reason = first_reason or (code, detail)
                continue
            load = loads[name]
            load.pending += 1
            load.task_pending[job.task_type] = load.task_pending.get(job.task_type, 0) + 1
            conditions[(name, job.task_type, "submitted")] = conditions.get((name, job.task_type, "submitted"), 0) + 1
            submitted.append((job.id, name))
            break
        else:
            waiting[job.id] = first_reason
    return Submission(submitted, waiting, conditions, limit, failed)


# refreshCache's exit codes for jobs it fails (JobSubmitterPoller, wmagent 2.4.5.9)
FAILED_CODES = {"no_possible_site": 71101, "sites_down": 71102, "drain_expired": 71103}


def cache_locations(
    job: CachedJob,
    sites: Mapping[str, SubmitSite],
    drain_since: Mapping[str, float | None],
    *,
    rules: SubmitRules,
    now: float,
) -> tuple[str, Any]:
    """Where refreshCache lets a job run: ("cached", sites), ("failed", (code, detail)) or ("waiting", (code,
    detail)) for a job left out of the cache this time. A site the agent does not know counts as neither down nor
    draining here (it is dropped later, with the sites that have no threshold for the job type). No site → 71101;
    only Down/Aborted sites → 71102; a non-I/O job with only draining sites waits while any draining site of the
    agent entered its state within the grace period, and fails with 71103 after it."""
    possible = sorted(job.possible_sites)
    if not possible:
        return "failed", ("no_possible_site", {"exitCode": 71101})
    down = [name for name in possible if name in sites and sites[name].state in ("Down", "Aborted")]
    usable = [name for name in possible if name not in down]
    if not usable:
        return "failed", ("sites_down", {"exitCode": 71102, "sites": down[:DETAIL_SITES]})
    if job.task_type in IO_BOUND_TYPES:
        return "cached", usable
    normal = [name for name in usable if name not in drain_since]
    if normal:
        return "cached", normal
    grace = rules.drain_grace_hours * 3600
    fresh = [name for name, since in drain_since.items() if since is None or now - since < grace]
    if fresh:
        return "waiting", ("draining_grace", {"sites": usable[:DETAIL_SITES], "graceHours": rules.drain_grace_hours})
    return "failed", (
        "drain_expired",
        {"exitCode": 71103, "sites": usable[:DETAIL_SITES], "graceHours": rules.drain_grace_hours},
    )


def _copy_load(load: SiteLoad) -> SiteLoad:
    return SiteLoad(
        load.pending, load.running, dict(load.task_pending), dict(load.task_running), dict(load.highest_priority)
    )


def schedd_free_slots(*, max_jobs_per_owner: int, fraction: float, jobs_in_schedd: int) -> int:
    """The schedd's free room (seed 004: "MAX_JOBS_PER_OWNER * some factor"; the factor is WMCore's condor
    fraction): what is left below the limit, negative when over it."""
    return math.floor(max_jobs_per_owner * fraction) - jobs_in_schedd
