"""How a task ends, through the database (brokerage/services/progress.py, retries.py, contents.py with the rules of
brokerage.engine.panda.task_outcome): the goal and termination condition refined from the task's parameters, the
goal deciding exhausted, finished or failed, the termination condition finishing a task, the failure rate kept,
and a file's maxFailure. Worked numbers on the one-queue grid (tests/jobs/conftest.py)."""

from datetime import UTC, datetime, timedelta
from itertools import product

import pytest

from brokerage.engine.panda.task_outcome import file_attempts_used_up
from brokerage.models import Dataset, DatasetFile, DatasetReplica, Job, StorageEndpoint, Task, TaskStatusLog
from brokerage.services.progress import task_completion_check, task_refine
from brokerage.services.retries import job_inputs_after_end
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def files_end(task, finished, failed=0, *, attempts=1, failed_attempts=0):
    """The task's first `finished` files finished, the next `failed` failed, each with these attempts."""
    pks = list(DatasetFile.objects.filter(task=task).order_by("pk").values_list("pk", flat=True))
    DatasetFile.objects.filter(pk__in=pks[:finished]).update(status="finished", attemptNr=attempts)
    DatasetFile.objects.filter(pk__in=pks[finished : finished + failed]).update(
        status="failed", attemptNr=attempts, failedAttempt=failed_attempts
    )


def test_refining_keeps_the_goal_in_permille_and_the_termination_condition(work_queue):
    asked = factories.TaskFactory(status="registered", taskParams={"goal": 95.5, "termCondition": "90%"})
    too_much = factories.TaskFactory(status="registered", taskParams={"goal": 150})
    own = factories.TaskFactory(status="registered", goal=500, taskParams={"goal": 90})
    task_refine(now=NOW)
    got = {t.pk: (t.goal, t.termCondition) for t in Task.objects.filter(pk__in=[asked.pk, too_much.pk, own.pk])}
    assert got == {asked.pk: (955, "90%"), too_much.pk: (None, ""), own.pk: (500, "")}


def test_the_goal_decides_exhausted_finished_or_failed(grid, work_queue, ready_task):
    # each 10 files, 7 finished and 3 failed: 70.0 % complete
    under = ready_task(work_queue, files=10, status="running", useExhausted=True)
    reached = ready_task(work_queue, files=10, status="running", useExhausted=True)
    failing = ready_task(work_queue, files=10, status="running", failWhenGoalUnreached=True)
    Task.objects.filter(pk__in=[under.pk, failing.pk]).update(goal=800)
    Task.objects.filter(pk=reached.pk).update(goal=700)
    for task in (under, reached, failing):
        files_end(task, 7, 3)
    assert task_completion_check(now=NOW) == {
        "exhausted": [under.pk],
        "finished": [reached.pk],
        "failed": [failing.pk],
    }
    assert TaskStatusLog.objects.filter(task=under).last().reason == (
        "7 of 10 input files finished, 3 failed: 70.0% complete against a goal of 80.0%, waiting for a human"
    )
    assert TaskStatusLog.objects.filter(task=failing).last().reason == (
        "7 of 10 input files finished, 3 failed: 70.0% complete against a goal of 80.0%, and the task fails when "
        "the goal is not reached"
    )


def test_completeness_counts_events_where_the_files_have_them(grid, work_queue, ready_task):
    # 4 files of 500 events, one of 3,000: the three small ones finished = 1,500 of 5,000 events = 30 %, under a
    # goal of 50 % although 3 of 5 files (60 %) finished
    task = ready_task(work_queue, files=5, status="running", failWhenGoalUnreached=True)
    Task.objects.filter(pk=task.pk).update(goal=500)
    DatasetFile.objects.filter(pk=DatasetFile.objects.filter(task=task).order_by("pk").last().pk).update(nEvents=3000)
    files_end(task, 3, 2)
    assert task_completion_check(now=NOW) == {"failed": [task.pk]}
    assert "30.0% complete against a goal of 50.0%" in TaskStatusLog.objects.filter(task=task).last().reason


def test_the_failure_rate_follows_the_attempts(grid, work_queue, ready_task):
    # 4 files: 2 finished at their first attempt, 1 failed after 3 failed attempts, 1 still ready after one
    # failed attempt: 4 failed attempts of 6 = 66 %
    task = ready_task(work_queue, files=4, status="running")
    files_end(task, 2, 1, attempts=1, failed_attempts=0)
    DatasetFile.objects.filter(task=task, status="failed").update(attemptNr=3, failedAttempt=3)
    DatasetFile.objects.filter(task=task, status="ready").update(attemptNr=1, failedAttempt=1)
    assert task_completion_check(now=NOW) == {}
    task.refresh_from_db()
    assert (task.progress, task.failureRate) == (50, 66)


