"""DIRAC task-queue matching (seed 003), plain Python: the rules a task queue must pass for a resource, the
literal selection order, task-queue priorities from group shares, and the `dirac_match` plugin that explains a
match or a no-match from a scenario file.

Selection, exactly as the seed orders it: the matching task queues; those of the highest CPU time; the one with
the smallest RAND()/priority (literal: U/p, not proportional — REFERENCE.md); in it, the user priority of the job
with the smallest RAND()/UserPriority; the jobs of that priority by job id; the first ten in random order; the
first one. Every draw comes from one seeded generator, so a match can be replayed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..decision import Candidate, Decision, Skip, Stage
from ..plugin import Plugin
from ..scenario import Scenario, ScenarioError

DEFAULT_CPU_SEGMENTS = (500, 5000, 50000, 300000)  # seed 003
DEFAULT_GROUP_SHARE = 1000.0
MIN_TQ_PRIORITY = 0.001
FIRST_JOBS = 10
ANY_TAG = "ANY"
RULES = (
    "owner_group",
    "owner_dn",
    "setup",
    "cpu_time",
    "pilot_type",
    "site_not_accepted",
    "banned_site",
    "grid_ce",
    "platform",
    "tags",
)


def cpu_segment(cpu_time: float, segments: Sequence[float] = DEFAULT_CPU_SEGMENTS) -> float:
    """The task queue's CPU time for a job: the next segment at or above it, the last one at most (seed 003:
    "if job requires 10 CPU time, the TaskQueue will have 500")."""
    for segment in segments:
        if cpu_time <= segment:
            return segment
    return segments[-1]


def real_priority(user_priority: float) -> float:
    """DIRAC's RealPriority: 0 → 1e-5, 10 → 1e6, 1 … 9 unchanged (REFERENCE.md)."""
    if user_priority <= 0:
        return 1e-5
    if user_priority >= 10:
        return 1e6
    return float(user_priority)


@dataclass(frozen=True)
class TaskQueue:
    """A group of waiting jobs with identical requirements (seed 003, "Task Queue Requirements")."""

    id: int
    ownerDN: str
    ownerGroup: str
    setup: str
    cpuTime: float
    priority: float = 1.0
    sites: frozenset[str] = frozenset()
    gridCEs: frozenset[str] = frozenset()
    bannedSites: frozenset[str] = frozenset()
    platforms: frozenset[str] = frozenset()
    pilotTypes: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    jobTypes: frozenset[str] = frozenset()
    submitPools: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Resource:
    """What a pilot (JobAgent) presents to the Matcher."""

    setup: str
    cpuTime: float
    site: str = ""
    gridCE: str = ""
    platform: str = ""
    pilotType: str = ""
    ownerGroup: str = ""  # a private pilot's group and DN
    ownerDN: str = ""
    tags: frozenset[str] = frozenset()
    jobSharing: bool = False  # the owner group has the JOB_SHARING property

    @property
    def private(self) -> bool:
        return bool(self.ownerGroup)


def no_match_reasons(tq: TaskQueue, resource: Resource) -> list[tuple[str, dict[str, Any]]]:
    """Every rule of seed 003 the task queue fails for the resource, with the values compared (empty: match)."""
    failed: list[tuple[str, dict[str, Any]]] = []
    if resource.private and tq.ownerGroup != resource.ownerGroup:
        failed.append(("owner_group", {"required": tq.ownerGroup, "offered": resource.ownerGroup}))
    if resource.private and not resource.jobSharing and tq.ownerDN != resource.ownerDN:
        failed.append(("owner_dn", {"required": tq.ownerDN, "offered": resource.ownerDN}))
    if tq.setup != resource.setup:
        failed.append(("setup", {"required": tq.setup, "offered": resource.setup}))
    if tq.cpuTime > resource.cpuTime:
        failed.append(("cpu_time", {"required": tq.cpuTime, "offered": resource.cpuTime}))
    if tq.pilotTypes and resource.pilotType not in tq.pilotTypes:
        failed.append(("pilot_type", {"accepted": sorted(tq.pilotTypes), "offered": resource.pilotType}))
    if tq.sites and resource.site and resource.site not in tq.sites:
        failed.append(("site_not_accepted", {"accepted": sorted(tq.sites), "offered": resource.site}))
    if resource.site and resource.site in tq.bannedSites:
        failed.append(("banned_site", {"banned": sorted(tq.bannedSites), "offered": resource.site}))
    if tq.gridCEs and resource.gridCE not in tq.gridCEs:
        failed.append(("grid_ce", {"accepted": sorted(tq.gridCEs), "offered": resource.gridCE}))
    if tq.platforms and resource.platform not in tq.platforms:
        failed.append(("platform", {"accepted": sorted(tq.platforms), "offered": resource.platform}))
    required = tq.tags - {ANY_TAG}
    if not required <= resource.tags:
        failed.append(("tags", {"required": sorted(required), "offered": sorted(resource.tags)}))
    return failed


