"""Every timeout rule of seed 000 ("Timeout Rules"), each at its limit, one second before and one after."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.watchdog import TimeoutJob, TimeoutLimits, TimeoutQueue, job_timeout_state

T0 = datetime(2026, 11, 1, 12, tzinfo=UTC)
SECOND = timedelta(seconds=1)
LIMITS = TimeoutLimits()
BUSY = TimeoutQueue(lastStart=T0)  # a job started there at T0: active for the next 2 hours


def job(status, *, priority=500, changed=T0, heartbeat=None, sub_status=""):
    return TimeoutJob(status, priority, changed, heartbeat or changed, sub_status)


def check_edges(the_job, queue, rule, limit, limits=LIMITS):
    """At the limit the job has timed out, one second before it has not, one second after it has."""
    deadline = T0 + limit
    before = job_timeout_state(the_job, queue, limits, deadline - SECOND)
    at = job_timeout_state(the_job, queue, limits, deadline)
    after = job_timeout_state(the_job, queue, limits, deadline + SECOND)
    assert (before.rule, before.deadline, before.left, before.timed_out) == (rule, deadline, SECOND, False)
    assert (at.rule, at.left, at.timed_out) == (rule, timedelta(0), True)
    assert (after.rule, after.left, after.timed_out) == (rule, -SECOND, True)


@pytest.mark.parametrize(
    ("status", "limit"),
    [
        ("pending", timedelta(hours=1)),
        ("waiting", timedelta(minutes=30)),  # seed 002, Timeout values for production jobs
        ("defined", timedelta(hours=4)),
        ("assigned", timedelta(hours=12)),
        ("throttled", timedelta(days=7)),
        ("sent", timedelta(minutes=30)),
    ],
)
def test_simple_status_rules(status, limit):
    check_edges(job(status), BUSY, status, limit)


def test_activated_two_days_at_an_active_queue():
    # the queue keeps starting jobs: lastStart moves with time, so the high-priority rule never applies
    the_job = job("activated", priority=900)
    for moment in (T0 + timedelta(days=2) - SECOND, T0 + timedelta(days=2)):
        queue = TimeoutQueue(lastStart=moment - timedelta(minutes=5))
        state = job_timeout_state(the_job, queue, LIMITS, moment)
        assert state.rule == "activated"
        assert state.timed_out == (moment >= T0 + timedelta(days=2))


def test_activated_low_priority_ignores_an_inactive_queue():
    check_edges(job("activated", priority=799), TimeoutQueue(lastStart=None), "activated", timedelta(days=2))


@pytest.mark.parametrize(
    "queue",
    [
        TimeoutQueue(lastStart=T0 - timedelta(hours=2, seconds=1)),  # last start older than 2 hours
        TimeoutQueue(lastStart=None),  # never started a job
        TimeoutQueue(status="test", lastStart=T0 + timedelta(days=9)),  # test queue, however busy
        TimeoutQueue(status="offline", lastStart=T0 + timedelta(days=9)),
    ],
)
def test_activated_high_priority_four_hours_at_inactive_test_or_offline_queues(queue):
    check_edges(job("activated", priority=800), queue, "activated_high_priority", timedelta(hours=4))


def test_the_inactive_queue_boundary_is_two_hours():
    # exactly 2 hours since the last start is not yet "older than 2 hours"
    queue = TimeoutQueue(lastStart=T0 + timedelta(hours=2))
    state = job_timeout_state(job("activated", priority=800), queue, LIMITS, T0 + timedelta(hours=4))
    assert state.rule == "activated"
    assert not state.timed_out


def test_starting_jobs_also_need_heartbeats():
    # starting since T0 (2 days), last heartbeat at T0 + 1 h: the heartbeat rule fires at T0 + 3 h
    the_job = job("starting", heartbeat=T0 + timedelta(hours=1))
    state = job_timeout_state(the_job, BUSY, LIMITS, T0 + timedelta(hours=3))
    assert (state.rule, state.timed_out) == ("heartbeat", True)


def test_running_21_days_when_heartbeats_keep_coming():
    the_job = job("running", heartbeat=T0 + timedelta(days=21))
    check_edges(the_job, BUSY, "running", timedelta(days=21))


def test_running_without_heartbeat_for_two_hours():
    check_edges(job("running"), BUSY, "heartbeat", timedelta(hours=2))


def test_heartbeat_timeout_per_workflow():
    limits = TimeoutLimits(workflow_heartbeats={"pull_ups": 6})
    queue = TimeoutQueue(workflow="pull_ups", lastStart=T0)
    check_edges(job("running"), queue, "heartbeat", timedelta(hours=6), limits)
    check_edges(job("running"), TimeoutQueue(workflow="push", lastStart=T0), "heartbeat", timedelta(hours=2), limits)


def test_transferring_with_own_stage_out_uses_the_workflow_heartbeat():
    limits = TimeoutLimits(workflow_heartbeats={"pull_ups": 6})
    queue = TimeoutQueue(workflow="pull_ups", transtimelo=3)
    check_edges(job("transferring", sub_status="stageout"), queue, "transferring_heartbeat", timedelta(hours=6), limits)


def test_transferring_days_from_the_queue_by_priority():
    queue = TimeoutQueue(transtimehi=1, transtimelo=5)
    check_edges(job("transferring", priority=800), queue, "transferring", timedelta(days=1))
    check_edges(job("transferring", priority=799), queue, "transferring", timedelta(days=5))
    # no jobSubStatus: the own-stage-out rule does not apply even for a workflow with its own heartbeat
    limits = TimeoutLimits(workflow_heartbeats={"pull_ups": 6})
    with_workflow = TimeoutQueue(workflow="pull_ups", transtimelo=5)
    check_edges(job("transferring"), with_workflow, "transferring", timedelta(days=5), limits)


def test_transferring_defaults_when_the_queue_sets_no_days():
    check_edges(job("transferring", priority=900), TimeoutQueue(), "transferring", timedelta(days=2))
    check_edges(job("transferring", priority=100), TimeoutQueue(), "transferring", timedelta(days=3))


def test_holding_three_hours_for_high_priority_else_three_days():
    check_edges(job("holding", priority=800), BUSY, "holding_high_priority", timedelta(hours=3))
    check_edges(job("holding", priority=799), BUSY, "holding", timedelta(days=3))


@pytest.mark.parametrize(
    "queue", [TimeoutQueue(status="paused"), TimeoutQueue(catchall="bareNucleus=allow,disableReassign")]
)
@pytest.mark.parametrize("status", ["pending", "activated", "running", "transferring", "holding"])
def test_every_rule_is_disabled_at_paused_or_disable_reassign_queues(queue, status):
    state = job_timeout_state(job(status), queue, LIMITS, T0 + timedelta(days=100))
    assert state.rule is None
    assert not state.timed_out
    assert state.sentence.startswith("timeouts disabled")


def test_final_statuses_have_no_timeout():
    state = job_timeout_state(job("finished"), BUSY, LIMITS, T0 + timedelta(days=100))
    assert (state.rule, state.deadline, state.timed_out) == (None, None, False)


def test_sentences_give_the_limit():
    assert job_timeout_state(job("sent"), BUSY, LIMITS, T0).sentence == "sent for 30 min"
    assert job_timeout_state(job("throttled"), BUSY, LIMITS, T0).sentence == "throttled for 7 days"
    assert job_timeout_state(job("running"), BUSY, LIMITS, T0).sentence == "no heartbeat for 2 h"


def test_limits_come_from_gdpconfig():
    from brokerage.gdpconfig import ConfigView

    view = ConfigView({("TIMEOUT_SENT", ""): 1.0, ("HEARTBEAT_TIMEOUT_pull_ups", ""): 6.0})
    limits = TimeoutLimits.from_config(view.get, workflows=("pull_ups", "push"))
    assert limits.sent == 1.0
    assert limits.assigned == 12
    assert limits.workflow_heartbeats == {"pull_ups": 6.0}


def test_the_panda_profile_waits_an_hour_for_waiting_jobs():
    # seed 002 says 30 min; copyArchive.py (panda-server 1.0.4) times out waiting jobs after an hour
    from brokerage.gdpconfig import ConfigView

    for profile, limit in (("seed", timedelta(minutes=30)), ("panda", timedelta(hours=1))):
        limits = TimeoutLimits.from_config(ConfigView({}, profile=profile).get)
        check_edges(job("waiting"), BUSY, "waiting", limit, limits)


def test_analysis_jobs_not_started_in_12_hours_are_reattempted():
    analysis = TimeoutJob("activated", 500, T0, T0, "", analysis=True)
    check_edges(analysis, BUSY, "analysis_rebrokerage", timedelta(hours=12))
    # production jobs wait the 2 days
    check_edges(job("activated"), BUSY, "activated", timedelta(days=2))


def test_in_the_demo_the_deadlines_run_on_the_grid_clock():
    # issue 35: the demo's grid runs 60 grid minutes per real minute; its jobs time out at the same pace, the rule
    # still saying the grid's figure. Running job, heartbeat 2 h: 2 real minutes at speed 60.
    fast = TimeoutLimits(grid_speed=60)
    running = job("running", heartbeat=T0)
    state = job_timeout_state(running, BUSY, fast, T0 + timedelta(minutes=1))
    assert (state.rule, state.left) == ("heartbeat", timedelta(minutes=1))
    assert state.sentence.startswith("no heartbeat for 2 h")
    assert "grid time: the demo's grid runs 60× faster" in state.sentence
    assert job_timeout_state(running, BUSY, fast, T0 + timedelta(minutes=2)).timed_out
    # the inactive-queue test of a high-priority activated job: 2 grid hours = 2 real minutes
    activated = job("activated", priority=900)
    quiet = TimeoutQueue(lastStart=T0 - timedelta(minutes=3))
    assert job_timeout_state(activated, quiet, fast, T0).rule == "activated_high_priority"
    assert job_timeout_state(activated, TimeoutQueue(lastStart=T0 - timedelta(minutes=1)), fast, T0).rule == (
        "activated"
    )
