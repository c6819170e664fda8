"""The job throttler of seed 002 ("Job throttling"), each SKIP rule and each max-jobs rule with worked numbers."""

from brokerage.throttle import JobCounts, LimitLevel, ThrottleLimits, job_throttle, limit_keys, resource_type_for


def verdict(running=0, queued=0, defined=0, waiting=0, limits=None, **extra):
    counts = JobCounts(running=running, queued=queued, defined=defined, waiting=waiting)
    arguments = {
        "work_queue": "MC_16",
        "throttled": True,
        "resource": counts,
        "whole_queue": counts,
        "limits": limits or ThrottleLimits(),
        # the waiting tasks no more urgent than the 1,000 jobs queued at the top priority: no SKIP is lifted
        "highest_waiting_priority": 500,
        "highest_queued_priority": 500,
        "queued_at_highest_priority": 1000,
    }
    arguments.update(extra)
    return job_throttle(**arguments)


def test_unthrottled_queue_always_passes_without_a_limit():
    result = verdict(running=0, queued=10**6, throttled=False)
    assert result.passed
    assert result.rule == "unthrottled"
    assert result.max_jobs is None


def test_normal_case_half_of_the_bunch_clipped_to_500_600():
    # 1000 running, 1900 queued: 2 × 1000 − 1900 = 100 < 500 → bunch 500, queue limit 500 × 4 = 2000;
    # 1900 ≥ 0.9 × 2000 and ≥ running, so the normal case: 500 / 2 = 250 jobs
    result = verdict(running=1000, queued=1900)
    assert result.passed
    assert result.rule == "normal"
    assert result.max_jobs == 250
    assert result.detail["bunch"] == 500
    assert result.detail["queue_limit"] == 2000


def test_bunch_is_capped_at_600():
    # 5000 running, 9000 queued: 2 × 5000 − 9000 = 1000 → 600; queue limit 2400; 9000/5000 = 1.8 ≤ 2 → no skip
    result = verdict(running=5000, queued=9000)
    assert result.rule == "normal"
    assert result.max_jobs == 300


def test_no_running_and_more_queued_than_the_limit_skips():
    result = verdict(running=0, queued=2001)
    assert not result.passed
    assert result.rule == "no_running_enough_queued"
    assert result.max_jobs == 0
    assert result.detail == {"running": 0, "queued": 2001, "queue_limit": 2000}


def test_queued_over_twice_running_and_over_the_limit_skips():
    # 1000 running: bunch = clip(2000 − 2001) = 500, limit 2000; 2001/1000 > 2 and 2001 > 2000
    assert verdict(running=1000, queued=2001).rule == "queued_over_threshold"
    # exactly twice running is not over the threshold
    assert verdict(running=1100, queued=2200).passed


def test_threshold_comes_from_the_limits():
    assert verdict(running=1000, queued=2500, limits=ThrottleLimits(threshold=3.0)).passed


def test_too_many_defined_means_brokerage_is_stuck():
    result = verdict(running=100000, defined=2401, limits=ThrottleLimits(queue_limit=2400))
    assert result.rule == "too_many_defined"
    assert result.detail == {"defined": 2401, "queue_limit": 2400}


def test_too_many_waiting():
    # max(4 × 100, 2 × 500) = 1000
    assert verdict(running=100, waiting=1001).rule == "too_many_waiting"
    assert verdict(running=100, waiting=1000).passed


def test_running_cap_skips_even_with_urgent_work_waiting():
    result = verdict(
        running=501, limits=ThrottleLimits(running_cap=500), highest_waiting_priority=1000, highest_queued_priority=0
    )
    assert result.rule == "running_cap"
    assert not result.passed


def test_queue_cap_skips_and_sets_max_jobs_to_a_fifth():
    assert verdict(running=10000, queued=1001, limits=ThrottleLimits(queue_cap=1000)).rule == "queue_cap"
    # under the cap: cap / 5 = 200 jobs
    result = verdict(running=1000, queued=990, limits=ThrottleLimits(queue_cap=1000, queue_limit=1000))
    assert result.passed
    assert result.max_jobs == 200


def test_below_90_percent_of_the_queue_limit_allows_a_twentieth_of_it():
    # limit 20000, 100 queued < 18000: max(20000 / 20, bunch 500 / 2) = 1000
    result = verdict(running=50, queued=100, limits=ThrottleLimits(queue_limit=20000))
    assert result.rule == "not_enough_queued"
    assert result.max_jobs == 1000
    # a small limit keeps the normal case: max(1000 / 20, 250) = 250
    assert verdict(running=50, queued=100, limits=ThrottleLimits(queue_limit=1000)).max_jobs == 250


def test_higher_priority_waiting_task_turns_a_skip_into_a_restricted_pass():
    result = verdict(running=0, queued=3000, highest_waiting_priority=900, highest_queued_priority=500)
    assert result.passed
    assert result.min_priority == 900
    assert result.rule == "no_running_enough_queued_but_higher_priority_waiting"
    # same priority but fewer than 500 of it queued counts too; analysis never jumps
    assert verdict(
        running=0, queued=3000, highest_waiting_priority=500, highest_queued_priority=500, queued_at_highest_priority=10
    ).passed
    assert not verdict(
        running=0, queued=3000, highest_waiting_priority=900, highest_queued_priority=500, analysis=True
    ).passed


