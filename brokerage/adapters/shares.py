"""The global shares' usage (executing and queued HS06 against their targets, REFERENCE.md) as the analysis class
throttle of job brokerage reads it and the share pages show it, the order getJob serves them in, and what each share
may use of the grid at job generation (brokerage.shares.share_allocation_rules)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Case, F, FloatField, IntegerField, Sum, Value, When
from django.db.models.functions import Coalesce

from brokerage.models import (
    GlobalShare,
    Job,
    Task,
    WorkQueue,
)
from brokerage.shares import (
    FIRST_SHARE,
    GLOBAL_SHARE_LEVEL,
    WORK_QUEUE_LEVEL,
    ShareAllocation,
    ShareNode,
    ShareState,
    hs06_distribution,
    normalised_shares,
    share_allocation_rules,
    share_usage,
    under_pledge_order,
)
from brokerage.states import TASK_GENERATING

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


def global_share_distribution() -> tuple[list[ShareNode], dict[str, dict[str, float]]]:
    """The share tree and each share's executing, queued and pledged HS06 now (brokerage.shares.hs06_distribution over
    the sent and running jobs per gshare, and the activated ones): two queries, never cached."""
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
    return nodes, hs06_distribution(nodes=nodes, executing=executing, queued=queued)


def global_share_order() -> list[str]:
    """The leaf global shares, the one furthest below its pledge first (brokerage.shares.under_pledge_order), as
    JobDispatcher hands out activated jobs in panda-server 1.0.4; read at most every SHARE_ORDER_SECONDS (two
    queries), from the cache between."""
    order = cache.get(SHARE_ORDER_KEY)
    if order is None:
        nodes, distribution = global_share_distribution()
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


# Jobs that hold a share busy besides the executing ones: queued, about to run
SHARE_QUEUED = ("defined", "assigned", "activated", "starting", "throttled")
SHARE_POOLS_KEY = "share-pools-v2"  # v2: with the HS06 waiting for a pilot
# A share with a task in these has work, although none of its jobs may be queued: a pending task waits for room in
# the queues (job brokerage retries it), a throttled or scouting one for its time to come
SHARE_BUSY_TASKS = (*TASK_GENERATING, "scouting", "pending", "throttled")


def _share_pools(*, now: datetime) -> dict[str, Any]:
    """The HS06 the sent and running jobs use, the HS06 queued to run, and the gshares and work queues with work (jobs
    queued or a task that can get jobs), by gshare and by work queue: two queries, read at most every
    SHARE_ORDER_SECONDS of the grid's clock (each work queue's cycle asks; keyed by `now`, so a clock run faster than
    the wall's, as the tests and the benchmarks run it, reads them as often)."""
    key = f"{SHARE_POOLS_KEY}:{int(now.timestamp()) // SHARE_ORDER_SECONDS}"
    pools = cache.get(key)
    if pools is None:
        hs06 = Coalesce(F("hs06"), F("coreCount") * Value(DEFAULT_HS06_PER_CORE), output_field=FloatField())
        by_gshare: dict[str, float] = {}
        by_queue: dict[int, float] = {}
        queued_gshare: dict[str, float] = {}
        queued_queue: dict[int, float] = {}
        waiting_gshare: dict[str, float] = {}
        waiting_queue: dict[int, float] = {}
        busy_gshares: set[str] = set()
        busy_queues: set[int] = set()
        for gshare, queue_id, status, total in (
            Job.objects.filter(jobStatus__in=EXECUTING + SHARE_QUEUED)
            .values_list("gshare", "workQueue_id", "jobStatus")
            .annotate(total=Sum(hs06))
            .order_by()
        ):
            busy_gshares.add(gshare)
            busy_queues.add(queue_id)
            into_gshare, into_queue = (by_gshare, by_queue) if status in EXECUTING else (queued_gshare, queued_queue)
            into_gshare[gshare] = into_gshare.get(gshare, 0.0) + float(total or 0.0)
            into_queue[queue_id] = into_queue.get(queue_id, 0.0) + float(total or 0.0)
            if status in QUEUED:  # waiting for a pilot, not for its input
                waiting_gshare[gshare] = waiting_gshare.get(gshare, 0.0) + float(total or 0.0)
                waiting_queue[queue_id] = waiting_queue.get(queue_id, 0.0) + float(total or 0.0)
        for gshare, queue_id in (
            Task.objects.filter(status__in=SHARE_BUSY_TASKS).values_list("gshare", "workQueue_id").distinct()
        ):
            busy_gshares.add(gshare)
            busy_queues.add(queue_id)
        pools = {
            "gshare": by_gshare,
            "queue": by_queue,
            "queued_gshare": queued_gshare,
            "queued_queue": queued_queue,
            "waiting_gshare": waiting_gshare,
            "waiting_queue": waiting_queue,
            "busy_gshares": busy_gshares,
            "busy_queues": busy_queues,
        }
        cache.set(key, pools, SHARE_ORDER_SECONDS)
    return pools


