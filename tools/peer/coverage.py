"""Which rules the differential generator exercises, and both ways (issue 33: "a generator that covers every
rule").

For the scenarios of a broker, under a profile, it counts per filter the scenarios where the filter skipped a
candidate and those where a candidate it looked at passed it; per weight factor, the scenarios where the factor
told the kept candidates apart (took two values or more) and those where it did not; per switch of the profile,
the scenarios whose decision changes when that one switch goes back to the seed's value; per situation of
tools/peer/situations.py, the scenarios that got it and kept candidates, and those that kept none. A rule
seen only one way is a rule the comparison with the real code cannot vouch for. Nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from brokerage.engine import run
from brokerage.gdpconfig.profiles import PROFILES

from .compare import BROKERS
from .real_shapes import REAL_SHAPED

# Weight factors that are records of what the weight read, not parts of it (they are in the trace for the shifter)
RECORDS = frozenset(
    {
        "used",
        "running",
        "activated",
        "assigned",
        "starting",
        "defined",
        "queued",
        "availableGB",
        "missingFiles",
        "maxQueueLength",
        "userQueued",
        "bootstrap",
        "originalWeight",
        "newWeight",
        "totalInputGB",
    }
)
# Filters that cannot skip anything under a profile, with why (they are not counted as one-way)
INERT: dict[str, dict[str, str]] = {
    "panda": {
        "queued all": "JOB_CAP_RULE panda checks the caps in one rule, 'queued activated+starting'",
        "nucleus status": "the real code marks every site ACTIVE: the driver refuses a scenario with another state",
        "high priority at nucleus": "HIGH_PRIORITY_NUCLEUS_RULE weight: seed 001's filter, off (docs/decisions.md)",
    }
}
# Situations that cannot keep a candidate under a profile, with why
ONE_OUTCOME: dict[str, dict[str, str]] = {
    "panda": {"nucleus without queues": "NUCLEUS_NEEDS_QUEUE: the real broker stops at a nucleus it does not know"}
}


@dataclass
class Coverage:
    """Counts per rule over the scenarios of one broker under one profile."""

    broker: str
    profile: str
    scenarios: int = 0
    filters: dict[str, list[int]] = field(default_factory=dict)  # name → [skipped some, let some pass]
    factors: dict[str, list[int]] = field(default_factory=dict)  # name → [told candidates apart, did not]
    switches: dict[str, int] = field(default_factory=dict)  # key → scenarios whose decision it changes
    situations: dict[str, list[int]] = field(default_factory=dict)  # name → [kept candidates, kept none]

    def one_way(self) -> dict[str, list[str]]:
        """The rules not seen both ways (switches: never deciding), by kind."""
        inert = INERT.get(self.profile, {})
        return {
            "filters": sorted(
                name for name, (skip, keep) in self.filters.items() if not (skip and keep) and name not in inert
            ),
            "factors": sorted(name for name, (apart, flat) in self.factors.items() if not apart),
            "switches": sorted(key for key, changed in self.switches.items() if not changed),
            "situations": sorted(
                name
                for name, (kept, none) in self.situations.items()
                if not (kept and none) and name not in ONE_OUTCOME.get(self.profile, {})
            ),
        }

    def report(self) -> str:
        lines = [f"{self.broker} brokerage under '{self.profile}', {self.scenarios} scenarios"]
        for title, table in (("filter", self.filters), ("factor", self.factors), ("situation", self.situations)):
            for name, (first, second) in sorted(table.items()):
                lines.append(f"  {title:9} {name:38} {first:5} {second:5}")
        for key, changed in sorted(self.switches.items()):
            lines.append(f"  switch    {key:38} {changed:5}")
        return "\n".join(lines)


def _signature(decision) -> tuple:
    return (
        decision.outcome,
        tuple(sorted((c.name, round(c.weight, 9)) for c in decision.candidates)),
    )


def rule_coverage(
    kind: str,
    seeds: Iterable[int],
    *,
    profile: str = "panda",
    switches: bool = True,
    real_shaped_seeds: Iterable[int] = (),
) -> tuple[Coverage, list[dict[str, Any]]]:
    """The coverage of `kind`'s rules by the generated scenarios of `seeds` under `profile` (module docstring),
    with the real-shaped scenarios of `real_shaped_seeds` (real_shapes.py) after them, and our decisions."""
    plugin, generate = BROKERS[kind]
    coverage = Coverage(kind, profile)
    values = PROFILES[profile].values
    decisions = []
    generated = [generate(seed) for seed in seeds] + [REAL_SHAPED[kind](seed) for seed in real_shaped_seeds]
    for generated_scenario in generated:
        scenario = {**generated_scenario, "plugin": plugin, "profile": profile}
        decision = run(scenario)
        decisions.append(decision)
        coverage.scenarios += 1
        # a filter skipped a candidate: from the skips (the analysis broker's problematic queues are weighed, then
        # skipped at the end, under their own filter's name); let one pass: from its stage
        skipping = {skip.filter for skip in decision.skipped.values()}
        for stage in decision.stages:
            if stage.filter in ("problematic", "best candidates"):
                continue
            counts = coverage.filters.setdefault(stage.filter, [0, 0])
            counts[0] += stage.filter in skipping
            counts[1] += stage.after > 0
        names = {key for candidate in decision.candidates for key in candidate.factors} - RECORDS
        for name in names:
            seen = {repr(candidate.factors.get(name)) for candidate in decision.candidates}
            counts = coverage.factors.setdefault(name, [0, 0])
            counts[0 if len(seen) > 1 else 1] += 1
        for situation in scenario.get("situations", ()):
            counts = coverage.situations.setdefault(situation, [0, 0])
            counts[0 if decision.candidates else 1] += 1
        if switches:
            mine = _signature(decision)
            own = scenario.get("gdpconfig") or {}
            for key in values:
                if key in own:
                    continue
                # the profile's values but this one, which keeps the seed's (an unset default stays unset)
                rest = {k: v for k, v in values.items() if k != key}
                flipped = run({**scenario, "profile": "seed", "gdpconfig": {**rest, **own}})
                coverage.switches[key] = coverage.switches.get(key, 0) + (_signature(flipped) != mine)
    return coverage, decisions
