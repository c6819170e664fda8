"""Our global-share order (brokerage.shares: hs06_distribution, under_pledge_order) against panda-server 1.0.4's
(tools/peer/shares_driver.py) on generated share trees and HS06 loads: one to three levels, values of 0 beside
others, leaves with no job, parents with jobs of their own, gshares outside the tree, shares exactly at their
pledge and either side of it, a grid executing nothing.

A case agrees when the leaves come in the same order and every leaf's pledge is the same (to 1e-9 relative).
Siblings all of value 0 make the real normalisation divide by zero; ours shares the parent's value evenly
(REFERENCE.md's reading): those cases are counted apart, not compared."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from brokerage.shares import PLEDGED_HS06, ShareNode, hs06_distribution, under_pledge_order
from tools.peer.compare import driver_run


def case_generate(rng: random.Random) -> dict[str, Any]:
    nodes: list[list[Any]] = []
    names = iter(f"share{n}" for n in range(1000))

    def add(parent: str | None, depth: int) -> None:
        for _ in range(rng.randint(1, 4)):
            name = next(names) if rng.random() > 0.1 else f"{next(names)} with spaces"
            nodes.append([name, rng.choice((0, 1, 5, 10, 20, 33, 50, 100)), parent])
            if depth < 3 and rng.random() < 0.35:
                add(name, depth + 1)

    add(None, 1)
    parents = {parent for *_, parent in nodes}
    leaves = [name for name, _, _ in nodes if name not in parents]
    # one row per gshare and group, as the real query's GROUP BY gives them
    loads: dict[tuple[str, str], float] = {}
    for name in leaves + ([rng.choice([n for n, _, _ in nodes])] if rng.random() < 0.2 else []):
        for group in ("executing", "queued", "ignore"):
            if rng.random() < 0.6:
                loads[(name, group)] = rng.choice((0.0, 10.0, 95.5, 1000.0, 12345.0))
    if rng.random() < 0.1:
        loads[("not a share", "executing")] = 500.0
    if rng.random() < 0.05:  # a grid executing nothing
        loads = {key: hs06 for key, hs06 in loads.items() if key[1] != "executing"}
    return {"nodes": nodes, "hs06": [[name, group, hs06] for (name, group), hs06 in loads.items()]}


def zero_siblings(case: dict[str, Any]) -> bool:
    """Whether some parent's children (or the top level) all have value 0."""
    sums: dict[str | None, float] = {}
    for _, value, parent in case["nodes"]:
        sums[parent] = sums.get(parent, 0) + value
    return any(total == 0 for total in sums.values())


def ours(case: dict[str, Any]) -> dict[str, Any]:
    nodes = [ShareNode(name, value, parent) for name, value, parent in case["nodes"]]
    executing: dict[str, float] = {}
    queued: dict[str, float] = {}
    for name, group, hs06 in case["hs06"]:
        target = executing if group == "executing" else queued if group == "queued" else None
        if target is not None:
            target[name] = hs06
    distribution = hs06_distribution(nodes=nodes, executing=executing, queued=queued)
    return {"order": under_pledge_order(nodes=nodes, distribution=distribution), "distribution": distribution}


@dataclass
class SharesComparison:
    seed: int
    agrees: bool | None  # None: not compared (siblings all 0)
    ours: list[str]
    theirs: list[str] | str


def peer_orders(peer, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The real code's answer to each case, from one peer process."""
    return driver_run(peer, "shares_driver.py", cases, timeout=600)


def shares_compare(peer, *, count: int, first_seed: int = 0) -> list[SharesComparison]:
    seeds = range(first_seed, first_seed + count)
    cases = [case_generate(random.Random(seed)) for seed in seeds]
    comparisons = []
    for seed, case, theirs in zip(seeds, cases, peer_orders(peer, cases), strict=True):
        mine = ours(case)
        if zero_siblings(case):
            comparisons.append(SharesComparison(seed, None, mine["order"], theirs.get("error", "")))
            continue
        if "error" in theirs:
            comparisons.append(SharesComparison(seed, False, mine["order"], theirs["error"]))
            continue
        same_pledges = all(
            math.isclose(mine["distribution"][leaf][PLEDGED_HS06], theirs["distribution"][leaf]["pledged"],
                         rel_tol=1e-9, abs_tol=1e-9)
            for leaf in theirs["order"]
        )  # fmt: skip
        comparisons.append(SharesComparison(seed, mine["order"] == theirs["order"] and same_pledges, mine["order"],
                                            theirs["order"]))  # fmt: skip
    return comparisons