def test_small_total_walltime_lifts_the_enough_queued_rules():
    assert verdict(running=0, queued=3000, total_walltime=1000).passed


def test_event_service_work_queue_counts_the_whole_queue():
    # the whole queue runs nothing and holds 3,000; the queue limit (2,000 set for the work queue) counts it whole
    busy = JobCounts(running=0, queued=3000)
    idle = JobCounts(running=0, queued=0)
    whole = ThrottleLimits(queue_limit=2000, queue_limit_level=LimitLevel.WORK_QUEUE)
    assert not verdict(work_queue="eventservice", resource=idle, whole_queue=busy, limits=whole).passed
    # an ordinary work queue looks at the resource type's running jobs: 0 running, 3,000 queued in the queue as a
    # whole > 2,000, so the same SKIP ...
    assert verdict(work_queue="MC_16", resource=idle, whole_queue=busy, limits=whole).rule == "no_running_enough_queued"
    # ... but with no limit set, the 4 × 500 = 2,000 compares the resource type's own 0 queued jobs, even for the
    # event service (JobThrottlerBase 1.0.4: a limit at no level counts at the resource type's)
    assert verdict(work_queue="eventservice", resource=idle, whole_queue=busy).passed


def test_each_limit_counts_the_jobs_of_its_own_level():
    # SCORE_HIMEM: 100 running, 150 queued; its SCORE family 1,000 running, 2,500 queued; the queue 5,000 queued
    own, family, whole = JobCounts(100, 150), JobCounts(1000, 2500), JobCounts(3000, 5000)
    at = {"resource": own, "family": family, "whole_queue": whole}
    # NQUEUELIMIT_MC_16_SCORE* = 2,000: 150/100 ≤ 2, so no ratio SKIP; 2,500 > 2,000 is only the limit half
    family_limit = ThrottleLimits(queue_limit=2000, queue_limit_level=LimitLevel.FAMILY)
    assert verdict(**at, limits=family_limit).rule == "normal"
    # 250 queued of 100 running (2.5 > 2) and the family's 2,500 > 2,000: SKIP
    assert verdict(**{**at, "resource": JobCounts(100, 250)}, limits=family_limit).rule == "queued_over_threshold"
    # NRUNNINGCAP_MC_16 = 2,999: the queue's 3,000 running are over it although the resource type runs 100
    cap = ThrottleLimits(running_cap=2999, running_cap_level=LimitLevel.WORK_QUEUE)
    assert verdict(**at, limits=cap).detail == {"running": 3000, "running_cap": 2999}
    # NQUEUECAP_MC_16_SCORE* = 2,400: the family's 2,500 queued are over it, a fifth of the cap would be 480
    queue_cap = ThrottleLimits(queue_cap=2400, queue_cap_level=LimitLevel.FAMILY)
    assert verdict(**at, limits=queue_cap).detail == {"queued": 2500, "queue_cap": 2400}


def test_limit_keys_most_specific_first():
    assert limit_keys("NQUEUELIMIT", "MC_16", "MCORE_HIMEM") == (
        ("NQUEUELIMIT_MC_16_MCORE_HIMEM", LimitLevel.RESOURCE_TYPE),
        ("NQUEUELIMIT_MC_16_MCORE*", LimitLevel.FAMILY),
        ("NQUEUELIMIT_MC_16", LimitLevel.WORK_QUEUE),
    )


def test_prestaging_work_queues_take_a_bunch_up_to_what_the_limit_leaves():
    # limit 5,000, 4,500 queued: 500 left, not more than the bunch of 500; 4,000 queued: 1,000 left → bunch 600
    limits = ThrottleLimits(queue_limit=5000, queue_limit_level=LimitLevel.WORK_QUEUE)
    few = JobCounts(running=2000, queued=4000)
    assert verdict(work_queue="Heavy Ion", resource=few, whole_queue=few, limits=limits).detail["bunch"] == 600
    assert verdict(work_queue="MC_16", resource=few, whole_queue=few, limits=limits).detail["bunch"] == 500


def test_a_fraction_of_a_job_is_one_more_job():
    # limit 10,010 / 20 = 500.5 → 501 (the real generator counts the float down to ≤ 0)
    assert verdict(running=50, queued=100, limits=ThrottleLimits(queue_limit=10_010)).max_jobs == 501


def test_no_waiting_task_and_no_queued_job_are_priority_zero():
    # both queries answer 0: 0 = 0 with fewer than 500 queued at it lifts the SKIP (to priority 0), as the real
    # throttler does; the cycle never asks without a task, so it only shows here
    result = verdict(running=0, queued=2001, highest_waiting_priority=None, highest_queued_priority=None)
    assert (result.rule, result.min_priority) == ("no_running_enough_queued_but_higher_priority_waiting", 0)


def test_counts_from_statuses():
    counts = JobCounts.from_statuses({"running": 5, "assigned": 1, "activated": 2, "starting": 3, "defined": 4})
    assert counts == JobCounts(running=5, queued=6, defined=4, waiting=0)


def test_resource_types():
    assert resource_type_for(core_count=1, ram_per_core_mb=2000) == "SCORE"
    assert resource_type_for(core_count=8, ram_per_core_mb=2000) == "MCORE"
    assert resource_type_for(core_count=1, ram_per_core_mb=2001) == "SCORE_HIMEM"
    assert resource_type_for(core_count=None, ram_per_core_mb=None) == "SCORE"
