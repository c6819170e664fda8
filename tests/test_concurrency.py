"""Hours of operation on the production path (issue 31): real Celery workers over the demo grid on PostgreSQL and
Redis, with no deadlock in the server's statistics, no claim, process lock or cycle left behind, an integrity
check that passes, and one task held FOR UPDATE for a long time stopping nothing but itself.

Bounded: each test runs its workers for a fixed number of seconds (the simulator at 600 grid minutes a minute, so
a few real minutes are a day of grid time) and stops them. SOAK_SECONDS lengthens the first one for a soak run
outside the suite (`SOAK_SECONDS=3600 bash scripts/with_postgres.sh .venv/bin/python -m pytest -s -k grid_day
tests/test_concurrency.py`: an hour, 25 grid days)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import threading
import time
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlsplit

import pytest
from celery import Celery
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client

from brokerage.models import BrokerageCycle, Decision, Job, JobStatusLog, ProcessLock, Task
from brokerage.selectors.integrity import integrity_findings
from tests.test_production_path import (  # noqa: F401  (redis_socket is a fixture)
    redis_socket,
    start_workers,
    stop_workers,
    wait_for_workers,
    worker_environment,
)
from tools.bench.load import periodic_tasks

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="production path: PostgreSQL pass only"
    ),
]


def deadlocks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def grid_environment(redis_socket, tmp_path) -> dict:  # noqa: F811
    return {
        **worker_environment(redis_socket, tmp_path),
        "GRID_SIMULATOR": "on",
        "GRID_SIMULATOR_SPEED": "600",
        "HEARTBEAT_SECONDS": "2",
        "HEARTBEAT_STALE_SECONDS": "6",
        "JOB_GENERATION_BATCH": "50",
    }


def drive(sender, seconds: float, every: float = 1.0, check=None) -> None:
    """Sends every periodic task each `every` seconds for `seconds` (beat at a quicker pace)."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        for name in periodic_tasks():
            sender.send_task(name)
        if check is not None:
            check()
        time.sleep(every)


def assert_nothing_left_behind():
    assert not Task.objects.exclude(lockedBy="").exists(), "task claims left behind"
    assert not ProcessLock.objects.exists(), "process locks left behind"
    assert not BrokerageCycle.objects.filter(status="running").exists(), "cycles left running"


@pytest.mark.django_db(transaction=True)
def test_two_workers_of_two_processes_for_a_grid_day_without_a_deadlock(redis_socket, tmp_path):  # noqa: F811
    call_command("demo_grid", size="small", no_progress=True, stdout=open(os.devnull, "w"))  # noqa: SIM115
    before = deadlocks()
    workers = start_workers(grid_environment(redis_socket, tmp_path), tmp_path, count=2, concurrency=2)
    sender = Celery(broker=f"redis+socket://{redis_socket}")
    try:
        drive(sender, seconds=float(os.environ.get("SOAK_SECONDS", "120")))
        sender.close()
    finally:
        stop_workers(workers)  # warm shutdown: the tasks under way finish
    logs = "\n".join((tmp_path / f"w{index}.log").read_text() for index in (1, 2))
    assert "deadlock detected" not in logs
    assert deadlocks() == before
    assert_nothing_left_behind()
    assert integrity_findings() == []
    # a grid day passed: work was done by both workers
    assert Job.objects.filter(jobStatus="finished").count() > 50
    succeeded = BrokerageCycle.objects.filter(status="succeeded")
    assert succeeded.values("worker").distinct().count() >= 2
    failed = BrokerageCycle.objects.filter(status="failed")
    print(  # the figures for the record (pytest -s)
        f"deadlocks {deadlocks() - before}; cycles {succeeded.count()} succeeded, {failed.count()} failed "
        f"({sorted(set(failed.values_list('error', flat=True)))[:5]}); jobs finished "
        f"{Job.objects.filter(jobStatus='finished').count()}; integrity findings 0"
    )


