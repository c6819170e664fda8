"""The live DIRAC Matcher's draw, plain Python and numpy, shared by the matcher over the database
(services.dirac) and the replay of a stored matching request (selectors.dirac_replay), so that both take the same
steps from the same seed (issue 34).

`dirac_match.match` explains a match over a scenario's job list; the live matcher reads no job list: it evaluates
the rules over an index of every enabled task queue at once, draws the task queue (`queues_to_try`), draws the
user priority from the counts of waiting jobs per priority (`user_priority_draw`: the minimum of n uniforms is
1 − U^(1/n), the law of one draw per job), and orders the first jobs of that priority (`claim_order`). A task
queue found empty leaves the index and the request draws again; a claim that finds every job taken (other matchers)
moves on. `matcher_run` is that loop, with the database's part handed in as functions; what a request read through
them (the index at each try, the waiting jobs of each queue it drew, each claim's first jobs) is what a replay
needs, and `MatcherTrail` keeps it.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerage.engine.core.decision import Candidate, Decision, Skip, Stage
from brokerage.engine.core.scenario import Scenario, ScenarioError
from brokerage.engine.dirac.rules import (
    MATCH_RETRIES,
    MIN_TQ_PRIORITY,
    QUEUES_PER_TRY,
    REQUIREMENT_SETS,
    RESOURCE_BANS,
    Group,
    MatchRules,
    Resource,
    TaskQueue,
    fold,
    folded,
    is_any,
    is_sent,
    no_match_reasons,
    real_priority,
    task_queue_from,
)
from brokerage.engine.dirac.scenario import groups_from, resource_from_data

# tq_TaskQueueToSites and the like: the multi-valued requirements, as a scenario file names them
FIELDS = REQUIREMENT_SETS
# Task queues tried per request when the chosen one turns out empty (emptied by other matchers meanwhile).
CLAIM_ATTEMPTS = 20
# A permutation of job ids fixed by the request's seed: (id × a + b) mod p, p prime; orders the first jobs "in
# random order" inside the database (PostgreSQL's one-statement claim), reproducibly.
SHUFFLE_PRIME = 2_147_483_647
# How the first jobs of the drawn priority are put in random order: shuffled in Python (the claim job by job), or
# by the seeded permutation inside the database (PostgreSQL's one-statement claim).
CLAIM_SHUFFLE, CLAIM_PERMUTATION = "shuffle", "permutation"
# the parts of a task-queue row, in the index's order
ROW = ("id", "setup", "ownerGroup", "ownerDN", "cpuTime", "priority", "minRAM")


class TaskQueueIndex:
    """The enabled task queues of one moment as numpy columns, for matching without a round trip per rule: codes
    for setup, group and owner, CPU time, priority, and one boolean column per requirement value. `rows` are
    (id, setup, ownerGroup, ownerDN, cpuTime, priority, minRAM) by id, `values` (task queue, field, value). A task
    queue found empty is disabled in the index (`disable`). IndexParts stores what the index holds for a replay;
    `from_snapshot` builds it again."""

    def __init__(self, version: str, rows: Sequence[Sequence[Any]], values: Iterable[tuple[int, str, str]]):
        self.version = version
        self.rows = [tuple(row) for row in rows]
        self.ids = np.array([row[0] for row in self.rows], dtype=np.int64)
        self.position = {tq_id: i for i, tq_id in enumerate(self.ids.tolist())}
        self.codes: dict[str, dict[str, int]] = {"setup": {}, "group": {}, "owner": {}}

        def encode(kind: str, column: list[str]) -> np.ndarray:
            # values as the database collates them (rules.fold): "lhcb_user" and "LHCb_user" are one group
            table = self.codes[kind]
            return np.array([table.setdefault(fold(value), len(table)) for value in column], dtype=np.int64)

        self.setup = encode("setup", [row[1] for row in self.rows])
        self.group = encode("group", [row[2] for row in self.rows])
        self.owner = encode("owner", [row[3] for row in self.rows])
        self.cpu = np.array([row[4] for row in self.rows], dtype=float)
        self.priority = np.array([row[5] for row in self.rows], dtype=float)
        self.min_ram = np.array([row[6] for row in self.rows], dtype=np.int64)
        self.enabled = np.ones(len(self.rows), dtype=bool)
        n = len(self.rows)
        self.has: dict[str, np.ndarray] = {name: np.zeros(n, dtype=bool) for name in FIELDS}
        self.value: dict[tuple[str, str], np.ndarray] = {}
        self.values_of: dict[int, list[tuple[str, str]]] = {}
        for tq_id, name, value in values:
            i = self.position.get(tq_id)
            if i is None:
                continue
            self.has[name][i] = True
            self.value.setdefault((name, fold(value)), np.zeros(n, dtype=bool))[i] = True
            self.values_of.setdefault(tq_id, []).append((name, value))
        self.tag_values = {value for name, value in self.value if name == "tags"}
        # (digest, parts) of this state as IndexParts wrote it; forgotten when a queue is disabled
        self.stored: tuple[str, dict[str, tuple[str, bytes]]] | None = None

    def _code(self, kind: str, value: str) -> int:
        return self.codes[kind].get(fold(value), -1)

    def _offered(self, name: str, value: str) -> np.ndarray:
        found = self.value.get((name, fold(value)))
        return found if found is not None else np.zeros(len(self.ids), dtype=bool)

    def _any_of(self, name: str, values: Iterable[str]) -> np.ndarray:
        found = np.zeros(len(self.ids), dtype=bool)
        for value in values:
            found |= self._offered(name, value)
        return found

    def _all_of(self, name: str, values: Iterable[str]) -> np.ndarray:
        """The queues listing every one of `values` under `name` (a ban of several values excludes only those)."""
        found = np.ones(len(self.ids), dtype=bool)
        for value in values:
            found &= self._offered(name, value)
        return found

    def matching(self, resource: Resource, rules: MatchRules, groups: Mapping[str, Group]) -> np.ndarray:
        """The rules of dirac_match.no_match_reasons over every task queue at once (the two are checked against
        each other in tests/dirac/test_index_parity.py)."""
        mask = self.enabled & (self.cpu <= resource.cpuTime)
        if rules.legacy_fields:
            mask &= self.setup == self._code("setup", resource.setup)
            mask &= ~self.has["pilotTypes"] | self._offered("pilotTypes", resource.pilotType)
        owner = self.owner == self._code("owner", resource.ownerDN) if resource.ownerDN else None
        if resource.ownerGroup:
            # TaskQueueDB: OR over the groups of (the group, and the DN unless the group has JobSharing)
            either = np.zeros(len(self.ids), dtype=bool)
            for group in resource.ownerGroup:
                this = self.group == self._code("group", group)
                if owner is not None and not resource.group_shares_jobs(group, groups):
                    this &= owner
                either |= this
            mask &= either
        elif owner is not None:
            mask &= owner
        if not resource.private and rules.generic_pilot_vo and resource.vo:
            vo_groups = [self._code("group", name) for name, spec in groups.items() if spec.vo == resource.vo]
            mask &= np.isin(self.group, vo_groups)
        if resource.maxRAM is not None:
            mask &= self.min_ram <= resource.maxRAM
        if is_sent(resource.site):
            mask &= ~self.has["sites"] | self._any_of("sites", resource.site)
            mask &= ~self._all_of("bannedSites", resource.site)
        for name, offered in (("gridCEs", resource.gridCE), ("platforms", resource.platform)):
            if is_sent(offered) or (not offered and rules.absent_ce_platform == "seed"):
                mask &= ~self.has[name] | self._any_of(name, offered)
        job_type = resource.effective_job_type
        if is_sent(job_type):
            mask &= ~self.has["jobTypes"] | self._any_of("jobTypes", job_type)
        if not any(is_any(tag) for tag in resource.tags):
            mask &= ~self._any_of("tags", self.tag_values - folded(resource.tags))
        if resource.requiredTags and not any(is_any(tag) for tag in resource.requiredTags):
            for tag in resource.requiredTags:
                mask &= self._offered("tags", tag)
        for ban, name in RESOURCE_BANS:
            banned = getattr(resource, ban)
            if banned and not any(is_any(value) for value in banned):
                mask &= ~self._all_of(name, banned)
        return mask

    def disable(self, tq_id: int) -> None:
        i = self.position.get(tq_id)
        if i is not None and self.enabled[i]:
            self.enabled[i] = False
            self.stored = None

    def kept_rows(self) -> list[tuple]:
        """The rows of the enabled task queues, by id: what a snapshot holds. Disabled queues are left out — the
        rules never keep them — so a rebuilt index draws over the same task queues in the same order."""
        return [row for row, enabled in zip(self.rows, self.enabled.tolist(), strict=True) if enabled]

    @classmethod
    def from_snapshot(cls, data: Mapping[str, Any], version: str = "stored") -> TaskQueueIndex:
        """From {task_queues: [[id, setup, ownerGroup, ownerDN, cpuTime, priority, minRAM]], values: [[id, field,
        value]]} (index_snapshot)."""
        return cls(version, data["task_queues"], [tuple(item) for item in data["values"]])

    def task_queue(self, tq_id: int) -> dict[str, Any]:
        """One task queue of the index as a dirac_match scenario writes it."""
        row = self.rows[self.position[tq_id]]
        item: dict[str, Any] = dict(zip(ROW, row, strict=True))
        for name, value in sorted(self.values_of.get(tq_id, ())):
            item.setdefault(name, []).append(value)
        return item


def queues_to_try(index: TaskQueueIndex, mask: np.ndarray, rules: MatchRules, rng: random.Random) -> list[int]:
    """Index positions in the order one try visits them, RAND()/priority drawn at once from the request's
    generator: seed 003, the smallest key among the highest CPU time; DIRAC v9, the ten smallest keys of every
    matching queue (TaskQueueDB.__generateTQMatchSQL: ORDER BY RAND()/Priority LIMIT 10)."""
    if rules.tq_order == "dirac":
        eligible = np.flatnonzero(mask)
    else:
        eligible = np.flatnonzero(mask & (index.cpu == index.cpu[mask].max()))
    draws = np.random.default_rng(rng.getrandbits(64)).random(len(eligible))
    keys = draws / np.maximum(index.priority[eligible], MIN_TQ_PRIORITY)
    if rules.tq_order == "dirac":
        return [int(i) for i in eligible[np.argsort(keys, kind="stable")[:QUEUES_PER_TRY]]]
    return [int(eligible[int(np.argmin(keys))])]


def user_priority_draw(groups: Sequence[Sequence[float]], rng: random.Random) -> float | None:
    """The user priority of the waiting job with the smallest RAND()/RealPriority, from (user priority, number of
    waiting jobs) by priority: one draw per group, 1 − U^(1/n), has the law of the minimum of n uniforms. None when
    the task queue has no waiting job."""
    if not groups:
        return None
    return min(groups, key=lambda g: ((1 - rng.random() ** (1 / g[1])) / real_priority(g[0]), g[0]))[0]


def permutation_keys(rng: random.Random) -> tuple[int, int]:
    """The seeded permutation's multiplier and offset, drawn before the database claim."""
    return rng.randrange(1, SHUFFLE_PRIME), rng.randrange(SHUFFLE_PRIME)


