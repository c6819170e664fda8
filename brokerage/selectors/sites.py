"""Sites as the pages read them: the list by role (nucleus, satellite), one site with its queues and storage."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count
from django.utils import timezone

from brokerage.models import (
    PandaQueue,
    Site,
    StorageEndpoint,
)
from brokerage.selectors.jobs import job_error_rows_recent, job_error_summary, job_state_rows_recent
from brokerage.selectors.queues import jobs_by_queue

SITE_WINDOW = timedelta(days=1)
ENDPOINT_COLUMNS = ("name", "type", "space_total", "space_free", "space_expired", "is_tape", "blacklisted",
                    "detailed_status")  # fmt: skip


def site_detail(*, name: str, now: datetime | None = None) -> dict[str, Any] | None:
    """A site as BigPanDA's site page shows it: its queues with their jobs by status, the queues out of service
    (our downtimes: a queue brokeroff or offline, with when the demo's CRIC brings it back), its storage endpoints
    with their space and state, the errors of its jobs and their state changes per hour over the last day. A fixed
    number of queries, whatever its queues."""
    site = Site.objects.filter(name=name).first()
    if site is None:
        return None
    now = now or timezone.now()
    queues = list(PandaQueue.objects.filter(site=site).order_by("name").values("name", "status", "cric"))
    names = [queue["name"] for queue in queues]
    jobs, counted_at = jobs_by_queue(names)
    for queue in queues:
        queue["jobs"] = jobs[queue["name"]]
    since = now - SITE_WINDOW
    per_hour: dict[tuple, int] = {}
    for row in job_state_rows_recent(since=since, queues=names, now=now) if names else []:
        key = (row["hour"], row["new_status"])
        per_hour[key] = per_hour.get(key, 0) + row["n"]
    return {
        "site": site,
        "queues": queues,
        "counted_at": counted_at,
        "downtimes": [
            {"name": q["name"], "status": q["status"], "back_at": (q["cric"] or {}).get("demo_back_at")}
            for q in queues
            if q["status"] in ("brokeroff", "offline", "test", "paused")
        ],
        "endpoints": list(StorageEndpoint.objects.filter(site=site).order_by("name").values(*ENDPOINT_COLUMNS)),
        "errors": job_error_summary(rows=job_error_rows_recent(since=since, queues=names) if names else [], limit=20),
        "over_time": [{"time": hour, "status": status, "count": n} for (hour, status), n in sorted(per_hour.items())],
    }


def site_list(*, role: str = "") -> dict[str, Any]:
    """CRIC sites, nuclei first, with their cloud, country, tier, queues and their queues' active jobs by status
    (jobs_by_queue), optionally of one role (four queries at most)."""
    from brokerage.models import choices

    problems = {}
    sites = Site.objects.annotate(n_queues=Count("queues")).order_by("role", "name")
    if role and role not in choices.SiteRole.values:
        problems["role"] = f"{role!r} is not a site role; one of {', '.join(choices.SiteRole.values)}"
    elif role:
        sites = sites.filter(role=role)
    rows = list(sites.values("name", "role", "state", "tier_level", "cloud", "country", "n_queues"))
    queues_of: dict[str, list[str]] = {}
    for queue, site in PandaQueue.objects.filter(site__name__in=[r["name"] for r in rows]).values_list(
        "name", "site__name"
    ):
        queues_of.setdefault(site, []).append(queue)
    jobs, counted_at = jobs_by_queue([queue for names in queues_of.values() for queue in names])
    for row in rows:
        totals: dict[str, int] = {}
        for queue in queues_of.get(row["name"], []):
            for status, n in jobs[queue]:
                totals[status] = totals.get(status, 0) + n
        row["jobs"] = sorted(totals.items())
    return {
        "sites": rows,
        "counted_at": counted_at,
        "problems": problems,
        "role": "" if problems else role,
        "roles": choices.SiteRole.values,
    }
