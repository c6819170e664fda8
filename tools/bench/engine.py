"""Benchmarks of the brokerage engine and of stored decision traces."""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

from django.db import connection, transaction
from django.utils import timezone

from brokerage.engine import parse_scenario, trace_encode
from brokerage.engine.panda.analysis_broker import AtlasAnalJobBroker
from brokerage.engine.panda.job_broker import AtlasProdJobBroker
from brokerage.engine.panda.synthetic import (
    analysis_brokerage_scenario,
    job_brokerage_scenario,
    task_brokerage_scenario,
)
from brokerage.engine.panda.task_broker import AtlasProdTaskBroker
from brokerage.models import DecisionTrace
from brokerage.services.decisions import DecisionToStore, cycle_start, decision_store_many

from .runner import Row, benchmark, time_calls


@benchmark("task-broker")
def task_broker(*, quick: bool = False) -> list[Row]:
    """Time per task decision (atlas_prod_task) for 10, 50 and 200 nuclei, scenario already parsed."""
    rows = []
    for nuclei in (10, 50, 200):
        scenario = parse_scenario(task_brokerage_scenario(nuclei=nuclei, seed=nuclei))
        broker = AtlasProdTaskBroker()
        figures = time_calls(lambda s=scenario, b=broker: b.decide(s), repeat=20 if quick else 500)
        parse = time_calls(
            lambda n=nuclei: parse_scenario(task_brokerage_scenario(nuclei=n, seed=n)), repeat=5 if quick else 50
        )
        rows.append(
            {
                "bench": "task-broker",
                "params": {"nuclei": nuclei},
                **figures,
                "build_and_parse_median_ms": parse["median_ms"],
            }
        )
    # panda: the job check runs job brokerage over the nuclei's queues (the job-broker grid of 1,000 queues at 20
    # nuclei, its task without a nucleus); the snapshot's arrays are built by the first decision, as in a cycle
    data = job_brokerage_scenario(queues=1000, seed=1000)
    data["task"].pop("nucleus", None)
    scenario = parse_scenario({**data, "plugin": "atlas_prod_task", "profile": "panda"})
    broker = AtlasProdTaskBroker()
    start = time.perf_counter()
    broker.decide(scenario)
    cold_ms = (time.perf_counter() - start) * 1000.0
    figures = time_calls(lambda: broker.decide(scenario), repeat=20 if quick else 300)
    rows.append(
        {
            "bench": "task-broker",
            "params": {"nuclei": 20, "queues": 1000, "profile": "panda"},
            **figures,
            "cold_first_ms": round(cold_ms, 3),
        }
    )
    return rows


# The profiles that decide ATLAS brokerage; the DIRAC and WMCore ones leave it as under `seed`.
PANDA_PROFILES = ("seed", "panda")


@benchmark("job-broker")
def job_broker(*, quick: bool = False) -> list[Row]:
    """Time per job-set decision (atlas_prod_job) for 100, 1,000 and 10,000 queues with a warm snapshot, under
    the profiles that change it (seed, panda): the snapshot is parsed and its per-queue arrays built once
    (`cold_first_ms`), then job sets of varying size are brokered over it, as in a cycle."""
    rows = []
    for profile in PANDA_PROFILES:
        for queues in (100, 1000, 10000):
            scenario = parse_scenario({**job_brokerage_scenario(queues=queues, seed=queues), "profile": profile})
            broker = AtlasProdJobBroker()
            start = time.perf_counter()
            broker.decide(scenario)
            cold_ms = (time.perf_counter() - start) * 1000.0
            variants = [
                replace(scenario, jobs=replace(scenario.jobs, nEvents=n, inputSizeMB=n * 4)) for n in (200, 1000, 5000)
            ]
            counter = iter(range(10**9))
            figures = time_calls(
                lambda v=variants, c=counter, b=broker: b.decide(v[next(c) % len(v)]), repeat=20 if quick else 300
            )
            rows.append(
                {
                    "bench": "job-broker",
                    "params": {"queues": queues, "profile": profile},
                    **figures,
                    "cold_first_ms": round(cold_ms, 3),
                }
            )
    return rows


