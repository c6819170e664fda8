"""A demo that keeps moving (issue 18): the grid's clock for the waits the system imposes, the stories that reach
failed, throttled, broken, exhausted, finished and done within minutes, downtimes that end, links that drain,
DIRAC's pilots, and new work arriving as the old ends."""

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Count
from django.test import override_settings

from brokerage.grid_clock import grid_minutes, grid_speed
from brokerage.models import (
    DatasetFile,
    DiracJob,
    DiracMatchRecord,
    Job,
    NetworkLink,
    PandaQueue,
    Task,
    TaskStatusLog,
)
from brokerage.selectors.tasks import task_headline
from brokerage.services.cycles import task_pending_retry
from brokerage.services.demo_cadence import demo_cadence_run
from brokerage.services.demo_dirac import PILOTS, dirac_demo_jobs
from brokerage.services.demo_grid import demo_grid_build
from brokerage.services.demo_stories import STORIES
from brokerage.services.dirac import dirac_jobs_submit
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.simulator import (
    CRASH,
    DIRAC_BACKLOG,
    INFLOW_ACTIVE,
    INFLOW_BATCH,
    LINK_DRAIN_PER_MINUTE,
    dirac_pilots_simulate,
    grid_simulate_step,
)
from brokerage.services.task_commands import task_watch
from tests import factories
from tests.engine.builders import nucleus, task_scenario

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


@pytest.fixture
def demo_clock(settings):
    """The demo's settings (scripts/run.sh): the simulator on at 60 grid minutes per real minute."""
    settings.GRID_SIMULATOR = True
    settings.GRID_SIMULATOR_SPEED = 60
    return settings


# --- the grid's clock ---


def test_the_grid_clock_is_the_wall_clock_outside_the_demo(settings):
    settings.GRID_SIMULATOR = False
    settings.GRID_SIMULATOR_SPEED = 60  # ignored: no simulator, no time-lapse
    assert grid_speed() == 1.0
    assert grid_minutes(30) == timedelta(minutes=30)


def test_the_demo_clock_runs_at_the_simulator_speed(demo_clock):
    assert grid_minutes(30) == timedelta(seconds=30)
    assert grid_minutes(120) == timedelta(minutes=2)
    demo_clock.GRID_SIMULATOR_SPEED = 0.5  # never slower than the wall clock
    assert grid_minutes(30) == timedelta(minutes=30)


def _pending(*, since: datetime, old: str = "assigning", label: str = "managed") -> Task:
    return factories.TaskFactory(status="pending", oldStatus=old, stateChangeTime=since, prodSourceLabel=label)


def test_a_pending_task_comes_back_after_30_grid_minutes(demo_clock):
    # at speed 60, 30 grid minutes after a failed task brokerage are 30 real seconds
    due = _pending(since=NOW - timedelta(seconds=30))
    early = _pending(since=NOW - timedelta(seconds=29))
    analysis = _pending(since=NOW - timedelta(seconds=20), old="ready", label="user")  # 20 min after job brokerage
    production = _pending(since=NOW - timedelta(seconds=59), old="ready")  # 60 min for production: not yet
    assert sorted(task_pending_retry(now=NOW)) == sorted([due.pk, analysis.pk])
    assert Task.objects.get(pk=early.pk).status == "pending"
    assert Task.objects.get(pk=production.pk).status == "pending"
    assert Task.objects.get(pk=due.pk).status == "assigning"


def test_outside_the_demo_the_same_task_waits_the_full_30_minutes(settings):
    settings.GRID_SIMULATOR = False
    task = _pending(since=NOW - timedelta(seconds=30))
    assert task_pending_retry(now=NOW) == []
    assert task_pending_retry(now=NOW + timedelta(minutes=30)) == [task.pk]


def test_the_headline_shows_when_the_task_really_comes_back(demo_clock):
    # a decision 10 s ago that left the task pending for 30 grid minutes: back in 20 s, at 12:00:20
    task = factories.TaskFactory(status="pending")
    decision = factories.stored_decision(task=task, scenario=task_scenario(nucleus("A", state="DISABLED")))
    assert (decision.outcome, decision.retry_after_minutes) == ("pending", 30)
    type(decision).objects.filter(pk=decision.pk).update(created=NOW - timedelta(seconds=10))
    decision.refresh_from_db()
    headline = task_headline(task, [{"decision": decision}], now=NOW)
    assert headline["next_try"]["at"] == NOW + timedelta(seconds=20)
    assert headline["next_try"]["in"] == timedelta(seconds=20)
    assert headline["release"] is None


