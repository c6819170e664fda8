"""CMS WMCore's work-queue pull (seed 004), plain Python: which sites an element may run at, the free slots a
queue sees, the matching of elements to sites (pullWork and getWork), and the JobSubmitter's choice of jobs to
hand to the pool. The `wmcore_pull` plugin explains one pull from a scenario file.

Matching, as seed 004 and REFERENCE.md ("WMCore") state it: elements by priority (highest first), then creation
time (oldest first); for each element its possible sites in random (seeded) order; the first site whose jobs at
a priority higher than or equal to the element's are strictly below the site's threshold takes the element, and
the element's jobs are added to that site (it may overshoot). Lower-priority jobs never count, so higher-priority
work is pulled however full a site is of lower-priority work; the schedd limit stops every pull.

Closing is monotone: elements come in descending priority, so the jobs counted at a site only grow as the pull
goes on, and a site that is full for one element is full for every later one. Each distinct set of possible sites
keeps the list of its sites still open; an element draws from that list and drops the full sites it meets. The
first open site in a random order of the possible sites is a uniformly random open site, and that is what the
draw gives, in amortised constant time per element (`bench wmcore`: 100,000 elements, 500 sites).
"""

from __future__ import annotations

import gc
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any

import numpy as np

from brokerage.engine.core.decision import Candidate, Decision, Skip, Stage
from brokerage.engine.core.plugin import Plugin
from brokerage.engine.core.scenario import Scenario, ScenarioError, iso_moment

# ResourceControl site states: pullWork counts Normal sites only, getWork Normal and Draining (seed 004).
SITE_STATES = ("Normal", "Draining", "Down", "Aborted")
PULL_WORK = "pullWork"
GET_WORK = "getWork"
STEPS = (PULL_WORK, GET_WORK)
STEP_STATES = {PULL_WORK: ("Normal",), GET_WORK: ("Normal", "Draining")}
# WMAgent job (task) types with their own thresholds; the I/O-bound ones never overflow (JobSubmitterPoller).
JOB_TYPES = ("Processing", "Production", "Merge", "Cleanup", "LogCollect", "Skim", "Harvesting")
IO_BOUND_TYPES = frozenset({"Merge", "Cleanup", "LogCollect", "Harvesting"})
DETAIL_SITES = 5  # sites named in a threshold_full detail
LISTED_SITES = 10  # sites named in a site-list detail; longer lists end with "… (N in all)"


@dataclass(frozen=True, slots=True)
class Element:
    """A work-queue element as the matcher reads it (WMCore's element keys in the scenario): a block-level unit
    of `jobs` possible jobs, with the locations of its input blocks, parents and pileup, its site lists and
    trust flags (NoInputUpdate = TrustSitelists, NoPileupUpdate = TrustPUSitelists)."""

    id: str
    priority: float
    created: float  # POSIX seconds; only the order matters
    jobs: int
    inputs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    parents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    pileup: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    whitelist: tuple[str, ...] = ()
    blacklist: tuple[str, ...] = ()
    trust_sitelists: bool = False
    trust_pileup_sitelists: bool = False
    request: str = ""
    # ParentFlag: None when not given (the seed checks parents whenever listed); under the wmcore site rule the
    # parents count only with the flag, and the flag with no parents leaves no site (possibleSites)
    parent_flag: bool | None = None
    blowup: float = 1.0  # blowupFactor: each job counts this many times at its site (WorkQueueBackend)
    team: str = ""  # TeamName: an agent takes only its team's work, or work with no team (workRestrictions.js)


@dataclass(frozen=True)
class Restriction:
    """The sites an element may run at (None: any site), or why there is none: a code and its numbers."""

    sites: frozenset[str] | None
    code: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)


def _data_sites(locations: Mapping[str, tuple[str, ...]]) -> tuple[frozenset[str], list[str]]:
    """Every site holding one of the blocks, and the blocks with no location at all."""
    if len(locations) == 1:
        ((block, where),) = locations.items()
        return (frozenset(where), []) if where else (frozenset(), [block])
    sites: set[str] = set()
    homeless = []
    for block, where in locations.items():
        if where:
            sites.update(where)
        else:
            homeless.append(block)
    return frozenset(sites), sorted(homeless)


