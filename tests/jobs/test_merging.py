"""Merge job sets over the database (brokerage/services/merging.py): the task parameter mergeOutput, merge jobs
pre-assigned to the queue holding the pre-merged files, the 24-hour history of skips that drops the
pre-assignment (seed 000), and tasks that wait for their merges."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import DatasetFile, Decision, Job, MergePreassignment, PandaQueue, StorageEndpoint, Task
from brokerage.selectors.decisions import decision_trace
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.progress import task_completion_check
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
MB = 1024**2


def run(work_queue, now=NOW):
    return job_generation_cycle_run(work_queue_id=work_queue.pk, now=now)


def merging_task(work_queue, ready_task, *, files=4, per_merge=2, used=True):
    """A running task whose outputs are merged, every input file processed unless `used` is False."""
    task = ready_task(work_queue, files=files, mergeOutput=True, nFilesPerMergeJob=per_merge)
    Task.objects.filter(pk=task.pk).update(status="running")
    if used:
        DatasetFile.objects.filter(task=task).update(status="finished")
    return task


def finished_at(task, site, count, *, output_mb=100):
    return [
        factories.JobFactory(
            task=task,
            jobStatus="finished",
            computingSite=site,
            outputFileBytes=output_mb * MB,
            startTime=NOW - timedelta(hours=3),
            endTime=NOW - timedelta(hours=1),
        ).pk
        for _ in range(count)
    ]


def test_finished_jobs_get_a_merge_job_at_their_queue(grid, work_queue, ready_task):
    # nFilesPerMergeJob 2: four pre-merged files at SAT_Q make two merge jobs of 2 × 100 MB each
    task = merging_task(work_queue, ready_task)
    premerged = finished_at(task, "SAT_Q", 4)
    run(work_queue)
    merges = list(Job.objects.filter(task=task, isMerge=True).order_by("pk"))
    assert [(m.computingSite, m.nInputFiles, m.inputFileBytes, m.jobStatus) for m in merges] == [
        ("SAT_Q", 2, 200 * MB, "assigned"),
        ("SAT_Q", 2, 200 * MB, "assigned"),
    ]
    assert sorted(Job.objects.filter(pk__in=premerged).values_list("mergeJob_id", flat=True)) == sorted(
        [merges[0].pk, merges[0].pk, merges[1].pk, merges[1].pk]
    )
    decision = Decision.objects.filter(task=task).first()
    trace = decision_trace(decision=decision)
    assert trace["initial"] == ["SAT_Q"]  # the pre-assigned queue only
    # the next cycle finds nothing left to merge
    run(work_queue, NOW + timedelta(minutes=5))
    assert Job.objects.filter(task=task, isMerge=True).count() == 2


def test_a_partial_merge_waits_while_the_task_has_input_left(grid, work_queue, ready_task):
    task = merging_task(work_queue, ready_task, per_merge=3, used=False)
    finished_at(task, "SAT_Q", 2)
    run(work_queue)
    assert not Job.objects.filter(task=task, isMerge=True).exists()
    # once every input is processed (and no production job is active), the last two are merged together
    DatasetFile.objects.filter(task=task).update(status="finished")
    Job.objects.filter(task=task, isMerge=False).exclude(jobStatus="finished").delete()
    run(work_queue, NOW + timedelta(minutes=5))
    assert list(Job.objects.filter(task=task, isMerge=True).values_list("nInputFiles", flat=True)) == [2]


def test_a_skipped_pre_assignment_is_recorded_and_dropped_after_24_hours(grid, work_queue, ready_task):
    # a second queue at the nucleus; SAT_Q, which holds the pre-merged files, is now too small for the jobs
    # (maxrss 1,000 MB < 8 × 2,000 × 0.9; a pre-assigned queue's status is not checked, its memory is)
    nucleus = factories.SiteFactory._meta.model.objects.get(name="NUC")
    nuc_queue = factories.PandaQueueFactory(name="NUC_Q", site=nucleus, corecount=8, maxrss=64000, releases=["ANY"])
    disk = StorageEndpoint.objects.get(name="NUC_DATADISK")
    for role in ("read_lan", "write_lan"):
        factories.QueueStorageFactory(queue=nuc_queue, endpoint=disk, role=role)
    PandaQueue.objects.filter(name="SAT_Q").update(maxrss=1000)
    task = merging_task(work_queue, ready_task, per_merge=2)
    finished_at(task, "SAT_Q", 2)
    run(work_queue)
    assert not Job.objects.filter(task=task, isMerge=True).exists()
    skip = MergePreassignment.objects.get(task=task)
    assert (skip.computingSite, skip.skipped_since) == ("SAT_Q", NOW)
    # 23 h later the pre-assignment still holds (and the first skip stays the one that counts)
    run(work_queue, NOW + timedelta(hours=23))
    assert not Job.objects.filter(task=task, isMerge=True).exists()
    assert MergePreassignment.objects.get(task=task).skipped_since == NOW
    # after 24 h of skips it is ignored: the merge job goes to the other queue, and the history goes
    run(work_queue, NOW + timedelta(hours=24, minutes=1))
    assert list(Job.objects.filter(task=task, isMerge=True).values_list("computingSite", flat=True)) == ["NUC_Q"]
    assert not MergePreassignment.objects.filter(task=task).exists()


def test_a_task_waits_for_its_merges_before_it_is_done(grid, work_queue, ready_task):
    task = merging_task(work_queue, ready_task)
    finished_at(task, "SAT_Q", 2)
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=task.pk).status == "running"  # two pre-merged files not merged yet
    run(work_queue)
    merge = Job.objects.get(task=task, isMerge=True)
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=task.pk).status == "running"  # the merge job is active
    Job.objects.filter(pk=merge.pk).update(jobStatus="finished")
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=task.pk).status != "running"
