"""WorkQueue matching (seed 004; REFERENCE.md "WMCore"), plain Python: the free slots a queue sees, the order of
the elements and the matching of elements to sites by pullWork and getWork.

Elements by priority (highest first), then creation time (oldest first); for each element its possible sites in
random (seeded) order; the first site whose jobs at a priority higher than or equal to the element are strictly
below the site threshold takes the element, and the element jobs are added to that site (it may overshoot).
Lower-priority jobs never count, so higher-priority work is pulled however full a site is of lower-priority work;
the schedd limit stops every pull.

Closing is monotone: elements come in descending priority, so the jobs counted at a site only grow as the pull
goes on, and a site that is full for one element is full for every later one. Each distinct set of possible sites
keeps the list of its sites still open; an element draws from that list and drops the full sites it meets. The
first open site in a random order of the possible sites is a uniformly random open site, and that is what the
draw gives, in amortised constant time per element (`bench wmcore`: 100,000 elements, 500 sites).
"""

from __future__ import annotations

import gc
import random
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerage.engine.wmcore.elements import (
    DETAIL_SITES,
    GET_WORK,
    PULL_WORK,
    SEED_PULL_RULES,
    STEP_STATES,
    STEPS,
    Element,
    PullRules,
    Restriction,
    Restrictions,
    TodayRestrictions,
)


@dataclass(frozen=True)
class SiteResources:
    """One site of an agent's resource control: its state, pending and running slots, and the jobs running there
    (getWork subtracts them)."""

    name: str
    state: str = "Normal"
    pending_slots: int = 0
    running_slots: int = 0
    running_jobs: int = 0


@dataclass(frozen=True)
class Slots:
    """What a step counts as each site's threshold, and the sites it leaves out with their state."""

    thresholds: Mapping[str, float]
    excluded: Mapping[str, str] = field(default_factory=dict)


def free_slots(sites: Iterable[SiteResources], *, step: str, rules: PullRules = SEED_PULL_RULES) -> Slots:
    """Seed 004, step 1 of each transition: pullWork counts pending + running slots, running jobs not subtracted,
    draining sites excluded; getWork subtracts the running jobs and includes draining sites. Down and Aborted
    sites never get work. Under the wmcore rule (WMBSHelper.freeSlots, 2.4.5.9) a site's threshold is its pending
    slots: × QueueDepth for pullWork (WorkQueue.freeResouceCheck), as they are for getWork, running jobs not
    subtracted (WorkQueueManagerWMBSFileFeeder: minusRunning only fills the job counts)."""
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}")
    thresholds: dict[str, float] = {}
    excluded: dict[str, str] = {}
    for site in sites:
        if site.state not in STEP_STATES[step]:
            excluded[site.name] = site.state
            continue
        if rules.free_slots == "wmcore":
            thresholds[site.name] = site.pending_slots * (rules.queue_depth if step == PULL_WORK else 1.0)
            continue
        slots = site.pending_slots + site.running_slots
        if step == GET_WORK:
            slots -= site.running_jobs
        thresholds[site.name] = max(slots, 0)
    return Slots(thresholds, excluded)


@dataclass
class Pull:
    """A pull's outcome: the elements taken (in matching order) with their site, the others with their reason
    code and numbers (detail mappings may be shared between elements: read them, do not change them), and the
    jobs counted per site and priority afterwards."""

    taken: list[tuple[Element, str]]
    rejected: dict[str, tuple[str, dict[str, Any]]]
    counted: dict[str, dict[float, int]]
    order: list[str]

    @property
    def jobs_taken(self) -> int:
        return sum(element.jobs for element, _ in self.taken)


