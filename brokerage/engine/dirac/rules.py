"""DIRAC task-queue matching, plain Python: the rules a task queue must pass for a resource, the selection order,
and task-queue priorities from group shares.

Two rule sets, chosen by gdpconfig (profiles `seed` and `dirac`, `MatchRules`):

* seed 003 (2009): the matching task queues; those of the highest CPU time; the one with the smallest
  RAND()/priority (literal: U/p, not proportional — REFERENCE.md); in it, the user priority of the job with the
  smallest RAND()/UserPriority; the jobs of that priority by job id; the first ten in random order; the first.
* DIRAC v9 (dirac 9.1.22, WorkloadManagementSystem/DB/TaskQueueDB.py, matchAndGetJob and
  __generateTQMatchSQL): no CPU ordering — `ORDER BY RAND()/Priority LIMIT 10` over every matching queue, the
  first with a job wins, up to 3 tries; the first 50 jobs of the drawn priority; Setup and pilot types are no
  longer task-queue fields; a resource sending no GridCE or Platform adds no condition for it; generic pilots
  take only their VO groups (Client/Matcher.py, _checkCredentials).

Where seed 003 is silent, today code decides under every profile (REFERENCE.md ruling 5): a resource offering
the tag ANY drops the tag condition while a queue tag ANY is required like any other; JobType, RequiredTag,
the resource-side Banned* lists and MaxRAM are matched; a pilot naming only an owner or only a group is matched on
that field alone; a site outside the site mask takes Test jobs only (Matcher._getResourceDict). Every draw comes
from one seeded generator, so a match can be replayed.
"""

from __future__ import annotations

import functools
import random
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_CPU_SEGMENTS = (500, 5000, 50000, 300000)  # seed 003
DEFAULT_GROUP_SHARE = 1000.0
MIN_TQ_PRIORITY = 0.001
FIRST_JOBS = 10  # seed 003; DIRAC v9 reads 50 (DIRAC_JOBS_PER_TRY)
QUEUES_PER_TRY = 10  # TaskQueueDB.matchAndGetJob numQueuesPerTry
MATCH_RETRIES = 3  # TaskQueueDB.__maxMatchRetry
BACKGROUND_PRIORITY = 0.1  # calculate_priority.is_background: an average RealPriority at or below this
TEST_JOB_TYPE = "Test"  # what a site outside the mask may still run (Matcher._getResourceDict)
ANY_TAG = "ANY"
RULES = (
    "owner_group",
    "owner_dn",
    "setup",
    "cpu_time",
    "ram",
    "pilot_type",
    "site_not_accepted",
    "banned_site",
    "grid_ce",
    "platform",
    "job_type",
    "tags",
    "required_tags",
    "resource_ban",
)
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def is_any(value: str) -> bool:
    """DIRAC's wildcard test (TaskQueueDB._lowerAndRemovePunctuation(v) == "any"): "ANY", "any", "'Any'"."""
    return value.lower().translate(_PUNCTUATION) == "any"


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
class MatchRules:
    """The gdpconfig parameters where DIRAC v9 departs from seed 003; each field is one parameter, the defaults
    are the seed's (docs/gdpconfig.md, profile `dirac`)."""

    tq_order: str = "seed"  # DIRAC_TQ_ORDER: seed = highest CPU first | dirac = RAND()/priority over all
    jobs_per_try: int = FIRST_JOBS  # DIRAC_JOBS_PER_TRY
    legacy_fields: bool = True  # DIRAC_MATCH_SETUP_PILOT_TYPE: Setup and pilot types are matched
    absent_ce_platform: str = "seed"  # DIRAC_ABSENT_CE_PLATFORM: seed = required | dirac = no condition
    generic_pilot_vo: bool = False  # DIRAC_GENERIC_PILOT_VO: generic pilots take only their VO's groups
    priority_average: str = "user"  # DIRAC_PRIORITY_AVERAGE: user | real (mean RealPriority)
    split_job_sharing: bool = True  # DIRAC_SPLIT_JOB_SHARING: a JobSharing group's share is split among owners
    priority_grouping: bool = False  # DIRAC_PRIORITY_GROUPING: queues differing only in sites share a sum

    @classmethod
    def from_config(cls, config: Any) -> MatchRules:
        """From a ConfigView (anything with `get(key)`)."""
        return cls(
            tq_order=config.get("DIRAC_TQ_ORDER"),
            jobs_per_try=int(config.get("DIRAC_JOBS_PER_TRY")),
            legacy_fields=bool(config.get("DIRAC_MATCH_SETUP_PILOT_TYPE")),
            absent_ce_platform=config.get("DIRAC_ABSENT_CE_PLATFORM"),
            generic_pilot_vo=bool(config.get("DIRAC_GENERIC_PILOT_VO")),
            priority_average=config.get("DIRAC_PRIORITY_AVERAGE"),
            split_job_sharing=bool(config.get("DIRAC_SPLIT_JOB_SHARING")),
            priority_grouping=bool(config.get("DIRAC_PRIORITY_GROUPING")),
        )