def test_a_throttled_task_is_released_after_its_period_on_the_grid_clock(demo_clock):
    # throttled at the fifth attempt: 120 grid minutes, 2 real minutes at speed 60
    task = factories.TaskFactory(status="throttled", oldStatus="running", throttledTime=NOW, numThrottled=1)
    headline = task_headline(task, [], now=NOW + timedelta(seconds=30))
    assert headline["release"] == {
        "at": NOW + timedelta(minutes=2),
        "due": False,
        "in": timedelta(seconds=90),
        "to": "running",
    }
    assert "released" not in task_watch(now=NOW + timedelta(seconds=119))
    assert task_watch(now=NOW + timedelta(minutes=2))["released"] == [task.pk]


def test_the_pending_timeout_is_grid_time_too(demo_clock):
    # TASK_PENDING_TIMEOUT 72 h of grid time: 72 real minutes at speed 60
    task = factories.TaskFactory(status="pending", oldStatus="assigning", brokeragePendingSince=NOW)
    assert "exhausted" not in task_watch(now=NOW + timedelta(minutes=71))
    assert task_watch(now=NOW + timedelta(minutes=72))["exhausted"] == [task.pk]


# --- the simulator's world ---


def test_a_downtime_ends_on_time():
    site = factories.SiteFactory(name="SITE")
    over = factories.PandaQueueFactory(
        name="BACK", site=site, status="brokeroff", cric={"demo_back_at": (NOW - timedelta(seconds=1)).isoformat()}
    )
    later = factories.PandaQueueFactory(
        name="LATER", site=site, status="offline", cric={"demo_back_at": (NOW + timedelta(minutes=1)).isoformat()}
    )
    grid_simulate_step(now=NOW, speed=60)
    assert PandaQueue.objects.get(pk=over.pk).status == "online"
    assert PandaQueue.objects.get(pk=over.pk).cric["status"] == "online"
    assert PandaQueue.objects.get(pk=later.pk).status == "offline"


def test_full_links_drain_three_files_per_grid_minute():
    # 10 real seconds at speed 60 are 10 grid minutes: 300 queued files lose 30
    link = factories.NetworkLinkFactory(queued=300, updated=NOW - timedelta(seconds=10))
    empty = factories.NetworkLinkFactory(queued=20, updated=NOW - timedelta(minutes=5))
    grid_simulate_step(now=NOW, speed=60)
    link.refresh_from_db()
    assert LINK_DRAIN_PER_MINUTE == 3
    assert (link.queued, link.updated) == (270, NOW)
    assert NetworkLink.objects.get(pk=empty.pk).queued == 0  # never negative


def test_a_story_task_crashes_like_a_bad_release(grid, work_queue, ready_task, monkeypatch):
    # the story's payload: every job fails after 3 grid minutes with the transform's crash, never out of memory.
    # Every pilot lives to its job's end here: the simulator loses one in LOST_PILOT_ONE_IN by PandaID, and on
    # PostgreSQL the IDs follow the tests run before (sequences do not roll back): a fresh clone's run drew one
    monkeypatch.setattr("brokerage.services.simulator.pilot_lost", lambda pk: False)
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 50, "demo_failure_percent": 0})
    task = ready_task(work_queue, files=4, nScoutJobs=0, demoRunMinutes=3, demoFailurePercent=100)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    grid_simulate_step(now=NOW + timedelta(seconds=5), speed=60)
    assert grid_simulate_step(now=NOW + timedelta(seconds=7), speed=60).failed == 0  # 2 grid minutes: still running
    report = grid_simulate_step(now=NOW + timedelta(seconds=8), speed=60)
    assert report.failed == 4
    errors = set(Job.objects.filter(task=task).values_list("pilotErrorCode", "exeErrorCode", "exeErrorDiag"))
    assert errors == {(CRASH["pilotErrorCode"], 65, "Non-zero return code from the transform (65)")}


