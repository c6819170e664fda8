"""The watchdog over the database: timeouts applied with their summary, a paused queue, fast rebrokerage,
reattempts with their retry history, and memory raised after out-of-memory failures."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import (
    DatasetFile,
    GdpConfig,
    Job,
    JobRetryHistory,
    JobStatusLog,
    JobTimeoutSummary,
    PandaQueue,
    Task,
)
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from brokerage.selectors.timeouts import job_timeout_states
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.retries import job_inputs_after_end
from brokerage.services.simulator import grid_simulate_step
from brokerage.services.status import job_status_transition_many
from brokerage.services.watchdog import job_fast_rebrokerage, job_timeout_apply
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def jobs_at(queue, status, count, *, changed, task=None, heartbeat=None, priority=500, gshare="MC 16"):
    task = task or factories.TaskFactory(status="running")
    return [
        factories.JobFactory(
            task=task,
            computingSite=queue.name,
            jobStatus=status,
            stateChangeTime=changed,
            modificationTime=heartbeat or changed,
            currentPriority=priority,
            gshare=gshare,
        )
        for _ in range(count)
    ]


def test_timeouts_close_or_fail_jobs_and_summarise_per_queue_and_rule():
    queue = factories.PandaQueueFactory(name="Q1")
    late = jobs_at(queue, "assigned", 2, changed=NOW - timedelta(hours=12))  # exactly 12 h: timed out
    soon = jobs_at(queue, "assigned", 1, changed=NOW - timedelta(hours=11, minutes=30))  # 30 min left
    fine = jobs_at(queue, "assigned", 1, changed=NOW - timedelta(hours=1))
    silent = jobs_at(
        queue, "running", 1, changed=NOW - timedelta(hours=5), heartbeat=NOW - timedelta(hours=2, seconds=1)
    )
    result = job_timeout_apply(now=NOW)
    assert result.closed == sorted(j.pk for j in late)
    assert result.failed == [silent[0].pk]
    assert result.watched == 5
    assert set(Job.objects.filter(pk__in=[j.pk for j in soon + fine]).values_list("jobStatus", flat=True)) == {
        "assigned"
    }
    log = JobStatusLog.objects.filter(job=late[0]).latest("pk")
    assert (log.old_status, log.new_status, log.reason, log.actor) == (
        "assigned",
        "closed",
        "timeout: assigned for 12 h",
        "watchdog",
    )
    assert Job.objects.get(pk=silent[0].pk).taskBufferErrorDiag == "timeout: no heartbeat for 2 h"
    summary = {
        (s.rule, s.watched, s.approaching, s.timed_out) for s in JobTimeoutSummary.objects.filter(computingSite="Q1")
    }
    assert summary == {("assigned", 4, 1, 2), ("heartbeat", 1, 0, 1)}


def test_time_left_is_one_call_away_for_the_monitor():
    queue = factories.PandaQueueFactory(name="Q1")
    (job,) = jobs_at(queue, "sent", 1, changed=NOW - timedelta(minutes=20))
    state = job_timeout_states(job_ids=[job.pk], now=NOW)[job.pk]
    assert (state.rule, state.left, state.timed_out, state.sentence) == (
        "sent",
        timedelta(minutes=10),
        False,
        "sent for 30 min",
    )


def test_gdpconfig_changes_the_limits():
    GdpConfig.objects.create(key="TIMEOUT_ASSIGNED", value="1", component="watcher", app="pandaserver")
    gdpconfig_cache_clear()
    queue = factories.PandaQueueFactory(name="Q1")
    (job,) = jobs_at(queue, "assigned", 1, changed=NOW - timedelta(hours=1))
    assert job_timeout_apply(now=NOW).closed == [job.pk]


def test_a_queue_that_goes_paused_stops_timing_out_its_jobs(grid, work_queue, ready_task):
    # end to end, bounded: jobs generated and activated at SAT_Q, whose pilots never come (no slots)
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 0})
    task = ready_task(work_queue, files=4, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    grid_simulate_step(now=NOW + timedelta(minutes=5), speed=1)
    assert Job.objects.filter(task=task, jobStatus="activated").count() == 4
    # the queue is paused after an hour; two days later nothing has timed out
    PandaQueue.objects.filter(pk=grid.pk).update(status="paused")
    assert job_timeout_apply(now=NOW + timedelta(days=2, hours=1)).closed == []
    assert Job.objects.filter(task=task, jobStatus="activated").count() == 4
    assert not JobTimeoutSummary.objects.filter(computingSite="SAT_Q").exists()  # not even watched
    # back online: the 2-day activated rule applies again at once
    PandaQueue.objects.filter(pk=grid.pk).update(status="online")
    closed = job_timeout_apply(now=NOW + timedelta(days=2, hours=2)).closed
    assert len(closed) == 4
    # their files come back for a second attempt
    assert set(DatasetFile.objects.filter(task=task).values_list("status", "attemptNr")) == {("ready", 1)}


def test_reattempts_raise_attempt_numbers_and_record_the_chain(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=1, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    first = Job.objects.get(task=task)
    assert first.attemptNr == 1
    for attempt, when in ((1, NOW + timedelta(hours=1)), (2, NOW + timedelta(hours=2))):
        job = Job.objects.filter(task=task).latest("pk")
        job_status_transition_many(from_status="assigned", to_status="closed", job_ids=[job.pk], now=when)
        job_inputs_after_end(finished=[], failed=[], closed=[job.pk], now=when)
        file = DatasetFile.objects.get(task=task)
        assert (file.status, file.attemptNr) == ("ready", attempt)
        job_generation_cycle_run(work_queue_id=work_queue.pk, now=when)
    second, third = Job.objects.filter(task=task).order_by("pk")[1:]
    assert (second.attemptNr, third.attemptNr) == (2, 3)
    history = list(
        JobRetryHistory.objects.order_by("pk").values_list("oldPandaID", "newPandaID", "relationType", "originPandaID")
    )
    assert history == [(first.pk, second.pk, "retry", first.pk), (second.pk, third.pk, "retry", first.pk)]
    # the third attempt closes too: maxAttempt 3 is used up, the file fails and no fourth job comes
    job_status_transition_many(
        from_status="assigned", to_status="closed", job_ids=[third.pk], now=NOW + timedelta(hours=3)
    )
    job_inputs_after_end(finished=[], failed=[], closed=[third.pk], now=NOW + timedelta(hours=3))
    assert DatasetFile.objects.get(task=task).status == "failed"
    assert job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW + timedelta(hours=4)).n_decisions == 0


def test_out_of_memory_raises_the_next_job_and_then_the_task(grid, work_queue, ready_task):
    # given a task of 2000 MB per core on 8 cores, whose job failed for memory with 20 GB of PSS (2500 per core)
    task = ready_task(work_queue, files=3, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    jobs = list(Job.objects.filter(task=task).order_by("pk"))
    ids = [j.pk for j in jobs]
    for source, target in (("assigned", "activated"), ("activated", "starting"), ("starting", "running")):
        job_status_transition_many(from_status=source, to_status=target, job_ids=ids, now=NOW)
    job_status_transition_many(
        from_status="running", to_status="failed", job_ids=[ids[0]], now=NOW, columns={"pilotErrorCode": 1212}
    )
    Job.objects.filter(pk=ids[0]).update(maxPSS=20000 * 1024)
    job_status_transition_many(from_status="running", to_status="finished", job_ids=ids[1:], now=NOW)
    job_inputs_after_end(finished=ids[1:], failed=[ids[0]], now=NOW)
    # then its file asks for the next step above max(2500, 2000) per core: 3000; 1 of 3 jobs (33 %) failed for
    # memory, so the task's ramCount is raised as well
    retried = DatasetFile.objects.get(PandaID=ids[0])
    assert (retried.status, retried.ramCount) == ("ready", 3000)
    assert Task.objects.get(pk=task.pk).ramCount == 3000
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW + timedelta(hours=1))
    assert Job.objects.filter(task=task).latest("pk").minRamCount == 3000


def test_fast_rebrokerage_closes_the_excess_with_worked_numbers():
    # thresholds: nQueue/nRun > 3, nQueue/nQueue_total > 0.3, nQueue > 50 for gshare MC 16
    GdpConfig.objects.create(
        key="FAST_REBRO_THRESHOLD_NQUEUE_MC 16", value="50", component="watcher", app="pandaserver"
    )
    gdpconfig_cache_clear()
    busy, other, harvester = (factories.PandaQueueFactory(name=n) for n in ("BUSY", "OTHER", "HARVESTED"))
    factories.QueuePilotStatsFactory(queue=harvester, numSlots=100)
    jobs_at(busy, "activated", 120, changed=NOW)
    jobs_at(busy, "running", 20, changed=NOW)
    jobs_at(other, "activated", 80, changed=NOW)
    jobs_at(harvester, "activated", 500, changed=NOW)  # skipped: Harvester slots
    jobs_at(other, "activated", 300, changed=NOW, gshare="Express")  # no threshold for Express
    cuts = job_fast_rebrokerage(now=NOW)
    # BUSY: 120/20 = 6 > 3, 120/700 = 0.17 … not above 0.3, so nothing: the total includes HARVESTED's 500
    assert cuts == []
    Job.objects.filter(computingSite="HARVESTED").delete()
    # now BUSY: 120/200 = 0.6 > 0.3 and 120 > 50: allowed = max(50, 3 × 20, ceil(0.3 × 200)) = 60, 60 closed;
    # OTHER: no job running, 80/200 = 0.4 > 0.3, 80 > 50: allowed 60, 20 closed
    busy_cut, other_cut = sorted(job_fast_rebrokerage(now=NOW), key=lambda cut: cut.queue)
    assert (busy_cut.queue, busy_cut.gshare, busy_cut.n_queue, busy_cut.n_running, busy_cut.n_queue_total) == (
        "BUSY",
        "MC 16",
        120,
        20,
        200,
    )
    assert (busy_cut.allowed, len(busy_cut.closed)) == (60, 60)
    assert (other_cut.queue, other_cut.allowed, len(other_cut.closed)) == ("OTHER", 60, 20)
    assert Job.objects.filter(computingSite="BUSY", jobStatus="activated").count() == 60
    assert Job.objects.filter(computingSite="OTHER", gshare="Express", jobStatus="activated").count() == 300
    reason = JobStatusLog.objects.filter(job_id=busy_cut.closed[0]).latest("pk").reason
    assert reason.startswith("fast rebrokerage: nQueue 120 / nRun 20 > 3")


def test_the_watchdog_task_runs_one_pass():
    from brokerage.tasks import watchdog_task

    queue = factories.PandaQueueFactory(name="Q1")
    jobs_at(queue, "sent", 2, changed=NOW - timedelta(days=1))
    result = watchdog_task()
    assert (result["watched"], result["closed"], result["failed"], result["rebrokered"]) == (2, 2, 0, 0)


def test_a_retried_job_reuses_its_random_seed(grid, work_queue, ready_task):
    # an evgen-like task whose master input is a pseudo dataset of random seeds (seed 002: pseudo inputs carry
    # random seeds); its job is closed, and the job that replaces it runs with the same seed
    task = ready_task(work_queue, files=0, nScoutJobs=0)
    seeds = factories.DatasetFactory(task=task, type="pseudo_input", status="ready", nFiles=2, datasetName="seed")
    for number in (101, 102):
        factories.DatasetFileFactory(dataset=seeds, lfn=f"seed.{number}", fsize=0, nEvents=None, maxAttempt=3)
    DatasetFile.objects.filter(task=task, type="input").delete()
    task.datasets.filter(type="input").delete()
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    first = Job.objects.filter(task=task).order_by("pk").first()
    seed_of_first = DatasetFile.objects.get(PandaID=first.pk).lfn
    job_status_transition_many(from_status="assigned", to_status="closed", job_ids=[first.pk], now=NOW)
    job_inputs_after_end(finished=[], failed=[], closed=[first.pk], now=NOW)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW + timedelta(hours=1))
    retry = JobRetryHistory.objects.get(oldPandaID=first.pk)
    assert DatasetFile.objects.get(PandaID=retry.newPandaID).lfn == seed_of_first
    assert Job.objects.get(pk=retry.newPandaID).attemptNr == 2


def test_approaching_is_an_hour_of_grid_time_when_the_demo_grid_runs_faster(settings):
    # issue 50: at 60 grid minutes per real minute, "< 1 h left" in real hours held 243 of 244 watched jobs
    settings.GRID_SIMULATOR, settings.GRID_SIMULATOR_SPEED = True, 60
    queue = factories.PandaQueueFactory(name="Q1")
    # assigned: 12 grid hours = 12 real minutes; 30 grid minutes left (30 real s) is approaching, 3 grid h is not
    soon = jobs_at(queue, "assigned", 1, changed=NOW - timedelta(minutes=11, seconds=30))
    later = jobs_at(queue, "assigned", 2, changed=NOW - timedelta(minutes=9))
    job_timeout_apply(now=NOW)
    (summary,) = JobTimeoutSummary.objects.filter(computingSite="Q1")
    assert (summary.watched, summary.approaching, summary.timed_out) == (len(soon + later), 1, 0)
