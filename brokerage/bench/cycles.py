"""Benchmarks of brokerage cycles over the database."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from brokerage.models import Dataset, DatasetReplica, Site, StorageEndpoint, Task
from brokerage.services.cycles import task_brokerage_cycle_run

from .runner import Row, benchmark

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
ON = {"read_lan": "ON", "write_lan": "ON", "read_wan": "ON", "write_wan": "ON"}


def _populate(*, tasks: int, nuclei: int, seed: int) -> None:
    rng = random.Random(seed)
    sites = Site.objects.bulk_create(
        Site(name=f"BENCH-NUC-{i:03d}", role="nucleus", state="ACTIVE" if rng.random() > 0.1 else "DISABLED")
        for i in range(nuclei)
    )
    endpoints = StorageEndpoint.objects.bulk_create(
        StorageEndpoint(
            name=f"{site.name}_DATADISK",
            site=site,
            type="DATADISK",
            space_total=4_000_000.0,
            space_free=rng.choice([20_000.0, 800_000.0, 1_500_000.0]),
            detailed_status=ON,
        )
        for site in sites
    )
    rows = Task.objects.bulk_create(
        Task(
            taskName=f"bench.{seed}.{i}",
            status="assigning",
            gshare="MC 16",
            processingType="simul",
            taskPriority=rng.choice([300, 500, 900]),
            currentPriority=500,
            ioIntensity=rng.choice([50, 400]),
            cpuTime=300,
            coreCount=8,
        )
        for i in range(tasks)
    )
    datasets = Dataset.objects.bulk_create(
        Dataset(
            task=task,
            datasetName=f"bench.{seed}.{task.pk}.EVNT",
            type="input",
            nFiles=rng.randint(50, 500),
            nEvents=10_000,
        )
        for task in rows
    )
    DatasetReplica.objects.bulk_create(
        DatasetReplica(
            datasetName=dataset.datasetName, endpoint=endpoint, nFiles=dataset.nFiles, sizeGB=dataset.nFiles * 2.0
        )
        for dataset in datasets
        for endpoint in rng.sample(endpoints, 3)
    )


@benchmark("cycle")
def cycle(*, quick: bool = False) -> list[Row]:
    """A task-brokerage cycle over 1,000 and 10,000 tasks waiting for a nucleus (50 nuclei), end to end:
    snapshot, engine, decisions stored with their traces, outcomes applied. In the configured database (run it
    through scripts/with_postgres.sh for PostgreSQL), in a transaction that is rolled back."""
    rows = []
    for tasks in (20, 50) if quick else (1000, 10000):
        with transaction.atomic():
            _populate(tasks=tasks, nuclei=50, seed=tasks)
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                result = task_brokerage_cycle_run(now=NOW, limit=tasks)
                elapsed_ms = (time.perf_counter() - start) * 1000.0
            decided = result.n_decisions
            transaction.set_rollback(True)
        per_task = elapsed_ms / max(decided, 1)
        rows.append(
            {
                "bench": "cycle",
                "params": {"tasks": tasks, "nuclei": 50, "database": connection.vendor},
                "median_ms": round(per_task, 3),
                "p95_ms": round(per_task, 3),
                "n": decided,
                "cycle_ms": round(elapsed_ms, 1),
                "queries_per_cycle": sum(1 for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]),
            }
        )
    return rows