def claim_order(first: Sequence[int], rng: random.Random, mode: str) -> list[int]:
    """The first jobs of the drawn priority (by id) in the order the claim tries them: shuffled, or ordered by the
    seeded permutation the PostgreSQL claim sorts by."""
    if mode == CLAIM_PERMUTATION:
        multiplier, offset = permutation_keys(rng)
        return sorted(first, key=lambda job_id: (job_id * multiplier + offset) % SHUFFLE_PRIME)
    order = list(first)
    rng.shuffle(order)
    return order


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _digest(text: bytes) -> str:
    return hashlib.blake2b(text, digest_size=16).hexdigest()  # as the brokerage's stored parts


# Task queues per requirements block: a block's text changes only when one of its task queues comes or goes.
BLOCK = 256
# A priorities state is written whole when more than this share of the task queues (and at least DELTA_FLOOR)
# differ from the last whole one; otherwise as the difference from it.
WHOLE_SHARE, DELTA_FLOOR = 0.1, 64
# the kinds of the parts an index is stored as
INDEX_KIND, BLOCK_KIND, STATE_KIND = "task_queues", "task_queue_block", "task_queue_state"


class IndexParts:
    """Writes a task-queue index as parts stored by content, so that the states of a large installation's index
    (10,000 task queues: 1.7 MB of JSON whole) cost what changed between them: requirement blocks of BLOCK task
    queues by id (a task queue's requirements never change: a block changes when a queue of it comes or goes), the
    priorities (whole, or as the difference from the last whole state this writer wrote), and the index itself
    naming them. One writer per process; a block's text is kept while its set of task queues is (bounded)."""

    BLOCKS_KEPT = 4096

    def __init__(self) -> None:
        self._blocks: dict[tuple[int, ...], tuple[str, bytes]] = {}
        self._whole: tuple[str, bytes, dict[int, float]] | None = None

    def _block(self, index: TaskQueueIndex, rows: list[tuple]) -> tuple[str, bytes]:
        key = tuple(row[0] for row in rows)
        found = self._blocks.get(key)
        if found is None:
            text = _json(
                {
                    "task_queues": [[row[0], row[1], row[2], row[3], row[4], row[6]] for row in rows],
                    "values": [
                        [row[0], name, value] for row in rows for name, value in sorted(index.values_of.get(row[0], ()))
                    ],
                }
            )
            if len(self._blocks) >= self.BLOCKS_KEPT:
                self._blocks.pop(next(iter(self._blocks)))
            found = self._blocks[key] = (_digest(text), text)
        return found

    def parts(self, index: TaskQueueIndex) -> tuple[str, dict[str, tuple[str, bytes]]]:
        """The index's digest and every part it is stored as (digest → (kind, canonical JSON)), made once per state
        of the index."""
        if index.stored is not None:
            return index.stored
        kept = index.kept_rows()
        parts: dict[str, tuple[str, bytes]] = {}
        blocks: list[str] = []
        start = 0
        while start < len(kept):
            block = kept[start][0] // BLOCK
            end = start
            while end < len(kept) and kept[end][0] // BLOCK == block:
                end += 1
            digest, text = self._block(index, kept[start:end])
            parts[digest] = (BLOCK_KIND, text)
            blocks.append(digest)
            start = end
        priorities = {row[0]: row[5] for row in kept}
        state = self._state(priorities, parts)
        text = _json({"blocks": blocks, "state": state})
        digest = _digest(text)
        parts[digest] = (INDEX_KIND, text)
        index.stored = (digest, parts)
        return index.stored

    def _state(self, priorities: dict[int, float], parts: dict[str, tuple[str, bytes]]) -> str:
        whole = self._whole
        if whole is not None:
            base = whole[2]
            changed = [[tq_id, p] for tq_id, p in priorities.items() if base.get(tq_id) != p]
            dropped = [tq_id for tq_id in base if tq_id not in priorities]
            if len(changed) + len(dropped) <= max(DELTA_FLOOR, WHOLE_SHARE * len(priorities)):
                parts[whole[0]] = (STATE_KIND, whole[1])  # the base goes with every delta: parts are per day
                text = _json({"base": whole[0], "set": changed, "drop": dropped})
                digest = _digest(text)
                parts[digest] = (STATE_KIND, text)
                return digest
        text = _json({"priorities": [[tq_id, p] for tq_id, p in priorities.items()]})
        digest = _digest(text)
        self._whole = (digest, text, dict(priorities))
        parts[digest] = (STATE_KIND, text)
        return digest


