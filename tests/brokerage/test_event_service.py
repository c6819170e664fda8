"""How an event service job ends (brokerage.event_service; seed 002, "Final status of Event Service jobs";
JobComplexModule.ppEventServiceJob, 1.0.4), each outcome with worked numbers."""

import pytest

from brokerage.event_service import EsJobEnd, es_job_end, range_after_failure


def end(**values):
    base = dict(
        processed=2, failed=0, attempt=1, max_attempt=3, fatal_in_set=0, left_in_set=0, done_in_set=4, others_active=0
    )
    return es_job_end(EsJobEnd(**{**base, **values}))


def test_the_last_job_of_a_set_with_every_range_done_is_merged():
    outcome = end()
    assert (outcome.status, outcome.substatus, outcome.code, outcome.merge) == ("merging", "es_merge", 112, True)


def test_others_still_running_it_waits_in_merging():
    outcome = end(others_active=1)
    assert (outcome.status, outcome.substatus, outcome.code, outcome.merge) == ("merging", "es_wait", 115, False)
    assert outcome.diag == "no further action: 1 other consumers of its job set still running"


def test_ranges_left_are_retried_by_a_new_consumer():
    # 1 of its 2 ranges done, 1 failed (ready again): merging, es_retry, a consumer for the one left
    outcome = end(processed=1, failed=1, left_in_set=1)
    assert (outcome.status, outcome.substatus, outcome.code, outcome.retry) == ("merging", "es_retry", 111, True)
    # none done: closed, es_inaction, retried all the same
    outcome = end(processed=0, failed=2, left_in_set=2, done_in_set=0)
    assert (outcome.status, outcome.substatus, outcome.code, outcome.retry) == ("closed", "es_inaction", 117, True)


def test_its_last_attempt_with_ranges_left_fails_it_and_the_ranges():
    outcome = end(processed=1, failed=1, left_in_set=1, attempt=3, max_attempt=3)
    assert (outcome.status, outcome.code, outcome.fatal_left, outcome.abort_others) == ("failed", 114, True, True)
    assert outcome.diag == "its attempt 3 of 3 ended with 1 event ranges left"


def test_a_fatal_range_in_its_set_fails_it_and_aborts_the_others():
    outcome = end(processed=1, failed=1, fatal_in_set=1)
    assert (outcome.status, outcome.code, outcome.abort_others) == ("failed", 114, True)


def test_every_range_failed_nothing_to_merge():
    outcome = end(processed=0, failed=2, done_in_set=0)
    assert (outcome.status, outcome.code, outcome.diag) == ("failed", 119, "all event ranges failed")


def test_nothing_processed_while_others_run_or_after_the_set_is_done():
    assert (end(processed=0, others_active=2).status, end(processed=0, others_active=2).substatus) == (
        "closed", "es_inaction"
    )  # fmt: skip
    last = end(processed=0)
    assert (last.status, last.substatus, last.merge) == ("closed", "es_inaction", True)


@pytest.mark.parametrize(("attempt", "expected"), [(1, "ready"), (9, "ready"), (10, "fatal"), (11, "fatal")])
def test_a_failed_range_is_retried_up_to_max_attempt_es_job(attempt, expected):
    # JEDI's maxAttemptEsJob default 10: the 10th failed attempt is fatal
    assert range_after_failure(attempt=attempt, max_attempt=10) == expected


def test_a_job_the_pilot_failed_is_failed_pilot_failed_and_its_ranges_still_retried():
    # 1 of 2 ranges done, 1 left: es_retry's consumer is still made, the job itself is failed
    outcome = end(processed=1, failed=1, left_in_set=1, lost="pilot_failed")
    assert (outcome.status, outcome.substatus, outcome.code, outcome.retry) == ("failed", "pilot_failed", 111, True)
    assert outcome.diag == "the pilot failed it; 1 unprocessed event ranges retried"


def test_a_lost_heartbeat_fails_a_job_only_when_it_processed_nothing():
    # no range processed, 2 left: es_heartbeat (not closed es_inaction), retried
    outcome = end(processed=0, failed=2, left_in_set=2, done_in_set=0, lost="es_heartbeat")
    assert (outcome.status, outcome.substatus, outcome.code, outcome.retry) == ("failed", "es_heartbeat", 117, True)
    assert outcome.diag == "its heartbeat was lost; processed no event range: 2 retried"
    # one range processed before the heartbeat went: an ES job like any other (merging, es_retry)
    outcome = end(processed=1, failed=1, left_in_set=1, lost="es_heartbeat")
    assert (outcome.status, outcome.substatus) == ("merging", "es_retry")
