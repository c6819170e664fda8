"""Counters that follow their files, and the integrity check that compares counters with rows and states with
their logs (issue 17: 82 files used of 77 after retries)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from brokerage.models import Dataset, DatasetFile, IntegrityCheck, Job, JobStatusLog
from brokerage.selectors.integrity import integrity_findings
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.retries import job_inputs_after_end
from brokerage.services.task_commands import dataset_files_mark
from brokerage.services.watchdog import watchdog_cycle_run
from tests import factories
from tests.jobs.conftest import make_one_queue_grid, make_ready_task

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture
def used_task():
    """A ready task of 4 files (one job per file, no scouts, no events) whose jobs were generated."""
    make_one_queue_grid()
    work_queue = factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)
    task = make_ready_task(work_queue, files=4, nScoutJobs=0, nFilesPerJob=1, events_per_file=None)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    return task, Dataset.objects.get(task=task, type="input"), work_queue


def counters(dataset):
    dataset.refresh_from_db()
    return dataset.nFiles, dataset.nFilesUsed, dataset.nFilesFinished, dataset.nFilesFailed


class TestCountersFollowTheFiles:
    def test_a_retried_file_is_counted_once(self, used_task):
        task, dataset, work_queue = used_task
        assert counters(dataset) == (4, 4, 0, 0)
        jobs = list(Job.objects.filter(task=task).order_by("pk").values_list("pk", flat=True))
        # one job finished, one failed: its file goes back to ready (attempt 1 of 3) and is not used any more
        job_inputs_after_end(finished=[jobs[0]], failed=[jobs[1]], now=NOW)
        assert counters(dataset) == (4, 3, 1, 0)
        # used again by the next job: 4 used of 4, not 5 (the drift counted it twice)
        job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW + timedelta(minutes=1))
        assert counters(dataset) == (4, 4, 1, 0)
        assert integrity_findings() == []

    def test_a_file_failed_for_good_stays_used_and_counts_failed(self, used_task):
        task, dataset, _ = used_task
        DatasetFile.objects.filter(dataset=dataset).update(maxAttempt=1)
        job = Job.objects.filter(task=task).order_by("pk").first()
        job_inputs_after_end(finished=[], failed=[job.pk], now=NOW)
        assert counters(dataset) == (4, 4, 0, 1)

    def test_marking_files_lost_updates_the_counters(self, used_task):
        _, dataset, _ = used_task
        ready = DatasetFile.objects.filter(dataset=dataset).first()
        DatasetFile.objects.filter(pk=ready.pk).update(status="ready")
        dataset_files_mark(file_ids=[ready.pk], status="lost", actor="shifter", now=NOW)
        assert counters(dataset) == (4, 3, 0, 1)


class TestIntegrityCheck:
    def test_a_drifted_counter_is_found_with_its_numbers(self, used_task):
        _, dataset, _ = used_task
        Dataset.objects.filter(pk=dataset.pk).update(nFilesUsed=5)
        findings = integrity_findings()
        assert [(f.kind, f.entity, f.id) for f in findings] == [("counter", "dataset", dataset.pk)] * 2
        assert findings[0].detail == "nFilesUsed is 5, its files give 4"
        assert findings[1].detail == "nFilesUsed 5 > nFiles 4"

    def test_a_state_that_is_not_its_last_logged_state(self, used_task):
        task, _, _ = used_task
        job = Job.objects.filter(task=task).first()
        Job.objects.filter(pk=job.pk).update(jobStatus="running")  # behind the state machine's back
        (finding,) = integrity_findings()
        assert (finding.kind, finding.entity, finding.id) == ("state log", "job", job.pk)
        assert (
            finding.detail == f"state running, its log ends in {JobStatusLog.objects.filter(job=job).last().new_status}"
        )

    def test_a_file_held_by_a_job_that_ended(self, used_task):
        task, _, _ = used_task
        job = Job.objects.filter(task=task).first()
        file = DatasetFile.objects.get(PandaID=job.pk)
        Job.objects.filter(pk=job.pk).update(jobStatus="finished")
        JobStatusLog.objects.create(job=job, timestamp=NOW, old_status="assigned", new_status="finished")
        (finding,) = integrity_findings()
        assert (finding.kind, finding.entity, finding.id) == ("holder", "file", file.pk)
        assert finding.detail == f"picked for job {job.pk}, which is finished"

    def test_the_command_exits_1_and_lists_them_and_0_when_clean(self, used_task, capsys):
        call_command("check_integrity")
        assert "nothing found" in capsys.readouterr().out
        _, dataset, _ = used_task
        Dataset.objects.filter(pk=dataset.pk).update(nFilesFinished=2)
        with pytest.raises(CommandError) as raised:
            call_command("check_integrity")
        assert raised.value.returncode == 1
        assert f"counter: dataset {dataset.pk}: nFilesFinished is 2, its files give 0" in capsys.readouterr().out
        assert IntegrityCheck.objects.order_by("-pk").first().n_findings == 1

    def test_the_watchdog_runs_it_every_ten_minutes_and_the_overview_shows_findings(self, used_task, client):
        _, dataset, _ = used_task
        Dataset.objects.filter(pk=dataset.pk).update(nFilesUsed=1)
        now = NOW + timedelta(minutes=1)  # before any job times out
        assert watchdog_cycle_run(now=now)["integrity_findings"] == 1
        assert "integrity_findings" not in watchdog_cycle_run(now=now + timedelta(minutes=5))
        page = client.get("/").content.decode()
        assert "The integrity check found 1 disagreement" in page
        assert f"dataset {dataset.pk}: nFilesUsed is 1, its files give 4" in page
        Dataset.objects.filter(pk=dataset.pk).update(nFilesUsed=4)
        assert watchdog_cycle_run(now=now + timedelta(minutes=11))["integrity_findings"] == 0
        assert "integrity check found" not in client.get("/").content.decode()


def test_the_log_is_read_in_the_order_of_the_moves_not_of_the_writers_clocks():
    """Issue 31: two workers whose clocks differ by a few milliseconds wrote prepared at .952 and then finished at
    .948; the last move is the last row written, whatever its timestamp says."""
    from brokerage.models import TaskStatusLog

    task = factories.TaskFactory(status="finished")
    at = datetime(2026, 11, 24, 12, 0, 0, 952000, tzinfo=UTC)
    TaskStatusLog.objects.create(task=task, timestamp=at, old_status="running", new_status="prepared")
    TaskStatusLog.objects.create(
        task=task, timestamp=at.replace(microsecond=948000), old_status="prepared", new_status="finished"
    )
    assert [f for f in integrity_findings() if f.kind == "state log"] == []
