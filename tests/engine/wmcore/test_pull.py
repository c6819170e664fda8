"""WMCore's matching and submission rules (seed 004, REFERENCE.md "WMCore"), pure, with worked numbers. The
cases of WMCore's own tests are rebuilt here: thresholds with priorities, site restrictions, throttling."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from brokerage.engine import ScenarioError, parse_scenario, run
from brokerage.engine.wmcore.elements import GET_WORK, PULL_WORK, Element, possible_sites
from brokerage.engine.wmcore.job_submitter import CachedJob, SiteLoad, SubmitSite, assign_locations, schedd_free_slots
from brokerage.engine.wmcore.matching import SiteResources, Slots, free_slots, match_work

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "wmcore_pull.json"


def element(name, priority=1.0, created=0.0, jobs=1, **fields) -> Element:
    return Element(str(name), float(priority), float(created), jobs, **fields)


def pull(elements, thresholds, site_jobs=None, *, seed=0, schedd_free=None):
    return match_work(elements, Slots(thresholds), site_jobs or {}, seed=seed, schedd_free=schedd_free)


def taken_ids(result) -> list[str]:
    return [e.id for e, _ in result.taken]


# --- WMCore's own cases ------------------------------------------------------------------------------------------


def test_a_free_site_pulls_the_element_and_a_zero_or_unknown_one_none():
    one = [element("e", whitelist=("A",))]
    assert taken_ids(pull(one, {"A": 10})) == ["e"]
    assert pull(one, {"A": 0}).rejected["e"][0] == "threshold_full"
    assert pull(one, {"B": 10}).rejected["e"][0] == "no_resources"


def test_jobs_of_higher_priority_fill_the_threshold():
    # threshold {A: 1} with one job already at a higher priority → 0 elements; threshold {A: 2} → 1
    work = [element("e", priority=5, whitelist=("A",))]
    full = pull(work, {"A": 1}, {"A": {10: 1}})
    assert full.taken == []
    assert full.rejected["e"] == (
        "threshold_full",
        {"priority": 5.0, "nSites": 1, "sites": ["A"], "jobsAtOrAbove": [1.0], "thresholds": [1.0]},
    )
    assert taken_ids(pull(work, {"A": 2}, {"A": {10: 1}})) == ["e"]


def test_jobs_of_lower_priority_do_not_count():
    # threshold {A: 2} with 50 jobs at a lower priority → 1
    work = [element("e", priority=5, whitelist=("A",))]
    assert taken_ids(pull(work, {"A": 2}, {"A": {1: 50}})) == ["e"]


def test_jobs_of_equal_priority_count():
    work = [element("e", priority=5, whitelist=("A",))]
    assert pull(work, {"A": 2}, {"A": {5: 2}}).taken == []


def test_elements_come_by_priority_then_creation_time():
    # priorities 1, 100, 1, 1, 0.1 → 100, then the three 1s by creation time, then 0.1
    work = [
        element("p1-late", 1, created=30),
        element("p100", 100, created=40),
        element("p1-first", 1, created=10),
        element("p1-middle", 1, created=20),
        element("p0.1", 0.1, created=0),
    ]
    assert taken_ids(pull(work, {"A": 100})) == ["p100", "p1-first", "p1-middle", "p1-late", "p0.1"]


def test_whitelist_meets_the_input_location():
    # whitelist [CNAF, DESY] with input at [FNAL, CERN, DESY] → possible sites [DESY]
    restricted = element("e", whitelist=("CNAF", "DESY"), inputs={"block#1": ("FNAL", "CERN", "DESY")})
    assert possible_sites(restricted).sites == {"DESY"}


def test_input_without_location_has_no_site_unless_site_lists_are_trusted():
    homeless = element("e", whitelist=("CNAF", "DESY"), inputs={"block#1": ()})
    assert possible_sites(homeless).code == "no_input_location"
    assert possible_sites(homeless).detail == {"blocks": ["block#1"]}
    trusted = element("e", whitelist=("CNAF", "DESY"), inputs={"block#1": ()}, trust_sitelists=True)
    assert possible_sites(trusted).sites == {"CNAF", "DESY"}


# --- site restrictions ---------------------------------------------------------------------------------------------


def test_blacklist_removes_sites_and_says_so_when_nothing_is_left():
    assert possible_sites(element("e", whitelist=("A", "B"), blacklist=("A",))).sites == {"B"}
    listed = possible_sites(element("e", whitelist=("A",), blacklist=("A",)))
    assert (listed.code, listed.detail) == ("site_blacklisted", {"whitelist": ["A"], "blacklist": ["A"]})
    data_blacklisted = possible_sites(element("e", whitelist=("A", "B"), blacklist=("A",), inputs={"b": ("A",)}))
    assert data_blacklisted.code == "site_blacklisted"


def test_input_outside_the_whitelist():
    outside = possible_sites(element("e", whitelist=("A",), inputs={"b": ("B", "C")}))
    assert outside.code == "no_site_with_input"
    assert outside.detail == {"inputSites": ["B", "C"], "whitelist": ["A"], "blacklist": []}


def test_parents_and_pileup_narrow_the_sites_each_with_its_own_trust_flag():
    both = element("e", whitelist=("A", "B", "C"), inputs={"b": ("A", "B")}, parents={"p": ("B", "C")})
    assert possible_sites(both).sites == {"B"}
    pileup = element("e", whitelist=("A", "B"), inputs={"b": ("A", "B")}, pileup={"/MinBias/PU": ("C",)})
    assert possible_sites(pileup).code == "no_site_with_pileup"
    trusted = element(
        "e",
        whitelist=("A", "B"),
        inputs={"b": ("A", "B")},
        pileup={"/MinBias/PU": ("C",)},
        trust_pileup_sitelists=True,
    )
    assert possible_sites(trusted).sites == {"A", "B"}


def test_no_whitelist_means_any_site_but_the_blacklisted():
    assert possible_sites(element("e")).sites is None
    anywhere = [element("e", blacklist=("A",))]
    assert [site for _, site in pull(anywhere, {"A": 10, "B": 10}).taken] == ["B"]


# --- thresholds and draws ------------------------------------------------------------------------------------------


def test_an_element_may_overshoot_and_then_the_site_is_full():
    work = [element("big", jobs=50, created=1, whitelist=("A",)), element("next", created=2, whitelist=("A",))]
    result = pull(work, {"A": 10})
    assert taken_ids(result) == ["big"]
    assert result.rejected["next"][1]["jobsAtOrAbove"] == [50.0]
    assert result.counted == {"A": {1.0: 50}}


def test_the_site_is_drawn_with_the_seed_uniformly_among_open_sites():
    work = [element("e", whitelist=("A", "B", "C"))]
    assert pull(work, {"A": 5, "B": 5, "C": 5}, seed=3).taken == pull(work, {"A": 5, "B": 5, "C": 5}, seed=3).taken
    # C is full: A and B share the draws about evenly over 2,000 seeds (binomial standard deviation ≈ 22)
    counts = Counter(pull(work, {"A": 5, "B": 5, "C": 0}, seed=seed).taken[0][1] for seed in range(2000))
    assert set(counts) == {"A", "B"}
    assert abs(counts["A"] - 1000) < 100


def test_a_full_site_is_skipped_for_the_next_open_one():
    work = [element(f"e{i}", created=i, whitelist=("A", "B")) for i in range(4)]
    result = pull(work, {"A": 1, "B": 2})
    assert Counter(site for _, site in result.taken) == {"A": 1, "B": 2}
    assert result.rejected["e3"][0] == "threshold_full"


def test_higher_priority_work_is_pulled_however_full_a_site_is_of_lower_priority_work():
    work = [element("urgent", priority=10, whitelist=("A",)), element("routine", priority=1, whitelist=("A",))]
    result = pull(work, {"A": 5}, {"A": {1: 100}})
    assert taken_ids(result) == ["urgent"]
    assert result.rejected["routine"][0] == "threshold_full"


def test_the_schedd_limit_stops_every_pull():
    work = [element("e", whitelist=("A",))]
    result = pull(work, {"A": 10}, schedd_free=0)
    assert result.taken == []
    assert result.rejected == {"e": ("schedd_limit", {"scheddFree": 0})}
    assert taken_ids(pull(work, {"A": 10}, schedd_free=1)) == ["e"]
    # MAX_JOBS_PER_OWNER × factor − jobs in the schedd
    assert schedd_free_slots(max_jobs_per_owner=15000, fraction=0.75, jobs_in_schedd=11000) == 250
    assert schedd_free_slots(max_jobs_per_owner=15000, fraction=0.75, jobs_in_schedd=11250) == 0


def test_free_slots_as_each_step_counts_them():
    # pullWork: pending + running, running jobs not subtracted, draining excluded;
    # getWork: running jobs subtracted, draining included; Down never
    sites = [
        SiteResources("A", "Normal", pending_slots=10, running_slots=20, running_jobs=26),
        SiteResources("B", "Draining", pending_slots=10, running_slots=20, running_jobs=5),
        SiteResources("C", "Down", pending_slots=10, running_slots=20),
    ]
    pulled = free_slots(sites, step=PULL_WORK)
    assert (pulled.thresholds, pulled.excluded) == ({"A": 30}, {"B": "Draining", "C": "Down"})
    got = free_slots(sites, step=GET_WORK)
    assert (got.thresholds, got.excluded) == ({"A": 4, "B": 25}, {"C": "Down"})
    overfull = free_slots([SiteResources("A", pending_slots=1, running_slots=1, running_jobs=9)], step=GET_WORK)
    assert overfull.thresholds == {"A": 0}


# --- JobSubmitter ------------------------------------------------------------------------------------------------


def site(name="A", *, state="Normal", pending=10, running=100, types=None) -> SubmitSite:
    return SubmitSite(name, state, pending, running, types or {"Processing": (pending, running), "Merge": (5, 50)})


def jobs(count, *, priority=1.0, task_type="Processing", sites=("A",), start=1) -> list[CachedJob]:
    return [CachedJob(start + i, priority, task_type, tuple(sites)) for i in range(count)]


def test_jobs_go_by_priority_until_the_pending_threshold():
    cache = jobs(8, priority=1) + jobs(4, priority=9, start=100)
    result = assign_locations(cache, {"A": site(pending=10)}, {}, overflow_fraction=0.2, limit=1000)
    assert [job_id for job_id, _ in result.submitted] == [100, 101, 102, 103, 1, 2, 3, 4, 5, 6]
    assert result.waiting[7] == (
        "no_pending_slot",
        {"site": "A", "taskType": "Processing", "current": 10, "threshold": 10, "bypass": False},
    )
    assert result.conditions[("A", "Processing", "submitted")] == 10


def test_higher_priority_jobs_overflow_by_twenty_percent_of_the_pending_slots():
    # given 10 pending jobs of priority 5 filling 10 pending slots
    loaded = {"A": SiteLoad(pending=10, task_pending={"Processing": 10}, highest_priority={"Processing": 5})}
    # when jobs of priority 9 come: 10 + 0.2 × 10 = 12 → two go
    urgent = assign_locations(jobs(5, priority=9), {"A": site()}, loaded, overflow_fraction=0.2, limit=1000)
    assert len(urgent.submitted) == 2
    assert urgent.waiting[3][1]["threshold"] == 12.0
    # jobs of priority 5 (not above the highest) do not overflow; a 50 % fraction lets five through
    assert (
        assign_locations(jobs(5, priority=5), {"A": site()}, loaded, overflow_fraction=0.2, limit=1000).submitted == []
    )
    assert (
        len(assign_locations(jobs(9, priority=9), {"A": site()}, loaded, overflow_fraction=0.5, limit=99).submitted)
        == 5
    )


def test_io_bound_jobs_never_overflow():
    loaded = {"A": SiteLoad(pending=10, task_pending={"Merge": 5}, highest_priority={"Merge": 1})}
    merges = jobs(3, priority=9, task_type="Merge")
    assert assign_locations(merges, {"A": site()}, loaded, overflow_fraction=0.2, limit=100).submitted == []


def test_per_type_and_running_thresholds():
    # Merge has 5 pending slots of its own; the running condition counts pending + running against both
    merges = assign_locations(jobs(8, task_type="Merge"), {"A": site()}, {}, overflow_fraction=0.2, limit=100)
    assert len(merges.submitted) == 5
    assert merges.waiting[6][0] == "no_task_pending_slot"
    busy = {"A": SiteLoad(pending=2, running=108, task_running={"Processing": 10})}  # 2 + 108 ≥ 10 + 100
    assert assign_locations(jobs(1), {"A": site()}, busy, overflow_fraction=0.2, limit=100).waiting[1][0] == (
        "no_running_slot"
    )


def test_draining_down_and_zero_threshold_sites():
    sites = {"A": site("A", state="Draining"), "B": site("B"), "C": site("C", state="Down")}
    # a draining site is avoided while another is possible, used when it is the only one (I/O-bound jobs keep it)
    assert assign_locations(jobs(1, sites=("A", "B")), sites, {}, overflow_fraction=0.2, limit=9).submitted == [
        (1, "B")
    ]
    assert assign_locations(jobs(1, sites=("A",)), sites, {}, overflow_fraction=0.2, limit=9).submitted == [(1, "A")]
    assert assign_locations(jobs(1, sites=("C",)), sites, {}, overflow_fraction=0.2, limit=9).waiting[1][0] == (
        "no_resources"
    )
    harvesting = assign_locations(jobs(1, task_type="Harvesting"), sites, {}, overflow_fraction=0.2, limit=9)
    assert harvesting.waiting[1] == ("no_task_threshold", {"taskType": "Harvesting"})


def test_the_schedd_limit_and_the_cycle_limit_stop_submission():
    stopped = assign_locations(jobs(3), {"A": site()}, {}, overflow_fraction=0.2, limit=0)
    assert stopped.submitted == []
    assert {code for code, _ in stopped.waiting.values()} == {"schedd_limit"}
    capped = assign_locations(jobs(3), {"A": site()}, {}, overflow_fraction=0.2, limit=2)
    assert len(capped.submitted) == 2
    assert capped.waiting[3][0] == "cycle_limit"


# --- the wmcore_pull plugin ---------------------------------------------------------------------------------------


def test_the_documented_example_explains_each_element():
    scenario = parse_scenario(json.loads(EXAMPLE.read_text()))
    decision = run(scenario)
    result = decision.to_dict()
    assert result["outcome"] == "assigned"
    assert [c["name"] for c in result["candidates"]] == ["urgent-rereco#1", "rereco#2"]
    assert {name: s["code"] for name, s in result["skipped"].items()} == {
        "rereco#1": "threshold_full",
        "mc-pileup": "no_site_with_pileup",
        "rereco#3": "no_input_location",
        "cern-only": "no_resources",
    }
    assert result["stages"][-1] == {"filter": "site thresholds", "before": 3, "after": 2}
    assert "2 of 6 elements" in result["message"]


def test_get_work_and_the_schedd_from_a_scenario():
    data = json.loads(EXAMPLE.read_text())
    data["step"] = "getWork"
    got = run(data).to_dict()
    assert got["extra"]["step"] == "getWork"
    assert "T2_CH_CERN" in got["extra"]["thresholds"]  # draining counts in getWork
    data["schedd"] = {"jobs": 20000}
    throttled = run(data).to_dict()
    assert throttled["outcome"] == "throttled"
    assert {s["code"] for s in throttled["skipped"].values()} == {"schedd_limit"}


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"elements": {"e": 1}}, r"\$\.elements: expected a list"),
        ({"elements": [{"id": "a", "Priority": "high"}]}, r"\$\.elements\[0\]\.Priority: expected a number"),
        ({"elements": [{"id": "a"}, {"id": "a"}]}, r"\$\.elements\[1\]\.id: expected a unique element id"),
        ({"elements": [{"id": "a", "SiteWhitelist": "A", "Inputs": {"b": 3}}]}, r"\.Inputs\['b'\]: expected a list"),
        ({"site_thresholds": {"A": -1}}, r"\$\.site_thresholds\['A'\]: expected a number ≥ 0"),
        ({"site_thresholds": {"A": {"state": "Paused"}}}, r"\.state: expected one of Normal"),
        ({"site_jobs": {"A": {"high": 3}}}, r"\$\.site_jobs\['A'\]: expected priorities as keys"),
        ({"step": "grabWork"}, r"\$\.step: expected pullWork or getWork"),
        ({"elements": [{"id": "a", "CreationTime": "yesterday"}]}, r"CreationTime: expected a time"),
    ],
)
def test_bad_input_names_the_path(patch, path):
    data = {**json.loads(EXAMPLE.read_text()), **patch}
    with pytest.raises(ScenarioError, match=path):
        run(data)


def test_only_available_elements_are_work():
    # WorkQueueBackend.availableWork reads the availableByPriority view, which emits Available elements only: an
    # Acquired element of higher priority is not pulled and takes no room
    elements = [
        element("acquired", priority=9, whitelist=("T1_A",), status="Acquired"),
        element("available", priority=1, whitelist=("T1_A",)),
    ]
    assert taken_ids(pull(elements, {"T1_A": 1})) == ["available"]


def test_an_unknown_element_status_is_refused_with_its_path():
    from brokerage.engine.wmcore.scenario import parse_element

    with pytest.raises(ScenarioError, match=r"\$\.elements\[0\]\.Status"):
        parse_element({"id": "e", "Status": "Lost"}, "$.elements[0]")
