"""The housekeeping (issue 32): ended jobs move to the archive and are found as before; history past its retention
is dropped, children before parents; traces expire apart from their decisions and never before a delta that needs
them; every run is recorded, and one that fails half-way is safe to run again."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from brokerage.models import (
    BrokerageCycle,
    CycleFrame,
    CycleInputs,
    Decision,
    DecisionTrace,
    HousekeepingRun,
    Job,
    JobStatusLog,
    ScenarioPart,
    TaskStatusLog,
)
from brokerage.selectors.integrity import integrity_findings
from brokerage.services.housekeeping import housekeeping_abandoned_close, housekeeping_run, jobs_archive
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2027, 3, 10, 12, 0, tzinfo=UTC)


def ended_job(*, days_ago: float, status: str = "finished", **fields) -> Job:
    end = NOW - timedelta(days=days_ago)
    return factories.JobFactory(
        jobStatus=status,
        startTime=end - timedelta(hours=2),
        endTime=end,
        modificationTime=end,
        stateChangeTime=end,
        **fields,
    )


class TestArchive:
    def test_jobs_that_ended_three_days_ago_move_under_the_day_they_ended(self):
        old = ended_job(days_ago=3.5)  # ended 2027-03-07 00:00
        failed = ended_job(days_ago=10, status="failed")
        young = ended_job(days_ago=2.9)
        running = factories.JobFactory(jobStatus="running", modificationTime=NOW - timedelta(days=9))
        run = housekeeping_run(now=NOW)
        days = dict(Job.objects.values_list("pk", "archiveDay"))
        assert days == {old.pk: date(2027, 3, 7), failed.pk: date(2027, 2, 28), young.pk: None, running.pk: None}
        assert run.status == "succeeded"
        assert run.tables["panda_jobs"]["moved"] == 2 == run.rows_moved
        assert integrity_findings() == []

    def test_batches_move_everything_once_and_a_second_run_moves_nothing(self):
        for n in range(7):
            ended_job(days_ago=4 + n)
        assert jobs_archive(now=NOW, batch=3) == 7  # three transactions: 3, 3, 1
        assert jobs_archive(now=NOW, batch=3) == 0
        assert not Job.objects.filter(archiveDay__isnull=True).exists()

    def test_a_dry_run_counts_and_changes_nothing(self):
        ended_job(days_ago=5)
        ended_job(days_ago=6, status="cancelled")
        run = housekeeping_run(now=NOW, dry_run=True)
        assert run.dry_run
        assert run.tables["panda_jobs"]["moved"] == 2
        assert not Job.objects.filter(archiveDay__isnull=False).exists()

    def test_an_archived_job_is_found_by_every_page_and_the_api(self, client):
        job = ended_job(days_ago=5, status="failed", computingSite="ARCHIVE_Q", pilotErrorCode=1099)
        housekeeping_run(now=NOW)
        assert Job.objects.get(pk=job.pk).archiveDay is not None
        # (the queue page shows the last day and the jobs not yet archived: an archived job is not its business)
        for url in (f"/jobs/{job.pk}/", f"/tasks/{job.task_id}/", "/jobs/?status=failed"):
            response = client.get(url)
            assert response.status_code == 200, url
            assert str(job.pk).encode() in response.content, url
        assert client.get(f"/api/v1/jobs/{job.pk}/").json()["PandaID"] == job.pk
        assert job.pk in [
            row["PandaID"] for row in client.get("/api/v1/jobs/", {"jediTaskID": job.task_id}).json()["results"]
        ]


class TestRetention:
    def test_old_archived_jobs_go_with_their_logs_and_the_merge_links_to_them(self, settings):
        settings.JOB_DAYS = 30
        settings.JOB_STATUS_LOG_DAYS = 400  # so that the logs go with their jobs, not before
        merge = ended_job(days_ago=40)
        kept = ended_job(days_ago=20)
        child = ended_job(days_ago=10, mergeJob=merge)
        factories.JobStatusLogFactory(job=merge, timestamp=NOW - timedelta(days=40))
        factories.JobStatusLogFactory(job=kept, timestamp=NOW - timedelta(days=20))
        run = housekeeping_run(now=NOW)  # archives all three, then drops the one past 30 days
        assert set(Job.objects.values_list("pk", flat=True)) == {kept.pk, child.pk}
        assert Job.objects.get(pk=child.pk).mergeJob_id is None
        assert list(JobStatusLog.objects.values_list("job_id", flat=True)) == [kept.pk]
        assert run.tables["panda_jobs"]["moved"] == 3
        assert run.tables["panda_jobs"]["dropped"] == 1
        assert run.tables["panda_job_status_log"]["dropped"] == 1
        assert run.rows_dropped == 2

    def test_status_logs_go_after_their_own_periods(self, settings):
        settings.JOB_STATUS_LOG_DAYS, settings.STATUS_LOG_DAYS = 90, 400
        job = factories.JobFactory(jobStatus="running")
        for days in (91, 89):
            factories.JobStatusLogFactory(job=job, timestamp=NOW - timedelta(days=days))
        task = factories.TaskFactory()
        # (430 days: well before the month that holds the cutoff, which PostgreSQL drops whole once it has passed)
        for days in (430, 399):
            TaskStatusLog.objects.create(task=task, timestamp=NOW - timedelta(days=days), new_status="ready")
        housekeeping_run(now=NOW)
        assert [log.timestamp for log in JobStatusLog.objects.filter(job=job)] == [NOW - timedelta(days=89)]
        assert [log.timestamp for log in TaskStatusLog.objects.filter(task=task)] == [NOW - timedelta(days=399)]

    def test_a_tasks_events_go_30_days_after_it_ended_and_its_files_after_365_unless_it_runs_again(self):
        from brokerage.models import DatasetFile, Event

        def task_with_contents(*, ended_days_ago, status):
            task = factories.TaskFactory(status=status, endTime=NOW - timedelta(days=ended_days_ago))
            dataset = factories.DatasetFactory(task=task, type="input", status="done")
            output = factories.DatasetFactory(task=task, type="output", status="done")
            file = factories.DatasetFileFactory(task=task, dataset=dataset, type="input", status="finished")
            factories.DatasetFileFactory(task=task, dataset=output, type="output", status="finished", outPandaID=7)
            for first in (0, 100):
                factories.EventFactory(task=task, dataset=dataset, file=file, status="merged",
                                       def_min_eventID=first, def_max_eventID=first + 99)  # fmt: skip
            return task

        recent = task_with_contents(ended_days_ago=29, status="done")
        month = task_with_contents(ended_days_ago=31, status="done")
        year = task_with_contents(ended_days_ago=366, status="failed")
        again = task_with_contents(ended_days_ago=400, status="running")  # retried: its endTime is the old one
        run = housekeeping_run(now=NOW)
        assert set(Event.objects.values_list("task_id", flat=True)) == {recent.pk, again.pk}
        assert set(DatasetFile.objects.values_list("task_id", flat=True)) == {recent.pk, month.pk, again.pk}
        assert run.tables["jedi_events"]["dropped"] == 4
        assert run.tables["jedi_dataset_contents"]["dropped"] == 2
        assert run.tables["jedi_dataset_contents"]["cutoff"] == (NOW - timedelta(days=365)).isoformat()
        assert not year.files.exists()
        # the counters of a dataset whose files went are not held to rows that are no longer there (the others'
        # factory-made counters do disagree with their files: the check is looking)
        findings = {f.id for f in integrity_findings(now=NOW) if f.kind == "counter"}
        assert findings
        assert not findings & set(year.datasets.values_list("pk", flat=True))

    def test_the_watchdog_counts_go_after_30_days(self):
        from brokerage.models import JobTimeoutSummary

        for days in (31, 29):
            JobTimeoutSummary.objects.create(taken_at=NOW - timedelta(days=days), computingSite="CERN", rule="running")
        run = housekeeping_run(now=NOW)
        assert list(JobTimeoutSummary.objects.values_list("taken_at", flat=True)) == [NOW - timedelta(days=29)]
        assert run.tables["job_timeout_summary"]["dropped"] == 1
        assert run.tables["job_timeout_summary"]["cutoff"] == (NOW - timedelta(days=30)).isoformat()

    def test_dirac_jobs_that_ended_go_after_seven_days_with_their_logs(self):
        from brokerage.models import DiracJob, DiracJobStatusLog

        old = NOW - timedelta(days=8)
        done = factories.DiracJobFactory(status="Done", lastUpdateTime=old)
        factories.DiracJobStatusLogFactory(job=done, timestamp=old, new_status="Done")
        waiting = factories.DiracJobFactory(status="Waiting", lastUpdateTime=old)  # may still be matched
        recent = factories.DiracJobFactory(status="Failed", lastUpdateTime=NOW - timedelta(days=6))
        run = housekeeping_run(now=NOW)
        assert set(DiracJob.objects.values_list("pk", flat=True)) == {waiting.pk, recent.pk}
        assert not DiracJobStatusLog.objects.filter(job_id=done.pk).exists()
        assert run.tables["dirac_jobs"]["dropped"] == 1
        assert run.tables["dirac_job_status_log"]["dropped"] == 1

    def test_wmbs_jobs_that_ended_go_once_their_subscription_has_finished(self):
        from brokerage.models import WMBSJob

        old = NOW - timedelta(days=8)
        finished = factories.WMBSSubscriptionFactory(finished=old)
        open_one = factories.WMBSSubscriptionFactory()
        gone = factories.WMBSJobFactory(subscription=finished, state="success", state_time=old)
        counted = factories.WMBSJobFactory(subscription=open_one, state="success", state_time=old)
        cooling = factories.WMBSJobFactory(subscription=finished, state="jobcooloff", state_time=old)
        housekeeping_run(now=NOW)
        assert set(WMBSJob.objects.values_list("pk", flat=True)) == {counted.pk, cooling.pk}
        assert gone.pk not in set(WMBSJob.objects.values_list("pk", flat=True))


def decision_at(when: datetime) -> Decision:
    decision = factories.stored_decision()
    Decision.objects.filter(pk=decision.pk).update(created=when)
    DecisionTrace.objects.filter(decision_id=decision.pk).update(created=when)
    BrokerageCycle.objects.filter(pk=decision.cycle_id).update(started=when, finished=when)
    CycleFrame.objects.filter(cycle_id=decision.cycle_id).update(started=when)
    return Decision.objects.get(pk=decision.pk)


class TestTieredDecisions:
    def test_a_trace_expires_after_30_days_and_its_row_after_400(self):
        expired = decision_at(NOW - timedelta(days=31))
        kept = decision_at(NOW - timedelta(days=29))
        gone = decision_at(NOW - timedelta(days=430))  # before the month that holds the cutoff (PostgreSQL)
        run = housekeeping_run(now=NOW)
        assert set(Decision.objects.values_list("pk", flat=True)) == {expired.pk, kept.pk}
        assert set(DecisionTrace.objects.values_list("decision_id", flat=True)) == {kept.pk}
        assert not BrokerageCycle.objects.filter(pk=gone.cycle_id).exists()
        assert run.tables["brokerage_decision_traces"]["dropped"] == 2
        assert run.tables["brokerage_decisions"]["dropped"] == 1

    def test_an_expired_trace_leaves_the_summary_on_the_page_and_in_the_api(self, client):
        decision = decision_at(NOW - timedelta(days=31))
        counts = decision.reason_counts
        assert counts == {"status": 1}  # nucleus B is DISABLED in the stored decision's scenario
        housekeeping_run(now=NOW)
        page = client.get(f"/decisions/{decision.pk}/").content.decode()
        expired_on = (decision.created + timedelta(days=30)).date().isoformat()
        assert f"The full trace of this decision expired on {expired_on}" in page
        assert "Candidates removed" in page
        body = client.get(f"/api/v1/decisions/{decision.pk}/").json()
        assert body["reason_counts"] == {"status": 1}
        assert body["trace"]["expired"] is True
        assert body["trace"]["by_reason"][0]["code"] == "status"
        assert body["trace"]["by_reason"][0]["count"] == 1
        assert body["trace_expires"].startswith(expired_on)

    def test_a_base_is_kept_while_a_kept_delta_needs_it(self):
        base = decision_at(NOW - timedelta(days=31))
        delta = decision_at(NOW - timedelta(days=29))
        DecisionTrace.objects.filter(decision_id=delta.pk).update(base_id=base.pk)
        CycleFrame.objects.create(cycle_id=base.cycle_id, started=base.created, frame=b"frame")
        housekeeping_run(now=NOW)
        assert set(DecisionTrace.objects.values_list("decision_id", flat=True)) == {base.pk, delta.pk}
        assert CycleFrame.objects.filter(cycle_id=base.cycle_id).exists()  # its frame too
        housekeeping_run(now=NOW + timedelta(days=2))  # the delta expired: both go
        assert not DecisionTrace.objects.exists()

    def test_inputs_expire_with_the_traces_and_a_kept_cycles_day_of_parts_stays_whole(self):
        from brokerage.inputs_codec import day_of
        from brokerage.services.inputs import cycle_inputs_store

        def with_inputs(when: datetime, stats: int) -> Decision:
            decision = decision_at(when)
            cycle = BrokerageCycle.objects.get(pk=decision.cycle_id)
            cycle_inputs_store(cycle=cycle, raw={"plugin": "atlas_prod_task", "queue_stats": {"Q": {"running": stats}}})
            return decision

        old = with_inputs(NOW - timedelta(days=31), stats=1)
        # kept: 29 days and 23 hours back, a day whose first hour is past the cutoff (its parts are kept whole)
        kept = with_inputs(NOW - timedelta(days=29, hours=23), stats=2)
        assert ScenarioPart.objects.count() == 2
        run = housekeeping_run(now=NOW)
        assert set(CycleInputs.objects.values_list("cycle_id", flat=True)) == {kept.cycle_id}
        assert set(ScenarioPart.objects.values_list("day", flat=True)) == {day_of(kept.created)}
        assert run.tables["brokerage_cycle_inputs"]["dropped"] == 1
        assert run.tables["brokerage_scenario_parts"]["dropped"] == 1
        assert old.pk in set(Decision.objects.values_list("pk", flat=True))  # the row stays (DECISION_DAYS)


class TestRecord:
    def test_a_step_that_fails_is_recorded_and_the_others_still_run(self, settings):
        settings.DECISION_DAYS = "four hundred"  # a setting gone wrong: int() fails in that step only
        old = ended_job(days_ago=5)
        run = housekeeping_run(now=NOW)
        assert run.status == "failed"
        assert [error["step"] for error in run.errors] == ["drop brokerage_decisions",
                                                          "drop brokerage_decision_hours", "drop brokerage_cycles",
                                                          "drop dirac_match_records",
                                                          "drop wmcore_jobsubmitter_reports"]  # fmt: skip
        assert "ValueError" in run.errors[0]["error"]
        assert Job.objects.get(pk=old.pk).archiveDay is not None

    def test_a_run_that_fails_mid_batch_loses_and_doubles_nothing(self):
        """A batch that fails is rolled back whole; the batches before it stay done; the next run finishes."""
        jobs = [ended_job(days_ago=4 + n) for n in range(6)]
        poisoned = jobs[4].pk
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute(
                    "CREATE TRIGGER refuse_archive BEFORE UPDATE OF archiveDay ON panda_jobs "
                    f"WHEN NEW.PandaID = {poisoned} BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
                )
            else:
                cursor.execute(
                    "CREATE FUNCTION refuse_archive() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"IF NEW.\"PandaID\" = {poisoned} THEN RAISE EXCEPTION 'injected failure'; END IF; "
                    "RETURN NEW; END $$"
                )
                cursor.execute(
                    "CREATE TRIGGER refuse_archive BEFORE UPDATE ON panda_jobs FOR EACH ROW "
                    "EXECUTE FUNCTION refuse_archive()"
                )
        run = housekeeping_run(now=NOW, batch=2)
        assert run.status == "failed"
        assert "injected failure" in run.errors[0]["error"]
        archived = set(Job.objects.filter(archiveDay__isnull=False).values_list("pk", flat=True))
        assert archived == {jobs[0].pk, jobs[1].pk, jobs[2].pk, jobs[3].pk}  # two batches done, the third undone
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER refuse_archive" + ("" if connection.vendor == "sqlite" else " ON panda_jobs"))
        again = housekeeping_run(now=NOW, batch=2)
        assert again.status == "succeeded"
        assert again.rows_moved == 2
        assert Job.objects.filter(archiveDay__isnull=False).count() == 6 == Job.objects.count()
        assert integrity_findings() == []

    def test_a_run_left_running_by_a_dead_worker_is_closed_as_failed(self):
        stale = HousekeepingRun.objects.create(started=NOW - timedelta(days=2), now=NOW, worker="gone:1")
        live = HousekeepingRun.objects.create(started=NOW, now=NOW, worker="busy:2")
        assert housekeeping_abandoned_close(now=NOW) == 1
        assert HousekeepingRun.objects.get(pk=stale.pk).status == "failed"
        assert HousekeepingRun.objects.get(pk=live.pk).status == "running"

    def test_the_command_prints_the_tables_and_refuses_a_bad_time(self, capsys):
        ended_job(days_ago=5)
        call_command("housekeeping", now="2027-03-10T12:00Z")
        assert "panda_jobs" in capsys.readouterr().out
        with pytest.raises(CommandError, match="--now: 'yesterday' is not an ISO 8601 time") as refused:
            call_command("housekeeping", now="yesterday")
        assert refused.value.returncode == 2

    def test_the_beat_runs_it(self, settings):
        assert settings.CELERY_BEAT_SCHEDULE["housekeeping"]["task"] == "brokerage.tasks.housekeeping_task"


def test_the_overview_shows_the_last_run_and_counts_active_jobs(client):
    archived = ended_job(days_ago=5, status="failed")
    factories.JobFactory(jobStatus="running")
    housekeeping_run(now=NOW)
    page = client.get("/").content.decode()
    assert "Housekeeping" in page
    assert "1 job moved to the archive" in page
    assert "decisions are kept 400 days, their full traces 30" in page
    assert Job.objects.get(pk=archived.pk).archiveDay is not None
    from brokerage.selectors.overview import database_overview

    assert [(row.status, row.count) for row in database_overview(now=NOW)["jobs_by_status"]] == [("running", 1)]


def test_the_integrity_check_finds_a_job_filed_under_another_day():
    job = ended_job(days_ago=5)
    housekeeping_run(now=NOW)
    assert integrity_findings(now=NOW) == []
    Job.objects.filter(pk=job.pk).update(archiveDay=date(2027, 3, 1))  # it ended on 2027-03-05
    (finding,) = integrity_findings(now=NOW)
    assert (finding.kind, finding.id) == ("archive", job.pk)
    assert finding.detail == "archived under 2027-03-01, but it ended on 2027-03-05"