def index_part_digests(data: Mapping[str, Any]) -> list[str]:
    """The parts an index part names: its blocks and its state."""
    return [*data["blocks"], data["state"]]


def index_snapshot(index_part: Mapping[str, Any], parts: Mapping[str, Any]) -> dict[str, Any]:
    """An index as TaskQueueIndex.from_snapshot reads it, put together from its stored parts (digest → decoded
    JSON; a delta state's base among them). KeyError names a missing part."""
    rows, values = [], []
    for digest in index_part["blocks"]:
        block = parts[digest]
        rows.extend(block["task_queues"])
        values.extend(block["values"])
    state = parts[index_part["state"]]
    if "base" in state:
        priorities = {tq_id: p for tq_id, p in parts[state["base"]]["priorities"]}
        for tq_id in state["drop"]:
            priorities.pop(tq_id, None)
        priorities.update({tq_id: p for tq_id, p in state["set"]})
    else:
        priorities = {tq_id: p for tq_id, p in state["priorities"]}
    return {
        "task_queues": [
            [tq_id, setup, group, owner, cpu, priorities[tq_id], ram] for tq_id, setup, group, owner, cpu, ram in rows
        ],
        "values": values,
    }


@dataclass
class MatcherTrail:
    """What one request read, in order: per try the digest of the index it read (`parts`: what the index is stored
    as, through the process's IndexParts), per drawn task queue its waiting
    jobs by user priority, per claim its first jobs (by id), the jobs passed over (taken by other matchers
    meanwhile) and the job it got. Stored with the request (models.DiracMatchInputs) and replayed by
    `trail_replay`."""

    writer: IndexParts
    tries: list[dict[str, Any]] = field(default_factory=list)
    parts: dict[str, tuple[str, bytes]] = field(default_factory=dict)

    def index_read(self, index: TaskQueueIndex) -> None:
        digest, parts = self.writer.parts(index)
        self.parts.update(parts)
        self.tries.append({"index": digest, "visits": []})

    def waiting_read(self, tq_id: int, groups: Sequence[Sequence[float]]) -> None:
        self.tries[-1]["visits"].append({"tq": tq_id, "waiting": [[p, int(n)] for p, n in groups]})

    def claimed(self, mode: str, limit: int, first: Sequence[int], passed: Sequence[int], job: int | None) -> None:
        """A claim over the first `limit` waiting jobs of the priority: `first` (by id; fewer when there were
        fewer), `passed` those found taken, `job` the one got."""
        self.tries[-1]["visits"][-1]["claim"] = {
            "mode": mode,
            "limit": limit,
            "first": list(first),
            "passed": list(passed),
            "job": job,
        }

    def as_data(self) -> dict[str, Any]:
        return {"tries": self.tries}


