"""Reading work queues and shares: the mapping rules, effective queue shares, global share usage."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q

from brokerage.adapters.shares import global_share_order, global_share_usage, share_allocations
from brokerage.models import (
    Decision,
    GlobalShareSnapshot,
    Task,
    WorkQueue,
)
from brokerage.plugins import THROTTLER_PLUGIN
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.shares import Criteria, QueueRule, distribute_shares
from brokerage.throttle import throttle_threshold

# how the job generator says a share is held (brokerage.shares.ShareAllocation.message)
SHARE_HELD_WORDS = " a target of "
SHARE_HELD = re.compile(r"^(?P<share>.+) (runs|holds) [\d,]+ HS06 ")
ACTIVE_TASK_STATUSES = ("ready", "scouting", "running", "pending", "throttled")


def work_queue_rules() -> list[QueueRule]:
    """Every work queue as a mapping rule (criteria parsed once; rows saved through the admin always parse)."""
    return [
        QueueRule(
            queue_id=row["queue_id"],
            name=row["queue_name"],
            queue_type=row["queue_type"],
            vo=row["vo"],
            order=row["queue_order"],
            criteria=Criteria.parse(row["criteria"], row["variables"]),
            is_partition=row["is_partition"],
            partition_id=row["partition_id"],
            active=row["status"] == "active",
        )
        for row in WorkQueue.objects.values(
            "queue_id",
            "queue_name",
            "queue_type",
            "vo",
            "queue_order",
            "criteria",
            "variables",
            "is_partition",
            "partition_id",
            "status",
        )
    ]


def work_queue_shares(*, vo: str = "atlas", queue_type: str = "production") -> list[dict[str, Any]]:
    """Each queue's share and its effective share now (seed 002): queues with active tasks share the CPU, the
    unused part going to stretchable queues first; a partition's effective share is split among its sub-queues
    the same way."""
    queues = list(WorkQueue.objects.filter(vo=vo, queue_type=queue_type).order_by("queue_order"))
    busy = dict(
        Task.objects.filter(status__in=ACTIVE_TASK_STATUSES, workQueue__in=queues)
        .values_list("workQueue")
        .annotate(n=Count("pk"))
        .values_list("workQueue", "n")
    )
    sub_queues: dict[int, list[WorkQueue]] = {}
    for queue in queues:
        if queue.partition_id:
            sub_queues.setdefault(queue.partition_id, []).append(queue)

    def active(queue: WorkQueue) -> bool:
        if queue.is_partition:
            return any(active(sub) for sub in sub_queues.get(queue.queue_id, []))
        return queue.status == "active" and busy.get(queue.queue_id, 0) > 0

    top = [q for q in queues if not q.partition_id]
    effective = distribute_shares([(q.queue_name, q.queue_share or 0, q.stretchable, active(q)) for q in top])
    rows = []
    for queue in top:
        rows.append(
            {
                "queue": queue,
                "share": queue.queue_share,
                "active": active(queue),
                "effective": effective[queue.queue_name],
                "tasks": busy.get(queue.queue_id, 0),
                "partition": None,
            }
        )
        members = sub_queues.get(queue.queue_id, [])
        if members:
            inner = distribute_shares([(s.queue_name, s.queue_share or 0, s.stretchable, active(s)) for s in members])
            total = sum(s.queue_share or 0 for s in members) or 1
            for sub in members:
                rows.append(
                    {
                        "queue": sub,
                        "share": sub.queue_share,
                        "active": active(sub),
                        "tasks": busy.get(sub.queue_id, 0),
                        "effective": effective[queue.queue_name] * inner[sub.queue_name] / total,
                        "partition": queue,
                    }
                )
    return rows


def shares_overview(*, now: datetime) -> dict[str, Any]:
    """The global share tree with usage, its history, the order getJob serves the leaf shares in now (the one
    furthest below its pledge first), and the work-queue shares with their redistribution."""
    usage = global_share_usage()
    tree = [
        {
            "name": row["share"].name,
            "parent": row["share"].parent.name if row["share"].parent else None,
            "normalised": row["normalised"],
            "usage": row["usage"],
            "leaf": row["leaf"],
            "executing": row["executing_hs06"],
            "target": row["target_hs06"],
            "queued": row["queued_hs06"],
        }
        for row in usage
    ]
    history = [
        {"time": row["taken_at"], "status": row["share__name"], "count": row["usage"]}
        for row in GlobalShareSnapshot.objects.filter(taken_at__gte=now - timedelta(days=7), usage__isnull=False)
        .values("taken_at", "share__name", "usage")
        .order_by("taken_at")
    ]
    queues = []
    for queue_type in ("production", "analysis"):
        for row in work_queue_shares(queue_type=queue_type):
            queues.append(
                {
                    "name": row["queue"].queue_name,
                    "type": queue_type,
                    "share": row["share"] or 0,
                    "effective": round(row["effective"], 2),
                    "active": row["active"],
                    "stretchable": row["queue"].stretchable,
                    "tasks": row["tasks"],
                    "partition": row["partition"].queue_name if row["partition"] else "",
                }
            )
    return {
        "tree": tree,
        "history": history,
        "work_queues": queues,
        "served_order": global_share_order(),
        "held": shares_held(now=now),
    }


def shares_held(*, now: datetime) -> list[dict[str, Any]]:
    """The shares job generation holds back now (SHARE_ALLOCATION_RULE): the latest such throttler decision of each
    share within the last two job-generation periods, newest first (one query, at most a few dozen rows)."""
    period = timedelta(seconds=float(settings.CELERY_BEAT_SCHEDULE["job-generation"]["schedule"]))
    latest: dict[str, dict[str, Any]] = {}
    for pk, message, created in (
        Decision.objects.filter(plugin=THROTTLER_PLUGIN, outcome="throttled", created__gte=now - 2 * period)
        .filter(
            Q(message__startswith="global share ") | Q(message__startswith="work queue "),
            message__contains=SHARE_HELD_WORDS,
        )
        .order_by("-created", "-pk")
        .values_list("pk", "message", "created")[:200]
    ):
        found = SHARE_HELD.match(message)
        share = found["share"] if found else message
        latest.setdefault(share, {"share": share, "message": message, "decision": pk, "created": created})
    return list(latest.values())


def share_change_effect(
    *,
    now: datetime,
    queue_type: str = "production",
    global_values: dict[str, float] | None = None,
    queue_values: dict[str, tuple[int | None, bool]] | None = None,
) -> list[dict[str, Any]]:
    """The admin's what-if of a share change, before it is saved: for every leaf global share and every throttled
    work queue of `queue_type`, its effective share, target and whether job generation holds it back now, and the
    same with the changed values (global share name → value; work queue name → (share, stretchable)), on the jobs
    running and queued now. Reads only (a few queries)."""
    config = gdpconfig_view(vo="atlas")
    ratio = throttle_threshold(config=config)
    before = share_allocations(config=config, queue_type=queue_type, queued_ratio=ratio, now=now)
    after = share_allocations(
        config=config,
        queue_type=queue_type,
        queued_ratio=ratio,
        now=now,
        global_values=global_values,
        queue_values=queue_values,
    )
    rows = []
    for key in sorted(set(before) | set(after)):
        was, will = before.get(key), after.get(key)
        rows.append(
            {
                "level": key[0],
                "name": key[1],
                "executing": (was or will).executing,
                "effective_before": was.effective if was else None,
                "effective_after": will.effective if will else None,
                "target_before": was.target if was else None,
                "target_after": will.target if will else None,
                "held_before": was.message if was else "",
                "held_after": will.message if will else "",
                "changed": (was is None) != (will is None)
                or (was is not None and will is not None and (was.effective, was.held) != (will.effective, will.held)),
            }
        )
    return rows