def test_a_story_task_fails_on_its_first_files_every_run(grid, work_queue, ready_task, monkeypatch):
    # demoFailingFiles: 2: the jobs of the first two of its four files fail, the others finish, whatever the draw
    monkeypatch.setattr("brokerage.services.simulator.pilot_lost", lambda pk: False)
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 50, "demo_failure_percent": 0})
    task = ready_task(work_queue, files=4, nScoutJobs=0, demoRunMinutes=3, demoFailurePercent=0, demoFailingFiles=2)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    grid_simulate_step(now=NOW + timedelta(seconds=5), speed=60)
    assert grid_simulate_step(now=NOW + timedelta(seconds=8), speed=60).failed == 2
    # the two others ended well: their outputs hold (then transfer) before they finish
    status = dict(Job.objects.filter(task=task).values_list("pk", "jobStatus"))
    ended = DatasetFile.objects.filter(task=task).order_by("pk").values_list("failedAttempt", "PandaID")
    assert [(failures, status[job] == "failed") for failures, job in ended] == [(1, 1), (1, 1), (0, 0), (0, 0)]


def test_a_story_tasks_first_pilots_die_after_taking_their_jobs(grid, work_queue, ready_task, monkeypatch):
    # demoLostAtDispatch: the first attempts stay sent; the watchdog closes them after TIMEOUT_SENT (30 grid
    # minutes: 30 s at 60×); the files' second attempts start
    from brokerage.services.watchdog import job_timeout_apply

    monkeypatch.setattr("brokerage.services.simulator.pilot_lost", lambda pk: False)
    PandaQueue.objects.filter(pk=grid.pk).update(cric={"demo_slots": 50, "demo_failure_percent": 0})
    task = ready_task(work_queue, files=2, nScoutJobs=0, demoRunMinutes=3, demoLostAtDispatch=True)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    assert grid_simulate_step(now=NOW + timedelta(seconds=5), speed=60).started == 0
    assert set(Job.objects.filter(task=task).values_list("jobStatus", flat=True)) == {"sent"}
    with override_settings(GRID_SIMULATOR=True, GRID_SIMULATOR_SPEED=60):
        assert job_timeout_apply(now=NOW + timedelta(seconds=34)).closed == []
        assert len(job_timeout_apply(now=NOW + timedelta(seconds=36)).closed) == 2
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW + timedelta(seconds=40))
    grid_simulate_step(now=NOW + timedelta(seconds=45), speed=60)
    again = Job.objects.filter(task=task, attemptNr=2)
    assert set(again.values_list("jobStatus", flat=True)) == {"running"}
    assert again.count() == 2


# --- DIRAC's pilots ---


def test_dirac_pilots_match_run_and_end_jobs():
    dirac_jobs_submit(jobs=dirac_demo_jobs(random.Random(1), 150), now=NOW)
    matched, ended = dirac_pilots_simulate(now=NOW, minute=timedelta(seconds=1))
    # every site's pilots ask up to 4 times; the old EL7 site runs only users' short jobs that name no platform
    assert ended == 0
    assert 0 < matched <= 4 * len(PILOTS)
    sites = set(DiracJob.objects.filter(status="Matched").values_list("site", flat=True))
    assert "LCG.CERN.cern" in sites
    assert set(DiracJob.objects.filter(site="LCG.JINR.ru").values_list("ownerGroup", flat=True)) <= {"lhcb_user"}
    # a grid minute later the matched jobs run; after their run time (at most 150 grid minutes) they end
    dirac_pilots_simulate(now=NOW + timedelta(seconds=61), minute=timedelta(seconds=1))
    assert not DiracJob.objects.filter(status="Matched", matchTime=NOW).exists()
    first = set(DiracJob.objects.filter(matchTime=NOW).values_list("pk", flat=True))
    _, ended = dirac_pilots_simulate(now=NOW + timedelta(seconds=61 + 151), minute=timedelta(seconds=1))
    assert ended >= len(first)
    statuses = dict(DiracJob.objects.filter(pk__in=first).values_list("status").annotate(n=Count("pk")))
    assert set(statuses) <= {"Done", "Failed"}
    # the community keeps DIRAC_BACKLOG jobs waiting
    assert DiracJob.objects.filter(status="Waiting").count() >= DIRAC_BACKLOG - 4 * len(PILOTS)


