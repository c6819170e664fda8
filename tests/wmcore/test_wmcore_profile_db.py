"""The `wmcore` profile as the database applies it: pullWork's thresholds are the pending slots and it counts the
local queue's Available elements, getWork skips aborted requests and another team's work, the JobSubmitter orders
by task priority and fails jobs it cannot place (71102) or that waited out a drain (71103)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokerage.models import JobSubmitterCacheEntry, WMBSJob, WMCoreElement
from brokerage.services.gdpconfig import gdpconfig_profile_apply
from brokerage.services.wmcore import job_submitter_run, request_queue_work, work_get, work_pull
from tests import factories

from .conftest import NOW, make_site

pytestmark = pytest.mark.django_db


@pytest.fixture
def wmcore_profile(db):
    gdpconfig_profile_apply(profile="wmcore")


def global_element(agent, **fields):
    return factories.WMCoreElementFactory(queue=agent.parent, **fields)


def local_element(agent, **fields):
    return factories.WMCoreElementFactory(queue=agent, **fields)


def test_pull_work_fills_the_pending_slots_counting_the_local_queues_available_work(agent, wmcore_profile):
    # FNAL: 10 pending slots (× QueueDepth 1; the seed would add its 20 running slots). 8 jobs of Available work
    # already sit in the local queue for FNAL, so one 5-job element fits (8 < 10) and the next does not (13 ≥ 10)
    local_element(agent, Priority=9, Jobs=8, SiteWhitelist=["T1_US_FNAL"])
    first = global_element(
        agent, Priority=5, Jobs=5, SiteWhitelist=["T1_US_FNAL"], CreationTime=NOW - timedelta(hours=1)
    )
    second = global_element(agent, Priority=5, Jobs=5, SiteWhitelist=["T1_US_FNAL"], CreationTime=NOW)
    report = work_pull(queue_id=agent.pk, now=NOW)
    first.refresh_from_db()
    second.refresh_from_db()
    assert report["pulled"] == 1
    assert first.Status == "Negotiating"
    assert (second.Status, second.stuck_reason) == ("Available", "threshold_full")
    assert second.stuck_detail["thresholds"] == [10.0]
    assert second.stuck_detail["jobsAtOrAbove"] == [13.0]


def test_pull_work_leaves_elements_with_an_empty_whitelist_and_another_teams_work(agent, wmcore_profile):
    agent.team = "production"
    agent.save()
    anywhere = global_element(agent, Priority=5, SiteWhitelist=[])
    relval = global_element(
        agent, Priority=5, SiteWhitelist=["T1_US_FNAL"], request=factories.WMCoreRequestFactory(Team="relval")
    )
    work_pull(queue_id=agent.pk, now=NOW)
    assert WMCoreElement.objects.get(pk=anywhere.pk).stuck_reason == "empty_whitelist"
    relval.refresh_from_db()
    assert (relval.stuck_reason, relval.stuck_detail["agentTeam"]) == ("other_team", "production")


def test_get_work_skips_aborted_requests(agent, wmcore_profile):
    aborted = factories.WMCoreRequestFactory(RequestStatus="aborted")
    stale = local_element(agent, Priority=5, SiteWhitelist=["T1_US_FNAL"], request=aborted)
    fresh = local_element(agent, Priority=5, SiteWhitelist=["T1_US_FNAL"])
    work_get(queue_id=agent.pk, now=NOW)
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert (stale.Status, stale.stuck_reason) == ("Available", "workflow_aborted")
    assert fresh.Status == "Running"


def created_job(agent, *, task_type, priority, sites):
    subscription = factories.WMBSSubscriptionFactory(queue=agent, task_type=task_type)
    return factories.WMBSJobFactory(
        subscription=subscription, state="created", task_type=task_type, priority=priority, possible_sites=sites
    )


def test_the_submitter_sends_merges_first_and_fails_jobs_it_cannot_place(agent, wmcore_profile):
    make_site(agent, "T2_IT_Pisa", state="Down", types=("Processing", "Merge"))
    drained = make_site(agent, "T3_US_Drained", state="Draining", types=("Processing",))
    drained.state_time = NOW - timedelta(days=3)
    drained.save()
    agent.sites.filter(name="T2_CH_CERN").update(state_time=NOW - timedelta(days=3))
    # FNAL takes Merge and Processing, one pending slot in all
    fnal = agent.sites.get(name="T1_US_FNAL")
    fnal.pending_slots = 1
    fnal.save()
    factories.WMCoreSiteThresholdFactory(site=fnal, task_type="Merge", pending_slots=10, max_slots=20)
    processing = created_job(agent, task_type="Processing", priority=300000, sites=["T1_US_FNAL"])
    merge = created_job(agent, task_type="Merge", priority=1000, sites=["T1_US_FNAL"])
    down = created_job(agent, task_type="Processing", priority=5, sites=["T2_IT_Pisa"])
    drain = created_job(agent, task_type="Processing", priority=5, sites=["T3_US_Drained", "T2_CH_CERN"])
    report = job_submitter_run(queue_id=agent.pk, now=NOW)
    # the merge (4 × 10^7 + 1,000) goes before the processing job (300,000) and ignores the pending slots;
    # the processing job then finds FNAL's one pending slot taken
    merge.refresh_from_db()
    assert (merge.state, merge.location) == ("executing", "T1_US_FNAL")
    assert WMBSJob.objects.get(pk=processing.pk).state == "created"
    assert JobSubmitterCacheEntry.objects.get(job=processing).waiting_reason == "no_pending_slot"
    # only Down sites → 71102; only sites draining for 3 days (> 48 h) → 71103; both leave the cache
    assert report["failed"] == 2
    for job, code in ((down, 71102), (drain, 71103)):
        job.refresh_from_db()
        assert (job.state, job.exit_code) == ("submitfailed", code)
        assert not JobSubmitterCacheEntry.objects.filter(job=job).exists()


def test_queue_work_sets_parent_flag_from_include_parents(agent, request_assigned):
    # a request reading its parents makes elements with ParentFlag (what today's site rule reads), one that does
    # not makes elements without it
    factories.WMCoreRequestFactory(
        RequestName="reads-parents",
        RequestStatus="assigned",
        InputDataset=request_assigned.InputDataset,
        IncludeParents=True,
        SiteWhitelist=["T1_US_FNAL"],
    )
    request_queue_work(now=NOW)
    flags = dict(
        WMCoreElement.objects.filter(database="queue").values_list("request__RequestName", "ParentFlag").distinct()
    )
    assert flags == {"reads-parents": True, request_assigned.RequestName: False}
