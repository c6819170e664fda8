"""The job tests' grid, work queue and ready-task fixtures serve the watchdog tests too."""

from tests.jobs.conftest import grid, ready_task, work_queue  # noqa: F401