def test_pilots_that_find_nothing_are_recorded_with_the_reasons():
    # Monte Carlo jobs only: their CPU time (80,000-250,000 s) rounds up to the 300,000 s segment, more than RAL's
    # pilots offer (172,800 s) and JINR's (10,000 s, and EL7 where they need EL9); CERN, CNAF and GridKa (345,600 s)
    # take them
    production = [job for job in dirac_demo_jobs(random.Random(2), 60) if job["ownerGroup"] == "lhcb_mc"]
    dirac_jobs_submit(jobs=production, now=NOW)
    dirac_pilots_simulate(now=NOW, minute=timedelta(seconds=1))
    assert DiracJob.objects.filter(site="LCG.CERN.cern", status="Matched").count() == 4
    assert not DiracJob.objects.filter(site__in=("LCG.RAL.uk", "LCG.JINR.ru")).exists()
    ral = DiracMatchRecord.objects.get(site="LCG.RAL.uk")
    assert (ral.matched, ral.cpuTime, ral.reasons) == (False, 172_800, ["cpu_time"])
    jinr = DiracMatchRecord.objects.get(site="LCG.JINR.ru")
    assert (jinr.matched, jinr.reasons) == (False, ["cpu_time", "platform"])


def test_without_dirac_task_queues_no_pilot_asks():
    assert dirac_pilots_simulate(now=NOW, minute=timedelta(seconds=1)) == (0, 0)
    assert not DiracMatchRecord.objects.exists()


# --- new work ---


def test_new_work_arrives_when_few_tasks_are_worked_on():
    demo_grid_build(size="small", now=NOW, seed=3)
    first = Task.objects.count()
    # the built grid has more than INFLOW_ACTIVE tasks registered: nothing arrives
    assert grid_simulate_step(now=NOW, speed=60, inflow=True).tasks_registered == 0
    Task.objects.exclude(taskName__in=[story.name for story in STORIES]).update(status="done")
    Task.objects.filter(taskName__in=[story.name for story in STORIES]).update(status="pending")  # pending: idle
    report = grid_simulate_step(now=NOW, speed=60, inflow=True)
    assert report.tasks_registered == INFLOW_BATCH + 1  # a batch and one story, in turn
    new = Task.objects.filter(pk__gt=max(Task.objects.values_list("pk", flat=True)) - report.tasks_registered)
    story = STORIES[first % len(STORIES)]
    assert new.filter(taskName=f"{story.name}.r{first}", status="registered").exists()
    assert Task.objects.count() == first + INFLOW_BATCH + 1
    assert report.tasks_registered < INFLOW_ACTIVE
    assert grid_simulate_step(now=NOW, speed=60).tasks_registered == 0  # the tests' default: no inflow


# --- the whole demo, minute by minute ---


def test_within_minutes_the_stories_reach_their_states_and_pending_tasks_come_back(demo_clock):
    """make run's cadence on a fake clock (simulator every 5 s, refining 10 s, task brokerage 15 s, job
    generation 20 s, watchdog 30 s) for six minutes at 60 grid minutes per real minute."""
    start = NOW
    demo_grid_build(size="small", now=start, seed=2026)
    seen = {"throttled": False}

    def watch(now):
        seen["throttled"] |= Task.objects.filter(status="throttled").exists()

    demo_cadence_run(start=start, seconds=6 * 60, after_beat=watch)
    throttled_seen = seen["throttled"]
    # each story entered the state it is written to show (some go on: the shifter resumes, finishes, retries)
    entered: dict[str, set[str]] = {}
    for name, status in TaskStatusLog.objects.filter(task__taskName__in=[s.name for s in STORIES]).values_list(
        "task__taskName", "new_status"
    ):
        entered.setdefault(name, set()).add(status)
    assert [story.name for story in STORIES if story.ends_as not in entered.get(story.name, set())] == []
    throttled_story = next(story.name for story in STORIES if story.ends_as == "throttled")
    assert throttled_seen
    assert TaskStatusLog.objects.filter(task__taskName=throttled_story, new_status="throttled").exists()
    assert TaskStatusLog.objects.filter(old_status="pending").exists()  # pending tasks came back
    assert DiracJob.objects.filter(status__in=("Running", "Done")).exists()
    assert Task.objects.filter(status="done").count() > 1


