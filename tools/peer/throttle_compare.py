"""Our job throttler (brokerage.throttle with the service's limit lookup, brokerage.services.jobs) against the real
JobThrottlerBase of panda-server 1.0.4 (tools/peer/throttle_driver.py), on generated cases shaped like a running
work queue's: jobs by status spread over the four resource types, limits set at none, one, two or three levels,
values drawn around the counts they are compared with (exactly at them, one either side, 0), the event service
and the prestaging work queues, names with spaces, work shortage on and off, the priorities of the waiting tasks
and the queued jobs on either side of each other and of the 500 jobs that decide a tie.

A case agrees when both SKIP or both PASS, and on PASS with the same number of jobs (the real float rounded up:
JobGenerator counts it down to ≤ 0), the same lowest priority and the same "not enough jobs queued"."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from brokerage.gdpconfig.registry import ConfigView
from brokerage.services.jobs import throttle_limits
from brokerage.throttle import JobCounts, ThrottleVerdict, job_throttle, resource_family, throttle_threshold
from tools.peer.compare import driver_run

RESOURCE_TYPES = ("SCORE", "MCORE", "SCORE_HIMEM", "MCORE_HIMEM")
WORK_QUEUES = ("MC 16", "Express", "eventservice", "Heavy Ion", "Reprocessing default", "MC_16")
STATUSES = ("running", "assigned", "activated", "starting", "defined", "waiting")
TAGS = ("NQUEUELIMIT", "NQUEUECAP", "NRUNNINGCAP")


def case_generate(rng: random.Random) -> dict[str, Any]:
    """One case in the driver's format; the config keys in JEDI's spelling (the work queue's name as it is)."""
    work_queue = rng.choice(WORK_QUEUES)
    resource = rng.choice(RESOURCE_TYPES)
    scale = rng.choice((0, 10, 300, 2000, 20000))
    stats: dict[str, dict[str, int]] = {}
    for status in STATUSES:
        for rt in RESOURCE_TYPES:
            if rng.random() < 0.6:
                stats.setdefault(status, {})[rt] = rng.randint(0, scale) if scale else 0
    if rng.random() < 0.15:  # a work queue running nothing
        stats.pop("running", None)
    counts = _counts(stats)
    family = sum((n for rt, n in counts.items() if rt.startswith(resource_family(resource))), JobCounts())
    whole = sum(counts.values(), JobCounts())
    config: dict[str, Any] = {}
    for tag in TAGS:
        for _level, suffix, at in (
            ("rt", f"_{resource}", counts.get(resource, JobCounts())),
            ("ms", f"_{'MCORE' if resource.startswith('MCORE') else 'SCORE'}*", family),
            ("gs", "", whole),
        ):
            if rng.random() < 0.3:
                near = at.running if tag == "NRUNNINGCAP" else at.queued + at.defined
                config[f"{tag}_{work_queue}{suffix}"] = max(0, rng.choice((0, near, near - 1, near + 1, near * 2, 500)))
    if rng.random() < 0.3:
        config["THROTTLE_THRESHOLD"] = rng.choice((1.0, 1.5, 3.0))
    work_shortage = rng.random() < 0.2
    if work_shortage and rng.random() < 0.5:
        config["THROTTLE_THRESHOLD_FOR_WORK_SHORTAGE"] = rng.choice((1.0, 4.0))
    top_priority = rng.choice((0, 400, 500, 900))
    return {
        "work_queue": work_queue,
        "resource_type": resource,
        "throttled": rng.random() > 0.05,
        "prod_source_label": "user" if rng.random() < 0.15 else "managed",
        "work_shortage": work_shortage,
        "stats": stats,
        "config": config,
        "queued_top": {"priority": top_priority, "jobs": rng.choice((0, 10, 499, 500, 3000))} if top_priority else {},
        "highest_waiting": rng.choice((0, 400, 500, 900, 1000)),
        "total_walltime": rng.choice((None, None, 1000, 50_000_000, 60_000_000)),
    }


def _counts(stats: dict[str, dict[str, int]]) -> dict[str, JobCounts]:
    by_type: dict[str, dict[str, int]] = {}
    for status, per_type in stats.items():
        for rt, n in per_type.items():
            by_type.setdefault(rt, {})[status] = n
    return {rt: JobCounts.from_statuses(by_status) for rt, by_status in by_type.items()}


def ours(case: dict[str, Any]) -> ThrottleVerdict:
    """Our verdict on a case, through the same lookup and counting the cycle uses."""
    our_name = "_".join(case["work_queue"].split(" "))
    rows = {("WORK_SHORTAGE", ""): case["work_shortage"]}
    for key, value in case["config"].items():
        rows[(key.replace(case["work_queue"], our_name, 1), "")] = value
    view = ConfigView(rows)
    counts = _counts(case["stats"])
    resource = case["resource_type"]
    top = case.get("queued_top") or {}
    return job_throttle(
        work_queue=case["work_queue"],
        throttled=case["throttled"],
        resource=counts.get(resource, JobCounts()),
        family=sum((n for rt, n in counts.items() if rt.startswith(resource_family(resource))), JobCounts()),
        whole_queue=sum(counts.values(), JobCounts()),
        limits=throttle_limits(
            config=view, work_queue=our_name, resource_type=resource, threshold=throttle_threshold(config=view)
        ),
        highest_waiting_priority=case["highest_waiting"],
        highest_queued_priority=top.get("priority"),
        queued_at_highest_priority=top.get("jobs", 0),
        total_walltime=case["total_walltime"],
        analysis=case["prod_source_label"] == "user",
    )


@dataclass
class ThrottleComparison:
    seed: int
    agrees: bool
    ours: str
    theirs: str


def agreement(verdict: ThrottleVerdict, theirs: dict[str, Any]) -> bool:
    if "error" in theirs:
        return False
    if not verdict.passed:
        return theirs["throttled"] not in (False, None)
    if theirs["throttled"] not in (False, None):
        return False
    real_jobs = None if theirs["max_jobs"] is None else math.ceil(theirs["max_jobs"])
    return (
        verdict.max_jobs == real_jobs
        and verdict.min_priority == theirs["min_priority"]
        and verdict.rule.startswith("not_enough_queued") == theirs["lack_of_jobs"]
    )


def peer_throttles(peer, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The real throttler's answer to each case, from one peer process."""
    return driver_run(peer, "throttle_driver.py", cases, timeout=600)


def throttle_compare(peer, *, count: int, first_seed: int = 0) -> list[ThrottleComparison]:
    """`count` generated cases (seeds first_seed…), each decided by ours and by the real throttler."""
    cases = [case_generate(random.Random(seed)) for seed in range(first_seed, first_seed + count)]
    comparisons = []
    for seed, case, theirs in zip(
        range(first_seed, first_seed + count), cases, peer_throttles(peer, cases), strict=True
    ):
        verdict = ours(case)
        real = theirs.get("error") or (theirs.get("lines") or ["?"])[-1]
        comparisons.append(ThrottleComparison(seed, agreement(verdict, theirs), verdict.message, real))
    return comparisons
