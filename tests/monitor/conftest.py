"""A living demo grid for the page tests: the small generated grid after a few cycles of refining, task
brokerage, job generation, grid simulation and the watchdog. Built once per module (it takes a few seconds)
and removed afterwards."""

from datetime import datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.demo_grid import demo_grid_build
from brokerage.services.jobs import job_generation_cycle_run, work_queues_generating
from brokerage.services.progress import task_completion_check, task_refine
from brokerage.services.shares import global_share_snapshot_take
from brokerage.services.simulator import grid_simulate_step
from brokerage.services.watchdog import watchdog_cycle_run
from brokerage.services.wmcore import wmcore_cycle_run


def grid_live(*, steps: int = 8) -> datetime:
    """Builds the small grid and lets it live `steps` cycles of 20 s (one grid minute per second), ending
    now: the pages show the last hour or day of the real clock."""
    start = timezone.now() - timedelta(seconds=20 * steps + 60)
    demo_grid_build(size="small", now=start, seed=7)
    work_queues = work_queues_generating()
    now = start
    for _ in range(steps):
        now += timedelta(seconds=20)
        task_refine(now=now)
        task_brokerage_cycle_run(now=now)
        task_completion_check(now=now)
        for work_queue_id in work_queues:
            job_generation_cycle_run(work_queue_id=work_queue_id, now=now)
        wmcore_cycle_run(now=now)
        grid_simulate_step(now=now, speed=60)
    watchdog_cycle_run(now=now)
    global_share_snapshot_take(now=now)
    return now


@pytest.fixture(scope="module")
def living_grid(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        now = grid_live()
    yield now
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
