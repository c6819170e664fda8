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


def driver_run(
    peer: Peer, driver: str, items: list[dict[str, Any]], *args: str, timeout: int = 1800, log: bool = False
) -> list:
    """Runs one of our drivers of the real code (tools/peer/<driver>) in the peer's environment on `items`, written
    to a file it reads (the first of `args` goes before the file, the driver's kind, the rest after); its JSON
    answer, one per item (with `log`, each with the lines the real code logged). A driver that fails is a
    RuntimeError with its stderr."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(items, handle)
        path = handle.name
    try:
        result = subprocess.run(
            [str(peer.python), str(HERE / driver), *args[:1], path, *args[1:]],
            capture_output=True,
            text=True,
            env={**peer.environment(), **({"PEER_LOG": "1"} if log else {})},
            timeout=timeout,
        )
    finally:
        Path(path).unlink(missing_ok=True)
    if result.returncode != 0:
        raise RuntimeError(f"the peer driver {driver} failed: {result.stderr.strip()[-1500:]}")
    return json.loads(result.stdout)


def peer_decisions(
    peer: Peer, kind: str, scenarios: list[dict[str, Any]], *, repeat: int = 1, log: bool = False
) -> list[dict[str, Any]]:
    """The real broker's result for each scenario, from one peer process (each brokered `repeat` times in a row,
    the fastest run timed; with `log`, the lines it logged)."""
    return driver_run(peer, "panda_driver.py", scenarios, kind, str(repeat), log=log)


def compare(
    peer: Peer,
    kind: str,
    seeds: list[int],
    *,
    profile: str = "panda",
    tolerance: float = 1e-6,
    repeat: int = 1,
    turns: int = 1,
    scenarios: list[dict[str, Any]] | None = None,
) -> tuple[Report, list[dict[str, Any]]]:
    """Our decisions under `profile` against the real broker's on the generated scenarios of `seeds` (or the
    `scenarios` given, one per seed). With `repeat` > 1 both sides broker each scenario that many times in a row
    and the fastest run of each is timed: ours with the parse of the scenario, theirs doBrokerage alone (the
    driver builds its inputs before the clock starts). With `turns` > 1 the sides take turns that many times
    (theirs over every scenario, then ours) and the fastest run of all counts: a slow minute of a shared machine
    then falls on both sides instead of on one."""
    plugin, generate = BROKERS[kind]
    if scenarios is None:
        scenarios = [generate(seed) for seed in seeds]
    datas = [{**scenario, "plugin": plugin, "profile": profile} for scenario in scenarios]
    registry = default_registry()
    theirs_all: list[dict[str, Any]] = []
    decisions: list[Any] = [None] * len(datas)
    seconds = [math.inf] * len(datas)
    decide_seconds = [math.inf] * len(datas)
    their_seconds = [math.inf] * len(datas)
    for turn in range(max(turns, 1)):
        theirs_turn = peer_decisions(peer, kind, scenarios, repeat=repeat)
        if turn == 0:
            theirs_all = theirs_turn
        for index, (data, theirs) in enumerate(zip(datas, theirs_turn, strict=True)):
            if theirs.get("seconds"):
                their_seconds[index] = min(their_seconds[index], theirs["seconds"])
            for _ in range(max(repeat, 1)):
                started = time.perf_counter()
                decision = run(data)
                seconds[index] = min(seconds[index], time.perf_counter() - started)
            if decisions[index] is None:
                decisions[index] = decision
            if repeat > 1:  # the decision alone, over a scenario parsed before the clock starts (as theirs is timed)
                parsed, plugin_class = parse_scenario(data), registry.get(plugin)
                for _ in range(repeat):
                    started = time.perf_counter()
                    plugin_class().decide(parsed)
                    decide_seconds[index] = min(decide_seconds[index], time.perf_counter() - started)
    report = Report(kind, profile)
    for index, (seed, theirs) in enumerate(zip(seeds, theirs_all, strict=True)):
        ours: dict[str, float] = {}
        for candidate in decisions[index].candidates:  # pseudo-queues count as their unified queue, at their best
            queue = candidate.name.split("/")[0]
            ours[queue] = max(ours.get(queue, candidate.weight), candidate.weight)
        if "refused" in theirs:
            comparison = Comparison(seed, False, ours, {}, "refused by the driver", refused=theirs["refused"])
        elif "error" in theirs:
            comparison = Comparison(seed, False, ours, {}, "the real code raised", peer_error=theirs["error"])
        else:
            comparison = compare_one(kind, seed, ours, theirs["candidates"], tolerance)
            comparison.their_seconds = their_seconds[index] if math.isfinite(their_seconds[index]) else 0.0
        comparison.our_seconds = seconds[index]
        comparison.our_decide_seconds = decide_seconds[index] if repeat > 1 else 0.0
        report.comparisons.append(comparison)
    return report, theirs_all