def _few(sites) -> list[str]:
    """A site set for a detail: sorted, at most LISTED_SITES names, then how many there are in all."""
    ordered = sorted(sites)
    if len(ordered) <= LISTED_SITES:
        return ordered
    return [*ordered[:LISTED_SITES], f"… ({len(ordered)} in all)"]


class Restrictions:
    """possible_sites with the string work cached for one match: the site lists per distinct (whitelist, blacklist)
    pair — found by identity first, as elements of one request share their list objects — and the sites left after
    each data check per distinct (allowed sites, data sites) pair."""

    def __init__(self) -> None:
        self._by_identity: dict[tuple[int, int], tuple] = {}
        self._lists: dict[tuple, tuple] = {}
        self._narrowed: dict[tuple, Restriction | frozenset[str]] = {}

    def _site_lists(self, element: Element) -> tuple:
        """(whitelist set or None, blacklist set, allowed sites or None, restriction when nothing is allowed)."""
        white, black = element.whitelist, element.blacklist
        found = self._by_identity.get((id(white), id(black)))
        if found is not None and found[4] is white and found[5] is black:
            return found
        found = self._lists.get((white, black))
        if found is None:
            blacklist = frozenset(black)
            whitelist = frozenset(white) if white else None
            allowed = None if whitelist is None else whitelist - blacklist
            refused = None
            if allowed is not None and not allowed:
                refused = Restriction(
                    frozenset(), "site_blacklisted", {"whitelist": _few(whitelist), "blacklist": _few(blacklist)}
                )
            found = self._lists[(white, black)] = (whitelist, blacklist, allowed, refused, white, black)
        self._by_identity[(id(white), id(black))] = found
        return found

    def of(self, element: Element) -> Restriction:
        """The element's possible sites (seed 004: "check the site whitelist/blacklist with input block location
        and pile up data location"): the whitelist (empty: any site) minus the blacklist, intersected with the
        sites of its input blocks, of their parents and of its pileup, unless the trust flags say the site lists
        are to be trusted (data read over xrootd). REFERENCE.md: whitelist [CNAF, DESY], input at [FNAL, CERN,
        DESY] → [DESY]."""
        found = self.sites(element)
        if type(found) is Restriction:
            return found
        if found is None and element.blacklist:
            return Restriction(None, detail={"blacklist": sorted(element.blacklist)})
        return Restriction(found)

    def sites(self, element: Element) -> Restriction | frozenset[str] | None:
        """`of` for the matcher's loop: the set of possible sites (None: any site but the blacklisted), or the
        Restriction saying why there is none."""
        whitelist, blacklist, allowed, refused, _, _ = self._site_lists(element)
        if refused is not None:
            return refused
        # pileup first: it is the request's, so its check against the request's site lists is cached once for
        # all the request's elements (an element failing both reports the pileup)
        if element.pileup and not element.trust_pileup_sitelists:
            allowed = self._check("pileup", element.pileup, allowed, whitelist, blacklist)
            if type(allowed) is Restriction:
                return allowed
        if not element.trust_sitelists:
            if element.inputs:
                allowed = self._check("input", element.inputs, allowed, whitelist, blacklist)
                if type(allowed) is Restriction:
                    return allowed
            if element.parents:
                allowed = self._check("parent", element.parents, allowed, whitelist, blacklist)
                if type(allowed) is Restriction:
                    return allowed
        return allowed

    def _check(self, kind, locations, allowed, whitelist, blacklist) -> Restriction | frozenset[str] | None:
        """The allowed sites narrowed to those holding the data, or the restriction when none does."""
        if len(locations) == 1:
            ((block, where),) = locations.items()
            if not where:
                return Restriction(frozenset(), f"no_{kind}_location", {"blocks": [block]})
            key = (kind, id(allowed), id(blacklist), where)
        else:
            data, homeless = _data_sites(locations)
            if homeless:
                return Restriction(frozenset(), f"no_{kind}_location", {"blocks": homeless[:DETAIL_SITES]})
            key = (kind, id(allowed), id(blacklist), data)
        # ids are safe keys: the sets they name are kept alive by this cache for the whole match
        narrowed = self._narrowed.get(key)
        if narrowed is None:
            data = key[3] if isinstance(key[3], frozenset) else frozenset(key[3])
            narrowed = self._narrowed[key] = self._narrow(kind, allowed, whitelist, blacklist, data)
        return narrowed

    @staticmethod
    def _narrow(kind, allowed, whitelist, blacklist, data) -> Restriction | frozenset[str]:
        within = data - blacklist if allowed is None else allowed & data
        if within:
            return within
        listed = data if whitelist is None else data & whitelist
        if listed and listed <= blacklist:
            return Restriction(
                frozenset(), "site_blacklisted", {f"{kind}Sites": _few(data), "blacklist": _few(blacklist)}
            )
        return Restriction(
            frozenset(),
            f"no_site_with_{kind}",
            {f"{kind}Sites": _few(data), "whitelist": _few(whitelist or ()), "blacklist": _few(blacklist)},
        )


