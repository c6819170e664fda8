"""Live parity: every scenario field a job broker reads is filled from the database.

The lists below name what the plugins read; the first test keeps them true against the plugins' source (a new
read that is not listed fails it). The others build scenarios from the database, through the same adapters the
cycles use, for a task and a grid that set every listed field, and fail when one is left at its default: a rule
that reads it would then decide offline only.
"""

import re
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from brokerage.adapters.job_brokerage import analysis_user_stats, job_grid_base, job_set_preview_scenario
from brokerage.adapters.task_brokerage import grid_base, task_scenarios
from brokerage.engine import run
from brokerage.engine.core.scenario import JobSet, TaskSpec
from brokerage.models import Job, PandaQueue, StorageEndpoint, Task
from brokerage.selectors.gdpconfig import cycle_gdpconfig
from tests import factories
from tests.jobs.conftest import make_one_queue_grid, make_ready_task

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
PANDA_ENGINE = Path(__file__).resolve().parents[2] / "brokerage" / "engine" / "panda"
# the job brokers' modules: every module of the PanDA engine but the task broker, task states and test grids
NOT_JOB_BROKER = {"task_broker.py", "task_states.py", "synthetic.py"}
JOB_BROKER_SOURCES = tuple(path for path in sorted(PANDA_ENGINE.rglob("*.py")) if path.name not in NOT_JOB_BROKER)

# The task fields the production and analysis job brokers read (TaskSpec).
TASK_READS = {
    "allowInputLAN", "architecture", "avoidVP", "baseRamCount", "baseWalltime", "container_name", "coreCount",
    "cpuEfficiency", "cpuTime", "currentPriority", "diskIO", "eventService", "excludedSite", "fullChain", "gshare",
    "includedSite", "inputPreStaging", "ioIntensity", "ipConnectivity", "maxCoreCount", "nEventsPerJob", "nucleus",
    "onlyTagsForFC", "outDiskCount", "outDiskUnit", "outputEndpointType", "processingType", "prodSourceLabel",
    "ramCount", "ramUnit", "site", "t1Weight", "taskClass", "taskPriority", "transHome", "transUses",
    "workDiskCount", "workDiskUnit", "workingGroup", "nEsConsumers", "maxAttemptEsJob", "nJumboJobs",
}  # fmt: skip
# Read only from a task that names no site ("This machinery is disabled if the task sets the site parameter", seed
# 002): the test task below sets its site, the test after it fills these
UNSET_WITH_A_SITE = {"nJumboJobs"}
# The per-queue statistics they read (queue_stats).
QUEUE_STATS_READS = {
    "running", "activated", "assigned", "starting", "defined", "transferring", "nBatchJob", "runningCores",
    "numSlots", "pilotsLast3h", "hoursSinceLastStart", "avgDiskIOPerCore", "toRunningRate", "nUsers",
    "vpOverloaded",
}  # fmt: skip
# The job-set fields they read (JobSet).
JOB_SET_READS = {
    "inputSizeMB", "isMerge", "isPreMerged", "isScout", "nEvents", "nFiles", "nJobs", "preassigned",
    "preassignedSkippedHours",
}  # fmt: skip
# Set only for merge job sets (services/merging.py)
MERGE_ONLY = {"isMerge", "preassigned", "preassignedSkippedHours"}
# Read when a scenario states them, derived from the queue's own numbers otherwise (live): whether a virtual-
# placement queue is overloaded is the queue-length rule (analysis_rules.vp; a database-level test below).
DERIVED_WHEN_ABSENT = {"vpOverloaded"}


def reads(pattern: str, names: set[str]) -> set[str]:
    found = set()
    for source in JOB_BROKER_SOURCES:
        found |= set(re.findall(pattern, source.read_text()))
    return found & names


def test_the_lists_name_every_field_the_job_brokers_read():
    task_fields = {f.name for f in fields(TaskSpec)}
    assert reads(r"\btask\.([A-Za-z_][A-Za-z0-9_]*)", task_fields) == TASK_READS
    job_fields = {f.name for f in fields(JobSet)}
    assert reads(r"\bjobs\.([A-Za-z_][A-Za-z0-9_]*)", job_fields) == JOB_SET_READS
    stat_keys = reads(r'(?:\bstat|\bs\.get)\("([A-Za-z0-9]+)"', QUEUE_STATS_READS)
    # the grid's STAT_COLUMNS: (array, statistics key, default, conversion)
    stat_keys |= reads(r'\("[A-Za-z_]+", "([A-Za-z0-9]+)", [-\w.]+, as_(?:int|float)\)', QUEUE_STATS_READS)
    # the counts by status are read in a loop over their names
    assert (
        stat_keys
        | {"running", "activated", "assigned", "starting", "defined", "transferring"}
        | {
            "nBatchJob",
            "runningCores",
        }
        == QUEUE_STATS_READS
    )


