"""The production path for real: PostgreSQL, a Redis broker and separate Celery worker processes.

Runs in the PostgreSQL pass of `make test` (scripts/with_postgres.sh), with a Redis server started here on a
Unix socket. A task sent through Redis is executed by two real workers against the test database.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from celery import Celery
from prometheus_client import CollectorRegistry, multiprocess

from brokerage.models import ProcessLock
from tests import factories
from tools.bench.stack import production_env, redis_start

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="production path: PostgreSQL pass only"
    ),
]


@pytest.fixture
def redis_socket(tmp_path):
    if shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server missing in CI: scripts/ensure_redis.sh should have installed it")
        pytest.skip("redis-server not installed (make test installs it as root)")
    process, socket_path = redis_start(tmp_path)
    yield socket_path
    process.terminate()
    process.wait(timeout=10)


def worker_environment(redis_socket, tmp_path) -> dict:
    return production_env(tmp_path, redis_socket, CACHE_URL="locmem://worker", PROCESS_LOCK_TIMEOUT_MINUTES="30")


def start_workers(env, tmp_path, count=2, concurrency=None):
    """`count` worker processes, each with the solo pool or a prefork pool of `concurrency` processes."""
    pool = ["--pool", "solo"] if concurrency is None else ["--pool", "prefork", "--concurrency", str(concurrency)]
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config.celery",
                "worker",
                *pool,
                "--hostname",
                f"w{index}@test",
                "--loglevel",
                "INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=(tmp_path / f"w{index}.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        for index in range(1, count + 1)
    ]


def wait_for_workers(app, count, seconds=90):
    """Until `count` workers answer a ping: work sent before they are up is all taken by the first one ready
    (on a loaded machine the others can take many seconds to start)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if len(app.control.ping(timeout=1.0) or []) >= count:
                return
        except app.connection_for_write().connection_errors:  # the broker restarted: the next ping reconnects
            pass
        assert time.monotonic() < deadline, f"fewer than {count} workers answered within {seconds} s"


def stop_workers(workers):
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for worker in workers:
        worker.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_workers_take_tasks_from_redis_and_write_to_postgresql(redis_socket, tmp_path):
    broker_url = f"redis+socket://{redis_socket}"
    metrics = tmp_path / "metrics"  # the workers' metrics files (brokerage.metrics, multiprocess mode)
    metrics.mkdir()
    env = {**worker_environment(redis_socket, tmp_path), "PROMETHEUS_MULTIPROC_DIR": str(metrics)}
    workers = start_workers(env, tmp_path)
    try:
        now = datetime.now(UTC)
        for _ in range(6):
            factories.ProcessLockFactory(lockedTime=now - timedelta(hours=2))
        kept = factories.ProcessLockFactory(lockedTime=now)
        sender = Celery(broker=broker_url)
        # both joined the broker before the work is sent: on a loaded machine the second started after the first
        # had expired the locks, and its log had not yet said it connected (a fresh clone's CI run)
        wait_for_workers(sender, 2)
        for _ in range(4):  # several messages: whichever worker takes one, the stale locks go
            sender.send_task("brokerage.tasks.process_lock_expire_task")
        deadline = time.monotonic() + 60
        while ProcessLock.objects.count() != 1:
            for worker in workers:
                assert worker.poll() is None, (tmp_path / "w1.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "workers did not expire the locks"
            time.sleep(0.3)
        assert list(ProcessLock.objects.all()) == [kept]
        sender.close()
    finally:
        stop_workers(workers)
    logs = [(tmp_path / f"w{index}.log").read_text() for index in (1, 2)]
    assert all("Connected to redis+socket://" in log for log in logs)  # both workers joined the broker
    assert any("process_lock_expire_task" in log and "succeeded" in log for log in logs)
    # each of the four waited from its sending (the header this process's sender added) and ran: counted by the
    # workers in their files, summed as /metrics sums them
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(metrics))
    task = {"task": "brokerage.tasks.process_lock_expire_task"}
    assert registry.get_sample_value("brokerage_celery_task_wait_seconds_count", task) == 4
    assert registry.get_sample_value("brokerage_celery_task_run_seconds_count", task) == 4


