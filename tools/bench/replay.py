"""Benchmarks of issue 34: what keeping every decision's inputs costs, and how fast a stored decision is replayed
and a past cycle's what-if runs. Measured in the configured database, in transactions rolled back."""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

from brokerage.adapters.grid import over_base
from brokerage.engine import parse_scenario
from brokerage.engine.panda.job_broker import AtlasProdJobBroker
from brokerage.engine.panda.synthetic import job_brokerage_scenario
from brokerage.models import CycleFrame, Decision, DecisionTrace, DiracMatchRecord, ScenarioPart
from brokerage.selectors import inputs as inputs_selectors
from brokerage.selectors.dirac_replay import dirac_match_replay
from brokerage.selectors.inputs import REPLAYABLE
from brokerage.selectors.replay import decision_replay
from brokerage.selectors.whatif import MAX_LIMIT, cycle_id_list, cycles_what_if
from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_store_many

from .runner import Row, benchmark, percentile

QUEUES = 1000
# the decision's own side of a job-brokerage scenario; the rest is the cycle's grid side
OWN_KEYS = ("plugin", "now", "seed", "task", "jobs", "datasets", "user_stats", "nucleus_stats")
START = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
STATS_MOVED = 0.1  # a tenth of the queues' statistics change from one cycle to the next


def _split(data: dict) -> tuple[dict, dict]:
    grid = {key: value for key, value in data.items() if key not in OWN_KEYS}
    own = {key: data[key] for key in OWN_KEYS if key in data}
    return grid, own


def _cycles(*, cycles: int, per_cycle: int, seed: int = 34) -> list[int]:
    """`cycles` job-brokerage cycles a minute apart over a 1,000-queue grid, `per_cycle` job sets each, stored as a
    live cycle stores them (grid side in parts, frame, decisions with their traces and own inputs)."""
    rng = random.Random(seed)
    tasks = [job_brokerage_scenario(queues=QUEUES, seed=QUEUES, task_seed=t) for t in range(per_cycle)]
    grid, _ = _split(tasks[0])
    names = sorted(grid["queue_stats"])
    broker = AtlasProdJobBroker()
    made = []
    for number in range(cycles):
        now = START + timedelta(minutes=number)
        if number:
            for name in rng.sample(names, int(len(names) * STATS_MOVED)):
                stats = dict(grid["queue_stats"][name])
                stats["running"] = stats.get("running", 0) + rng.randint(1, 50)
                stats["activated"] = max(0, stats.get("activated", 0) + rng.randint(-20, 20))
                grid["queue_stats"] = {**grid["queue_stats"], name: stats}
        raw = {**grid, "plugin": broker.name, "now": now.isoformat()}
        base = parse_scenario(raw)
        frame = broker.frame(base)
        cycle = cycle_start(plugin=broker.name, now=now, gdpconfig=grid.get("gdpconfig", {}), frame=frame, inputs=raw)
        items = []
        for task_number, data in enumerate(tasks):
            own = {**_split(data)[1], "now": now.isoformat(), "seed": number * 1000 + task_number}
            scenario = over_base(parse_scenario({**own, "plugin": broker.name}), base)
            items.append(DecisionToStore(broker.decide(scenario), inputs=own))
        decision_store_many(cycle=cycle, items=items, frame=frame)
        cycle_finish(cycle=cycle, now=now)
        made.append(cycle.pk)
    return made


def _blob_bytes(queryset, field: str) -> int:
    return sum(len(bytes(blob)) for blob in queryset.values_list(field, flat=True) if blob is not None)