def task_queue_priorities(
    queues: Iterable[Mapping[str, Any]], *, group_shares: Mapping[str, float] | None = None
) -> dict[int, float]:
    """Task-queue priorities from group shares (REFERENCE.md): a group's share (default 1000) is split equally
    among its owners; an owner's task queues get share × their average job priority / the sum of the
    averages, at least 0.001. `queues`: {id, ownerGroup, ownerDN, averagePriority}."""
    shares = group_shares or {}
    by_group: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for tq in queues:
        by_group.setdefault(tq["ownerGroup"], {}).setdefault(tq["ownerDN"], []).append(tq)
    priorities: dict[int, float] = {}
    for group, owners in by_group.items():
        owner_share = shares.get(group, DEFAULT_GROUP_SHARE) / len(owners)
        for tqs in owners.values():
            total = sum(tq["averagePriority"] for tq in tqs)
            for tq in tqs:
                value = owner_share * tq["averagePriority"] / total if total > 0 else owner_share / len(tqs)
                priorities[tq["id"]] = max(value, MIN_TQ_PRIORITY)
    return priorities


@dataclass
class Match:
    """The outcome of one matching request: the job (or None), the task queue, and every step's numbers."""

    job: int | None
    task_queue: int | None
    matching: list[int]
    top_cpu: list[int]
    tq_keys: dict[int, float] = field(default_factory=dict)
    user_priority: float | None = None
    first_jobs: list[int] = field(default_factory=list)
    rejected: dict[int, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)


def select_task_queue(candidates: Sequence[TaskQueue], rng: random.Random) -> tuple[TaskQueue, list[int], dict]:
    """Highest CPU time first, then the smallest RAND()/priority."""
    top = max(tq.cpuTime for tq in candidates)
    best = [tq for tq in candidates if tq.cpuTime == top]
    keys = {tq.id: rng.random() / max(tq.priority, MIN_TQ_PRIORITY) for tq in best}
    chosen = min(best, key=lambda tq: (keys[tq.id], tq.id))
    return chosen, [tq.id for tq in best], keys


def select_job(jobs: Sequence[tuple[int, float]], rng: random.Random) -> tuple[int, float, list[int]]:
    """Within the task queue, `jobs` = (job id, user priority): the priority of the job with the smallest
    RAND()/RealPriority, the jobs of that priority by id, the first ten shuffled, the first one."""
    ranked = min(jobs, key=lambda job: (rng.random() / real_priority(job[1]), job[0]))
    priority = ranked[1]
    first = sorted(job_id for job_id, p in jobs if p == priority)[:FIRST_JOBS]
    shuffled = list(first)
    rng.shuffle(shuffled)
    return shuffled[0], priority, first