def priority_order(elements: Sequence[Element], rules: PullRules = SEED_PULL_RULES) -> np.ndarray:
    """Positions of the elements in the order a pull considers them. Seed: priority descending, then creation time
    ascending, then list position. wmcore (WorkQueueBackend.availableWork): the availableByPriority view's order —
    priority, then document id, both descending — read in slices of RowsPerSlice rows, each slice sorted by
    priority then creation time (sortAvailableElements, stable); only the first MaxRowsPerCycle rows (whole
    slices) are read, the rest are left out of the result."""
    if not elements:
        return np.zeros(0, dtype=np.int64)
    priority = np.fromiter((e.priority for e in elements), dtype=np.float64, count=len(elements))
    created = np.fromiter((e.created for e in elements), dtype=np.float64, count=len(elements))
    if rules.order != "wmcore":
        return np.lexsort((np.arange(len(elements)), created, -priority))
    ids = sorted(range(len(elements)), key=lambda i: elements[i].id, reverse=True)
    id_rank = np.empty(len(elements), dtype=np.int64)
    id_rank[np.asarray(ids, dtype=np.int64)] = np.arange(len(elements))
    view = np.lexsort((id_rank, -priority))
    size = max(int(rules.rows_per_slice), 1)
    read = min(len(elements), (int(rules.max_rows) // size) * size)
    chunks = []
    for start in range(0, read, size):
        chunk = view[start : start + size]
        position = np.arange(len(chunk))
        chunks.append(chunk[np.lexsort((position, created[chunk], -priority[chunk]))])
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)


@contextmanager
def collector_paused():
    """The cyclic garbage collector off for a while (a match, a whole pull): code that allocates many objects and
    frees none makes it walk the growing heap again and again, and a pull's warm snapshot holds hundreds of
    thousands of objects. Reference counting still frees what is dropped; cycles wait until it is back on."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class MatchMemo:
    """What one pull may keep for the next over the same elements: each element's possible sites (found by the
    element's identity: the caller keeps its Element objects between pulls, and a changed element is a new object)
    and the sites each distinct set of possible sites names. The possible sites are the costly string work of a
    match and depend only on the element, the site rule and, under the wmcore rule, the step's site names; the
    memo starts empty again whenever those differ from the pull before, or when it holds far more entries than the
    elements it is asked about (elements come and go)."""

    def __init__(self) -> None:
        self._fingerprint: tuple | None = None
        self._restrictions: Restrictions | TodayRestrictions | None = None
        self._by_element: dict[int, tuple[Element, Any]] = {}
        self.known: dict[Any, tuple[int, ...]] = {}
        # a reason with its numbers, as the pair a pull records, by what it depends on: this pull's and the
        # previous pull's. An equal pair is handed out again as the same object: a steady pull creates few new
        # objects (the collector has less to walk) and comparing two pulls' traces is mostly identity checks.
        self.reasons: dict[Any, tuple[str, dict[str, Any]]] = {}
        self._before: dict[Any, tuple[str, dict[str, Any]]] = {}
        self._restricted: dict[int, tuple[Restriction, tuple[str, Mapping[str, Any]]]] = {}

    def prepare(self, *, rules: PullRules, names: Sequence[str], thresholds: Mapping[str, float], size: int) -> None:
        fingerprint = (rules.site_rule, tuple(names))
        if fingerprint != self._fingerprint or len(self._by_element) > 4 * size + 1000:
            self._fingerprint = fingerprint
            self._restrictions = TodayRestrictions(thresholds) if rules.site_rule == "wmcore" else Restrictions()
            self._by_element = {}
            self.known = {}
            self.reasons = {}
            self._restricted = {}
        self._before, self.reasons = self.reasons, {}

    @property
    def held_sites(self):
        """The lookup `sites` starts with (id → (element, result)), for a caller that inlines it."""
        return self._by_element.get

    def sites(self, element: Element) -> Restriction | frozenset[str] | None:
        found = self._by_element.get(id(element))
        if found is not None and found[0] is element:
            return found[1]
        result = self._restrictions.sites(element)
        self._by_element[id(element)] = (element, result)
        return result

    def restricted(self, restriction: Restriction) -> tuple[str, Mapping[str, Any]]:
        """The pair recorded for an element without possible sites (one per Restriction object)."""
        found = self._restricted.get(id(restriction))
        if found is None or found[0] is not restriction:
            found = self._restricted[id(restriction)] = (restriction, (restriction.code, restriction.detail))
        return found[1]

    def full_reason(self, key: Any, priority: float, known: tuple[int, ...], names, load, threshold) -> tuple:
        """threshold_full with a closed site set's numbers at a priority level (`_full_detail`): the previous
        pull's pair when its numbers are the same (the names and counts follow from the key while the memo
        holds)."""
        before = self._before.get((key, priority))
        if before is not None:
            shown = known[:DETAIL_SITES]
            detail = before[1]
            if detail["jobsAtOrAbove"] == [load[i] for i in shown] and detail["thresholds"] == [
                threshold[i] for i in shown
            ]:
                self.reasons[(key, priority)] = before
                return before
        pair = self.reasons[(key, priority)] = ("threshold_full", _full_detail(priority, known, names, load, threshold))
        return pair

    def reason(self, key: Any, code: str, detail: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(code, detail), or the equal pair given for `key` by the previous pull; kept for the rest of this pull."""
        before = self._before.get(key)
        pair = before if before is not None and before == (code, detail) else (code, detail)
        self.reasons[key] = pair
        return pair


