"""Benchmarks of brokerage cycles over the database."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from brokerage.models import (
    Dataset,
    DatasetFile,
    DatasetReplica,
    NetworkLink,
    PandaQueue,
    QueuePilotStats,
    QueueStorage,
    Site,
    StorageEndpoint,
    Task,
    WorkQueue,
)
from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.jobs import job_generation_cycle_run

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


def _populate_job_grid(*, tasks: int, queues: int, files: int, seed: int) -> int:
    """A grid of `queues` queues at 10 nuclei and satellites, and `tasks` ready tasks of `files` files each in one
    unthrottled work queue; returns the work queue id."""
    rng = random.Random(seed)
    n_sites = max(queues // 2, 11)
    sites = Site.objects.bulk_create(
        Site(name=f"BJ-{seed}-{i:03d}", role="nucleus" if i < 10 else "satellite") for i in range(n_sites)
    )
    endpoints = StorageEndpoint.objects.bulk_create(
        StorageEndpoint(
            name=f"{site.name}_DATADISK",
            site=site,
            type="DATADISK",
            space_total=4e6,
            space_free=2e6,
            detailed_status=ON,
        )
        for site in sites
    )
    records = []
    for i in range(queues):
        site = sites[i % n_sites]
        cores = rng.choice([1, 8])
        records.append(
            PandaQueue(
                name=f"BJQ-{seed}-{i:04d}",
                site=site,
                status=rng.choice(["online"] * 9 + ["offline"]),
                type="unified",
                corecount=cores,
                maxrss=cores * rng.choice([2000, 4000]),
                maxtime=172800,
                maxwdir=20000 * cores,
                releases=["ANY"],
                wnconnectivity="full#IPv4",
                corepower=10.0,
            )
        )
    created = PandaQueue.objects.bulk_create(records)
    QueueStorage.objects.bulk_create(
        QueueStorage(queue=queue, endpoint=endpoints[i % n_sites], role=role)
        for i, queue in enumerate(created)
        for role in ("read_lan", "write_lan")
    )
    QueuePilotStats.objects.bulk_create(
        QueuePilotStats(queue=queue, pilotsLast3h=50, nBatchJob=500, numSlots=rng.choice([200, 2000]))
        for queue in created
    )
    NetworkLink.objects.bulk_create(
        NetworkLink(
            src=source,
            dst=nucleus,
            closeness=rng.randint(1, 11),
            mbps_1h=rng.uniform(10, 400),
            queued=rng.randint(0, 100),
        )
        for source in sites
        for nucleus in sites[:10]
        if source != nucleus
    )
    work_queue = WorkQueue.objects.create(queue_name=f"bench{seed}", queue_order=9000 + seed % 1000)
    task_rows = Task.objects.bulk_create(
        Task(
            taskName=f"bench.jobs.{seed}.{i}",
            status="ready",
            gshare="MC 16",
            processingType="simul",
            workQueue=work_queue,
            nucleus=sites[i % 10].name,
            taskPriority=500,
            currentPriority=rng.choice([300, 500]),
            ioIntensity=100,
            cpuTime=300,
            cpuEfficiency=90,
            baseWalltime=600,
            coreCount=8,
            ramCount=2000,
            ramUnit="MBPerCore",
            taskParams={"nScoutJobs": 0, "nFilesPerJob": 1},
        )
        for i in range(tasks)
    )
    datasets = Dataset.objects.bulk_create(
        Dataset(task=task, datasetName=f"bench.jobs.{seed}.{task.pk}.EVNT", type="input", status="ready", nFiles=files)
        for task in task_rows
    )
    DatasetFile.objects.bulk_create(
        (
            DatasetFile(
                dataset=dataset,
                task_id=dataset.task_id,
                type="input",
                lfn=f"{dataset.datasetName}.{n}",
                fsize=2 * 1024**3,
                nEvents=1000,
                maxAttempt=3,
            )
            for dataset in datasets
            for n in range(files)
        ),
        batch_size=5000,
    )
    DatasetReplica.objects.bulk_create(
        DatasetReplica(datasetName=dataset.datasetName, endpoint=endpoints[i % 10], nFiles=files, sizeGB=2.0 * files)
        for i, dataset in enumerate(datasets)
    )
    return work_queue.pk


def _job_cycle_rows(*, quick: bool) -> list[Row]:
    rows = []
    for tasks in (20, 50) if quick else (1000, 10000):
        with transaction.atomic():
            work_queue_id = _populate_job_grid(tasks=tasks, queues=150, files=5, seed=tasks + 1)
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                result = job_generation_cycle_run(work_queue_id=work_queue_id, now=NOW, limit=tasks)
                elapsed_ms = (time.perf_counter() - start) * 1000.0
            decided, assigned = result.n_decisions, result.n_assigned
            transaction.set_rollback(True)
        per_task = elapsed_ms / max(decided, 1)
        rows.append(
            {
                "bench": "cycle",
                "params": {
                    "kind": "job generation + job brokerage",
                    "tasks": tasks,
                    "queues": 150,
                    "files_per_task": 5,
                    "database": connection.vendor,
                },
                "median_ms": round(per_task, 3),
                "p95_ms": round(per_task, 3),
                "n": decided,
                "assigned": assigned,
                "cycle_ms": round(elapsed_ms, 1),
                "queries_per_cycle": sum(1 for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]),
            }
        )
    return rows


@benchmark("cycle")
def cycle(*, quick: bool = False) -> list[Row]:
    """Full cycles over the database, end to end (snapshot, engine, decisions stored with their traces, outcomes
    applied): task brokerage over 1,000 and 10,000 tasks waiting for a nucleus (50 nuclei), then job generation
    with job brokerage over 1,000 and 10,000 ready tasks of 5 files (150 queues, one job set per task). In the
    configured database (run it through scripts/with_postgres.sh for PostgreSQL), in transactions rolled back."""
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
                "params": {"kind": "task brokerage", "tasks": tasks, "nuclei": 50, "database": connection.vendor},
                "median_ms": round(per_task, 3),
                "p95_ms": round(per_task, 3),
                "n": decided,
                "cycle_ms": round(elapsed_ms, 1),
                "queries_per_cycle": sum(1 for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]),
            }
        )
    return rows + _job_cycle_rows(quick=quick)
