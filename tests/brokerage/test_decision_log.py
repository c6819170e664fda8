"""The brokerage log (issue 53, brokerage/adapters/decision_log.py): a job generation cycle's decisions written in
JEDI's grammar on brokerage.jedi.AtlasProdJobBroker, a task brokerage cycle's on brokerage.jedi.AtlasProdTaskBroker,
and both as JSON on brokerage.jedi.json, once stored, each for the loggers that are on; BROKERAGE_LOG's values;
nothing rendered when the loggers are off."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from django.utils import timezone

from brokerage.models import Dataset, Decision, StorageEndpoint, Task
from brokerage.services.cycles import task_brokerage_cycle_run
from brokerage.services.jobs import job_generation_cycle_run
from tests import factories
from tests.jobs.conftest import make_one_queue_grid, make_ready_task

pytestmark = pytest.mark.django_db


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def logged():
    """The two loggers on, each with a handler of the test's (the configuration does not let them propagate)."""
    found = {}
    names = ("AtlasProdJobBroker", "AtlasProdTaskBroker", "AtlasAnalJobBroker", "json")
    for name in (f"brokerage.jedi.{name}" for name in names):
        logger, handler = logging.getLogger(name), Lines()
        found[name] = (logger, handler, logger.level)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    yield {name: handler.messages for name, (_, handler, _) in found.items()}
    for logger, handler, level in found.values():
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_cycles_decisions_in_jedis_grammar_and_as_json(logged, django_capture_on_commit_callbacks):
    make_one_queue_grid()
    work_queue = factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)
    task = make_ready_task(work_queue, files=3, nScoutJobs=0, priority=700)
    with django_capture_on_commit_callbacks(execute=True):
        job_generation_cycle_run(work_queue_id=work_queue.pk, now=timezone.now())
    decision = Decision.objects.get(task_id=task.pk)
    lines = logged["brokerage.jedi.AtlasProdJobBroker"]
    prefix = f"<jediTaskID={task.pk}> "
    assert lines[0] == prefix + "start currentPriority=700"
    assert all(line.startswith(prefix) for line in lines)
    assert prefix + "===== Job brokerage summary =====" in lines
    assert prefix + "the number of initial candidates: 1" in lines
    assert f"{prefix}  use site={decision.chosen} with weight=" in next(line for line in lines if "+use" in line)
    assert lines[-1] == prefix + "done"
    [record] = [json.loads(message) for message in logged["brokerage.jedi.json"]]
    assert (record["jediTaskID"], record["currentPriority"], record["outcome"]) == (task.pk, 700, "assigned")
    assert record["used"][0]["name"] == decision.chosen


def test_a_task_brokerage_cycles_decisions_in_jedis_grammar(logged, django_capture_on_commit_callbacks):
    # nuclei GOOD (500,000 GB free), FULL (1,000 GB, under DISK_THRESHOLD's 102,400) and OFF (DISABLED); the input
    # at GOOD only: the seed profile keeps GOOD
    on = {"read_lan": "ON", "write_lan": "ON", "read_wan": "ON", "write_wan": "ON"}
    for name, state, free in (("GOOD", "ACTIVE", 500_000.0), ("FULL", "ACTIVE", 1_000.0), ("OFF", "DISABLED", 5e5)):
        site = factories.NucleusFactory(name=name, state=state)
        factories.StorageEndpointFactory(
            name=f"{name}_DATADISK", site=site, space_total=1_000_000.0, space_free=free, detailed_status=on
        )
    task = factories.TaskFactory(status="assigning", currentPriority=500, ioIntensity=100, gshare="MC 16")
    factories.DatasetFactory(task=task, type="input", datasetName="data.EVNT", nFiles=400)
    endpoint = factories.StorageEndpointFactory._meta.model.objects.get(name="GOOD_DATADISK")
    factories.DatasetReplicaFactory(datasetName="data.EVNT", endpoint_id=endpoint.pk, nFiles=400, sizeGB=800)
    with django_capture_on_commit_callbacks(execute=True):
        task_brokerage_cycle_run(now=timezone.now())
    prefix = f"<jediTaskID={task.pk}> "
    assert all(line.startswith(prefix) for line in logged["brokerage.jedi.AtlasProdTaskBroker"])
    lines = [line.removeprefix(prefix) for line in logged["brokerage.jedi.AtlasProdTaskBroker"]]
    assert lines[0] == "start"
    assert [line.split(" due to ")[0] + " " + line.rsplit(" ", 1)[1] for line in lines if "skip" in line] == [
        "  skip nucleus=OFF criteria=-status",
        "  skip nucleus=FULL criteria=-space",
    ]
    assert lines[lines.index("===== Task brokerage summary =====") :][:4] == [
        "===== Task brokerage summary =====",
        "the number of initial candidates: 3",
        "    3 ->   2 candidates,  34% cut : status check",
        "    2 ->   1 candidates,  50% cut : storage endpoint check",
    ]
    assert lines[-1] == "  set nucleus=GOOD with True criteria=+set"
    assert logged["brokerage.jedi.AtlasProdJobBroker"] == []
    [record] = [json.loads(message) for message in logged["brokerage.jedi.json"]]
    assert (record["plugin"], record["chosen"], record["initial"], record["final"]) == ("atlas_prod_task", "GOOD", 3, 1)