@pytest.mark.django_db(transaction=True)
def test_concurrent_cycles_in_several_workers_broker_each_task_exactly_once(redis_socket, tmp_path):
    from brokerage.models import Decision, Task

    for index in range(3):
        site = factories.NucleusFactory(name=f"NUC-{index}")
        factories.StorageEndpointFactory(
            name=f"NUC-{index}_DATADISK",
            site=site,
            space_total=1e6,
            space_free=5e5,
            detailed_status={"read_wan": "ON", "write_wan": "ON"},
        )
    tasks = [factories.TaskFactory(status="assigning", ioIntensity=100) for _ in range(60)]
    env = {**worker_environment(redis_socket, tmp_path), "TASK_BROKERAGE_BATCH": "7"}  # cycles interleave
    workers = start_workers(env, tmp_path, count=3)
    try:
        sender = Celery(broker=f"redis+socket://{redis_socket}")
        for _ in range(12):  # 12 cycles of 7 tasks on 3 workers: they overlap and compete for the same tasks
            sender.send_task("brokerage.tasks.task_brokerage_cycle_task")
        deadline = time.monotonic() + 90
        while Task.objects.filter(status="assigning").exists():
            assert time.monotonic() < deadline, "the cycles did not broker every task"
            time.sleep(0.3)
        sender.close()
    finally:
        stop_workers(workers)
    per_task = {task.pk: Decision.objects.filter(task=task).count() for task in tasks}
    assert set(per_task.values()) == {1}
    assert set(Task.objects.values_list("status", flat=True)) == {"ready"}
    assert not Task.objects.exclude(lockedBy="").exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_job_generation_in_several_workers_brokers_each_job_set_exactly_once(redis_socket, tmp_path):
    from brokerage.models import BrokerageCycle, DatasetFile, Decision, Job, Task, WorkQueue
    from tests.jobs.conftest import make_one_queue_grid, make_ready_task

    # given one satellite queue, three work queues and 36 ready tasks of 3 files (one job per file, no scouts)
    queue = make_one_queue_grid()
    # Harvester grants 1000 slots, so the queue takes all 108 jobs (queued ≤ 2 × 1000)
    factories.QueuePilotStatsFactory(queue=queue, pilotsLast3h=50, nBatchJob=2000, numSlots=1000)
    work_queues = [factories.WorkQueueFactory(queue_name=f"WQ{index}", queue_share=None) for index in range(3)]
    tasks = [make_ready_task(work_queues[index % 3], files=3, nScoutJobs=0, nFilesPerJob=1) for index in range(36)]
    # each cycle claims 4 tasks, so a work queue needs several; many messages race for the same work queues
    env = {**worker_environment(redis_socket, tmp_path), "JOB_GENERATION_BATCH": "4"}
    workers = start_workers(env, tmp_path, count=3)
    try:
        sender = Celery(broker=f"redis+socket://{redis_socket}")
        deadline = time.monotonic() + 120
        while Task.objects.filter(status="ready").exists():
            assert time.monotonic() < deadline, "the cycles did not generate jobs for every task"
            for work_queue in WorkQueue.objects.all():
                for _ in range(2):
                    sender.send_task("brokerage.tasks.job_generation_cycle_task", args=[work_queue.pk])
            time.sleep(1.0)
        sender.close()
    finally:
        stop_workers(workers)
    # then every task was brokered once, as one job set of 3 jobs, and no file went to two jobs
    decisions = Decision.objects.filter(plugin="atlas_prod_job")
    assert sorted(decisions.values_list("task_id", flat=True)) == sorted(task.pk for task in tasks)
    assert decisions.values("jobsetID").distinct().count() == 36
    assert Job.objects.count() == 36 * 3
    assert set(Job.objects.values_list("computingSite", "jobStatus").distinct()) == {("SAT_Q", "assigned")}
    used = list(DatasetFile.objects.values_list("PandaID", flat=True))
    assert len(used) == len(set(used)) == 108
    assert set(Task.objects.values_list("status", flat=True)) == {"running"}
    assert not Task.objects.exclude(lockedBy="").exists()
    assert not ProcessLock.objects.exists()
    # the work was shared: cycles ran in more than one worker process
    assert BrokerageCycle.objects.filter(plugin="atlas_prod_job").values("worker").distinct().count() >= 2


