"""What the processes count for Prometheus (issue 53): decisions per plugin and outcome, candidates removed per
reason code, housekeeping rows moved and dropped, job moves per status reached, each Celery task's wait behind the
moment it was sent (a periodic one: its beat) and its run time. Written in prometheus-client's multiprocess mode
(PROMETHEUS_MULTIPROC_DIR, config/settings/base.py): each gunicorn and Celery process writes its own files,
/metrics sums them (monitor.metrics). The grid's state at a scrape is read from the database there, not here.

Cardinality is bounded by construction: plugins, outcomes, reason codes, statuses, housekeeping tables and our
Celery task names are fixed sets of the code, never names of tasks, queues or users."""

from __future__ import annotations

import logging
import time
from collections import Counter as Tally
from collections.abc import Iterable

from django.db import transaction
from prometheus_client import Counter, Histogram

logger = logging.getLogger(__name__)

DECISIONS = Counter("brokerage_decisions", "Decisions stored, by brokerage plugin and outcome.", ["plugin", "outcome"])
CANDIDATES_REMOVED = Counter(
    "brokerage_candidates_removed",
    "Candidates removed by a rule in stored decisions, by plugin and reason code (PanDA's codes).",
    ["plugin", "code"],
)
HOUSEKEEPING_ROWS = Counter(
    "brokerage_housekeeping_rows",
    "Rows the housekeeping moved to the archive or dropped, by table.",
    ["table", "action"],
)
JOB_MOVES = Counter("brokerage_job_moves", "Jobs moved into a status (seed 000's job machine).", ["status"])
# a periodic task's wait runs from under a second to a few periods (the longest beat is ten minutes)
WAIT_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, float("inf"))
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, float("inf"))
TASK_WAIT = Histogram(
    "brokerage_celery_task_wait_seconds",
    "How long a Celery task waited from being sent (a periodic one: its beat) to starting, by task.",
    ["task"],
    buckets=WAIT_BUCKETS,
)
TASK_RUN = Histogram(
    "brokerage_celery_task_run_seconds", "How long a Celery task ran, by task.", ["task"], buckets=RUN_BUCKETS
)
# the header a sent task carries its sending time in (Celery copies unknown headers into the task's request)
SENT_AT = "brokerage_sent_at"


def counted(count) -> None:
    """Runs a count; a failure to count (the metrics folder removed or full) is logged, never raised: metrics must
    not stop a cycle or a request."""
    try:
        count()
    except (OSError, ValueError) as error:
        logger.warning("metrics: not counted (%s: %s); is PROMETHEUS_MULTIPROC_DIR there?", type(error).__name__, error)


def decisions_count(decisions: Iterable) -> None:
    """Counts stored decisions (rows with plugin, outcome and reason_counts) once their transaction commits: a
    rolled-back cycle counted nothing."""
    outcomes: Tally = Tally()
    removed: Tally = Tally()
    for decision in decisions:
        outcomes[(decision.plugin, decision.outcome)] += 1
        for code, n in (decision.reason_counts or {}).items():
            removed[(decision.plugin, code)] += n

    def count() -> None:
        for (plugin, outcome), n in outcomes.items():
            DECISIONS.labels(plugin, outcome).inc(n)
        for (plugin, code), n in removed.items():
            CANDIDATES_REMOVED.labels(plugin, code).inc(n)

    transaction.on_commit(lambda: counted(count))


def job_moves_count(*, status: str, n: int) -> None:
    """Counts `n` jobs moved into `status`, once their transaction commits."""
    if n:
        transaction.on_commit(lambda: counted(lambda: JOB_MOVES.labels(status).inc(n)))


def housekeeping_count(tables: dict[str, dict]) -> None:
    """Counts a housekeeping run's rows, per table: {"moved": n, "dropped": n, …} as HousekeepingRun.tables holds."""
    for table, done in tables.items():
        for action in ("moved", "dropped"):
            if done.get(action):
                counted(
                    lambda table=table, action=action, n=done[action]: HOUSEKEEPING_ROWS.labels(table, action).inc(n)
                )


# --- Celery: connected in BrokerageConfig.ready() (every process that sends or runs tasks) ---

_started: dict[str, float] = {}


def on_task_sent(sender=None, headers=None, **_) -> None:
    if headers is not None:
        headers[SENT_AT] = time.time()


def on_task_started(sender=None, task_id=None, task=None, **_) -> None:
    now = time.time()
    sent = getattr(task.request, SENT_AT, None) if task is not None else None
    if isinstance(sent, int | float):
        counted(lambda: TASK_WAIT.labels(task.name).observe(max(0.0, now - sent)))
    if task_id:
        _started[task_id] = time.perf_counter()


def on_task_ended(sender=None, task_id=None, task=None, **_) -> None:
    began = _started.pop(task_id, None) if task_id else None
    if began is not None and task is not None:
        seconds = time.perf_counter() - began
        counted(lambda: TASK_RUN.labels(task.name).observe(seconds))