@dataclass
class MatcherOutcome:
    """A request's result: the job (None: no match), the task queue and user priority it came from, how many task
    queues matched at the deciding try and the highest CPU time among them (seed order), the first jobs of the
    claim, and every task queue drawn in order (with the user priority drawn, None for one found empty)."""

    job: int | None = None
    task_queue: int | None = None
    user_priority: float | None = None
    matching: int = 0
    highest_cpu_time: float | None = None
    first_jobs: list[int] = field(default_factory=list)
    drawn: list[tuple[int, float | None]] = field(default_factory=list)
    tries: int = 0
    found: bool = False


def matcher_run(
    *,
    resource: Resource,
    rules: MatchRules,
    groups: Mapping[str, Group],
    rng: random.Random,
    index_now: Callable[[], TaskQueueIndex],
    waiting: Callable[[int], Sequence[Sequence[float]]],
    emptied: Callable[[TaskQueueIndex, int], None],
    claim: Callable[[int, float, random.Random], tuple[int | None, list[int]]] | None,
) -> MatcherOutcome:
    """One request of the live matcher: per try, the rules over the index, the task queues in the order drawn, for
    each the user priority drawn from its waiting jobs (none: the queue leaves the index through `emptied`, the
    next is tried), and the claim (`claim` gives the job, None when every first job was taken, and the first jobs
    by id). Without `claim` (a dry run) it stops at the first task queue with a user priority. DIRAC v9 tries
    MATCH_RETRIES times; seed 003 draws again until CLAIM_ATTEMPTS."""
    outcome = MatcherOutcome()
    for _ in range(CLAIM_ATTEMPTS):
        index = index_now()
        mask = index.matching(resource, rules, groups)
        outcome.tries += 1
        if not mask.any() or (rules.tq_order == "dirac" and outcome.tries > MATCH_RETRIES):
            break
        for position in queues_to_try(index, mask, rules, rng):
            chosen = int(index.ids[position])
            priority = user_priority_draw(waiting(chosen), rng)
            outcome.drawn.append((chosen, priority))
            if priority is None:
                emptied(index, chosen)
                continue
            outcome.task_queue, outcome.user_priority, outcome.found = chosen, priority, True
            outcome.matching = int(mask.sum())
            outcome.highest_cpu_time = float(index.cpu[mask].max()) if rules.tq_order == "seed" else None
            if claim is None:
                return outcome
            job, first = claim(chosen, priority, rng)
            if job is not None:
                outcome.job, outcome.first_jobs = job, sorted(first)
                return outcome
    outcome.found = False
    outcome.task_queue = outcome.user_priority = None
    return outcome


