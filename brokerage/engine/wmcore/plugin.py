"""The `wmcore_pull` plugin: one pull explained as a Decision, each site an element could not go to with the
restriction or the full slots that stopped it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from brokerage.engine.core.decision import Candidate, Decision, Skip, Stage
from brokerage.engine.core.plugin import Plugin
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.wmcore.elements import Element, PullRules
from brokerage.engine.wmcore.matching import Pull, Slots, free_slots, match_work
from brokerage.engine.wmcore.scenario import parse_pull


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
