"""Task commands and the task states the watchdog keeps (seed 002): retry with children, abort, finish, lost
and broken files, throttled every fifth attempt, exhausted after 10 days, exhausted when pending too long."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import Dataset, DatasetFile, Job, JobStatusLog, Task, TaskStatusLog
from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.progress import task_completion_check
from brokerage.services.task_commands import (
    TaskCommandRefused,
    dataset_files_mark,
    task_abort,
    task_finish,
    task_pause,
    task_resume,
    task_retry,
    task_watch,
)
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def with_files(task, statuses, *, attempts=0):
    dataset = factories.DatasetFactory(task=task, type="input", status="done", nFiles=len(statuses))
    for status in statuses:
        factories.DatasetFileFactory(dataset=dataset, status=status, attemptNr=attempts, maxAttempt=max(attempts, 3))
    return dataset


def test_retry_gives_failed_inputs_new_attempts_and_retries_children():
    parent = factories.TaskFactory(status="finished", taskParams={"maxAttempt": 3})
    with_files(parent, ["finished", "failed", "failed"], attempts=3)
    child_finished = factories.TaskFactory(status="finished", parent=parent)
    with_files(child_finished, ["failed"], attempts=3)
    child_aborted = factories.TaskFactory(status="aborted", parent=parent)
    child_failed = factories.TaskFactory(status="failed", parent=parent)
    retried = task_retry(task_id=parent.pk, actor="shifter", now=NOW)
    assert sorted(retried) == sorted([parent.pk, child_finished.pk])
    statuses = dict(Task.objects.values_list("pk", "status"))
    assert statuses[parent.pk] == "running"  # one input finished already
    assert statuses[child_finished.pk] == "ready"  # none finished: starts over
    assert (statuses[child_aborted.pk], statuses[child_failed.pk]) == ("aborted", "failed")
    # the failed files are ready with 3 more attempts: attemptNr 3, maxAttempt 3 + 3
    assert set(
        DatasetFile.objects.filter(task=parent).exclude(status="finished").values_list("status", "maxAttempt")
    ) == {("ready", 6)}
    assert Dataset.objects.get(task=parent).status == "ready"
    path = list(parent.status_log.order_by("pk").values_list("new_status", flat=True))
    assert path[-2:] == ["toretry", "running"]


def test_only_finished_or_exhausted_tasks_are_retried():
    task = factories.TaskFactory(status="running")
    with pytest.raises(TaskCommandRefused, match="only finished or exhausted"):
        task_retry(task_id=task.pk, actor="shifter", now=NOW)


def test_abort_kills_every_job_and_aborts(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=4, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    killed = task_abort(task_id=task.pk, actor="shifter", now=NOW)
    assert len(killed) == 4
    assert set(Job.objects.filter(task=task).values_list("jobStatus", flat=True)) == {"cancelled"}
    task.refresh_from_db()
    assert task.status == "aborted"
    assert JobStatusLog.objects.filter(job_id=killed[0], new_status="cancelled", actor="shifter").exists()
    with pytest.raises(TaskCommandRefused, match="is aborted"):
        task_abort(task_id=task.pk, actor="shifter", now=NOW)


def test_finish_stops_new_work_then_closes_when_running_jobs_end(grid, work_queue, ready_task):
    from brokerage.services.status import job_status_transition_many

    task = ready_task(work_queue, files=4, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    ids = list(Job.objects.filter(task=task).order_by("pk").values_list("pk", flat=True))
    job_status_transition_many(from_status="assigned", to_status="activated", job_ids=ids, now=NOW)
    job_status_transition_many(from_status="activated", to_status="starting", job_ids=ids[:1], now=NOW)
    job_status_transition_many(from_status="starting", to_status="running", job_ids=ids[:1], now=NOW)
    killed = task_finish(task_id=task.pk, actor="shifter", now=NOW)
    assert sorted(killed) == ids[1:]  # the running one may end
    assert task_completion_check(now=NOW) == {}  # a job still runs
    job_status_transition_many(from_status="running", to_status="finished", job_ids=ids[:1], now=NOW)
    DatasetFile.objects.filter(PandaID=ids[0]).update(status="finished")
    assert task_completion_check(now=NOW) == {"finished": [task.pk]}
    task.refresh_from_db()
    assert task.status == "finished"


def test_a_paused_task_gets_no_jobs_until_resumed_to_what_it_was(grid, work_queue, ready_task):
    from brokerage.task_actions import task_actions_available

    task = ready_task(work_queue, files=4, nScoutJobs=0)
    assert "pause" in task_actions_available(task)
    assert task_pause(task_id=task.pk, actor="shifter", now=NOW) == "ready"
    task.refresh_from_db()
    assert (task.status, task.oldStatus) == ("paused", "ready")
    assert task_actions_available(task)[-3:] == ["resume", "finish", "abort"]
    # seed 002: "doesn't do anything until it is resumed"
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    assert not Job.objects.filter(task=task).exists()
    with pytest.raises(TaskCommandRefused, match="is paused: cannot pause"):
        task_pause(task_id=task.pk, actor="shifter", now=NOW)
    assert task_resume(task_id=task.pk, actor="shifter", now=NOW + timedelta(minutes=5)) == "ready"
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW + timedelta(minutes=5))
    assert Job.objects.filter(task=task).count() == 4
    assert list(TaskStatusLog.objects.filter(task=task).values_list("new_status", "actor")) == [
        ("paused", "shifter"),
        ("ready", "shifter"),
        ("running", "job generator"),
    ]
    with pytest.raises(TaskCommandRefused, match="only a paused task can be resumed"):
        task_resume(task_id=task.pk, actor="shifter", now=NOW)


def test_lost_and_broken_files_are_skipped_and_the_task_closes_without_them(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=3, status="running", nScoutJobs=0)
    files = list(DatasetFile.objects.filter(task=task).order_by("pk").values_list("pk", flat=True))
    assert dataset_files_mark(file_ids=files[:1], status="lost", actor="ddm", now=NOW) == 1
    assert dataset_files_mark(file_ids=files[1:2], status="broken", actor="ddm", now=NOW) == 1
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    assert Job.objects.filter(task=task).count() == 1  # only the good file gets a job
    DatasetFile.objects.filter(pk=files[2]).update(status="finished")
    assert task_completion_check(now=NOW) == {"finished": [task.pk]}
    with pytest.raises(ValueError, match="lost or broken"):
        dataset_files_mark(file_ids=files, status="finished", actor="ddm", now=NOW)


def test_throttled_at_the_fifth_attempt_for_two_hours():
    task = factories.TaskFactory(status="running")
    with_files(task, ["ready", "finished"], attempts=5)
    assert task_watch(now=NOW)["throttled"] == [task.pk]
    task.refresh_from_db()
    assert (task.status, task.oldStatus, task.numThrottled, task.throttledTime) == ("throttled", "running", 1, NOW)
    # 120 × int(5/5)² = 120 minutes: still throttled one second before, released at the limit, once only
    assert "released" not in task_watch(now=NOW + timedelta(minutes=120) - timedelta(seconds=1))
    assert task_watch(now=NOW + timedelta(minutes=120))["released"] == [task.pk]
    assert "throttled" not in task_watch(now=NOW + timedelta(minutes=121))
    task.refresh_from_db()
    assert task.status == "running"


def test_a_multiple_of_five_passed_between_two_watchdog_runs_still_throttles_once():
    # attempts 4 → 6 between two runs: the fifth was passed, the task is throttled for it (120 min), once
    task = factories.TaskFactory(status="running")
    with_files(task, ["ready"], attempts=4)
    DatasetFile.objects.filter(task=task).update(maxAttempt=12)
    assert "throttled" not in task_watch(now=NOW)
    DatasetFile.objects.filter(task=task).update(attemptNr=6)
    assert task_watch(now=NOW)["throttled"] == [task.pk]
    task.refresh_from_db()
    assert (task.status, task.numThrottled) == ("throttled", 1)
    assert task.status_log.last().reason == (
        "the largest input attemptNr is 6, past 5, a multiple of 5: throttled for 120 min (level 1)"
    )
    assert task_watch(now=NOW + timedelta(minutes=120))["released"] == [task.pk]
    DatasetFile.objects.filter(task=task).update(attemptNr=9)
    assert "throttled" not in task_watch(now=NOW + timedelta(minutes=121))  # the tenth not reached yet
    DatasetFile.objects.filter(task=task).update(attemptNr=11)
    assert task_watch(now=NOW + timedelta(minutes=122))["throttled"] == [task.pk]
    task.refresh_from_db()
    assert task.numThrottled == 2  # 120 × 2² = 480 minutes this time


def test_tenth_attempt_throttles_for_eight_hours():
    task = factories.TaskFactory(status="running", numThrottled=1)
    with_files(task, ["ready"], attempts=10)
    task_watch(now=NOW)
    assert "released" not in task_watch(now=NOW + timedelta(minutes=479))
    assert task_watch(now=NOW + timedelta(minutes=480))["released"] == [task.pk]


def test_exhausted_for_ten_days_is_passed_then_closed_by_what_it_processed(grid, work_queue, ready_task):
    # seed 002 passed: "ready to go to a final state after manual intervention or timeout" (of 10 days)
    task = ready_task(work_queue, files=3, status="running", useExhausted=True)
    DatasetFile.objects.filter(task=task).update(status="failed")
    two = list(DatasetFile.objects.filter(task=task).order_by("pk").values_list("pk", flat=True)[:2])
    DatasetFile.objects.filter(pk__in=two).update(status="finished")
    assert task_completion_check(now=NOW) == {"exhausted": [task.pk]}  # 2 of 3 finished: exhausted, not finished
    Task.objects.filter(pk=task.pk).update(stateChangeTime=NOW - timedelta(days=10))
    recent = factories.TaskFactory(status="exhausted", stateChangeTime=NOW - timedelta(days=10) + timedelta(seconds=1))
    assert task_watch(now=NOW)["passed"] == [task.pk]
    assert Task.objects.get(pk=recent.pk).status == "exhausted"
    # the completion check takes it to its final status, never back to exhausted: 2 of 3 finished → finished
    assert task_completion_check(now=NOW) == {"finished": [task.pk]}
    assert list(TaskStatusLog.objects.filter(task=task).values_list("new_status", flat=True))[-2:] == [
        "passed",
        "finished",
    ]


def test_a_shifters_finish_passes_an_exhausted_task_at_once(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=2, status="running", useExhausted=True)
    first, second = DatasetFile.objects.filter(task=task).order_by("pk")
    DatasetFile.objects.filter(pk=first.pk).update(status="finished")
    DatasetFile.objects.filter(pk=second.pk).update(status="failed")
    assert task_completion_check(now=NOW) == {"exhausted": [task.pk]}
    assert task_finish(task_id=task.pk, actor="shifter", now=NOW) == []
    task.refresh_from_db()
    assert (task.status, task.oldStatus) == ("passed", "exhausted")
    assert task_completion_check(now=NOW) == {"finished": [task.pk]}  # 1 of 2 finished, no goal to fail


def test_pending_in_the_brokerage_too_long_is_exhausted():
    # a task no nucleus accepts: pending at each cycle, retried every 30 minutes, exhausted after 72 hours
    factories.NucleusFactory(name="FULL")
    factories.StorageEndpointFactory(name="FULL_DATADISK", site=factories.NucleusFactory(name="FULL"), space_free=1.0)
    task = factories.TaskFactory(status="assigning", ioIntensity=100, gshare="MC 16", cpuTime=300)
    task_brokerage_cycle_run(now=NOW)
    task.refresh_from_db()
    assert (task.status, task.brokeragePendingSince) == ("pending", NOW)
    assert "exhausted" not in task_watch(now=NOW + timedelta(hours=72) - timedelta(seconds=1))
    assert task_watch(now=NOW + timedelta(hours=72))["exhausted"] == [task.pk]
    task.refresh_from_db()
    assert (task.status, task.errorDialog) == ("exhausted", "timed out while pending in the brokerage")


def test_exhausted_when_the_task_says_so_and_only_some_finished(grid, work_queue, ready_task):
    # PostProcessorBase.doPreCheck (1.0.4): exhausted only instead of finished; nothing finished is failed anyway
    tasks = {
        "exhausting": ready_task(work_queue, files=2, status="running", useExhausted=True),
        "plain": ready_task(work_queue, files=2, status="running"),
        "all failed": ready_task(work_queue, files=2, status="running", useExhausted=True),
    }
    DatasetFile.objects.filter(task__in=tasks.values()).update(status="failed")
    for name in ("exhausting", "plain"):
        first = DatasetFile.objects.filter(task=tasks[name]).order_by("pk").first()
        DatasetFile.objects.filter(pk=first.pk).update(status="finished")
    assert task_completion_check(now=NOW) == {
        "exhausted": [tasks["exhausting"].pk],
        "finished": [tasks["plain"].pk],
        "failed": [tasks["all failed"].pk],
    }


def test_admin_actions_run_the_commands_and_report_refusals(admin_client_logged):
    from django.urls import reverse

    finished = factories.TaskFactory(status="finished")
    with_files(finished, ["failed"], attempts=3)
    running = factories.TaskFactory(status="running")
    url = reverse("admin:brokerage_task_changelist")
    response = admin_client_logged.post(
        url, {"action": "retry_tasks", "_selected_action": [finished.pk, running.pk]}, follow=True
    )
    shown = [str(message) for message in response.context["messages"]]
    assert shown == [
        f"task {running.pk} is running: only finished or exhausted tasks can be retried",
        "1 task(s) retried.",
    ]
    assert Task.objects.get(pk=finished.pk).status == "ready"
    admin_client_logged.post(url, {"action": "abort_tasks", "_selected_action": [running.pk]})
    assert Task.objects.get(pk=running.pk).status == "aborted"
    log = Task.objects.get(pk=running.pk).status_log.latest("pk")
    assert log.actor.startswith("admin:")