@pytest.fixture
def work_queue():
    return factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)


@pytest.fixture
def live_grid():
    queue = make_one_queue_grid()
    PandaQueue.objects.filter(pk=queue.pk).update(siteClass="hi")
    factories.QueuePilotStatsFactory(queue=queue, pilotsLast3h=25, nBatchJob=40, numSlots=16)
    return queue


def job(task, status, **extra):
    return factories.JobFactory(task=task, jobStatus=status, computingSite="SAT_Q", **extra)


def every_task_field_set(work_queue):
    task = make_ready_task(
        work_queue,
        t1Weight=2,
        fullChain="capable",
        ipConnectivity="full#IPv4",
        inputPreStaging=True,
        onlyTagsForFC=True,
        maxCoreCount=8,
        outputEndpointType="SCRATCHDISK",
        allowInputLAN="only",
        container_name="atlas/athena:24.0.30",
        avoidVP=True,
        includedSite="SAT_Q",
        excludedSite="OTHER",
        nEventsPerJob=500,
        mergeOutput=True,
        nEsConsumers=2,
        maxAttemptEsJob=4,
    )
    Task.objects.filter(pk=task.pk).update(
        baseRamCount=100,
        diskIO=40,
        architecture="x86_64-el9-gcc13-opt",
        transUses="Athena-24.0.30",
        transHome="Athena-24.0.30",
        workingGroup="AP_HIGGS",
        outDiskCount=100,
        outDiskUnit="kBPerEvent",
        workDiskCount=1000,
        workDiskUnit="GB",
        site="SAT_Q",
        eventService=1,
        taskClass="A",
        prodSourceLabel="ptest",
        processingType="simul",
    )
    return task


def test_a_database_built_job_set_scenario_fills_every_field_a_task_sets(live_grid, work_queue):
    task = every_task_field_set(work_queue)
    scenario = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0)
    defaults = TaskSpec()
    left = sorted(name for name in TASK_READS if getattr(scenario.task, name) == getattr(defaults, name))
    assert left == sorted(UNSET_WITH_A_SITE)


@pytest.mark.parametrize(
    ("use_jumbo", "site", "expected"),
    [("W", "", 2), ("P", "", 2), ("R", "", 2), ("L", "", 2), ("D", "", None), ("", "", None), ("W", "SAT_Q", None)],
)
def test_a_task_asking_for_jumbo_jobs_brings_nJumboJobs_while_its_flag_is_on(
    live_grid, work_queue, use_jumbo, site, expected
):
    task = every_task_field_set(work_queue)
    Task.objects.filter(pk=task.pk).update(
        useJumbo=use_jumbo, site=site, taskParams={**task.taskParams, "nJumboJobs": 2}
    )
    scenario = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0)
    assert scenario.task.nJumboJobs == expected
    # task brokerage's job check keeps the jumbo queues for such a task too
    assert task_scenario_live(task).task.nJumboJobs == expected


def test_a_database_built_grid_fills_every_queue_statistic(live_grid, work_queue):
    task = every_task_field_set(work_queue)
    started = NOW - timedelta(hours=1)
    job(task, "running", startTime=started, diskIO=800.0, coreCount=8)
    for status in ("activated", "assigned", "starting", "defined", "transferring"):
        job(task, status)
    job(task, "activated", prodSourceLabel="user", prodUserName="jdoe")
    scenario = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0)
    stats = scenario.queue_stats["SAT_Q"]
    left = sorted(key for key in QUEUE_STATS_READS - DERIVED_WHEN_ABSENT if not stats.get(key))
    assert left == []
    # worked numbers: 800 kB/s over 8 cores; one job started in the last 6 h = 1/6 per hour; one analysis user
    assert stats["avgDiskIOPerCore"] == pytest.approx(100.0)
    assert stats["toRunningRate"] == pytest.approx(1 / 6)
    assert stats["nUsers"] == 1
    assert stats["hoursSinceLastStart"] == pytest.approx(1.0)