@pytest.mark.django_db(transaction=True)
def test_a_task_held_for_a_long_time_stops_only_itself(redis_socket, tmp_path):  # noqa: F811
    """Issue 31: a transaction held FOR UPDATE on one running task for 120 s and within 15 s every Celery slot
    waited on it (here 45 s, three times that). Now cycles skip it (SKIP LOCKED) or give up within the cycle lock
    timeout, brokerage goes on for every other task, and a dashboard action on it answers 409 within the web lock
    timeout."""
    from django.contrib.auth.models import User

    from brokerage.db_session import database_role_set

    call_command("demo_grid", size="small", no_progress=True, stdout=open(os.devnull, "w"))  # noqa: SIM115
    admin = User.objects.create_superuser("probe-admin", "probe@example.org", "x" * 20)
    workers = start_workers(grid_environment(redis_socket, tmp_path), tmp_path, count=2, concurrency=2)
    sender = Celery(broker=f"redis+socket://{redis_socket}")
    held_seconds = 45
    try:
        # several tasks running, so that others are left to broker while one is held (on a slow machine the
        # first task reaches running well before the second)
        deadline = time.monotonic() + 180
        while Task.objects.filter(status__in=("running", "scouting")).count() < 3:
            assert time.monotonic() < deadline, "fewer than three tasks reached running"
            drive(sender, seconds=2)
        victim = Task.objects.filter(status__in=("running", "scouting")).order_by("pk").first()
        hold_started = datetime.now(UTC)
        holding, release = threading.Event(), threading.Event()

        def hold():
            try:
                with transaction.atomic():
                    list(Task.objects.select_for_update().filter(pk=victim.pk).values_list("pk"))
                    holding.set()
                    release.wait(held_seconds + 30)
            finally:
                connection.close()

        def web_action(answer: dict):
            database_role_set("web")
            try:
                client = Client()
                client.force_login(admin)
                started = time.monotonic()
                response = client.post(f"/tasks/{victim.pk}/action/", {"action": "priority", "priority": "990"})
                answer.update(status=response.status_code, seconds=time.monotonic() - started, body=response.content)
            finally:
                database_role_set(None)
                connection.close()

        holder = threading.Thread(target=hold)
        holder.start()
        holding.wait(10)
        answer: dict = {}
        web = threading.Thread(target=web_action, args=(answer,))
        web.start()
        drive(sender, seconds=held_seconds)
        web.join(30)
        release.set()
        holder.join(30)
        sender.close()
    finally:
        stop_workers(workers)
    assert answer["status"] == 409
    assert answer["seconds"] < 6
    assert b"being changed by another process" in answer["body"]
    # every other task kept being brokered while the victim was held: cycles went on and decided for them
    during = BrokerageCycle.objects.filter(started__gte=hold_started, plugin="atlas_prod_job")
    assert during.filter(status="succeeded").count() >= 10
    assert Decision.objects.filter(cycle__in=during).exclude(task_id=victim.pk).exists()
    # and the grid went on with their jobs (the simulator once waited on the held task for every job's end). Which
    # moves a loaded machine fits in 45 s varies (CI saw no job end); that a busy task's jobs are skipped, not
    # waited for, is the deterministic probe of tests/brokerage/test_lock_order.py
    moved = JobStatusLog.objects.filter(timestamp__gte=hold_started).exclude(job__task_id=victim.pk)
    assert moved.exists()
    assert_nothing_left_behind()


class RestartableRedis:
    """A redis-server on a Unix socket that the test stops and starts again (an outage of the broker)."""

    def __init__(self, socket_path):
        self.socket_path = socket_path
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [shutil.which("redis-server"), "--port", "0", "--unixsocket", str(self.socket_path), "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while not self.socket_path.exists():
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.socket_path.unlink(missing_ok=True)


def postgres_control(action: str) -> None:
    """Stops or starts the server scripts/with_postgres.sh started (its data directory beside its socket)."""
    query = dict(parse_qsl(urlsplit(os.environ["DATABASE_URL"]).query))
    host, port = query["host"], query.get("port", "5432")
    pg_ctl = shutil.which("pg_ctl") or sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1]
    command = [pg_ctl, "-D", f"{host}/data", "-w", "-t", "60"]
    if action == "stop":
        command += ["-m", "fast", "stop"]
    else:
        options = f"-k {host} -c listen_addresses='' -p {port} -c fsync=off -c max_connections=200"
        command += ["-l", f"{host}/server.log", "-o", options, "start"]
    as_db_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*as_db_user, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.django_db(transaction=True)