@benchmark("replay")
def replay(*, quick: bool = False) -> list[Row]:
    """Bytes kept per job-brokerage decision at 1,000 queues (a cycle a minute, a tenth of the statistics moving
    per cycle: inputs, trace and frame apart), the time to replay one decision (read, rebuild, decide, compare)
    with the cycle's parts read before and not, and a what-if over a cycle of 1,000 decisions."""
    cycles, per_cycle = (3, 20) if quick else (10, 100)
    rows: list[Row] = []
    with transaction.atomic():
        made = _cycles(cycles=cycles, per_cycle=per_cycle)
        decisions = Decision.objects.filter(cycle_id__in=made)
        n = decisions.count()
        parts = _blob_bytes(ScenarioPart.objects.all(), "data")
        own = _blob_bytes(DecisionTrace.objects.filter(decision__in=decisions), "inputs")
        traces = _blob_bytes(DecisionTrace.objects.filter(decision__in=decisions), "trace")
        frames = _blob_bytes(CycleFrame.objects.filter(cycle_id__in=made), "frame")
        rows.append(
            {
                "bench": "replay-storage",
                "params": {"queues": QUEUES, "cycles": cycles, "decisions_per_cycle": per_cycle, "stats_moved": 0.1},
                "median_ms": None,
                "p95_ms": None,
                "n": n,
                "bytes_per_decision": round((parts + own + traces + frames) / n, 1),
                "inputs_bytes_per_decision": round((parts + own) / n, 1),
                "grid_parts_bytes_per_decision": round(parts / n, 1),
                "own_inputs_bytes_per_decision": round(own / n, 1),
                "trace_bytes_per_decision": round(traces / n, 1),
                "frame_bytes_per_decision": round(frames / n, 1),
                "parts_stored": ScenarioPart.objects.count(),
                "database": connection.vendor,
            }
        )
        sample = list(decisions.order_by("pk")[: 20 if quick else 100])
        for label, cold in (("parts read before", False), ("nothing read before", True)):
            samples = []
            for decision in sample:
                if cold:
                    inputs_selectors._PARTS.clear()
                    inputs_selectors._BASES.clear()
                start = time.perf_counter()
                result = decision_replay(decision=decision)
                samples.append((time.perf_counter() - start) * 1000.0)
                assert result["identical"], decision.pk
            rows.append(
                {
                    "bench": "replay-one",
                    "params": {"queues": QUEUES, "caches": label},
                    "median_ms": round(statistics.median(samples), 2),
                    "p95_ms": round(percentile(samples, 0.95), 2),
                    "n": len(samples),
                }
            )
        transaction.set_rollback(True)
    with transaction.atomic():
        size = 100 if quick else 1000
        (cycle,) = _cycles(cycles=1, per_cycle=size, seed=35)
        inputs_selectors._PARTS.clear()
        inputs_selectors._BASES.clear()
        start = time.perf_counter()
        result = cycles_what_if(cycle_ids=[cycle], overrides={"NQUEUED_SAT_CAP": 500}, limit=size)
        elapsed = time.perf_counter() - start
        rows.append(
            {
                "bench": "replay-what-if-cycle",
                "params": {"queues": QUEUES, "decisions": size, "change": "NQUEUED_SAT_CAP=500"},
                "median_ms": round(elapsed * 1000.0, 1),
                "p95_ms": round(elapsed * 1000.0, 1),
                "n": 1,
                "replayed": result["replayed"],
                "changed_candidates": result["changed_candidates"],
                "changed_choice": result["changed_choice"],
            }
        )
        transaction.set_rollback(True)
    return rows


@benchmark("replay-demo")
def replay_demo(*, quick: bool = False) -> list[Row]:
    """The what-if over the last hour of the demo (make run's beat on a fake clock, an hour of it: 240 task-brokerage
    cycles, 180 per work queue of job generation, the WMCore pulls), every decision replayed with a change, as the
    gdpconfig change form does it; and a replay of each of the five plugins' kinds of decision."""
    from brokerage.services.demo_cadence import demo_cadence_run
    from brokerage.services.demo_grid import demo_grid_build

    minutes = 5 if quick else 60
    rows: list[Row] = []
    with transaction.atomic():
        demo_grid_build(size="small", now=START, seed=2026)
        built = time.perf_counter()
        end = demo_cadence_run(start=START, seconds=minutes * 60)
        built = time.perf_counter() - built
        cycles = cycle_id_list(since=end - timedelta(hours=1), until=end + timedelta(seconds=1))
        inputs_selectors._PARTS.clear()
        inputs_selectors._BASES.clear()
        start = time.perf_counter()
        result = cycles_what_if(cycle_ids=cycles, overrides={"NQUEUED_SAT_CAP": 1}, limit=MAX_LIMIT)
        elapsed = time.perf_counter() - start
        rows.append(
            {
                "bench": "replay-demo-what-if",
                "params": {"demo_minutes": minutes, "change": "NQUEUED_SAT_CAP=1"},
                "median_ms": round(elapsed * 1000.0, 1),
                "p95_ms": round(elapsed * 1000.0, 1),
                "n": 1,
                "cycles": len(cycles),
                "decisions": result["looked_at"],
                "replayed": result["replayed"],
                "changed_candidates": result["changed_candidates"],
                "not_replayed": len(result["not_replayed"]),
                "demo_built_s": round(built, 1),
            }
        )
        for plugin in REPLAYABLE:
            sample = list(Decision.objects.filter(plugin=plugin).order_by("-pk")[:50])
            samples = []
            for decision in sample:
                begin = time.perf_counter()
                assert decision_replay(decision=decision)["identical"], decision.pk
                samples.append((time.perf_counter() - begin) * 1000.0)
            if samples:
                rows.append(
                    {
                        "bench": "replay-demo-one",
                        "params": {"plugin": plugin},
                        "median_ms": round(statistics.median(samples), 2),
                        "p95_ms": round(percentile(samples, 0.95), 2),
                        "n": len(samples),
                    }
                )
        samples = []
        for record in DiracMatchRecord.objects.order_by("-pk")[:50]:
            begin = time.perf_counter()
            assert dirac_match_replay(record=record)["identical"], record.pk
            samples.append((time.perf_counter() - begin) * 1000.0)
        if samples:
            rows.append(
                {
                    "bench": "replay-demo-one",
                    "params": {"plugin": "dirac_match"},
                    "median_ms": round(statistics.median(samples), 2),
                    "p95_ms": round(percentile(samples, 0.95), 2),
                    "n": len(samples),
                }
            )
        transaction.set_rollback(True)
    return rows