def possible_sites(element: Element) -> Restriction:
    """One element's possible sites (see Restrictions.of)."""
    return Restrictions().of(element)


def today_possible_sites(element: Element) -> frozenset[str]:
    """WorkQueueElement.possibleSites (wmagent 2.4.5.9): with both trust flags the whitelist as it is (blacklisted
    sites included); otherwise the whitelist minus the blacklist, intersected with the union of the input blocks'
    locations, of the parents' (with ParentFlag; none listed leaves nothing) and of the pileup's, each unless
    trusted. An empty whitelist gives no site."""
    white = frozenset(element.whitelist)
    if element.trust_sitelists and element.trust_pileup_sitelists:
        return white
    possible = white - frozenset(element.blacklist)
    if element.inputs and not element.trust_sitelists:
        possible = possible & frozenset().union(*map(frozenset, element.inputs.values()))
    if element.parent_flag and not element.trust_sitelists:
        possible = possible & frozenset().union(*map(frozenset, element.parents.values()))
    if element.pileup and not element.trust_pileup_sitelists:
        possible = possible & frozenset().union(*map(frozenset, element.pileup.values()))
    return possible


def today_passing_sites(element: Element) -> tuple[frozenset[str], str, dict[str, Any]]:
    """The sites passing WorkQueueElement.passesSiteRestriction — the test workRestrictions.js makes per site: in
    the whitelist, not in the blacklist, holding every input block and, with ParentFlag, every parent block (unless
    NoInputUpdate), and every pileup dataset (unless NoPileupUpdate). With no such site: the first check that
    leaves none, as a reason code and its numbers."""
    white, black = frozenset(element.whitelist), frozenset(element.blacklist)
    if not white:
        return frozenset(), "empty_whitelist", {"blacklist": _few(black)}
    passing = white - black
    if not passing:
        return frozenset(), "site_blacklisted", {"whitelist": _few(white), "blacklist": _few(black)}
    checks = []
    if not element.trust_sitelists:
        checks.append(("input", element.inputs))
    if not element.trust_pileup_sitelists:
        checks.append(("pileup", element.pileup))
    if element.parent_flag and not element.trust_sitelists:
        checks.append(("parent", element.parents))
    for kind, locations in checks:
        homeless = sorted(block for block, where in locations.items() if not where)
        if homeless:
            return frozenset(), f"no_{kind}_location", {"blocks": homeless[:DETAIL_SITES]}
        holding = passing
        for where in locations.values():
            holding = holding & frozenset(where)
        if not holding:
            data = frozenset().union(*map(frozenset, locations.values()))
            detail = {f"{kind}Sites": _few(data), "whitelist": _few(white), "blacklist": _few(black)}
            return frozenset(), f"no_site_with_{kind}", detail
        passing = holding
    return passing, "", {}


def _located(locations: Mapping[str, tuple[str, ...]]) -> tuple:
    """What the wmcore rule's result depends on in a location mapping: the sites of each block, and the names of
    blocks with none (the reason names them, so elements differing there must not share a cached result)."""
    values = tuple(locations.values())
    if all(values):
        return values
    return (values, tuple(block for block, where in locations.items() if not where))


