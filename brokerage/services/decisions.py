"""Recording brokerage: a cycle row around a batch of decisions, stored in bulk with their traces."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Q

from brokerage.adapters.decision_log import decisions_log
from brokerage.engine import Decision as EngineDecision
from brokerage.engine import Frame, TraceBase, trace_encode
from brokerage.inputs_codec import inputs_encode
from brokerage.metrics import decisions_count
from brokerage.models import BrokerageCycle, CycleFrame, CycleStatus, Decision, DecisionTrace, GdpConfigRevision
from brokerage.services.inputs import cycle_inputs_store


def worker_name() -> str:
    """host:pid, at most 40 characters (JEDI's lockedBy column): the name locks, claims and heartbeats share."""
    pid = str(os.getpid())
    return f"{socket.gethostname()[: 39 - len(pid)]}:{pid}"


def cycle_start(
    *,
    plugin: str,
    now: datetime,
    gdpconfig: dict[str, Any] | None = None,
    frame: Frame | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> BrokerageCycle:
    """Opens a cycle under the current gdpconfig revision. `gdpconfig` is the resolved set of parameters the cycle
    uses; `frame` the candidates and their attributes that all its decisions share (stored once, left out of every
    trace); `inputs` the grid side of its scenario (the base scenario's raw object), stored in parts for replay."""
    cycle = BrokerageCycle.objects.create(
        plugin=plugin,
        started=now,
        worker=worker_name(),
        gdpconfig=gdpconfig or {},
        status=CycleStatus.RUNNING,
        revision_id=GdpConfigRevision.objects.order_by("-pk").values_list("pk", flat=True).first(),
    )
    if frame is not None:
        CycleFrame.objects.create(cycle=cycle, started=now, frame=frame.encode())
    if inputs is not None:
        cycle_inputs_store(cycle=cycle, raw=inputs)
    cycle.wall_clock_start = time.monotonic()
    return cycle


def cycle_finish(*, cycle: BrokerageCycle, now: datetime, error: str = "") -> BrokerageCycle:
    """Closes a cycle as succeeded (or failed with `error`) and counts its decisions by outcome."""
    counts = cycle.decisions.aggregate(
        total=Count("id"),
        assigned=Count("id", filter=Q(outcome__in=("assigned", "matched"))),
        pending=Count("id", filter=Q(outcome__in=("pending", "no_match"))),
        throttled=Count("id", filter=Q(outcome="throttled")),
    )
    # `now` is the cycle's logical time (frozen in tests); its duration is the wall-clock time it took
    elapsed = time.monotonic() - getattr(cycle, "wall_clock_start", time.monotonic())
    cycle.finished = max(now, cycle.started + timedelta(seconds=elapsed))
    cycle.status = CycleStatus.FAILED if error else CycleStatus.SUCCEEDED
    cycle.error = error
    cycle.n_decisions = counts["total"]
    cycle.n_assigned = counts["assigned"]
    cycle.n_pending = counts["pending"]
    cycle.n_throttled = counts["throttled"]
    cycle.save()
    return cycle


@dataclass(frozen=True)
class DecisionToStore:
    decision: EngineDecision
    task_id: int | None = None
    jobset_id: int | None = None
    # a stored decision this one's trace is written against (engine.TraceBase): its trace keeps only the change
    trace_base: TraceBase | None = None
    # the decision's own side of its scenario (the parsed scenario's raw object), stored for replay
    inputs: Mapping[str, Any] | None = None


def decision_row(*, cycle: BrokerageCycle, item: DecisionToStore) -> Decision:
    """The unsaved row for one engine decision: its summary (the trace is stored apart, decision_store_many)."""
    decision = item.decision
    counts = decision.code_counts()
    return Decision(
        cycle=cycle,
        task_id=item.task_id,
        jobsetID=item.jobset_id,
        plugin=decision.plugin,
        created=decision.now,
        outcome=decision.outcome,
        chosen=decision.chosen or "",
        n_candidates=len(decision.initial),
        n_passed=len(decision.candidates) + counts.get("low_weight", 0),
        primary_reason=decision.primary_reason,
        message=decision.message[:500],
        retry_after_minutes=decision.retry_after_minutes,
        seed=decision.seed,
        profile=decision.profile,
        reason_counts=counts,
    )


@transaction.atomic
def decision_store_many(
    *, cycle: BrokerageCycle, items: Iterable[DecisionToStore], frame: Frame | None = None
) -> list[Decision]:
    """Stores decisions in one bulk insert and their traces, encoded against the cycle's frame (the one given to
    cycle_start), in another."""
    items = list(items)
    rows = Decision.objects.bulk_create([decision_row(cycle=cycle, item=item) for item in items], batch_size=500)
    traces = []
    for row, item in zip(rows, items, strict=True):
        # the stored bytes, kept on the row for the caller (a WMCore pull checks its next base by them)
        row.trace_blob = trace_encode(item.decision, frame=frame, base=item.trace_base)
        traces.append(
            DecisionTrace(
                decision_id=row.pk,
                created=row.created,
                trace=row.trace_blob,
                base_id=item.trace_base.pk if item.trace_base is not None else None,
                inputs=inputs_encode(item.inputs) if item.inputs is not None else None,
            )
        )
    DecisionTrace.objects.bulk_create(traces, batch_size=500)
    decisions_count(rows)
    # the brokerage log (JEDI's grammar, JSON) once the decisions are stored for good
    transaction.on_commit(lambda: decisions_log((item.decision, item.task_id) for item in items))
    return rows
