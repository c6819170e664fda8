"""What task brokerage needs to know about nuclei from the database."""

from __future__ import annotations

from django.db.models import F, FloatField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Greatest

from brokerage.models import (
    Dataset,
    Site,
    Task,
)

# REFERENCE.md: RW counts the tasks in ready, scouting, running or pending.
RW_STATUSES = ("ready", "scouting", "running", "pending")


def remaining_work_rows() -> list[tuple[str, str, int, float]]:
    """(nucleus, gshare, currentPriority, RW in HS06 s) over the tasks assigned to a nucleus and in RW_STATUSES
    (REFERENCE.md): each task contributes max(0, nEvents − nEventsUsed) of its master inputs × cpuTime. One query."""
    remaining_events = (
        Dataset.objects.filter(task=OuterRef("pk"), type__in=("input", "pseudo_input"), master__isnull=True)
        .values("task")
        # a dataset whose nEvents is unknown (0) or behind its files' events has nothing left, never a negative
        # amount: the engine refuses a negative RW, and one such dataset would hide the others' work
        .annotate(left=Sum(Greatest(Coalesce(F("nEvents"), 0) - Coalesce(F("nEventsUsed"), 0), 0)))
        .values("left")
    )
    rows = (
        Task.objects.filter(status__in=RW_STATUSES)
        .exclude(nucleus="")
        .annotate(
            work=Coalesce(Subquery(remaining_events), 0, output_field=FloatField())
            * Coalesce(F("cpuTime"), Value(0), output_field=FloatField())
        )
        .values("nucleus", "gshare", "currentPriority")
        .annotate(rw=Sum("work"))
        .values_list("nucleus", "gshare", "currentPriority", "rw")
    )
    return [(nucleus, gshare, priority, float(rw or 0.0)) for nucleus, gshare, priority, rw in rows]


def remaining_work_by_nucleus(
    rows: list[tuple[str, str, int, float]], *, priority: int, gshare: str
) -> dict[str, float]:
    """RW per nucleus for a task of `priority` in `gshare`: the work of equal or higher priority, same gshare."""
    result: dict[str, float] = {}
    for nucleus, row_gshare, row_priority, amount in rows:
        if row_gshare == gshare and row_priority >= priority:
            result[nucleus] = result.get(nucleus, 0.0) + amount
    return result


def nucleus_remaining_work(*, priority: int, gshare: str) -> dict[str, float]:
    """Remaining work per nucleus for a task of `priority` in `gshare` (one query)."""
    return remaining_work_by_nucleus(remaining_work_rows(), priority=priority, gshare=gshare)


def nucleus_names() -> list[str]:
    """The nuclei a task can be reassigned to."""

    return list(Site.objects.filter(role="nucleus").order_by("name").values_list("name", flat=True))
