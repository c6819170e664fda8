"""WMCore reads (seed 004): what each step counts at an agent's sites (slots, jobs by priority, the pool's load),
and what the WMCore page shows — requests and elements by status, slot use per site and priority, the commonest
reasons work is stuck with the elements that show them, the latest pulls and what keeps jobs in the JobSubmitter
cache. A few queries per agent, whatever the numbers of elements and jobs."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max, OuterRef, Subquery, Sum

from brokerage.adapters.wmcore import CONFIG_KEYS
from brokerage.engine import explain, reason_title
from brokerage.engine.wmcore.elements import PULL_WORK
from brokerage.engine.wmcore.job_submitter import SiteLoad, SubmitSite
from brokerage.engine.wmcore.matching import SiteResources
from brokerage.models import (
    Decision,
    JobSubmitterCacheEntry,
    JobSubmitterReport,
    WMBSJob,
    WMCoreElement,
    WMCoreQueue,
    WMCoreRequest,
    WMCoreSite,
    WMCoreSiteThreshold,
)
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.states import WMCORE_ELEMENT, WMCORE_REQUEST

# Where an element's jobs count before they are WMBS jobs: acquired by a local queue, not yet running there.
ELEMENT_HELD = ("Negotiating", "Acquired")
STUCK_SHOWN = 50
REQUESTS_SHOWN = 50


def _executing(queue: WMCoreQueue):
    return WMBSJob.objects.filter(subscription__queue=queue, state="executing")


def wmcore_jobs_in_pool(*, queue: WMCoreQueue) -> int:
    """The agent's jobs in the pool (executing, pending or running there): what the schedd limit counts."""
    return _executing(queue).count()


def wmcore_site_resources(*, queue: WMCoreQueue) -> list[SiteResources]:
    """The agent's sites with the jobs running there (getWork subtracts them). Two queries."""
    running = dict(_executing(queue).filter(batch_status="Running").values_list("location").annotate(n=Count("pk")))
    return [
        SiteResources(
            row["name"], row["state"], row["pending_slots"], row["running_slots"], running.get(row["name"], 0)
        )
        for row in WMCoreSite.objects.filter(queue=queue).values("name", "state", "pending_slots", "running_slots")
    ]


def _add(counts: dict[str, dict[float, int]], site: str, priority: float, jobs: int) -> None:
    if site and jobs:
        by_priority = counts.setdefault(site, {})
        by_priority[float(priority)] = by_priority.get(float(priority), 0) + jobs


def wmcore_site_jobs(*, queue: WMCoreQueue, step: str) -> dict[str, dict[float, int]]:
    """Jobs the agent has at each site by priority, as each step counts them (seed 004). pullWork: the jobs of the
    elements it acquired and has not started (at the site their pull chose) and its WMBS jobs not finished. getWork
    (running jobs are subtracted from its slots): only the WMBS jobs waiting, created or pending in the pool. A WMBS
    job counts at its location, or at its subscription's site while in the cache. Two queries at most."""
    counts: dict[str, dict[float, int]] = {}
    jobs = WMBSJob.objects.filter(subscription__queue=queue, state__in=("created", "executing"))
    if step == PULL_WORK:
        held = WMCoreElement.objects.filter(database="queue", ChildQueue=queue, Status__in=ELEMENT_HELD).exclude(
            queue=queue
        )
        for site, priority, n in held.values_list("site", "Priority").annotate(n=Sum("Jobs")):
            _add(counts, site, priority, n)
    else:
        jobs = jobs.exclude(batch_status="Running")
    for location, site, priority, n in jobs.values_list("location", "subscription__site", "priority").annotate(
        n=Count("pk")
    ):
        _add(counts, location or site, priority, n)
    return counts


# ReqMgr2's aborted and force-completed requests: FileFeeder hands them to getWork as excludeWorkflows
CLOSED_REQUEST_STATUSES = ("aborted", "aborted-completed", "force-complete")


