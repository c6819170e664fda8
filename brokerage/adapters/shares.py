"""The global shares' usage (executing and queued HS06 against their targets, REFERENCE.md) as the analysis class
throttle of job brokerage reads it and the share pages show it."""

from __future__ import annotations

from typing import Any

from django.db.models import F, FloatField, Sum, Value
from django.db.models.functions import Coalesce

from brokerage.models import (
    GlobalShare,
    Job,
)
from brokerage.shares import ShareNode, normalised_shares, share_usage

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