def test_an_analysis_cycles_decisions_name_the_master_dataset(logged, django_capture_on_commit_callbacks):
    # a user task over the one-queue grid and an analysis queue ANALY_SAT reading SAT_DATADISK: its job set goes to
    # ANALY_SAT, written as AtlasAnalJobBroker writes it, prefixed with the task and its master input dataset
    grid = make_one_queue_grid()
    queue = factories.PandaQueueFactory(
        name="ANALY_SAT", site=grid.site, type="analysis", corecount=1, maxrss=4000, releases=["ANY"]
    )
    for role in ("read_lan", "write_lan"):
        factories.QueueStorageFactory(queue=queue, endpoint=StorageEndpoint.objects.get(name="SAT_DATADISK"), role=role)
    work_queue = factories.WorkQueueFactory(queue_name="user", queue_type="analysis", queue_share=None)
    task = make_ready_task(work_queue, files=3, nScoutJobs=0, nFilesPerJob=3)
    Task.objects.filter(pk=task.pk).update(
        prodSourceLabel="user", userName="jdoe", gshare="User Analysis", coreCount=1, ramUnit="MB", nucleus=""
    )
    with django_capture_on_commit_callbacks(execute=True):
        job_generation_cycle_run(work_queue_id=work_queue.pk, now=timezone.now())
    master = Dataset.objects.get(task=task, type="input")
    prefix = f"<jediTaskID={task.pk} datasetID={master.pk}> "
    lines = logged["brokerage.jedi.AtlasAnalJobBroker"]
    assert all(line.startswith(prefix) for line in lines)
    assert lines[:2] == [prefix + "start", prefix + "!!! look for candidates WITH data locality check"]
    assert any(line.startswith(prefix + "  use site=ANALY_SAT with weight=") for line in lines)
    assert prefix + "data locality check: True" in lines
    assert lines[-1] == prefix + "done"


def test_nothing_is_written_or_read_when_the_loggers_are_off(django_assert_num_queries):
    from brokerage.adapters.decision_log import decisions_log
    from brokerage.engine.panda.jedi_grammars import GRAMMARS
    from tests.engine.builders import decide, job_scenario, queue

    decision = decide(job_scenario(queue("OK_Q")))
    assert decision.plugin in GRAMMARS
    for name in ("brokerage.jedi.AtlasProdJobBroker", "brokerage.jedi.json"):
        assert not logging.getLogger(name).isEnabledFor(logging.INFO)  # the suite's settings: BROKERAGE_LOG off
    with django_assert_num_queries(0):  # not even the task's priority is read
        assert decisions_log([(decision, 1)]) == 0


def test_brokerage_log_values():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "BROKERAGE_LOG": "loud"}
    script = "import django; django.setup()"
    refused = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "BROKERAGE_LOG='loud': give off, jedi, json or both" in refused.stderr
    check = (
        "import django, logging; django.setup(); "
        "print(logging.getLogger('brokerage.jedi.AtlasProdJobBroker').isEnabledFor(logging.INFO), "
        "logging.getLogger('brokerage.jedi.json').isEnabledFor(logging.INFO))"
    )
    for value, expected in (
        ("jedi", "True False"),
        ("json", "False True"),
        ("both", "True True"),
        ("off", "False False"),
    ):
        ran = subprocess.run([sys.executable, "-c", check], env={**env, "BROKERAGE_LOG": value}, capture_output=True,
                             text=True, timeout=60, check=True)  # fmt: skip
        assert ran.stdout.strip() == expected, value
