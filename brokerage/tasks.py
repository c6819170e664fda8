"""Celery tasks: thin wrappers that take ids and call one service each."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.housekeeping import housekeeping_run
from brokerage.services.jobs import job_generation_cycle_run, job_generation_dispatch
from brokerage.services.locks import process_lock_expire
from brokerage.services.priority import task_priority_boost
from brokerage.services.progress import task_refine
from brokerage.services.shares import global_share_snapshot_take
from brokerage.services.simulator import grid_simulate_turn
from brokerage.services.summaries import job_counts_refresh
from brokerage.services.watchdog import watchdog_cycle_run
from brokerage.services.wmcore import element_locations_update, wmcore_agent_cycle_run, wmcore_global_cycle_run

# An outage of the database or the broker is waited out, not dropped (issue 31: PostgreSQL stopped for 20 s and 14
# runs were lost): a task that fails on one is retried with exponential backoff (1, 2, 4 … s, at most a minute
# apart, with jitter) for about five minutes. Every cycle works from the rows' state, so a retried or the next
# periodic run also does the work of the runs missed meanwhile.
RETRIED_ON = (OperationalError, InterfaceError, BrokerError)
RETRY = {"autoretry_for": RETRIED_ON, "retry_backoff": True, "retry_backoff_max": 60, "max_retries": 8}
# The cycles a dispatch fans out (one per work queue or agent, seconds each) wait behind the beat's short periodic
# tasks: on Redis a free worker takes priority 0 before 6 (kombu's priority steps), so the simulator's step and
# the lock sweep are not held up behind a round of cycles (issue 32: the step started 7.5 s after its 5-s beat).
# The filesystem transport has no priorities, and RabbitMQ queues declared without x-max-priority ignore them.
# Given per message (a task's own `priority` attribute is deprecated in Celery 5).
FANNED_OUT_PRIORITY = 6


@shared_task(name="brokerage.tasks.process_lock_expire_task", **RETRY)
def process_lock_expire_task() -> int:
    """Periodic (beat): frees the process locks of workers that died."""
    return process_lock_expire(now=timezone.now())


@shared_task(name="brokerage.tasks.global_share_snapshot_task", **RETRY)
def global_share_snapshot_task() -> int:
    """Periodic (beat): records the global shares' usage for the monitor's history."""
    return len(global_share_snapshot_take(now=timezone.now()))


@shared_task(name="brokerage.tasks.task_priority_boost_task", **RETRY)
def task_priority_boost_task() -> int:
    """Periodic (beat): hurries nearly finished tasks along (seed 002, automatic priority boosting)."""
    return len(task_priority_boost(now=timezone.now()))


@shared_task(name="brokerage.tasks.task_brokerage_cycle_task", **RETRY)
def task_brokerage_cycle_task() -> int:
    """Periodic (beat): chooses nuclei for the tasks waiting in assigning; returns the cycle's id."""
    return task_brokerage_cycle_run(now=timezone.now(), limit=settings.TASK_BROKERAGE_BATCH).pk


@shared_task(name="brokerage.tasks.task_refine_task", **RETRY)
def task_refine_task() -> int:
    """Periodic (beat): registered and defined tasks on to brokerage; returns how many moved."""
    return sum(len(ids) for ids in task_refine(now=timezone.now()).values())


@shared_task(name="brokerage.tasks.job_generation_dispatch_task", **RETRY)
def job_generation_dispatch_task() -> int:
    """Periodic (beat): closes the tasks whose inputs are all processed, then queues one job-generation cycle per
    active production or analysis work queue; returns how many."""
    ids = job_generation_dispatch(now=timezone.now())
    for work_queue_id in ids:
        job_generation_cycle_task.apply_async((work_queue_id,), priority=FANNED_OUT_PRIORITY)
    return len(ids)


@shared_task(name="brokerage.tasks.job_generation_cycle_task", **RETRY)
def job_generation_cycle_task(work_queue_id: int) -> int | None:
    """One job-generation and job-brokerage cycle for a work queue; the cycle id, None if another worker held
    the work queue's process lock."""
    now = timezone.now()
    cycle = job_generation_cycle_run(work_queue_id=work_queue_id, now=now, limit=settings.JOB_GENERATION_BATCH)
    return cycle.pk if cycle is not None else None


@shared_task(name="brokerage.tasks.grid_simulate_task", **RETRY)
def grid_simulate_task() -> dict:
    """Periodic (beat, demo mode only): one step of the grid simulator."""
    if not settings.GRID_SIMULATOR:
        return {}
    report = grid_simulate_turn(now=timezone.now(), speed=settings.GRID_SIMULATOR_SPEED, inflow=True)
    return report.__dict__ if report is not None else {"skipped": "the previous step is still running"}


@shared_task(name="brokerage.tasks.watchdog_task", **RETRY)
def watchdog_task() -> dict:
    """Periodic (beat): job timeouts, fast rebrokerage, throttled and exhausted tasks."""
    return watchdog_cycle_run(now=timezone.now())


@shared_task(name="brokerage.tasks.wmcore_dispatch_task", **RETRY)
def wmcore_dispatch_task() -> dict:
    """Periodic (beat): the WMCore global queue's turn, then one agent cycle queued per enabled local queue."""
    summary = wmcore_global_cycle_run(now=timezone.now())
    for queue_id in summary["agents"]:
        wmcore_agent_cycle_task.apply_async((queue_id,), priority=FANNED_OUT_PRIORITY)
    return summary


@shared_task(name="brokerage.tasks.wmcore_agent_cycle_task", **RETRY)
def wmcore_agent_cycle_task(queue_id: int) -> dict:
    """One WMCore agent's turn: pullWork, replication, getWork, JobSubmitter (the agent's row lock keeps two
    workers from running the same agent at once)."""
    return wmcore_agent_cycle_run(queue_id=queue_id, now=timezone.now())


@shared_task(name="brokerage.tasks.wmcore_locations_task", **RETRY)
def wmcore_locations_task() -> int:
    """Periodic (beat): input, parent and pileup locations of Available elements read again (seed 004)."""
    return element_locations_update(now=timezone.now())


@shared_task(name="brokerage.tasks.job_counts_refresh_task", **RETRY)
def job_counts_refresh_task() -> int:
    """Periodic (beat): counts the active jobs per queue and status for the site and queue lists."""
    return job_counts_refresh(now=timezone.now())


@shared_task(name="brokerage.tasks.housekeeping_task", **RETRY)
def housekeeping_task() -> int:
    """Periodic (beat): archives ended jobs and drops expired history; returns the run's id."""
    return housekeeping_run(now=timezone.now()).pk
