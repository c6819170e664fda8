"""Our task broker under the `panda` profile against the real AtlasProdTaskBroker (panda-server 1.0.4), side by side
on 500 generated scenarios: the same nuclei kept, each with the same share of the total weight (relative 1e-6).
Most scenarios carry the nuclei's production queues, so the real job check (job brokerage over them, hintForTB)
decides beside ours.

Where the real code raises, the scenario is a real-code failure, named here (docs/decisions.md):
- a nucleus without an endpoint for the output: `AtlasProdTaskBroker` reads the endpoint's name before its own None
  check (TypeError) and the task stays unassigned; ours skips that nucleus with the storage rule;
- a full-chain task whose parent ran at a nucleus without production queues: the real code asks the SiteMapper for
  that nucleus, gets None and reads its bare-nucleus mode (AttributeError); ours reads the parent's mode from the
  task (parentBareNucleus)."""

import pytest

from brokerage.engine import run
from tests.tools.peer.conftest import disagreements, real_skip_codes
from tools.peer.compare import compare
from tools.peer.scenarios import task_scenario

pytestmark = pytest.mark.peer
SCENARIOS = list(range(500))
NO_OUTPUT_ENDPOINT = "TypeError 'NoneType' object is not subscriptable"
PARENT_NUCLEUS_UNKNOWN = "'NoneType' object has no attribute 'get_bare_nucleus_mode'"


@pytest.fixture(scope="module")
def side_by_side(real_panda):
    return compare(real_panda, "task", SCENARIOS, profile="panda")


def test_every_scenario_agrees_unless_the_real_code_raised(side_by_side):
    report, _ = side_by_side
    differing = disagreements(report, real_code_failures_aside=True)
    assert not differing, report.summary() + "\n" + "\n".join(differing)


def test_the_real_code_raises_only_where_a_known_failure_applies(side_by_side):
    report, _ = side_by_side
    failures = [c for c in report.comparisons if c.peer_error]
    kinds = {NO_OUTPUT_ENDPOINT: 0, PARENT_NUCLEUS_UNKNOWN: 0}
    for comparison in failures:
        scenario = task_scenario(comparison.seed)
        decision = run({**scenario, "profile": "panda"})
        if NO_OUTPUT_ENDPOINT in comparison.peer_error:
            kinds[NO_OUTPUT_ENDPOINT] += 1
            storage = {e["site"] for e in scenario["ddm_endpoints"].values() if not e.get("is_tape")}
            without = [n for n, site in scenario["sites"].items() if site["role"] == "nucleus" and n not in storage]
            assert without
            # ours: the nucleus without storage is skipped by the storage rule (or an earlier one), never chosen
            for name in without:
                assert name in decision.skipped
                assert name not in {c.name for c in decision.candidates}
        else:
            assert PARENT_NUCLEUS_UNKNOWN in comparison.peer_error, comparison.peer_error[-300:]
            kinds[PARENT_NUCLEUS_UNKNOWN] += 1
            parent = scenario["task"]["parentNucleus"]
            assert scenario["task"].get("fullChain")
            assert not any(record.get("atlas_site") == parent for record in scenario["queues"].values())
    assert kinds[NO_OUTPUT_ENDPOINT], "the generator should reach the known real-code failure"


def test_the_scenarios_are_decided_not_empty(side_by_side):
    _, theirs = side_by_side
    kept = [len(t.get("candidates", {})) for t in theirs]
    assert sum(1 for k in kept if k) >= len(SCENARIOS) // 5


def test_the_job_check_over_real_queues_removes_nuclei_on_both_sides(side_by_side):
    report, theirs = side_by_side
    by_job_check = 0
    for comparison, result in zip(report.comparisons, theirs, strict=True):
        scenario = task_scenario(comparison.seed)
        if comparison.peer_error or not scenario.get("queues"):
            continue
        theirs_job = {name for name, codes in result.get("skipped", {}).items() if "-job" in codes}
        decision = run({**scenario, "profile": "panda"})
        ours_job = {name for name, skip in decision.skipped.items() if skip.code == "job"}
        if result["job_check_failed"]:
            # no queue anywhere: the real code stops without naming nuclei; ours skips every one left with -job
            assert ours_job, comparison.seed
            assert not decision.candidates, comparison.seed
        else:
            # the real code skips with -job only the nuclei it knows, those with a production queue
            with_queues = {record["atlas_site"] for record in scenario["queues"].values()}
            assert theirs_job == ours_job & with_queues, comparison.seed
        by_job_check += bool(theirs_job) or result["job_check_failed"]
    assert by_job_check >= 20


def test_the_rules_the_profile_switches_decide_in_the_real_code_too(side_by_side):
    _, theirs = side_by_side
    codes = real_skip_codes(theirs)
    assert {
        "-transfer_backlog",
        "-space",
        "-insize",
        "-innum",
        "-source_blacklist",
        "-destination_blacklist",
        "-job",
        "-full_chain",
    } <= codes


def test_the_seed_profile_departs_from_the_real_code(real_panda):
    report, _ = compare(real_panda, "task", SCENARIOS[:100], profile="seed")
    assert report.agreeing <= 75


def test_no_generated_scenario_is_refused_by_the_driver(side_by_side):
    report, _ = side_by_side
    assert [c.refused for c in report.comparisons if c.refused] == []