class TrailEnds(LookupError):
    """A replay reached a step the stored request never took (another task queue drawn, another try), whose
    inputs were therefore never read: its outcome cannot be told."""


def trail_replay(
    *,
    trail: Mapping[str, Any],
    index_of: Callable[[str], TaskQueueIndex],
    resource: Resource,
    rules: MatchRules,
    groups: Mapping[str, Group],
    seed: int,
) -> MatcherOutcome:
    """`matcher_run` again over a stored request's trail: each try over the index it read (`index_of` builds one
    from a snapshot digest, fresh each time), each drawn queue's waiting jobs as read then, each claim over the same
    first jobs, skipping those taken by other matchers then. TrailEnds when the replay leaves the steps stored."""
    tries: list[Mapping[str, Any]] = list(trail.get("tries", ()))
    at = {"try": -1, "visit": -1}

    def index_now() -> TaskQueueIndex:
        at["try"] += 1
        at["visit"] = -1
        if at["try"] >= len(tries):
            raise TrailEnds(f"the replay tries a {at['try'] + 1}th time where the request stopped after {len(tries)}")
        return index_of(tries[at["try"]]["index"])

    def visit() -> Mapping[str, Any] | None:
        visits = tries[at["try"]]["visits"]
        return visits[at["visit"]] if 0 <= at["visit"] < len(visits) else None

    def waiting(tq_id: int) -> Sequence[Sequence[float]]:
        at["visit"] += 1
        stored = visit()
        if stored is None or stored["tq"] != tq_id:
            drew = f"TQ{stored['tq']}" if stored else "nothing more"
            raise TrailEnds(f"the replay draws TQ{tq_id} where the request drew {drew}: its waiting jobs were not read")
        return stored["waiting"]

    def claim(tq_id: int, priority: float, generator: random.Random) -> tuple[int | None, list[int]]:
        stored = (visit() or {}).get("claim")
        if stored is None:
            raise TrailEnds(
                f"the replay claims a job of TQ{tq_id} where the request did not: its first jobs were not read"
            )
        # another DIRAC_JOBS_PER_TRY: fewer first jobs are the stored ones' first by id; more are known only when
        # the request read every job of the priority (fewer than its limit)
        first, limit = list(stored["first"]), stored["limit"]
        if rules.jobs_per_try < limit:
            first = first[: rules.jobs_per_try]
        elif rules.jobs_per_try > limit and len(first) == limit:
            raise TrailEnds(
                f"the claim reads the first {rules.jobs_per_try} jobs of TQ{tq_id} where the request read {limit}"
            )
        passed = set(stored["passed"])
        order = claim_order(first, generator, stored["mode"])
        return next((job_id for job_id in order if job_id not in passed), None), first

    return matcher_run(
        resource=resource,
        rules=rules,
        groups=groups,
        rng=random.Random(seed),
        index_now=index_now,
        waiting=waiting,
        emptied=lambda index, tq_id: index.disable(tq_id),
        claim=claim,
    )


