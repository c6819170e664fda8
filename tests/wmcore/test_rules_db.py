"""Seed 004's rules as the database applies them: what each step counts, the schedd limit, statuses that never
go back (but for the explicit reset), the location update of Available elements."""

from __future__ import annotations

import pytest

from brokerage import states
from brokerage.models import JobSubmitterCacheEntry, WMBSJob, WMCoreElement
from brokerage.selectors.wmcore import wmcore_site_jobs, wmcore_site_resources
from brokerage.services.gdpconfig import gdpconfig_save
from brokerage.services.status import status_transition_many
from brokerage.services.wmcore import (
    AbortRefused,
    ResetRefused,
    element_cancel,
    element_locations_update,
    element_reset,
    job_submitter_cache_refresh,
    job_submitter_run,
    request_abort,
    request_queue_work,
    work_get,
    work_pull,
    work_replicate,
)
from tests import factories

from .conftest import DATASET, NOW, make_site

pytestmark = pytest.mark.django_db


def global_element(agent, **fields):
    return factories.WMCoreElementFactory(queue=agent.parent, **fields)


def local_element(agent, **fields):
    return factories.WMCoreElementFactory(queue=agent, **fields)


def jobs_at(agent, site, count, *, priority, state="executing", batch_status="Running"):
    subscription = factories.WMBSSubscriptionFactory(queue=agent, site=site)
    factories.WMBSJobFactory.create_batch(
        count,
        subscription=subscription,
        priority=priority,
        state=state,
        location=site if state == "executing" else "",
        batch_status=batch_status if state == "executing" else "",
    )


def test_pull_counts_only_jobs_of_higher_or_equal_priority(agent):
    # given FNAL (30 slots) full of 30 running jobs at priority 1000
    jobs_at(agent, "T1_US_FNAL", 30, priority=1000)
    urgent = global_element(agent, Priority=5000, SiteWhitelist=["T1_US_FNAL"])
    routine = global_element(agent, Priority=500, SiteWhitelist=["T1_US_FNAL"])
    # when the agent pulls
    work_pull(queue_id=agent.pk, now=NOW)
    # then the higher-priority element goes, the lower waits with the numbers
    urgent.refresh_from_db()
    routine.refresh_from_db()
    assert (urgent.Status, urgent.site) == ("Negotiating", "T1_US_FNAL")
    assert (routine.Status, routine.stuck_reason) == ("Available", "threshold_full")
    assert routine.stuck_detail["jobsAtOrAbove"] == [30.0 + urgent.Jobs]
    assert routine.stuck_detail["thresholds"] == [30.0]


def test_pull_counts_acquired_elements_and_wmbs_jobs_at_their_sites(agent):
    held = global_element(agent, Status="Acquired", ChildQueue=agent, site="T2_DE_DESY", Jobs=7, Priority=10)
    jobs_at(agent, "T2_DE_DESY", 3, priority=10, state="created")
    jobs_at(agent, "T2_DE_DESY", 2, priority=20)
    assert held.Status == "Acquired"
    assert wmcore_site_jobs(queue=agent, step="pullWork") == {"T2_DE_DESY": {10.0: 10, 20.0: 2}}
    # getWork counts only what waits: created and pending jobs, not the running ones nor elements
    assert wmcore_site_jobs(queue=agent, step="getWork") == {"T2_DE_DESY": {10.0: 3}}


def test_get_work_subtracts_running_jobs_and_includes_draining_sites(agent):
    jobs_at(agent, "T1_US_FNAL", 26, priority=1)
    running = {site.name: site.running_jobs for site in wmcore_site_resources(queue=agent)}
    assert running == {"T1_US_FNAL": 26, "T2_DE_DESY": 0, "T2_CH_CERN": 0}
    # CERN drains: pullWork would leave it out, getWork takes it
    at_cern = local_element(agent, Priority=1, SiteWhitelist=["T2_CH_CERN"], Jobs=2)
    # FNAL: 10 + 20 − 26 running = 4 slots; 4 jobs waiting at a higher priority fill them
    jobs_at(agent, "T1_US_FNAL", 4, priority=9, state="created")
    at_fnal = local_element(agent, Priority=5, SiteWhitelist=["T1_US_FNAL"], Jobs=2)
    work_get(queue_id=agent.pk, now=NOW)
    at_cern.refresh_from_db()
    at_fnal.refresh_from_db()
    assert (at_cern.Status, at_cern.site) == ("Running", "T2_CH_CERN")
    assert at_cern.subscription.jobs.count() == 2
    assert (at_fnal.Status, at_fnal.stuck_reason) == ("Available", "threshold_full")
    assert at_fnal.stuck_detail["thresholds"] == [4.0]
    assert at_fnal.stuck_detail["step"] == "getWork"


