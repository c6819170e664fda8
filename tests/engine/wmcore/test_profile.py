"""The `wmcore` profile: each rule where wmagent 2.4.5.9 departs from seed 004, with worked numbers (the code each
rule comes from is named in brokerage/engine/wmcore/). The rules also hold against the real code
run side by side (tests/tools/peer/test_wmcore_real.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from brokerage.engine.wmcore.elements import (
    GET_WORK,
    PULL_WORK,
    Element,
    PullRules,
    today_passing_sites,
    today_possible_sites,
)
from brokerage.engine.wmcore.job_submitter import (
    CachedJob,
    SiteLoad,
    SubmitRules,
    SubmitSite,
    assign_locations,
    job_priority,
)
from brokerage.engine.wmcore.matching import SiteResources, Slots, free_slots, match_work, priority_order
from brokerage.gdpconfig import ConfigView

WMCORE = PullRules.from_config(ConfigView({}, profile="wmcore"))
SUBMIT = SubmitRules.from_config(ConfigView({}, profile="wmcore"))
NOW = 1_795_000_000.0


def element(name, priority=1.0, created=0.0, jobs=1, **fields) -> Element:
    return Element(str(name), float(priority), float(created), jobs, **fields)


def test_the_profile_sets_every_rule_and_seed_keeps_the_defaults():
    assert PullRules("wmcore", 1.0, "wmcore", 2500, 50000, 100, "wmcore") == WMCORE
    assert SubmitRules(True, True, "wmcore", 48.0) == SUBMIT
    assert PullRules.from_config(ConfigView({}, profile="seed")) == PullRules()
    assert SubmitRules.from_config(ConfigView({}, profile="seed")) == SubmitRules()


# --- free slots (WMBSHelper.freeSlots) -------------------------------------------------------------------------


def test_free_slots_are_the_pending_slots_times_queue_depth_and_running_jobs_are_not_subtracted():
    sites = [
        SiteResources("A", "Normal", pending_slots=100, running_slots=900, running_jobs=700),
        SiteResources("B", "Draining", pending_slots=40, running_slots=60, running_jobs=10),
        SiteResources("C", "Down", pending_slots=50),
    ]
    assert free_slots(sites, step=PULL_WORK, rules=WMCORE).thresholds == {"A": 100}
    assert free_slots(sites, step=PULL_WORK, rules=replace(WMCORE, queue_depth=2.0)).thresholds == {"A": 200}
    assert free_slots(sites, step=GET_WORK, rules=WMCORE).thresholds == {"A": 100, "B": 40}
    # the seed: 100 + 900 = 1,000 for pullWork; 1,000 − 700 = 300 and 40 + 60 − 10 = 90 for getWork
    assert free_slots(sites, step=PULL_WORK).thresholds == {"A": 1000}
    assert free_slots(sites, step=GET_WORK).thresholds == {"A": 300, "B": 90}


# --- possibleSites and the list function -----------------------------------------------------------------------


def test_an_empty_whitelist_gives_no_site():
    lonely = element("e", inputs={"b": ("A",)})
    assert today_possible_sites(lonely) == frozenset()
    assert today_passing_sites(lonely)[1] == "empty_whitelist"
    result = match_work([lonely], Slots({"A": 10}), {}, seed=1, rules=WMCORE)
    assert result.rejected["e"][0] == "empty_whitelist"
    assert [e.id for e, _ in match_work([lonely], Slots({"A": 10}), {}, seed=1).taken] == ["e"]  # seed: any site


def test_both_trust_flags_give_the_whitelist_with_its_blacklisted_sites():
    trusted = element("e", whitelist=("A", "B"), blacklist=("B",), trust_sitelists=True, trust_pileup_sitelists=True)
    assert today_possible_sites(trusted) == {"A", "B"}
    assert today_passing_sites(trusted)[0] == {"A"}  # the list function still needs one non-blacklisted site
    # only B has room: the element passes the list function through A and is taken at B, blacklisted
    result = match_work([trusted], Slots({"A": 0, "B": 5}), {}, seed=1, rules=WMCORE)
    assert [(e.id, site) for e, site in result.taken] == [("e", "B")]


def test_several_blocks_need_one_site_holding_all_then_any_holder_may_take_it():
    two = element("e", whitelist=("A", "B", "C"), inputs={"b1": ("A", "B"), "b2": ("B", "C")})
    assert today_passing_sites(two)[0] == {"B"}
    assert today_possible_sites(two) == {"A", "B", "C"}  # the union of the blocks' sites
    # B has no room, A has: the list function passes it (B holds both), the loop takes it at A
    result = match_work([two], Slots({"A": 5, "B": 0}), {}, seed=1, rules=WMCORE)
    assert [(e.id, site) for e, site in result.taken] == [("e", "A")]
    apart = element("f", whitelist=("A", "C"), inputs={"b1": ("A",), "b2": ("C",)})
    assert today_passing_sites(apart)[1:] == (
        "no_site_with_input",
        {"inputSites": ["A", "C"], "whitelist": ["A", "C"], "blacklist": []},
    )


def test_parents_count_only_with_parent_flag_and_the_flag_without_parents_leaves_nothing():
    listed = element("e", whitelist=("A", "B"), inputs={"b": ("A", "B")}, parents={"p": ("B",)})
    assert today_possible_sites(listed) == {"A", "B"}  # no ParentFlag: parents ignored
    assert today_possible_sites(replace(listed, parent_flag=True)) == {"B"}
    flagged_empty = element("f", whitelist=("A",), inputs={"b": ("A",)}, parent_flag=True)
    assert today_passing_sites(flagged_empty)[0] == {"A"}
    assert today_possible_sites(flagged_empty) == frozenset()
    result = match_work([flagged_empty], Slots({"A": 5}), {}, seed=1, rules=WMCORE)
    assert result.rejected["f"] == ("no_parent_location", {"blocks": [], "ParentFlag": True})


def test_the_list_function_needs_a_site_of_the_step():
    # the element's only passing site is not among the thresholds (a draining site in pullWork)
    result = match_work([element("e", whitelist=("D",))], Slots({"A": 5}), {}, seed=1, rules=WMCORE)
    assert result.rejected["e"] == ("no_resources", {"possible": ["D"], "nPossible": 1})


# --- availableWork: order, slices, caps, team, aborted, blowup ---------------------------------------------------


def test_the_view_order_breaks_ties_by_document_id_descending():
    tied = [element(name, priority=5, created=100) for name in ("a1", "c3", "b2")]
    order = priority_order(tied, WMCORE)
    assert [tied[i].id for i in order] == ["c3", "b2", "a1"]
    assert [tied[i].id for i in priority_order(tied)] == ["a1", "c3", "b2"]  # seed: list position


def test_each_slice_is_sorted_by_creation_time_but_not_across_slices():
    # priority 5 for all; the view gives ids d, c, b, a; slices of 2: [d, c] then [b, a]
    work = [
        element("a", priority=5, created=1),
        element("b", priority=5, created=4),
        element("c", priority=5, created=3),
        element("d", priority=5, created=2),
    ]
    rules = replace(WMCORE, rows_per_slice=2)
    assert [work[i].id for i in priority_order(work, rules)] == ["d", "c", "a", "b"]
    assert [work[i].id for i in priority_order(work)] == ["a", "d", "c", "b"]  # seed: one sort by creation


def test_rows_past_max_rows_are_not_read():
    work = [element(f"e{i}", priority=10 - i, whitelist=("A",)) for i in range(5)]
    result = match_work(work, Slots({"A": 100}), {}, seed=1, rules=replace(WMCORE, rows_per_slice=2, max_rows=3))
    # int(3 / 2) = 1 slice of 2 rows is read
    assert [e.id for e, _ in result.taken] == ["e0", "e1"]
    assert {result.rejected[f"e{i}"][0] for i in (2, 3, 4)} == {"not_read"}


def test_work_per_cycle_caps_the_elements_taken():
    work = [element(f"e{i}", priority=10 - i, whitelist=("A",)) for i in range(5)]
    result = match_work(work, Slots({"A": 100}), {}, seed=1, rules=replace(WMCORE, work_per_cycle=3))
    assert [e.id for e, _ in result.taken] == ["e0", "e1", "e2"]
    assert result.rejected["e3"] == ("cycle_limit", {"workPerCycle": 3})


def test_other_teams_and_aborted_requests_are_left_under_every_profile():
    work = [
        element("mine", whitelist=("A",), team="production"),
        element("untagged", whitelist=("A",)),
        element("theirs", whitelist=("A",), team="relval"),
        element("aborted", whitelist=("A",), team="production", request="req-x"),
    ]
    for rules in (PullRules(), WMCORE):
        result = match_work(
            work, Slots({"A": 100}), {}, seed=1, rules=rules, team="production", exclude_workflows=["req-x"]
        )
        assert sorted(e.id for e, _ in result.taken) == ["mine", "untagged"]
        assert result.rejected["theirs"] == ("other_team", {"team": "relval", "agentTeam": "production"})
        assert result.rejected["aborted"] == ("workflow_aborted", {"request": "req-x"})


def test_the_blowup_factor_multiplies_the_jobs_counted_at_the_site():
    # 40 jobs × 2.5 = 100 counted at A (threshold 100): the next element of the same priority finds A full
    work = [
        element("big", priority=5, jobs=40, whitelist=("A",), blowup=2.5),
        element("next", priority=5, created=1, whitelist=("A",)),
    ]
    result = match_work(work, Slots({"A": 100}), {}, seed=1)
    assert result.counted["A"] == {5.0: 100.0}
    assert result.rejected["next"][0] == "threshold_full"


# --- the JobSubmitter (JobSubmitterPoller) ---------------------------------------------------------------------


def submit_site(name, state="Normal", pending=10, running=100, since=None, types=None):
    slots = types or {"Processing": (pending, running), "Merge": (pending, running), "Harvesting": (pending, running)}
    return SubmitSite(name, state, pending, running, slots, since)


def test_the_job_priority_is_task_priority_times_ten_million_plus_the_workflow_priority():
    merge, processing = CachedJob(1, 50_000, "Merge", ("A",)), CachedJob(2, 200_000, "Processing", ("A",))
    assert job_priority(merge, SUBMIT) == 40_050_000
    assert job_priority(processing, SUBMIT) == 200_000
    # one pending slot: the merge goes first under the profile, the processing job under the seed
    sites = {"A": submit_site("A", pending=1, types={"Merge": (1, 10), "Processing": (1, 10)})}
    seed_run = assign_locations([merge, processing], sites, {}, overflow_fraction=0.2, limit=1)
    real_run = assign_locations([merge, processing], sites, {}, overflow_fraction=0.2, limit=1, rules=SUBMIT)
    assert seed_run.submitted == [(2, "A")]
    assert real_run.submitted == [(1, "A")]


def test_merge_jobs_ignore_the_total_pending_slots_but_not_the_running_ones():
    sites = {"A": submit_site("A", pending=10, running=100)}
    busy = {"A": SiteLoad(pending=10, running=50)}  # 10 pending ≥ 10 pending slots
    merge = [CachedJob(1, 5, "Merge", ("A",))]
    assert assign_locations(merge, sites, busy, overflow_fraction=0.2, limit=9).waiting[1][0] == "no_pending_slot"
    assert assign_locations(merge, sites, busy, overflow_fraction=0.2, limit=9, rules=SUBMIT).submitted == [(1, "A")]
    # 10 + 100 pending and running ≥ 10 + 100 slots: NoRunningSlot still stops it
    full = {"A": SiteLoad(pending=10, running=100)}
    stopped = assign_locations(merge, sites, full, overflow_fraction=0.2, limit=9, rules=SUBMIT)
    assert stopped.waiting[1] == (
        "no_running_slot",
        {"site": "A", "taskType": "Merge", "current": 110, "threshold": 110, "bypass": False},
    )


def test_refresh_cache_fails_jobs_with_no_site_or_only_down_sites():
    sites = {"A": submit_site("A"), "D": submit_site("D", "Down"), "X": submit_site("X", "Aborted")}
    jobs = [
        CachedJob(1, 5, "Processing", ()),
        CachedJob(2, 5, "Processing", ("D", "X")),
        CachedJob(3, 5, "Processing", ("A", "D")),
    ]
    result = assign_locations(jobs, sites, {}, overflow_fraction=0.2, limit=9, rules=SUBMIT, now=NOW)
    assert result.failed == {
        1: ("no_possible_site", {"exitCode": 71101}),
        2: ("sites_down", {"exitCode": 71102, "sites": ["D", "X"]}),
    }
    assert result.submitted == [(3, "A")]
    # the seed holds them instead
    held = assign_locations(jobs, sites, {}, overflow_fraction=0.2, limit=9)
    assert held.failed == {}
    assert held.waiting[2][0] == "no_resources"


@pytest.mark.parametrize(
    ("age_hours", "outcome"),
    [(1, ("waiting", "draining_grace")), (72, ("failed", "drain_expired"))],
)
def test_a_job_with_only_draining_sites_waits_out_the_grace_period_then_fails(age_hours, outcome):
    sites = {"R": submit_site("R", "Draining", since=NOW - age_hours * 3600)}
    job = CachedJob(1, 5, "Processing", ("R",))
    result = assign_locations([job], sites, {}, overflow_fraction=0.2, limit=9, rules=SUBMIT, now=NOW)
    found = result.waiting if outcome[0] == "waiting" else result.failed
    assert found[1][0] == outcome[1]
    assert result.submitted == []
    # an I/O-bound job goes to the draining site; the seed sends the processing job there too
    merge = CachedJob(2, 5, "Merge", ("R",))
    assert assign_locations([merge], sites, {}, overflow_fraction=0.2, limit=9, rules=SUBMIT, now=NOW).submitted == [
        (2, "R")
    ]
    assert assign_locations([job], sites, {}, overflow_fraction=0.2, limit=9).submitted == [(1, "R")]


def test_a_site_the_agent_does_not_know_counts_as_not_draining_then_is_dropped():
    sites = {"R": submit_site("R", "Draining", since=NOW - 3600)}
    job = CachedJob(1, 5, "Processing", ("R", "UNKNOWN"))
    result = assign_locations([job], sites, {}, overflow_fraction=0.2, limit=9, rules=SUBMIT, now=NOW)
    assert result.submitted == []
    assert result.waiting[1] == ("no_task_threshold", {"taskType": "Processing"})
    assert assign_locations([job], sites, {}, overflow_fraction=0.2, limit=9).submitted == [(1, "R")]
