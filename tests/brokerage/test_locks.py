"""JEDI process locks: one holder at a time, takeover after expiry, and the periodic expiry task."""

import os
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from brokerage.models import BrokerageCycle, ProcessLock, Task, WorkerHeartbeat
from brokerage.services.cycles import task_claim
from brokerage.services.locks import (
    _advisory_key,
    exclusive_run,
    exclusive_run_key,
    process_lock_acquire,
    process_lock_expire,
    process_lock_release,
)
from brokerage.services.simulator import grid_simulate_turn
from brokerage.tasks import process_lock_expire_task
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def lock_key():
    work_queue = factories.WorkQueueFactory()
    return {"vo": "atlas", "prod_source_label": "managed", "work_queue_id": work_queue.pk}


def test_one_holder_at_a_time(lock_key):
    assert process_lock_acquire(**lock_key, owner="worker-1", now=NOW, timeout_minutes=30)
    assert not process_lock_acquire(**lock_key, owner="worker-2", now=NOW + timedelta(minutes=5), timeout_minutes=30)
    # the holder refreshes its own lock
    assert process_lock_acquire(**lock_key, owner="worker-1", now=NOW + timedelta(minutes=10), timeout_minutes=30)
    assert ProcessLock.objects.get().lockedTime == NOW + timedelta(minutes=10)


def test_expired_lock_is_taken_over_exactly_at_the_limit(lock_key):
    process_lock_acquire(**lock_key, owner="worker-1", now=NOW, timeout_minutes=30)
    assert not process_lock_acquire(**lock_key, owner="worker-2", now=NOW + timedelta(minutes=30), timeout_minutes=30)
    assert process_lock_acquire(
        **lock_key, owner="worker-2", now=NOW + timedelta(minutes=30, seconds=1), timeout_minutes=30
    )
    assert ProcessLock.objects.get().lockedBy == "worker-2"
    assert not process_lock_release(**lock_key, owner="worker-1")
    assert process_lock_release(**lock_key, owner="worker-2")
    assert not ProcessLock.objects.exists()


def test_locks_are_per_cloud_and_resource_type(lock_key):
    assert process_lock_acquire(**lock_key, owner="w1", now=NOW, cloud="US")
    assert process_lock_acquire(**lock_key, owner="w2", now=NOW, cloud="DE")
    assert process_lock_acquire(**lock_key, owner="w3", now=NOW, cloud="DE", resource_type="MCORE")
    assert ProcessLock.objects.count() == 3


def test_expiry_removes_only_stale_locks():
    factories.ProcessLockFactory(lockedTime=NOW - timedelta(minutes=31))
    fresh = factories.ProcessLockFactory(lockedTime=NOW - timedelta(minutes=29))
    assert process_lock_expire(now=NOW, timeout_minutes=30) == 1
    assert list(ProcessLock.objects.all()) == [fresh]


def test_periodic_task_expires_with_the_configured_timeout(settings):
    settings.PROCESS_LOCK_TIMEOUT_MINUTES = 1
    factories.ProcessLockFactory(lockedTime=datetime.now(UTC) - timedelta(minutes=5))
    assert process_lock_expire_task() == 1
    assert not ProcessLock.objects.exists()


