"""Benchmark of the DIRAC Matcher: 1,000,000 waiting jobs in 10,000 task queues with varied requirements; the
median time of one matching request (claim included), the matches per second of 4 concurrent requesting
processes, and the number of jobs matched twice (must be 0). The rows are committed (other processes must see
them) and deleted afterwards."""

from __future__ import annotations

import multiprocessing
import random
import statistics
import time

from django.db import connection, transaction
from django.utils import timezone

from brokerage.models import DiracJob, DiracJobStatusLog, DiracMatchRecord, DiracTaskQueue, DiracTaskQueueValue
from brokerage.services.dirac import dirac_match_request, dirac_priorities_update, resource_from

from .runner import Row, benchmark, insert_series, percentile

SETUP = "Bench-Production"
SITES = [f"BENCH.Site{i:02d}.org" for i in range(50)]
PLATFORMS = ["el9", "el8", "centos7"]
TAGS = ["MultiProcessor", "GPU", "8Processors"]


def _populate(*, queues: int, jobs: int, seed: int) -> None:
    rng = random.Random(seed)
    now = timezone.now()
    with transaction.atomic():
        created = DiracTaskQueue.objects.bulk_create(
            (
                DiracTaskQueue(
                    ownerDN=f"/CN=user{rng.randrange(500)}",
                    ownerGroup=f"group{rng.randrange(10)}",
                    setup=SETUP,
                    cpuTime=rng.choice([500, 5000, 50000, 300000]),
                    priority=1.0,
                    requirementsKey=f"bench-{seed}-{i}",
                    created=now,
                )
                for i in range(queues)
            ),
            batch_size=5000,
        )
        insert_series(
            DiracJob,
            count=jobs,
            computed={
                "task_queue": f"{created[0].pk} + n %% {queues}",
                "status": "'Waiting'",
                "userPriority": "1 + n %% 5",
            },
            value_of=lambda field: now if field.name in ("submissionTime", "lastUpdateTime") else field.get_default(),
        )


def _populate_values(*, seed: int) -> None:
    """Requirements for half the task queues: sites, banned sites, platforms, tags."""
    rng = random.Random(seed + 1)
    rows = []
    for tq in DiracTaskQueue.objects.filter(setup=SETUP).values_list("pk", flat=True):
        if rng.random() < 0.5:
            rows += [DiracTaskQueueValue(task_queue_id=tq, field="sites", value=s) for s in rng.sample(SITES, 3)]
        if rng.random() < 0.2:
            rows += [DiracTaskQueueValue(task_queue_id=tq, field="bannedSites", value=s) for s in rng.sample(SITES, 2)]
        if rng.random() < 0.3:
            rows += [DiracTaskQueueValue(task_queue_id=tq, field="platforms", value=p) for p in PLATFORMS[:2]]
        if rng.random() < 0.1:
            rows.append(DiracTaskQueueValue(task_queue_id=tq, field="tags", value=rng.choice(TAGS)))
    DiracTaskQueueValue.objects.bulk_create(rows, batch_size=5000, ignore_conflicts=True)


def _resource_data(rng: random.Random) -> dict:
    return {
        "setup": SETUP,
        "cpuTime": rng.choice([3600, 86400, 400000]),
        "site": rng.choice(SITES),
        "platform": rng.choice(PLATFORMS),
        "tags": rng.sample(TAGS, rng.randint(0, 2)),
    }


def _resource(rng: random.Random):
    return resource_from(_resource_data(rng))


def _requester(count: int, seed: int, results) -> None:
    import django

    connection.close()
    django.setup()
    rng = random.Random(seed)
    taken = []
    start = time.perf_counter()
    for _ in range(count):
        result = dirac_match_request(resource=_resource(rng), now=timezone.now(), seed=rng.randrange(2**31))
        if result["matched"]:
            taken.append(result["job"])
    results.put((taken, time.perf_counter() - start))


def million_job_set_remove() -> None:
    """Removes what `million_job_set` (or an interrupted run of it) left."""
    queues = DiracTaskQueue.objects.filter(setup=SETUP)
    jobs = DiracJob.objects.filter(task_queue__in=queues)
    DiracJobStatusLog.objects.filter(job__in=jobs).delete()
    jobs.delete()
    DiracTaskQueueValue.objects.filter(task_queue__in=queues).delete()
    queues.delete()
    DiracMatchRecord.objects.filter(setup=SETUP).delete()


def million_job_set(*, queues: int, jobs: int) -> None:
    """The `bench dirac` set in our tables, priorities computed under the installation's rules, statistics fresh:
    task queue i gets random requirements, job n goes to task queue n mod `queues` with user priority 1 + n mod 5
    (`bench peer` loads the same rows into DIRAC's own tables)."""
    million_job_set_remove()
    _populate(queues=queues, jobs=jobs, seed=7)
    _populate_values(seed=7)
    dirac_priorities_update()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE dirac_jobs")
            cursor.execute("ANALYZE dirac_task_queues")
            cursor.execute("ANALYZE dirac_task_queue_values")


def bench_resources(count: int) -> list[dict]:
    """The requests of the latency measure, as the Matcher's request bodies, each with the seed of its draws."""
    rng = random.Random(11)
    return [{**_resource_data(rng), "seed": rng.randrange(2**31)} for _ in range(count)]


def match_latency(resources: list[dict]) -> tuple[list[float], int]:
    """One matching request per resource, one after the other: milliseconds each, and how many got a job."""
    samples, matched = [], 0
    for body in resources:
        resource = resource_from({key: value for key, value in body.items() if key != "seed"})
        start = time.perf_counter()
        result = dirac_match_request(resource=resource, now=timezone.now(), seed=body["seed"])
        samples.append((time.perf_counter() - start) * 1000)
        matched += bool(result["matched"])
    return samples, matched


@benchmark("dirac")
def dirac(*, quick: bool = False) -> list[Row]:
    """Match latency and concurrent throughput at 1,000,000 waiting jobs in 10,000 task queues."""
    queues, jobs, requests, per_process = (200, 20_000, 30, 25) if quick else (10_000, 1_000_000, 300, 500)
    try:
        million_job_set(queues=queues, jobs=jobs)
        samples, matched = match_latency(bench_resources(requests))
        rows = [
            {
                "bench": "dirac",
                "params": {
                    "measure": "match latency",
                    "jobs": jobs,
                    "task_queues": queues,
                    "database": connection.vendor,
                },
                "median_ms": round(statistics.median(samples), 3),
                "p95_ms": round(percentile(samples, 0.95), 3),
                "n": requests,
                "matched": matched,
            }
        ]
        connection.close()
        context = multiprocessing.get_context("fork")
        results = context.Queue()
        workers = [context.Process(target=_requester, args=(per_process, 100 + i, results)) for i in range(4)]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=1800) for _ in workers]
        wall = time.perf_counter() - start
        for worker in workers:
            worker.join(timeout=60)
        taken = [job for ids, _ in outcomes for job in ids]
        rows.append(
            {
                "bench": "dirac",
                "params": {
                    "measure": "4 concurrent requesters",
                    "jobs": jobs,
                    "task_queues": queues,
                    "database": connection.vendor,
                },
                "median_ms": round(statistics.median(seconds for _, seconds in outcomes) * 1000 / per_process, 3),
                "p95_ms": round(max(seconds for _, seconds in outcomes) * 1000 / per_process, 3),
                "n": 4 * per_process,
                "matches_per_second": round(len(taken) / wall, 1),
                "requests_per_second": round(4 * per_process / wall, 1),
                "double_matches": len(taken) - len(set(taken)),
            }
        )
        return rows
    finally:
        million_job_set_remove()
