"""Our analysis broker under the `panda` profile against the real AtlasAnalJobBroker (panda-server 1.0.4), side by
side on 250 generated scenarios: the same queues kept, each with the same share of the total weight (relative
1e-6).

Not yet at 100 %: the scenarios below still differ, each for a named cause still to model (docs/decisions.md,
"Profiles and the real PanDA code"). The list is exact, so a new difference fails the test, and so does a fixed
one (take it off the list)."""

import pytest

from brokerage.peer.compare import compare

pytestmark = pytest.mark.peer
SCENARIOS = list(range(250))
STILL_DIFFERENT = {
    # the real broker's second, locality-free loop keeps a queue ours does not reach
    48: "locality-free second loop",
    117: "locality-free second loop",
    122: "locality-free second loop",
    169: "locality-free second loop",
    # the memory check of a unified queue's pseudo-queues
    8: "memory check of unified queues",
    # the final selection (candidates with data first, problematic queues dropped after ranking)
    94: "final selection",
    186: "final selection",
}


@pytest.fixture(scope="module")
def side_by_side(real_panda):
    return compare(real_panda, "anal", SCENARIOS, profile="panda")


def test_every_scenario_agrees_but_the_named_ones(side_by_side):
    report, _ = side_by_side
    differing = {c.seed: c.note or c.peer_error for c in report.comparisons if not c.agrees}
    assert set(differing) == set(STILL_DIFFERENT), (
        report.summary() + "\n" + "\n".join(f"scenario {seed}: {note}" for seed, note in sorted(differing.items()))
    )


def test_the_real_code_never_raised(side_by_side):
    _, theirs = side_by_side
    assert [t["error"] for t in theirs if "error" in t] == []


def test_the_scenarios_are_decided_not_empty(side_by_side):
    _, theirs = side_by_side
    assert sum(1 for t in theirs if t["candidates"]) >= 40


def test_the_rules_the_profile_switches_decide_in_the_real_code_too(side_by_side):
    _, theirs = side_by_side
    codes = {code for t in theirs for queue_codes in t.get("skipped", {}).values() for code in queue_codes}
    assert {"-cache", "-closed", "-badsite", "-overloaded", "-min_walltime", "-lowmemory"} <= codes


def test_the_seed_profile_departs_from_the_real_code(real_panda):
    report, _ = compare(real_panda, "anal", SCENARIOS[:100], profile="seed")
    assert report.agreeing <= 60
