"""Benchmark of WMCore's work-queue match (seed 004): 100,000 Available elements against 500 sites — the match
alone (the engine), the match with its Decision and stored trace, and a whole pullWork over the database (read
the elements, match, move the taken ones, write changed reasons, store the decision): first by a worker with no
snapshot, then a minute later, again and again (the incremental pull, issue 19). Goals: the match ≤ 1 s, and a
pull a minute later ≤ 1 s median. The database rows are removed afterwards."""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.db.models import F

from brokerage.engine import trace_encode
from brokerage.engine.wmcore.elements import Element
from brokerage.engine.wmcore.matching import Slots, match_work
from brokerage.engine.wmcore.plugin import pull_decision
from brokerage.models import (
    BrokerageCycle,
    DecisionTrace,
    WMCoreElement,
    WMCoreQueue,
    WMCoreRequest,
    WMCoreSite,
)
from brokerage.services.wmcore import work_pull
from brokerage.services.wmcore.snapshot import element_snapshot, element_snapshots_forget

from .runner import Row, benchmark, percentile, time_calls

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


def _database_rows(*, elements: int, sites: int, repeat: int) -> list[Row]:
    _cleanup()
    try:
        local = _populate(elements=elements, sites=sites)
        params = {"elements": elements, "sites": sites, "database": connection.vendor}
        return [_first_pull_row(local, params=params), _steady_row(local, params=params, repeat=repeat)]
    finally:
        _cleanup()


def _timed_pull(local: WMCoreQueue, *, minute: int) -> tuple[float, dict]:
    start = time.perf_counter()
    result = work_pull(queue_id=local.pk, now=NOW + timedelta(minutes=minute), seed=minute)
    return (time.perf_counter() - start) * 1000, result


def _first_pull_row(local: WMCoreQueue, *, params: dict) -> Row:
    """The worst case: a worker with no snapshot, every element new to it, thousands taken (each moved with its
    status-log row) and every element's reason written."""
    element_snapshots_forget()
    elapsed, result = _timed_pull(local, minute=0)
    return {
        "bench": "wmcore",
        "params": {"measure": "pullWork over the database, first pull", **params},
        "median_ms": round(elapsed, 1),
        "p95_ms": round(elapsed, 1),
        "n": 1,
        "pulled": result["pulled"],
        "read": element_snapshot(queue_id=local.parent_id).last_read,
    }


def _steady_row(local: WMCoreQueue, *, params: dict, repeat: int) -> Row:
    """An agent's pull a minute later, again and again: each minute a new request of 50 elements arrives and 10
    sites get 300 more running slots; the elements already taken count at their sites. The pull reads the rows
    that changed, matches every Available element, writes the reasons that changed and stores its trace as the
    change against the previous pull's (a whole trace every KEYFRAME_EVERY pulls: that pull is the p95)."""
    rng = random.Random(5)
    names = list(WMCoreSite.objects.filter(queue=local).values_list("name", flat=True))
    samples, pulled, read, trace_kb = [], [], [], []
    for minute in range(1, repeat + 1):
        _arrive(local.parent, request=f"{PREFIX}-new{minute}", sites=names, rng=rng, minute=minute)
        WMCoreSite.objects.filter(queue=local, name__in=rng.sample(names, 10)).update(
            running_slots=F("running_slots") + 300
        )
        elapsed, result = _timed_pull(local, minute=minute)
        samples.append(elapsed)
        pulled.append(result["pulled"])
        read.append(element_snapshot(queue_id=local.parent_id).last_read)
        trace_kb.append(len(DecisionTrace.objects.get(decision_id=result["decision"]).trace) / 1024)
    return {
        "bench": "wmcore",
        "params": {"measure": "pullWork over the database, a minute later", **params},
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(percentile(samples, 0.95), 1),
        "n": repeat,
        "pulled_median": statistics.median_low(pulled),
        "read_median": statistics.median_low(read),
        "trace_kb_median": round(statistics.median(trace_kb), 1),
        "goal_ms": 1000,
    }


def _arrive(global_queue: WMCoreQueue, *, request: str, sites: list[str], rng: random.Random, minute: int) -> None:
    """A new request of 50 block elements, whitelisted at 20 sites, at a random priority level."""
    new = WMCoreRequest.objects.create(RequestName=request, RequestStatus="acquired", Team="bench")
    whitelist = rng.sample(sites, 20)
    priority = float(rng.choice(PRIORITIES))
    WMCoreElement.objects.bulk_create(
        WMCoreElement(
            queue=global_queue,
            database="queue",
            element_id=f"{request}-{block}",
            request=new,
            Status="Available",
            Priority=priority,
            Jobs=rng.randint(1, 200),
            Inputs={f"/Bench/{request}#{block}": rng.sample(whitelist, 2)},
            SiteWhitelist=whitelist,
            CreationTime=NOW + timedelta(minutes=minute, seconds=block),
        )
        for block in range(50)
    )


@benchmark("wmcore")
def wmcore(*, quick: bool = False) -> list[Row]:
    """The match of 100,000 Available elements against 500 sites, and a whole pullWork over the database."""
    elements, sites, repeat = (5_000, 50, 3) if quick else (100_000, 500, 9)
    rows = _engine_rows(elements=elements, sites=sites, repeat=repeat)
    rows += _database_rows(elements=elements, sites=sites, repeat=repeat * 3)
    return rows
