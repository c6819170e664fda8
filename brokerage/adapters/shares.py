"""The global shares' usage (executing and queued HS06 against their targets, REFERENCE.md) as the analysis class
throttle of job brokerage reads it and the share pages show it."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db.models import Case, F, FloatField, IntegerField, Sum, Value, When
from django.db.models.functions import Coalesce

from brokerage.models import (
    GlobalShare,
    Job,
)
from brokerage.shares import (
    FIRST_SHARE,
    ShareNode,
    hs06_distribution,
    normalised_shares,
    share_usage,
    under_pledge_order,
)

# Without a measured HS06, a job counts as its cores × 10 HS06 (the corePower REFERENCE.md uses).
DEFAULT_HS06_PER_CORE = 10.0
EXECUTING = ("sent", "running")
QUEUED = ("activated",)


def global_share_usage() -> list[dict[str, Any]]:
    """Every global share with its normalised value, and for leaves the executing and queued HS06, the
    target and the usage (REFERENCE.md). Two queries whatever the number of jobs."""
    shares = list(GlobalShare.objects.select_related("parent"))
    nodes = [ShareNode(s.name, s.value, s.parent.name if s.parent else None) for s in shares]
    normalised = normalised_shares(nodes)
    parents = {node.parent for node in nodes}
    leaves = [s.name for s in shares if s.name not in parents]
    hs06 = Coalesce(F("hs06"), F("coreCount") * Value(DEFAULT_HS06_PER_CORE), output_field=FloatField())
    sums = (
        Job.objects.filter(jobStatus__in=EXECUTING + QUEUED, gshare__in=leaves)
        .values("gshare", "jobStatus")
        .annotate(total=Sum(hs06))
    )
    executing: dict[str, float] = {}
    queued: dict[str, float] = {}
    for row in sums:
        target = executing if row["jobStatus"] in EXECUTING else queued
        target[row["gshare"]] = target.get(row["gshare"], 0.0) + float(row["total"] or 0.0)
    usage = share_usage(normalised, executing, leaves)
    return [
        {
            "share": share,
            "normalised": normalised.get(share.name, 0.0),
            "leaf": share.name in usage,
            "executing_hs06": usage.get(share.name, {}).get("executing", 0.0),
            "queued_hs06": queued.get(share.name, 0.0),
            "target_hs06": usage.get(share.name, {}).get("target", 0.0),
            "usage": usage.get(share.name, {}).get("usage"),
        }
        for share in shares
    ]


# The order is read again at most this often (entity_module.__reload_hs_distribution: "every 10 seconds"): a pilot's
# getJob must not count the grid's active jobs each time
SHARE_ORDER_SECONDS = 10
SHARE_ORDER_KEY = "global-share-order"


def global_share_order() -> list[str]:
    """The leaf global shares, the one furthest below its pledge first (brokerage.shares.under_pledge_order over the
    HS06 of the sent and running jobs per gshare, and of the activated ones), as JobDispatcher hands out activated
    jobs in panda-server 1.0.4; read at most every SHARE_ORDER_SECONDS (two queries), from the cache between."""
    order = cache.get(SHARE_ORDER_KEY)
    if order is None:
        nodes = [
            ShareNode(name, value, parent)
            for name, value, parent in GlobalShare.objects.order_by("pk").values_list("name", "value", "parent__name")
        ]
        hs06 = Coalesce(F("hs06"), F("coreCount") * Value(DEFAULT_HS06_PER_CORE), output_field=FloatField())
        executing: dict[str, float] = {}
        queued: dict[str, float] = {}
        for gshare, status, total in (
            Job.objects.filter(jobStatus__in=EXECUTING + QUEUED)
            .values_list("gshare", "jobStatus")
            .annotate(total=Sum(hs06))
            .order_by()
        ):
            into = executing if status in EXECUTING else queued
            into[gshare] = into.get(gshare, 0.0) + float(total or 0.0)
        distribution = hs06_distribution(nodes=nodes, executing=executing, queued=queued)
        order = under_pledge_order(nodes=nodes, distribution=distribution)
        cache.set(SHARE_ORDER_KEY, order, SHARE_ORDER_SECONDS)
    return order


def share_rank(order: list[str]) -> Case:
    """A job's place in `order` as an expression for ORDER BY: the Test share shares the first place, a gshare
    outside the order comes after all (JobDispatcher's getCriteriaForGlobalShares)."""
    whens = [When(gshare=name, then=Value(0 if name == FIRST_SHARE else index)) for index, name in enumerate(order)]
    # a job of no gshare goes last too; said as a WHEN, so that a CASE stays a CASE with no share at all (a bare
    # constant would be read as `ORDER BY 0`, a column position, by PostgreSQL)
    last = Value(len(order))
    return Case(When(gshare="", then=last), *whens, default=last, output_field=IntegerField())