@pytest.mark.django_db(transaction=True)
def test_wmcore_agents_in_several_workers_take_each_element_once(redis_socket, tmp_path):
    from brokerage.models import BrokerageCycle, WMBSJob, WMCoreElement, WMCoreRequest
    from tests.wmcore.conftest import make_site

    # given three agents sharing two sites and eight requests of 6 blocks (48 elements, 4 jobs each)
    global_queue = factories.WMCoreGlobalQueueFactory()
    agents = [factories.WMCoreQueueFactory(name=f"agent{i}", parent=global_queue) for i in range(3)]
    for agent in agents:
        make_site(agent, "T1_US_FNAL", pending=200, running=200, task_pending=200, task_running=200)
        make_site(agent, "T2_DE_DESY", pending=200, running=200, task_pending=200, task_running=200)
    for index in range(8):
        dataset = f"/Race{index}/Run2024-v1/RAW"
        for block in range(6):
            factories.WMCoreBlockFactory(
                dataset=dataset, name=f"{dataset}#{block}", files=8, sites=["T1_US_FNAL", "T2_DE_DESY"]
            )
        factories.WMCoreRequestFactory(InputDataset=dataset, FilesPerJob=2, RequestPriority=1000 + index)
    workers = start_workers(worker_environment(redis_socket, tmp_path), tmp_path, count=3)
    try:
        sender = Celery(broker=f"redis+socket://{redis_socket}")
        wait_for_workers(sender, 3)
        sender.send_task("brokerage.tasks.wmcore_dispatch_task")
        deadline = time.monotonic() + 120
        while (
            WMCoreElement.objects.filter(queue=global_queue, database="queue").exclude(Status="Running").exists()
            or not WMCoreElement.objects.filter(queue=global_queue).exists()
        ):
            assert time.monotonic() < deadline, "the agents did not take every element"
            for agent in agents:  # every agent asked twice each round: the messages race for the same elements
                for _ in range(2):
                    sender.send_task("brokerage.tasks.wmcore_agent_cycle_task", args=[agent.pk])
            time.sleep(1.0)
        sender.close()
    finally:
        stop_workers(workers)
    # then each global element went to one agent, copied there once into inbox and queue, with its 4 jobs once
    elements = WMCoreElement.objects.filter(queue=global_queue, database="queue")
    assert elements.count() == 48
    for element in elements:
        copies = WMCoreElement.objects.filter(element_id=element.element_id).exclude(pk=element.pk)
        assert sorted(copies.values_list("queue_id", "database")) == [
            (element.ChildQueue_id, "inbox"),
            (element.ChildQueue_id, "queue"),
        ]
    assert WMBSJob.objects.count() == 48 * 4
    assert set(WMCoreRequest.objects.values_list("RequestStatus", flat=True)) <= {"running-open", "running-closed"}
    # the pulls ran in more than one worker process
    workers_seen = BrokerageCycle.objects.filter(plugin="wmcore_pull").values("worker").distinct().count()
    assert workers_seen >= 2


LOG_LINE = re.compile(r"^\[(\S+ \S+): \w+/[^\]]+\] Task (\S+)\[([0-9a-f-]+)\] (received|succeeded|retry|raised)")


def redelivery_seconds(tmp_path, *, killed_pid: int, workers, killed_wall: datetime) -> float | None:
    """Seconds from the kill until another worker received a task the killed one had received but never
    finished (Celery's log lines, UTC in the workers' time zone)."""
    logs = {index: (tmp_path / f"w{index}.log").read_text() for index in range(1, len(workers) + 1)}
    killed = next(index for index, worker in enumerate(workers, start=1) if worker.pid == killed_pid)
    started, ended = set(), set()
    for line in logs[killed].splitlines():
        match = LOG_LINE.match(line)
        if match:
            (started if match.group(4) == "received" else ended).add(match.group(3))
    unacknowledged = started - ended
    times = []
    for index, text in logs.items():
        if index == killed:
            continue
        for line in text.splitlines():
            match = LOG_LINE.match(line)
            if match and match.group(4) == "received" and match.group(3) in unacknowledged:
                at = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC)
                times.append((at - killed_wall).total_seconds())
    return min(times) if times else None


