"""Brokerage cycles over the database. A cycle claims its tasks (row locks that other workers skip, plus JEDI's
lockedBy/lockedTime), builds their scenarios in a fixed number of queries, runs the engine, stores every
decision with its trace, applies the outcomes, and records itself as a BrokerageCycle."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Q, QuerySet

from brokerage.adapters.grid import ANALYSIS_LABELS
from brokerage.adapters.task_brokerage import PLUGIN, grid_base, task_scenarios_live
from brokerage.grid_clock import grid_minutes
from brokerage.models import BrokerageCycle, Task
from brokerage.plugins import plugin_registry
from brokerage.selectors.gdpconfig import cycle_gdpconfig
from brokerage.services.bulk import rows_lock
from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_store_many, worker_name
from brokerage.services.heartbeat import holders_gone, worker_heartbeat_start
from brokerage.services.locks import lock_timeout
from brokerage.services.status import task_status_transition_many
from brokerage.states import WAITING_FOR_NUCLEUS

logger = logging.getLogger(__name__)

# seed 000: "If all nuclei are skipped, the task is pending for 30 min and then gets retried"
PENDING_RETRY_MINUTES = 30
ACTOR = "task brokerage"


# How long a task stays pending after a failed brokerage (REFERENCE.md retry_after_minutes): 30 minutes after
# task brokerage, 60 after production job brokerage, 20 after analysis job brokerage. Grid minutes
# (brokerage.grid_clock): the wall clock in production, shortened like everything else in the demo.
PENDING_RETRY_TASK_BROKERAGE_MINUTES = PENDING_RETRY_MINUTES
PENDING_RETRY_PRODUCTION_JOBS_MINUTES = 60
PENDING_RETRY_ANALYSIS_JOBS_MINUTES = 20
JOB_BROKERAGE_STATUSES = ("ready", "scouted", "running")


def task_pending_retry(*, now: datetime) -> list[int]:
    """Tasks pending after a failed brokerage go back to where they were once their retry time has passed.
    One query and one bulk move per status they return to."""
    after_task_brokerage = now - grid_minutes(PENDING_RETRY_TASK_BROKERAGE_MINUTES)
    after_analysis_jobs = now - grid_minutes(PENDING_RETRY_ANALYSIS_JOBS_MINUTES)
    after_production_jobs = now - grid_minutes(PENDING_RETRY_PRODUCTION_JOBS_MINUTES)
    due = list(
        Task.objects.filter(status="pending")
        .filter(
            Q(oldStatus=WAITING_FOR_NUCLEUS, stateChangeTime__lte=after_task_brokerage)
            | Q(
                oldStatus__in=JOB_BROKERAGE_STATUSES,
                prodSourceLabel__in=ANALYSIS_LABELS,
                stateChangeTime__lte=after_analysis_jobs,
            )
            | (
                Q(oldStatus__in=JOB_BROKERAGE_STATUSES, stateChangeTime__lte=after_production_jobs)
                & ~Q(prodSourceLabel__in=ANALYSIS_LABELS)
            )
        )
        .values_list("pk", "oldStatus", "stateChangeTime")
    )
    moved: list[int] = []
    for status in (WAITING_FOR_NUCLEUS, *JOB_BROKERAGE_STATUSES):
        moves = {
            pk: (status, f"retry after {int((now - changed).total_seconds() // 60)} minutes pending")
            for pk, old, changed in due
            if old == status
        }
        if moves:
            moved += task_status_transition_many(from_status="pending", moves=moves, actor=ACTOR, now=now)
    return moved


def task_claim(*, candidates: QuerySet, now: datetime, owner: str, limit: int) -> list[int]:
    """Takes up to `limit` of the `candidates` (ordered) that no live worker holds. On PostgreSQL the rows are
    locked with SKIP LOCKED, so concurrent cycles never pick the same task; lockedBy/lockedTime (JEDI's columns)
    then mark the claim for the whole cycle. A claim whose holder's heartbeat is stale (the worker is gone), or
    older than the lock timeout (PROCESS_LOCK_TIMEOUT_MINUTES: alive but hung), may be taken over."""
    worker_heartbeat_start(name=owner[:40])
    holders = set(candidates.exclude(lockedBy="").values_list("lockedBy", flat=True).distinct()[:1000])
    gone = holders_gone(holders)
    with transaction.atomic():
        candidates = candidates.filter(Q(lockedBy="") | Q(lockedTime__lt=now - lock_timeout()) | Q(lockedBy__in=gone))
        if connection.features.has_select_for_update_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True, no_key=True)
        ids = list(candidates.values_list("pk", flat=True)[:limit])
        Task.objects.filter(pk__in=ids).update(lockedBy=owner[:40], lockedTime=now)
    return ids


def task_claim_release(*, task_ids: list[int], owner: str) -> None:
    """Gives back the claims `owner` still holds (rows locked in the one lock order)."""
    with transaction.atomic():
        held = Task.objects.filter(pk__in=rows_lock(Task, task_ids), lockedBy=owner[:40])
        held.update(lockedBy="", lockedTime=None)


def brokerage_pending_mark(*, pending: list[int], assigned: list[int], now: datetime) -> None:
    """Keeps Task.brokeragePendingSince: set when the brokerage first leaves a task pending, cleared when it
    succeeds (the watchdog exhausts tasks pending too long). Both sets locked at once, in the one lock order."""
    with transaction.atomic():
        rows_lock(Task, [*pending, *assigned])
        Task.objects.filter(pk__in=pending, brokeragePendingSince__isnull=True).update(brokeragePendingSince=now)
        Task.objects.filter(pk__in=assigned, brokeragePendingSince__isnull=False).update(brokeragePendingSince=None)


def task_brokerage_cycle_run(*, now: datetime, limit: int = 500) -> BrokerageCycle:
    """One task-brokerage cycle: retry due pending tasks, claim, decide, store, apply. A failure is recorded in
    the cycle (status failed, the error) and the claimed tasks are released untouched."""
    task_pending_retry(now=now)
    owner = worker_name()
    gdpconfig = cycle_gdpconfig()
    base = grid_base(now=now, gdpconfig=gdpconfig)
    broker = plugin_registry().get(PLUGIN)()
    cycle = cycle_start(plugin=PLUGIN, now=now, gdpconfig=gdpconfig, frame=broker.frame(base), inputs=base.raw)
    claimed = task_claim(
        candidates=Task.objects.filter(status=WAITING_FOR_NUCLEUS).order_by("-currentPriority", "jediTaskID"),
        now=now,
        owner=owner,
        limit=limit,
    )
    try:
        # in the claimed order (highest priority first), each task's nucleus counting in the RW of those after it
        scenarios, decisions = {}, {}
        for task_id, scenario, assigned in task_scenarios_live(
            task_ids=claimed, base=base, seed_of=lambda task_id: (task_id * 7919 + cycle.pk) % 2**31
        ):
            scenarios[task_id] = scenario
            decisions[task_id] = broker.decide(scenario)
            if decisions[task_id].chosen is not None:
                assigned(decisions[task_id].chosen)
        decision_store_many(
            cycle=cycle,
            items=[DecisionToStore(d, task_id=t, inputs=scenarios[t].raw) for t, d in decisions.items()],
            frame=broker.frame(base),
        )
        moves, extra = {}, {}
        for task_id, decision in decisions.items():
            if decision.chosen is not None:
                moves[task_id] = ("ready", f"nucleus {decision.chosen} chosen ({decision.message})"[:500])
                extra[task_id] = {"nucleus": decision.chosen, "errorDialog": ""}
            else:
                moves[task_id] = ("pending", decision.message[:500])
                extra[task_id] = {"errorDialog": decision.message[:255]}
        task_status_transition_many(from_status=WAITING_FOR_NUCLEUS, moves=moves, extra=extra, actor=ACTOR, now=now)
        brokerage_pending_mark(
            pending=[t for t, (status, _) in moves.items() if status == "pending"],
            assigned=[t for t, (status, _) in moves.items() if status != "pending"],
            now=now,
        )
    except Exception as error:
        logger.exception("task brokerage cycle %s failed", cycle.pk)
        return cycle_finish(cycle=cycle, now=now, error=f"{type(error).__name__}: {error}")
    finally:  # whatever happened, even in cycle_finish (brokerage.tasks closes a cycle left running)
        task_claim_release(task_ids=claimed, owner=owner)
    return cycle_finish(cycle=cycle, now=now)