def test_schedd_limit_stops_pulls_and_submission(agent, request_assigned):
    # given MAX_JOBS_PER_OWNER 10 × 0.5 = 5 jobs allowed (for pulls and for the submitter) and 5 in the pool
    gdpconfig_save(key="WMCORE_MAX_JOBS_PER_OWNER", value="10")
    gdpconfig_save(key="WMCORE_SCHEDD_FRACTION", value="0.5")
    gdpconfig_save(key="WMCORE_PULL_SCHEDD_FRACTION", value="0.5")
    jobs_at(agent, "T2_DE_DESY", 5, priority=1)
    request_queue_work(now=NOW)
    # when the agent pulls: nothing, every element says why
    pulled = work_pull(queue_id=agent.pk, now=NOW)
    assert pulled["pulled"] == 0
    assert set(
        WMCoreElement.objects.filter(queue=agent.parent, database="queue").values_list("stuck_reason", flat=True)
    ) == {"schedd_limit"}
    # and the submitter sends nothing either, its cache entries say so
    created = factories.WMBSJobFactory(subscription=factories.WMBSSubscriptionFactory(queue=agent), state="created")
    report = job_submitter_run(queue_id=agent.pk, now=NOW)
    assert (report["submitted"], report["limit"], report["schedd_free"]) == (0, 0, 0)
    assert JobSubmitterCacheEntry.objects.get(job=created).waiting_reason == "schedd_limit"
    # one job leaves the pool: one may be submitted
    WMBSJob.objects.filter(state="executing").first().delete()
    assert job_submitter_run(queue_id=agent.pk, now=NOW)["submitted"] == 1


def test_a_disabled_agent_pulls_nothing(agent, request_assigned):
    agent.enabled = False
    agent.save()
    request_queue_work(now=NOW)
    assert work_pull(queue_id=agent.pk, now=NOW)["pulled"] == 0


def test_two_agents_never_take_the_same_element(agent, request_assigned):
    other = factories.WMCoreQueueFactory(name="vocms0002.cern.ch", parent=agent.parent)
    make_site(other, "T1_US_FNAL", pending=100)
    make_site(other, "T2_DE_DESY", pending=100)
    request_queue_work(now=NOW)
    first = work_pull(queue_id=agent.pk, now=NOW)["pulled"]
    second = work_pull(queue_id=other.pk, now=NOW)["pulled"]
    assert (first, second) == (3, 0)
    work_replicate(queue_id=other.pk, now=NOW)
    assert not WMCoreElement.objects.filter(queue=other).exists()


def test_statuses_never_move_backwards():
    machine = states.WMCORE_ELEMENT
    order = ["Available", "Negotiating", "Acquired", "Running", "Done"]
    for later, earlier in ((b, a) for i, a in enumerate(order) for b in order[i + 1 :]):
        assert not machine.is_allowed(later, earlier), (later, earlier)
    element = factories.WMCoreElementFactory(Status="Running")
    with pytest.raises(states.IllegalTransition):
        status_transition_many(
            model=WMCoreElement,
            ids=[element.pk],
            from_status="Running",
            to_status="Available",
            reason="",
            actor="test",
            now=NOW,
        )
    element.refresh_from_db()
    assert element.Status == "Running"


def test_reset_is_the_explicit_way_back(agent, request_assigned):
    # given an element acquired by the agent and replicated there
    request_queue_work(now=NOW)
    work_pull(queue_id=agent.pk, now=NOW)
    work_replicate(queue_id=agent.pk, now=NOW)
    element = WMCoreElement.objects.filter(queue=agent.parent, database="queue").first()
    assert element.Status == "Acquired"
    # when an operator resets it
    reset = element_reset(element_pk=element.pk, actor="admin:alice", reason="agent lost", now=NOW)
    # then it is Available again, without child queue or local copies, and the log says who and why
    assert (reset.Status, reset.ChildQueue_id, reset.site) == ("Available", None, "")
    assert not WMCoreElement.objects.filter(element_id=element.element_id).exclude(pk=element.pk).exists()
    last = reset.status_log.order_by("-pk").first()
    assert (last.old_status, last.new_status, last.actor, last.reason) == (
        "Acquired",
        "Available",
        "admin:alice",
        "reset: agent lost",
    )