class TodayRestrictions:
    """The wmcore site rule, as wmagent 2.4.5.9 applies it in two places: the CouchDB list function passes an
    element on only when one site of the step's thresholds passes every restriction (`today_passing_sites`); the
    matching loop then draws from `possibleSites` (`today_possible_sites`), which takes the union of each kind's
    locations and, with both trust flags, keeps blacklisted sites. Results are cached per distinct (site lists,
    flags, locations)."""

    def __init__(self, thresholds: Mapping[str, float]) -> None:
        self._in_thresholds = frozenset(thresholds)
        self._found: dict[tuple, Restriction | frozenset[str]] = {}

    def sites(self, element: Element) -> Restriction | frozenset[str]:
        parents = element.parent_flag and not element.trust_sitelists
        key = (
            element.whitelist,
            element.blacklist,
            None if element.trust_sitelists else _located(element.inputs),
            _located(element.parents) if parents else None,
            None if element.trust_pileup_sitelists else _located(element.pileup),
            element.trust_sitelists and element.trust_pileup_sitelists,
        )
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._evaluate(element)
        return found

    def _evaluate(self, element: Element) -> Restriction | frozenset[str]:
        passing, code, detail = today_passing_sites(element)
        if code:
            return Restriction(frozenset(), code, detail)
        if not passing & self._in_thresholds:
            return Restriction(frozenset(), "no_resources", {"possible": _few(passing), "nPossible": len(passing)})
        if element.parent_flag and not element.trust_sitelists and not element.parents:
            # the list function passes it (no parent block to miss), possibleSites intersects with nothing
            return Restriction(frozenset(), "no_parent_location", {"blocks": [], "ParentFlag": True})
        return today_possible_sites(element)


@dataclass(frozen=True)
class PullRules:
    """The gdpconfig parameters where today's WorkQueue (wmagent 2.4.5.9) departs from seed 004; each field is one
    parameter, the defaults are the seed's (docs/gdpconfig.md, profile `wmcore`)."""

    free_slots: str = "seed"  # WMCORE_FREE_SLOTS: seed | wmcore (WMBSHelper.freeSlots)
    queue_depth: float = 1.0  # WMCORE_QUEUE_DEPTH: pullWork's multiplier of the pending slots (wmcore slots)
    order: str = "seed"  # WMCORE_AVAILABLE_ORDER: seed = one sort | wmcore = the view's slices, each sorted
    rows_per_slice: int = 2500  # WMCORE_ROWS_PER_SLICE (RowsPerSlice)
    max_rows: int = 50000  # WMCORE_MAX_ROWS_PER_CYCLE (MaxRowsPerCycle)
    work_per_cycle: int = 0  # WMCORE_WORK_PER_CYCLE: elements taken per pull at most, 0 = no cap (WorkPerCycle)
    site_rule: str = "seed"  # WMCORE_SITE_RULE: seed | wmcore (possibleSites and the workRestrictions list)

    @classmethod
    def from_config(cls, config: Any) -> PullRules:
        """From a ConfigView (anything with `get(key)`)."""
        return cls(
            free_slots=config.get("WMCORE_FREE_SLOTS"),
            queue_depth=float(config.get("WMCORE_QUEUE_DEPTH")),
            order=config.get("WMCORE_AVAILABLE_ORDER"),
            rows_per_slice=int(config.get("WMCORE_ROWS_PER_SLICE")),
            max_rows=int(config.get("WMCORE_MAX_ROWS_PER_CYCLE")),
            work_per_cycle=int(config.get("WMCORE_WORK_PER_CYCLE")),
            site_rule=config.get("WMCORE_SITE_RULE"),
        )


SEED_PULL_RULES = PullRules()


def usable_sites(element: Element, rules: PullRules = SEED_PULL_RULES) -> frozenset[str] | None:
    """The sites an element may run at under the rules, for a person asking where it can go: seed 004's
    whitelist/blacklist/data rule (None: any site the agent has) or today's possibleSites."""
    if rules.site_rule == "wmcore":
        return today_possible_sites(element)
    return possible_sites(element).sites


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
    is the same with or without it."""
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


# --- JobSubmitter: cache → pool ------------------------------------------------------------------------------


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


# --- the wmcore_pull plugin: scenario files --------------------------------------------------------------------


def _reader_number(data: Mapping, key: str, path: str, default: float | None = None, *, minimum=None) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScenarioError(f"{path}.{key}", "a number", value)
    if minimum is not None and value < minimum:
        raise ScenarioError(f"{path}.{key}", f"a number ≥ {minimum:g}", value)
    return float(value)


def _site_list(value: Any, path: str) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ScenarioError(path, "a list of site names", value)
    return tuple(value)


def _locations(value: Any, path: str) -> dict[str, tuple[str, ...]]:
    """{block or dataset: [sites]}; a bare list of sites is one unnamed block."""
    if value in (None, ""):
        return {}
    if isinstance(value, list):
        return {"(data)": _site_list(value, path)}
    if not isinstance(value, dict):
        raise ScenarioError(path, "an object {block: [sites]}", value)
    return {str(block): _site_list(sites, f"{path}[{block!r}]") for block, sites in value.items()}


def _time(value: Any, path: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        raise ScenarioError(path, "a time (ISO-8601 or POSIX seconds)", value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return iso_moment(value).timestamp()
        except ValueError:
            pass
    raise ScenarioError(path, "a time (ISO-8601 or POSIX seconds)", value)


def _flag(data: Mapping, key: str, path: str) -> bool:
    value = data.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ScenarioError(f"{path}.{key}", "true or false", value)
    return value


def _shared(sites: tuple[str, ...], shared: dict[tuple, tuple] | None) -> tuple[str, ...]:
    """One tuple for equal site lists, so the matcher's caches find them by identity."""
    return sites if shared is None else shared.setdefault(sites, sites)