def test_running_jobs_send_heartbeats_and_a_lost_pilot_times_out(demo_clock):
    # issue 35: in the demo jobs do time out: one in LOST_PILOT_ONE_IN loses its pilot (no heartbeat, no end); the
    # others' pilots beat every 30 grid minutes
    from brokerage.selectors.timeouts import job_timeout_states
    from brokerage.services.simulator import LOST_PILOT_ONE_IN, pilot_lost

    queue = factories.PandaQueueFactory(cric={"demo_slots": 100, "demo_failure_percent": 0})
    task = factories.TaskFactory(status="running")
    start = NOW - timedelta(minutes=1)  # a real minute: 60 grid minutes
    jobs = factories.JobFactory.create_batch(
        LOST_PILOT_ONE_IN * 2,
        task=task,
        computingSite=queue.name,
        jobStatus="running",
        startTime=start,
        stateChangeTime=start,
        modificationTime=start,
    )
    lost = [job.pk for job in jobs if pilot_lost(job.pk)]
    assert lost  # the draw over 80 consecutive IDs holds a lost pilot
    alive = [job.pk for job in jobs if job.pk not in lost]
    grid_simulate_step(now=NOW, speed=60)
    beats = dict(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("pk", "modificationTime"))
    still_running = set(Job.objects.filter(pk__in=alive, jobStatus="running").values_list("pk", flat=True))
    assert {pk for pk in still_running if beats[pk] == NOW} == still_running  # every live pilot beat
    assert all(beats[pk] == start for pk in lost)
    # 90 real seconds later the lost ones are 150 grid minutes without heartbeat, past the 2-hour limit; the live
    # ones beat 90 grid minutes ago
    later = NOW + timedelta(seconds=90)
    states = job_timeout_states(job_ids=lost, now=later)
    assert all(states[pk].timed_out and states[pk].rule == "heartbeat" for pk in lost)
    from brokerage.services.watchdog import job_timeout_apply

    job_timeout_apply(now=later)
    assert set(Job.objects.filter(pk__in=lost).values_list("jobStatus", flat=True)) <= {"failed", "closed"}
    assert not Job.objects.filter(pk__in=alive, jobStatus__in=("failed", "closed")).exists()


def test_the_demo_shifter_gives_each_command_when_its_time_comes_and_retries_a_refused_one():
    from brokerage.services.demo_stories import demo_shifter_act

    start = datetime(2026, 11, 1, 12, tzinfo=UTC)
    minute = timedelta(seconds=1)  # make run's speed: a grid minute a second
    task = factories.TaskFactory(
        status="running", creationDate=start, taskParams={"demoCommands": [[15, "pause"], [45, "resume"]]}
    )
    assert demo_shifter_act(now=start + 14 * minute, minute=minute) == []
    assert demo_shifter_act(now=start + 15 * minute, minute=minute) == [(task.pk, "pause")]
    task.refresh_from_db()
    assert (task.status, task.taskParams["demoCommandsDone"]) == ("paused", 1)
    assert demo_shifter_act(now=start + 46 * minute, minute=minute) == [(task.pk, "resume")]
    task.refresh_from_db()
    # every command given: kept as demoCommandsGiven, and the task no longer read
    assert (task.status, task.taskParams["demoCommandsGiven"], "demoCommands" in task.taskParams) == (
        "running",
        [[15, "pause"], [45, "resume"]],
        False,
    )
    # a retry of a task still running is refused: tried again at each step, given up 240 grid minutes past its time
    later = factories.TaskFactory(status="running", creationDate=start, taskParams={"demoCommands": [[10, "retry"]]})
    assert demo_shifter_act(now=start + 249 * minute, minute=minute) == []
    assert Task.objects.get(pk=later.pk).taskParams["demoCommands"] == [[10, "retry"]]
    assert demo_shifter_act(now=start + 251 * minute, minute=minute) == []
    assert Task.objects.get(pk=later.pk).taskParams == {"demoCommandsDone": 1, "demoCommandsGiven": [[10, "retry"]]}
