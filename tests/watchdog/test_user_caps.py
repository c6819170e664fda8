"""A user's activated analysis jobs throttled while the user runs too much and released after (seed 002, "Throttled
jobs and tasks"; brokerage.services.user_caps, the rule in brokerage.throttle), both profiles, with worked numbers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from brokerage.models import GdpConfig, Job, JobStatusLog
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from brokerage.services.user_caps import user_jobs_cap
from brokerage.services.watchdog import watchdog_cycle_run
from brokerage.throttle import user_cap_verdict_panda, user_cap_verdict_seed
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2027, 2, 1, 12, 0, tzinfo=UTC)


def gdpconfig(**values):
    for key, value in values.items():
        GdpConfig.objects.create(key=key, value=str(value), component="prio_mgr", app="jedi")
    gdpconfig_cache_clear()


def jobs(user: str, status: str, n: int, *, group: str = "", cores: int = 1, walltime: int = 3600) -> list[int]:
    task = factories.TaskFactory(userName=user, prodSourceLabel="user")
    return [
        factories.JobFactory(
            task=task,
            prodSourceLabel="user",
            prodUserName=user,
            workingGroup=group,
            jobStatus=status,
            coreCount=cores,
            maxWalltime=walltime,
        ).pk
        for _ in range(n)
    ]


def statuses(ids: list[int]) -> set[str]:
    return set(Job.objects.filter(pk__in=ids).values_list("jobStatus", flat=True))


def test_over_the_cap_the_activated_jobs_wait_and_come_back_under_it():
    gdpconfig(CAP_RUNNING_USER_JOBS=3)
    jobs("alice", "running", 4)  # 4 > 3
    waiting = jobs("alice", "activated", 2)
    other = jobs("bob", "activated", 2)  # bob runs nothing
    (move,) = user_jobs_cap(now=NOW)
    assert (move.user, move.verdict.action, sorted(move.jobs)) == ("alice", "throttle", sorted(waiting))
    assert statuses(waiting) == {"throttled"}
    assert statuses(other) == {"activated"}
    reason = JobStatusLog.objects.filter(job_id=waiting[0], new_status="throttled").values_list("reason", flat=True)
    assert list(reason) == ["user alice: running jobs 4 > CAP_RUNNING_USER_JOBS 3"]
    # at the cap (3 running, not more than 3): the seed releases them
    Job.objects.filter(prodUserName="alice", jobStatus="running").first().delete()
    (move,) = user_jobs_cap(now=NOW)
    assert (move.verdict.action, move.verdict.sentence) == ("release", "running jobs 3 ≤ CAP_RUNNING_USER_JOBS 3")
    assert statuses(waiting) == {"activated"}


def test_cores_and_a_working_groups_own_caps():
    gdpconfig(CAP_RUNNING_USER_CORES=16, CAP_RUNNING_GROUP_JOBS=100)
    jobs("carol", "running", 3, cores=8)  # 24 cores > 16
    mine = jobs("carol", "activated", 1)
    jobs("carol", "running", 50, group="phys-higgs")  # the group's: 50 ≤ 100, and the user's core cap is not its
    group = jobs("carol", "activated", 1, group="phys-higgs")
    (move,) = user_jobs_cap(now=NOW)
    assert (move.group, move.verdict.sentence) == ("", "running cores 24 > CAP_RUNNING_USER_CORES 16")
    assert statuses(mine) == {"throttled"}
    assert statuses(group) == {"activated"}


def test_unset_caps_are_no_caps_in_the_seed():
    jobs("dave", "running", 30)  # thirty running, no cap set
    waiting = jobs("dave", "activated", 1)
    assert user_jobs_cap(now=NOW) == []
    assert statuses(waiting) == {"activated"}


def test_the_panda_profile_throttles_at_the_cap_only_long_jobs_and_releases_under_90_percent():
    gdpconfig(PROFILE="panda", CAP_RUNNING_USER_JOBS=10)
    jobs("erin", "running", 10)  # 10 ≥ 10
    long = jobs("erin", "activated", 2, walltime=6 * 3600 + 1)
    short = jobs("erin", "activated", 1, walltime=6 * 3600)  # not longer than six hours: left activated
    (move,) = user_jobs_cap(now=NOW)
    assert move.verdict.sentence == "running jobs 10 ≥ CAP_RUNNING_USER_JOBS 10"
    assert (statuses(long), statuses(short)) == ({"throttled"}, {"activated"})
    Job.objects.filter(pk__in=Job.objects.filter(prodUserName="erin", jobStatus="running").values("pk")[:1]).delete()
    assert user_jobs_cap(now=NOW) == []  # 9 running: under the cap, not under 0.9 × 10 = 9
    Job.objects.filter(pk__in=Job.objects.filter(prodUserName="erin", jobStatus="running").values("pk")[:1]).delete()
    (move,) = user_jobs_cap(now=NOW)  # 8 < 9
    assert (move.verdict.action, move.verdict.sentence) == ("release", "running jobs 8 < 0.9 × CAP_RUNNING_USER_JOBS 9")
    assert statuses(long) == {"activated"}


def test_the_rule_variants_on_their_own():
    at_cap = {"running": {"JOBS": 5, "CORES": 5}, "caps": {"JOBS": 5, "CORES": None}, "group": False}
    assert user_cap_verdict_seed(**at_cap, throttled=False).action == "keep"
    assert user_cap_verdict_panda(**at_cap, throttled=False).action == "throttle"
    # panda: an unset cap is 10,000
    many = {"running": {"JOBS": 10_000, "CORES": 1}, "caps": {"JOBS": None, "CORES": None}, "group": True}
    assert user_cap_verdict_panda(**many, throttled=False).key == "CAP_RUNNING_GROUP_JOBS"
    assert user_cap_verdict_seed(**many, throttled=False).action == "keep"


def test_the_watchdog_pass_reports_them():
    gdpconfig(CAP_RUNNING_USER_JOBS=1)
    jobs("frank", "running", 2)
    jobs("frank", "activated", 3)
    result = watchdog_cycle_run(now=timezone.now())  # the jobs were made now: none has timed out
    assert (result["user_jobs_throttled"], result["user_jobs_released"]) == (3, 0)
