"""Health probes for an orchestrator or a load balancer (issue 53), answered without login or throttle, in JSON:

- `/health/live`: the process answers (no database, nothing shared): restart it when this fails;
- `/health/ready`: it can serve: database, cache and broker reachable, migrations applied, time partitions made
  ahead (brokerage/selectors/health.py); a failing check is named with what it saw, and the answer is 503;
- `/health/startup`: it has started: database reachable and migrations applied (an orchestrator holds the other
  probes until this passes).

A ready answer is kept HEALTH_CACHE_SECONDS in the process, so that a flood of probes costs one round of checks
per process and period, whatever the number of callers.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from brokerage.selectors.health import (
    health_broker,
    health_cache,
    health_database,
    health_migrations,
    health_partitions,
)

_lock = threading.Lock()
_kept: dict[str, tuple[float, int, dict]] = {}


def _answer(name: str, checks) -> JsonResponse:
    now = time.monotonic()
    with _lock:
        kept = _kept.get(name)
        if kept is None or now - kept[0] > settings.HEALTH_CACHE_SECONDS:
            results = {check: dict(zip(("ok", "detail"), run(), strict=True)) for check, run in checks()}
            failing = sorted(check for check, result in results.items() if result["ok"] is False)
            body = {"status": "fail" if failing else "pass", "failing": failing, "checks": results}
            kept = (now, 503 if failing else 200, body)
            _kept[name] = kept
    return JsonResponse(kept[2], status=kept[1])


@never_cache
@require_GET
def health_live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "pass"})


def _after_database(checks: dict):
    """The checks in order, those that read the database answered "not checked" (ok null) when it is unreachable:
    one failure named once, and no wait on a dead server for each."""

    def ordered():
        database = health_database()
        yield "database", lambda: database
        for name, (run, reads_database) in checks.items():
            yield (
                name,
                (lambda: (None, "not checked: the database is unreachable"))
                if (reads_database and not database[0])
                else run,
            )

    return ordered


_ready_checks = _after_database(
    {
        "cache": (health_cache, False),
        "broker": (health_broker, False),
        "migrations": (health_migrations, True),
        "partitions": (lambda: health_partitions(now=timezone.now()), True),
    }
)
_startup_checks = _after_database({"migrations": (health_migrations, True)})


@never_cache
@require_GET
def health_ready(request: HttpRequest) -> JsonResponse:
    return _answer("ready", _ready_checks)


@never_cache
@require_GET
def health_startup(request: HttpRequest) -> JsonResponse:
    return _answer("startup", _startup_checks)