def parse_element(item: Any, path: str, shared: dict[tuple, tuple] | None = None) -> Element:
    """One element in WMCore's own keys: id, RequestName, Priority, CreationTime, Jobs, Inputs, ParentData,
    PileupData, SiteWhitelist, SiteBlacklist, NoInputUpdate, NoPileupUpdate, ParentFlag, blowupFactor, TeamName."""
    if not isinstance(item, dict):
        raise ScenarioError(path, "an object", item)
    identifier = item.get("id", item.get("_id"))
    if not isinstance(identifier, str | int) or isinstance(identifier, bool) or identifier == "":
        raise ScenarioError(f"{path}.id", "the element's id", identifier)
    return Element(
        id=str(identifier),
        priority=_reader_number(item, "Priority", path, 0),
        created=_time(item.get("CreationTime"), f"{path}.CreationTime"),
        jobs=int(_reader_number(item, "Jobs", path, 1, minimum=0)),
        inputs=_locations(item.get("Inputs"), f"{path}.Inputs"),
        parents=_locations(item.get("ParentData"), f"{path}.ParentData"),
        pileup=_locations(item.get("PileupData"), f"{path}.PileupData"),
        whitelist=_shared(_site_list(item.get("SiteWhitelist"), f"{path}.SiteWhitelist"), shared),
        blacklist=_shared(_site_list(item.get("SiteBlacklist"), f"{path}.SiteBlacklist"), shared),
        trust_sitelists=_flag(item, "NoInputUpdate", path),
        trust_pileup_sitelists=_flag(item, "NoPileupUpdate", path),
        request=str(item.get("RequestName", "")),
        parent_flag=None if item.get("ParentFlag") is None else _flag(item, "ParentFlag", path),
        blowup=_reader_number(item, "blowupFactor", path, 1.0, minimum=0),
        team=_team(item.get("TeamName"), f"{path}.TeamName"),
    )


def _team(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScenarioError(path, "a team name", value)
    return value


def parse_site_resources(extra: Mapping[str, Any]) -> list[SiteResources]:
    """`site_thresholds`: {SITE: slots} (the threshold itself, WMCore's tests write it so) or {SITE: {state,
    pendingSlots, runningSlots, runningJobs}}."""
    data = extra.get("site_thresholds")
    if not isinstance(data, dict):
        raise ScenarioError("$.site_thresholds", "an object {site: slots}", data)
    sites = []
    for name, value in data.items():
        path = f"$.site_thresholds[{name!r}]"
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value) or value < 0:
                raise ScenarioError(path, "a number ≥ 0", value)
            sites.append(SiteResources(str(name), "Normal", int(value), 0, 0))
            continue
        if not isinstance(value, dict):
            raise ScenarioError(path, "a number of slots or an object {state, pendingSlots, runningSlots}", value)
        state = value.get("state", "Normal")
        if state not in SITE_STATES:
            raise ScenarioError(f"{path}.state", "one of " + ", ".join(SITE_STATES), state)
        sites.append(
            SiteResources(
                str(name),
                state,
                int(_reader_number(value, "pendingSlots", path, 0, minimum=0)),
                int(_reader_number(value, "runningSlots", path, 0, minimum=0)),
                int(_reader_number(value, "runningJobs", path, 0, minimum=0)),
            )
        )
    return sites


