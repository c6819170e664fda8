"""A task's life through the database: refining, completion, the grid simulator, and the demo grid command."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from brokerage.models import (
    Dataset,
    DatasetFile,
    DiracJob,
    Event,
    Job,
    JobStatusLog,
    PandaQueue,
    QueuePilotStats,
    Task,
    TaskStatusLog,
)
from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.demo_stories import STORIES
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.progress import task_completion_check, task_refine
from brokerage.services.simulator import grid_simulate_step, job_run_minutes
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture(autouse=True)
def no_lost_pilots(monkeypatch):
    """Every pilot here lives to its job's end. The simulator loses the pilot of one job in LOST_PILOT_ONE_IN,
    chosen by PandaID; on PostgreSQL the IDs depend on what earlier tests in the same database made (sequences do
    not roll back), so a test counting ends failed whenever one of its jobs drew a lost pilot (tests/jobs/
    test_demo_life.py tests the lost pilots themselves)."""
    monkeypatch.setattr("brokerage.services.simulator.pilot_lost", lambda pk: False)


def test_refine_defines_then_sends_production_to_task_brokerage_and_analysis_to_ready(work_queue):
    production = factories.TaskFactory(status="registered", prodSourceLabel="managed")
    analysis = factories.TaskFactory(status="registered", prodSourceLabel="user")
    preset = factories.TaskFactory(status="registered", prodSourceLabel="managed", nucleus="NUC")
    dataset = factories.DatasetFactory(task=production, type="input", status="defined")
    task_refine(now=NOW)
    statuses = dict(Task.objects.values_list("pk", "status"))
    assert statuses == {production.pk: "assigning", analysis.pk: "ready", preset.pk: "ready"}
    dataset.refresh_from_db()
    assert dataset.status == "ready"
    assert list(TaskStatusLog.objects.filter(task=production).values_list("new_status", flat=True)) == [
        "defined",
        "assigning",
    ]


def test_refining_gives_a_base_ram_count_by_processing_type(work_queue):
    # seed 002: simul 1000, pile 1500, reco 1000 MB; other types none; a task's own value kept
    tasks = {
        kind: factories.TaskFactory(status="registered", processingType=kind, baseRamCount=None)
        for kind in ("simul", "pile", "reco", "evgen")
    }
    own = factories.TaskFactory(status="registered", processingType="pile", baseRamCount=700)
    task_refine(now=NOW)
    assert {kind: Task.objects.get(pk=task.pk).baseRamCount for kind, task in tasks.items()} == {
        "simul": 1000,
        "pile": 1500,
        "reco": 1000,
        "evgen": None,
    }
    assert Task.objects.get(pk=own.pk).baseRamCount == 700


def test_a_task_whose_input_ddm_does_not_know_is_broken(work_queue):
    # seed 002 "Broken tasks": "Input datasets are unknown"; the dataset is "permanently unavailable" (broken)
    task = factories.TaskFactory(status="registered", prodSourceLabel="managed")
    unknown = factories.DatasetFactory(
        task=task, type="input", status="defined", datasetName="mc23.unknown.EVNT", state="unknown"
    )
    unchecked = factories.TaskFactory(status="registered", prodSourceLabel="managed")
    factories.DatasetFactory(task=unchecked, type="input", status="defined", state="")  # never asked: not judged
    moved = task_refine(now=NOW)
    assert moved["broken"] == [task.pk]
    task.refresh_from_db()
    unknown.refresh_from_db()
    assert (task.status, task.errorDialog) == ("broken", "input dataset mc23.unknown.EVNT unknown to DDM")
    assert unknown.status == "broken"
    assert list(TaskStatusLog.objects.filter(task=task).values_list("new_status", flat=True)) == [
        "defined",
        "tobroken",
        "broken",
    ]
    assert Task.objects.get(pk=unchecked.pk).status == "assigning"


def test_completion_counts_progress_and_closes_by_outcome(grid, work_queue, ready_task):
    # three running tasks of 4 files: all finished, 3 finished + 1 failed, all failed; a fourth still busy
    outcomes = {"done": ["finished"] * 4, "finished": ["finished"] * 3 + ["failed"], "failed": ["failed"] * 4}
    tasks = {}
    for expected, statuses in [*outcomes.items(), ("running", ["finished", "ready", "ready", "ready"])]:
        task = ready_task(work_queue, files=4, status="running")
        for file, status in zip(DatasetFile.objects.filter(task=task).order_by("pk"), statuses, strict=True):
            DatasetFile.objects.filter(pk=file.pk).update(status=status)
        tasks[expected] = task
    closed = task_completion_check(now=NOW)
    assert closed == {"done": [tasks["done"].pk], "finished": [tasks["finished"].pk], "failed": [tasks["failed"].pk]}
    for expected, task in tasks.items():
        task.refresh_from_db()
        assert task.status == expected
    assert tasks["running"].progress == 25
    assert tasks["finished"].progress == 75
    busy = Dataset.objects.get(task=tasks["running"])
    assert (busy.nFilesFinished, busy.nFilesFailed, busy.status) == (1, 0, "ready")
    assert Dataset.objects.get(task=tasks["done"]).status == "done"


def test_simulator_transfers_starts_up_to_slots_and_ends_jobs(grid, work_queue, ready_task):
    # given 10 scouts assigned at SAT_Q, which has 4 simulated slots
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 4, "demo_failure_percent": 0})
    task = ready_task(work_queue)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    # when 5 grid minutes pass (speed 60: 5 s) the input is transferred
    report = grid_simulate_step(now=NOW + timedelta(seconds=5), speed=60)
    assert report.activated == 10
    assert report.started == 4
    assert Job.objects.filter(task=task, jobStatus="running").count() == 4
    assert DatasetFile.objects.filter(task=task, status="running").count() == 4
    # where each runs, as its pilot reported at getJob: one of two CEs and a node drawn from its PandaID
    for job in Job.objects.filter(task=task, jobStatus="running"):
        assert (job.computingElement, job.modificationHost, job.batchID, job.startTime) == (
            f"ce0{job.pk % 2 + 1}.sat-q.example",
            f"wn{job.pk % 37:03d}.sat-q.example",
            str(7_000_000 + job.pk),
            NOW + timedelta(seconds=5),
        )
    # after the longest run time every payload has ended, none failed (a 0 % failure rate): the jobs hold while
    # their outputs are added, with what their pilots reported
    later = NOW + timedelta(seconds=5 + 151)
    report = grid_simulate_step(now=later, speed=60)
    assert (report.finished, report.failed) == (0, 0)
    assert Job.objects.filter(task=task, jobStatus="holding", maxPSS__gt=0, cpuConsumptionTime__gt=0).count() == 4
    # a grid minute later their outputs go to the nucleus NUC (the queue is at SAT), and the freed slots are given
    # to the remaining activated jobs, dispatched (sent) then started
    report = grid_simulate_step(now=later + timedelta(seconds=1), speed=60)
    assert report.started == 4
    assert Job.objects.filter(task=task, jobStatus="transferring").count() == 4
    assert DatasetFile.objects.filter(task=task, status="finished").count() == 0
    # five grid minutes of transfer later they are finished, and so are their files
    report = grid_simulate_step(now=later + timedelta(seconds=6), speed=60)
    assert report.finished == 4
    assert DatasetFile.objects.filter(task=task, status="finished").count() == 4
    first = Job.objects.filter(task=task, jobStatus="finished").order_by("pk").first()
    assert list(JobStatusLog.objects.filter(job=first).order_by("pk").values_list("new_status", flat=True)) == [
        "pending", "defined", "assigned", "activated", "sent", "starting", "running", "holding", "transferring",
        "finished",
    ]  # fmt: skip
    stats = QueuePilotStats.objects.get(queue=grid)
    assert stats.pilotsLast3h == 8 + 1  # 8 jobs started in 3 grid hours + 4 // 10 + 1 idle pilots
    assert stats.nBatchJob == 4


def test_run_times_are_30_to_150_grid_minutes():
    minutes = {job_run_minutes(pk) for pk in range(1, 5000)}
    assert min(minutes) == 30
    assert max(minutes) == 150


def test_failed_job_files_are_retried_until_max_attempt(grid, work_queue, ready_task):
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 100, "demo_failure_percent": 100})
    task = ready_task(work_queue, files=1, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    grid_simulate_step(now=NOW + timedelta(seconds=5), speed=60)
    grid_simulate_step(now=NOW + timedelta(seconds=200), speed=60)
    file = DatasetFile.objects.get(task=task)
    assert (file.status, file.attemptNr, file.failedAttempt) == ("ready", 1, 1)
    # third failure: attempts used up (maxAttempt 3)
    DatasetFile.objects.filter(pk=file.pk).update(attemptNr=2, status="picked")
    job = Job.objects.get(task=task)
    Job.objects.filter(pk=job.pk).update(jobStatus="running", startTime=NOW)
    DatasetFile.objects.filter(pk=file.pk).update(PandaID=job.pk)
    grid_simulate_step(now=NOW + timedelta(seconds=400), speed=60)
    file.refresh_from_db()
    assert (file.status, file.attemptNr) == ("failed", 3)


def test_a_task_flows_from_registered_to_done(grid, work_queue, ready_task):
    # given a registered production task of 3 files and a queue that never fails
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 50, "demo_failure_percent": 0})
    task = ready_task(work_queue, files=3, status="registered", nScoutJobs=0)
    Task.objects.filter(pk=task.pk).update(nucleus="", gshare="MC 16", ioIntensity=100)
    now = NOW
    # (five grid hours: task brokerage, five minutes of input transfer, up to 150 of running, holding, output transfer)
    for _ in range(15):
        now += timedelta(seconds=20)
        task_refine(now=now)
        task_brokerage_cycle_run(now=now)
        task_completion_check(now=now)
        job_generation_cycle_run(work_queue_id=work_queue.pk, now=now)
        grid_simulate_step(now=now, speed=60)
    task.refresh_from_db()
    path = list(TaskStatusLog.objects.filter(task=task).order_by("pk").values_list("new_status", flat=True))
    assert path == ["defined", "assigning", "ready", "running", "prepared", "done"]
    assert task.progress == 100


def test_demo_grid_command_builds_a_medium_grid_once(capsys):
    call_command("demo_grid", "--size", "medium", "--no-progress")
    assert 130 <= PandaQueue.objects.count() <= 180
    # CRIC's shapes (issue 49): catchall keys no broker reads, params, nulls, each reaching the brokers' records
    from brokerage.adapters.grid import queue_records

    records = queue_records()
    assert any(r.get("catchall") for r in records.values())
    assert any(r.get("params") for r in records.values())
    assert all("transferringlimit" in record for record in records.values())  # null, as CRIC writes it
    assert Task.objects.filter(status="registered").count() == 300 + len(STORIES)
    assert DiracJob.objects.filter(status="Waiting").count() == 300
    assert "Demo grid (medium) built" in capsys.readouterr().out
    with pytest.raises(CommandError) as refused:
        call_command("demo_grid", "--size", "small")
    assert refused.value.returncode == 2
    call_command("demo_grid", "--if-empty")  # says so and changes nothing
    assert Task.objects.count() == 300 + len(STORIES)


def test_an_event_level_file_is_partial_between_its_ranges(grid, work_queue, ready_task):
    from brokerage.services.retries import job_inputs_after_end
    from brokerage.services.status import job_status_transition_many

    # one file of 1,000 events, 400 per job: ranges 0-399, 400-799, 800-999, three jobs
    task = ready_task(work_queue, files=1, events_per_file=1000, nScoutJobs=0, nEventsPerJob=400)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    file = DatasetFile.objects.get(task=task)
    assert file.status == "picked"  # its three ranges given out, none running yet
    first, second, third = Job.objects.filter(task=task).order_by("pk")
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 1, "demo_failure_percent": 0})
    grid_simulate_step(now=NOW + timedelta(seconds=5), speed=60)  # one slot: the first range runs
    file.refresh_from_db()
    assert file.status == "running"
    # the first job ends while the other two wait activated: some of its event chunks finished, none runs — partial
    ended = NOW + timedelta(seconds=6)
    job_status_transition_many(from_status="running", to_status="finished", job_ids=[first.pk], now=ended)
    job_inputs_after_end(finished=[first.pk], failed=[], now=ended)
    file.refresh_from_db()
    assert file.status == "partial"
    # the next range starts: running again; both others finish: finished
    grid_simulate_step(now=NOW + timedelta(seconds=7), speed=60)
    file.refresh_from_db()
    assert (file.status, Job.objects.get(pk=second.pk).jobStatus) == ("running", "running")
    for job in (second, third):
        Job.objects.filter(pk=job.pk).update(jobStatus="running")
        Event.objects.filter(PandaID=job.pk).update(status="running")
        later = NOW + timedelta(seconds=8)
        Job.objects.filter(pk=job.pk, startTime__isnull=True).update(startTime=NOW)
        job_status_transition_many(from_status="running", to_status="finished", job_ids=[job.pk], now=later)
        job_inputs_after_end(finished=[job.pk], failed=[], now=later)
    file.refresh_from_db()
    assert file.status == "finished"