SEED_RULES = MatchRules()
# the gdpconfig parameters MatchRules reads (kept with a stored matching request, so that a replay can change them)
MATCH_RULE_KEYS = (
    "DIRAC_TQ_ORDER",
    "DIRAC_JOBS_PER_TRY",
    "DIRAC_MATCH_SETUP_PILOT_TYPE",
    "DIRAC_ABSENT_CE_PLATFORM",
    "DIRAC_GENERIC_PILOT_VO",
    "DIRAC_PRIORITY_AVERAGE",
    "DIRAC_SPLIT_JOB_SHARING",
    "DIRAC_PRIORITY_GROUPING",
)


@dataclass(frozen=True)
class Group:
    """A DIRAC group as the Registry describes it: its JobShare, VO, whether it has the JobSharing property and
    whether its low-priority queues become background queues (AllowBackgroundTQs)."""

    share: float = DEFAULT_GROUP_SHARE
    vo: str = ""
    jobSharing: bool = False
    backgroundTQs: bool = False


@dataclass(frozen=True)
class TaskQueue:
    """A group of waiting jobs with identical requirements (seed 003, "Task Queue Requirements"; minRAM/maxRAM
    from DIRAC v9's tq_RAM_requirements, MB, 0 = none)."""

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
    # seed 003: "Grid middleware required to run this job", used by pilot submission only (a grouping, no match)
    gridMiddlewares: frozenset[str] = frozenset()
    minRAM: int = 0
    maxRAM: int = 0


# A resource's Banned<Field> list and the task-queue field it excludes (TaskQueueDB.__generateTQMatchSQL,
# "Add possibly Resource banning conditions").
RESOURCE_BANS = (
    ("bannedSites", "sites"),
    ("bannedGridCEs", "gridCEs"),
    ("bannedPlatforms", "platforms"),
    ("bannedJobTypes", "jobTypes"),
    ("bannedTags", "tags"),
)


# A task queue's requirement fields, each a set of values (seed 003 "Task Queue Requirements")
REQUIREMENT_SETS = (
    "sites", "gridCEs", "bannedSites", "platforms", "pilotTypes", "tags", "jobTypes", "submitPools", "gridMiddlewares",
)  # fmt: skip


def task_queue_from(item: Mapping[str, Any], requirements: Mapping[str, Iterable[str]]) -> TaskQueue:
    """A TaskQueue from a task queue's columns (`id` or `pk`, ownerDN, ownerGroup, setup, cpuTime, priority, minRAM,
    maxRAM when known) and its requirement values by field: the one way rows, a live index and a stored one
    become the rules' task queue."""
    return TaskQueue(
        id=item["id"] if "id" in item else item["pk"],
        ownerDN=item["ownerDN"],
        ownerGroup=item["ownerGroup"],
        setup=item["setup"],
        cpuTime=item["cpuTime"],
        priority=item["priority"],
        minRAM=item["minRAM"],
        maxRAM=item.get("maxRAM") or 0,
        **{name: frozenset(requirements.get(name, ())) for name in REQUIREMENT_SETS},
    )


