"""Heartbeats of the processes that hold process locks and task claims.

A process that takes a lock or a claim starts, once, a daemon thread that records its worker name (host:pid, the
lockedBy value) every HEARTBEAT_SECONDS. A holder whose last beat is older than HEARTBEAT_STALE_SECONDS is gone
(killed, its machine lost): its locks and claims are free at once, without waiting PROCESS_LOCK_TIMEOUT_MINUTES,
which stays the bound for a holder that is alive but hung. Beats use the real clock, whatever `now` a cycle runs
with.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from brokerage.models import WorkerHeartbeat

logger = logging.getLogger(__name__)

_started_in_pid: int | None = None
_start_lock = threading.Lock()


def heartbeat_seconds() -> float:
    return float(getattr(settings, "HEARTBEAT_SECONDS", 20))


def heartbeat_stale() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "HEARTBEAT_STALE_SECONDS", 60)))


def worker_heartbeat_beat(*, name: str) -> None:
    """Records a sign of life of `name` now (real time)."""
    WorkerHeartbeat.objects.bulk_create(  # one upsert statement
        [WorkerHeartbeat(name=name, beat=timezone.now())],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=["beat"],
    )


def _beat_forever(name: str, stop: threading.Event) -> None:
    while not stop.wait(heartbeat_seconds()):
        try:
            worker_heartbeat_beat(name=name)
        except Exception:  # a database hiccup must not end the beats: the next one may succeed
            logger.warning("heartbeat of %s not recorded", name, exc_info=True)
        finally:
            connection.close()  # the thread's own connection: never left open between beats


def worker_heartbeat_start(*, name: str) -> None:
    """Beats for this process now and from a daemon thread from now on (once per process, again after a fork)."""
    global _started_in_pid
    worker_heartbeat_beat(name=name)
    with _start_lock:
        if _started_in_pid == os.getpid():
            return
        _started_in_pid = os.getpid()
    thread = threading.Thread(target=_beat_forever, args=(name, threading.Event()), daemon=True, name="heartbeat")
    thread.start()


def holders_gone(names: Iterable[str]) -> set[str]:
    """The holders among `names` whose heartbeat is stale. A holder that never beat is not judged here (the lock
    timeout applies to it)."""
    names = {name for name in names if name}
    if not names:
        return set()
    limit = timezone.now() - heartbeat_stale()
    return set(WorkerHeartbeat.objects.filter(name__in=names, beat__lt=limit).values_list("name", flat=True))