def test_the_last_start_is_read_from_the_active_jobs_within_the_archive_delay(live_grid, work_queue):
    """A job is archived JOB_ARCHIVE_AFTER_DAYS (3) after it ended, so every job that started in the last three
    days is active: the last start is looked for there, over three days. A job that started two days ago and ended
    is still active (48 h since the last start); once only a job that started four days ago and has been archived
    is left, no start is found in the three days: 72 h, far past the inactive rule's 2. No start in the last 6 h,
    so no toRunningRate."""
    from brokerage.services.housekeeping import jobs_archive

    task = every_task_field_set(work_queue)
    old = job(task, "finished", startTime=NOW - timedelta(days=4), endTime=NOW - timedelta(days=4) + timedelta(hours=1))
    recent = job(task, "finished", startTime=NOW - timedelta(days=2), endTime=NOW - timedelta(days=2, hours=-1))
    assert jobs_archive(now=NOW, batch=100) == 1  # the old one
    stats = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0).queue_stats["SAT_Q"]
    assert stats["hoursSinceLastStart"] == pytest.approx(48.0)
    assert not stats.get("toRunningRate")
    Job.objects.filter(pk=recent.pk).delete()
    assert Job.objects.filter(pk=old.pk, archiveDay__isnull=False).exists()
    job(task, "activated")  # a queue with work waiting and no start found: the window's hours
    stats = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0).queue_stats["SAT_Q"]
    assert stats["hoursSinceLastStart"] == pytest.approx(72.0)


def test_the_job_set_fields_filled_live(live_grid, work_queue):
    task = every_task_field_set(work_queue)
    Task.objects.filter(pk=task.pk).update(status="ready")
    scenario = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0)
    defaults = JobSet()
    live = JOB_SET_READS - MERGE_ONLY  # a merge job set's own fields: the test below
    left = sorted(name for name in live if getattr(scenario.jobs, name) == getattr(defaults, name))
    assert left == []


def test_a_merge_job_set_from_the_database_fills_its_fields(live_grid, work_queue):
    # two pre-merged files at SAT_Q of a task with mergeOutput, whose pre-assignment has been skipped for 25 h
    from brokerage.engine import parse_scenario
    from brokerage.services.merging import merge_sets

    task = make_ready_task(work_queue, files=2, mergeOutput=True, nFilesPerMergeJob=2)
    for _ in range(2):
        job(task, "merging", outputFileBytes=100 * 1024**2)
    factories.MergePreassignmentFactory(task=task, computingSite="SAT_Q", skipped_since=NOW - timedelta(hours=25))
    rows = {task.pk: {"taskParams": Task.objects.get(pk=task.pk).taskParams}}
    (merge,) = merge_sets(tasks=rows, now=NOW)
    jobs = parse_scenario({"plugin": "atlas_prod_job", "jobs": merge.jobs()}).jobs
    defaults = JobSet()
    merge_fields = MERGE_ONLY | {"nFiles", "inputSizeMB"}
    assert sorted(name for name in merge_fields if getattr(jobs, name) == getattr(defaults, name)) == []
    assert (jobs.preassigned, jobs.preassignedSkippedHours, jobs.inputSizeMB) == (("SAT_Q",), 25.0, 200.0)


def task_scenario_live(task, gdpconfig=None):
    """The task brokerage cycle's scenario for `task` (the same adapters, the live grid)."""
    base = grid_base(now=NOW, gdpconfig=gdpconfig or {})
    return task_scenarios(task_ids=[task.pk], base=base, seed_of=lambda _: 0)[task.pk]


def test_a_database_built_task_scenario_fills_what_its_job_check_reads(live_grid, work_queue):
    # task brokerage's job check runs job brokerage before there is a nucleus; taskClass is analysis's
    task = every_task_field_set(work_queue)
    scenario = task_scenario_live(task)
    defaults = TaskSpec()
    left = sorted(
        name
        for name in TASK_READS - {"nucleus", "taskClass"} - UNSET_WITH_A_SITE
        if getattr(scenario.task, name) == getattr(defaults, name)
    )
    assert left == []
    assert scenario.queue_stats["SAT_Q"]["pilotsLast3h"] == 25
    assert scenario.queues["SAT_Q"]["astorages"] == {"read_lan": ["SAT_DATADISK"], "write_lan": ["SAT_DATADISK"]}
    # the first job: nEventsPerJob 500 from files of 500 events and 2 GB, one file, never a scout
    jobs = scenario.jobs
    assert (jobs.nEvents, jobs.nFiles, jobs.inputSizeMB, jobs.isScout, jobs.isPreMerged) == (
        500,
        1,
        2048.0,
        False,
        True,
    )


