"""The five transitions of seed 004 over the database, from an assigned request to jobs in the pool."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokerage.engine import trace_decode
from brokerage.models import (
    Decision,
    DecisionTrace,
    JobSubmitterCacheEntry,
    JobSubmitterReport,
    WMBSJob,
    WMBSSubscription,
    WMCoreElement,
    WMCoreRequest,
)
from brokerage.services.gdpconfig import gdpconfig_save
from brokerage.services.wmcore import (
    job_submitter_cache_refresh,
    job_submitter_run,
    request_queue_work,
    wmcore_cycle_run,
    wmcore_progress_update,
    work_get,
    work_pull,
    work_replicate,
)
from tests import factories

from .conftest import DATASET, NOW

pytestmark = pytest.mark.django_db


def statuses(**filters) -> list[str]:
    return sorted(WMCoreElement.objects.filter(**filters).values_list("Status", flat=True))


def test_a_request_flows_from_assigned_to_jobs_submitted(agent, request_assigned):
    global_queue = agent.parent
    # 1. ReqMgr2 → global queue: one element per block, inbox Acquired, request acquired
    queued = request_queue_work(now=NOW)
    assert queued == {"requests": 1, "elements": 3, "no_team": 0, "failed": 0}
    request_assigned.refresh_from_db()
    assert request_assigned.RequestStatus == "acquired"
    assert statuses(queue=global_queue, database="inbox") == ["Acquired"]
    elements = list(WMCoreElement.objects.filter(queue=global_queue, database="queue").order_by("pk"))
    assert [e.Status for e in elements] == ["Available"] * 3
    assert [e.Jobs for e in elements] == [4, 4, 4]  # 20 files / 5 per job
    assert elements[2].Inputs == {f"{DATASET}#c": ["T2_CH_CERN", "T2_DE_DESY"]}
    assert list(request_assigned.status_log.values_list("old_status", "new_status")) == [("assigned", "acquired")]

    # 2. global → local (pullWork): CERN drains, so block c goes to DESY; elements Negotiating with the child queue
    pulled = work_pull(queue_id=agent.pk, now=NOW)
    assert (pulled["pulled"], pulled["jobs"], pulled["left"]) == (3, 12, 0)
    negotiated = WMCoreElement.objects.filter(queue=global_queue, database="queue")
    assert {(e.Status, e.ChildQueue_id) for e in negotiated} == {("Negotiating", agent.pk)}
    assert sorted(e.site for e in negotiated) == ["T1_US_FNAL", "T1_US_FNAL", "T2_DE_DESY"]
    decision = Decision.objects.get(pk=pulled["decision"])
    assert (decision.plugin, decision.outcome, decision.n_candidates) == ("wmcore_pull", "assigned", 3)

    # 2, steps 4–5: replicated to the local inbox and split into its queue; global and inbox Acquired
    assert work_replicate(queue_id=agent.pk, now=NOW) == 3
    assert statuses(queue=global_queue, database="queue") == ["Acquired"] * 3
    assert statuses(queue=agent, database="inbox") == ["Acquired"] * 3
    assert statuses(queue=agent, database="queue") == ["Available"] * 3
    shared = set(WMCoreElement.objects.filter(queue=agent, database="inbox").values_list("element_id", flat=True))
    assert shared == set(negotiated.values_list("element_id", flat=True))

    # 3. local queue → WMBS (getWork): subscriptions and jobs; Running everywhere; request running-open
    got = work_get(queue_id=agent.pk, now=NOW)
    assert (got["subscriptions"], got["jobs"]) == (3, 12)
    assert statuses(element_id__in=shared) == ["Running"] * 9
    assert statuses(queue=global_queue, database="inbox") == ["Running"]
    request_assigned.refresh_from_db()
    assert request_assigned.RequestStatus == "running-open"
    assert set(WMBSJob.objects.values_list("state", flat=True)) == {"created"}

    # 4. and 5. WMBS → cache → pool: DESY's jobs avoid draining CERN; all 12 fit the pending slots
    submitted = job_submitter_run(queue_id=agent.pk, now=NOW)
    assert (submitted["submitted"], submitted["added"], submitted["waiting"]) == (12, 12, 0)
    placed = sorted(WMBSJob.objects.values_list("state", "batch_status", "location").distinct())
    assert placed == [("executing", "Idle", "T1_US_FNAL"), ("executing", "Idle", "T2_DE_DESY")]
    assert WMBSJob.objects.filter(location="T1_US_FNAL").count() == 8
    assert not JobSubmitterCacheEntry.objects.exists()
    assert JobSubmitterReport.objects.get(site="T2_DE_DESY", condition="submitted").count == 4

    # the jobs end: elements Done everywhere, the request completed
    WMBSJob.objects.update(state="success", batch_status="")
    progress = wmcore_progress_update(now=NOW + timedelta(hours=5))
    assert (progress["elements_done"], progress["completed"]) == (3, 1)
    assert statuses(element_id__in=shared) == ["Done"] * 9
    request_assigned.refresh_from_db()
    assert request_assigned.RequestStatus == "completed"


def test_a_request_without_a_team_stays_assigned(agent, blocks):
    request = factories.WMCoreRequestFactory(RequestStatus="assigned", Team="", InputDataset=DATASET)
    assert request_queue_work(now=NOW)["no_team"] == 1
    request.refresh_from_db()
    assert request.RequestStatus == "assigned"
    assert not WMCoreElement.objects.exists()


def test_a_request_whose_input_has_no_block_fails_with_the_reason(agent):
    request = factories.WMCoreRequestFactory(RequestStatus="assigned", InputDataset="/Unknown/Run-v1/RAW")
    assert request_queue_work(now=NOW)["failed"] == 1
    request.refresh_from_db()
    assert request.RequestStatus == "failed"
    assert "no block of /Unknown/Run-v1/RAW" in request.status_log.get().reason


def test_work_without_input_is_cut_into_slices_of_jobs(agent):
    factories.WMCoreRequestFactory(
        RequestStatus="assigned", RequestType="MonteCarlo", TotalJobs=1200, JobsPerElement=500, TaskType="Production"
    )
    request_queue_work(now=NOW)
    jobs = sorted(WMCoreElement.objects.filter(database="queue").values_list("Jobs", flat=True))
    assert jobs == [200, 500, 500]


def test_the_whole_cycle_runs_every_step_for_every_local_queue(agent, request_assigned):
    summary = wmcore_cycle_run(now=NOW)
    assert summary["queued"]["elements"] == 3
    step = summary["queues"][agent.name]
    assert (step["pull"]["pulled"], step["replicated"], step["get"]["jobs"], step["submit"]["submitted"]) == (
        3,
        3,
        12,
        12,
    )
    # every element runs, none waits: the request is running-closed at the end of the cycle
    assert WMCoreRequest.objects.get().RequestStatus == "running-closed"
    assert WMBSSubscription.objects.count() == 3


def test_cache_is_refilled_below_its_size_and_refreshed_when_old(agent, request_assigned):
    # given a cache refresh size of 5 and a first refresh that cached the 12 jobs
    gdpconfig_save(key="WMCORE_CACHE_REFRESH_SIZE", value="5")
    request_queue_work(now=NOW)
    work_pull(queue_id=agent.pk, now=NOW)
    work_replicate(queue_id=agent.pk, now=NOW)
    work_get(queue_id=agent.pk, now=NOW)
    assert job_submitter_cache_refresh(queue_id=agent.pk, now=NOW)["added"] == 12
    # when more jobs are created, the full cache (12 ≥ 5) is not refreshed before 20 minutes
    subscription = WMBSSubscription.objects.first()
    factories.WMBSJobFactory.create_batch(3, subscription=subscription, priority=1)
    later = job_submitter_cache_refresh(queue_id=agent.pk, now=NOW + timedelta(minutes=19))
    assert (later["refreshed"], later["size"]) == (0, 12)
    # then at 20 minutes it is
    due = job_submitter_cache_refresh(queue_id=agent.pk, now=NOW + timedelta(minutes=20))
    assert (due["refreshed"], due["added"], due["size"]) == (1, 3, 15)


def test_decision_trace_names_every_element_not_taken(agent, blocks):
    # given one request whose data sits only at draining CERN, another blacklisting the site of its data
    factories.WMCoreBlockFactory(dataset="/Only/AtCERN-v1/RAW", name="/Only/AtCERN-v1/RAW#1", sites=["T2_CH_CERN"])
    factories.WMCoreRequestFactory(InputDataset="/Only/AtCERN-v1/RAW", SiteWhitelist=["T2_CH_CERN"])
    factories.WMCoreRequestFactory(
        InputDataset=DATASET, SiteWhitelist=["T1_US_FNAL", "T2_DE_DESY"], SiteBlacklist=["T1_US_FNAL"]
    )
    request_queue_work(now=NOW)
    # when the agent pulls
    pulled = work_pull(queue_id=agent.pk, now=NOW)
    # then the trace says why each element stayed
    decision = Decision.objects.get(pk=pulled["decision"])
    trace = trace_decode(DecisionTrace.objects.get(decision_id=decision.pk).trace)
    codes = {name: skip["code"] for name, skip in trace["skipped"].items()}
    stuck = dict(
        WMCoreElement.objects.filter(database="queue", Status="Available").values_list("element_id", "stuck_reason")
    )
    assert codes == stuck
    assert sorted(codes.values()) == ["no_resources", "site_blacklisted", "site_blacklisted"]
    cern = next(skip for skip in trace["skipped"].values() if skip["code"] == "no_resources")
    assert cern["detail"]["states"] == {"T2_CH_CERN": "Draining"}
    assert pulled["pulled"] == 1  # block c of the second request: DESY is allowed
