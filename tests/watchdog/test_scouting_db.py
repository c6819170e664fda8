"""The end of scouting over the database (seed 002): task parameters from five scouts, exhausted, broken."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import Job, Task, TaskStatusLog
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.scouting import task_scouting_check
from brokerage.services.status import job_status_transition_many
from tests.jobs.conftest import report_like_pilots

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def scouts_of(task, work_queue):
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW - timedelta(hours=3))
    ids = list(Job.objects.filter(task=task, isScout=True).order_by("pk").values_list("pk", flat=True))
    job_status_transition_many(from_status="assigned", to_status="activated", job_ids=ids, now=NOW)
    return ids


def end(ids, status, *, hours=2.0, pss_mb=12000, events=1000):
    for source, target in (("activated", "starting"), ("starting", "running"), ("running", status)):
        job_status_transition_many(from_status=source, to_status=target, job_ids=ids, now=NOW)
    report_like_pilots(ids, end=NOW, hours=hours, pss_mb=pss_mb, events=events)


def test_parameters_with_worked_numbers_and_scouted(grid, work_queue, ready_task):
    task = ready_task(work_queue)
    Task.objects.filter(pk=task.pk).update(baseRamCount=1000)
    ids = scouts_of(task, work_queue)
    end(ids[:5], "finished", hours=1.0)
    assert task_scouting_check(work_queue_id=None, now=NOW) == {"scouted": [task.pk]}
    task.refresh_from_db()
    # cpuTime = (3600 − 600) × 10 × 8 × 0.9 / 1000 × 1.5 = 324 HS06 s per event (≤ 2 × 300)
    assert (task.cpuTime, task.cpuTimeUnit) == (324, "HS06sPerEvent")
    # ioIntensity = (2048 + 512) MB × 1024 / 3600 s / 8 cores = 91.02 → 92 kB/s per core
    assert task.ioIntensity == 92
    # outDiskCount = 512 × 1024 kB / 2048 MB = 256; walltime = 3600 s / 2048 MB = 1.76 → 2 s per MB
    assert (task.outDiskCount, task.walltime) == (256, 2)
    assert (task.ramCount, task.ramUnit) == (1375, "MBPerCore")


def test_scouts_needing_more_than_twice_the_cpu_exhaust_a_production_task(grid, work_queue, ready_task):
    task = ready_task(work_queue)
    ids = scouts_of(task, work_queue)
    end(ids[:5], "finished", hours=2.0)  # cpuTime 713 > 2 × 300
    assert task_scouting_check(work_queue_id=None, now=NOW) == {"exhausted": [task.pk]}
    task.refresh_from_db()
    assert task.status == "exhausted"
    assert task.errorDialog == "scouts' cpuTime 713 > 2 × the defined 300"


def test_no_scout_succeeded_breaks_the_task(grid, work_queue, ready_task):
    task = ready_task(work_queue)
    ids = scouts_of(task, work_queue)
    end(ids, "failed")
    assert task_scouting_check(work_queue_id=None, now=NOW) == {"broken": [task.pk]}
    task.refresh_from_db()
    assert task.status == "broken"
    assert list(TaskStatusLog.objects.filter(task=task).order_by("pk").values_list("new_status", flat=True))[-2:] == [
        "tobroken",
        "broken",
    ]


def test_fewer_than_five_finished_but_none_active_is_scouted_without_parameters(grid, work_queue, ready_task):
    task = ready_task(work_queue)
    ids = scouts_of(task, work_queue)
    end(ids[:3], "finished", hours=1.0)
    end(ids[3:], "failed")
    assert task_scouting_check(work_queue_id=None, now=NOW) == {"scouted": [task.pk]}
    task.refresh_from_db()
    assert task.cpuTime == 300  # unchanged


def test_analysis_with_many_short_scouts_and_many_jobs_is_exhausted(grid, work_queue, ready_task):
    # 1030 files left at one file per job: more than 1000 jobs; 6 scouts under 4 minutes
    task = ready_task(work_queue, files=1040, nScoutJobs=10)
    Task.objects.filter(pk=task.pk).update(prodSourceLabel="user")
    ids = scouts_of(task, work_queue)
    end(ids[:6], "finished", hours=3 / 60)
    end(ids[6:], "finished", hours=1.0)
    outcome = task_scouting_check(work_queue_id=None, now=NOW)
    assert outcome == {"exhausted": [task.pk]}
    task.refresh_from_db()
    assert "6 scout jobs ran less than 4 minutes and 1030 jobs are expected" in task.errorDialog
