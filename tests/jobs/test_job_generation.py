"""Job generation and job brokerage over the database (seed 002): scouts first, file and event splitting, one
decision per job set, pending and retry, the throttler, the process lock, and a fixed number of queries."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from brokerage.engine.core.reasons import explain
from brokerage.engine.panda.task_states import TaskFacts, task_state_explain
from brokerage.models import (
    Dataset,
    DatasetFile,
    Decision,
    Event,
    GdpConfig,
    GlobalShare,
    Job,
    JobStatusLog,
    PandaQueue,
    ProcessLock,
    StorageEndpoint,
    Task,
    TaskStatusLog,
)
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from brokerage.selectors.tasks import task_generation_hold
from brokerage.services.cycles import task_pending_retry
from brokerage.services.jobs import job_generation_cycle_run, task_scouting_check
from brokerage.services.status import job_status_transition_many
from tests import factories
from tests.jobs.conftest import report_like_pilots

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
GB = 1024**3


def run(work_queue, now=NOW):
    return job_generation_cycle_run(work_queue_id=work_queue.pk, now=now)


def test_a_ready_task_gets_ten_scouts_brokered_as_one_job_set(grid, work_queue, ready_task):
    # given a ready task with 30 files
    task = ready_task(work_queue)
    # when a cycle runs
    cycle = run(work_queue)
    # then ten scout jobs, one file each, are assigned at the only queue, as one job set with one decision
    assert cycle.status == "succeeded"
    jobs = list(Job.objects.filter(task=task))
    assert len(jobs) == 10
    assert {(j.jobStatus, j.computingSite, j.isScout, j.nInputFiles, j.coreCount) for j in jobs} == {
        ("assigned", "SAT_Q", True, 1, 8)
    }
    assert len({j.jobsetID for j in jobs}) == 1
    decision = Decision.objects.get(task=task)
    assert (decision.plugin, decision.outcome, decision.chosen, decision.jobsetID) == (
        "atlas_prod_job",
        "assigned",
        "SAT_Q",
        jobs[0].jobsetID,
    )
    # files picked by their jobs, the dataset counts them, the task is scouting, logs tell the story
    picked = DatasetFile.objects.filter(task=task, status="picked")
    assert picked.count() == 10
    assert set(picked.values_list("PandaID", flat=True)) == {j.pk for j in jobs}
    assert Dataset.objects.get(task=task).nFilesUsed == 10
    task.refresh_from_db()
    assert (task.status, task.lockedBy) == ("scouting", "")
    assert list(
        JobStatusLog.objects.filter(job=jobs[0])
        .order_by("pk")
        .values_list("old_status", "new_status", "reason", "computingSite")
    ) == [
        ("", "pending", "generated", "SAT_Q"),  # JEDI inserts its jobs pending, the Setupper makes them defined
        ("pending", "defined", "set up: input registered for dispatch", "SAT_Q"),
        ("defined", "assigned", "chosen by job brokerage", "SAT_Q"),
    ]
    # the move to assigned went through the job state machine: it stamps the state change
    assert {(j.stateChangeTime, j.modificationTime) for j in jobs} == {(NOW, NOW)}
    assert (cycle.n_decisions, cycle.n_assigned) == (1, 1)


def test_scouting_task_waits_then_gets_the_rest_after_its_scouts(grid, work_queue, ready_task):
    task = ready_task(work_queue)
    run(work_queue)
    # while scouts are active nothing more is generated
    run(work_queue, NOW + timedelta(minutes=5))
    assert Job.objects.filter(task=task).count() == 10
    # five scouts finish: enough for scouting to end
    scouts = list(Job.objects.filter(task=task).order_by("pk").values_list("pk", flat=True))
    job_status_transition_many(from_status="assigned", to_status="activated", job_ids=scouts, now=NOW)
    job_status_transition_many(from_status="activated", to_status="starting", job_ids=scouts[:5], now=NOW)
    job_status_transition_many(from_status="starting", to_status="running", job_ids=scouts[:5], now=NOW)
    job_status_transition_many(from_status="running", to_status="finished", job_ids=scouts[:5], now=NOW)
    report_like_pilots(scouts[:5], end=NOW, hours=1)
    assert task_scouting_check(work_queue_id=work_queue.pk, now=NOW) == {"scouted": [task.pk]}
    task.refresh_from_db()
    assert task.status == "scouted"
    # the next cycle generates the remaining 20 files as normal jobs and the task runs
    run(work_queue, NOW + timedelta(minutes=10))
    task.refresh_from_db()
    assert task.status == "running"
    normal = Job.objects.filter(task=task, isScout=False)
    assert normal.count() == 20
    assert DatasetFile.objects.filter(task=task, status="ready").count() == 0


def test_files_per_job_groups_files(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=12, nScoutJobs=0, nFilesPerJob=5)
    run(work_queue)
    assert sorted(Job.objects.filter(task=task).values_list("nInputFiles", flat=True)) == [2, 5, 5]
    task.refresh_from_db()
    assert task.status == "running"  # no scouts asked for


def test_event_level_splitting_writes_event_rows(grid, work_queue, ready_task):
    # three files of 500 events, 400 per job: (F1 0-399), (F1 400-499 + F2 0-299), (F2 300-499 + F3 0-199), …
    task = ready_task(work_queue, files=3, nScoutJobs=0, nEventsPerJob=400)
    run(work_queue)
    jobs = list(Job.objects.filter(task=task).order_by("pk"))
    assert [j.nEvents for j in jobs] == [400, 400, 400, 300]
    files = list(DatasetFile.objects.filter(task=task).order_by("pk").values_list("pk", flat=True))
    ranges = list(
        Event.objects.filter(task=task)
        .order_by("PandaID", "file_id")
        .values_list("file_id", "def_min_eventID", "def_max_eventID")
    )
    assert ranges == [
        (files[0], 0, 399),
        (files[0], 400, 499),
        (files[1], 0, 299),
        (files[1], 300, 499),
        (files[2], 0, 199),
        (files[2], 200, 499),
    ]
    assert set(Event.objects.filter(task=task).values_list("status", flat=True)) == {"ready"}


def test_no_queue_leaves_the_task_pending_then_retried_after_60_minutes(grid, work_queue, ready_task):
    grid.status = "offline"
    grid.save()
    task = ready_task(work_queue)
    run(work_queue)
    task.refresh_from_db()
    assert task.status == "pending"
    assert task.oldStatus == "ready"
    assert "SAT_Q" in task.errorDialog or task.errorDialog
    assert not Job.objects.filter(task=task).exists()
    assert DatasetFile.objects.filter(task=task, status="ready").count() == 30
    decision = Decision.objects.get(task=task)
    assert (decision.outcome, decision.retry_after_minutes) == ("pending", 60)
    # 59 minutes later still pending, 60 minutes later back to ready
    assert task_pending_retry(now=NOW + timedelta(minutes=59)) == []
    assert task_pending_retry(now=NOW + timedelta(minutes=60)) == [task.pk]
    task.refresh_from_db()
    assert task.status == "ready"


def throttle(work_queue, **limits):
    """Makes the work queue throttled (a share) with the gdpconfig limits given (NQUEUELIMIT=5 …)."""
    work_queue.queue_share = 20
    work_queue.save()
    for key, value in limits.items():
        GdpConfig.objects.create(
            key=f"{key}_{work_queue.queue_name}", value=str(value), component="prod_job_throttler", app="jedi"
        )
    gdpconfig_cache_clear()


def queued_jobs(work_queue, ready_task, *, count, priority):
    """`count` activated MCORE jobs at `priority` in the work queue, of a task with nothing left to generate."""
    old = ready_task(work_queue, priority=priority)
    Task.objects.filter(pk=old.pk).update(status="done")
    for _ in range(count):
        factories.JobFactory(
            task=old, workQueue=work_queue, jobStatus="activated", resource_type="MCORE", currentPriority=priority
        )


def test_throttled_work_queue_generates_nothing_and_says_why(grid, work_queue, ready_task):
    # given a throttled work queue with a queue limit of 5, 6 jobs queued at priority 900, none running
    throttle(work_queue, NQUEUELIMIT=5)
    queued_jobs(work_queue, ready_task, count=6, priority=900)
    task = ready_task(work_queue)
    cycle = run(work_queue)
    assert not Job.objects.filter(task=task).exists()
    throttled = Decision.objects.get(cycle=cycle, outcome="throttled")
    assert throttled.plugin == "prod_job_throttler"
    assert "no_running_enough_queued" in throttled.message
    assert "queued=6" in throttled.message
    assert cycle.n_throttled == 1

    # the task's page says why it gets no jobs, with the numbers and what to do, within two generation periods
    held = task_generation_hold(task, now=NOW + timedelta(seconds=60))
    assert held[0] == "throttle_no_running_enough_queued"
    why, advice = task_state_explain(TaskFacts(status=task.status, generation_hold=held))
    assert why == [
        f"No MCORE job of work queue {work_queue.queue_name} runs while 6 are queued, more than its queue limit of 5: "
        "no new jobs until some start."
    ]
    assert advice[0].action.startswith("Look at the queues holding its work queue's activated jobs")
    # after two periods without a new verdict, nothing holds it any more
    assert task_generation_hold(task, now=NOW + timedelta(seconds=121)) is None


def test_a_waiting_task_above_every_queued_job_passes_the_throttle_alone(grid, work_queue, ready_task):
    # same queue as above, but a task of 950 waits
    throttle(work_queue, NQUEUELIMIT=5)
    queued_jobs(work_queue, ready_task, count=6, priority=900)
    urgent = ready_task(work_queue, priority=950)
    normal = ready_task(work_queue, priority=500)
    run(work_queue)
    # the urgent task gets its scouts, the normal one is held back by the priority limit
    assert Job.objects.filter(task=urgent).count() == 10
    assert not Job.objects.filter(task=normal).exists()
    # which the normal task's page says; the urgent one is not held
    code, detail = task_generation_hold(normal, now=NOW)
    assert code == "throttle_priority_limit"
    assert explain(code, detail) == (
        f"Work queue {work_queue.queue_name} makes MCORE jobs only for tasks of priority 950 or more while it is "
        "throttled; this task's priority is 500."
    )
    assert task_generation_hold(urgent, now=NOW) is None


def test_throttler_max_jobs_bounds_the_cycle(grid, work_queue, ready_task):
    # a throttled queue with a queue cap of 25 and a queue limit of 20: nothing queued is below 0.9 × 20, so
    # max(cap / 5, 20 / 20) = 5 jobs this cycle, although 10 scouts are wanted
    throttle(work_queue, NQUEUECAP=25, NQUEUELIMIT=20)
    task = ready_task(work_queue)
    run(work_queue)
    assert Job.objects.filter(task=task).count() == 5


def hold_lock(work_queue, *, owner, since):
    """The JEDI process lock of the work queue, held by another worker since `since`."""
    ProcessLock.objects.create(
        vo="atlas",
        prodSourceLabel="managed",
        workQueue=work_queue,
        cloud="",
        resource_type="",
        lockedBy=owner,
        lockedTime=since,
    )


def test_another_worker_holding_the_process_lock_means_no_cycle(grid, work_queue, ready_task):
    ready_task(work_queue)
    hold_lock(work_queue, owner="other:1", since=NOW)
    assert run(work_queue) is None
    assert not Job.objects.exists()


def test_the_lock_is_released_after_the_cycle(grid, work_queue, ready_task):
    ready_task(work_queue)
    run(work_queue)
    assert not ProcessLock.objects.exists()
    assert not Task.objects.exclude(lockedBy="").exists()


def test_queries_do_not_grow_with_the_number_of_tasks(grid, work_queue, ready_task):
    def queries_for(n_tasks, offset):
        for _ in range(n_tasks):
            ready_task(work_queue, files=2)
        gdpconfig_cache_clear()  # both runs read the parameters from the table
        cache.clear()  # and count the shares' jobs (read at most every 10 s otherwise)
        with CaptureQueriesContext(connection) as captured:
            run(work_queue, NOW + timedelta(hours=offset))
        Task.objects.filter(status="scouting").update(status="done")
        return len(captured)

    # 4 and 12 jobs: under the ~19 job rows SQLite's parameter limit lets one INSERT carry
    assert queries_for(2, 0) == queries_for(6, 1)


def test_a_cycle_failing_mid_write_leaves_nothing_half_written(grid, work_queue, ready_task, monkeypatch):
    # given a failure after the jobs were inserted (what a killed worker's open transaction amounts to)
    from brokerage.services import jobs as service

    def broken(*args, **kwargs):
        raise RuntimeError("worker died")

    monkeypatch.setattr(service, "_use_inputs", broken)
    task = ready_task(work_queue)
    cycle = run(work_queue)
    # then the cycle says so, and nothing of it remains but the cycle row
    assert cycle.status == "failed"
    assert "RuntimeError: worker died" in cycle.error
    assert not Job.objects.exists()
    assert not Decision.objects.exists()
    assert DatasetFile.objects.filter(task=task, status="ready").count() == 30
    task.refresh_from_db()
    assert (task.status, task.lockedBy) == ("ready", "")
    assert not ProcessLock.objects.exists()


def test_claims_of_a_dead_worker_expire_after_30_minutes(grid, work_queue, ready_task):
    task = ready_task(work_queue)
    Task.objects.filter(pk=task.pk).update(lockedBy="dead:1", lockedTime=NOW - timedelta(minutes=29))
    hold_lock(work_queue, owner="dead:1", since=NOW - timedelta(minutes=31))
    # the dead worker's process lock has expired and is taken over, but its task claim is still fresh
    run(work_queue)
    assert not Job.objects.exists()
    # two minutes later the task claim has expired as well
    run(work_queue, NOW + timedelta(minutes=2))
    assert Job.objects.filter(task=task).count() == 10


@pytest.fixture
def analysis(grid):
    """An analysis work queue and an analysis queue ANALY_SAT beside SAT_Q."""
    queue = factories.PandaQueueFactory(
        name="ANALY_SAT", site=grid.site, type="analysis", corecount=1, maxrss=4000, releases=["ANY"]
    )
    disk = StorageEndpoint.objects.get(name="SAT_DATADISK")
    for role in ("read_lan", "write_lan"):
        factories.QueueStorageFactory(queue=queue, endpoint=disk, role=role)
    work_queue = factories.WorkQueueFactory(queue_name="user", queue_type="analysis", queue_share=None)
    return work_queue


def user_task(work_queue, ready_task, **params):
    task = ready_task(work_queue, nScoutJobs=0, nFilesPerJob=3, **params)
    Task.objects.filter(pk=task.pk).update(
        prodSourceLabel="user", userName="jdoe", gshare="User Analysis", coreCount=1, ramUnit="MB", nucleus=""
    )
    return task


def test_analysis_job_sets_use_the_analysis_broker(grid, analysis, ready_task):
    task = user_task(analysis, ready_task)
    cycle = run(analysis)
    decision = Decision.objects.get(task=task)
    assert (cycle.plugin, decision.plugin, decision.outcome, decision.chosen) == (
        "atlas_anal_job",
        "atlas_anal_job",
        "assigned",
        "ANALY_SAT",
    )
    assert Job.objects.filter(task=task, computingSite="ANALY_SAT").count() == 10  # 30 files, 3 per job


def test_analysis_user_over_the_running_cap_waits_in_place(grid, analysis, ready_task):
    # given the user already runs 3 jobs and CAP_RUNNING_USER_JOBS is 2
    GdpConfig.objects.create(key="CAP_RUNNING_USER_JOBS", value="2", component="anal_jobbroker", app="jedi")
    gdpconfig_cache_clear()
    other = user_task(analysis, ready_task)
    for _ in range(3):
        factories.JobFactory(
            task=other, prodSourceLabel="user", prodUserName="jdoe", jobStatus="running", computingSite="ANALY_SAT"
        )
    Task.objects.filter(pk=other.pk).update(status="done")
    task = user_task(analysis, ready_task)
    run(analysis)
    # then no jobs, the task stays ready with the reason, and the decision says throttled
    decision = Decision.objects.get(task=task)
    assert decision.outcome == "throttled"
    assert "running 3 > CAP_RUNNING_USER_JOBS 2" in decision.message
    task.refresh_from_db()
    assert task.status == "ready"
    assert "CAP_RUNNING_USER_JOBS" in task.errorDialog
    assert not Job.objects.filter(task=task).exists()


def test_analysis_pending_retries_after_20_minutes(grid, analysis, ready_task):
    PandaQueue.objects.filter(name="ANALY_SAT").update(status="offline")
    task = user_task(analysis, ready_task)
    run(analysis)
    task.refresh_from_db()
    assert task.status == "pending"
    assert task_pending_retry(now=NOW + timedelta(minutes=19)) == []
    assert task_pending_retry(now=NOW + timedelta(minutes=20)) == [task.pk]


def test_the_api_and_the_task_page_say_why_a_task_gets_no_jobs(client, grid, work_queue, ready_task):
    from django.utils import timezone

    throttle(work_queue, NQUEUELIMIT=5)
    queued_jobs(work_queue, ready_task, count=6, priority=900)
    task = ready_task(work_queue)
    run(work_queue, now=timezone.now())
    sentence = (
        f"No MCORE job of work queue {work_queue.queue_name} runs while 6 are queued, more than its queue limit of 5: "
        "no new jobs until some start."
    )
    answer = client.get(f"/api/v1/tasks/{task.pk}/why/")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["jediTaskID"], body["held_by_throttler"]) == (task.pk, "throttle_no_running_enough_queued")
    assert sentence in body["why"]
    assert body["advice"][0]["codes"] == ["throttle_no_running_enough_queued"]
    assert sentence in client.get(f"/tasks/{task.pk}/").content.decode()
    assert client.get("/api/v1/tasks/999999/why/").status_code == 404


def test_random_seeds_are_incremented_per_job_and_a_failed_jobs_seed_goes_to_the_next_job(grid, work_queue, ready_task):
    # seed 002 "Random seed assignment": initial value 100, one per job; a job that failed gives its seed back
    task = ready_task(work_queue, files=6, randomSeed=100, nScoutJobs=3)
    run(work_queue)
    scouts = list(Job.objects.filter(task=task).order_by("pk").values_list("pk", "randomSeed"))
    assert [seed for _, seed in scouts] == [100, 101, 102]
    failed = scouts[1][0]
    job_status_transition_many(from_status="assigned", to_status="failed", job_ids=[failed], now=NOW)
    Task.objects.filter(pk=task.pk).update(status="running")
    DatasetFile.objects.filter(PandaID=failed).update(status="ready", PandaID=None)
    run(work_queue, now=NOW + timedelta(minutes=1))
    later = list(
        Job.objects.filter(task=task, pk__gt=scouts[-1][0]).order_by("pk").values_list("randomSeed", flat=True)
    )
    assert later[:2] == [101, 103]  # 101 again (its job failed), then a new one after the largest given
    assert len(later) == len(set(later))


def test_the_seed_pool_gives_back_only_seeds_every_job_of_which_ended_badly():
    from brokerage.splitter import random_seeds

    pool = random_seeds(first=100, used=[(100, "finished"), (101, "failed"), (102, "closed"), (102, "running")])
    assert [pool.take() for _ in range(3)] == [101, 103, 104]  # 102 runs again in another job: not free
    assert random_seeds(first=7, used=[]).take() == 7


def test_a_jobs_random_seed_on_its_page_and_in_the_api(client):
    job = factories.JobFactory(randomSeed=4242)
    assert "<dt>Random seed</dt><dd>4242</dd>" in client.get(f"/jobs/{job.pk}/").content.decode()
    assert client.get(f"/api/v1/jobs/{job.pk}/").json()["randomSeed"] == 4242
    assert "Random seed" not in client.get(f"/jobs/{factories.JobFactory().pk}/").content.decode()


def shares_with_mc16_over_target(work_queue, ready_task):
    """Global shares MC 16 (60) and Reprocessing (40). MC 16 runs 10 jobs of 100 HS06, Reprocessing 2 with 3
    activated: 1,200 HS06 executing, targets 720 and 480; MC 16 is over (1,000) while Reprocessing (200) is below
    with jobs waiting to take the slots."""
    factories.GlobalShareFactory(name="MC 16", value=60)
    factories.GlobalShareFactory(name="Reprocessing", value=40)
    old = ready_task(work_queue)
    Task.objects.filter(pk=old.pk).update(status="done")
    for gshare, status, count in (
        ("MC 16", "running", 10),
        ("Reprocessing", "running", 2),
        ("Reprocessing", "activated", 3),
    ):
        for _ in range(count):
            factories.JobFactory(task=old, workQueue=work_queue, jobStatus=status, gshare=gshare, hs06=100)


def test_a_share_over_its_target_gets_no_new_jobs_and_its_tasks_say_why(grid, work_queue, ready_task):
    shares_with_mc16_over_target(work_queue, ready_task)
    held = ready_task(work_queue)  # gshare MC 16
    urgent = ready_task(work_queue)
    Task.objects.filter(pk=urgent.pk).update(processingType="urgent")
    cycle = run(work_queue)
    # the urgent task "also ignores fairshare" (seed 002): its scouts; the other MC 16 task none
    assert Job.objects.filter(task=urgent).count() == 10
    assert not Job.objects.filter(task=held).exists()
    decision = Decision.objects.get(cycle=cycle, outcome="throttled")
    assert decision.message == "global share MC 16 runs 1,000 HS06 over a target of 720: no new jobs"
    code, detail = task_generation_hold(held, now=NOW + timedelta(seconds=30))
    assert code == "throttle_share_over_target"
    assert explain(code, detail) == (
        "The global share MC 16 runs 1000 HS06 over its target of 720 HS06 (60 % of what the grid runs, idle "
        "shares lent included): no new jobs until it is back under its target."
    )
    urgent.refresh_from_db()
    assert task_generation_hold(urgent, now=NOW) is None


def test_the_panda_profile_allocates_no_share_at_generation(grid, work_queue, ready_task):
    shares_with_mc16_over_target(work_queue, ready_task)
    GdpConfig.objects.create(key="SHARE_ALLOCATION_RULE", value="panda", component="prod_job_throttler", app="jedi")
    gdpconfig_cache_clear()
    task = ready_task(work_queue)
    cycle = run(work_queue)
    assert Job.objects.filter(task=task).count() == 10
    assert not Decision.objects.filter(cycle=cycle, outcome="throttled").exists()


def test_the_shares_page_lists_the_shares_held_back(client, grid, work_queue, ready_task):
    from django.utils import timezone

    shares_with_mc16_over_target(work_queue, ready_task)
    ready_task(work_queue)
    cycle = run(work_queue, now=timezone.now())
    page = client.get("/shares/").content.decode()
    decision = Decision.objects.get(cycle=cycle, outcome="throttled")
    assert f'href="/decisions/{decision.pk}/">global share MC 16 runs 1,000 HS06 over a target of 720' in page


def test_the_admins_what_if_shows_a_share_change_before_it_is_saved(admin_client_logged, grid, work_queue, ready_task):
    shares_with_mc16_over_target(work_queue, ready_task)
    mc16 = GlobalShare.objects.get(name="MC 16")
    url = reverse("admin:brokerage_globalshare_what_if")
    # MC 16 raised from 60 to 90 (of 130): 69.2 %, a target of 831 HS06 of the 1,200 executing; still over at 1,000
    answer = admin_client_logged.post(url, {"name": "MC 16", "value": "90"}, headers={"X-Requested-With": "fetch"})
    page = answer.content.decode()
    assert answer.status_code == 200
    assert "<td>60.0</td><td>69.2</td>" in page
    assert "<td>720</td><td>831</td>" in page
    assert "global share MC 16 runs 1,000 HS06 over a target of 831: no new jobs" in page
    # raised to 200 (of 240): 83.3 %, 1,000 of a target of 1,000 is not over: no longer held
    page = admin_client_logged.post(url, {"name": "MC 16", "value": "200"}).content.decode()
    assert "<td>720</td><td>1,000</td>\n<td>global share MC 16 runs 1,000 HS06 over a target of 720" in page
    assert "no new jobs</td><td>no</td></tr>" in page
    # nothing was saved; a value that is no number is said so, never a 500
    mc16.refresh_from_db()
    assert mc16.value == 60
    answer = admin_client_logged.post(url, {"name": "MC 16", "value": "lots"})
    assert answer.status_code == 200
    assert "must be a number of 0 or more: &#x27;lots&#x27;" in answer.content.decode()
    # a work queue given a share: throttled from then on, the only one of its type, so 100 % of it
    page = admin_client_logged.post(
        reverse("admin:brokerage_workqueue_what_if"), {"queue_name": "MC_16", "queue_share": "20"}
    ).content.decode()
    assert "<td>work queue <strong>MC_16</strong></td><td>1,200</td>\n<td>—</td><td>100.0</td>" in page
    # the change form carries the what-if
    assert (
        'id="what-if-run"'
        in admin_client_logged.get(reverse("admin:brokerage_globalshare_change", args=[mc16.pk])).content.decode()
    )


def test_a_task_with_a_preprocess_job_runs_it_first_then_its_own_jobs(grid, work_queue, ready_task):
    from brokerage.services.progress import task_refine

    # seed 002: topreprocess "preprocess job is ready for the task", preprocessing "preprocess job is running"
    task = ready_task(work_queue, files=4, status="defined", nScoutJobs=0, preproSpec={"transPath": "prepro.py"})
    assert task_refine(now=NOW)["assigning"] == [task.pk]  # nucleus NUC preset: no task brokerage
    task.refresh_from_db()
    assert task.status == "topreprocess"
    run(work_queue)
    (job,) = Job.objects.filter(task=task)
    assert (job.specialHandling, job.coreCount, job.maxAttempt, job.nInputFiles, job.jobName.split(".")[-1]) == (
        "preprocess", 1, 1, 0, "preprocess"
    )  # fmt: skip
    task.refresh_from_db()
    assert task.status == "preprocessing"
    run(work_queue, NOW + timedelta(minutes=1))  # nothing else while it runs
    assert Job.objects.filter(task=task).count() == 1
    # the preprocess job finishes: the task is defined again, preprocessed, and refined into its own four jobs
    for source, target in (("assigned", "activated"), ("activated", "starting"), ("starting", "running"),
                           ("running", "finished")):  # fmt: skip
        job_status_transition_many(from_status=source, to_status=target, job_ids=[job.pk], now=NOW)
    moved = task_refine(now=NOW + timedelta(minutes=2))
    assert (moved["defined"], moved["assigning"]) == ([task.pk], [task.pk])
    task.refresh_from_db()
    assert (task.status, task.taskParams["preprocessed"]) == ("ready", True)
    run(work_queue, NOW + timedelta(minutes=3))
    assert Job.objects.filter(task=task, specialHandling="").count() == 4
    assert list(TaskStatusLog.objects.filter(task=task).values_list("new_status", flat=True)) == [
        "topreprocess", "preprocessing", "defined", "ready", "running"
    ]  # fmt: skip


def test_a_failed_preprocess_job_breaks_its_task(grid, work_queue, ready_task):
    from brokerage.services.progress import task_refine

    task = ready_task(work_queue, files=2, status="defined", preproSpec={"transPath": "prepro.py"})
    task_refine(now=NOW)
    run(work_queue)
    job = Job.objects.get(task=task)
    job_status_transition_many(from_status="assigned", to_status="failed", job_ids=[job.pk], now=NOW)
    assert task_refine(now=NOW + timedelta(minutes=1))["broken"] == [task.pk]
    task.refresh_from_db()
    assert (task.status, task.errorDialog) == ("broken", "preprocess job failed")


def partition_of_two(work_queue):
    """Partition P of sub-queues A (work_queue) and B, throttled as one (a share); the normal MC_16 outside it."""
    partition = factories.WorkQueueFactory(queue_name="P", is_partition=True, queue_share=None)
    other = factories.WorkQueueFactory(queue_name="B", partition=partition, queue_share=None, criteria="")
    WorkQueue = type(work_queue)
    WorkQueue.objects.filter(pk=work_queue.pk).update(partition=partition)
    work_queue.refresh_from_db()
    return partition, work_queue, other


def test_a_partitions_sub_queues_are_generated_together_by_priority(grid, work_queue, ready_task):
    # seed 002: "tasks in the partition queue are submitted together regardless of sub queues"
    from brokerage.services.jobs import job_generation_dispatch

    outside = factories.WorkQueueFactory(queue_name="OUTSIDE", queue_share=None)
    partition, first, second = partition_of_two(work_queue)
    low = ready_task(first, priority=500, nScoutJobs=0)
    high = ready_task(second, priority=900, nScoutJobs=0)
    assert job_generation_dispatch(now=NOW) == sorted([outside.pk, partition.pk])
    cycle = job_generation_cycle_run(work_queue_id=partition.pk, now=NOW)
    # both tasks got their job set in the one cycle, the higher first; each job in its own task's sub-queue
    sets = list(Decision.objects.filter(cycle=cycle, task__isnull=False).order_by("jobsetID").values_list("task_id"))
    assert sets == [(high.pk,), (low.pk,)]
    assert set(Job.objects.values_list("task_id", "workQueue_id").distinct()) == {
        (high.pk, second.pk),
        (low.pk, first.pk),
    }


def test_a_partition_is_throttled_on_the_jobs_of_all_its_sub_queues(grid, work_queue, ready_task):
    partition, first, second = partition_of_two(work_queue)
    throttle(partition, NQUEUELIMIT=5)
    # 3 jobs queued in each sub-queue: 6 in the partition, over its limit of 5, although each sub-queue has 3
    queued_jobs(first, ready_task, count=3, priority=900)
    queued_jobs(second, ready_task, count=3, priority=900)
    task = ready_task(second, priority=500)
    cycle = job_generation_cycle_run(work_queue_id=partition.pk, now=NOW)
    assert not Job.objects.filter(task=task).exists()
    assert "queued=6" in Decision.objects.get(cycle=cycle, outcome="throttled").message
    # the task's page finds the partition's verdict
    assert task_generation_hold(task, now=NOW + timedelta(seconds=60))[0] == "throttle_no_running_enough_queued"


def test_secondary_inputs_go_with_the_master_files_and_into_the_brokerage(grid, work_queue, ready_task):
    # a task of 4 master files with a pile-up secondary of ratio=2 (8 files) and a nosplit conditions dataset
    # (2 files): each job takes 1 master file, its 2 pile-up files, and reads both conditions files
    from brokerage.services.retries import job_inputs_after_end

    task = ready_task(work_queue, files=4, nScoutJobs=0)
    master = Dataset.objects.get(task=task)
    made = {}
    for name, attributes, count in (("pileup", "ratio=2", 8), ("conditions", "nosplit", 2)):
        made[name] = factories.DatasetFactory(
            task=task, type="input", master=master, status="ready", nFiles=count, attributes=attributes,
            datasetName=f"{name}.{task.pk}",
        )  # fmt: skip
        DatasetFile.objects.bulk_create(
            DatasetFile(dataset=made[name], task=task, lfn=f"{name}.{i}", type="input", fsize=GB) for i in range(count)
        )
        factories.DatasetReplicaFactory(
            datasetName=made[name].datasetName, endpoint=StorageEndpoint.objects.get(name="NUC_DATADISK"),
            nFiles=count, sizeGB=float(count),
        )  # fmt: skip
    cycle = run(work_queue)
    jobs = list(Job.objects.filter(task=task).order_by("pk"))
    assert len(jobs) == 4
    pileup = DatasetFile.objects.filter(dataset=made["pileup"]).order_by("pk")
    assert [row.PandaID for row in pileup] == [job.pk for job in jobs for _ in range(2)]
    assert set(pileup.values_list("status", flat=True)) == {"picked"}
    # the conditions files are read by every job and used up by none
    assert set(DatasetFile.objects.filter(dataset=made["conditions"]).values_list("status", "PandaID")) == {
        ("ready", None)
    }
    # 2 GB master + 2 GB pile-up + 2 GB conditions per job
    assert {job.inputFileBytes for job in jobs} == {6 * GB}
    # the brokerage saw the secondaries' replicas
    inputs = decision_trace_inputs(Decision.objects.get(cycle=cycle, task=task))
    assert [(d["name"], d["master"]) for d in inputs["datasets"]] == [
        (master.datasetName, True),
        (made["pileup"].datasetName, False),
        (made["conditions"].datasetName, False),
    ]
    # a failed job gives its pile-up files back for the next attempt; a finished one finishes them
    job_inputs_after_end(finished=[jobs[0].pk], failed=[jobs[1].pk], now=NOW)
    assert list(pileup.values_list("status", flat=True)) == ["finished"] * 2 + ["ready"] * 2 + ["picked"] * 4


def decision_trace_inputs(decision):
    from brokerage.selectors.inputs import decision_inputs

    return decision_inputs(decision=decision)