class TestGoneHolders:
    """A holder whose heartbeat is stale is gone: what it held is free at once, not after the 30-minute timeout."""

    def test_a_lock_of_a_gone_holder_is_taken_over(self, db):

        work_queue = factories.WorkQueueFactory()
        now = timezone.now()
        key = {"vo": "atlas", "prod_source_label": "managed", "work_queue_id": work_queue.pk}
        assert process_lock_acquire(**key, owner="dead:1", now=now)
        # two minutes without a beat (HEARTBEAT_STALE_SECONDS is 60): gone, though its lock is only 1 minute old
        WorkerHeartbeat.objects.filter(name="dead:1").update(beat=now - timedelta(minutes=2))
        assert process_lock_acquire(**key, owner="alive:2", now=now + timedelta(minutes=1))
        assert ProcessLock.objects.get().lockedBy == "alive:2"

    def test_a_lock_of_a_live_holder_is_kept(self, db):

        work_queue = factories.WorkQueueFactory()
        now = timezone.now()
        key = {"vo": "atlas", "prod_source_label": "managed", "work_queue_id": work_queue.pk}
        assert process_lock_acquire(**key, owner="alive:1", now=now)
        assert not process_lock_acquire(**key, owner="other:2", now=now + timedelta(minutes=29))

    def test_the_sweep_frees_locks_claims_and_cycles_of_gone_holders(self, db):

        now = timezone.now()
        WorkerHeartbeat.objects.create(name="dead:1", beat=now - timedelta(seconds=90))
        WorkerHeartbeat.objects.create(name="alive:2", beat=now - timedelta(seconds=10))
        factories.ProcessLockFactory(lockedBy="dead:1", lockedTime=now)
        kept = factories.ProcessLockFactory(lockedBy="alive:2", lockedTime=now)
        claimed = factories.TaskFactory(lockedBy="dead:1", lockedTime=now)
        held = factories.TaskFactory(lockedBy="alive:2", lockedTime=now)
        lost = BrokerageCycle.objects.create(plugin="atlas_prod_task", started=now, worker="dead:1")
        running = BrokerageCycle.objects.create(plugin="atlas_prod_task", started=now, worker="alive:2")
        assert process_lock_expire(now=now) == 1
        assert list(ProcessLock.objects.all()) == [kept]
        assert Task.objects.get(pk=claimed.pk).lockedBy == ""
        assert Task.objects.get(pk=held.pk).lockedBy == "alive:2"
        lost.refresh_from_db()
        assert (lost.status, lost.error) == ("failed", "worker lost: its heartbeat stopped")
        assert BrokerageCycle.objects.get(pk=running.pk).status == "running"

    def test_task_claims_of_a_gone_holder_are_taken_over(self, db):

        now = timezone.now()
        WorkerHeartbeat.objects.create(name="dead:1", beat=now - timedelta(minutes=5))
        WorkerHeartbeat.objects.create(name="alive:2", beat=now)
        orphan = factories.TaskFactory(status="assigning", lockedBy="dead:1", lockedTime=now)
        busy = factories.TaskFactory(status="assigning", lockedBy="alive:2", lockedTime=now)
        taken = task_claim(
            candidates=Task.objects.filter(status="assigning").order_by("pk"), now=now, owner="me:3", limit=10
        )
        assert taken == [orphan.pk]
        assert Task.objects.get(pk=busy.pk).lockedBy == "alive:2"


def test_what_a_task_left_behind_is_released_when_it_ends():
    """config.celery calls this after every task: a cycle this process still has running ended without
    closing, and its claims and process locks are stale (issue 31: a live worker kept 13 claims for 30 minutes)."""
    from brokerage.services.decisions import worker_name
    from brokerage.services.locks import worker_leftovers_release

    me = worker_name()
    cycle = BrokerageCycle.objects.create(plugin="atlas_prod_task", started=NOW, status="running", worker=me)
    other_cycle = BrokerageCycle.objects.create(plugin="atlas_prod_task", started=NOW, status="running", worker="b:2")
    mine = [factories.TaskFactory(status="assigning", lockedBy=me, lockedTime=NOW) for _ in range(3)]
    theirs = factories.TaskFactory(status="assigning", lockedBy="b:2", lockedTime=NOW)
    factories.ProcessLockFactory(lockedBy=me, lockedTime=NOW)
    factories.ProcessLockFactory(lockedBy="b:2", lockedTime=NOW)

    counts = worker_leftovers_release(task_name="brokerage.tasks.job_generation_cycle_task", error="DeadlockDetected")
    assert counts == {"cycles": 1, "claims": 3, "locks": 1}
    cycle.refresh_from_db()
    assert cycle.status == "failed"
    assert cycle.error == "ended without closing in brokerage.tasks.job_generation_cycle_task: DeadlockDetected"
    assert not Task.objects.filter(pk__in=[t.pk for t in mine]).exclude(lockedBy="").exists()
    # another process's work is not touched
    assert Task.objects.get(pk=theirs.pk).lockedBy == "b:2"
    assert BrokerageCycle.objects.get(pk=other_cycle.pk).status == "running"
    assert list(ProcessLock.objects.values_list("lockedBy", flat=True)) == ["b:2"]
    assert worker_leftovers_release(task_name="x") == {"cycles": 0, "claims": 0, "locks": 0}


