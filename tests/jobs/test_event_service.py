"""Event service jobs ending on the database (services/event_service.py, the ES merge in services/merging.py; seed
002, "Final status of Event Service jobs"), with worked numbers: a job set of two ES jobs of two ranges each, one
range failing and retried; the ES merge job; a range at its attempt limit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from brokerage.models import Event, Job
from brokerage.services.event_service import es_jobs_end, es_jobs_split
from brokerage.services.merging import merge_jobs_after_end, merge_sets
from brokerage.states import ES_JOB, ES_MERGE_JOB
from tests import factories

pytestmark = pytest.mark.django_db
NOW = datetime(2027, 2, 1, 12, tzinfo=UTC)


@pytest.fixture
def job_set():
    """Task of event service, maxAttemptEsJob 3; ES jobs A and B of job set 7 at Q, running two ranges each."""
    task = factories.TaskFactory(status="running", eventService=1, taskParams={"maxAttemptEsJob": 3})
    dataset = factories.DatasetFactory(task=task, type="input", status="ready", nFiles=2, nEvents=2000)
    files = [factories.DatasetFileFactory(dataset=dataset, status="running", nEvents=1000) for _ in range(2)]
    jobs = {}
    for name, first in (("A", 0), ("B", 500)):
        job = factories.JobFactory(
            task=task, jobStatus="running", eventService=ES_JOB, jobsetID=7, computingSite="Q", maxAttempt=3,
            attemptNr=1,
        )  # fmt: skip
        for file in files:
            factories.EventFactory(
                file=file, PandaID=job.pk, status="running", def_min_eventID=first, def_max_eventID=first + 499
            )
        jobs[name] = job
    return task, jobs


def statuses(job):
    return sorted(Event.objects.filter(PandaID=job.pk).values_list("status", "attemptNr"))


def test_a_failed_range_is_retried_the_others_wait_and_the_last_is_merged(job_set, monkeypatch):
    task, jobs = job_set
    a, b = jobs["A"], jobs["B"]
    assert es_jobs_split(job_ids=[a.pk, 99]) == ([a.pk], [99])
    # A's first range fails (attempt 1 of 3: ready again), its second is done: merging, es_retry, a consumer for it
    first = Event.objects.filter(PandaID=a.pk).order_by("pk").first()
    monkeypatch.setattr("brokerage.services.event_service.range_fails", lambda pk, attempt, percent: pk == first.pk)
    outcomes = es_jobs_end(succeeded=[a.pk], failed=[], now=NOW)
    assert (outcomes[a.pk].status, outcomes[a.pk].substatus) == ("merging", "es_retry")
    a.refresh_from_db()
    assert (a.jobStatus, a.jobSubStatus, a.taskBufferErrorCode) == ("merging", "es_retry", 111)
    consumer = Job.objects.exclude(pk__in=[a.pk, b.pk]).get(task=task)
    assert (consumer.jobStatus, consumer.attemptNr, consumer.jobsetID, consumer.computingSite) == (
        "assigned",
        2,
        7,
        "Q",
    )
    assert statuses(consumer) == [("ready", 1)]  # the failed range, handed over, attempt 1 counted
    assert statuses(a) == [("done", 0)]
    # B ends well while the consumer is active: merging, es_wait
    monkeypatch.setattr("brokerage.services.event_service.range_fails", lambda pk, attempt, percent: False)
    es_jobs_end(succeeded=[b.pk], failed=[], now=NOW)
    b.refresh_from_db()
    assert (b.jobStatus, b.jobSubStatus, b.taskBufferErrorCode) == ("merging", "es_wait", 115)
    # no ES merge while the consumer is active
    rows = {task.pk: {"taskParams": task.taskParams, "eventService": 1}}
    assert merge_sets(tasks=rows, now=NOW) == []
    # the consumer runs and processes its range: the last of the set, es_merge
    Job.objects.filter(pk=consumer.pk).update(jobStatus="running")
    Event.objects.filter(PandaID=consumer.pk).update(status="running")
    es_jobs_end(succeeded=[consumer.pk], failed=[], now=NOW)
    consumer.refresh_from_db()
    assert (consumer.jobStatus, consumer.jobSubStatus, consumer.taskBufferErrorCode) == ("merging", "es_merge", 112)
    assert set(Event.objects.filter(task=task).values_list("status", flat=True)) == {"done"}
    # one ES merge job for the job set's three ES jobs, at the queue of its last one
    (merge,) = merge_sets(tasks=rows, now=NOW)
    assert (merge.job_ids, merge.site, merge.event_service) == ((a.pk, b.pk, consumer.pk), "Q", True)
    es_merge = factories.JobFactory(task=task, isMerge=True, eventService=ES_MERGE_JOB, jobStatus="finished")
    Job.objects.filter(pk__in=merge.job_ids).update(mergeJob=es_merge)
    finished, _ = merge_jobs_after_end(finished=[es_merge.pk], failed=[], now=NOW)
    assert sorted(finished) == sorted(merge.job_ids)
    assert set(Event.objects.filter(task=task).values_list("status", flat=True)) == {"merged"}


def test_a_failed_es_merge_fails_its_es_jobs(job_set):
    task, jobs = job_set
    Job.objects.filter(pk__in=[j.pk for j in jobs.values()]).update(jobStatus="merging", jobSubStatus="es_merge")
    es_merge = factories.JobFactory(task=task, isMerge=True, eventService=ES_MERGE_JOB, jobStatus="failed", attemptNr=3)
    Job.objects.filter(pk__in=[j.pk for j in jobs.values()]).update(mergeJob=es_merge)
    merge_jobs_after_end(finished=[], failed=[es_merge.pk], now=NOW)
    a = Job.objects.get(pk=jobs["A"].pk)
    assert (a.jobStatus, a.jobSubStatus, a.taskBufferErrorCode) == ("failed", "es_merge_failed", 113)


def test_a_range_at_its_attempt_limit_is_fatal_and_fails_the_set(job_set, monkeypatch):
    _, jobs = job_set
    a, b = jobs["A"], jobs["B"]
    # A's ranges fail at their 3rd attempt (maxAttemptEsJob 3): fatal; A failed (114), B closed es_aborted, its
    # running ranges cancelled
    Event.objects.filter(PandaID=a.pk).update(attemptNr=2)
    monkeypatch.setattr("brokerage.services.event_service.range_fails", lambda pk, attempt, percent: True)
    es_jobs_end(succeeded=[], failed=[a.pk], now=NOW)
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.jobStatus, a.taskBufferErrorCode) == ("failed", 114)
    assert statuses(a) == [("fatal", 3), ("fatal", 3)]
    assert (b.jobStatus, b.jobSubStatus) == ("closed", "es_aborted")
    assert statuses(b) == [("cancelled", 0), ("cancelled", 0)]


def test_killed_es_jobs_discard_their_processed_ranges_and_cancel_the_others(job_set):
    # A waits in merging with its two ranges done; B runs its two: both killed (job_kill, as pbook's kill)
    from brokerage.services.task_commands import job_kill

    task, jobs = job_set
    a, b = jobs["A"], jobs["B"]
    Job.objects.filter(pk=a.pk).update(jobStatus="merging", jobSubStatus="es_wait")
    Event.objects.filter(PandaID=a.pk).update(status="done")
    assert job_kill(job_ids=[a.pk, b.pk], actor="shifter", now=NOW) == [True, True]
    assert statuses(a) == [("discarded", 0), ("discarded", 0)]
    assert statuses(b) == [("cancelled", 0), ("cancelled", 0)]
    # a file with a range discarded and one cancelled, none open: ready again, one attempt more, both cut again
    assert set(task.files.values_list("status", "attemptNr", "maxAttempt")) == {("ready", 1, 4)}
    from brokerage.adapters.job_brokerage import job_set_inputs

    assert job_set_inputs([task.pk])[3] == {}


def test_the_watchdog_fails_a_silent_es_job_es_heartbeat_and_its_ranges_go_to_a_new_consumer(job_set):
    from datetime import timedelta

    from brokerage.services.watchdog import job_timeout_apply

    task, jobs = job_set
    a, b = jobs["A"], jobs["B"]
    factories.PandaQueueFactory(name="Q")
    # A last beat 3 hours ago (HEARTBEAT_TIMEOUT 2 hours), its two ranges still running: none processed
    hours = [timedelta(hours=n) for n in range(5)]
    Job.objects.filter(pk=a.pk).update(modificationTime=NOW - hours[3], stateChangeTime=NOW - hours[4])
    Job.objects.filter(pk=b.pk).update(modificationTime=NOW, stateChangeTime=NOW - hours[1])
    result = job_timeout_apply(now=NOW)
    assert result.failed == [a.pk]
    a.refresh_from_db()
    assert (a.jobStatus, a.jobSubStatus, a.taskBufferErrorCode) == ("failed", "es_heartbeat", 117)
    assert a.taskBufferErrorDiag == "its heartbeat was lost; processed no event range: 2 retried"
    # its ranges failed once (attempt 1 of 3) and went to a new consumer of job set 7
    consumer = Job.objects.exclude(pk__in=[a.pk, b.pk]).get(task=task)
    assert (consumer.jobsetID, consumer.attemptNr) == (7, 2)
    assert statuses(consumer) == [("ready", 1), ("ready", 1)]
    assert Job.objects.get(pk=b.pk).jobStatus == "running"


def test_a_pilot_reporting_pilot_failed_fails_its_es_job_so(job_set):
    from brokerage.services.dispatcher import pilot_job_update

    _task, jobs = job_set
    a = jobs["A"]
    # the pilot reported one range finished, then failed the job with jobSubStatus pilot_failed
    first = Event.objects.filter(PandaID=a.pk).order_by("pk").first()
    Event.objects.filter(pk=first.pk).update(status="finished")
    assert pilot_job_update(job_id=a.pk, state="failed", report={"jobSubStatus": "pilot_failed"}, now=NOW) == "NULL"
    a.refresh_from_db()
    assert (a.jobStatus, a.jobSubStatus, a.taskBufferErrorCode) == ("failed", "pilot_failed", 111)
    assert statuses(a) == [("done", 0)]  # its processed range is kept; the other went to a consumer


@pytest.mark.parametrize(("merge_status", "file_status"), [("finished", "finished"), ("failed", "failed")])
def test_an_es_file_is_processed_once_its_ranges_are_merged(job_set, merge_status, file_status):
    from brokerage.services.retries import job_inputs_after_end

    task, jobs = job_set
    ids = [job.pk for job in jobs.values()]
    # both ES jobs processed both their ranges: done, the jobs in merging, the files still running (not merged yet)
    es_jobs_end(succeeded=ids, failed=[], now=NOW)
    assert set(task.files.values_list("status", flat=True)) == {"running"}
    # the ES merge job ends: merged and finished; or its last attempt failed, nothing merged: the files failed
    es_merge = factories.JobFactory(task=task, isMerge=True, eventService=ES_MERGE_JOB, jobStatus=merge_status,
                                    attemptNr=3)  # fmt: skip
    Job.objects.filter(pk__in=ids).update(mergeJob=es_merge)
    job_inputs_after_end(
        finished=[es_merge.pk] if merge_status == "finished" else [],
        failed=[es_merge.pk] if merge_status == "failed" else [],
        now=NOW,
    )
    assert set(task.files.values_list("status", flat=True)) == {file_status}


def test_an_es_merge_failing_on_a_corrupted_es_output_sends_its_ranges_to_a_consumer(job_set):
    from brokerage.services.dispatcher import pilot_job_update

    task, jobs = job_set
    a, b = jobs["A"], jobs["B"]
    # A and B processed their ranges and wait in merging; their ES merge job runs on a pilot
    es_jobs_end(succeeded=[a.pk, b.pk], failed=[], now=NOW)
    out_a = factories.DatasetFileFactory(task=task, type="output", status="merging", outPandaID=a.pk, lfn="HITS.a.1")
    factories.DatasetFileFactory(task=task, type="output", status="merging", outPandaID=b.pk, lfn="HITS.b.1")
    es_merge = factories.JobFactory(task=task, isMerge=True, eventService=ES_MERGE_JOB, jobStatus="running",
                                    attemptNr=1, maxAttempt=3, computingSite="Q")  # fmt: skip
    Job.objects.filter(pk__in=[a.pk, b.pk]).update(mergeJob=es_merge)
    # its pilot fails it: adler32 mismatch (1171) on A's output
    report = {"pilotErrorCode": "1171", "corruptedFiles": "HITS.a.1"}
    assert pilot_job_update(job_id=es_merge.pk, state="failed", report=report, now=NOW) == "NULL"
    # A's two done ranges are corrupted, its output failed; a consumer (A's next attempt, job set 7) takes a copy of
    # each range, attempt 1; B's stay done for the merge's next attempt
    assert statuses(a) == [("corrupted", 0), ("corrupted", 0)]
    out_a.refresh_from_db()
    assert out_a.status == "failed"
    consumer = Job.objects.exclude(pk__in=[a.pk, b.pk, es_merge.pk]).get(task=task)
    assert (consumer.jobsetID, consumer.attemptNr, consumer.jobStatus) == (7, 2, "assigned")
    assert statuses(consumer) == [("ready", 1), ("ready", 1)]
    assert statuses(b) == [("done", 0), ("done", 0)]
    # another error code names no corruption: nothing is marked
    from brokerage.services.event_service import es_merge_corrupted_mark

    assert es_merge_corrupted_mark(merge_job_id=es_merge.pk, lfns=["HITS.b.1"], pilot_error_code=1099, now=NOW) == []