def test_a_met_termination_condition_finishes_the_task_once_its_jobs_end(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=10, status="running")
    Task.objects.filter(pk=task.pk).update(termCondition="90%")
    files_end(task, 8)
    assert task_completion_check(now=NOW) == {}  # 8 of 10: not yet
    # the ninth finishes; the tenth is in a running job
    files_end(task, 9)
    job = factories.JobFactory(task=task, jobStatus="running")
    DatasetFile.objects.filter(task=task, status="ready").update(status="picked", PandaID=job.pk)
    assert task_completion_check(now=NOW + timedelta(minutes=1)) == {"finishing": [task.pk]}
    assert TaskStatusLog.objects.filter(task=task).last().reason == "termination condition 90% met: 9 of 10"
    assert task_completion_check(now=NOW + timedelta(minutes=2)) == {}  # its job still runs
    Job.objects.filter(pk=job.pk).update(jobStatus="finished")
    DatasetFile.objects.filter(PandaID=job.pk).update(status="finished")
    assert task_completion_check(now=NOW + timedelta(minutes=3)) == {"done": [task.pk]}


def test_a_termination_condition_ends_a_task_with_inputs_left_as_finished(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=10, status="running", useExhausted=True)
    Task.objects.filter(pk=task.pk).update(termCondition="50%")
    files_end(task, 5)
    # no job running: finished in the same round, never exhausted (the task asked to stop); the five files never
    # tried stay ready
    assert task_completion_check(now=NOW) == {"finishing": [task.pk], "finished": [task.pk]}
    assert DatasetFile.objects.filter(task=task, status="ready").count() == 5


def test_a_files_last_attempt_in_sql_is_the_rules(grid, work_queue):
    # every combination of attempts, limits and how the job ended, ended through job_inputs_after_end, against
    # task_outcome.file_attempts_used_up
    task = factories.TaskFactory(status="running", workQueue=work_queue)
    cases = [
        case
        for case in product(range(4), (None, 2, 4), range(3), (None, 1, 2), (True, False))
        if case[1] is None or case[0] < case[1]
    ]
    dataset = factories.DatasetFactory(task=task, type="input", status="ready", nFiles=len(cases))
    jobs = Job.objects.bulk_create(Job(task=task, jobStatus="running", computingSite="SAT_Q") for _ in cases)
    DatasetFile.objects.bulk_create(
        DatasetFile(
            dataset=dataset,
            task=task,
            type="input",
            lfn=f"f{n}",
            status="picked",
            PandaID=job.pk,
            attemptNr=attempt_nr,
            maxAttempt=max_attempt,
            failedAttempt=failed_attempt,
            maxFailure=max_failure,
        )
        for n, (job, (attempt_nr, max_attempt, failed_attempt, max_failure, _)) in enumerate(
            zip(jobs, cases, strict=True)
        )
    )
    failed = [job.pk for job, case in zip(jobs, cases, strict=True) if case[4]]
    closed = [job.pk for job, case in zip(jobs, cases, strict=True) if not case[4]]
    job_inputs_after_end(finished=[], failed=failed, closed=closed, now=NOW)
    status = dict(DatasetFile.objects.filter(task=task).values_list("PandaID", "status"))
    wrong = [
        case
        for job, case in zip(jobs, cases, strict=True)
        if (status[job.pk] == "failed")
        != file_attempts_used_up(
            attempt_nr=case[0], max_attempt=case[1], failed_attempt=case[2], max_failure=case[3], failed=case[4]
        )
    ]
    assert len(cases) > 100
    assert wrong == []


def test_fed_files_take_the_tasks_attempt_limits(grid):
    # ContentsFeeder (1.0.4): maxAttempt from the task (3 by default), maxFailure when the task sets one
    limits = {}
    for params in ({}, {"maxAttempt": 10, "maxFailure": 3}):
        task = factories.TaskFactory(status="defined", nucleus="NUC", prodSourceLabel="managed", taskParams=params)
        dataset = factories.DatasetFactory(task=task, type="input", status="defined", state="open", nFiles=0)
        DatasetReplica.objects.create(
            datasetName=dataset.datasetName, endpoint=StorageEndpoint.objects.get(name="NUC_DATADISK"), nFiles=2
        )
        limits[task.pk] = params
    task_refine(now=NOW)
    task_refine(now=NOW + timedelta(minutes=1))
    got = {pk: set(DatasetFile.objects.filter(task_id=pk).values_list("maxAttempt", "maxFailure")) for pk in limits}
    first, second = limits
    assert got == {first: {(3, None)}, second: {(10, 3)}}
    assert Dataset.objects.filter(task_id__in=limits, nFiles=2).count() == 2