def _stored_index(indexes: Mapping[str, Any], digest: str) -> TaskQueueIndex:
    snapshot = indexes.get(digest)
    if not isinstance(snapshot, Mapping) or not {"task_queues", "values"} <= set(snapshot):
        raise ScenarioError(f"$.matcher.indexes.{digest}", "an index ({task_queues, values}) for every try", snapshot)
    try:
        return TaskQueueIndex.from_snapshot(snapshot)
    except (TypeError, ValueError, IndexError) as error:
        raise ScenarioError(f"$.matcher.indexes.{digest}", f"rows of {', '.join(ROW)} ({error})", None) from None


def task_queue_of(index: TaskQueueIndex, tq_id: int) -> TaskQueue:
    """A task queue of the index as the rules of dirac_match read it (the index keeps no maxRAM: 0, none)."""
    item = index.task_queue(tq_id)
    return task_queue_from({**item, "id": tq_id}, item)


def matcher_decision(scenario: Scenario, rules: MatchRules, *, draw: bool = True) -> Decision:
    """A stored live matching request (the `matcher` section: the indexes it read by digest and its trail) run
    again as a Decision: the task queues of its first try's index, those the rules keep as candidates (weight:
    their priority), the others skipped with every rule they fail; the job, its task queue and user priority, and
    every task queue drawn. A ScenarioError at $.matcher.tries when the draw leaves the stored steps; without
    `draw`, only the rules (outcome `undetermined`: what a replay under other rules shows when its draw does)."""
    section = scenario.extra.get("matcher")
    if not isinstance(section, Mapping) or not isinstance(section.get("tries"), list):
        raise ScenarioError("$.matcher", "an object with indexes and tries", section)
    indexes = section.get("indexes") or {}
    if not isinstance(indexes, Mapping):
        raise ScenarioError("$.matcher.indexes", "an object of indexes by digest", indexes)
    resource = resource_from_data(scenario.extra.get("resource"))
    groups = groups_from(scenario.extra.get("groups"))
    tries = section["tries"]
    first = _stored_index(indexes, tries[0]["index"]) if tries else TaskQueueIndex("empty", [], [])
    outcome: MatcherOutcome | None = None
    if draw:
        try:
            outcome = trail_replay(
                trail=section,
                index_of=lambda digest: _stored_index(indexes, digest),
                resource=resource,
                rules=rules,
                groups=groups,
                seed=scenario.seed,
            )
        except TrailEnds as ends:
            raise ScenarioError("$.matcher.tries", f"the steps the request took ({ends})", show_got=False) from None
        except (KeyError, TypeError) as error:
            raise ScenarioError("$.matcher.tries", f"tries of {{index, visits}} ({error!r})", show_got=False) from None
    mask = first.matching(resource, rules, groups)
    ids = first.ids.tolist()
    candidates = tuple(
        Candidate(f"TQ{tq_id}", float(first.priority[i]), {"cpuTime": float(first.cpu[i])})
        for i, tq_id in enumerate(ids)
        if mask[i]
    )
    skipped = {}
    for i, tq_id in enumerate(ids):
        if mask[i]:
            continue
        reasons = no_match_reasons(task_queue_of(first, tq_id), resource, rules, groups)
        code, detail = reasons[0] if reasons else ("disabled", {})
        skipped[f"TQ{tq_id}"] = Skip(code, code, {"failed": [c for c, _ in reasons] or [code], **detail})
    if outcome is None:
        outcome = MatcherOutcome()
        message = "the rules only: the draw leaves the steps the request took"
    elif outcome.job is not None:
        message = (
            f"job {outcome.job} from TQ{outcome.task_queue} (user priority {outcome.user_priority:g}, "
            f"first {len(outcome.first_jobs)} by id {outcome.first_jobs})"
        )
    elif candidates:
        message = f"no match: {len(candidates)} task queues fit, none gave a job in {outcome.tries} tries"
    else:
        message = f"no match: {len(ids)} task queues, none fits"
    return Decision(
        plugin=scenario.plugin,
        outcome="undetermined" if not draw else "matched" if outcome.job is not None else "no_match",
        chosen=str(outcome.job) if outcome.job is not None else None,
        candidates=candidates,
        skipped=skipped,
        stages=(
            Stage("requirements", len(ids), len(candidates)),
            Stage("drawn", len(candidates), len(outcome.drawn)),
        ),
        message=message,
        retry_after_minutes=None,
        now=scenario.now,
        seed=scenario.seed,
        initial=tuple(f"TQ{tq_id}" for tq_id in ids),
        candidate_kind="task queue",
        profile=scenario.profile,
        extra={
            "taskQueue": outcome.task_queue,
            "userPriority": outcome.user_priority,
            "firstJobs": outcome.first_jobs,
            "drawn": [[tq_id, priority] for tq_id, priority in outcome.drawn],
            "taskQueueOrder": rules.tq_order,
            "tries": outcome.tries,
        },
    )
