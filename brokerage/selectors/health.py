"""What the health probes read (issue 53; monitor/health.py answers them): each check returns (ok, detail) and costs
at most one short round trip, bounded by HEALTH_CHECK_TIMEOUT_SECONDS.

- database: a `SELECT 1` (and, on PostgreSQL, under a statement timeout);
- cache: a key written and read back (the throttles and the gdpconfig cache live there);
- broker: a connection to Celery's broker (Redis, RabbitMQ), or the filesystem transport's folders there and
  writable;
- migrations: none left to apply (read once per process until it says so: migrations only change with a deploy,
  which restarts the process);
- partitions (PostgreSQL): every time-partitioned table has the partition of the current period and of the next,
  the ones the housekeeping makes ahead, so that no write lands in a default partition.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.migrations.executor import MigrationExecutor

from brokerage.partitions import PARTITIONED, partitioned, partitions_missing

Check = tuple[bool, str]
_migrated = False  # once the plan is empty it stays so for this process (a deploy restarts it)


def _timeout() -> float:
    return float(settings.HEALTH_CHECK_TIMEOUT_SECONDS)


def health_database() -> Check:
    try:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"SET LOCAL statement_timeout = {int(_timeout() * 1000)}")
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any failure is the answer
        return False, f"{type(error).__name__}: {error}"[:300]
    return True, connection.vendor


def health_cache() -> Check:
    key, value = f"health:{uuid.uuid4().hex}", uuid.uuid4().hex
    try:
        cache.set(key, value, timeout=10)
        read = cache.get(key)
        cache.delete(key)
    except Exception as error:
        return False, f"{type(error).__name__}: {error}"[:300]
    return (read == value, "written and read back" if read == value else "a key written was not read back")


def health_broker() -> Check:
    url = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folders = {
            settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(name)
            for name in ("data_folder_in", "data_folder_out")
            if settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(name)
        }
        missing = sorted(folder for folder in folders if not os.access(folder, os.W_OK))
        return (not missing, "filesystem transport" if not missing else f"not writable: {', '.join(missing)}")
    from kombu import Connection

    try:
        with Connection(url, connect_timeout=_timeout()) as broker:
            broker.ensure_connection(max_retries=1, timeout=_timeout())
    except Exception as error:
        return False, f"{type(error).__name__}: {error}"[:300]
    return True, url.split("://", 1)[0]


def health_migrations() -> Check:
    global _migrated
    if _migrated:
        return True, "applied"
    try:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as error:
        return False, f"{type(error).__name__}: {error}"[:300]
    if plan:
        return False, f"{len(plan)} migrations not applied, the first {plan[0][0].app_label}.{plan[0][0].name}"
    _migrated = True
    return True, "applied"


def health_partitions(*, now: datetime) -> Check:
    if not partitioned():
        return True, f"not partitioned ({connection.vendor})"
    try:
        missing = partitions_missing(now=now)
    except Exception as error:
        return False, f"{type(error).__name__}: {error}"[:300]
    if missing:
        return False, f"not made ahead: {', '.join(missing[:5])}" + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
    return True, f"{len(PARTITIONED)} tables made ahead"
