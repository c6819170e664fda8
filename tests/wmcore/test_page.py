"""The WMCore page: requests and elements by status, slot use per site and priority, why work waits."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from brokerage.models import Decision
from brokerage.services.wmcore import wmcore_cycle_run
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_stuck_element_shows_its_reason_on_the_page(client, agent, request_assigned):
    # given a request whose data sits only at CERN, which drains, beside one that flows
    factories.WMCoreBlockFactory(
        dataset="/ZeroBias/Run2024C-v1/RAW", name="/ZeroBias/Run2024C-v1/RAW#z", sites=["T2_CH_CERN"]
    )
    factories.WMCoreRequestFactory(
        RequestName="pdmvserv_ReReco_ZeroBias_2024C",
        InputDataset="/ZeroBias/Run2024C-v1/RAW",
        SiteWhitelist=["T2_CH_CERN"],
    )
    wmcore_cycle_run(now=timezone.now())
    # when a shifter opens the page
    response = client.get("/wmcore/")
    # then the element says why it waits, in words and with the site's state
    assert response.status_code == 200
    stuck = response.context["stuck"]
    assert [r["code"] for r in stuck["reasons"]] == ["no_resources"]
    (element,) = stuck["elements"]
    assert element["request__RequestName"] == "pdmvserv_ReReco_ZeroBias_2024C"
    assert element["sentence"] == (
        "It may use T2_CH_CERN; states there: T2_CH_CERN: Draining; unknown to the agent: none."
    )
    html = response.content.decode()
    assert "no usable site" in html
    assert "T2_CH_CERN: Draining" in html
    assert "wmcore-stuck" in html
    assert "wmcore-slots" in html
    assert "wmcore-requests" in html


def test_the_page_counts_requests_elements_and_slot_use(client, agent, request_assigned):
    wmcore_cycle_run(now=timezone.now())
    context = client.get("/wmcore/?refresh=0").context
    assert {r["status"]: r["count"] for r in context["request_statuses"]} == {"running-closed": 1}
    (request,) = context["requests"]
    assert (request["RequestName"], request["jobs"], request["elements"]) == (
        "pdmvserv_ReReco_JetHT_2024C",
        12,
        [("Running", 3)],
    )
    counts = {(r["queue__name"], r["database"], r["Status"]): r["n"] for r in context["elements"]}
    assert counts[("global", "queue", "Running")] == 3
    assert counts[(agent.name, "queue", "Running")] == 3
    slots = {r["site"]: r for r in context["slots"]}
    # 8 FNAL jobs of priority 200000 against 10 + 20 slots
    assert (slots["T1_US_FNAL"]["jobs"], slots["T1_US_FNAL"]["threshold"]) == (8, 30)
    assert slots["T1_US_FNAL"]["by_priority"] == [(200000.0, 8)]
    assert slots["T2_CH_CERN"]["state"] == "Draining"
    assert [p["step"] for p in context["pulls"]] == ["getWork", "pullWork"]
    assert {c["code"]: c["count"] for c in context["submit_conditions"]} == {"submitted": 12}


def test_the_latest_requests_are_drawn_and_searched_by_name(client, agent, request_assigned):
    """Issue 19: the latest requests were computed and never drawn, and there was no request search."""
    wmcore_cycle_run(now=timezone.now())
    factories.WMCoreRequestFactory(RequestName="cmsunified_Run3Summer24_TTto2L_MC", RequestStatus="assigned")
    html = client.get("/wmcore/?refresh=0").content.decode().replace("<wbr>", "")
    assert 'id="wmcore-request-table"' in html
    assert reverse("monitor:wmcore-request", args=["pdmvserv_ReReco_JetHT_2024C"]) in html
    assert "cmsunified_Run3Summer24_TTto2L_MC" in html
    found = client.get("/wmcore/", {"request": "jetht", "refresh": "0"})
    assert [r["RequestName"] for r in found.context["requests"]] == ["pdmvserv_ReReco_JetHT_2024C"]
    assert found.context["requests"][0]["elements"] == [("Running", 3)]
    assert 'value="jetht"' in found.content.decode()
    none = client.get("/wmcore/", {"request": "<b>nothing"}).content.decode()
    assert "No request name holds “&lt;b&gt;nothing”." in none  # escaped, never markup


def test_an_empty_page_says_so(client, db):
    html = client.get("/wmcore/").content.decode()
    assert "No element waits" in html
    assert "No request." in html
    assert "No agent site." in html


def test_the_api_lists_requests_and_elements_with_their_reason(client, agent, request_assigned):
    factories.WMCoreRequestFactory(
        RequestName="stuck_request", InputDataset="", TotalJobs=10, SiteWhitelist=["T3_XX_Nowhere"]
    )
    wmcore_cycle_run(now=timezone.now())
    requests = client.get("/api/v1/wmcore/requests/").json()["results"]
    assert {r["RequestName"]: r["RequestStatus"] for r in requests} == {
        "pdmvserv_ReReco_JetHT_2024C": "running-closed",
        "stuck_request": "acquired",
    }
    one = client.get("/api/v1/wmcore/requests/stuck_request/").json()
    assert one["SiteWhitelist"] == ["T3_XX_Nowhere"]
    stuck = client.get("/api/v1/wmcore/elements/", {"stuck_reason": "no_resources", "queue": "global"}).json()
    (element,) = stuck["results"]
    assert (element["request"], element["Status"], element["database"]) == ("stuck_request", "Available", "queue")
    assert element["stuck_sentence"] == (
        "It may use T3_XX_Nowhere; states there: none; unknown to the agent: T3_XX_Nowhere."
    )
    running = client.get("/api/v1/wmcore/elements/", {"Status": "Running", "queue": agent.name, "database": "queue"})
    assert running.json()["count"] == 3
    assert client.get("/api/v1/wmcore/elements/", {"Status": "Sleeping"}).status_code == 400


def test_a_pull_decision_reads_like_any_other(client, agent, request_assigned):
    factories.WMCoreRequestFactory(
        RequestName="blacklisted",
        InputDataset="/JetHT/Run2024C-v1/RAW",
        SiteWhitelist=["T1_US_FNAL"],
        SiteBlacklist=["T1_US_FNAL"],
    )
    wmcore_cycle_run(now=timezone.now())
    pull = Decision.objects.filter(plugin="wmcore_pull", cycle__gdpconfig__step="pullWork").get()
    detail = client.get(f"/api/v1/decisions/{pull.pk}/").json()
    assert detail["outcome"] == "assigned"
    reasons = {name: skip["code"] for name, skip in detail["trace"]["skipped"].items()}
    assert set(reasons.values()) == {"site_blacklisted"}
    assert len(reasons) == 3
    listed = client.get("/decisions/", {"plugin": "wmcore_pull"})
    assert listed.status_code == 200
    assert "pullWork to vocms0001.cern.ch" in listed.content.decode().replace("<wbr>", "")
