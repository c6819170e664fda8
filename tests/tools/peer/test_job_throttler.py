"""Our job throttler against panda-server 1.0.4's JobThrottlerBase, run side by side offline (issue 51): limits at
the three levels, values at and around the counts they are compared with, the event service and prestaging work
queues, work shortage, and the priorities that lift a SKIP (tools/peer/throttle_compare.py)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tools.peer.throttle_compare import case_generate, ours, peer_throttles, throttle_compare

pytestmark = pytest.mark.peer

CASES = 3000


def test_our_throttler_agrees_with_the_real_one_on_every_generated_case(real_panda):
    comparisons = throttle_compare(real_panda, count=CASES)
    disagreements = [f"case {c.seed}: ours {c.ours} | real {c.theirs}" for c in comparisons if not c.agrees]
    assert disagreements == []


def test_every_rule_is_exercised_both_ways(real_panda):
    """Each SKIP rule both holds and is lifted by a waiting task of higher priority (the running cap is never
    lifted), and the real throttler writes each of its SKIP lines over the same cases."""
    cases = [case_generate(random.Random(seed)) for seed in range(CASES)]
    rules = Counter(ours(case).rule for case in cases)
    for rule in (
        "no_running_enough_queued",
        "queued_over_threshold",
        "too_many_defined",
        "too_many_waiting",
        "queue_cap",
    ):
        assert rules[rule] >= 10, rule
        assert rules[f"{rule}_but_higher_priority_waiting"] >= 10, rule
    for rule in ("running_cap", "normal", "not_enough_queued", "unthrottled"):
        assert rules[rule] >= 10, rule
    lines = Counter(
        next((word for word in REAL_SKIPS if word in (t.get("lines") or [""])[-1]), "PASS")
        for t in peer_throttles(real_panda, cases)
    )
    assert all(lines[word] >= 10 for word in REAL_SKIPS), lines


LIFTED = ("no_running_enough_queued", "queued_over_threshold", "too_many_defined", "too_many_waiting", "queue_cap")
REAL_SKIPS = (
    "SKIP no running and enough",
    "SKIP nQueued_rt(",
    "SKIP nQueued_gs(",
    "SKIP too many nDefined",
    "SKIP too many nWaiting_rt",
    "SKIP nRunning_runningcap",
    "SKIP nQueued_queuecap",
)