def test_the_analysis_user_numbers_are_filled_live(live_grid, work_queue):
    task = factories.TaskFactory(status="ready", prodSourceLabel="user", userName="jdoe", workQueue=work_queue)
    for status in ("running", "running", "activated"):
        job(task, status, prodSourceLabel="user", prodUserName="jdoe", coreCount=1)
    job(task, "finished", endTime=NOW - timedelta(hours=2))
    job(task, "failed")
    job(task, "closed")
    # its analysis brokerage: assigned 5 h and 2 h ago, pending 1.5 h and 1 h ago
    for hours, outcome in ((5, "assigned"), (2, "assigned"), (1.5, "pending"), (1, "pending")):
        factories.DecisionFactory(
            task=task, plugin="atlas_anal_job", outcome=outcome, created=NOW - timedelta(hours=hours)
        )
    stats = analysis_user_stats(now=NOW, task_ids=[task.pk])[task.pk]
    assert stats["user"] == {
        "running": 2,
        "queued": 1,
        "runningCores": 2,
        "queuedCores": 1,
        "runningSlotsHiSites": 2,  # SAT_Q is a hi-class queue
    }
    assert stats["queues"]["SAT_Q"] == {
        "userQueued": 1,
        "userRunning": 2,
        "taskFinished": 1,
        "taskFailed": 1,
        "taskClosed": 1,
    }
    # DATA_CHECK_TIMEOUT_FROM: last_success (seed 000) counts from the last assigned cycle, 2 h; frozen (panda,
    # JEDI's frozenTime) from the first failing one after it, 1.5 h
    assert stats["hoursSinceLastSuccess"] == pytest.approx(2.0)
    frozen = analysis_user_stats(now=NOW, task_ids=[task.pk], since="frozen")[task.pk]
    assert frozen["hoursSinceLastSuccess"] == pytest.approx(1.5)


def test_the_data_check_clock_of_a_task_that_never_succeeded(live_grid, work_queue):
    # no assigned cycle: the seed's clock starts at its first cycle (3 h), the frozen one at its first failure (3 h);
    # no decision at all: no clock
    task = factories.TaskFactory(status="ready", prodSourceLabel="user", userName="jdoe", workQueue=work_queue)
    idle = factories.TaskFactory(status="ready", prodSourceLabel="user", userName="jdoe", workQueue=work_queue)
    for hours in (3, 1):
        factories.DecisionFactory(
            task=task, plugin="atlas_anal_job", outcome="pending", created=NOW - timedelta(hours=hours)
        )
    for since in ("last_success", "frozen"):
        stats = analysis_user_stats(now=NOW, task_ids=[task.pk, idle.pk], since=since)
        assert stats[task.pk]["hoursSinceLastSuccess"] == pytest.approx(3.0)
        assert "hoursSinceLastSuccess" not in stats[idle.pk]


