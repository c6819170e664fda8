"""Benchmark of WMCore's work-queue match (seed 004): 100,000 Available elements against 500 sites — the match
alone (the engine), the match with its Decision and stored trace, and a whole pullWork over the database (read
the elements, match, move the taken ones, write every element's reason, store the decision). Goal: the match
≤ 1 s. The database rows are removed afterwards."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

from brokerage.engine import trace_encode
from brokerage.engine.plugins.wmcore_pull import Element, Slots, match_work, pull_decision
from brokerage.models import BrokerageCycle, WMCoreElement, WMCoreQueue, WMCoreRequest, WMCoreSite
from brokerage.services.wmcore import work_pull

from .runner import Row, benchmark, time_calls

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
PREFIX = "bench-wmcore"
PRIORITIES = (50000, 80000, 85000, 90000, 100000, 110000, 150000, 200000, 300000, 400000)


def _sites(count: int) -> list[str]:
    tiers = ("T1", "T2", "T2", "T3")
    return [f"{tiers[i % 4]}_XX_Bench{i:03d}" for i in range(count)]


def synthetic_work(*, elements: int, sites: int, seed: int) -> tuple[list[Element], dict, dict]:
    """Requests of 50 elements each with a whitelist of 5–60 sites (a tenth with none), each element one block at
    1–3 sites (some outside the whitelist), pileup for a fifth of the requests, trust flags for a tenth; ten
    priority levels; every site with a threshold of 500–5,000 slots and jobs already there at random levels."""
    rng = random.Random(seed)
    names = _sites(sites)
    work = []
    for request in range(elements // 50 + 1):
        whitelist = () if rng.random() < 0.1 else tuple(rng.sample(names, min(len(names), rng.randint(5, 60))))
        pool = whitelist or names
        priority = float(rng.choice(PRIORITIES))
        pileup = {f"/PU/{request}": tuple(rng.sample(names, min(len(names), 40)))} if rng.random() < 0.2 else {}
        trust = rng.random() < 0.1
        for block in range(50):
            if len(work) == elements:
                break
            holders = (*rng.sample(pool, min(len(pool), rng.randint(1, 2))), rng.choice(names))
            work.append(
                Element(
                    id=f"{request}-{block}",
                    priority=priority,
                    created=request * 60.0 + block,
                    jobs=rng.randint(1, 200),
                    inputs={f"/Bench/R{request}#{block}": holders},
                    pileup=pileup,
                    whitelist=whitelist,
                    trust_sitelists=trust,
                    request=f"req{request}",
                )
            )
    thresholds = {name: float(rng.randint(500, 5000)) for name in names}
    site_jobs = {name: {float(rng.choice(PRIORITIES)): rng.randint(0, 3000)} for name in names}
    return work, thresholds, site_jobs


def _engine_rows(*, elements: int, sites: int, repeat: int) -> list[Row]:
    work, thresholds, site_jobs = synthetic_work(elements=elements, sites=sites, seed=11)
    slots = Slots(thresholds)
    result = match_work(work, slots, site_jobs, seed=1)
    params = {"elements": elements, "sites": sites}

    def decide() -> bytes:
        pull = match_work(work, slots, site_jobs, seed=1)
        decision = pull_decision(pull=pull, elements=work, slots=slots, step="pullWork", now=NOW, seed=1)
        return trace_encode(decision)

    codes: dict[str, int] = {}
    for code, _ in result.rejected.values():
        codes[code] = codes.get(code, 0) + 1
    return [
        {
            "bench": "wmcore",
            "params": {"measure": "match (engine)", **params},
            **time_calls(lambda: match_work(work, slots, site_jobs, seed=1), repeat=repeat, warmup=1),
            "taken": len(result.taken),
            "left": codes,
            "goal_ms": 1000,
        },
        {
            "bench": "wmcore",
            "params": {"measure": "match + decision + trace", **params},
            **time_calls(decide, repeat=max(3, repeat // 2), warmup=1),
            "trace_kb": round(len(decide()) / 1024, 1),
        },
    ]


def _cleanup() -> None:
    WMCoreElement.objects.filter(request__RequestName__startswith=PREFIX).delete()
    WMCoreRequest.objects.filter(RequestName__startswith=PREFIX).delete()
    WMCoreSite.objects.filter(queue__name__startswith=PREFIX).delete()
    WMCoreQueue.objects.filter(name__startswith=PREFIX, kind="local").delete()
    WMCoreQueue.objects.filter(name__startswith=PREFIX).delete()
    BrokerageCycle.objects.filter(plugin="wmcore_pull", gdpconfig__queue__startswith=PREFIX).delete()


def _populate(*, elements: int, sites: int) -> WMCoreQueue:
    work, thresholds, _ = synthetic_work(elements=elements, sites=sites, seed=11)
    with transaction.atomic():
        global_queue = WMCoreQueue.objects.create(name=f"{PREFIX}-global", kind="global")
        local = WMCoreQueue.objects.create(name=f"{PREFIX}-agent", kind="local", parent=global_queue)
        WMCoreSite.objects.bulk_create(
            WMCoreSite(
                queue=local, name=name, pending_slots=int(slots) // 3, running_slots=int(slots) - int(slots) // 3
            )
            for name, slots in thresholds.items()
        )
        requests = {}
        for element in work:
            if element.request not in requests:
                requests[element.request] = WMCoreRequest(
                    RequestName=f"{PREFIX}-{element.request}", RequestStatus="acquired", Team="bench"
                )
        WMCoreRequest.objects.bulk_create(requests.values(), batch_size=2000)
        ids = dict(WMCoreRequest.objects.filter(RequestName__startswith=PREFIX).values_list("RequestName", "pk"))
        WMCoreElement.objects.bulk_create(
            (
                WMCoreElement(
                    queue=global_queue,
                    database="queue",
                    element_id=f"{PREFIX}-{element.id}",
                    request_id=ids[f"{PREFIX}-{element.request}"],
                    Status="Available",
                    Priority=element.priority,
                    Jobs=element.jobs,
                    Inputs={k: list(v) for k, v in element.inputs.items()},
                    PileupData={k: list(v) for k, v in element.pileup.items()},
                    SiteWhitelist=list(element.whitelist),
                    NoInputUpdate=element.trust_sitelists,
                    CreationTime=NOW - timedelta(days=1, seconds=-element.created),
                )
                for element in work
            ),
            batch_size=5000,
        )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE wmcore_elements")
    return local


def _database_row(*, elements: int, sites: int, repeat: int) -> Row:
    _cleanup()
    try:
        local = _populate(elements=elements, sites=sites)
        samples, pulled = [], 0
        for round_number in range(repeat):
            start = time.perf_counter()
            result = work_pull(queue_id=local.pk, now=NOW + timedelta(minutes=round_number), seed=round_number)
            samples.append((time.perf_counter() - start) * 1000)
            pulled = result["pulled"]
            # put the taken elements back for the next round (a benchmark's shortcut, not a service)
            WMCoreElement.objects.filter(queue=local.parent, Status="Negotiating").update(
                Status="Available", ChildQueue=None, site=""
            )
        samples.sort()
        return {
            "bench": "wmcore",
            "params": {
                "measure": "pullWork over the database",
                "elements": elements,
                "sites": sites,
                "database": connection.vendor,
            },
            "median_ms": round(samples[len(samples) // 2], 1),
            "p95_ms": round(samples[-1], 1),
            "n": repeat,
            "pulled": pulled,
        }
    finally:
        _cleanup()


@benchmark("wmcore")
def wmcore(*, quick: bool = False) -> list[Row]:
    """The match of 100,000 Available elements against 500 sites, and a whole pullWork over the database."""
    elements, sites, repeat = (5_000, 50, 3) if quick else (100_000, 500, 9)
    rows = _engine_rows(elements=elements, sites=sites, repeat=repeat)
    rows.append(_database_row(elements=elements, sites=sites, repeat=3))
    return rows
