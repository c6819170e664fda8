"""Bounded waits on PostgreSQL: every connection of a web process or a Celery worker carries a `lock_timeout`
and a `statement_timeout`, with separate values for the two (issue 31: one row held FOR UPDATE for two minutes
stopped every Celery slot and hung a dashboard action until gunicorn killed it).

A process says what it is once (`database_role_set`): the WSGI/ASGI entry points say "web", the Celery worker
says "cycle" (config.celery). Management commands, the shell and migrations say nothing and wait as long as
PostgreSQL lets them. The values come from the settings DB_{WEB,CYCLE}_{LOCK,STATEMENT}_TIMEOUT_MS (0: none).

What a timeout means to the caller: `lock_timeout_error` — a row another transaction holds (the web answers 409,
a cycle records itself failed and releases its claims); `statement_timeout_error` — a query that ran too long (the
web answers 503, never a hung worker).
"""

from __future__ import annotations

from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created
from django.dispatch import receiver

ROLES = ("web", "cycle")
_role: str | None = None

# PostgreSQL's SQLSTATEs (Appendix A): lock_not_available, query_canceled
LOCK_NOT_AVAILABLE = "55P03"
QUERY_CANCELED = "57014"


def database_role_set(role: str | None) -> None:
    """Declares this process a web server or a cycle worker; open connections are closed so the next ones get
    the role's timeouts."""
    global _role
    if role is not None and role not in ROLES:
        raise ValueError(f"database role {role!r}: expected one of {ROLES}")
    _role = role
    connections.close_all()


def database_role() -> str | None:
    return _role


def role_timeouts(role: str | None) -> tuple[int, int]:
    """(lock_timeout, statement_timeout) in milliseconds for a role; (0, 0) for a process without one."""
    if role is None:
        return 0, 0
    prefix = f"DB_{role.upper()}_"
    return int(getattr(settings, prefix + "LOCK_TIMEOUT_MS")), int(getattr(settings, prefix + "STATEMENT_TIMEOUT_MS"))


@receiver(connection_created)
def _apply_timeouts(sender, connection, **kwargs) -> None:
    if connection.vendor != "postgresql" or _role is None:
        return
    lock_ms, statement_ms = role_timeouts(_role)
    with connection.cursor() as cursor:
        cursor.execute(f"SET lock_timeout = {lock_ms:d}; SET statement_timeout = {statement_ms:d}")


def _sqlstate(error: BaseException) -> str | None:
    while error is not None:
        state = getattr(error, "sqlstate", None)
        if state:
            return state
        error = error.__cause__
    return None


def lock_timeout_error(error: BaseException) -> bool:
    """True when `error` is PostgreSQL giving up a wait for a row lock (lock_timeout, or NOWAIT)."""
    return _sqlstate(error) == LOCK_NOT_AVAILABLE


def statement_timeout_error(error: BaseException) -> bool:
    """True when `error` is PostgreSQL cancelling a statement (statement_timeout)."""
    return _sqlstate(error) == QUERY_CANCELED