@pytest.mark.django_db(transaction=True)
def test_simulated_hours_with_a_worker_killed_mid_cycle_leave_nothing_wrong(redis_socket, tmp_path):
    """Issue 17: the demo grid run by two real workers for many simulated hours (the simulator at 10 grid
    minutes per second: jobs run, fail and are retried, timeouts and fast rebrokerage watched), one worker killed
    with SIGKILL in the middle of a cycle. The other worker finishes the interrupted work within 3 minutes, every
    job set is brokered once, and the integrity check finds nothing."""
    from django.core.management import call_command

    from brokerage.models import BrokerageCycle, Decision, Job, Task, WorkerHeartbeat
    from brokerage.selectors.integrity import integrity_findings

    call_command("demo_grid", size="small", no_progress=True, stdout=open(os.devnull, "w"))  # noqa: SIM115
    env = {
        **worker_environment(redis_socket, tmp_path),
        "GRID_SIMULATOR": "on",
        "GRID_SIMULATOR_SPEED": "600",
        "JOB_GENERATION_BATCH": "50",
    }  # production defaults for heartbeats and redelivery (issue 31: freed within 60 s; issue 47: redelivered in 75)
    for name in ("HEARTBEAT_SECONDS", "HEARTBEAT_STALE_SECONDS", "CELERY_VISIBILITY_TIMEOUT_SECONDS"):
        env.pop(name, None)
    workers = start_workers(env, tmp_path, count=2)
    pids = {worker.pid: worker for worker in workers}
    sender = Celery(broker=f"redis+socket://{redis_socket}")
    periodic = [
        "brokerage.tasks.task_refine_task",
        "brokerage.tasks.task_brokerage_cycle_task",
        "brokerage.tasks.job_generation_dispatch_task",
        "brokerage.tasks.grid_simulate_task",
        "brokerage.tasks.watchdog_task",
        "brokerage.tasks.process_lock_expire_task",
    ]

    def holder_pid() -> int | None:
        """The pid of a worker in the middle of a cycle (holding a process lock or task claims), if any."""
        names = set(ProcessLock.objects.values_list("lockedBy", flat=True))
        names |= set(Task.objects.exclude(lockedBy="").values_list("lockedBy", flat=True)[:5])
        for name in names:
            pid = int(name.rsplit(":", 1)[1])
            if pid in pids and pids[pid].poll() is None:
                return pid
        return None

    def still_held(name: str) -> bool:
        return (
            ProcessLock.objects.filter(lockedBy=name).exists()
            or Task.objects.filter(lockedBy=name).exists()
            or BrokerageCycle.objects.filter(worker=name, status="running").exists()
        )

    killed_name, killed_at, freed_after = None, None, None
    try:
        started = time.monotonic()
        while time.monotonic() - started < 150:
            for name in periodic:
                sender.send_task(name)
            if killed_name is not None and freed_after is None and not still_held(killed_name):
                freed_after = time.monotonic() - killed_at
            deadline = time.monotonic() + 1.0
            while killed_name is None and time.monotonic() < deadline and time.monotonic() - started > 20:
                pid = holder_pid()
                if pid is not None:  # mid-cycle: kill it without a chance to clean up
                    os.kill(pid, signal.SIGKILL)
                    pids[pid].wait(timeout=10)
                    killed_name = next(
                        n for n in WorkerHeartbeat.objects.values_list("name", flat=True) if n.endswith(f":{pid}")
                    )
                    killed_at, killed_wall = time.monotonic(), datetime.now(UTC)
                    break
                time.sleep(0.02)
            time.sleep(max(0.0, deadline - time.monotonic()))
        assert killed_name is not None, "no worker was caught in the middle of a cycle"
        # the interrupted work is taken over within 3 minutes: nothing left held by the dead worker
        while freed_after is None:
            if not still_held(killed_name):
                freed_after = time.monotonic() - killed_at
            assert time.monotonic() - killed_at < 180, "the dead worker's locks, claims or cycles were not freed"
            sender.send_task("brokerage.tasks.process_lock_expire_task")
            time.sleep(1.0)
        sender.close()
    finally:
        stop_workers([worker for worker in workers if worker.poll() is None])
    assert freed_after < 60
    # the message the killed worker had taken and not acknowledged was delivered again, to the other one
    redelivered_after = redelivery_seconds(
        tmp_path, killed_pid=int(killed_name.rsplit(":", 1)[1]), workers=workers, killed_wall=killed_wall
    )
    assert redelivered_after is not None, "the killed worker's unacknowledged message never came back"
    assert redelivered_after < 75  # visibility 60 s + kombu's sweep every 5 s (config/settings/base.py)
    lost = BrokerageCycle.objects.filter(worker=killed_name, status="failed", error__startswith="worker lost")
    assert lost.exists() or not BrokerageCycle.objects.filter(worker=killed_name, finished__isnull=True).exists()
    survivor = next(name for name in WorkerHeartbeat.objects.values_list("name", flat=True) if name != killed_name)
    assert BrokerageCycle.objects.filter(worker=survivor, status="succeeded", started__gt=killed_wall).exists()
    # grid hours passed: jobs ended, some failed and their files came back for another attempt
    assert Job.objects.filter(jobStatus="finished").count() > 20
    assert Job.objects.filter(jobStatus="failed").exists()
    # nothing done twice: each job set brokered by one decision
    per_job_set = Decision.objects.filter(
        plugin__in=("atlas_prod_job", "atlas_anal_job"), jobsetID__isnull=False
    ).values("task_id", "jobsetID")
    assert per_job_set.count() == per_job_set.distinct().count()
    assert integrity_findings() == []
    print(  # the figures for the record (pytest -s)
        f"killed {killed_name}; freed after {freed_after:.0f} s, redelivered after {redelivered_after:.0f} s; "
        f"jobs finished "
        f"{Job.objects.filter(jobStatus='finished').count()}, failed {Job.objects.filter(jobStatus='failed').count()}; "
        f"cycles {BrokerageCycle.objects.count()}"
    )