def wmcore_requests_closed() -> list[str]:
    """The names of the requests whose work getWork no longer acquires (one query)."""
    return list(
        WMCoreRequest.objects.filter(RequestStatus__in=CLOSED_REQUEST_STATUSES).values_list("RequestName", flat=True)
    )


def wmcore_submit_sites(*, queue: WMCoreQueue) -> dict[str, SubmitSite]:
    """The agent's sites with their per-type thresholds, as the JobSubmitter reads them (two queries)."""
    task_slots: dict[int, dict[str, tuple[int, int]]] = defaultdict(dict)
    for site_id, task_type, pending, running in WMCoreSiteThreshold.objects.filter(site__queue=queue).values_list(
        "site_id", "task_type", "pending_slots", "max_slots"
    ):
        task_slots[site_id][task_type] = (pending, running)
    return {
        row["name"]: SubmitSite(
            row["name"],
            row["state"],
            row["pending_slots"],
            row["running_slots"],
            task_slots.get(row["pk"], {}),
            row["state_time"].timestamp() if row["state_time"] else None,
        )
        for row in WMCoreSite.objects.filter(queue=queue).values(
            "pk", "name", "state", "pending_slots", "running_slots", "state_time"
        )
    }


def wmcore_site_loads(*, queue: WMCoreQueue) -> dict[str, SiteLoad]:
    """Jobs pending and running in the pool per site and type, and the highest priority per site and type."""
    loads: dict[str, SiteLoad] = defaultdict(SiteLoad)
    grouped = (
        _executing(queue)
        .values_list("location", "task_type", "batch_status")
        .annotate(n=Count("pk"), top=Max("priority"))
    )
    for location, task_type, batch_status, n, top in grouped:
        load = loads[location]
        if batch_status == "Running":
            load.running += n
            load.task_running[task_type] = load.task_running.get(task_type, 0) + n
        else:
            load.pending += n
            load.task_pending[task_type] = load.task_pending.get(task_type, 0) + n
        load.highest_priority[task_type] = max(top, load.highest_priority.get(task_type, top))
    return dict(loads)


def wmcore_request_rows(*, limit: int = REQUESTS_SHOWN, name_contains: str = "") -> list[dict[str, Any]]:
    """The latest requests (those whose name holds `name_contains`, when given) with their elements (global
    queue) counted by status and their jobs."""
    matching = WMCoreRequest.objects.all()
    if name_contains:
        matching = matching.filter(RequestName__icontains=name_contains)
    requests = list(
        matching.order_by("-status_time", "-pk").values(
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
        counts = wmcore_site_jobs(queue=queue, step=PULL_WORK)
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


def wmcore_overview(*, now: datetime, request_query: str = "", site: str = "") -> dict[str, Any]:
    """Everything the WMCore page shows; `request_query` narrows the latest requests to names holding it, `site`
    the slot use to one CMS site (every agent's view of it)."""
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
    last_pass = JobSubmitterReport.objects.filter(queue=OuterRef("queue")).order_by("-at").values("at")[:1]
    conditions = Counter(
        dict(
            JobSubmitterReport.objects.filter(at=Subquery(last_pass)).values_list("condition").annotate(n=Sum("count"))
        )
    )
    return {
        "request_statuses": [
            {"status": status, "count": request_counts[status]}
            for status in WMCORE_REQUEST.statuses
            if request_counts.get(status)
        ],
        "requests": wmcore_request_rows(name_contains=request_query),
        "request_query": request_query,
        "elements": wmcore_element_counts(),
        "slots": [row for row in wmcore_slot_use(limit_sites=0) if row["site"] == site] if site else wmcore_slot_use(),
        "site": site,
        "stuck": wmcore_stuck(),
        "pulls": pulls,
        "cache": sorted(cache.items()),
        "submit_conditions": [
            {"code": code, "title": reason_title(code) if code != "submitted" else "submitted", "count": count}
            for code, count in conditions.most_common()
        ],
    }


def config_snapshot() -> dict[str, Any]:
    config = gdpconfig_view()
    return {key: config.get(key) for key in CONFIG_KEYS}
