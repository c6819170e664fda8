"""Sites as the pages read them: the list by role (nucleus, satellite), one site with its queues and storage."""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from brokerage.models import (
    PandaQueue,
    Site,
)
from brokerage.selectors.queues import jobs_by_queue


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


def site_list(*, role: str = "") -> dict[str, Any]:
    """CRIC sites, nuclei first, with their cloud, country, tier, queues and their queues' jobs by status, optionally
    of one role (three queries)."""
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
    jobs = jobs_by_queue([queue for names in queues_of.values() for queue in names])
    for row in rows:
        totals: dict[str, int] = {}
        for queue in queues_of.get(row["name"], []):
            for status, n in jobs[queue]:
                totals[status] = totals.get(status, 0) + n
        row["jobs"] = sorted(totals.items())
    return {
        "sites": rows,
        "problems": problems,
        "role": "" if problems else role,
        "roles": choices.SiteRole.values,
    }
