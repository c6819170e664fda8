"""JEDI process locks: take, refresh, release, and free the locks of workers that died.

A lock is free when its holder's heartbeat is stale (the holder is gone: within HEARTBEAT_STALE_SECONDS) or when
it is older than PROCESS_LOCK_TIMEOUT_MINUTES (the holder may be alive but hung). The same two rules free task
claims (services.cycles.task_claim), and the sweep marks the cycles a lost worker left running as failed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Greatest

from brokerage.models import BrokerageCycle, ProcessLock, Task
from brokerage.services.bulk import rows_update
from brokerage.services.heartbeat import holders_gone, worker_heartbeat_start

logger = logging.getLogger(__name__)


def _lock_filter(*, vo: str, prod_source_label: str, work_queue_id: int, cloud: str, resource_type: str) -> dict:
    return {
        "vo": vo,
        "prodSourceLabel": prod_source_label,
        "workQueue_id": work_queue_id,
        "cloud": cloud,
        "resource_type": resource_type,
    }


def lock_timeout(minutes: int | None = None) -> timedelta:
    """The one lock timeout of process locks and task claims (PROCESS_LOCK_TIMEOUT_MINUTES)."""
    return timedelta(minutes=minutes if minutes is not None else settings.PROCESS_LOCK_TIMEOUT_MINUTES)


def process_lock_acquire(
    *,
    vo: str,
    prod_source_label: str,
    work_queue_id: int,
    owner: str,
    now: datetime,
    cloud: str = "",
    resource_type: str = "",
    timeout_minutes: int | None = None,
) -> bool:
    """Takes the lock for `owner`; True if it is now held by `owner` (new, refreshed, or taken over because the
    previous holder let it expire). One conditional statement decides, so two workers never both win."""
    timeout = lock_timeout(timeout_minutes)
    key = _lock_filter(
        vo=vo,
        prod_source_label=prod_source_label,
        work_queue_id=work_queue_id,
        cloud=cloud,
        resource_type=resource_type,
    )
    worker_heartbeat_start(name=owner)
    try:
        with transaction.atomic():
            ProcessLock.objects.create(**key, lockedBy=owner, lockedTime=now)
        return True
    except IntegrityError:
        pass
    taken = ProcessLock.objects.filter(**key, lockedBy=owner).update(lockedTime=now)
    if taken:
        return True
    holder = ProcessLock.objects.filter(**key).values_list("lockedBy", flat=True).first()
    free = Q(lockedTime__lt=now - timeout) | Q(lockedBy__in=holders_gone([holder or ""]))
    return ProcessLock.objects.filter(free, **key).update(lockedBy=owner, lockedTime=now) == 1


def process_lock_release(
    *, vo: str, prod_source_label: str, work_queue_id: int, owner: str, cloud: str = "", resource_type: str = ""
) -> bool:
    """Releases the lock if `owner` holds it; False when someone else does (it was taken over after expiry)."""
    key = _lock_filter(
        vo=vo,
        prod_source_label=prod_source_label,
        work_queue_id=work_queue_id,
        cloud=cloud,
        resource_type=resource_type,
    )
    deleted, _ = ProcessLock.objects.filter(**key, lockedBy=owner).delete()
    return deleted == 1


def process_lock_expire(*, now: datetime, timeout_minutes: int | None = None) -> int:
    """The sweep (beat, every PROCESS_LOCK_EXPIRY_INTERVAL_SECONDS): deletes the process locks of holders that are
    gone or older than the timeout, gives back the task claims of holders that are gone, and marks the cycles
    they left running as failed. Returns how many locks it deleted."""
    timeout = lock_timeout(timeout_minutes)
    holders = set(ProcessLock.objects.values_list("lockedBy", flat=True))
    holders |= set(Task.objects.exclude(lockedBy="").values_list("lockedBy", flat=True).distinct())
    holders |= set(BrokerageCycle.objects.filter(status="running").values_list("worker", flat=True).distinct())
    gone = holders_gone(holders)
    deleted, _ = ProcessLock.objects.filter(Q(lockedTime__lt=now - timeout) | Q(lockedBy__in=gone)).delete()
    if gone:
        # a row busy elsewhere keeps its claim until the next sweep: the sweep never waits
        rows_update(
            Task,
            Task.objects.filter(lockedBy__in=gone).values_list("pk", flat=True),
            skip_locked=True,
            lockedBy="",
            lockedTime=None,
        )
        BrokerageCycle.objects.filter(status="running", worker__in=gone).update(
            status="failed", finished=Greatest(F("started"), Value(now)), error="worker lost: its heartbeat stopped"
        )
    return deleted


def worker_leftovers_release(*, task_name: str, error: str = "", worker: str | None = None) -> dict[str, int]:
    """After a Celery task in this worker process returned or raised: the cycles the process still has running
    are closed as failed (they ended without closing), its task claims are given back and its process locks
    deleted. Only valid where a process runs one task at a time (prefork or solo pool). Returns the counts."""
    from django.utils import timezone

    from brokerage.services.decisions import worker_name

    worker = worker or worker_name()
    now = timezone.now()
    why = f"ended without closing in {task_name or 'a task'}" + (f": {error}" if error else "")
    cycles = BrokerageCycle.objects.filter(status="running", worker=worker).update(
        status="failed", finished=Greatest(F("started"), Value(now)), error=why[:2000]
    )
    claims = rows_update(
        Task, Task.objects.filter(lockedBy=worker).values_list("pk", flat=True), lockedBy="", lockedTime=None
    )
    locks, _ = ProcessLock.objects.filter(lockedBy=worker).delete()
    if cycles or claims or locks:
        logger.warning("%s left %d cycles running, %d claims and %d locks: released", why, cycles, len(claims), locks)
    return {"cycles": cycles, "claims": len(claims), "locks": locks}


def _advisory_key(name: str) -> int:
    """A stable signed 64-bit key for PostgreSQL's advisory locks."""
    return int.from_bytes(hashlib.blake2b(f"brokerage:{name}".encode(), digest_size=8).digest(), "big", signed=True)


