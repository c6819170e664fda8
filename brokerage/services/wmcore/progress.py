"""Statuses that follow the jobs: elements Done or Failed, requests running-closed and completed."""

from __future__ import annotations

from datetime import datetime

from django.db import models, transaction
from django.db.models import Count

from brokerage import states
from brokerage.models import (
    WMBSSubscription,
    WMCoreElement,
    WMCoreRequest,
)
from brokerage.services.status import status_transition_many

from .common import ACTOR_GLOBAL, ACTOR_LOCAL, propagate


@transaction.atomic
def wmcore_progress_update(*, now: datetime) -> dict[str, int]:
    """Statuses that follow the jobs: an element whose WMBS jobs are all over is Done (Failed when none succeeded)
    everywhere; a request is running-closed once none of its elements waits to run, completed once all are over,
    and its inbox element then Done."""
    finished = {*states.WMBS_JOB_ENDED, "retrydone"}
    subscriptions = (
        WMBSSubscription.objects.filter(finished__isnull=True)
        .annotate(total=Count("jobs"), over=Count("jobs", filter=models.Q(jobs__state__in=finished)))
        .annotate(good=Count("jobs", filter=models.Q(jobs__state__in=("success", "cleanout"))))
        .values("pk", "element__element_id", "total", "over", "good")
    )
    done, failed, closed = [], [], []
    for row in subscriptions:
        if row["total"] and row["over"] == row["total"]:
            (done if row["good"] else failed).append(row["element__element_id"])
            closed.append(row["pk"])
    WMBSSubscription.objects.filter(pk__in=closed).update(finished=now)
    for element_ids, to_status in ((done, "Done"), (failed, "Failed")):
        propagate(
            element_ids=element_ids,
            from_status="Running",
            to_status=to_status,
            reason="jobs over",
            actor=ACTOR_LOCAL,
            now=now,
        )
    waiting = ("Available", "Negotiating", "Acquired")
    over = states.WMCORE_ELEMENT.final
    summary = {"elements_done": len(done), "elements_failed": len(failed), "running_closed": 0, "completed": 0}
    requests = WMCoreRequest.objects.filter(RequestStatus__in=("running-open", "running-closed"))
    elements = (
        WMCoreElement.objects.filter(request__in=requests, database="queue", queue__kind="global")
        .values("request_id")
        .annotate(
            n=Count("pk"),
            waiting=Count("pk", filter=models.Q(Status__in=waiting)),
            over=Count("pk", filter=models.Q(Status__in=over)),
        )
    )
    status_of = dict(requests.values_list("pk", "RequestStatus"))
    to_close, to_complete = [], []
    for row in elements:
        status = status_of[row["request_id"]]
        if row["over"] == row["n"]:
            to_complete.append((row["request_id"], status))
        elif status == "running-open" and row["waiting"] == 0:
            to_close.append(row["request_id"])
    summary["running_closed"] = len(
        status_transition_many(
            model=WMCoreRequest,
            ids=to_close,
            from_status="running-open",
            to_status="running-closed",
            reason="no element waits",
            actor=ACTOR_GLOBAL,
            now=now,
        )
    )
    for from_status in ("running-open", "running-closed"):
        ids = [pk for pk, status in to_complete if status == from_status]
        summary["completed"] += len(
            status_transition_many(
                model=WMCoreRequest,
                ids=ids,
                from_status=from_status,
                to_status="completed",
                reason="every element over",
                actor=ACTOR_GLOBAL,
                now=now,
            )
        )
    inbox = WMCoreElement.objects.filter(
        request_id__in=[pk for pk, _ in to_complete], database="inbox", Status="Running"
    )
    status_transition_many(
        model=WMCoreElement,
        ids=list(inbox.values_list("pk", flat=True)),
        from_status="Running",
        to_status="Done",
        reason="request completed",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    return summary