@pytest.mark.django_db(transaction=True)
def test_workers_come_back_cleanly_after_redis_restarts(tmp_path):
    """Issue 47, finding 10: after Redis went away and came back, the workers logged `Error on restarting
    Gossip: AttributeError(…)` and missed heartbeats of each other. Gossip and mingle are off in every worker
    (config/celery.py), so a restart of the broker leaves two workers that take work again and log no error."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make test installs it as root)")
    redis, socket_path = redis_start(tmp_path)
    workers = start_workers(worker_environment(socket_path, tmp_path), tmp_path, count=2, concurrency=2)
    sender = Celery(broker=f"redis+socket://{socket_path}")
    try:
        wait_for_workers(sender, 2)
        redis.terminate()
        redis.wait(timeout=10)
        time.sleep(8)  # the workers notice: their connections fail and they start reconnecting
        socket_path.unlink(missing_ok=True)
        redis, _ = redis_start(tmp_path)
        wait_for_workers(sender, 2)  # both back on the broker
        now = datetime.now(UTC)
        for _ in range(4):
            factories.ProcessLockFactory(lockedTime=now - timedelta(hours=2))
        for _ in range(6):
            sender.send_task("brokerage.tasks.process_lock_expire_task")
        deadline = time.monotonic() + 60
        while ProcessLock.objects.exists():
            assert time.monotonic() < deadline, "the workers took no work after Redis came back"
            time.sleep(0.3)
        time.sleep(12)  # a gossip restart and the heartbeats it would miss happen in these seconds
    finally:
        sender.close()
        stop_workers(workers)
        redis.terminate()
        redis.wait(timeout=10)
    for index in (1, 2):
        log = (tmp_path / f"w{index}.log").read_text()
        assert log.count("Connected to redis+socket://") == 2, log[-3000:]  # at the start and after the restart
        # while Redis was away "Cannot connect … Trying again" is an error; once back, nothing is
        back = log[log.rindex("Connected to redis+socket://") :]
        for anywhere in ("ossip", "missed heartbeat", "DeprecationWarning"):
            assert anywhere not in log, log
        for after_the_restart in ("Traceback", "ERROR/"):
            assert after_the_restart not in back, back