def match_work(
    elements: Sequence[Element],
    slots: Slots,
    site_jobs: Mapping[str, Mapping[float, int]],
    *,
    seed: int,
    schedd_free: float | None = None,
    rules: PullRules = SEED_PULL_RULES,
    team: str = "",
    exclude_workflows: Iterable[str] = (),
    memo: MatchMemo | None = None,
) -> Pull:
    """Matches elements to sites (seed 004, pullWork step 2 / getWork step 2). `site_jobs` gives the jobs already
    at each site by priority; `schedd_free` the schedd's free room (MAX_JOBS_PER_OWNER × factor − jobs): at 0 or
    below nothing is pulled. Under every profile (the seed is silent, WorkQueueBackend decides): an agent of a
    `team` takes only elements of that team or of none, elements of `exclude_workflows` (aborted or
    force-completed requests) are skipped, and an element's jobs count × its blowupFactor at its site. A `memo`
    kept from the previous pull over the same Element objects spares the possible sites' string work; the result
    is the same with or without it. Only Available elements are pulled (WorkQueueBackend's availableByPriority
    view)."""
    if any(element.status != "Available" for element in elements):
        elements = [element for element in elements if element.status == "Available"]
    order = priority_order(elements, rules)
    names = sorted(slots.thresholds)
    index = {name: position for position, name in enumerate(names)}
    threshold = [float(slots.thresholds[name]) for name in names]
    load = [0.0] * len(names)
    counted: dict[str, dict[float, int]] = {name: {} for name in names}
    # jobs already at the sites, highest priority first: they start to count once the pull reaches their level
    backlog = sorted(
        ((float(p), site, n) for site, by_priority in site_jobs.items() for p, n in by_priority.items() if n),
        key=lambda item: -item[0],
    )
    for p, site, n in backlog:
        if site in counted:
            counted[site][p] = counted[site].get(p, 0) + n
    ordered = [elements[i] for i in order.tolist()]
    unread = [] if len(ordered) == len(elements) else _unread(elements, order, rules)
    if schedd_free is not None and schedd_free <= 0:
        detail = {"scheddFree": schedd_free}
        rejected = {e.id: ("schedd_limit", detail) for e in ordered}
        rejected.update({e.id: ("schedd_limit", detail) for e in unread})
        return Pull([], rejected, counted, [e.id for e in ordered + unread])
    memo = memo if memo is not None else MatchMemo()
    memo.prepare(rules=rules, names=names, thresholds=slots.thresholds, size=len(elements))
    context = _LoopContext(names, index, threshold, load, counted, slots, memo, rules, team, exclude_workflows)
    # The loop allocates a few small objects per element and frees none: the cyclic collector would walk the
    # growing heap again and again (half the time at 100,000 elements). Off for the loop, back on after it.
    with collector_paused():
        pull = _match_loop(ordered, backlog, context, seed)
    if unread:
        detail = {"maxRows": rules.max_rows, "rowsPerSlice": rules.rows_per_slice}
        pull.rejected.update({e.id: ("not_read", detail) for e in unread})
        pull.order.extend(e.id for e in unread)
    return pull


def _unread(elements: Sequence[Element], order: np.ndarray, rules: PullRules) -> list[Element]:
    """The elements beyond the rows a wmcore pull reads, in the view's order."""
    seen = np.zeros(len(elements), dtype=bool)
    seen[order] = True
    left = sorted((elements[i] for i in np.flatnonzero(~seen).tolist()), key=lambda e: e.id, reverse=True)
    return sorted(left, key=lambda e: -e.priority)


@dataclass
class _LoopContext:
    names: list[str]
    index: dict[str, int]
    threshold: list[float]
    load: list[float]
    counted: dict[str, dict[float, int]]
    slots: Slots
    memo: MatchMemo
    rules: PullRules
    team: str
    exclude_workflows: Iterable[str]


