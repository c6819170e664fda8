"""Stage 2, continued: `work_replicate` copies the elements an agent took into its local inbox and queue."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from brokerage.models import (
    WMCoreElement,
    WMCoreElementStatusLog,
    WMCoreQueue,
)
from brokerage.services.status import status_transition_many

from .common import ACTOR_GLOBAL, ACTOR_LOCAL


@transaction.atomic
def work_replicate(*, queue_id: int, now: datetime) -> int:
    """Seed 004, "From GQ to LQ" steps 4–5: the global elements this local queue negotiated are copied to its inbox
    (same element id), split into its queue (Available), and the inbox copy and the global element become Acquired.
    Returns the elements copied."""
    queue = WMCoreQueue.objects.get(pk=queue_id, kind="local")
    known = WMCoreElement.objects.filter(queue=queue, database="inbox").values_list("element_id", flat=True)
    originals = list(
        WMCoreElement.objects.filter(database="queue", ChildQueue=queue, Status="Negotiating")
        .exclude(queue=queue)
        .exclude(element_id__in=known)
    )
    if not originals:
        return 0
    copies = []
    for original in originals:
        for database, status in (("inbox", "Negotiating"), ("queue", "Available")):
            copy = WMCoreElement(
                queue=queue,
                database=database,
                element_id=original.element_id,
                request_id=original.request_id,
                Status=status,
                Priority=original.Priority,
                Jobs=original.Jobs,
                Inputs=original.Inputs,
                ParentData=original.ParentData,
                PileupData=original.PileupData,
                SiteWhitelist=original.SiteWhitelist,
                SiteBlacklist=original.SiteBlacklist,
                NoInputUpdate=original.NoInputUpdate,
                NoPileupUpdate=original.NoPileupUpdate,
                site=original.site,
                CreationTime=original.CreationTime,
                UpdateTime=now,
            )
            copies.append(copy)
    created = WMCoreElement.objects.bulk_create(copies, batch_size=1000)
    WMCoreElementStatusLog.objects.bulk_create(
        WMCoreElementStatusLog(
            element=row, timestamp=now, old_status="", new_status=row.Status, reason="replicated", actor=ACTOR_LOCAL
        )
        for row in created
    )
    inbox = [row.pk for row in created if row.database == "inbox"]
    status_transition_many(
        model=WMCoreElement,
        ids=inbox,
        from_status="Negotiating",
        to_status="Acquired",
        reason="split into the queue",
        actor=ACTOR_LOCAL,
        now=now,
    )
    status_transition_many(
        model=WMCoreElement,
        ids=[original.pk for original in originals],
        from_status="Negotiating",
        to_status="Acquired",
        reason=f"replicated to {queue.name}",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    return len(originals)
