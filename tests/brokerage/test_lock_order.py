"""One lock order (services.bulk): every service that locks several tasks or jobs locks them in ascending primary
key, so it can never hold a higher row while waiting for a lower one (issue 31: 15 deadlocks in 50 minutes between
the bulk progress update and status moves locking in descending order).

The probe, on PostgreSQL: a transaction that follows the order holds the lowest row, the service starts over the
lowest and the highest, then the holder asks for the highest. A service that locks in the same order waits on the
lowest (or skips it) without holding the highest, so the holder gets it and both finish; one that locks in another
order holds the highest and waits on the lowest: a deadlock, which PostgreSQL reports within deadlock_timeout.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction

from brokerage.models import Dataset, DatasetFile, Job, Task
from brokerage.services.bulk import bulk_update_values, rows_update
from brokerage.services.cycles import brokerage_pending_mark, task_claim_release
from brokerage.services.progress import task_completion_check
from brokerage.services.status import job_status_transition_many, status_transition_many, task_status_transition_many
from tests import factories

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="row locks: PostgreSQL pass only"
    ),
]

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def deadlocks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def backend_waits_on_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # inside a transaction the activity view is read once
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def probe(model, low: int, high: int, service, *, then_model=None) -> dict:
    """The holder locks `low`; `service` runs; once it waits (or is done) the holder asks for `high` (a row of
    `then_model` when given: a task, then one of its children, as job generation does)."""
    outcome: dict[str, object] = {}
    held, asked = threading.Event(), threading.Event()

    def holder():
        try:
            with transaction.atomic():
                list(model.objects.select_for_update().filter(pk=low).values_list("pk"))
                held.set()
                asked.wait(20)
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '20s'")
                second = then_model or model
                list(second.objects.select_for_update(no_key=True).filter(pk=high).values_list("pk"))
            outcome["holder"] = "ok"
        except Exception as error:
            outcome["holder"] = error
        finally:
            connection.close()

    def runner():
        held.wait(20)
        try:
            service()
            outcome["service"] = "ok"
        except Exception as error:
            outcome["service"] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=holder), threading.Thread(target=runner)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    held.wait(20)
    while threads[1].is_alive() and not backend_waits_on_lock() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # the service has locked what it could before the lowest
    asked.set()
    for thread in threads:
        thread.join(60)
    return outcome


@pytest.fixture
def tasks():
    return [factories.TaskFactory(status="running") for _ in range(40)]


def assert_no_deadlock(outcome, before):
    assert outcome == {"holder": "ok", "service": "ok"}
    assert deadlocks() == before


def test_task_status_moves_lock_in_ascending_order(tasks):
    before = deadlocks()
    ids = [task.pk for task in tasks]
    outcome = probe(
        Task,
        min(ids),
        max(ids),
        lambda: task_status_transition_many(
            from_status="running", moves={pk: ("prepared", "probe") for pk in ids}, actor="probe", now=NOW
        ),
    )
    assert_no_deadlock(outcome, before)
    assert set(Task.objects.values_list("status", flat=True)) == {"prepared"}  # it waited, then moved all 40


def test_bulk_updates_lock_in_ascending_order(tasks):
    before = deadlocks()
    ids = [task.pk for task in tasks]
    rows = [(pk, 50) for pk in reversed(ids)]  # given in descending order
    outcome = probe(Task, min(ids), max(ids), lambda: bulk_update_values(Task, fields=("progress",), rows=rows))
    assert_no_deadlock(outcome, before)
    assert set(Task.objects.values_list("progress", flat=True)) == {50}


def test_bulk_updates_may_skip_the_rows_others_hold(tasks):
    ids = [task.pk for task in tasks]
    outcome = probe(
        Task,
        min(ids),
        max(ids),
        lambda: bulk_update_values(Task, fields=("progress",), rows=[(pk, 7) for pk in ids], skip_locked=True),
    )
    assert outcome == {"holder": "ok", "service": "ok"}
    # the held row keeps its value until the next round; the 39 others are written without waiting
    assert Task.objects.get(pk=min(ids)).progress != 7
    assert Task.objects.filter(progress=7).count() == 39


def test_claim_release_and_pending_marks_lock_in_ascending_order(tasks):
    ids = [task.pk for task in tasks]
    Task.objects.update(lockedBy="w:1", lockedTime=NOW)
    before = deadlocks()
    outcome = probe(Task, min(ids), max(ids), lambda: task_claim_release(task_ids=list(reversed(ids)), owner="w:1"))
    assert_no_deadlock(outcome, before)
    assert not Task.objects.exclude(lockedBy="").exists()
    outcome = probe(
        Task, min(ids), max(ids), lambda: brokerage_pending_mark(pending=ids[::2], assigned=ids[1::2], now=NOW)
    )
    assert_no_deadlock(outcome, before)
    assert Task.objects.filter(brokeragePendingSince=NOW).count() == 20


def test_completion_check_never_waits_on_a_busy_task():
    # 5 running tasks whose one master input file each is finished: all complete
    tasks = []
    for _ in range(5):
        task = factories.TaskFactory(status="running")
        dataset = factories.DatasetFactory(task=task, type="input", status="ready", nFiles=1)
        factories.DatasetFileFactory(dataset=dataset, task=task, status="finished")
        tasks.append(task)
    ids = [task.pk for task in tasks]
    before = deadlocks()
    started = time.monotonic()
    outcome = probe(Task, min(ids), max(ids), lambda: task_completion_check(now=NOW))
    assert_no_deadlock(outcome, before)
    assert time.monotonic() - started < 15
    # the busy task is closed in the next round; the others were closed as done at once
    statuses = dict(Task.objects.values_list("pk", "status"))
    assert statuses.pop(min(ids)) == "running"
    assert set(statuses.values()) == {"done"}
    assert Dataset.objects.filter(task_id=min(ids), status="ready").exists()  # its dataset waits with it
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=min(ids)).status == "done"


def test_job_moves_lock_in_ascending_order():
    jobs = [factories.JobFactory(jobStatus="running") for _ in range(30)]
    ids = [job.pk for job in jobs]
    before = deadlocks()
    outcome = probe(
        Job,
        min(ids),
        max(ids),
        lambda: job_status_transition_many(from_status="running", to_status="finished", job_ids=ids, now=NOW),
    )
    assert_no_deadlock(outcome, before)
    assert set(Job.objects.values_list("jobStatus", flat=True)) == {"finished"}


def test_generic_moves_and_plain_updates_lock_in_ascending_order():
    jobs = [factories.JobFactory(jobStatus="activated") for _ in range(30)]
    ids = [job.pk for job in jobs]
    before = deadlocks()
    outcome = probe(
        Job,
        min(ids),
        max(ids),
        lambda: status_transition_many(model=Job, ids=reversed(ids), from_status="activated", to_status="starting"),
    )
    assert_no_deadlock(outcome, before)
    outcome = probe(Job, min(ids), max(ids), lambda: rows_update(Job, reversed(ids), attemptNr=2))
    assert_no_deadlock(outcome, before)
    assert set(Job.objects.values_list("jobStatus", "attemptNr")) == {("starting", 2)}


def test_ending_jobs_locks_their_tasks_before_their_files():
    """The soak found it: the simulator ended a job that failed for memory, so it moved the job, its file and its
    dataset and then raised its task's ramCount, while job generation held the task and asked for the file. Now
    the tasks are locked first, and a task held elsewhere is skipped: its job ends at the next run, not after a
    wait that held up every other job's end (the 45-s hold of test_concurrency)."""
    from brokerage.services.retries import OUT_OF_MEMORY_CODES, job_inputs_after_end, job_tasks_lock

    task = factories.TaskFactory(status="running", ramCount=2000)
    dataset = factories.DatasetFactory(task=task, type="input")
    job = factories.JobFactory(task=task, jobStatus="running", pilotErrorCode=OUT_OF_MEMORY_CODES[0], maxPSS=4_000_000)
    file = factories.DatasetFileFactory(dataset=dataset, task=task, status="running", PandaID=job.pk)
    before = deadlocks()

    def end_the_job():
        with transaction.atomic():
            free = [pk for pk in [job.pk] if pk in job_tasks_lock(job_ids=[job.pk])]
            job_status_transition_many(from_status="running", to_status="failed", job_ids=free, now=NOW)
            job_inputs_after_end(finished=[], failed=free, now=NOW)

    started = time.monotonic()
    outcome = probe(Task, task.pk, file.pk, end_the_job, then_model=DatasetFile)
    assert_no_deadlock(outcome, before)
    assert time.monotonic() - started < 5  # skipped, not waited for
    assert Job.objects.get(pk=job.pk).jobStatus == "running"  # its task was held: left for the next run
    end_the_job()  # the next run, with nothing held
    assert Job.objects.get(pk=job.pk).jobStatus == "failed"
    assert Task.objects.get(pk=task.pk).ramCount > 2000  # the memory raise happened
    assert DatasetFile.objects.get(pk=file.pk).status == "ready"  # back for another attempt


def test_two_refreshes_of_the_job_counts_queue_one_behind_the_other():
    """Issue 50: two beats' refreshes of JobCountNow at once (a beat late, the next on time): the second waits for
    the first's mark lock, then replaces its rows; without the lock both delete the old rows and the second's
    insert meets the first's on the unique (queue, status)."""
    from brokerage.models import JobCountNow
    from brokerage.services.summaries import job_counts_refresh

    factories.JobFactory.create_batch(2, computingSite="CERN-PROD", jobStatus="running")
    job_counts_refresh(now=NOW)  # the mark exists, as after the first beat
    errors: list[BaseException] = []
    inside = threading.Event()

    def second():
        try:
            inside.wait(10)
            job_counts_refresh(now=NOW)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=second)
    thread.start()
    with transaction.atomic():
        job_counts_refresh(now=NOW)
        inside.set()
        deadline = time.monotonic() + 10
        while not backend_waits_on_lock() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert backend_waits_on_lock()  # the second refresh waits on the mark, holding nothing
    thread.join(10)
    assert not thread.is_alive()
    assert errors == []
    assert list(JobCountNow.objects.values_list("computingSite", "jobStatus", "n")) == [("CERN-PROD", "running", 2)]