def _match_loop(ordered, backlog, context: _LoopContext, seed) -> Pull:
    """match_work's loop over the elements in priority order (see the module's docstring for why it is fast)."""
    names, index, threshold, load = context.names, context.index, context.threshold, context.load
    counted = context.counted
    rejected: dict[str, tuple[str, Mapping[str, Any]]] = {}
    uniform = random.Random(seed).random
    sites_of, held_sites = context.memo.sites, context.memo.held_sites
    team = context.team
    excluded = frozenset(context.exclude_workflows)
    cap = context.rules.work_per_cycle
    # per distinct set of possible sites: its known sites (kept in the memo: they depend on the site names only),
    # and those not yet seen full in this pull (closing is monotone)
    candidates_of: dict[Any, tuple[int, ...]] = context.memo.known
    open_sites: dict[Any, list[int]] = {}
    # a closed set's numbers change only with the priority level; every reason's numbers go through the memo
    memo = context.memo
    reasons, reason, full_reason, restricted = memo.reasons, memo.reason, memo.full_reason, memo.restricted
    taken: list[tuple[Element, str]] = []
    next_backlog = 0
    for position, element in enumerate(ordered):
        if cap and len(taken) >= cap:
            detail = {"workPerCycle": cap}
            rejected.update((later.id, ("cycle_limit", detail)) for later in ordered[position:])
            break
        priority = element.priority
        while next_backlog < len(backlog) and backlog[next_backlog][0] >= priority:
            _, site, n = backlog[next_backlog]
            next_backlog += 1
            if site in index:
                load[index[site]] += n
        if team and element.team and element.team != team:
            pair = reasons.get(("team", element.team))
            if pair is None:
                pair = reason(("team", element.team), "other_team", {"team": element.team, "agentTeam": team})
            rejected[element.id] = pair
            continue
        if excluded and element.request in excluded:
            pair = reasons.get(("aborted", element.request))
            if pair is None:
                pair = reason(("aborted", element.request), "workflow_aborted", {"request": element.request})
            rejected[element.id] = pair
            continue
        found = held_sites(id(element))  # the memo's lookup inlined: this runs once per element
        possible = found[1] if found is not None and found[0] is element else sites_of(element)
        if type(possible) is Restriction:
            rejected[element.id] = restricted(possible)
            continue
        key = possible if possible is not None else ("any", element.blacklist)
        known = candidates_of.get(key)
        if known is None:
            if possible is None:
                blocked = set(element.blacklist)
                known = tuple(i for i, name in enumerate(names) if name not in blocked)
            else:
                known = tuple(sorted(index[s] for s in possible if s in index))
            candidates_of[key] = known
        if not known:
            pair = reasons.get(("none", key))
            if pair is None:
                detail = _no_resources_detail(possible or frozenset(), context.slots)
                pair = reason(("none", key), "no_resources", detail)
            rejected[element.id] = pair
            continue
        still_open = open_sites.get(key)
        if still_open is None:
            still_open = open_sites[key] = list(known)
        chosen = -1
        while still_open:
            draw = int(uniform() * len(still_open))
            site = still_open[draw]
            if load[site] < threshold[site]:
                chosen = site
                break
            still_open[draw] = still_open[-1]
            still_open.pop()
        if chosen < 0:
            pair = reasons.get((key, priority))
            if pair is None:
                pair = full_reason(key, priority, known, names, load, threshold)
            rejected[element.id] = pair
            continue
        jobs = element.jobs * element.blowup if element.blowup != 1.0 else element.jobs
        load[chosen] += jobs
        by_priority = counted[names[chosen]]
        by_priority[priority] = by_priority.get(priority, 0) + jobs
        taken.append((element, names[chosen]))
    return Pull(taken, rejected, counted, [e.id for e in ordered])


def _no_resources_detail(sites: frozenset[str], slots: Slots) -> dict[str, Any]:
    possible = sorted(sites)
    states = {site: slots.excluded[site] for site in possible if site in slots.excluded}
    return {
        "possible": possible[:DETAIL_SITES],
        "nPossible": len(possible),
        "states": states,
        "unknown": [site for site in possible if site not in states][:DETAIL_SITES],
    }


def _full_detail(priority: float, sites: tuple[int, ...], names, load, threshold) -> dict[str, Any]:
    shown = sites[:DETAIL_SITES]
    return {
        "priority": priority,
        "nSites": len(sites),
        "sites": [names[i] for i in shown],
        "jobsAtOrAbove": [load[i] for i in shown],
        "thresholds": [threshold[i] for i in shown],
    }