class TestRulesFireLive:
    """Rules that used to decide only from scenario files, now from the database (worked numbers)."""

    @staticmethod
    def decide_live(task):
        scenario = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0)
        return run(scenario)

    def test_direct_access_only_skips_a_queue_without_it(self, live_grid, work_queue):
        task = make_ready_task(work_queue, allowInputLAN="only")
        decision = self.decide_live(task)
        assert decision.skipped["SAT_Q"].code == "remoteio"
        PandaQueue.objects.filter(pk=live_grid.pk).update(direct_access_lan=True)
        assert "SAT_Q" not in self.decide_live(task).skipped

    def test_an_event_service_task_needs_an_event_service_queue(self, live_grid, work_queue):
        task = make_ready_task(work_queue)
        Task.objects.filter(pk=task.pk).update(eventService=1)
        decision = self.decide_live(task)
        assert decision.skipped["SAT_Q"].code == "es"
        assert decision.skipped["SAT_Q"].detail["jobseed"] == "std"
        PandaQueue.objects.filter(pk=live_grid.pk).update(jobseed="all")
        assert "SAT_Q" not in self.decide_live(task).skipped

    def test_disk_io_of_the_queues_running_jobs(self, live_grid, work_queue):
        # running jobs average 800 kB/s over 8 cores = 100 per core, above the queue's maxdiskio 50; the task's
        # own 80 kB/s is above it too: skipped. A task asking 40 is not.
        PandaQueue.objects.filter(pk=live_grid.pk).update(maxdiskio=50)
        task = make_ready_task(work_queue)
        Task.objects.filter(pk=task.pk).update(diskIO=80)
        job(task, "running", startTime=NOW - timedelta(hours=1), diskIO=800.0, coreCount=8)
        decision = self.decide_live(task)
        assert decision.skipped["SAT_Q"].code == "diskIO"
        assert decision.skipped["SAT_Q"].detail["avgDiskIOPerCore"] == pytest.approx(100.0)
        Task.objects.filter(pk=task.pk).update(diskIO=40)
        assert "SAT_Q" not in self.decide_live(task).skipped

    def test_the_analysis_stabilizer_reads_users_and_start_rate_from_the_database(self, live_grid, work_queue):
        # ANALY_Q: 250 running jobs of eve; queued: jdoe 150, ann, bob and cyd 50 each (300); 12 jobs started in
        # the last 6 h: toRunningRate 2/h; 5 users. Not overloaded (300 ≤ 2 × 250). Throttleable (300 ≥ 100 and
        # ≥ 8 h × 2). nQ_max = max(100, 2 × 250, 12 h × 2) = 500; jdoe's share max(0 / 250, 1 / 5) = 0.2; jdoe's
        # limit max(5, 0.05 × 250, 500 × 0.2) = 100 < 150 queued: skipped. Counted as one user (the default
        # before), the limit was 500 and nothing was skipped.
        disk = StorageEndpoint.objects.get(name="SAT_DATADISK")
        queue = factories.PandaQueueFactory(
            name="ANALY_Q", site=live_grid.site, type="analysis", corecount=1, releases=["ANY"]
        )
        for role in ("read_lan", "write_lan"):
            factories.QueueStorageFactory(queue=queue, endpoint=disk, role=role)
        factories.QueuePilotStatsFactory(queue=queue, pilotsLast3h=50, nBatchJob=0)
        task = factories.TaskFactory(
            status="ready", prodSourceLabel="user", userName="jdoe", workQueue=work_queue, gshare="User Analysis",
            coreCount=1, ramCount=1000, ramUnit="MB", taskPriority=1000, currentPriority=1000,
        )  # fmt: skip

        def analysis_jobs(status, user, count, **extra):
            return [
                Job(task=task, jobStatus=status, computingSite="ANALY_Q", prodSourceLabel="user",
                    prodUserName=user, coreCount=1, **extra)
                for _ in range(count)
            ]  # fmt: skip

        started = {"startTime": NOW - timedelta(hours=2), "endTime": NOW - timedelta(hours=1)}
        Job.objects.bulk_create(
            analysis_jobs("running", "eve", 250)
            + analysis_jobs("activated", "jdoe", 150, jobsetID=1)
            + [job for user in ("ann", "bob", "cyd") for job in analysis_jobs("activated", user, 50)]
            + analysis_jobs("finished", "zed", 12, **started)
        )
        base = job_grid_base(now=NOW, gdpconfig={})
        assert base.queue_stats["ANALY_Q"]["nUsers"] == 5
        assert base.queue_stats["ANALY_Q"]["toRunningRate"] == pytest.approx(2.0)
        # the preview path of the cycles: the task's latest job set, over the live grid
        scenario = job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0)
        assert scenario.plugin == "atlas_anal_job"
        decision = run(scenario)
        assert decision.skipped["ANALY_Q"].code == "tmp_user_problem"
        assert decision.skipped["ANALY_Q"].detail["maxQueueLength"] == pytest.approx(100.0)

    def test_the_task_job_check_runs_job_brokerage_over_the_nucleus_queues(self, live_grid, work_queue):
        # panda profile. NUC's only production queue has maxrss 12,000 MB; the task's jobs need 2,000 MB × 8 cores
        # × 0.9 = 14,400: job brokerage keeps no queue there, NUC is skipped (-job). At 16,000 MB it is chosen.
        nucleus_disk = StorageEndpoint.objects.get(name="NUC_DATADISK")
        # (a corepower: under CRIC_QUEUE_RULE panda a queue without one has no HS06 walltime, as in the real code)
        queue = factories.PandaQueueFactory(
            name="NUC_Q", site=nucleus_disk.site, corecount=8, maxrss=12000, releases=["ANY"], corepower=10.0
        )
        for role in ("read_lan", "write_lan"):
            factories.QueueStorageFactory(queue=queue, endpoint=nucleus_disk, role=role)
        factories.QueuePilotStatsFactory(queue=queue, pilotsLast3h=30, nBatchJob=10)
        task = make_ready_task(work_queue, status="assigning")
        panda = cycle_gdpconfig(profile="panda")
        decision = run(task_scenario_live(task, panda))
        assert decision.skipped["NUC"].code == "job"
        assert decision.skipped["NUC"].detail == {
            "queues": 1,
            "queuesAble": 0,
            "queuesSkipped": "NUC_Q: memory too small",
        }
        assert run(task_scenario_live(task)).chosen == "NUC"  # the seed profile has no job check
        PandaQueue.objects.filter(pk=queue.pk).update(maxrss=16000)
        assert run(task_scenario_live(task, panda)).chosen == "NUC"

    def test_an_overloaded_virtual_placement_queue_is_skipped(self, live_grid, work_queue):
        # seed profile. ANALY_VP reads a VP endpoint (use_vp) and has 10 running, 50 activated: more than
        # 2 × max(20, 10) = 40 queued, overloaded, so skipped as a VP queue; with 30 activated it is not
        disk = StorageEndpoint.objects.get(name="SAT_DATADISK")
        queue = factories.PandaQueueFactory(
            name="ANALY_VP", site=live_grid.site, type="analysis", corecount=1, releases=["ANY"], use_vp=True
        )
        for role in ("read_lan", "write_lan"):
            factories.QueueStorageFactory(queue=queue, endpoint=disk, role=role)
        factories.QueuePilotStatsFactory(queue=queue, pilotsLast3h=50, nBatchJob=0)
        task = factories.TaskFactory(
            status="ready", prodSourceLabel="user", userName="jdoe", workQueue=work_queue, gshare="User Analysis",
            coreCount=1, ramCount=1000, ramUnit="MB",
        )  # fmt: skip

        def jobs(status, count):  # one job set, the one the preview brokers again
            return [
                Job(task=task, jobStatus=status, computingSite="ANALY_VP", prodSourceLabel="user",
                    prodUserName=f"user{n}", coreCount=1, jobsetID=1)
                for n in range(count)
            ]  # fmt: skip

        Job.objects.bulk_create(jobs("running", 10) + jobs("activated", 50))
        decision = run(job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0))
        skip = decision.skipped["ANALY_VP"]
        assert (skip.code, skip.detail["vpOverloaded"], skip.detail["queued"]) == ("overloaded_vp", True, 50)
        surplus = Job.objects.filter(computingSite="ANALY_VP", jobStatus="activated").values_list("pk", flat=True)
        Job.objects.filter(pk__in=list(surplus[:20])).delete()
        decision = run(job_set_preview_scenario(task_id=task.pk, now=NOW, gdpconfig={}, seed=0))
        assert "ANALY_VP" in {c.name for c in decision.candidates}

    def test_pre_merged_jobs_avoid_inactive_queues(self, live_grid, work_queue):
        # SAT_Q has 3 activated jobs and started none in the window (hoursSinceLastStart 72 > 2): a task whose
        # outputs are merged afterwards (mergeOutput) sends pre-merged jobs, which skip it; the same task without
        # mergeOutput, at priority 500 and past scouting, does not
        merged = make_ready_task(work_queue, mergeOutput=True)
        plain = make_ready_task(work_queue)
        Task.objects.filter(pk__in=[merged.pk, plain.pk]).update(status="running")
        for _ in range(3):
            job(plain, "activated")
        decision = self.decide_live(merged)
        assert decision.skipped["SAT_Q"].code == "inactive"
        assert decision.skipped["SAT_Q"].detail["hoursSinceLastStart"] == pytest.approx(72.0)
        assert "SAT_Q" not in self.decide_live(plain).skipped
