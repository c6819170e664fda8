"""The WMCore request page (issue 19): each element with where it is along the chain and why it waits with the
numbers, and the slots of the sites it may use as pullWork and getWork count them at its priority."""

from __future__ import annotations

import pytest
from django.utils import timezone

from brokerage.selectors.wmcore_request import wmcore_request_detail
from brokerage.services.gdpconfig import gdpconfig_profile_apply, gdpconfig_save
from brokerage.services.wmcore import wmcore_cycle_run
from tests import factories

pytestmark = pytest.mark.django_db

ZERO_BIAS = "/ZeroBias/Run2024C-v1/RAW"


@pytest.fixture
def stuck_at_cern(agent):
    """A request of priority 100000 whose one block sits only at CERN, which drains: pullWork takes Normal sites
    only, so its element waits in the global queue."""
    factories.WMCoreBlockFactory(dataset=ZERO_BIAS, name=f"{ZERO_BIAS}#z", sites=["T2_CH_CERN"])
    return factories.WMCoreRequestFactory(
        RequestName="pdmvserv_ReReco_ZeroBias_2024C",
        InputDataset=ZERO_BIAS,
        SiteWhitelist=["T2_CH_CERN"],
        RequestPriority=100000,
    )


def test_a_waiting_element_says_where_it_is_and_why(client, agent, request_assigned, stuck_at_cern):
    wmcore_cycle_run(now=timezone.now())
    detail = wmcore_request_detail(name="pdmvserv_ReReco_ZeroBias_2024C")
    waiting = detail["elements"][0]
    assert [(p["queue__name"], p["database"], p["Status"]) for p in waiting["places"]] == [
        ("global", "queue", "Available")
    ]
    assert (waiting["waits"]["code"], waiting["waits"]["step"], waiting["waits"]["by"]) == (
        "no_resources",
        "pullWork",
        agent.name,
    )
    assert waiting["waits"]["sentence"] == (
        "It may use T2_CH_CERN; states there: T2_CH_CERN: Draining; unknown to the agent: none."
    )
    # slots at the one site it may use: pullWork leaves draining CERN out; getWork counts 10 + 20 slots, no job
    (row,) = detail["slots"]["rows"]
    assert (row["site"], row["state"]) == ("T2_CH_CERN", "Draining")
    assert row["pullWork"] == {"threshold": None, "excluded": "Draining", "jobs": 0, "free": None}
    assert row["getWork"] == {"threshold": 30, "excluded": "", "jobs": 0, "free": 30}
    html = client.get("/wmcore/requests/pdmvserv_ReReco_ZeroBias_2024C/").content.decode()
    assert "T2_CH_CERN: Draining" in html
    assert "Draining: no work" in html
    assert 'href="/api/v1/wmcore/elements/?request=pdmvserv_ReReco_ZeroBias_2024C"' in html


def test_an_element_that_flowed_shows_each_copy_and_its_site(client, agent, request_assigned, stuck_at_cern):
    wmcore_cycle_run(now=timezone.now())
    detail = wmcore_request_detail(name="pdmvserv_ReReco_JetHT_2024C")
    assert detail["by_status"] == [{"Status": "Running", "n": 3, "jobs": 12}]
    # block c is at DESY and CERN: pullWork can only take it to DESY (CERN drains), getWork may choose either
    third = next(e for e in detail["elements"] if e["places"][0]["site"] == "T2_DE_DESY")
    assert [(p["queue__name"], p["queue__kind"], p["database"]) for p in third["places"]] == [
        ("global", "global", "queue"),
        (agent.name, "local", "inbox"),
        (agent.name, "local", "queue"),
    ]
    assert (third["agent"], third["status"], third["jobs"], third["waits"]) == (agent.name, "Running", 4, None)
    assert third["site"] == third["places"][-1]["site"] in ("T2_DE_DESY", "T2_CH_CERN")
    # its sites: FNAL holds 8 of its jobs (blocks a, b), DESY or CERN 4 (block c); thresholds 10 + 20 (seed 004)
    slots = {row["site"]: row for row in detail["slots"]["rows"]}
    assert set(slots) == {"T1_US_FNAL", "T2_DE_DESY", "T2_CH_CERN"}
    assert slots["T1_US_FNAL"]["pullWork"] == {"threshold": 30, "excluded": "", "jobs": 8, "free": 22}
    assert slots["T2_DE_DESY"]["pullWork"]["jobs"] + slots["T2_CH_CERN"]["pullWork"]["jobs"] == 4
    page = client.get("/wmcore/requests/pdmvserv_ReReco_JetHT_2024C/")
    assert page.status_code == 200
    assert 'id="request-slot-table"' in page.content.decode()


def test_the_slots_follow_the_wmcore_profile(agent, request_assigned):
    """Before any element exists the request's whitelist names its sites. Under `wmcore` pullWork's threshold is
    the pending slots × QueueDepth (10 × 2.5 = 25 here) and getWork's the pending slots (10), running jobs not
    subtracted; under seed 004 both are 10 + 20."""
    seed = {row["site"]: row for row in wmcore_request_detail(name=request_assigned.RequestName)["slots"]["rows"]}
    assert (seed["T1_US_FNAL"]["pullWork"]["threshold"], seed["T1_US_FNAL"]["getWork"]["threshold"]) == (30, 30)
    gdpconfig_profile_apply(profile="wmcore")
    gdpconfig_save(key="WMCORE_QUEUE_DEPTH", value=2.5)
    today = {row["site"]: row for row in wmcore_request_detail(name=request_assigned.RequestName)["slots"]["rows"]}
    assert set(today) == {"T1_US_FNAL", "T2_DE_DESY", "T2_CH_CERN"}
    assert (today["T1_US_FNAL"]["pullWork"]["threshold"], today["T1_US_FNAL"]["getWork"]["threshold"]) == (25, 10)


def test_an_unknown_request_is_a_404(client, db):
    assert client.get("/wmcore/requests/no_such_request/").status_code == 404


def test_a_request_whose_elements_may_go_nowhere_says_why_not_that_no_agent_has_its_site(client, agent, db):
    # issue 50: its whitelisted site was in both agents' slot tables while the page said "No agent has a site this
    # request may use"; its pileup is only at a site it does not list
    pileup = "/MinBias_TuneCP5/Run3Summer24GS/GEN-SIM"
    factories.WMCoreBlockFactory(dataset=pileup, name=f"{pileup}#p", sites=["T2_IT_Pisa"])
    factories.WMCoreRequestFactory(
        RequestName="cmsunified_TTto2L",
        RequestType="MonteCarlo",
        TaskType="Production",
        InputDataset="",
        MCPileup=pileup,
        TotalJobs=800,
        JobsPerElement=400,
        SiteWhitelist=["T2_CH_CERN"],
    )
    wmcore_cycle_run(now=timezone.now())
    slots = wmcore_request_detail(name="cmsunified_TTto2L")["slots"]
    assert slots["rows"] == []
    assert slots["nowhere"] == ["The pileup is at T2_IT_Pisa; the whitelist is T2_CH_CERN."]
    html = client.get("/wmcore/requests/cmsunified_TTto2L/").content.decode()
    assert "No site passes this request&#x27;s own conditions" in html or "No site passes this request's own" in html
    assert "No agent has a site" not in html
