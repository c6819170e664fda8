"""One WMCore request for an operator (seed 004): each of its elements with where it is along the chain (global
queue, an agent's inbox and queue, the site chosen), why it waits with the numbers of the pull that left it, and
the slots of every agent's sites it may use as pullWork and getWork count them at its priority. A fixed number
of queries per agent."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Sum

from brokerage.adapters.wmcore import ElementReader, element_rows
from brokerage.engine import explain, reason_title
from brokerage.engine.wmcore.elements import GET_WORK, PULL_WORK, PullRules, possible_sites, usable_sites
from brokerage.engine.wmcore.matching import free_slots
from brokerage.models import WMCoreElement, WMCoreQueue, WMCoreRequest
from brokerage.selectors.wmcore import config_snapshot, wmcore_site_jobs, wmcore_site_resources

ELEMENTS_SHOWN = 200
SLOT_ROWS_SHOWN = 80
# Where a copy is, in the chain's order: the global queue first, then each agent's inbox and queue.
PLACE_ORDER = {("global", "queue"): 0, ("global", "inbox"): 1, ("local", "inbox"): 2, ("local", "queue"): 3}


def _at_or_above(by_priority: dict[float, int], priority: float) -> int:
    """The jobs that count against an element of this priority: those of its priority or higher (seed 004)."""
    return sum(jobs for level, jobs in by_priority.items() if level >= priority)


def _places(copies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(copies, key=lambda c: (PLACE_ORDER.get((c["queue__kind"], c["database"]), 9), c["queue__name"]))


def wmcore_request_elements(*, request: WMCoreRequest) -> list[dict[str, Any]]:
    """The request's elements, one row each whatever the number of copies: every copy's place and status, the
    site the last match chose, the agent that acquired it, and why it waits (the reason of its Available copy, its
    sentence with the numbers, since when)."""
    copies: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in WMCoreElement.objects.filter(request=request).values(
        "element_id",
        "queue__name",
        "queue__kind",
        "database",
        "Status",
        "Priority",
        "Jobs",
        "blowupFactor",
        "site",
        "ChildQueue__name",
        "UpdateTime",
        "stuck_reason",
        "stuck_detail",
        "stuck_since",
    ):
        copies[row["element_id"]].append(row)
    rows = []
    for element_id, found in copies.items():
        places = _places(found)
        waiting = next((c for c in places if c["Status"] == "Available" and c["stuck_reason"]), None)
        last = places[-1]
        rows.append(
            {
                "element_id": element_id,
                "places": places,
                "status": last["Status"],
                "priority": max(c["Priority"] for c in places),
                "jobs": last["Jobs"],
                "blowup": last["blowupFactor"],
                "site": next((c["site"] for c in reversed(places) if c["site"]), ""),
                "agent": next((c["ChildQueue__name"] for c in places if c["ChildQueue__name"]), ""),
                "updated": max(c["UpdateTime"] for c in places),
                "waits": None
                if waiting is None
                else {
                    "code": waiting["stuck_reason"],
                    "title": reason_title(waiting["stuck_reason"]),
                    "sentence": explain(waiting["stuck_reason"], waiting["stuck_detail"] or {}),
                    "step": (waiting["stuck_detail"] or {}).get("step", ""),
                    "by": (waiting["stuck_detail"] or {}).get("queue", ""),
                    "since": waiting["stuck_since"],
                    "in": waiting["queue__name"],
                },
            }
        )
    rows.sort(key=lambda r: (r["waits"] is None, -r["priority"], r["element_id"]))
    return rows


def wmcore_request_slots(*, request: WMCoreRequest, priority: float) -> dict[str, Any]:
    """Every agent's sites this request's elements may use (all of them when one element may go anywhere), with
    each step's threshold, the jobs counted there at `priority` or higher, and what that leaves: pullWork (global →
    local queue) and getWork (local queue → WMBS), under the installation's rules."""
    rules = PullRules.from_config(config_snapshot())
    reader = ElementReader()
    usable: set[str] = set()
    anywhere = False
    elements = element_rows(WMCoreElement.objects.filter(request=request, queue__kind="global", database="queue"))
    # why an element may go nowhere (its pileup only at a site it does not list, a whitelist all blacklisted): the
    # page said "No agent has a site this request may use" while its whitelisted site was in both agents' tables
    nowhere: dict[str, None] = {}
    for element in elements:
        read = reader.element(element)
        sites = usable_sites(read, rules)
        if sites is None:
            anywhere = True
        else:
            usable |= sites
            if not sites and rules.site_rule != "wmcore":
                restriction = possible_sites(read)
                nowhere[explain(restriction.code, restriction.detail)] = None
    if not elements:  # not split into elements yet: its whitelist is all there is to go by
        usable = set(request.SiteWhitelist or ())
        anywhere = not usable
    rows = []
    for queue in WMCoreQueue.objects.filter(kind="local").order_by("name"):
        resources = [site for site in wmcore_site_resources(queue=queue) if anywhere or site.name in usable]
        if not resources:
            continue
        steps = {}
        for step in (PULL_WORK, GET_WORK):
            slots = free_slots(resources, step=step, rules=rules)
            steps[step] = (slots, wmcore_site_jobs(queue=queue, step=step))
        for site in sorted(resources, key=lambda s: s.name):
            row: dict[str, Any] = {"queue": queue.name, "site": site.name, "state": site.state}
            for step, (slots, jobs) in steps.items():
                threshold = slots.thresholds.get(site.name)
                counted = _at_or_above(jobs.get(site.name, {}), priority)
                row[step] = {
                    "threshold": threshold,
                    "excluded": slots.excluded.get(site.name, ""),
                    "jobs": counted,
                    "free": None if threshold is None else max(threshold - counted, 0),
                }
            row["steps"] = [row[PULL_WORK], row[GET_WORK]]
            rows.append(row)
    rows.sort(key=lambda r: (-(r[PULL_WORK]["free"] or 0), r["queue"], r["site"]))
    return {
        "rows": rows[:SLOT_ROWS_SHOWN],
        "total": len(rows),
        "anywhere": anywhere,
        "usable": sorted(usable),
        "nowhere": list(nowhere) if not usable and not anywhere else [],
        "listed": sorted(request.SiteWhitelist or ()),
        "priority": priority,
        "rules": rules,
    }


def wmcore_request_detail(*, name: str) -> dict[str, Any] | None:
    """A WMCore request for an operator: its elements (where each is and why it waits), their count by status in
    the global queue, and the slots at the sites it may use for both steps. None when there is no such request."""
    request = WMCoreRequest.objects.filter(RequestName=name).first()
    if request is None:
        return None
    elements = wmcore_request_elements(request=request)
    waiting = [row["priority"] for row in elements if row["status"] == "Available"]
    priority = max(waiting) if waiting else float(request.RequestPriority)
    return {
        "request": request,
        "elements": elements[:ELEMENTS_SHOWN],
        "elements_total": len(elements),
        "by_status": list(
            WMCoreElement.objects.filter(request=request, queue__kind="global", database="queue")
            .values("Status")
            .annotate(n=Count("pk"), jobs=Sum("Jobs"))
            .order_by("Status")
        ),
        "slots": wmcore_request_slots(request=request, priority=priority),
    }