def test_claims_are_released_even_when_closing_the_cycle_fails(monkeypatch):
    from brokerage.services import cycles

    tasks = [factories.TaskFactory(status="assigning") for _ in range(2)]

    def broken_finish(**kwargs):
        raise RuntimeError("database went away while closing")

    monkeypatch.setattr(cycles, "cycle_finish", broken_finish)
    with pytest.raises(RuntimeError):
        cycles.task_brokerage_cycle_run(now=timezone.now())
    assert not Task.objects.filter(pk__in=[t.pk for t in tasks]).exclude(lockedBy="").exists()


def _in_another_thread(function):
    """`function()` run in a thread of its own (its own database connection, as another worker's), returned."""
    import threading

    from django.db import connection

    result = {}

    def run():
        try:
            result["value"] = function()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    return result.get("value")


def _try_exclusive(name):
    with exclusive_run(name) as mine:
        return mine


@pytest.mark.django_db(transaction=True)
def test_exclusive_run_lets_one_in_and_never_waits():
    with exclusive_run("grid simulator") as mine:
        assert mine
        assert _in_another_thread(lambda: _try_exclusive("grid simulator")) is False
        # another name is another run
        assert _in_another_thread(lambda: _try_exclusive("watchdog")) is True
    assert _in_another_thread(lambda: _try_exclusive("grid simulator")) is True


@pytest.mark.django_db(transaction=True)
def test_a_simulator_turn_is_left_out_while_a_step_runs():
    with exclusive_run("grid simulator"):
        assert _in_another_thread(lambda: grid_simulate_turn(now=NOW, speed=60)) is None
    report = _in_another_thread(lambda: grid_simulate_turn(now=NOW, speed=60))
    assert report is not None
    assert report.started == 0


@pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="the cache's path: SQLite only")
def test_without_postgresql_a_run_whose_holder_is_gone_is_taken_over(settings):
    from django.core.cache import cache

    cache.set(exclusive_run_key("grid simulator"), "lost-host:4242", 600)
    WorkerHeartbeat.objects.create(name="lost-host:4242", beat=timezone.now() - timedelta(seconds=31))
    settings.HEARTBEAT_STALE_SECONDS = 30
    with exclusive_run("grid simulator") as mine:
        assert mine
    assert cache.get(exclusive_run_key("grid simulator")) is None  # released at the end
    cache.set(exclusive_run_key("grid simulator"), "alive-host:7", 600)
    WorkerHeartbeat.objects.create(name="alive-host:7", beat=timezone.now())
    with exclusive_run("grid simulator") as mine:
        assert not mine
    assert cache.get(exclusive_run_key("grid simulator")) == "alive-host:7"  # not released by who did not hold it


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="advisory locks")
def test_on_postgresql_a_dead_holders_run_is_free_at_once():
    from django.db import connection

    def die_holding():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [_advisory_key("grid simulator")])
            held = cursor.fetchone()[0]
        return held  # the thread's connection closes without unlocking, as a killed worker's does

    assert _in_another_thread(die_holding) is True
    # the server frees a session's locks when its backend ends, a moment after the client closed the connection
    # (CI saw the lock still held right after the close): the run is free as soon as that backend is gone
    deadline = time.monotonic() + 5
    while not _try_exclusive("grid simulator") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _try_exclusive("grid simulator") is True


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="advisory locks")
def test_on_postgresql_a_failed_unlock_closes_the_connection_and_frees_the_run():
    # a connection whose unlock fails (its transaction failed, it answers nothing more) is closed: kept open, it
    # would hold the session lock and every later run would find it taken
    from django.db import DatabaseError, connection

    def run_whose_unlock_fails():
        with exclusive_run("grid simulator") as mine:
            assert mine
            real_cursor = connection.cursor

            def failing_cursor(*args, **kwargs):
                raise DatabaseError("current transaction is aborted")

            connection.cursor = failing_cursor
        connection.cursor = real_cursor
        return connection.connection is None  # closed

    assert _in_another_thread(run_whose_unlock_fails) is True
    deadline = time.monotonic() + 5
    while not _try_exclusive("grid simulator") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _try_exclusive("grid simulator") is True