# a priority written as a JSON key: a plain decimal number (as docs/scenario.schema.json states it)
PRIORITY_KEY = re.compile(r"^-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")


def parse_site_jobs(extra: Mapping[str, Any]) -> dict[str, dict[float, int]]:
    """`site_jobs`: {SITE: {priority: jobs}} — the jobs already at each site, by priority."""
    data = extra.get("site_jobs") or {}
    if not isinstance(data, dict):
        raise ScenarioError("$.site_jobs", "an object {site: {priority: jobs}}", data)
    result: dict[str, dict[float, int]] = {}
    for site, by_priority in data.items():
        path = f"$.site_jobs[{site!r}]"
        if not isinstance(by_priority, dict):
            raise ScenarioError(path, "an object {priority: jobs}", by_priority)
        counts: dict[float, int] = {}
        for priority in by_priority:
            if not PRIORITY_KEY.match(str(priority)):
                raise ScenarioError(path, "priorities as keys (numbers)", priority)
            level = float(priority)
            counts[level] = int(_reader_number(by_priority, priority, path, minimum=0))
        result[str(site)] = counts
    return result


@dataclass(frozen=True)
class PullScenario:
    step: str
    elements: list[Element]
    sites: list[SiteResources]
    site_jobs: dict[str, dict[float, int]]
    schedd_free: float | None
    team: str = ""
    exclude_workflows: tuple[str, ...] = ()


def parse_pull(extra: Mapping[str, Any], config) -> PullScenario:
    """The wmcore_pull sections: `elements`, `site_thresholds`, `site_jobs`, and optionally `step` (pullWork or
    getWork), `schedd` {jobs} (compared with WMCORE_MAX_JOBS_PER_OWNER × WMCORE_PULL_SCHEDD_FRACTION), `team`
    and `excludeWorkflows`."""
    step = extra.get("step", PULL_WORK)
    if step not in STEPS:
        raise ScenarioError("$.step", "pullWork or getWork", step)
    data = extra.get("elements")
    if not isinstance(data, list):
        raise ScenarioError("$.elements", "a list of work-queue elements", data)
    shared: dict[tuple, tuple] = {}
    elements = [parse_element(item, f"$.elements[{i}]", shared) for i, item in enumerate(data)]
    seen: set[str] = set()
    for i, element in enumerate(elements):
        if element.id in seen:
            raise ScenarioError(f"$.elements[{i}].id", "a unique element id", element.id)
        seen.add(element.id)
    schedd = extra.get("schedd")
    schedd_free = None
    if schedd is not None:
        if not isinstance(schedd, dict):
            raise ScenarioError("$.schedd", "an object {jobs}", schedd)
        schedd_free = schedd_free_slots(
            max_jobs_per_owner=int(config.get("WMCORE_MAX_JOBS_PER_OWNER")),
            fraction=float(config.get("WMCORE_PULL_SCHEDD_FRACTION")),
            jobs_in_schedd=int(_reader_number(schedd, "jobs", "$.schedd", 0, minimum=0)),
        )
    excluded = extra.get("excludeWorkflows") or []
    if not isinstance(excluded, list) or not all(isinstance(name, str) for name in excluded):
        raise ScenarioError("$.excludeWorkflows", "a list of request names", excluded)
    return PullScenario(
        step,
        elements,
        parse_site_resources(extra),
        parse_site_jobs(extra),
        schedd_free,
        _team(extra.get("team"), "$.team"),
        tuple(excluded),
    )