def test_reset_is_refused_once_the_work_runs(agent, request_assigned):
    request_queue_work(now=NOW)
    work_pull(queue_id=agent.pk, now=NOW)
    work_replicate(queue_id=agent.pk, now=NOW)
    work_get(queue_id=agent.pk, now=NOW)
    element = WMCoreElement.objects.filter(queue=agent.parent, database="queue").first()
    with pytest.raises(ResetRefused, match="only Negotiating or Acquired"):
        element_reset(element_pk=element.pk, actor="admin:alice", reason="try", now=NOW)
    local = WMCoreElement.objects.filter(queue=agent, database="queue").first()
    with pytest.raises(ResetRefused, match="only a global-queue element"):
        element_reset(element_pk=local.pk, actor="admin:alice", reason="try", now=NOW)


def test_locations_of_available_elements_follow_new_replicas(agent, blocks, request_assigned):
    request_queue_work(now=NOW)
    waiting, taken = WMCoreElement.objects.filter(queue=agent.parent, database="queue").order_by("pk")[:2]
    WMCoreElement.objects.filter(pk=taken.pk).update(Status="Negotiating")
    # the data of both blocks is copied to DESY after the request was assigned
    for block in blocks[:2]:
        block.sites = ["T1_US_FNAL", "T2_DE_DESY"]
        block.save()
    assert element_locations_update(now=NOW) == 1
    waiting.refresh_from_db()
    taken.refresh_from_db()
    assert waiting.Inputs == {f"{DATASET}#a": ["T1_US_FNAL", "T2_DE_DESY"]}
    assert taken.Inputs == {f"{DATASET}#b": ["T1_US_FNAL"]}  # only Available elements are updated
    assert element_locations_update(now=NOW) == 0


def test_an_aborted_request_cancels_its_elements_and_kills_its_jobs(agent, request_assigned):
    # given a request whose jobs are created (one submitted) in the agent
    request_queue_work(now=NOW)
    work_pull(queue_id=agent.pk, now=NOW)
    work_replicate(queue_id=agent.pk, now=NOW)
    work_get(queue_id=agent.pk, now=NOW)
    job_submitter_cache_refresh(queue_id=agent.pk, now=NOW)
    # when an operator aborts it
    aborted = request_abort(request_id=request_assigned.pk, actor="admin:alice", reason="wrong config", now=NOW)
    assert aborted.RequestStatus == "aborted"
    assert set(WMCoreElement.objects.values_list("Status", flat=True)) == {"CancelRequested"}
    # then the next cycle kills the jobs, empties the cache and ends everything
    assert element_cancel(now=NOW) == {"killed": 12, "canceled": 10, "aborted_completed": 1}
    assert set(WMBSJob.objects.values_list("state", flat=True)) == {"killed"}
    assert not JobSubmitterCacheEntry.objects.exists()
    assert set(WMCoreElement.objects.values_list("Status", flat=True)) == {"Canceled"}
    aborted.refresh_from_db()
    assert aborted.RequestStatus == "aborted-completed"
    with pytest.raises(AbortRefused, match="the request is aborted-completed"):
        request_abort(request_id=aborted.pk, actor="admin:alice", reason="again", now=NOW)


def test_admin_actions_reset_and_abort_and_report_refusals(admin_client, agent, request_assigned):
    request_queue_work(now=NOW)
    work_pull(queue_id=agent.pk, now=NOW)
    negotiating = WMCoreElement.objects.filter(queue=agent.parent, database="queue").first()
    available = global_element(agent)
    response = admin_client.post(
        "/admin/brokerage/wmcoreelement/",
        {"action": "reset_elements", "_selected_action": [negotiating.pk, available.pk]},
        follow=True,
    )
    texts = [str(m) for m in response.context["messages"]]
    assert "1 element(s) back to Available." in texts
    assert any("only Negotiating or Acquired" in t for t in texts)
    negotiating.refresh_from_db()
    assert negotiating.Status == "Available"
    admin_client.post(
        "/admin/brokerage/wmcorerequest/", {"action": "abort_requests", "_selected_action": [request_assigned.pk]}
    )
    request_assigned.refresh_from_db()
    assert request_assigned.RequestStatus == "aborted"
