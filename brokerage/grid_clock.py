"""The grid's clock for waits that the system itself imposes (a pending task's retry, a throttled task's period).

In production it is the wall clock. In the demo (GRID_SIMULATOR on) the simulated grid runs GRID_SIMULATOR_SPEED
grid minutes per real minute (brokerage.services.simulator), and these waits run at the same pace: a task pending
"30 minutes" after a failed task brokerage comes back after 30 real seconds at speed 60, as everything around it
does. The decision trace keeps the real figures (retry_after_minutes is PanDA's); only the waiting is shortened,
and the pages show the time the task will actually come back.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from brokerage.states import throttled_period_minutes


def grid_speed() -> float:
    """Grid minutes per real minute: GRID_SIMULATOR_SPEED in the demo, 1 otherwise."""
    if not getattr(settings, "GRID_SIMULATOR", False):
        return 1.0
    return max(float(getattr(settings, "GRID_SIMULATOR_SPEED", 1.0)), 1.0)


def grid_minutes(minutes: float) -> timedelta:
    """`minutes` of grid time as a real duration."""
    return timedelta(minutes=minutes) / grid_speed()


def throttled_until(*, since: datetime, level: int) -> datetime:
    """When a task throttled at `since` for the `level`-th multiple of 5 attempts is released: 120 × level² grid
    minutes later (seed 002, task status 'throttled'). The watchdog acts on it; the task page shows it."""
    return since + grid_minutes(throttled_period_minutes(5 * max(level, 1)))