# The resource keys a real pilot may send as lists (TaskQueueDB.multiValueMatchFields and OwnerGroup: the Matcher
# turns DIRACPlatform into the list of compatible platforms, and a generic pilot's OwnerGroup into its VO's groups)
LIST_KEYS = ("site", "gridCE", "platform", "jobType", "ownerGroup")


def fold(value: str) -> str:
    """A value as TaskQueueDB's tables compare it: utf8mb4 with MariaDB's case-insensitive collation, which also
    ignores trailing spaces (PAD SPACE): "GPU" offered matches a "gpu" tag, "LCG.CERN.cern " the site."""
    return value.casefold().rstrip(" ")


def folded(values: Iterable[str]) -> frozenset[str]:
    """The values folded; a task queue's frozensets (hashed once, kept) are folded once each."""
    if isinstance(values, frozenset):
        return _folded_set(values)
    return frozenset(fold(value) for value in values)


@functools.lru_cache(maxsize=65536)
def _folded_set(values: frozenset[str]) -> frozenset[str]:
    return frozenset(fold(value) for value in values)


@dataclass(frozen=True)
class Resource:
    """What a pilot (JobAgent) presents to the Matcher. The five LIST_KEYS hold every value the pilot sent (a
    single name is one value; none, a key not sent); `maxRAM` None is no RAM offered (no condition)."""

    setup: str
    cpuTime: float
    site: tuple[str, ...] = ()
    gridCE: tuple[str, ...] = ()
    platform: tuple[str, ...] = ()
    pilotType: str = ""
    ownerGroup: tuple[str, ...] = ()  # a private pilot's groups and DN
    ownerDN: str = ""
    tags: frozenset[str] = frozenset()
    jobSharing: bool = False  # the owner group has the JOB_SHARING property
    jobType: tuple[str, ...] = ()
    requiredTags: frozenset[str] = frozenset()
    bannedSites: frozenset[str] = frozenset()
    bannedGridCEs: frozenset[str] = frozenset()
    bannedPlatforms: frozenset[str] = frozenset()
    bannedJobTypes: frozenset[str] = frozenset()
    bannedTags: frozenset[str] = frozenset()
    maxRAM: int | None = None
    vo: str = ""  # a generic pilot's VirtualOrganization
    inSiteMask: bool = True

    def __post_init__(self):
        # a single name (a str) is one value, "" none: what a pilot sending one value means
        for key in LIST_KEYS:
            value = getattr(self, key)
            if isinstance(value, str):
                object.__setattr__(self, key, (value,) if value else ())
            elif not isinstance(value, tuple):
                object.__setattr__(self, key, tuple(value))
        # the values as the database compares them, folded once per request (not per task queue); attributes,
        # not fields, so equality and the stored form are the pilot's own values
        folds = {key: folded(getattr(self, key)) for key in (*LIST_KEYS, "tags", "requiredTags")}
        folds.update({ban: folded(getattr(self, ban)) for ban, _ in RESOURCE_BANS})
        object.__setattr__(self, "folds", folds)
        # also once per request: which list keys add a condition (sent, no wildcard), and which sets hold no
        # wildcard (an ANY among the tags or a ban asks for nothing)
        sent = {key: is_sent(getattr(self, key)) for key in LIST_KEYS}
        sent["effective_job_type"] = is_sent(self.effective_job_type)
        object.__setattr__(self, "sent", sent)
        sets = ("tags", "requiredTags", *(ban for ban, _ in RESOURCE_BANS))
        object.__setattr__(self, "plain", {key: not any(map(is_any, getattr(self, key))) for key in sets})

    @property
    def private(self) -> bool:
        return bool(self.ownerGroup or self.ownerDN)

    @property
    def site_name(self) -> str:
        """The site a matched job records (the first the pilot sent)."""
        return self.site[0] if self.site else ""

    @property
    def effective_job_type(self) -> tuple[str, ...]:
        """A site outside the mask may run Test jobs only (Matcher._getResourceDict sets JobType = Test)."""
        return self.jobType if self.inSiteMask else (TEST_JOB_TYPE,)

    def group_shares_jobs(self, group: str, groups: Mapping[str, Group]) -> bool:
        """Whether `group` matches on the group alone (TaskQueueDB: Properties.JOB_SHARING of that group)."""
        spec = groups.get(group)
        return self.jobSharing or bool(spec and spec.jobSharing)

    def shares_jobs(self, groups: Mapping[str, Group]) -> bool:
        return any(self.group_shares_jobs(group, groups) for group in self.ownerGroup)


