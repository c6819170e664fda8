"""How a task ends (brokerage.engine.panda.task_outcome): goal, completeness, exhausted, failed under a goal, the
termination condition, the failure rate and a file's last attempt, each at its edges."""

import pytest

from brokerage.engine.panda.task_outcome import (
    TaskInputCounts,
    file_attempt_limits,
    file_attempts_used_up,
    task_completeness,
    task_failure_rate,
    task_goal,
    task_outcome,
    termination_percent,
    termination_reached,
)


@pytest.mark.parametrize(
    ("asked", "kept"),
    [(90, 900), ("95.5", 955), (100, 1000), (0, 0), (100.1, None), (-1, None), ("most", None), (None, None)],
)
def test_the_goal_is_kept_in_permille_and_none_over_a_hundred_percent(asked, kept):
    assert task_goal(asked) == kept


def test_completeness_counts_events_when_the_inputs_have_them():
    assert task_completeness(TaskInputCounts(files=4, finished=1, events=4000, events_finished=1000)) == 250.0
    # without events, files: 3 of 8 finished = 375 ‰
    assert task_completeness(TaskInputCounts(files=8, finished=3)) == 375.0
    assert task_completeness(TaskInputCounts(files=0, finished=0)) == 0.0


def outcome(files, finished, **rules):
    return task_outcome(TaskInputCounts(files=files, finished=finished, failed=files - finished), **rules)


def test_done_failed_and_finished_by_what_finished():
    assert outcome(10, 10, goal=None).status == "done"
    assert outcome(10, 0, goal=None).status == "failed"
    finished = outcome(10, 7, goal=None)
    assert (finished.status, finished.reason) == ("finished", "7 of 10 input files finished, 3 failed")


def test_exhausted_only_under_the_goal_and_never_once_passed():
    # 7 of 10 = 700 ‰: under a goal of 80 %, exhausted; at a goal of 70 % exactly, reached: finished
    under = outcome(10, 7, goal=800, use_exhausted=True)
    assert (under.status, under.reason) == (
        "exhausted",
        "7 of 10 input files finished, 3 failed: 70.0% complete against a goal of 80.0%, waiting for a human",
    )
    assert outcome(10, 7, goal=700, use_exhausted=True).status == "finished"
    # no goal is never reached (PostProcessorBase: checkGoal is False without one)
    assert outcome(10, 9, goal=None, use_exhausted=True).status == "exhausted"
    # nothing finished fails, exhausted or not; once passed it goes on to its final status
    assert outcome(10, 0, goal=None, use_exhausted=True).status == "failed"
    assert outcome(10, 7, goal=800, use_exhausted=True, passed=True).status == "finished"


def test_failed_when_the_goal_is_unreached_and_the_task_says_so():
    assert outcome(10, 7, goal=800, fail_goal_unreached=True).status == "failed"
    assert outcome(10, 8, goal=800, fail_goal_unreached=True).status == "finished"
    # without a goal the goal is the whole task
    assert outcome(10, 9, goal=None, fail_goal_unreached=True).status == "failed"
    # an exhausted task passed by a human fails by the same rule
    assert outcome(10, 7, goal=800, fail_goal_unreached=True, use_exhausted=True, passed=True).status == "failed"


@pytest.mark.parametrize(("condition", "percent"), [("90%", 90.0), ("90", 90.0), (75, 75.0), (" 50 % ", 50.0)])
def test_a_termination_condition_names_a_share_of_files(condition, percent):
    assert termination_percent(condition) == percent


@pytest.mark.parametrize("condition", ["", None, "0%", "101%", "x86_64-el9", "when done"])
def test_anything_else_is_no_termination_condition(condition):
    assert termination_percent(condition) is None
    assert not termination_reached(condition, TaskInputCounts(files=10, finished=10))


def test_the_termination_condition_is_met_at_its_share_exactly():
    assert not termination_reached("90%", TaskInputCounts(files=10, finished=8))
    assert termination_reached("90%", TaskInputCounts(files=10, finished=9))
    # 899 of 1000 is under 90 %
    assert not termination_reached("90%", TaskInputCounts(files=1000, finished=899))


def test_the_failure_rate_is_the_share_of_failed_attempts():
    assert task_failure_rate(TaskInputCounts(files=4, finished=2, attempts=6, failed_attempts=4)) == 66
    assert task_failure_rate(TaskInputCounts(files=4, finished=0)) is None


@pytest.mark.parametrize(
    ("attempt_nr", "max_attempt", "failed_attempt", "max_failure", "failed", "last"),
    [
        (1, 3, 1, None, True, False),  # 2nd of 3 attempts
        (2, 3, 2, None, True, True),  # 3rd of 3
        (0, 5, 1, 2, True, True),  # 2nd failure of 2 allowed, attempts left
        (0, 5, 1, 2, False, False),  # a closed job's attempt is no failure
        (4, 5, 0, 2, False, True),  # ... but still an attempt
        (0, None, 0, None, True, False),  # no limits
    ],
)
def test_a_files_last_attempt(attempt_nr, max_attempt, failed_attempt, max_failure, failed, last):
    assert (
        file_attempts_used_up(
            attempt_nr=attempt_nr,
            max_attempt=max_attempt,
            failed_attempt=failed_attempt,
            max_failure=max_failure,
            failed=failed,
        )
        is last
    )


def test_new_files_take_their_limits_from_the_task():
    assert file_attempt_limits({}) == (3, None)
    assert file_attempt_limits({"maxAttempt": 10, "maxFailure": 3}) == (10, 3)
