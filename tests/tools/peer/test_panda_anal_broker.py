"""Our analysis broker under the `panda` profile against the real AtlasAnalJobBroker (panda-server 1.0.4), side by
side on 500 generated scenarios: the same queues kept, each with the same share of the total weight (relative
1e-6)."""

import pytest

from tests.tools.peer.conftest import disagreements, real_skip_codes
from tools.peer.compare import compare

pytestmark = pytest.mark.peer
SCENARIOS = list(range(500))


@pytest.fixture(scope="module")
def side_by_side(real_panda):
    return compare(real_panda, "anal", SCENARIOS, profile="panda")


def test_every_scenario_agrees_under_the_panda_profile(side_by_side):
    report, _ = side_by_side
    differing = disagreements(report)
    assert not differing, report.summary() + "\n" + "\n".join(differing)


def test_the_real_code_never_raised(side_by_side):
    _, theirs = side_by_side
    assert [t["error"] for t in theirs if "error" in t] == []


def test_the_scenarios_are_decided_not_empty(side_by_side):
    _, theirs = side_by_side
    assert sum(1 for t in theirs if t["candidates"]) >= 40


def test_the_rules_the_profile_switches_decide_in_the_real_code_too(side_by_side):
    _, theirs = side_by_side
    codes = real_skip_codes(theirs)
    assert {"-cache", "-closed", "-badsite", "-overloaded", "-min_walltime", "-lowmemory"} <= codes


def test_the_seed_profile_departs_from_the_real_code(real_panda):
    # a fifth of the scenarios pre-assign a queue, which both profiles broker alike (that queue or none): the seed
    # profile agrees on 64 of the first 100, the panda profile on all
    report, _ = compare(real_panda, "anal", SCENARIOS[:100], profile="seed")
    assert report.agreeing <= 70


def test_no_generated_scenario_is_refused_by_the_driver(side_by_side):
    report, _ = side_by_side
    assert [c.refused for c in report.comparisons if c.refused] == []


def test_a_timed_comparison_times_both_sides_and_our_decision_alone(real_panda):
    # what `bench peer` reports: ours with the parse, ours over the parsed scenario, theirs doBrokerage alone
    from tools.bench.peer import _speed_row

    # two turns of the sides, each brokering every scenario twice in a row: the fastest of the four runs counts
    report, _ = compare(real_panda, "anal", list(range(12)), profile="panda", repeat=2, turns=2)
    assert all(c.our_seconds > 0 and c.our_decide_seconds > 0 for c in report.comparisons)
    assert all(c.their_seconds > 0 for c in report.comparisons if not c.peer_error and not c.refused)
    row = _speed_row(report, {"broker": "anal"})
    assert row["agree"] == f"{report.agreeing}/12"
    assert row["decide_median_ms"] < row["median_ms"]  # parse left out
    assert row["decide_ratio"] == pytest.approx(row["decide_median_ms"] / row["theirs_median_ms"], rel=0.01)
