"""make run's periodic work on a fake clock (scripts/run.sh's beat: the simulator every 5 s, refining and the
completion check every 10 s, task brokerage every 15 s, job generation for every work queue and WMCore's pulls
every 20 s, the watchdog every 30 s), for tests and benchmarks that need a demo's history without waiting for it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.jobs import job_generation_cycle_run, work_queues_generating
from brokerage.services.progress import task_completion_check, task_refine
from brokerage.services.simulator import grid_simulate_step
from brokerage.services.watchdog import watchdog_cycle_run
from brokerage.services.wmcore import wmcore_cycle_run


def demo_cadence_run(
    *,
    start: datetime,
    seconds: int,
    speed: float = 60,
    inflow: bool = True,
    after_beat: Callable[[datetime], None] | None = None,
) -> datetime:
    """Runs the demo's beat from `start` for `seconds` of its clock (`after_beat(now)` after each beat, for a test
    that watches the states go by); returns the time of the last beat."""
    work_queues = work_queues_generating()
    now = start
    for tick in range(0, seconds + 1, 5):
        now = start + timedelta(seconds=tick)
        grid_simulate_step(now=now, speed=speed, inflow=inflow)
        if tick % 10 == 0:
            task_refine(now=now)
            task_completion_check(now=now)
        if tick % 15 == 0:
            task_brokerage_cycle_run(now=now)
        if tick % 20 == 0:
            for work_queue in work_queues:
                job_generation_cycle_run(work_queue_id=work_queue, now=now)
            wmcore_cycle_run(now=now)
        if tick % 30 == 0:
            watchdog_cycle_run(now=now)
        if after_beat is not None:
            after_beat(now)
    return now