def exclusive_run_key(name: str) -> str:
    """The shared-cache entry naming the holder of an exclusive run where there is no PostgreSQL (no spaces: a
    memcached key may not have them)."""
    return "exclusive-run:" + name.replace(" ", "-")


@contextmanager
def exclusive_run(name: str) -> Iterator[bool]:
    """One run of `name` at a time over every worker: yields True to the one that may run now, False (at once,
    never waiting) while another process runs it. For periodic work that must not overlap itself: a beat keeps
    sending it every period whether or not the last run ended, and two runs at once would fight over the same
    rows (two grid simulator steps moving the same jobs waited on each other's row locks for seconds, issue 32).

    PostgreSQL: a session advisory lock, which the server frees when the holder's connection ends (a killed
    worker holds nothing). Elsewhere (SQLite, one machine): an entry in the shared cache naming the holder, taken
    over once the holder's heartbeat is stale, as process locks are."""
    if connection.vendor == "postgresql":
        key = _advisory_key(name)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
            held = bool(cursor.fetchone()[0])
        try:
            yield held
        finally:
            if held:
                try:
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
                except DatabaseError:
                    # the connection broke (the server freed the lock with it), or its transaction failed and it
                    # answers nothing more: closed, so that the server frees the lock rather than this worker's
                    # kept connection holding it and every later run finding it taken
                    logger.warning("exclusive run %s: unlock failed, the connection is closed with the lock", name)
                    connection.close()
        return
    from brokerage.services.decisions import worker_name

    owner, cache_key = worker_name(), exclusive_run_key(name)
    worker_heartbeat_start(name=owner)
    held = cache.add(cache_key, owner, timeout=lock_timeout().total_seconds())
    if not held:
        holder = cache.get(cache_key)
        if holder is None or holder in holders_gone([holder]):
            cache.set(cache_key, owner, timeout=lock_timeout().total_seconds())
            held = True
    try:
        yield held
    finally:
        if held and cache.get(cache_key) == owner:
            cache.delete(cache_key)
