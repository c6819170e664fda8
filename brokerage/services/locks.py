"""JEDI process locks: take, refresh, release, and expire the locks of workers that died."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction

from brokerage.models import ProcessLock


def _lock_filter(*, vo: str, prod_source_label: str, work_queue_id: int, cloud: str, resource_type: str) -> dict:
    return {
        "vo": vo,
        "prodSourceLabel": prod_source_label,
        "workQueue_id": work_queue_id,
        "cloud": cloud,
        "resource_type": resource_type,
    }


def _timeout(minutes: int | None) -> timedelta:
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
    timeout = _timeout(timeout_minutes)
    key = _lock_filter(
        vo=vo,
        prod_source_label=prod_source_label,
        work_queue_id=work_queue_id,
        cloud=cloud,
        resource_type=resource_type,
    )
    try:
        with transaction.atomic():
            ProcessLock.objects.create(**key, lockedBy=owner, lockedTime=now)
        return True
    except IntegrityError:
        pass
    taken = ProcessLock.objects.filter(**key, lockedBy=owner).update(lockedTime=now)
    if taken:
        return True
    return ProcessLock.objects.filter(**key, lockedTime__lt=now - timeout).update(lockedBy=owner, lockedTime=now) == 1


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
    """Deletes locks older than the timeout (their holder died or hung); returns how many."""
    timeout = _timeout(timeout_minutes)
    deleted, _ = ProcessLock.objects.filter(lockedTime__lt=now - timeout).delete()
    return deleted
