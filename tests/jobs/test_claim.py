"""Which tasks a job-generation cycle takes (brokerage/services/jobs.py _claim): NTASKS of each resource type, as
panda-server 1.0.4's JobGenerator gets nTasks tasks for each resource type of a work queue in turn (NTASKS_<work
queue> in gdpconfig, 50 by default), within the deployment's JOB_GENERATION_BATCH."""

from datetime import UTC, datetime
from itertools import product

import pytest

from brokerage.models import Decision, GdpConfig, Task
from brokerage.services.jobs import _claim, job_generation_cycle_run, task_resource_type_sql
from brokerage.throttle import task_resource_type
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def test_the_resource_type_in_sql_is_the_throttler_s(work_queue):
    # cores 0, 1, 8 × memory none, 2,000 (not above), 2,001 and 16,001 MB × per core or per job
    tasks = {}
    for cores, ram, unit in product((0, 1, 8), (None, 2000, 2001, 16001), ("MBPerCore", "MB")):
        task = factories.TaskFactory(workQueue=work_queue, coreCount=cores, ramCount=ram, ramUnit=unit)
        tasks[task.pk] = task_resource_type(core_count=cores, ram_count=ram, ram_unit=unit)
    in_sql = dict(Task.objects.annotate(rt=task_resource_type_sql()).values_list("pk", "rt"))
    assert in_sql == tasks
    # worked: 8 cores and 16,001 MB a job are 2,000.1 a core, high memory; 2,001 MB a job on 8 cores is not
    assert sorted(set(tasks.values())) == ["MCORE", "MCORE_HIMEM", "SCORE", "SCORE_HIMEM"]


def test_a_cycle_takes_ntasks_of_each_resource_type_highest_priority_first(grid, work_queue, ready_task):
    # three single-core tasks (priorities 900, 800, 700) and three 8-core ones (600, 500, 400); NTASKS_MC_16 = 2
    single = [ready_task(work_queue, files=2, priority=p) for p in (900, 800, 700)]
    multi = [ready_task(work_queue, files=2, priority=p) for p in (600, 500, 400)]
    Task.objects.filter(pk__in=[t.pk for t in single]).update(coreCount=1, ramCount=1000)
    Task.objects.filter(pk__in=[t.pk for t in multi]).update(coreCount=8, ramCount=1000)
    GdpConfig.objects.create(key="NTASKS_MC_16", value="2", component="jobgen", app="jedi")

    def claim(limit):
        Task.objects.update(lockedBy="", lockedTime=None)
        return set(_claim(work_queue_ids=[work_queue.pk], now=NOW, owner="w1", per_resource_type=2, limit=limit))

    # the deployment's bound caps the whole: SCORE comes before MCORE in the registry's order
    assert claim(3) == {single[0].pk, single[1].pk, multi[0].pk}
    Task.objects.update(lockedBy="", lockedTime=None)
    # a cycle decides for two of each type, not the four highest priorities of any type (900, 800, 700 and 600)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    decided = set(Decision.objects.filter(task__isnull=False).values_list("task_id", flat=True))
    assert decided == {single[0].pk, single[1].pk, multi[0].pk, multi[1].pk}
