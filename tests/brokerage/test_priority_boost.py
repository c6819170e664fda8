"""Automatic priority boost (seed 002): 95 % complete and fewer than 100 jobs to do → priority 900, Express."""

from datetime import UTC, datetime

import pytest

from brokerage.models import Task, TaskStatusLog
from brokerage.services.priority import task_priority_boost, task_progress
from brokerage.tasks import task_priority_boost_task
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def task(files, finished, failed=0, *, status="running", priority=500, gshare="MC 16", files_per_job=None):
    row = factories.TaskFactory(
        status=status,
        currentPriority=priority,
        gshare=gshare,
        taskParams={"nFilesPerJob": files_per_job} if files_per_job else {},
    )
    factories.DatasetFactory(task=row, type="input", nFiles=files, nFilesFinished=finished, nFilesFailed=failed)
    factories.DatasetFactory(task=row, type="output", nFiles=files)  # outputs do not count
    return row


def test_progress_and_jobs_left():
    # 2000 files, 1900 finished, 20 failed: 95 % done, 80 files left at 1 file per job
    a = task(2000, 1900, 20)
    # 4 files per job: 380 files left → 95 jobs
    b = task(10_000, 9_500, 120, files_per_job=4)
    assert task_progress(task_ids=[a.pk, b.pk]) == {a.pk: (0.95, 80), b.pk: (0.95, 95)}


def test_boost_exactly_at_the_limits():
    boosted = task(2000, 1900)  # 95 % done, but 100 jobs left is not fewer than 100
    almost = task(2000, 1901)  # 95.05 %, 99 left
    early = task(2000, 1899)  # 94.95 %
    many_left = task(100_000, 96_000)  # 96 % but 4,000 jobs left
    result = task_priority_boost(now=NOW)
    assert result == [almost.pk]
    assert Task.objects.get(pk=almost.pk).currentPriority == 900
    assert Task.objects.get(pk=almost.pk).gshare == "Express"
    for untouched in (boosted, early, many_left):
        assert Task.objects.get(pk=untouched.pk).currentPriority == 500


def test_boost_is_logged_never_lowers_and_happens_once():
    high = task(1000, 990, priority=950)
    task_priority_boost(now=NOW)
    row = Task.objects.get(pk=high.pk)
    assert (row.currentPriority, row.gshare, row.status) == (950, "Express", "running")
    log = TaskStatusLog.objects.get(task=high)
    assert (log.old_status, log.new_status, log.actor) == ("running", "running", "priority boost")
    assert log.reason == "99% done, 10 jobs left: priority 950 → 950, gshare MC 16 → Express"
    assert task_priority_boost(now=NOW) == []


def test_only_tasks_that_are_running_jobs():
    done = task(1000, 999, status="done")
    paused = task(1000, 999, status="paused")
    assert task_priority_boost(now=NOW) == []
    assert {Task.objects.get(pk=t.pk).currentPriority for t in (done, paused)} == {500}


def test_periodic_task():
    task(1000, 999)
    assert task_priority_boost_task() == 1
