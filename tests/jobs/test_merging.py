"""Output merging over the database (brokerage/services/merging.py, seed 002 "Output merging"): pre-merged jobs wait
in merging until their queue's other jobs are done, merge jobs at priority 5000 pre-assigned to that queue, tried
three times, finishing the pre-merged jobs or, at the last failure, cancelling them and retrying their inputs; the
24-hour history of skips that drops the pre-assignment (seed 000); tasks that wait for their merges."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import (
    DatasetFile,
    Decision,
    Job,
    JobStatusLog,
    MergePreassignment,
    PandaQueue,
    StorageEndpoint,
    Task,
)
from brokerage.selectors.decisions import decision_trace
from brokerage.services.dispatcher import pilot_job_update
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.progress import task_completion_check
from brokerage.services.retries import job_inputs_after_end
from brokerage.services.status import job_status_transition_many
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
MB = 1024**2


def run(work_queue, now=NOW):
    return job_generation_cycle_run(work_queue_id=work_queue.pk, now=now)


def merging_task(work_queue, ready_task, *, files=4, per_merge=2):
    """A running task whose outputs are merged (nFilesPerMergeJob `per_merge`)."""
    task = ready_task(work_queue, files=files, mergeOutput=True, nFilesPerMergeJob=per_merge)
    Task.objects.filter(pk=task.pk).update(status="running")
    return task


def merging_at(task, site, count, *, output_mb=100):
    """`count` jobs of the task whose payload ended at `site` with `output_mb` of pre-merged output, merging, each
    holding one of the task's input files (running)."""
    free = list(DatasetFile.objects.filter(task=task, type="input", PandaID__isnull=True).order_by("pk")[:count])
    jobs = []
    for file in free:
        job = factories.JobFactory(
            task=task,
            jobStatus="merging",
            computingSite=site,
            outputFileBytes=output_mb * MB,
            startTime=NOW - timedelta(hours=3),
        )
        DatasetFile.objects.filter(pk=file.pk).update(status="running", PandaID=job.pk, attemptNr=0)
        jobs.append(job.pk)
    return jobs


def end(job_ids, status):
    """Jobs end as the simulator ends them: the move, then what it does to their inputs (and merges)."""
    Job.objects.filter(pk__in=job_ids).update(jobStatus="running")  # as pilots took and ran them
    job_status_transition_many(from_status="running", to_status=status, job_ids=job_ids, now=NOW)
    job_inputs_after_end(
        finished=job_ids if status == "finished" else [], failed=job_ids if status == "failed" else [], now=NOW
    )


def test_merge_jobs_wait_until_the_queue_has_no_job_of_the_task_running(grid, work_queue, ready_task):
    # nFilesPerMergeJob 2: four pre-merged jobs at SAT_Q, a fifth job of the task (a retry) still running there
    task = merging_task(work_queue, ready_task, files=4)
    premerged = merging_at(task, "SAT_Q", 4)
    still_running = factories.JobFactory(task=task, jobStatus="running", computingSite="SAT_Q")
    run(work_queue)
    assert not Job.objects.filter(task=task, isMerge=True).exists()
    # the queue's last job ends: two merge jobs of 2 × 100 MB, priority 5000, first of three attempts
    Job.objects.filter(pk=still_running.pk).update(jobStatus="failed")
    run(work_queue, NOW + timedelta(minutes=5))
    merges = list(Job.objects.filter(task=task, isMerge=True).order_by("pk"))
    assert [
        (m.computingSite, m.nInputFiles, m.inputFileBytes, m.jobStatus, m.currentPriority, m.attemptNr, m.maxAttempt)
        for m in merges
    ] == [("SAT_Q", 2, 200 * MB, "assigned", 5000, 1, 3), ("SAT_Q", 2, 200 * MB, "assigned", 5000, 1, 3)]
    assert sorted(Job.objects.filter(pk__in=premerged).values_list("mergeJob_id", flat=True)) == sorted(
        [merges[0].pk, merges[0].pk, merges[1].pk, merges[1].pk]
    )
    assert set(Job.objects.filter(pk__in=premerged).values_list("jobStatus", flat=True)) == {"merging"}
    trace = decision_trace(decision=Decision.objects.filter(task=task, jobsetID=merges[0].jobsetID).first())
    assert trace["initial"] == ["SAT_Q"]  # the pre-assigned queue only
    # the next cycle finds nothing left to merge
    run(work_queue, NOW + timedelta(minutes=10))
    assert Job.objects.filter(task=task, isMerge=True).count() == 2


