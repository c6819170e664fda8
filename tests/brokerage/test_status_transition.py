"""status_transition: every legal move of every entity through the database, and illegal moves refused."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from brokerage import states
from brokerage.models import Dataset, DatasetStatusLog, Event, Job, JobStatusLog, Task, TaskStatusLog
from brokerage.services.status import status_transition, status_transition_many
from tests import factories

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def edges(machine):
    return [(source, target) for source in machine.statuses for target in sorted(machine.transitions[source])]


def make(machine, status):
    """A row of the machine's entity sitting in `status` (set directly: this is the test's starting point)."""
    if machine is states.TASK:
        return factories.TaskFactory(status=status)
    if machine is states.JOB:
        return factories.JobFactory(jobStatus=status)
    if machine is states.EVENT:
        return factories.EventFactory(status=status)
    if machine is states.DIRAC_JOB:
        return factories.DiracJobFactory(status=status)
    if machine is states.WMCORE_ELEMENT:
        return factories.WMCoreElementFactory(Status=status)
    if machine is states.WMCORE_REQUEST:
        return factories.WMCoreRequestFactory(RequestStatus=status)
    if machine is states.WMBS_JOB:
        return factories.WMBSJobFactory(state=status)
    if machine in (states.INPUT_DATASET, states.OUTPUT_DATASET):
        kind = "input" if machine is states.INPUT_DATASET else "output"
        return factories.DatasetFactory(type=kind, status=status)
    kind = "input" if machine is states.INPUT_FILE else "output"
    dataset = factories.DatasetFactory(type=kind, status="defined")
    return factories.DatasetFileFactory(dataset=dataset, status=status)


LEGAL = [(machine, source, target) for machine in states.MACHINES.values() for source, target in edges(machine)]


@pytest.mark.django_db
@pytest.mark.parametrize(("machine", "source", "target"), LEGAL, ids=lambda v: getattr(v, "entity", v))
def test_every_legal_move_is_stored_and_logged(machine, source, target):
    # given
    obj = make(machine, source)
    # when
    status_transition(obj=obj, new_status=target, reason="test move", actor="pytest", now=NOW)
    # then
    stored = type(obj).objects.get(pk=obj.pk)
    assert stored.current_status == target == obj.current_status
    log = list(stored.status_log.all()) if hasattr(stored, "status_log") else None
    if log is not None:
        assert [(e.old_status, e.new_status, e.reason, e.actor, e.timestamp) for e in log] == [
            (source, target, "test move", "pytest", NOW)
        ]


def _illegal_sample(seed=2026, per_machine=12):
    rng = random.Random(seed)
    sample = []
    for machine in states.MACHINES.values():
        pairs = [(s, t) for s in machine.statuses for t in machine.statuses if t not in machine.transitions[s]]
        sample += [(machine, s, t) for s, t in rng.sample(pairs, min(per_machine, len(pairs)))]
    return sample


@pytest.mark.django_db
@pytest.mark.parametrize(("machine", "source", "target"), _illegal_sample(), ids=lambda v: getattr(v, "entity", v))
def test_illegal_moves_raise_and_change_nothing(machine, source, target):
    obj = make(machine, source)
    before = type(obj).objects.filter(pk=obj.pk).values().get()
    with pytest.raises(states.IllegalTransition) as caught:
        status_transition(obj=obj, new_status=target, reason="should fail", now=NOW)
    assert caught.value.from_status == source
    assert type(obj).objects.filter(pk=obj.pk).values().get() == before
    assert obj.current_status == source
    assert not TaskStatusLog.objects.exists()
    assert not JobStatusLog.objects.exists()
    assert not DatasetStatusLog.objects.exists()


@pytest.mark.django_db
def test_a_stale_object_cannot_slip_an_illegal_move_through():
    # given a task another process already finished
    task = factories.TaskFactory(status="running")
    Task.objects.filter(pk=task.pk).update(status="aborted")
    # when this process, still holding 'running', tries to pause it
    with pytest.raises(states.IllegalTransition, match="from 'aborted' to 'paused'"):
        status_transition(obj=task, new_status="paused", now=NOW)
    # then the database keeps what the other process wrote
    assert Task.objects.get(pk=task.pk).status == "aborted"


@pytest.mark.django_db
def test_unknown_status_is_refused_before_touching_the_row():
    job = factories.JobFactory(jobStatus="defined")
    with pytest.raises(states.UnknownStatus):
        status_transition(obj=job, new_status="runing", now=NOW)
    assert Job.objects.get(pk=job.pk).jobStatus == "defined"


@pytest.mark.django_db
def test_task_moves_keep_old_status_and_set_start_and_end_times():
    task = factories.TaskFactory(status="ready")
    status_transition(obj=task, new_status="scouting", now=NOW)
    status_transition(obj=task, new_status="running", now=NOW + timedelta(hours=1))
    status_transition(obj=task, new_status="prepared", now=NOW + timedelta(hours=5))
    status_transition(obj=task, new_status="done", now=NOW + timedelta(hours=6))
    stored = Task.objects.get(pk=task.pk)
    assert stored.oldStatus == "prepared"
    assert stored.startTime == NOW  # the first start counts, not the later 'running'
    assert stored.endTime == NOW + timedelta(hours=6)
    assert stored.stateChangeTime == NOW + timedelta(hours=6)
    assert list(stored.status_log.values_list("new_status", flat=True)) == ["scouting", "running", "prepared", "done"]


@pytest.mark.django_db
def test_paused_task_resumes_to_the_status_it_had():
    task = factories.TaskFactory(status="running")
    status_transition(obj=task, new_status="paused", reason="operator pause", now=NOW)
    assert Task.objects.get(pk=task.pk).oldStatus == "running"
    status_transition(obj=task, new_status=task.oldStatus, reason="resume", now=NOW + timedelta(minutes=5))
    assert Task.objects.get(pk=task.pk).status == "running"


@pytest.mark.django_db
def test_job_log_keeps_the_queue_and_the_job_gets_its_times():
    job = factories.JobFactory(jobStatus="starting", computingSite="MWT2")
    status_transition(obj=job, new_status="running", now=NOW)
    status_transition(obj=job, new_status="finished", now=NOW + timedelta(hours=3))
    stored = Job.objects.get(pk=job.pk)
    assert (stored.startTime, stored.endTime) == (NOW, NOW + timedelta(hours=3))
    assert list(stored.status_log.values_list("computingSite", "new_status")) == [
        ("MWT2", "running"),
        ("MWT2", "finished"),
    ]


@pytest.mark.django_db
def test_input_and_output_rows_follow_their_own_machines():
    output = factories.DatasetFactory(type="output", status="ready")
    status_transition(obj=output, new_status="running", now=NOW)  # legal for outputs only
    dataset_input = factories.DatasetFactory(type="input", status="ready")
    with pytest.raises(states.UnknownStatus, match="'running' is not an input dataset status"):
        status_transition(obj=dataset_input, new_status="running", now=NOW)
    event = factories.EventFactory(status="ready")
    status_transition(obj=event, new_status="sent", now=NOW)
    assert Event.objects.get(pk=event.pk).status == "sent"


@pytest.mark.django_db
def test_many_rows_each_checked_against_their_own_machine():
    """An input and an output dataset moved together: defined → broken is legal for inputs only (seed 002 has no
    broken output dataset), so a mixed move is refused whole; inputs alone move and are logged."""
    inputs = [factories.DatasetFactory(type="input", status="defined") for _ in range(2)]
    output = factories.DatasetFactory(type="output", status="defined")
    with pytest.raises(states.UnknownStatus, match="'broken' is not an output dataset status"):
        status_transition_many(
            model=Dataset, ids=[d.pk for d in [*inputs, output]], from_status="defined", to_status="broken", now=NOW
        )
    assert set(Dataset.objects.values_list("status", flat=True)) == {"defined"}
    moved = status_transition_many(
        model=Dataset, ids=[d.pk for d in inputs], from_status="defined", to_status="broken", reason="gone", now=NOW
    )
    assert moved == sorted(d.pk for d in inputs)
    assert list(DatasetStatusLog.objects.filter(new_status="broken").values_list("dataset_id", "reason")) == [
        (inputs[0].pk, "gone"),
        (inputs[1].pk, "gone"),
    ]
