"""The state-machine tables and the throttled-period rule (pure Python, no database)."""

import itertools
import random

import pytest

from brokerage import states

ALL_MACHINES = list(states.MACHINES.values())


def test_each_machine_lists_exactly_the_seed_statuses():
    # seed 002 "Transition of task/dataset/file/event status"; REFERENCE.md "Job statuses"
    assert set(states.TASK.statuses) == {
        "registered",
        "defined",
        "assigning",
        "ready",
        "pending",
        "scouting",
        "scouted",
        "running",
        "prepared",
        "done",
        "failed",
        "finished",
        "aborting",
        "aborted",
        "finishing",
        "topreprocess",
        "preprocessing",
        "tobroken",
        "broken",
        "toretry",
        "toincexec",
        "rerefine",
        "paused",
        "throttled",
        "exhausted",
        "passed",
    }
    assert set(states.INPUT_DATASET.statuses) == {"defined", "toupdate", "pending", "broken", "ready", "done"}
    assert set(states.OUTPUT_DATASET.statuses) == {"defined", "ready", "running", "prepared", "done"}
    assert set(states.INPUT_FILE.statuses) == {
        "ready",
        "missing",
        "lost",
        "broken",
        "picked",
        "running",
        "finished",
        "failed",
        "partial",
    }
    assert set(states.OUTPUT_FILE.statuses) == {"defined", "running", "prepared", "merging", "finished", "failed"}
    assert set(states.EVENT.statuses) == {
        "ready",
        "sent",
        "running",
        "finished",
        "cancelled",
        "discarded",
        "done",
        "failed",
        "fatal",
        "merged",
        "corrupted",
    }
    assert set(states.JOB.statuses) == {
        "pending",
        "defined",
        "waiting",
        "assigned",
        "throttled",
        "activated",
        "sent",
        "starting",
        "running",
        "holding",
        "merging",
        "transferring",
        "finished",
        "failed",
        "closed",
        "cancelled",
    }


@pytest.mark.parametrize("machine", ALL_MACHINES, ids=lambda m: m.entity)
def test_every_status_is_reachable_from_an_initial_status(machine):
    reached = set(machine.initial)
    frontier = list(machine.initial)
    while frontier:
        for target in machine.transitions[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(machine.statuses)


@pytest.mark.parametrize("machine", ALL_MACHINES, ids=lambda m: m.entity)
def test_final_statuses_allow_no_move(machine):
    for final in machine.final:
        for target in machine.statuses:
            with pytest.raises(states.IllegalTransition):
                machine.check(final, target)


def test_finals_are_the_ends_the_seeds_describe():
    assert states.TASK.final == {"aborted", "broken"}
    assert states.JOB.final == {"finished", "failed", "closed", "cancelled"}
    assert states.EVENT.final == {"fatal", "merged"}
    assert states.INPUT_FILE.final == {"broken", "finished"}
    assert states.OUTPUT_FILE.final == {"finished", "failed"}
    assert states.INPUT_DATASET.final == {"broken"}


@pytest.mark.parametrize(
    ("machine", "source", "target"),
    [
        (states.TASK, "done", "running"),
        (states.TASK, "registered", "running"),
        (states.TASK, "failed", "toretry"),  # seed 002: only finished or exhausted tasks are retried
        (states.TASK, "aborted", "ready"),
        (states.JOB, "finished", "running"),
        (states.JOB, "defined", "running"),
        (states.JOB, "running", "activated"),
        (states.EVENT, "merged", "ready"),
        (states.INPUT_FILE, "finished", "ready"),
        (states.OUTPUT_DATASET, "done", "defined"),
    ],
)
def test_named_illegal_moves_are_refused_with_the_allowed_list(machine, source, target):
    with pytest.raises(states.IllegalTransition) as caught:
        machine.check(source, target, identifier=42)
    error = caught.value
    assert (error.from_status, error.to_status, error.identifier) == (source, target, 42)
    assert error.allowed == tuple(sorted(machine.transitions[source]))
    assert f"cannot go from '{source}' to '{target}'" in str(error)


@pytest.mark.parametrize("machine", ALL_MACHINES, ids=lambda m: m.entity)
def test_every_listed_move_passes_and_every_other_pair_fails(machine):
    for source, target in itertools.product(machine.statuses, repeat=2):
        if target in machine.transitions[source]:
            machine.check(source, target)
        else:
            with pytest.raises(states.IllegalTransition):
                machine.check(source, target)


def test_unknown_status_names_the_entity_and_the_word():
    with pytest.raises(states.UnknownStatus, match="'runing' is not a job status"):
        states.JOB.check("defined", "runing")


def test_machine_refuses_a_table_that_points_nowhere():
    with pytest.raises(ValueError, match="unknown statuses"):
        states.StateMachine("thing", {"a": frozenset({"b"})}, frozenset({"a"}))


def test_dataset_and_file_types_choose_their_machine():
    assert states.dataset_machine("input") is states.INPUT_DATASET
    assert states.dataset_machine("pseudo_input") is states.INPUT_DATASET
    assert states.dataset_machine("log") is states.OUTPUT_DATASET
    assert states.file_machine("output") is states.OUTPUT_FILE


@pytest.mark.parametrize(
    ("max_attempt_nr", "minutes"),
    # seed 002: 120 × int(max(attemptNr)/5)² minutes
    [(0, 0), (4, 0), (5, 120), (9, 120), (10, 480), (14, 480), (15, 1080), (20, 1920)],
)
def test_throttled_period(max_attempt_nr, minutes):
    assert states.throttled_period_minutes(max_attempt_nr) == minutes


def test_throttled_period_refuses_negative_attempts():
    with pytest.raises(ValueError, match="negative"):
        states.throttled_period_minutes(-1)


def test_random_walks_only_take_listed_moves():
    rng = random.Random(7)
    for machine in ALL_MACHINES:
        status = sorted(machine.initial)[0]
        for _ in range(50):
            options = sorted(machine.transitions[status])
            if not options:
                break
            nxt = rng.choice(options)
            assert machine.is_allowed(status, nxt)
            status = nxt


def test_active_job_statuses_are_those_with_a_way_out():
    assert states.JOB_ACTIVE == (
        "pending",
        "defined",
        "waiting",
        "assigned",
        "throttled",
        "activated",
        "sent",
        "starting",
        "running",
        "holding",
        "merging",
        "transferring",
    )