def share_allocations(
    *,
    config,
    queue_type: str,
    queued_ratio: float,
    now: datetime,
    global_values: Mapping[str, float] | None = None,
    queue_values: Mapping[str, tuple[int | None, bool]] | None = None,
) -> dict[tuple[str, str], ShareAllocation]:
    """(level, name) → what each leaf global share and each throttled top work queue of `queue_type` may use of its
    pool now, under the profile's SHARE_ALLOCATION_RULE (`queued_ratio`: the throttler's threshold): global shares
    over the grid (a leaf lends to busy ones as its work queue is stretchable), work queues over the jobs of their
    type (a partition with its sub-queues). `global_values` (name → value) and `queue_values` (name → (share,
    stretchable)) replace the stored ones: the admin's what-if."""
    pools = _share_pools(now=now)
    allocate = share_allocation_rules.pick(config)
    global_values = global_values or {}
    queue_values = queue_values or {}
    rows = [
        (name, global_values.get(name, value), parent, stretchable)
        for name, value, parent, stretchable in GlobalShare.objects.order_by("pk").values_list(
            "name", "value", "parent__name", "queue__stretchable"
        )
    ]
    nodes = [ShareNode(name, value, parent) for name, value, parent, _ in rows]
    normalised = normalised_shares(nodes)
    parents = {parent for _, _, parent, _ in rows}
    leaves = [
        ShareState(name, normalised.get(name, 0.0), bool(stretchable), name in pools["busy_gshares"],
                   pools["gshare"].get(name, 0.0), pools["queued_gshare"].get(name, 0.0),
                   pools["waiting_gshare"].get(name, 0.0))
        for name, _, _, stretchable in rows
        if name not in parents
    ]  # fmt: skip
    allocations = {
        (GLOBAL_SHARE_LEVEL, a.name): a
        for a in allocate(level=GLOBAL_SHARE_LEVEL, shares=leaves, queued_ratio=queued_ratio).values()
    }
    queues = [
        (pk, name, *queue_values.get(name, (share, stretchable)), partition)
        for pk, name, share, stretchable, partition in WorkQueue.objects.filter(
            queue_type=queue_type, status="active"
        ).values_list("pk", "queue_name", "queue_share", "stretchable", "partition_id")
    ]
    members: dict[int, list[int]] = {}
    for pk, _, _, _, partition in queues:
        members.setdefault(partition or pk, []).append(pk)
    tops = [
        ShareState(
            name,
            float(share),
            stretchable,
            any(m in pools["busy_queues"] for m in members[pk]),
            sum(pools["queue"].get(m, 0.0) for m in members[pk]),
            sum(pools["queued_queue"].get(m, 0.0) for m in members[pk]),
            sum(pools["waiting_queue"].get(m, 0.0) for m in members[pk]),
        )
        for pk, name, share, stretchable, partition in queues
        if partition is None and share is not None
    ]
    allocations.update(
        {
            (WORK_QUEUE_LEVEL, a.name): a
            for a in allocate(level=WORK_QUEUE_LEVEL, shares=tops, queued_ratio=queued_ratio).values()
        }
    )
    return allocations