def match(
    task_queues: Sequence[TaskQueue], jobs_of: Mapping[int, Sequence[tuple[int, float]]], resource: Resource, seed: int
) -> Match:
    """The whole selection of seed 003 over task queues with waiting jobs."""
    rng = random.Random(seed)
    rejected: dict[int, list] = {}
    candidates = []
    for tq in task_queues:
        reasons = no_match_reasons(tq, resource)
        if reasons:
            rejected[tq.id] = reasons
        elif jobs_of.get(tq.id):
            candidates.append(tq)
    if not candidates:
        return Match(None, None, [], [], rejected=rejected)
    chosen, top, keys = select_task_queue(candidates, rng)
    job, priority, first = select_job(jobs_of[chosen.id], rng)
    return Match(job, chosen.id, [tq.id for tq in candidates], top, keys, priority, first, rejected)


# --- the dirac_match plugin: scenario files -------------------------------------------------------------------

REQUIREMENT_SETS = ("sites", "gridCEs", "bannedSites", "platforms", "pilotTypes", "tags", "jobTypes", "submitPools")


def _names(value: Any, path: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ScenarioError(path, "a list of names", value)
    return frozenset(value)


def _number(data: Mapping, key: str, path: str, default: float | None = None) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{path}.{key}", "a number", value)
    return float(value)


def cpu_segments_from(raw: Any, path: str = "$.cpu_segments") -> tuple[float, ...]:
    """The CPU-time segments of a scenario (`cpu_segments`, default seed 003's): positive, strictly ascending."""
    if raw is None:
        return DEFAULT_CPU_SEGMENTS
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(path, "a non-empty list of CPU times in seconds", raw)
    values = []
    for index, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise ScenarioError(f"{path}[{index}]", "a positive number of seconds", value)
        if values and value <= values[-1]:
            raise ScenarioError(f"{path}[{index}]", f"a CPU time above the one before ({values[-1]:g})", value)
        values.append(float(value))
    return tuple(values)


def parse_dirac(extra: Mapping[str, Any]) -> tuple[list[TaskQueue], dict[int, list[tuple[int, float]]], Resource]:
    """The dirac_match sections: `task_queues` [{id, ownerDN, ownerGroup, setup, cpuTime, priority, sites …}],
    `jobs` [{jobID, taskQueue, userPriority}], `resource` {setup, cpuTime, site, gridCE, platform, pilotType,
    ownerGroup, ownerDN, tags, jobSharing}, and optionally `cpu_segments`. Errors name the JSON path.

    A task queue's cpuTime is rounded up to the segments with `cpu_segment`, the function the live path applies
    when a job enters its task queue (services.dirac), so a scenario file and the database answer alike: a queue
    written with cpuTime 10 needs 500 s, one written with 400,000 needs the last segment, 300,000 s."""
    segments = cpu_segments_from(extra.get("cpu_segments"))
    queues_data = extra.get("task_queues")
    if not isinstance(queues_data, list):
        raise ScenarioError("$.task_queues", "a list of task queues", queues_data)
    queues = []
    for index, item in enumerate(queues_data):
        path = f"$.task_queues[{index}]"
        if not isinstance(item, dict):
            raise ScenarioError(path, "an object", item)
        queues.append(
            TaskQueue(
                id=int(_number(item, "id", path)),
                ownerDN=str(item.get("ownerDN", "")),
                ownerGroup=str(item.get("ownerGroup", "")),
                setup=str(item.get("setup", "")),
                cpuTime=cpu_segment(_number(item, "cpuTime", path, 0), segments),
                priority=_number(item, "priority", path, 1.0),
                **{key: _names(item.get(key), f"{path}.{key}") for key in REQUIREMENT_SETS},
            )
        )
    jobs_data = extra.get("jobs") or []
    if not isinstance(jobs_data, list):
        raise ScenarioError("$.jobs", "a list of jobs", jobs_data)
    jobs: dict[int, list[tuple[int, float]]] = {}
    for index, item in enumerate(jobs_data):
        path = f"$.jobs[{index}]"
        if not isinstance(item, dict):
            raise ScenarioError(path, "an object", item)
        tq = int(_number(item, "taskQueue", path))
        jobs.setdefault(tq, []).append((int(_number(item, "jobID", path)), _number(item, "userPriority", path, 1)))
    data = extra.get("resource")
    if not isinstance(data, dict):
        raise ScenarioError("$.resource", "an object describing the resource", data)
    resource = Resource(
        setup=str(data.get("setup", "")),
        cpuTime=_number(data, "cpuTime", "$.resource"),
        site=str(data.get("site", "")),
        gridCE=str(data.get("gridCE", "")),
        platform=str(data.get("platform", "")),
        pilotType=str(data.get("pilotType", "")),
        ownerGroup=str(data.get("ownerGroup", "")),
        ownerDN=str(data.get("ownerDN", "")),
        tags=_names(data.get("tags"), "$.resource.tags"),
        jobSharing=bool(data.get("jobSharing", False)),
    )
    return queues, jobs, resource


def match_decision(
    *, queues: Sequence[TaskQueue], jobs: Mapping[int, Sequence[tuple[int, float]]], resource: Resource, scenario
) -> Decision:
    """A match as a Decision: candidates are the matching task queues (weight = their priority, the RAND key in
    the factors), skipped ones carry the first rule they fail and every failed rule in the detail."""
    result = match(queues, jobs, resource, scenario.seed)
    names = [f"TQ{tq.id}" for tq in queues]
    by_id = {tq.id: tq for tq in queues}
    skipped = {
        f"TQ{tq_id}": Skip(reasons[0][0], reasons[0][0], {"failed": [code for code, _ in reasons], **reasons[0][1]})
        for tq_id, reasons in result.rejected.items()
    }
    empty = [tq.id for tq in queues if tq.id not in result.rejected and not jobs.get(tq.id)]
    skipped.update({f"TQ{tq_id}": Skip("no_waiting_job", "waiting jobs", {}) for tq_id in empty})
    lower_cpu = [tq_id for tq_id in result.matching if tq_id not in result.top_cpu]
    skipped.update(
        {
            f"TQ{tq_id}": Skip("lower_cpu_time", "highest CPU time", {"cpuTime": by_id[tq_id].cpuTime})
            for tq_id in lower_cpu
        }
    )
    candidates = tuple(
        Candidate(
            f"TQ{tq_id}",
            by_id[tq_id].priority,
            {"cpuTime": by_id[tq_id].cpuTime, "randOverPriority": round(result.tq_keys[tq_id], 6)},
        )
        for tq_id in sorted(result.top_cpu, key=lambda i: result.tq_keys[i])
    )
    stages = (
        Stage("requirements", len(queues), len(queues) - len(result.rejected)),
        Stage("waiting jobs", len(queues) - len(result.rejected), len(result.matching)),
        Stage("highest CPU time", len(result.matching), len(result.top_cpu)),
    )
    if result.job is None:
        counts: dict[str, int] = {}
        for reasons in result.rejected.values():
            counts[reasons[0][0]] = counts.get(reasons[0][0], 0) + 1
        detail = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda item: -item[1]))
        message = f"no match: {len(queues)} task queues, none fits ({detail or 'no waiting job'})"
    else:
        message = (
            f"job {result.job} from TQ{result.task_queue} (user priority {result.user_priority:g}, "
            f"first ten by id {result.first_jobs})"
        )
    return Decision(
        plugin=scenario.plugin,
        outcome="matched" if result.job is not None else "no_match",
        chosen=str(result.job) if result.job is not None else None,
        candidates=candidates,
        skipped=skipped,
        stages=stages,
        message=message,
        retry_after_minutes=None,
        now=scenario.now,
        seed=scenario.seed,
        initial=tuple(names),
        candidate_kind="task queue",
        profile=scenario.profile,
        extra={
            "taskQueue": result.task_queue,
            "userPriority": result.user_priority,
            "firstJobs": result.first_jobs,
        },
    )


class DiracMatcher(Plugin):
    """`dirac_match`: the DIRAC Matcher on a scenario of task queues, waiting jobs and one resource."""

    name = "dirac_match"
    candidate_kind = "task queue"

    def decide(self, scenario: Scenario) -> Decision:
        queues, jobs, resource = parse_dirac(scenario.extra)
        return match_decision(queues=queues, jobs=jobs, resource=resource, scenario=scenario)

    def frame(self, scenario: Scenario):
        return None
