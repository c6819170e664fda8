"""What the WMCore page reads (seed 004): requests and elements by status, each agent's slot use per site and
priority as pullWork counts it, the commonest reasons work is stuck with the elements that show them, the latest
pulls and what keeps jobs in the JobSubmitter cache. A few queries per agent, whatever the numbers of elements and
jobs."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Sum

from brokerage.engine import explain, reason_title
from brokerage.models import (
    Decision,
    JobSubmitterCacheEntry,
    JobSubmitterReport,
    WMCoreElement,
    WMCoreQueue,
    WMCoreRequest,
    WMCoreSite,
)
from brokerage.services.wmcore import site_jobs_for_pull
from brokerage.states import WMCORE_ELEMENT, WMCORE_REQUEST

STUCK_SHOWN = 50
REQUESTS_SHOWN = 50


def wmcore_request_rows(*, limit: int = REQUESTS_SHOWN) -> list[dict[str, Any]]:
    """The latest requests with their elements (global queue) counted by status and their jobs."""
    requests = list(
        WMCoreRequest.objects.order_by("-status_time", "-pk").values(
            "pk", "RequestName", "RequestStatus", "RequestPriority", "Team", "RequestType", "status_time"
        )[:limit]
    )
    counts: dict[int, Counter] = {row["pk"]: Counter() for row in requests}
    jobs: Counter = Counter()
    elements = (
        WMCoreElement.objects.filter(request__in=list(counts), database="queue", queue__kind="global")
        .values_list("request_id", "Status")
        .annotate(n=Count("pk"), jobs=Sum("Jobs"))
    )
    for request_id, status, n, total in elements:
        counts[request_id][status] += n
        jobs[request_id] += total or 0
    for row in requests:
        row["elements"] = [
            (status, counts[row["pk"]][status]) for status in WMCORE_ELEMENT.statuses if counts[row["pk"]][status]
        ]
        row["jobs"] = jobs[row["pk"]]
    return requests


def wmcore_element_counts() -> list[dict[str, Any]]:
    """Elements and their jobs per queue, database and status, in the state machine's order."""
    order = {status: position for position, status in enumerate(WMCORE_ELEMENT.statuses)}
    rows = list(
        WMCoreElement.objects.values("queue__name", "queue__kind", "database", "Status").annotate(
            n=Count("pk"), jobs=Sum("Jobs")
        )
    )
    return sorted(
        rows, key=lambda r: (r["queue__kind"] != "global", r["queue__name"], r["database"], order[r["Status"]])
    )


def wmcore_slot_use(*, limit_sites: int = 40) -> list[dict[str, Any]]:
    """Per agent and site: state, threshold as pullWork sees it (pending + running slots) and the jobs counted
    there by priority (acquired elements and WMBS jobs), fullest sites first."""
    rows = []
    sites_of: dict[int, list[dict[str, Any]]] = {}
    for site in WMCoreSite.objects.values("queue_id", "name", "state", "pending_slots", "running_slots"):
        sites_of.setdefault(site["queue_id"], []).append(site)
    for queue in WMCoreQueue.objects.filter(kind="local").order_by("name"):
        counts = site_jobs_for_pull(queue=queue)
        for site in sites_of.get(queue.pk, []):
            by_priority = counts.get(site["name"], {})
            threshold = site["pending_slots"] + site["running_slots"]
            total = sum(by_priority.values())
            rows.append(
                {
                    "queue": queue.name,
                    "site": site["name"],
                    "state": site["state"],
                    "threshold": threshold,
                    "jobs": total,
                    "by_priority": sorted(by_priority.items(), reverse=True),
                    "use": total / threshold if threshold else None,
                }
            )
    rows.sort(key=lambda r: (-(r["use"] if r["use"] is not None else float("inf")), r["queue"], r["site"]))
    return rows[:limit_sites] if limit_sites else rows


def wmcore_stuck(*, limit: int = STUCK_SHOWN) -> dict[str, Any]:
    """Why Available elements wait: counts and jobs per reason, and the highest-priority stuck elements with the
    sentence of their reason and its numbers."""
    waiting = WMCoreElement.objects.filter(Status="Available").exclude(stuck_reason="")
    reasons = [
        {
            "code": row["stuck_reason"],
            "title": reason_title(row["stuck_reason"]),
            "count": row["n"],
            "jobs": row["jobs"],
        }
        for row in waiting.values("stuck_reason").annotate(n=Count("pk"), jobs=Sum("Jobs")).order_by("-n")
    ]
    elements = []
    for row in waiting.order_by("-Priority", "CreationTime").values(
        "pk",
        "element_id",
        "queue__name",
        "database",
        "request__RequestName",
        "Priority",
        "Jobs",
        "stuck_reason",
        "stuck_detail",
        "stuck_since",
    )[:limit]:
        detail = row["stuck_detail"] or {}
        elements.append(
            {
                **row,
                "title": reason_title(row["stuck_reason"]),
                "sentence": explain(row["stuck_reason"], detail),
                "step": detail.get("step", ""),
                "pulled_by": detail.get("queue", ""),
            }
        )
    return {"reasons": reasons, "elements": elements, "total": sum(r["count"] for r in reasons)}


def wmcore_overview(*, now: datetime) -> dict[str, Any]:
    """Everything the WMCore page shows."""
    request_counts = dict(WMCoreRequest.objects.values_list("RequestStatus").annotate(n=Count("pk")))
    pulls = list(
        Decision.objects.filter(plugin="wmcore_pull", created__gte=now - timedelta(days=1))
        .select_related("cycle")
        .order_by("-created", "-pk")
        .values("pk", "created", "outcome", "message", "n_candidates", "n_passed", "cycle__gdpconfig")[:20]
    )
    for pull in pulls:
        config = pull.pop("cycle__gdpconfig") or {}
        pull["queue"], pull["step"] = config.get("queue", ""), config.get("step", "")
    cache = dict(JobSubmitterCacheEntry.objects.values_list("queue__name").annotate(n=Count("pk")))
    latest = JobSubmitterReport.objects.values("queue_id").annotate(at=Max("at"))
    conditions: Counter = Counter()
    for report in latest:
        for condition, count in JobSubmitterReport.objects.filter(
            queue_id=report["queue_id"], at=report["at"]
        ).values_list("condition", "count"):
            conditions[condition] += count
    return {
        "request_statuses": [
            {"status": status, "count": request_counts[status]}
            for status in WMCORE_REQUEST.statuses
            if request_counts.get(status)
        ],
        "requests": wmcore_request_rows(),
        "elements": wmcore_element_counts(),
        "slots": wmcore_slot_use(),
        "stuck": wmcore_stuck(),
        "pulls": pulls,
        "cache": sorted(cache.items()),
        "submit_conditions": [
            {"code": code, "title": reason_title(code) if code != "submitted" else "submitted", "count": count}
            for code, count in conditions.most_common()
        ],
    }
