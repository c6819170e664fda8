"""WorkQueue elements and where they may run (seed 004): the site states, an element and its data, the restrictions
that narrow its sites (site white and black lists, the data locations, the trust flags) under the seed and under
today code, and the rules of a pull (PullRules)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
    # Status: only Available elements are work to pull (the availableByPriority view emits no other)
    status: str = "Available"


# WorkQueueElement statuses (WMCore DataStructs/WorkQueueElement.py STATES)
ELEMENT_STATUSES = (
    "Available", "Negotiating", "Acquired", "Running", "Done", "Failed", "Canceled", "CancelRequested",
)  # fmt: skip


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
