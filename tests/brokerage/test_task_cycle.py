"""The task-brokerage cycle over the database: claim, fixed-query snapshot, decide, store, apply, retry."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from brokerage.models import BrokerageCycle, Decision, Task, TaskStatusLog
from brokerage.selectors.decisions import decision_trace
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from brokerage.services import cycles
from brokerage.services.cycles import task_brokerage_cycle_run, task_pending_retry
from brokerage.tasks import task_brokerage_cycle_task
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
ON = {"read_lan": "ON", "write_lan": "ON", "read_wan": "ON", "write_wan": "ON"}


@pytest.fixture
def grid():
    """Nuclei GOOD (room), FULL (no room), OFF (disabled); a satellite; input replicated at GOOD."""
    sites = {}
    for name, state, free in (
        ("GOOD", "ACTIVE", 500_000.0),
        ("FULL", "ACTIVE", 1_000.0),
        ("OFF", "DISABLED", 500_000.0),
    ):
        sites[name] = factories.NucleusFactory(name=name, state=state)
        factories.StorageEndpointFactory(
            name=f"{name}_DATADISK", site=sites[name], space_total=1_000_000.0, space_free=free, detailed_status=ON
        )
    factories.SiteFactory(name="SAT")
    return sites


def waiting_task(name="data.EVNT", *, replicated=True, priority=500, **fields):
    task = factories.TaskFactory(
        status="assigning",
        currentPriority=priority,
        taskPriority=priority,
        ioIntensity=100,
        gshare="MC 16",
        cpuTime=300,
        **fields,
    )
    factories.DatasetFactory(task=task, type="input", datasetName=f"{name}.{task.pk}", nFiles=400)
    if replicated:
        factories.DatasetReplicaFactory(
            datasetName=f"{name}.{task.pk}",
            endpoint_id=factories.StorageEndpointFactory._meta.model.objects.get(name="GOOD_DATADISK").pk,
            nFiles=400,
            sizeGB=800,
        )
    return task


def test_a_cycle_assigns_nuclei_and_records_everything(grid):
    task = waiting_task()
    cycle = task_brokerage_cycle_run(now=NOW)
    assert (cycle.status, cycle.n_decisions, cycle.n_assigned) == ("succeeded", 1, 1)
    assert cycle.gdpconfig["DISK_THRESHOLD"] == 100
    stored = Task.objects.get(pk=task.pk)
    assert (stored.status, stored.nucleus, stored.lockedBy, stored.errorDialog) == ("ready", "GOOD", "", "")
    log = TaskStatusLog.objects.get(task=task)
    assert (log.old_status, log.new_status, log.actor) == ("assigning", "ready", "task brokerage")
    decision = Decision.objects.select_related("cycle").get(task=task)
    trace = decision_trace(decision=decision)
    assert trace["skipped"]["OFF"]["code"] == "status"
    assert trace["skipped"]["FULL"]["code"] == "space"
    assert trace["skipped"]["FULL"]["sentence"].startswith("Free 1000 GB + expired 0 GB")


def test_a_cycle_runs_under_the_live_profile_and_its_trace_says_so(grid):
    from brokerage.services.gdpconfig import gdpconfig_profile_apply

    first = waiting_task()
    task_brokerage_cycle_run(now=NOW)
    assert decision_trace(decision=Decision.objects.get(task=first))["profile"] == "seed"
    gdpconfig_profile_apply(profile="panda")
    second = waiting_task("more.EVNT")
    cycle = task_brokerage_cycle_run(now=NOW)
    assert cycle.gdpconfig["PROFILE"] == "panda"
    assert cycle.gdpconfig["EXPRESS_MIN_PRIORITY"] == 1001
    assert decision_trace(decision=Decision.objects.get(task=second))["profile"] == "panda"


def test_nothing_fits_pending_with_the_reason_then_retried_after_30_minutes(grid):
    Task.objects.all().delete()
    task = waiting_task(replicated=False)
    # 800 GB of input nowhere: heavy IO and low priority keep the locality check on
    Task.objects.filter(pk=task.pk).update(ioIntensity=500, taskPriority=100)
    factories.DatasetReplicaFactory(
        datasetName=f"data.EVNT.{task.pk}",
        endpoint=factories.StorageEndpointFactory(
            name="ELSEWHERE_DATADISK", site=factories.SiteFactory(name="ELSEWHERE")
        ),
        nFiles=400,
        sizeGB=800,
    )
    cycle = task_brokerage_cycle_run(now=NOW)
    stored = Task.objects.get(pk=task.pk)
    assert (stored.status, cycle.n_pending) == ("pending", 1)
    assert stored.errorDialog.startswith("pending: all 3 nucleus candidates skipped")
    assert Decision.objects.get(task=task).retry_after_minutes == 30
    assert task_pending_retry(now=NOW + timedelta(minutes=29, seconds=59)) == []
    assert task_pending_retry(now=NOW + timedelta(minutes=30)) == [task.pk]
    assert Task.objects.get(pk=task.pk).status == "assigning"


def test_remaining_work_of_equal_or_higher_priority_reaches_the_weights(grid):
    second = factories.NucleusFactory(name="SECOND")
    factories.StorageEndpointFactory(
        name="SECOND_DATADISK",
        site=second,
        space_total=1_000_000.0,
        space_free=500_000.0,
        detailed_status=ON,
    )
    busy = factories.TaskFactory(status="running", nucleus="GOOD", gshare="MC 16", currentPriority=600, cpuTime=100)
    factories.DatasetFactory(task=busy, type="input", nEvents=10_000, nEventsUsed=0)  # RW 1,000,000
    lower = factories.TaskFactory(status="running", nucleus="GOOD", gshare="MC 16", currentPriority=100, cpuTime=100)
    factories.DatasetFactory(task=lower, type="input", nEvents=10_000, nEventsUsed=0)  # lower priority: ignored
    task = waiting_task(replicated=False)
    task_brokerage_cycle_run(now=NOW)
    trace = decision_trace(decision=Decision.objects.select_related("cycle").get(task=task))
    factors = {c["name"]: c["factors"] for c in trace["candidates"]}
    assert factors["GOOD"]["RW"] == 1_000_000
    assert factors["SECOND"]["RW"] == 0


def test_a_task_assigned_in_the_cycle_counts_in_the_rw_of_the_tasks_after_it(grid):
    # AtlasProdTaskBroker (1.0.4, 610-620) adds each assigned task's RW to its nucleus for the rest of its batch:
    # the first task (priority 900, 2,000 events left × 300 = 600,000) goes to GOOD, the only nucleus with room;
    # the next of priority 500 in its share sees GOOD's RW at 600,000, one in another share sees none
    first = waiting_task(priority=900)
    Task.objects.filter(pk=first.pk).update(cpuTime=300)
    first.datasets.update(nEvents=2_000, nEventsUsed=0)
    second = waiting_task(priority=500)
    other_share = waiting_task(priority=500)
    Task.objects.filter(pk=other_share.pk).update(gshare="Express")
    task_brokerage_cycle_run(now=NOW)
    assert Task.objects.get(pk=first.pk).nucleus == "GOOD"
    rw = {}
    for task in (second, other_share):
        trace = decision_trace(decision=Decision.objects.select_related("cycle").get(task=task))
        rw[task.pk] = {c["name"]: c["factors"]["RW"] for c in trace["candidates"]}
    assert rw[second.pk]["GOOD"] == 600_000
    assert rw[other_share.pk]["GOOD"] == 0


def test_snapshot_and_cycle_cost_the_same_queries_for_2_or_8_tasks(grid):
    def queries_for(count):
        Task.objects.filter(status__in=("assigning", "ready", "pending")).delete()
        for index in range(count):
            waiting_task(name=f"ds{count}_{index}")
        gdpconfig_cache_clear()  # both runs read the gdpconfig table once
        with CaptureQueriesContext(connection) as context:
            task_brokerage_cycle_run(now=NOW)
        assert Task.objects.filter(status="assigning").count() == 0
        # savepoints are bookkeeping of nested transactions, not reads or writes
        return sum(1 for query in context.captured_queries if "SAVEPOINT" not in query["sql"])

    # the grid (eleven queries: nuclei, endpoints, network, queues with storages, software, GPUs and four of queue
    # statistics, which the job check reads), the tasks' part (six: their own remaining work for the live RW), the
    # cycle's bookkeeping and writes, and the claim's liveness (the worker's heartbeat, the holders of claimed
    # tasks, which of them are gone); on PostgreSQL the pending marks and the claim release each lock their tasks
    # first, in the one lock order (two more); the cycle's frame and the decisions' traces are stored in tables of
    # their own (issue 32: two inserts); the cycle's gdpconfig revision and its inputs (issue 34: the parts known
    # that day, an insert of the new ones, the cycle's list of them) four more
    assert queries_for(2) == queries_for(8) <= (44 if connection.vendor == "postgresql" else 42)


def test_a_failing_cycle_is_recorded_and_releases_its_tasks(grid, monkeypatch):
    task = waiting_task()

    def broken(**kwargs):
        raise RuntimeError("snapshot unreadable")

    monkeypatch.setattr(cycles, "task_scenarios_live", broken)
    cycle = task_brokerage_cycle_run(now=NOW)
    assert (cycle.status, cycle.error) == ("failed", "RuntimeError: snapshot unreadable")
    stored = Task.objects.get(pk=task.pk)
    assert (stored.status, stored.lockedBy, stored.lockedTime) == ("assigning", "", None)


def test_claims_of_live_workers_are_respected_and_expired_ones_taken_over(grid):
    held = waiting_task(name="held")
    Task.objects.filter(pk=held.pk).update(lockedBy="other-worker", lockedTime=NOW - timedelta(minutes=5))
    stale = waiting_task(name="stale")
    Task.objects.filter(pk=stale.pk).update(lockedBy="dead-worker", lockedTime=NOW - timedelta(minutes=31))
    task_brokerage_cycle_run(now=NOW)
    assert Task.objects.get(pk=held.pk).status == "assigning"
    assert Task.objects.get(pk=stale.pk).status == "ready"


def test_periodic_task_runs_a_cycle(grid):
    waiting_task()
    cycle_id = task_brokerage_cycle_task()
    assert BrokerageCycle.objects.get(pk=cycle_id).n_decisions == 1
