"""What task brokerage needs to know about nuclei from the database."""

from __future__ import annotations

from django.db.models import F, FloatField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from brokerage.models import Dataset, Task

# REFERENCE.md: RW counts the tasks in ready, scouting, running or pending.
RW_STATUSES = ("ready", "scouting", "running", "pending")


def nucleus_rw(*, priority: int, gshare: str) -> dict[str, float]:
    """Remaining work per nucleus, in HS06 seconds, for a task of `priority` in `gshare` (REFERENCE.md): the sum
    over tasks assigned to the nucleus, in RW_STATUSES, of the same gshare and with currentPriority ≥ priority, of
    (nEvents − nEventsUsed) of their master inputs × cpuTime. One query."""
    remaining_events = (
        Dataset.objects.filter(task=OuterRef("pk"), type__in=("input", "pseudo_input"), master__isnull=True)
        .values("task")
        .annotate(left=Sum(Coalesce(F("nEvents"), 0) - Coalesce(F("nEventsUsed"), 0)))
        .values("left")
    )
    rows = (
        Task.objects.filter(status__in=RW_STATUSES, gshare=gshare, currentPriority__gte=priority)
        .exclude(nucleus="")
        .annotate(
            work=Coalesce(Subquery(remaining_events), 0, output_field=FloatField())
            * Coalesce(F("cpuTime"), Value(0), output_field=FloatField())
        )
        .values("nucleus")
        .annotate(rw=Sum("work"))
        .values_list("nucleus", "rw")
    )
    return {nucleus: float(rw or 0.0) for nucleus, rw in rows}
