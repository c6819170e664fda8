"""JEDI process locks: one holder at a time, takeover after expiry, and the periodic expiry task."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import ProcessLock
from brokerage.services.locks import process_lock_acquire, process_lock_expire, process_lock_release
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