def pull_decision(
    *, pull: Pull, elements: Sequence[Element], slots: Slots, step: str, now: datetime, seed: int, queue: str = ""
) -> Decision:
    """A pull as a Decision (candidate kind 'element'): the elements taken are the candidates, in matching order,
    weighed by priority with their site in the factors; every element not taken is skipped with its reason."""
    rejected = pull.rejected
    skipped = PullSkips(rejected, {element.id: element for element in elements}, pull.order)
    candidates = tuple(
        Candidate(element.id, element.priority, {"site": site, "jobs": element.jobs, "request": element.request})
        for element, site in pull.taken
    )
    counts = skipped.code_counts()
    n = len(elements)
    after_limit = n - counts.get("schedd_limit", 0)
    after_lists = after_limit - sum(counts.get(code, 0) for code in RESTRICTION_CODES)
    after_resources = after_lists - counts.get("no_resources", 0)
    stages = (
        Stage("schedd limit", n, after_limit),
        Stage("site lists and data location", after_limit, after_lists),
        Stage("sites with resources", after_lists, after_resources),
        Stage("site thresholds", after_resources, len(pull.taken)),
    )
    where = f" to {queue}" if queue else ""
    if pull.taken:
        sites = {site for _, site in pull.taken}
        outcome = "assigned"
        message = f"{step}{where}: {len(pull.taken)} of {n} elements ({pull.jobs_taken:,} jobs) to {len(sites)} sites"
    elif counts.get("schedd_limit"):
        outcome = "throttled"
        message = f"{step}{where}: schedd limit reached, nothing pulled ({n} elements wait)"
    else:
        outcome = "pending"
        message = f"{step}{where}: nothing pulled of {n} elements"
    if rejected:
        summary = ", ".join(f"{k} {code}" for code, k in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
        message += f"; left: {summary}"
    return Decision(
        plugin="wmcore_pull",
        outcome=outcome,
        chosen=pull.taken[0][0].id if pull.taken else None,
        candidates=candidates,
        skipped=skipped,
        stages=stages,
        message=message,
        retry_after_minutes=None,
        now=now,
        seed=seed,
        initial=tuple(pull.order),
        candidate_kind="element",
        extra={
            "step": step,
            "thresholds": dict(slots.thresholds),
            "excluded": dict(slots.excluded),
            "jobsTaken": pull.jobs_taken,
            "counted": {site: {str(p): n for p, n in by.items()} for site, by in pull.counted.items() if by},
        },
    )


RESTRICTION_CODES = (
    "site_blacklisted",
    "no_input_location",
    "no_parent_location",
    "no_pileup_location",
    "no_site_with_input",
    "no_site_with_parent",
    "no_site_with_pileup",
)
STAGE_OF_CODE = {
    "schedd_limit": "schedd limit",
    "no_resources": "sites with resources",
    "threshold_full": "site thresholds",
    **{code: "site lists and data location" for code in RESTRICTION_CODES},
}


class PullSkips(Mapping[str, Skip]):
    """The elements a pull left, as the Decision's `skipped`: name → Skip built only when read; the code counts
    and the trace's columns come straight from the pull's reasons (no Skip object per element)."""

    def __init__(self, rejected: Mapping[str, tuple[str, Mapping[str, Any]]], by_id: Mapping[str, Element], order):
        self._rejected = rejected
        self._by_id = by_id
        self._order = order
        self._counts: dict[str, int] | None = None

    def __getitem__(self, name: str) -> Skip:
        code, detail = self._rejected[name]
        element = self._by_id[name]
        return Skip(code, STAGE_OF_CODE.get(code, "site thresholds"), {**_own(element), **detail})

    def __contains__(self, name: object) -> bool:
        return name in self._rejected

    def __iter__(self):
        return iter(self._rejected)

    def __len__(self) -> int:
        return len(self._rejected)

    def code_counts(self) -> dict[str, int]:
        if self._counts is None:
            self._counts = dict(Counter(map(itemgetter(0), self._rejected.values())))
        return dict(self._counts)

    def changed_since(self, other: PullSkips) -> list[str]:
        """The elements left now whose reason, numbers, priority or jobs differ from `other`'s (a previous pull),
        compared without building a Skip each. The memo hands out equal reasons as one object and a snapshot
        keeps unchanged elements as the same object, so most elements are settled by two identity checks; equal
        pairs of other mappings are compared once."""
        changed = []
        equal: dict[tuple[int, int], bool] = {}
        theirs, their_elements, my_elements = other._rejected, other._by_id, self._by_id
        for name, pair in self._rejected.items():
            found = theirs.get(name)
            if found is not pair and not _same_reason(found, pair, equal):
                changed.append(name)
                continue
            mine, before = my_elements[name], their_elements[name]
            if mine is not before and (mine.priority != before.priority or mine.jobs != before.jobs):
                changed.append(name)
        return changed

    def columnar(self, only: frozenset[str] | None = None, index: Mapping[str, int] | None = None):
        """(filter, code, sorted positions, {key: values}) per code, for the trace encoder (`only`: of these, found
        through `index`, the names' positions, when given)."""
        groups: dict[str, list[tuple[int, str]]] = {}
        if only is not None and index is not None:
            named = sorted((index[name], name) for name in only)
        else:
            named = enumerate(self._order)
        for position, name in named:
            found = self._rejected.get(name)
            if found is not None and (only is None or name in only):
                groups.setdefault(found[0], []).append((position, name))
        for code, members in groups.items():
            details = [self._rejected[name][1] for _, name in members]
            elements = [self._by_id[name] for _, name in members]
            columns: dict[str, list[Any]] = {
                "priority": [element.priority for element in elements],
                "jobs": [element.jobs for element in elements],
            }
            keys = sorted({key for detail in {id(d): d for d in details}.values() for key in detail})
            for key in keys:
                columns[key] = [detail.get(key) for detail in details]
            yield STAGE_OF_CODE.get(code, "site thresholds"), code, [p for p, _ in members], columns


def _same_reason(found, pair, equal: dict[tuple[int, int], bool]) -> bool:
    """Whether a previous pull's (code, numbers) equals this one's; each pair of number mappings compared once."""
    if found is None or found[0] != pair[0]:
        return False
    if found[1] is pair[1]:
        return True
    ids = (id(found[1]), id(pair[1]))
    same = equal.get(ids)
    if same is None:
        same = equal[ids] = found[1] == pair[1]
    return same


def _own(element: Element) -> dict[str, Any]:
    return {"priority": element.priority, "jobs": element.jobs}


class WMCorePull(Plugin):
    """`wmcore_pull`: one pullWork (global → local queue) or getWork (local queue → WMBS) over a scenario of
    elements, site thresholds and the jobs already at the sites."""

    name = "wmcore_pull"
    candidate_kind = "element"

    def decide(self, scenario: Scenario) -> Decision:
        parsed = parse_pull(scenario.extra, scenario.config)
        rules = PullRules.from_config(scenario.config)
        slots = free_slots(parsed.sites, step=parsed.step, rules=rules)
        pull = match_work(
            parsed.elements,
            slots,
            parsed.site_jobs,
            seed=scenario.seed,
            schedd_free=parsed.schedd_free,
            rules=rules,
            team=parsed.team,
            exclude_workflows=parsed.exclude_workflows,
        )
        return pull_decision(
            pull=pull, elements=parsed.elements, slots=slots, step=parsed.step, now=scenario.now, seed=scenario.seed
        )

    def frame(self, scenario: Scenario):
        return None


# --- the other way: what a live pull decided on, as a scenario file (issue 34: replay) ---------------------------


def _locations_data(locations: Mapping[str, tuple[str, ...]]) -> dict[str, list[str]]:
    return {block: list(sites) for block, sites in locations.items()}


def element_data(element: Element) -> dict[str, Any]:
    """An element in WMCore's keys, as parse_element reads it back to the same Element."""
    data: dict[str, Any] = {
        "id": element.id,
        "RequestName": element.request,
        "Priority": element.priority,
        "CreationTime": element.created,
        "Jobs": element.jobs,
        "Inputs": _locations_data(element.inputs),
        "ParentData": _locations_data(element.parents),
        "PileupData": _locations_data(element.pileup),
        "SiteWhitelist": list(element.whitelist),
        "SiteBlacklist": list(element.blacklist),
        "NoInputUpdate": element.trust_sitelists,
        "NoPileupUpdate": element.trust_pileup_sitelists,
        "blowupFactor": element.blowup,
        "TeamName": element.team,
    }
    if element.parent_flag is not None:
        data["ParentFlag"] = element.parent_flag
    return data


def site_resources_data(sites: Iterable[SiteResources]) -> dict[str, dict[str, Any]]:
    """`site_thresholds` as parse_site_resources reads it back."""
    return {
        site.name: {
            "state": site.state,
            "pendingSlots": site.pending_slots,
            "runningSlots": site.running_slots,
            "runningJobs": site.running_jobs,
        }
        for site in sites
    }


def site_jobs_data(site_jobs: Mapping[str, Mapping[float, int]]) -> dict[str, dict[str, int]]:
    """`site_jobs` as parse_site_jobs reads it back (priorities as keys: repr keeps every digit of a float)."""
    return {site: {repr(float(priority)): jobs for priority, jobs in by.items()} for site, by in site_jobs.items()}