@benchmark("anal-broker")
def anal_broker(*, quick: bool = False) -> list[Row]:
    """Time per analysis decision (atlas_anal_job) at 1,000 queues with a warm snapshot; the figure the issue
    asks for is `median_us`."""
    scenario = parse_scenario(analysis_brokerage_scenario(queues=1000, seed=1000))
    broker = AtlasAnalJobBroker()
    start = time.perf_counter()
    broker.decide(scenario)
    cold_ms = (time.perf_counter() - start) * 1000.0
    variants = [
        replace(scenario, jobs=replace(scenario.jobs, nEvents=n, nJobs=j))
        for n, j in ((200, 1), (1000, 10), (5000, 100))
    ]
    counter = iter(range(10**9))
    figures = time_calls(lambda: broker.decide(variants[next(counter) % len(variants)]), repeat=20 if quick else 300)
    return [
        {
            "bench": "anal-broker",
            "params": {"queues": 1000},
            **figures,
            "median_us": round(figures["median_ms"] * 1000, 1),
            "cold_first_ms": round(cold_ms, 3),
        }
    ]


@benchmark("trace-size")
def trace_size(*, quick: bool = False) -> list[Row]:
    """Bytes per stored decision with 100 and 1,000 candidates: one cycle over one grid snapshot and many
    tasks, as a live cycle stores them (the cycle's frame once, then each decision's trace). Measured in the
    configured database (run it through scripts/with_postgres.sh for PostgreSQL), in a transaction that is
    rolled back so nothing is left behind."""
    rows = []
    decisions_per_cycle = 10 if quick else 100
    for candidates in (100, 1000):
        broker = AtlasProdTaskBroker()
        scenarios = [
            parse_scenario(task_brokerage_scenario(nuclei=candidates, seed=candidates, task_seed=task))
            for task in range(decisions_per_cycle)
        ]
        frame = broker.frame(scenarios[0])
        engine_decisions = [broker.decide(scenario) for scenario in scenarios]
        with transaction.atomic():
            cycle = cycle_start(plugin=broker.name, now=timezone.now(), frame=frame)
            start = time.perf_counter()
            stored = decision_store_many(cycle=cycle, items=[DecisionToStore(d) for d in engine_decisions], frame=frame)
            elapsed_ms = (time.perf_counter() - start) * 1000.0
            ids = [row.pk for row in stored]
            trace_bytes = [
                len(bytes(b)) for b in DecisionTrace.objects.filter(decision_id__in=ids).values_list("trace", flat=True)
            ]
            row_bytes = _row_sizes(ids)
            transaction.set_rollback(True)
        frame_bytes = len(frame.encode())
        per_decision = elapsed_ms / len(engine_decisions)
        rows.append(
            {
                "bench": "trace-size",
                "params": {"candidates": candidates, "database": connection.vendor},
                "median_ms": round(per_decision, 4),
                "p95_ms": round(per_decision, 4),
                "n": len(engine_decisions),
                "trace_bytes_mean": round(statistics.mean(trace_bytes), 1),
                "trace_bytes_max": max(trace_bytes),
                "row_bytes_mean": round(statistics.mean(row_bytes), 1) if row_bytes else None,
                "frame_bytes_per_cycle": frame_bytes,
                "bytes_per_decision_with_frame": round(
                    (sum(row_bytes or trace_bytes) + frame_bytes) / len(engine_decisions), 1
                ),
                "skipped_mean": round(statistics.mean(len(d.skipped) for d in engine_decisions), 1),
                "unframed_trace_bytes_mean": round(
                    statistics.mean(len(trace_encode(d)) for d in engine_decisions[:10]), 1
                ),
            }
        )
    return rows


def _row_sizes(ids: list[int]) -> list[int]:
    """Whole stored row sizes where the database can tell (PostgreSQL's pg_column_size of the row)."""
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_size(d.*) FROM brokerage_decisions d WHERE id = ANY(%s)", [ids])
        return [size for (size,) in cursor.fetchall()]