def is_sent(values: Sequence[str] | str) -> bool:
    """A key adds a condition only when sent and without a wildcard (`if not fv: continue`; any "any" in a list)."""
    if isinstance(values, str):
        values = (values,) if values else ()
    return bool(values) and not any(is_any(value) for value in values)


def _shown(values: Sequence[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else sorted(values)


def _owner_failure(tq: TaskQueue, resource: Resource, groups: Mapping[str, Group]) -> tuple[str, dict] | None:
    """TaskQueueDB's owner conditions: with both sent, OR over the groups of (the group, and the DN unless the
    group has JobSharing); with one sent, that one (the groups OR'ed)."""
    owner, offered = resource.ownerDN, resource.ownerGroup
    if offered:
        same_group = [group for group in offered if fold(group) == fold(tq.ownerGroup)]
        if not same_group:
            return "owner_group", {"required": tq.ownerGroup, "offered": _shown(offered)}
        shared = any(resource.group_shares_jobs(group, groups) for group in same_group)
        if owner and fold(tq.ownerDN) != fold(owner) and not shared:
            return "owner_dn", {"required": tq.ownerDN, "offered": owner}
    elif owner and fold(tq.ownerDN) != fold(owner):
        return "owner_dn", {"required": tq.ownerDN, "offered": owner}
    return None


def no_match_reasons(
    tq: TaskQueue,
    resource: Resource,
    rules: MatchRules = SEED_RULES,
    groups: Mapping[str, Group] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """Every rule the task queue fails for the resource, with the values compared (empty: match). Values compare
    as the database collates them (fold); a list the pilot sends matches when any of its values does, and a ban
    of several values excludes a queue only when the queue lists every one (TaskQueueDB.__generateSQLSubCond's
    OR, 9.1.22)."""
    groups = groups or {}
    failed: list[tuple[str, dict[str, Any]]] = []
    owner_failure = _owner_failure(tq, resource, groups)
    if owner_failure:
        failed.append(owner_failure)
    if not resource.private and rules.generic_pilot_vo and resource.vo:
        vo_groups = sorted(name for name, spec in groups.items() if spec.vo == resource.vo)
        if fold(tq.ownerGroup) not in folded(vo_groups):
            failed.append(("owner_group", {"required": tq.ownerGroup, "offered": f"VO {resource.vo}: {vo_groups}"}))
    if rules.legacy_fields and fold(tq.setup) != fold(resource.setup):
        failed.append(("setup", {"required": tq.setup, "offered": resource.setup}))
    if tq.cpuTime > resource.cpuTime:
        failed.append(("cpu_time", {"required": tq.cpuTime, "offered": resource.cpuTime}))
    if resource.maxRAM is not None and tq.minRAM > resource.maxRAM:
        failed.append(("ram", {"required": tq.minRAM, "offered": resource.maxRAM}))
    if rules.legacy_fields and tq.pilotTypes and fold(resource.pilotType) not in folded(tq.pilotTypes):
        failed.append(("pilot_type", {"accepted": sorted(tq.pilotTypes), "offered": resource.pilotType}))
    folds, sent, plain = resource.folds, resource.sent, resource.plain
    if sent["site"]:
        sites = folds["site"]
        if tq.sites and not sites & folded(tq.sites):
            failed.append(("site_not_accepted", {"accepted": sorted(tq.sites), "offered": _shown(resource.site)}))
        if sites <= folded(tq.bannedSites):
            failed.append(("banned_site", {"banned": sorted(tq.bannedSites), "offered": _shown(resource.site)}))
    for code, accepted, offered, key in (
        ("grid_ce", tq.gridCEs, resource.gridCE, "gridCE"),
        ("platform", tq.platforms, resource.platform, "platform"),
    ):
        # seed 003: "if the job requires a Grid CE, it must match"; DIRAC v9 adds no condition for a key not sent
        required = sent[key] or (not offered and rules.absent_ce_platform == "seed")
        if accepted and required and not folds[key] & folded(accepted):
            failed.append((code, {"accepted": sorted(accepted), "offered": _shown(offered) if offered else ""}))
    job_type = resource.effective_job_type
    job_types = folds["jobType"] if resource.inSiteMask else folded(job_type)
    if sent["effective_job_type"] and tq.jobTypes and not job_types & folded(tq.jobTypes):
        failed.append(("job_type", {"accepted": sorted(tq.jobTypes), "offered": _shown(job_type)}))
    if plain["tags"] and not folded(tq.tags) <= folds["tags"]:
        failed.append(("tags", {"required": sorted(tq.tags), "offered": sorted(resource.tags)}))
    if resource.requiredTags and plain["requiredTags"]:
        missing = folds["requiredTags"] - folded(tq.tags)
        if missing:
            failed.append(("required_tags", {"required": sorted(resource.requiredTags), "offered": sorted(tq.tags)}))
    for ban, tq_field in RESOURCE_BANS:
        banned = getattr(resource, ban)
        if banned and plain[ban] and folds[ban] <= folded(getattr(tq, tq_field)):
            failed.append(("resource_ban", {"field": tq_field, "banned": sorted(banned)}))
    return failed


# Task-queue fields DIRAC leaves out when it sums the priorities of queues that differ only in them
# (TaskQueueDB.priorityIgnoredFields: Sites, BannedSites, MinRAM, MaxRAM).
GROUPING_FIELDS = (
    "ownerDN",
    "ownerGroup",
    "setup",
    "cpuTime",
    "gridCEs",
    "platforms",
    "pilotTypes",
    "tags",
    "jobTypes",
    "submitPools",
    "gridMiddlewares",
)


def _grouping_key(tq: Mapping[str, Any]) -> tuple:
    return tuple(
        tuple(sorted(value)) if isinstance(value := tq.get(name, ()), list | tuple | set | frozenset) else value
        for name in GROUPING_FIELDS
    )


def task_queue_priority_terms(
    queues: Iterable[Mapping[str, Any]],
    *,
    group_shares: Mapping[str, float] | None = None,
    groups: Mapping[str, Group] | None = None,
    rules: MatchRules = SEED_RULES,
) -> dict[int, dict[str, Any]]:
    """Every task queue's priority with the numbers it comes from (REFERENCE.md; TaskQueueDB.
    recalculateTQSharesForEntity and calculate_priority for the `dirac` rules), so the monitor can show the
    computation the Matcher's priority is the result of. A group's share (default 1000) is split equally among its
    owners — under DIRAC_SPLIT_JOB_SHARING off, a JobSharing group is one entity with the whole share. Within an
    entity each queue gets share × its average / the sum of the averages, at least 0.001; the average is of the
    waiting jobs' user priorities (seed) or RealPriorities (DIRAC_PRIORITY_AVERAGE real). A group allowing
    background queues gives 0.001 to those averaging at most 0.1 and leaves them out of the sum. With
    DIRAC_PRIORITY_GROUPING the queues of an entity that differ only in sites, banned sites or RAM all get the sum
    of their priorities.

    `queues`: {id, ownerGroup, ownerDN, averagePriority[, averageRealPriority][, requirement fields]}. Each term:
    group, group_share, entity (the owner, or the group when it is one entity), entities, entity_share, average
    (and which one), entity_total, background, own (before grouping), grouped_with (the ids summed) and
    priority."""
    groups = dict(groups or {})
    shares = {name: spec.share for name, spec in groups.items()} | dict(group_shares or {})
    average_key = "averageRealPriority" if rules.priority_average == "real" else "averagePriority"
    by_group: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for tq in queues:
        by_group.setdefault(tq["ownerGroup"], {}).setdefault(tq["ownerDN"], []).append(tq)
    terms: dict[int, dict[str, Any]] = {}
    for group_name, owners in by_group.items():
        group = groups.get(group_name, Group())
        share = shares.get(group_name, DEFAULT_GROUP_SHARE)
        one_entity = group.jobSharing and not rules.split_job_sharing
        whole_group = [(group_name, [tq for tqs in owners.values() for tq in tqs])]
        entities = whole_group if one_entity else list(owners.items())
        entity_share = share / len(entities)
        for entity, tqs in entities:
            average = {tq["id"]: float(tq.get(average_key) or 0.0) for tq in tqs}
            background = {
                tq_id for tq_id, value in average.items() if group.backgroundTQs and value <= BACKGROUND_PRIORITY
            }
            total = sum(value for tq_id, value in average.items() if tq_id not in background)
            for tq in tqs:
                tq_id = tq["id"]
                if tq_id in background:
                    value = MIN_TQ_PRIORITY
                elif total > 0:
                    value = entity_share * average[tq_id] / total
                else:
                    value = entity_share / len(tqs)
                terms[tq_id] = {
                    "group": group_name,
                    "group_share": share,
                    "job_sharing": group.jobSharing,
                    "entity": entity,
                    "entity_is_group": one_entity,
                    "entities": len(entities),
                    "entity_share": entity_share,
                    "average_of": rules.priority_average,
                    "average": average[tq_id],
                    "entity_total": total,
                    "entity_queues": len(tqs),
                    "background": tq_id in background,
                    "own": max(value, MIN_TQ_PRIORITY),
                    "grouped_with": [tq_id],
                }
            if rules.priority_grouping:
                members: dict[tuple, list[int]] = {}
                for tq in tqs:
                    members.setdefault(_grouping_key(tq), []).append(tq["id"])
                for tq in tqs:
                    terms[tq["id"]]["grouped_with"] = members[
                        _grouping_key(tq)
                    ]  # summed in the entity's order: float sums are order-sensitive
    for term in terms.values():
        term["priority"] = sum(terms[tq_id]["own"] for tq_id in term["grouped_with"])
    return terms


def task_queue_priorities(
    queues: Iterable[Mapping[str, Any]],
    *,
    group_shares: Mapping[str, float] | None = None,
    groups: Mapping[str, Group] | None = None,
    rules: MatchRules = SEED_RULES,
) -> dict[int, float]:
    """Task-queue priorities from group shares: the result of `task_queue_priority_terms`."""
    terms = task_queue_priority_terms(queues, group_shares=group_shares, groups=groups, rules=rules)
    return {tq_id: term["priority"] for tq_id, term in terms.items()}


@dataclass
class Match:
    """The outcome of one matching request: the job (or None), the task queue, and every step's numbers.
    `top_cpu` is the queues the draw was among (the highest CPU time under seed 003, every matching queue with
    jobs under DIRAC v9); `tq_keys` their RAND()/priority keys of the deciding try."""

    job: int | None
    task_queue: int | None
    matching: list[int]
    top_cpu: list[int]
    tq_keys: dict[int, float] = field(default_factory=dict)
    user_priority: float | None = None
    first_jobs: list[int] = field(default_factory=list)
    rejected: dict[int, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    tries: int = 1


def select_task_queue(candidates: Sequence[TaskQueue], rng: random.Random) -> tuple[TaskQueue, list[int], dict]:
    """seed 003: highest CPU time first, then the smallest RAND()/priority."""
    top = max(tq.cpuTime for tq in candidates)
    best = [tq for tq in candidates if tq.cpuTime == top]
    keys = {tq.id: rng.random() / max(tq.priority, MIN_TQ_PRIORITY) for tq in best}
    chosen = min(best, key=lambda tq: (keys[tq.id], tq.id))
    return chosen, [tq.id for tq in best], keys


def select_task_queue_dirac(
    eligible: Sequence[TaskQueue], jobs_of: Mapping[int, Sequence[Any]], rng: random.Random
) -> tuple[TaskQueue | None, dict[int, float], int]:
    """DIRAC v9 (TaskQueueDB.matchAndGetJob): every matching queue ordered by RAND()/Priority, the first ten
    tried in that order, the first with a waiting job wins; a try that finds none draws again, three tries in all.
    Returns the queue (None: no job), the keys of the last try and the number of tries."""
    keys: dict[int, float] = {}
    for attempt in range(1, MATCH_RETRIES + 1):
        keys = {tq.id: rng.random() / max(tq.priority, MIN_TQ_PRIORITY) for tq in eligible}
        for tq in sorted(eligible, key=lambda tq: (keys[tq.id], tq.id))[:QUEUES_PER_TRY]:
            if jobs_of.get(tq.id):
                return tq, keys, attempt
    return None, keys, MATCH_RETRIES


def select_job(
    jobs: Sequence[tuple[int, float]], rng: random.Random, first_jobs: int = FIRST_JOBS
) -> tuple[int, float, list[int]]:
    """Within the task queue, `jobs` = (job id, user priority): the priority of the job with the smallest
    RAND()/RealPriority, the jobs of that priority by id, the first `first_jobs` (10 in seed 003, 50 in DIRAC
    v9) shuffled, the first one."""
    ranked = min(jobs, key=lambda job: (rng.random() / real_priority(job[1]), job[0]))
    priority = ranked[1]
    first = sorted(job_id for job_id, p in jobs if p == priority)[:first_jobs]
    shuffled = list(first)
    rng.shuffle(shuffled)
    return shuffled[0], priority, first


def match(
    task_queues: Sequence[TaskQueue],
    jobs_of: Mapping[int, Sequence[tuple[int, float]]],
    resource: Resource,
    seed: int,
    rules: MatchRules = SEED_RULES,
    groups: Mapping[str, Group] | None = None,
) -> Match:
    """The whole selection over task queues with waiting jobs, under the seed's or DIRAC v9's order."""
    rng = random.Random(seed)
    rejected: dict[int, list] = {}
    eligible = []
    for tq in task_queues:
        reasons = no_match_reasons(tq, resource, rules, groups)
        if reasons:
            rejected[tq.id] = reasons
        else:
            eligible.append(tq)
    candidates = [tq for tq in eligible if jobs_of.get(tq.id)]
    if not candidates:
        return Match(None, None, [], [], rejected=rejected)
    matching = [tq.id for tq in candidates]
    if rules.tq_order == "dirac":
        chosen, keys, tries = select_task_queue_dirac(eligible, jobs_of, rng)
        if chosen is None:
            return Match(None, None, matching, matching, keys, rejected=rejected, tries=tries)
        drawn_among = matching
    else:
        chosen, drawn_among, keys = select_task_queue(candidates, rng)
        tries = 1
    job, priority, first = select_job(jobs_of[chosen.id], rng, rules.jobs_per_try)
    return Match(job, chosen.id, matching, drawn_among, keys, priority, first, rejected, tries)
