"""Runs our engine and the real PanDA brokers on the same scenarios and compares the decisions.

A scenario agrees when both keep the same candidates (unified queue names for the job broker; nuclei for the task
broker) and
  job:        their weights agree within `tolerance` (relative);
  task, anal: each candidate's share of the total weight agrees within `tolerance` (the two sides weigh in
              different units, and the draw probabilities are what matter);
or both keep nothing. Nothing here imports Django.
"""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokerage.engine import default_registry, parse_scenario, run

from .scenarios import anal_scenario, job_scenario, task_scenario
from .setup import HERE, Peer

BROKERS: dict[str, tuple[str, Callable[[int], dict[str, Any]]]] = {
    "job": ("atlas_prod_job", job_scenario),
    "task": ("atlas_prod_task", task_scenario),
    "anal": ("atlas_anal_job", anal_scenario),
}


@dataclass
class Comparison:
    """One scenario side by side."""

    seed: int
    agrees: bool
    ours: dict[str, float]
    theirs: dict[str, float]
    note: str = ""
    peer_error: str = ""
    refused: str = ""  # the driver could not hand the real code a field (panda_fields.refusal): not compared
    our_seconds: float = 0.0  # parse and decision
    our_decide_seconds: float = 0.0  # the decision alone, over the parsed scenario (timed runs only)
    their_seconds: float = 0.0


@dataclass
class Report:
    broker: str
    profile: str
    comparisons: list[Comparison] = field(default_factory=list)

    @property
    def agreeing(self) -> int:
        return sum(1 for c in self.comparisons if c.agrees)

    def summary(self) -> str:
        return (
            f"{self.broker} brokerage under '{self.profile}': {self.agreeing}/{len(self.comparisons)} scenarios agree "
            "with panda-server 1.0.4"
        )


def _shares(weights: dict[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {name: (value / total if total > 0 else 0.0) for name, value in weights.items()}


def compare_one(kind: str, seed: int, ours: dict[str, float], theirs: dict[str, float], tolerance: float) -> Comparison:
    a, b = (ours, theirs) if kind == "job" else (_shares(ours), _shares(theirs))
    same_set = set(ours) == set(theirs)
    different = sorted(n for n in set(a) & set(b) if not math.isclose(a[n], b[n], rel_tol=tolerance, abs_tol=1e-12))
    note = ""
    if not same_set or different:
        note = (
            f"only ours {sorted(set(ours) - set(theirs))[:5]}, only theirs {sorted(set(theirs) - set(ours))[:5]}, "
            f"{'weights' if kind == 'job' else 'shares'} differ at "
            + ", ".join(f"{n} ({a[n]:.6g} vs {b[n]:.6g})" for n in different[:4])
        )
    return Comparison(seed, same_set and not different, ours, theirs, note)


def peer_decisions(peer: Peer, kind: str, scenarios: list[dict[str, Any]], *, repeat: int = 1) -> list[dict[str, Any]]:
    """The real broker's result for each scenario, from one peer process (each brokered `repeat` times, the
    fastest run timed)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(scenarios, handle)
        path = handle.name
    try:
        result = subprocess.run(
            [str(peer.python), str(HERE / "panda_driver.py"), kind, path, str(repeat)],
            capture_output=True,
            text=True,
            env=peer.environment(),
            timeout=1800,
        )
    finally:
        Path(path).unlink(missing_ok=True)
    if result.returncode != 0:
        raise RuntimeError(f"the peer driver failed: {result.stderr.strip()[-1500:]}")
    return json.loads(result.stdout)


def compare(
    peer: Peer,
    kind: str,
    seeds: list[int],
    *,
    profile: str = "panda",
    tolerance: float = 1e-6,
    repeat: int = 1,
    scenarios: list[dict[str, Any]] | None = None,
) -> tuple[Report, list[dict[str, Any]]]:
    """Our decisions under `profile` against the real broker's on the generated scenarios of `seeds` (or the
    `scenarios` given, one per seed). With `repeat` > 1 both sides broker each scenario that many times and the
    fastest run of each is timed: ours with the parse of the scenario, theirs doBrokerage alone (the driver builds its
    inputs before the clock starts)."""
    plugin, generate = BROKERS[kind]
    if scenarios is None:
        scenarios = [generate(seed) for seed in seeds]
    theirs_all = peer_decisions(peer, kind, scenarios, repeat=repeat)
    report = Report(kind, profile)
    registry = default_registry()
    for seed, scenario, theirs in zip(seeds, scenarios, theirs_all, strict=True):
        data = {**scenario, "plugin": plugin, "profile": profile}
        seconds = decide_seconds = math.inf
        for _ in range(max(repeat, 1)):
            started = time.perf_counter()
            decision = run(data)
            seconds = min(seconds, time.perf_counter() - started)
        if repeat > 1:  # the decision alone, over a scenario parsed before the clock starts (as theirs is timed)
            parsed, plugin_class = parse_scenario(data), registry.get(plugin)
            for _ in range(repeat):
                started = time.perf_counter()
                plugin_class().decide(parsed)
                decide_seconds = min(decide_seconds, time.perf_counter() - started)
        ours: dict[str, float] = {}
        for candidate in decision.candidates:  # pseudo-queues count as their unified queue, at their best
            queue = candidate.name.split("/")[0]
            ours[queue] = max(ours.get(queue, candidate.weight), candidate.weight)
        if "refused" in theirs:
            comparison = Comparison(seed, False, ours, {}, "refused by the driver", refused=theirs["refused"])
        elif "error" in theirs:
            comparison = Comparison(seed, False, ours, {}, "the real code raised", peer_error=theirs["error"])
        else:
            comparison = compare_one(kind, seed, ours, theirs["candidates"], tolerance)
            comparison.their_seconds = theirs.get("seconds", 0.0)
        comparison.our_seconds = seconds
        comparison.our_decide_seconds = decide_seconds if repeat > 1 else 0.0
        report.comparisons.append(comparison)
    return report, theirs_all
