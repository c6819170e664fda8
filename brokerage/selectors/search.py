"""The search box and the detail pages it leads to that have no selector of their own: one decision of any
plugin, one DIRAC matching request, a site, a WMCore request."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from brokerage.models import (
    Decision,
    DiracJob,
    Job,
    PandaQueue,
    Site,
    Task,
    WMCoreRequest,
)
from brokerage.params import whole_number
from brokerage.selectors.decisions import decision_trace

SEARCH_LIMIT = 20


def jobs_by_queue(names: list[str]) -> dict[str, list[tuple[str, int]]]:
    """Jobs by status at each of these queues, sorted by status (one query)."""
    counts: dict[str, dict[str, int]] = {}
    for queue, status, n in (
        Job.objects.filter(computingSite__in=names)
        .values_list("computingSite", "jobStatus")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        counts.setdefault(queue, {})[status] = n
    return {name: sorted(counts.get(name, {}).items()) for name in names}


def search_everything(*, query: str) -> dict[str, Any]:
    """`exact`: (page, key) when the query is a task, job or DIRAC job ID, or exactly the name of a queue, site
    or WMCore request (a task ID wins over a job ID, a PanDA job over a DIRAC one: tasks are what shifters look
    for); otherwise the matches of each kind whose name contains the query. A fixed number of queries."""
    result: dict[str, Any] = {"exact": None, "query": query, "tasks": [], "queues": [], "sites": [], "requests": []}
    if not query:
        return result
    number = whole_number(query)
    if number is not None:
        if Task.objects.filter(pk=number).exists():
            result["exact"] = ("task", number)
            return result
        if Job.objects.filter(pk=number).exists():
            result["exact"] = ("job", number)
            return result
        if DiracJob.objects.filter(pk=number).exists():
            result["exact"] = ("dirac-job", number)
            return result
    for kind, model, field in (
        ("queue", PandaQueue, "name"),
        ("site", Site, "name"),
        ("wmcore-request", WMCoreRequest, "RequestName"),
    ):
        if model.objects.filter(**{field: query}).exists():
            result["exact"] = (kind, query)
            return result
    result["tasks"] = list(
        Task.objects.filter(Q(taskName__icontains=query) | Q(userName__icontains=query))
        .order_by("-modificationTime")
        .values("jediTaskID", "taskName", "status", "userName")[:SEARCH_LIMIT]
    )
    result["queues"] = list(
        PandaQueue.objects.filter(name__icontains=query).order_by("name").values("name", "status")[:SEARCH_LIMIT]
    )
    result["sites"] = list(
        Site.objects.filter(name__icontains=query).order_by("name").values("name", "role")[:SEARCH_LIMIT]
    )
    result["requests"] = list(
        WMCoreRequest.objects.filter(RequestName__icontains=query)
        .order_by("RequestName")
        .values("RequestName", "RequestStatus")[:SEARCH_LIMIT]
    )
    return result


def decision_detail(*, decision_id: int) -> dict[str, Any] | None:
    """One stored decision with its trace in words (any plugin)."""
    decision = Decision.objects.select_related("cycle").filter(pk=decision_id).first()
    if decision is None:
        return None
    from brokerage.gdpconfig.profiles import PROFILE_NAMES
    from brokerage.selectors.inputs import decision_replay_why_not

    why_not = decision_replay_why_not(decision=decision)
    return {
        "decision": decision,
        "trace": decision_trace(decision=decision),
        "replayable": not why_not,
        "replay_why": why_not,
        "profiles": PROFILE_NAMES,
    }


def site_detail(*, name: str) -> dict[str, Any] | None:
    """A site and its queues with their jobs by status (two queries)."""
    site = Site.objects.filter(name=name).first()
    if site is None:
        return None
    queues = list(PandaQueue.objects.filter(site=site).order_by("name").values("name", "status"))
    jobs = jobs_by_queue([queue["name"] for queue in queues])
    for queue in queues:
        queue["jobs"] = jobs[queue["name"]]
    return {"site": site, "queues": queues}


def queue_list(*, status: str = "") -> dict[str, Any]:
    """PanDA queues with their site and jobs by status, optionally of one status (two queries)."""
    from brokerage.models import choices

    problems = {}
    queues = PandaQueue.objects.select_related("site").order_by("name")
    if status and status not in choices.QueueStatus.values:
        problems["status"] = f"{status!r} is not a queue status; one of {', '.join(choices.QueueStatus.values)}"
    elif status:
        queues = queues.filter(status=status)
    rows = list(queues.values("name", "status", "site__name"))
    jobs = jobs_by_queue([row["name"] for row in rows])
    for row in rows:
        row["jobs"] = jobs[row["name"]]
    return {
        "queues": rows,
        "problems": problems,
        "status": "" if problems else status,
        "statuses": choices.QueueStatus.values,
    }