def test_a_finished_merge_finishes_its_pre_merged_jobs_and_their_inputs(grid, work_queue, ready_task):
    task = merging_task(work_queue, ready_task, files=2)
    premerged = merging_at(task, "SAT_Q", 2)
    run(work_queue)
    merge = Job.objects.get(task=task, isMerge=True)
    # while merging, the inputs stay taken
    assert set(DatasetFile.objects.filter(task=task).values_list("status", flat=True)) == {"running"}
    end([merge.pk], "finished")
    assert set(Job.objects.filter(pk__in=premerged).values_list("jobStatus", flat=True)) == {"finished"}
    assert JobStatusLog.objects.filter(job_id=premerged[0], new_status="finished").get().reason == (
        f"outputs merged by merge job {merge.pk}"
    )
    assert list(DatasetFile.objects.filter(task=task).values_list("status", "attemptNr")) == [("finished", 1)] * 2


def test_a_merge_is_tried_three_times_then_its_jobs_are_cancelled_and_their_inputs_retried(
    grid, work_queue, ready_task
):
    task = merging_task(work_queue, ready_task, files=3, per_merge=3)
    premerged = merging_at(task, "SAT_Q", 3)
    attempts = []
    for attempt in (1, 2, 3):
        run(work_queue, NOW + timedelta(minutes=attempt))
        merge = Job.objects.filter(task=task, isMerge=True).order_by("-pk").first()
        attempts.append((merge.attemptNr, merge.nInputFiles))
        end([merge.pk], "failed")
        if attempt < 3:  # an earlier failure leaves the jobs merging, for the next attempt with the same jobs
            assert set(Job.objects.filter(pk__in=premerged).values_list("jobStatus", flat=True)) == {"merging"}
        if attempt == 1:  # the next attempts come at once, even with another job of the task running there now
            factories.JobFactory(task=task, jobStatus="running", computingSite="SAT_Q")
    assert attempts == [(1, 3), (2, 3), (3, 3)]
    # the third failure: the three pre-merged jobs cancelled (EC_MergeFailed 113), their inputs ready again,
    # attempt 1 used, no failure counted
    jobs = Job.objects.filter(pk__in=premerged)
    assert set(jobs.values_list("jobStatus", "jobSubStatus", "taskBufferErrorCode")) == {
        ("cancelled", "merge_failed", 113)
    }
    assert jobs.first().taskBufferErrorDiag == f"merge job {merge.pk} failed its attempt 3 of 3"
    assert (
        list(DatasetFile.objects.filter(task=task).values_list("status", "attemptNr", "failedAttempt"))
        == [("ready", 1, 0)] * 3
    )
    # no fourth merge: nothing left merging; the inputs get new jobs instead
    run(work_queue, NOW + timedelta(minutes=10))
    assert Job.objects.filter(task=task, isMerge=True).count() == 3
    assert Job.objects.filter(task=task, isMerge=False, jobStatus="assigned").exists()


def test_a_pilot_s_finished_pre_merged_job_goes_to_merging(grid, work_queue, ready_task):
    task = merging_task(work_queue, ready_task, files=1)
    PandaQueue.objects.filter(name="SAT_Q").update(pilot_driven=True)
    job = factories.JobFactory(task=task, jobStatus="running", computingSite="SAT_Q")
    plain = factories.JobFactory(jobStatus="running", computingSite="SAT_Q")
    assert pilot_job_update(job_id=job.pk, state="finished", report={}, now=NOW) == "NULL"
    assert pilot_job_update(job_id=plain.pk, state="finished", report={}, now=NOW) == "NULL"
    assert (Job.objects.get(pk=job.pk).jobStatus, Job.objects.get(pk=plain.pk).jobStatus) == ("merging", "finished")
    # the pilot's final update sent again is answered, the job still merging
    assert pilot_job_update(job_id=job.pk, state="finished", report={}, now=NOW) == "NULL"
    assert Job.objects.get(pk=job.pk).jobStatus == "merging"


def test_a_skipped_pre_assignment_is_recorded_and_dropped_after_24_hours(grid, work_queue, ready_task):
    # a second queue at the nucleus; SAT_Q, which holds the pre-merged files, is now too small for the jobs
    # (maxrss 1,000 MB < 8 × 2,000 × 0.9; a pre-assigned queue's status is not checked, its memory is)
    nucleus = factories.SiteFactory._meta.model.objects.get(name="NUC")
    nuc_queue = factories.PandaQueueFactory(name="NUC_Q", site=nucleus, corecount=8, maxrss=64000, releases=["ANY"])
    disk = StorageEndpoint.objects.get(name="NUC_DATADISK")
    for role in ("read_lan", "write_lan"):
        factories.QueueStorageFactory(queue=nuc_queue, endpoint=disk, role=role)
    PandaQueue.objects.filter(name="SAT_Q").update(maxrss=1000)
    task = merging_task(work_queue, ready_task, files=2, per_merge=2)
    merging_at(task, "SAT_Q", 2)
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
    task = merging_task(work_queue, ready_task, files=2)
    merging_at(task, "SAT_Q", 2)
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=task.pk).status == "running"  # two jobs merging, no merge job yet
    run(work_queue)
    merge = Job.objects.get(task=task, isMerge=True)
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=task.pk).status == "running"  # the merge job is active
    end([merge.pk], "finished")
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=task.pk).status == "done"
