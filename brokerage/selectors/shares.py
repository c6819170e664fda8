"""Reading work queues and shares: the mapping rules, effective queue shares, global share usage."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count

from brokerage.adapters.shares import global_share_order, global_share_usage
from brokerage.models import (
    GlobalShareSnapshot,
    Task,
    WorkQueue,
)
from brokerage.shares import Criteria, QueueRule, distribute_shares

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
    return {"tree": tree, "history": history, "work_queues": queues, "served_order": global_share_order()}
