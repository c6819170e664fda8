"""A user's running analysis tasks throttled while the user's data in motion is over PRESTAGE_LIMIT, released when
it drops under it or after 120 minutes (seed 002, "Throttled jobs and tasks"; brokerage.services.user_caps, the
rule in brokerage.throttle: PRESTAGE_RULE), both profiles, with worked numbers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from brokerage.engine.panda.task_states import TaskFacts, task_state_explain
from brokerage.models import GdpConfig, Job, Task, TaskStatusLog
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from brokerage.services.task_commands import task_watch
from brokerage.services.user_caps import user_data_motion, users_data_motion_throttle
from brokerage.services.watchdog import watchdog_cycle_run
from brokerage.throttle import data_motion_verdict_panda, data_motion_verdict_seed
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2027, 2, 1, 12, 0, tzinfo=UTC)
GB = 1024**3


def gdpconfig(**values):
    for key, value in values.items():
        GdpConfig.objects.create(key=key, value=str(value), component="anal_jobbroker", app="jedi")
    gdpconfig_cache_clear()


def user_task(user: str, *, waiting_gb: list[float], tape: bool = False, group: str = "", status: str = "running"):
    """A running analysis task of `user` whose jobs wait for their input (assigned), `waiting_gb` each; its input
    replicated on tape only when `tape`, else on disk."""
    task = factories.TaskFactory(userName=user, prodSourceLabel="user", status=status, workingGroup=group)
    dataset = factories.DatasetFactory(task=task, type="input", status="ready")
    endpoint = factories.StorageEndpointFactory(
        name=f"{dataset.datasetName[-12:]}_{'TAPE' if tape else 'DATADISK'}", is_tape=tape
    )
    factories.DatasetReplicaFactory(datasetName=dataset.datasetName, endpoint=endpoint)
    for size in waiting_gb:
        factories.JobFactory(
            task=task,
            prodSourceLabel="user",
            prodUserName=user,
            workingGroup=group,
            jobStatus="assigned",
            inputFileBytes=int(size * GB),
        )
    return task


def test_the_rule_variants_on_their_own():
    # seed: both kinds together over the limit; 600 + 500 GB = 1,100 GB > 1 TB (1,024 GB)
    both = {"prestaging": 600.0, "transfer": 500.0}
    verdict = data_motion_verdict_seed(gigabytes=both, limit_tb=1)
    assert (verdict.kinds, verdict.total_gb, verdict.limit_gb) == (("prestaging", "transfer"), 1100, 1024)
    assert verdict.sentence == (
        "throttled since transferring large data volume in total=1100GB > limit=1024GB type=prestaging+transfer"
    )
    # panda: each kind on its own, neither over 1,024 GB
    assert data_motion_verdict_panda(gigabytes=both, limit_tb=1).kinds == ()
    # at the limit exactly is not over, one GB above is (whole GB: 1,024.9 is 1,024)
    assert data_motion_verdict_seed(gigabytes={"transfer": 1024.9}, limit_tb=1).kinds == ()
    assert data_motion_verdict_seed(gigabytes={"transfer": 1025.0}, limit_tb=1).kinds == ("transfer",)
    assert data_motion_verdict_panda(gigabytes={"transfer": 1025.0}, limit_tb=1).kinds == ("transfer",)
    # unset: no limit in the seed, 1 TB in panda
    assert data_motion_verdict_seed(gigabytes={"transfer": 5000.0}, limit_tb=None).kinds == ()
    assert data_motion_verdict_panda(gigabytes={"transfer": 1025.0}, limit_tb=None).kinds == ("transfer",)


def test_data_in_motion_is_the_input_of_jobs_waiting_for_it_by_kind():
    disk = user_task("ana", waiting_gb=[100, 150])
    tape = user_task("ana", waiting_gb=[300], tape=True)
    group = user_task("ana", waiting_gb=[40], group="phys-higgs")
    Job.objects.create(task=disk, prodSourceLabel="user", prodUserName="ana", jobStatus="running", inputFileBytes=GB)
    motion = user_data_motion()
    assert {uid: {k: (v["bytes"] / GB, v["tasks"]) for k, v in kinds.items()} for uid, kinds in motion.items()} == {
        "ana": {"transfer": (250.0, {disk.pk}), "prestaging": (300.0, {tape.pk})},
        "phys-higgs": {"transfer": (40.0, {group.pk})},
    }


def test_over_the_limit_the_users_running_tasks_moving_data_are_throttled_then_released():
    gdpconfig(PRESTAGE_LIMIT=0.5)  # 512 GB
    moving = user_task("bob", waiting_gb=[300, 200])
    staging = user_task("bob", waiting_gb=[100], tape=True)
    ready = user_task("bob", waiting_gb=[50], status="ready")  # 1.0.4 throttles running tasks only
    light = user_task("carol", waiting_gb=[500])
    [move] = users_data_motion_throttle(now=NOW)
    assert (move.user, move.throttled, move.released) == ("bob", sorted([moving.pk, staging.pk]), [])
    task = Task.objects.get(pk=moving.pk)
    sentence = "throttled since transferring large data volume in total=650GB > limit=512GB type=prestaging+transfer"
    assert (task.status, task.oldStatus, task.errorDialog, task.throttledTime) == (
        "throttled",
        "running",
        sentence,
        NOW,
    )
    assert Task.objects.get(pk=ready.pk).status == "ready"
    assert Task.objects.get(pk=light.pk).status == "running"
    assert TaskStatusLog.objects.filter(task=moving).last().reason == f"user bob: {sentence}"
    # the attempts throttle's release leaves it alone
    assert "released" not in task_watch(now=NOW + timedelta(minutes=1))
    # still over a minute later: kept
    assert users_data_motion_throttle(now=NOW + timedelta(minutes=1)) == []
    # the jobs of the moving task got their input: 100 + 50 GB left, under the limit; both released
    Job.objects.filter(task=moving).update(jobStatus="activated")
    [move] = users_data_motion_throttle(now=NOW + timedelta(minutes=2))
    assert (move.throttled, move.released) == ([], sorted([moving.pk, staging.pk]))
    task.refresh_from_db()
    assert (task.status, task.errorDialog) == ("running", "")


def test_a_throttled_task_is_released_after_120_minutes_and_throttled_again_if_still_over():
    gdpconfig(PRESTAGE_LIMIT=0.1)
    task = user_task("dave", waiting_gb=[200])
    users_data_motion_throttle(now=NOW)
    assert users_data_motion_throttle(now=NOW + timedelta(minutes=119)) == []
    [move] = users_data_motion_throttle(now=NOW + timedelta(minutes=120))
    assert (move.throttled, move.released) == ([], [task.pk])
    [move] = users_data_motion_throttle(now=NOW + timedelta(minutes=121))
    assert move.throttled == [task.pk]


def test_the_panda_profile_compares_each_kind_with_one_terabyte_when_unset():
    GdpConfig.objects.create(key="PRESTAGE_RULE", value="panda", component="anal_jobbroker", app="jedi")
    gdpconfig_cache_clear()
    both = user_task("erin", waiting_gb=[700])
    user_task("erin", waiting_gb=[700], tape=True)  # 1,400 GB in all, 700 of each kind: under 1,024 each
    heavy = user_task("fay", waiting_gb=[600, 500])  # 1,100 GB of transfer
    moves = users_data_motion_throttle(now=NOW)
    assert [(move.user, move.throttled) for move in moves] == [("fay", [heavy.pk])]
    assert Task.objects.get(pk=both.pk).status == "running"
    # the seed with no limit set throttles nobody
    GdpConfig.objects.filter(key="PRESTAGE_RULE").delete()
    gdpconfig_cache_clear()
    Task.objects.filter(pk=heavy.pk).update(status="running", errorDialog="")
    assert [move.throttled for move in users_data_motion_throttle(now=NOW)] == []


def test_the_watchdog_pass_reports_them_and_the_task_page_says_why():
    gdpconfig(PRESTAGE_LIMIT=0.1)
    task = user_task("gil", waiting_gb=[200])
    result = watchdog_cycle_run(now=timezone.now())  # the jobs were made now: none has timed out
    assert (result["data_motion_tasks_throttled"], result["data_motion_tasks_released"]) == (1, 0)
    log = TaskStatusLog.objects.filter(task=task).last()
    why, advice = task_state_explain(
        TaskFacts(status="throttled", entered_reason=log.reason, entered_by=log.actor, entered_at=NOW)
    )
    assert why == [
        "data motion throttle throttled it at 2027-02-01 12:00 UTC: user gil: throttled since transferring large "
        "data volume in total=200GB > limit=102.4GB type=transfer (PRESTAGE_LIMIT). No new jobs until it drops "
        "under the limit; its existing jobs run on."
    ]
    assert advice[0].codes == ("state_throttled_data_motion",)
