"""Celery tasks: thin wrappers that take ids and call one service each."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.locks import process_lock_expire
from brokerage.services.priority import task_priority_boost
from brokerage.services.shares import global_share_snapshot_take


@shared_task(name="brokerage.tasks.process_lock_expire_task")
def process_lock_expire_task() -> int:
    """Periodic (beat): frees the process locks of workers that died."""
    return process_lock_expire(now=timezone.now())


@shared_task(name="brokerage.tasks.global_share_snapshot_task")
def global_share_snapshot_task() -> int:
    """Periodic (beat): records the global shares' usage for the monitor's history."""
    return len(global_share_snapshot_take(now=timezone.now()))


@shared_task(name="brokerage.tasks.task_priority_boost_task")
def task_priority_boost_task() -> int:
    """Periodic (beat): hurries nearly finished tasks along (seed 002, automatic priority boosting)."""
    return len(task_priority_boost(now=timezone.now()))


@shared_task(name="brokerage.tasks.task_brokerage_cycle_task")
def task_brokerage_cycle_task() -> int:
    """Periodic (beat): chooses nuclei for the tasks waiting in assigning; returns the cycle's id."""
    return task_brokerage_cycle_run(now=timezone.now(), limit=settings.TASK_BROKERAGE_BATCH).pk
