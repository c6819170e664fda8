"""Writing work-queue assignments and global share snapshots."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from brokerage.adapters.shares import global_share_usage
from brokerage.models import GlobalShareSnapshot, Task
from brokerage.selectors.shares import work_queue_rules
from brokerage.services.bulk import rows_lock
from brokerage.shares import ATTRIBUTES, work_queue_for

# the task columns the criteria language may name
TASK_ATTRIBUTES = tuple(ATTRIBUTES.values())


def task_work_queue_assign(*, task_ids: list[int] | None = None) -> dict[int, int | None]:
    """Maps tasks (all without a work queue, or the ones named) to the first work queue whose criteria they
    pass; returns task id → queue id. Two queries plus one update per distinct queue."""
    rules = work_queue_rules()
    tasks = Task.objects.all() if task_ids is not None else Task.objects.filter(workQueue__isnull=True)
    if task_ids is not None:
        tasks = tasks.filter(pk__in=task_ids)
    chosen: dict[int, int | None] = {}
    for row in tasks.values("jediTaskID", *TASK_ATTRIBUTES):
        rule = work_queue_for(row, rules)
        chosen[row["jediTaskID"]] = rule.queue_id if rule else None
    by_queue: dict[int | None, list[int]] = {}
    for task_id, queue_id in chosen.items():
        by_queue.setdefault(queue_id, []).append(task_id)
    with transaction.atomic():
        rows_lock(Task, chosen)  # every task of the call at once, in the one lock order
        for queue_id, ids in by_queue.items():
            Task.objects.filter(pk__in=ids).update(workQueue_id=queue_id)
    return chosen


def global_share_snapshot_take(*, now: datetime) -> list[GlobalShareSnapshot]:
    """Stores every share's normalised value, HS06 figures and usage at `now` (history for the monitor)."""
    rows = [
        GlobalShareSnapshot(
            taken_at=now,
            share=item["share"],
            normalised_value=item["normalised"],
            executing_hs06=item["executing_hs06"],
            queued_hs06=item["queued_hs06"],
            target_hs06=item["target_hs06"],
            usage=item["usage"],
        )
        for item in global_share_usage()
    ]
    return GlobalShareSnapshot.objects.bulk_create(rows)