def test_a_database_outage_is_waited_out_not_dropped(redis_socket, tmp_path):  # noqa: F811
    """Issue 31: PostgreSQL stopped for 20 s and the Celery tasks that met it failed and were dropped. Now they are
    retried with backoff and do their work once the database is back."""
    from tests import factories

    tasks = [factories.TaskFactory(status="registered") for _ in range(5)]
    workers = start_workers(worker_environment(redis_socket, tmp_path), tmp_path, count=1)
    sender = Celery(broker=f"redis+socket://{redis_socket}")
    try:
        wait_for_workers(sender, 1)
        connection.close()
        postgres_control("stop")
        try:
            sender.send_task("brokerage.tasks.task_refine_task")
            deadline = time.monotonic() + 60
            while "retry: Retry in" not in (tmp_path / "w1.log").read_text():
                assert time.monotonic() < deadline, "the task did not meet the outage"
                time.sleep(0.5)
            time.sleep(15)  # the outage goes on: the task waits, retrying
        finally:
            postgres_control("start")
        deadline = time.monotonic() + 120
        while Task.objects.filter(pk__in=[t.pk for t in tasks], status="registered").exists():
            assert time.monotonic() < deadline, "the task was dropped: " + (tmp_path / "w1.log").read_text()[-3000:]
            time.sleep(1)
        sender.close()
    finally:
        stop_workers(workers)
    log = (tmp_path / "w1.log").read_text()
    assert "raised unexpected" not in log
    assert "task_refine_task" in log
    assert "succeeded" in log


@pytest.mark.django_db(transaction=True)
def test_a_broker_outage_delays_sends_instead_of_dropping_them(tmp_path):
    """Issue 31: with Redis stopped, beat logged "Couldn't apply scheduled task" and dropped the run. A send now
    waits for the broker (CELERY_TASK_PUBLISH_RETRY_POLICY) and is delivered when it is back."""
    from django.conf import settings

    from tests import factories

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make test installs it as root)")
    redis = RestartableRedis(tmp_path / "redis.sock")
    redis.start()
    tasks = [factories.TaskFactory(status="registered") for _ in range(3)]
    workers = start_workers(worker_environment(redis.socket_path, tmp_path), tmp_path, count=1)
    sender = Celery(broker=f"redis+socket://{redis.socket_path}")
    sender.conf.task_publish_retry = settings.CELERY_TASK_PUBLISH_RETRY
    sender.conf.task_publish_retry_policy = settings.CELERY_TASK_PUBLISH_RETRY_POLICY
    try:
        pinger = Celery(broker=f"redis+socket://{redis.socket_path}")  # control traffic apart from the sends
        wait_for_workers(pinger, 1)
        pinger.close()
        # beat's producer has sent before the outage (kombu 5.7 cannot retry a producer's very first publish
        # across an outage: it fails with an AttributeError, see docs/decisions.md)
        sender.send_task("brokerage.tasks.process_lock_expire_task")
        redis.stop()
        sent = threading.Thread(target=sender.send_task, args=("brokerage.tasks.task_refine_task",))
        sent.start()
        time.sleep(8)
        assert sent.is_alive(), "the send gave up while the broker was away"
        redis.start()
        sent.join(60)
        assert not sent.is_alive()
        deadline = time.monotonic() + 90
        while Task.objects.filter(pk__in=[t.pk for t in tasks], status="registered").exists():
            assert time.monotonic() < deadline, "the send was lost: " + (tmp_path / "w1.log").read_text()[-3000:]
            time.sleep(1)
        sender.close()
    finally:
        stop_workers(workers)
        redis.stop()
