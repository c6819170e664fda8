"""Our job broker under the `panda` profile against the real AtlasProdJobBroker (panda-server 1.0.4), side by side
on 500 generated scenarios: the same queues kept, each with the same weight (relative 1e-6)."""

import pytest

from tests.tools.peer.conftest import disagreements, real_skip_codes
from tools.peer.compare import compare

pytestmark = pytest.mark.peer
SCENARIOS = list(range(500))


@pytest.fixture(scope="module")
def side_by_side(real_panda):
    return compare(real_panda, "job", SCENARIOS, profile="panda")


def test_every_scenario_agrees_under_the_panda_profile(side_by_side):
    report, _ = side_by_side
    differing = disagreements(report)
    assert not differing, report.summary() + "\n" + "\n".join(differing)


def test_the_real_code_never_raised(side_by_side):
    _, theirs = side_by_side
    assert [t["error"] for t in theirs if "error" in t] == []


def test_the_scenarios_are_decided_not_empty(side_by_side):
    # a comparison of empty results proves little: at least a quarter of the real decisions keep queues, and
    # together they keep some eighty queues or more
    _, theirs = side_by_side
    kept = [len(t["candidates"]) for t in theirs]
    assert sum(1 for k in kept if k) >= len(SCENARIOS) // 4
    assert sum(kept) >= 80


def test_the_rules_the_profile_switches_decide_in_the_real_code_too(side_by_side):
    # the generator reaches the real rules behind the profile's switches: each skip code below is written by
    # the real broker in at least one scenario
    _, theirs = side_by_side
    codes = real_skip_codes(theirs)
    assert {
        "-cache",
        "-cpucore",
        "-t1weight",
        "-cap_rt",
        "-disk",
        "-io",
        "-min_walltime",
        "-nopilot",
        "-zeroshare",
    } <= codes


def test_the_seed_profile_departs_from_the_real_code(real_panda):
    # the comparison tells the two apart: under the seed's rules many of the same scenarios disagree
    report, _ = compare(real_panda, "job", SCENARIOS[:100], profile="seed")
    assert report.agreeing <= 80


def test_no_generated_scenario_is_refused_by_the_driver(side_by_side):
    # every field the scenarios set reaches the real code (tools/peer/panda_fields.py)
    report, _ = side_by_side
    assert [c.refused for c in report.comparisons if c.refused] == []
