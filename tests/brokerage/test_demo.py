"""The demo grid: loads once, is coherent (every status reached through the state machines), and refuses twice."""

import itertools
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from brokerage import models, states
from brokerage.selectors.gdpconfig import gdpconfig_get
from brokerage.services.demo import demo_is_needed, demo_load

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def test_demo_builds_a_grid_with_tasks_in_many_states():
    counts = demo_load(now=NOW)
    assert counts["sites"] == 9
    assert counts["queues"] == 12
    assert counts["tasks"] == 13
    assert models.Site.objects.filter(role="nucleus").count() == 4
    assert models.SoftwareTags.objects.filter(name="ALL").exists()
    statuses = set(models.Task.objects.values_list("status", flat=True))
    assert {"running", "pending", "done", "broken", "aborted", "exhausted", "registered", "assigning"} <= statuses
    assert gdpconfig_get(key="DISK_THRESHOLD", gshare="Express") == 50
    assert gdpconfig_get(key="NQUEUED_SAT_CAP", vo="atlas") == 200


def test_every_demo_status_has_a_legal_history():
    demo_load(now=NOW)
    for task in models.Task.objects.prefetch_related("status_log"):
        log = list(task.status_log.all())
        if not log:
            assert task.status in states.TASK.initial
            continue
        assert log[-1].new_status == task.status
        for before, after in itertools.pairwise(log):
            assert before.new_status == after.old_status
            assert states.TASK.is_allowed(after.old_status, after.new_status)
    for job in models.Job.objects.prefetch_related("status_log"):
        assert job.status_log.last().new_status == job.jobStatus
    assert models.TaskStatusLog.objects.filter(timestamp__gt=NOW).count() == 0


def test_command_loads_only_into_an_empty_database():
    assert demo_is_needed()
    out = StringIO()
    call_command("load_demo", "--if-empty", stdout=out)
    assert "Demo grid loaded" in out.getvalue()
    assert not demo_is_needed()
    out = StringIO()
    call_command("load_demo", "--if-empty", stdout=out)
    assert "already holds data" in out.getvalue()
    with pytest.raises(CommandError) as caught:
        call_command("load_demo")
    assert caught.value.returncode == 2


def test_make_run_brokers_the_waiting_demo_tasks():
    from brokerage.models import Decision
    from brokerage.services.cycles import task_brokerage_cycle_run

    demo_load(now=NOW)
    waiting = set(models.Task.objects.filter(status="assigning").values_list("pk", flat=True))
    # the demo task pending in task brokerage for days is due for its retry as well
    waiting |= set(models.Task.objects.filter(status="pending", oldStatus="assigning").values_list("pk", flat=True))
    assert len(waiting) == 3
    cycle = task_brokerage_cycle_run(now=NOW)
    assert cycle.n_decisions == 3
    assert set(Decision.objects.values_list("task_id", flat=True)) == waiting
    assert set(models.Task.objects.filter(pk__in=waiting).values_list("status", flat=True)) <= {"ready", "pending"}
