"""Our JumboWatchDog (brokerage.jumbo's panda variant) against panda-server 1.0.4's, run side by side offline
(issue 52): every useJumbo flag and watched status, events left and files left at their limits and either side,
priorities around 500 and 900, tasks with a site, active and ended jumbo jobs (tools/peer/jumbo_compare.py)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tools.peer.jumbo_compare import jumbo_compare, ours, round_generate

pytestmark = pytest.mark.peer

ROUNDS = 1500


def test_our_jumbo_watchdog_agrees_with_the_real_one_on_every_generated_round(real_panda):
    comparisons = jumbo_compare(real_panda, count=ROUNDS)
    disagreements = [f"round {c.seed}: ours {c.ours} | real {c.theirs}" for c in comparisons if not c.agrees]
    assert disagreements == []


def test_every_rule_is_exercised_both_ways():
    """Each action's rule is taken, and each is also declined, over the generated rounds (a comparison on rounds
    where nothing happens would prove little)."""
    rounds = [round_generate(random.Random(seed)) for seed in range(ROUNDS)]
    taken = Counter(f"{a.action} {a.rule}" for r in rounds for a in ours(r).actions)
    for rule in (
        "disable few_events_left",
        "keep enough_events_left",
        "boost jumbo_disabled",
        "boost near_the_end",
        "kick no_active_jumbo_job",
        "reset high_priority",
    ):
        assert taken[rule] >= 50, (rule, taken)
    # declined: tasks in every flag and status that no rule touched
    untouched = sum(
        1
        for r in rounds
        for task in r["tasks"]
        if task["jediTaskID"] not in {a.task_id for a in ours(r).actions if a.action != "keep"}
    )
    assert untouched >= 500
