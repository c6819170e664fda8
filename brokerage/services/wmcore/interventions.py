"""What operators do: reset an element to Available (`element_reset`), abort a request (`request_abort`), and
the cancellation that follows (`element_cancel`)."""

from __future__ import annotations

from datetime import datetime

from django.db import models, transaction
from django.db.models import Count

from brokerage import states
from brokerage.models import (
    JobSubmitterCacheEntry,
    WMBSJob,
    WMCoreElement,
    WMCoreElementStatusLog,
    WMCoreRequest,
)
from brokerage.selectors.wmcore import ELEMENT_HELD
from brokerage.services.status import status_transition_many

from .common import ACTOR_GLOBAL, ACTOR_LOCAL, ids_by_status


class ResetRefused(ValueError):
    """An element that is not Negotiating or Acquired, or whose work already runs, cannot go back."""


@transaction.atomic
def element_reset(*, element_pk: int, actor: str, reason: str, now: datetime) -> WMCoreElement:
    """The one way back (REFERENCE.md: statuses never move backwards except by an explicit reset): a global element
    Negotiating or Acquired by a local queue returns to Available, its local copies (not yet running) are removed,
    and the move is logged with who asked and why."""
    element = WMCoreElement.objects.select_for_update(no_key=True).get(pk=element_pk)
    if element.queue.kind != "global" or element.database != "queue":
        raise ResetRefused("only a global-queue element can be reset; its local copies follow it")
    if element.Status not in ELEMENT_HELD:
        raise ResetRefused(f"the element is {element.Status}; only Negotiating or Acquired elements can be reset")
    copies = WMCoreElement.objects.filter(element_id=element.element_id).exclude(pk=element.pk)
    if copies.filter(Status__in=("Running", "Done")).exists():
        raise ResetRefused("its work is already running in a local queue")
    copies.delete()
    old = element.Status
    WMCoreElement.objects.filter(pk=element.pk).update(
        Status="Available",
        ChildQueue=None,
        site="",
        UpdateTime=now,
        stuck_reason="",
        stuck_detail={},
        stuck_digest="",
        stuck_since=None,
    )
    WMCoreElementStatusLog.objects.create(
        element=element, timestamp=now, old_status=old, new_status="Available", reason=f"reset: {reason}", actor=actor
    )
    element.refresh_from_db()
    return element


class AbortRefused(ValueError):
    """A request that is already over (or not yet assigned work) cannot be aborted."""


ABORTABLE = ("assigned", "staging", "staged", "acquired", "running-open", "running-closed")
KILLABLE = tuple(state for state in states.WMBS_JOB_ACTIVE if states.WMBS_JOB.is_allowed(state, "killed"))


@transaction.atomic
def request_abort(*, request_id: int, actor: str, reason: str, now: datetime) -> WMCoreRequest:
    """An operator aborts a request: it becomes aborted and every element of it not over, in every queue, becomes
    CancelRequested; `element_cancel` then kills the jobs and ends them Canceled."""
    request = WMCoreRequest.objects.select_for_update(no_key=True).get(pk=request_id)
    if request.RequestStatus not in ABORTABLE:
        raise AbortRefused(f"the request is {request.RequestStatus}; only {', '.join(ABORTABLE)} can be aborted")
    status_transition_many(
        model=WMCoreRequest,
        ids=[request.pk],
        from_status=request.RequestStatus,
        to_status="aborted",
        reason=reason,
        actor=actor,
        now=now,
    )
    live = WMCoreElement.objects.filter(request=request, Status__in=("Available", "Negotiating", "Acquired", "Running"))
    for status, ids in ids_by_status(live).items():
        status_transition_many(
            model=WMCoreElement,
            ids=ids,
            from_status=status,
            to_status="CancelRequested",
            reason=f"request aborted: {reason}",
            actor=actor,
            now=now,
        )
    request.refresh_from_db()
    return request


@transaction.atomic
def element_cancel(*, now: datetime) -> dict[str, int]:
    """CancelRequested elements end: their WMBS jobs not over are killed (and leave the JobSubmitter cache), the
    elements become Canceled everywhere, and an aborted request whose elements are all over is aborted-completed."""
    cancelling = list(WMCoreElement.objects.filter(Status="CancelRequested").values_list("pk", flat=True))
    jobs = WMBSJob.objects.filter(subscription__element_id__in=cancelling)
    killed = 0
    for state, ids in ids_by_status(jobs.filter(state__in=KILLABLE)).items():
        killed += len(
            status_transition_many(
                model=WMBSJob,
                ids=ids,
                from_status=state,
                to_status="killed",
                reason="request aborted",
                actor=ACTOR_LOCAL,
                now=now,
                columns={"batch_status": ""},
            )
        )
    JobSubmitterCacheEntry.objects.filter(job__in=jobs).delete()
    canceled = status_transition_many(
        model=WMCoreElement,
        ids=cancelling,
        from_status="CancelRequested",
        to_status="Canceled",
        reason="jobs killed",
        actor=ACTOR_LOCAL,
        now=now,
    )
    over = states.WMCORE_ELEMENT.final
    finished = [
        row["pk"]
        for row in WMCoreRequest.objects.filter(RequestStatus="aborted")
        .annotate(n=Count("elements"), over=Count("elements", filter=models.Q(elements__Status__in=over)))
        .values("pk", "n", "over")
        if row["n"] == row["over"]
    ]
    completed = status_transition_many(
        model=WMCoreRequest,
        ids=finished,
        from_status="aborted",
        to_status="aborted-completed",
        reason="every element over",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    return {"killed": killed, "canceled": len(canceled), "aborted_completed": len(completed)}
