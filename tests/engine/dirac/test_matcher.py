"""The live DIRAC Matcher's draw as plain functions (engine.dirac.matcher), and its replay from a trail."""

import json
import random

import numpy as np
import pytest

from brokerage.engine import parse_scenario
from brokerage.engine.core.scenario import ScenarioError
from brokerage.engine.dirac.matcher import (
    CLAIM_PERMUTATION,
    CLAIM_SHUFFLE,
    IndexParts,
    MatcherTrail,
    TaskQueueIndex,
    TrailEnds,
    claim_order,
    index_snapshot,
    matcher_decision,
    matcher_run,
    queues_to_try,
    trail_replay,
    user_priority_draw,
)
from brokerage.engine.dirac.rules import MatchRules, Resource

SEED_RULES = MatchRules()
DIRAC_RULES = MatchRules(tq_order="dirac", jobs_per_try=50, legacy_fields=False, absent_ce_platform="dirac")
RESOURCE = Resource(setup="LHCb-Production", cpuTime=100_000, site="LCG.CERN.cern")


def index_of(*rows, values=()) -> TaskQueueIndex:
    """rows: (id, setup, group, owner, cpuTime, priority, minRAM)."""
    return TaskQueueIndex("test", list(rows), list(values))


def test_the_user_priority_is_drawn_once_per_priority_group():
    # random.Random(0) draws 0.8444 then 0.7580
    # one job at priority 1 and one at 5: keys (1 − 0.8444)/1 = 0.156 and (1 − 0.7580)/5 = 0.048 → priority 5
    assert user_priority_draw([(1, 1), (5, 1)], random.Random(0)) == 5
    # four jobs at priority 1: the smallest of four uniforms, 1 − 0.8444^(1/4) = 0.0414 < 0.048 → priority 1
    assert user_priority_draw([(1, 4), (5, 1)], random.Random(0)) == 1
    assert user_priority_draw([], random.Random(0)) is None


def test_the_first_jobs_are_ordered_by_a_shuffle_or_by_the_seeded_permutation():
    # random.Random(3) shuffles four items to positions [3, 0, 2, 1]
    assert claim_order([11, 12, 13, 14], random.Random(3), CLAIM_SHUFFLE) == [14, 11, 13, 12]
    # random.Random(3) draws a = 511025151, b = 1272686665; (id·a + b) mod (2^31 − 1):
    # 11 → 451512385, 5000 → 892901735, 13 → 1473562687, 77 → 1966917646
    assert claim_order([11, 13, 77, 5000], random.Random(3), CLAIM_PERMUTATION) == [11, 5000, 13, 77]


def test_the_task_queue_is_drawn_by_rand_over_priority_among_the_highest_cpu_time():
    index = index_of(
        (1, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 1.0, 0),
        (2, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 4.0, 0),
        (3, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 2.0, 0),
        (4, "LHCb-Production", "lhcb_user", "/CN=a", 5_000, 100.0, 0),
    )
    mask = index.matching(RESOURCE, SEED_RULES, {})
    assert mask.tolist() == [True, True, True, True]
    # random.Random(7) seeds numpy's draws 0.367, 0.808, 0.740 for the three of 50,000 s; over priorities 1, 4, 2:
    # 0.367, 0.202, 0.370 → TQ2 (TQ4, with less CPU time, is not drawn under seed 003)
    assert [int(index.ids[i]) for i in queues_to_try(index, mask, SEED_RULES, random.Random(7))] == [2]
    # DIRAC v9: every matching queue, ten smallest keys in order
    order = [int(index.ids[i]) for i in queues_to_try(index, mask, DIRAC_RULES, random.Random(7))]
    assert sorted(order) == [1, 2, 3, 4]
    assert order[0] in (2, 4)


def stored(trail):
    """The trail's parts as stored and read back: digest → decoded JSON, and an index builder over them."""
    parts = {digest: json.loads(text) for digest, (_, text) in trail.parts.items()}
    return parts, lambda digest: TaskQueueIndex.from_snapshot(index_snapshot(parts[digest], parts))


def live_like(index, waiting_jobs, taken=()):
    """A matcher_run over plain data, recording its trail as the live matcher does."""
    trail = MatcherTrail(writer=IndexParts())
    jobs = {tq: dict(groups) for tq, groups in waiting_jobs.items()}

    def index_now():
        trail.index_read(index)
        return index

    def waiting(tq_id):
        groups = sorted((p, n) for p, n in jobs.get(tq_id, {}).items() if n)
        trail.waiting_read(tq_id, groups)
        return groups

    def claim(tq_id, priority, rng):
        first = [tq_id * 100 + k for k in range(jobs[tq_id][priority])][:10]
        order = claim_order(first, rng, CLAIM_SHUFFLE)
        passed = [job for job in order if job in taken]
        job = next((job for job in order if job not in taken), None)
        trail.claimed(CLAIM_SHUFFLE, 10, first, passed[: order.index(job)] if job else order, job)
        return job, first

    return trail, lambda rng: matcher_run(
        resource=RESOURCE,
        rules=SEED_RULES,
        groups={},
        rng=rng,
        index_now=index_now,
        waiting=waiting,
        emptied=lambda idx, tq_id: idx.disable(tq_id),
        claim=claim,
    )


def test_an_empty_task_queue_leaves_the_index_and_the_request_draws_again_and_replays_alike():
    index = index_of(
        (1, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 1.0, 0),
        (2, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 4.0, 0),
        (3, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 2.0, 0),
    )
    # TQ2 is drawn first (test above) but has no waiting job: it leaves the index, the next try draws again
    trail, run = live_like(index, {1: {1: 3}, 3: {2: 2}})
    outcome = run(random.Random(7))
    assert outcome.drawn[0] == (2, None)
    assert outcome.tries == 2
    assert outcome.job is not None
    assert outcome.task_queue in (1, 3)
    assert not index.enabled[index.position[2]]
    # the second try read another index (TQ2 gone): two index parts, two requirement blocks, one priorities state
    # (TQ2 dropped is a difference of one from the first, whole one)
    assert len({step["index"] for step in trail.tries}) == 2
    kinds = sorted(kind for kind, _ in trail.parts.values())
    assert kinds == ["task_queue_block"] * 2 + ["task_queue_state"] * 2 + ["task_queues"] * 2
    _, index_from = stored(trail)
    replayed = trail_replay(
        trail=json.loads(json.dumps(trail.as_data())),
        index_of=index_from,
        resource=RESOURCE,
        rules=SEED_RULES,
        groups={},
        seed=7,
    )
    assert (replayed.job, replayed.task_queue, replayed.user_priority, replayed.drawn) == (
        outcome.job,
        outcome.task_queue,
        outcome.user_priority,
        outcome.drawn,
    )


def test_a_job_taken_by_another_matcher_is_passed_over_in_the_replay_too():
    index = index_of((1, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 1.0, 0))
    first_choice = claim_order([100, 101, 102], random.Random(0), CLAIM_SHUFFLE)
    # what the claim tries first is gone: the request gets the next one, and so does the replay
    rng = random.Random(0)
    rng.getrandbits(64), rng.random()  # the task-queue draw and the priority draw come before the claim
    order = claim_order([100, 101, 102], rng, CLAIM_SHUFFLE)
    trail, run = live_like(index, {1: {1: 3}}, taken={order[0]})
    outcome = run(random.Random(0))
    assert outcome.job == order[1]
    _, index_from = stored(trail)
    replayed = trail_replay(
        trail=trail.as_data(),
        index_of=index_from,
        resource=RESOURCE,
        rules=SEED_RULES,
        groups={},
        seed=0,
    )
    assert replayed.job == order[1]
    assert sorted(first_choice) == [100, 101, 102]


def test_a_replay_that_draws_a_queue_never_read_says_so():
    index = index_of(
        (1, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 1.0, 0),
        (2, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 4.0, 0),
    )
    trail, run = live_like(index, {1: {1: 1}, 2: {1: 1}})
    outcome = run(random.Random(7))
    _, index_from = stored(trail)
    with pytest.raises(TrailEnds, match=f"where the request drew TQ{outcome.drawn[0][0]}"):
        trail_replay(
            trail=trail.as_data(),
            index_of=index_from,
            resource=RESOURCE,
            rules=SEED_RULES,
            groups={},
            # seed 11 draws 0.110 and 0.492: keys 0.110/1 < 0.492/4 = 0.123, so TQ1, where the request (seed 7:
            # 0.367/1 > 0.808/4 = 0.202) drew TQ2 and read only its waiting jobs
            seed=11,
        )


def test_the_matcher_section_of_a_scenario_decides_and_names_a_bad_path():
    index = index_of(
        (1, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 1.0, 0),
        (2, "LHCb-Certification", "lhcb_user", "/CN=a", 50_000, 4.0, 0),
        values=[(1, "sites", "LCG.CERN.cern")],
    )
    trail, run = live_like(index, {1: {1: 2}})
    outcome = run(random.Random(5))
    parts, _ = stored(trail)
    snapshot = {step["index"]: index_snapshot(parts[step["index"]], parts) for step in trail.tries}
    raw = {
        "plugin": "dirac_match",
        "seed": 5,
        "resource": {"setup": "LHCb-Production", "cpuTime": 100_000, "site": "LCG.CERN.cern"},
        "matcher": {"indexes": snapshot, "tries": trail.as_data()["tries"]},
    }
    decision = matcher_decision(parse_scenario(raw), SEED_RULES)
    assert decision.outcome == "matched"
    assert decision.chosen == str(outcome.job)
    assert [c.name for c in decision.candidates] == ["TQ1"]
    assert decision.skipped["TQ2"].code == "setup"
    assert decision.extra["drawn"] == [[1, 1]]
    bad = {**raw, "matcher": {"indexes": {}, "tries": raw["matcher"]["tries"]}}
    with pytest.raises(ScenarioError, match=r"\$\.matcher\.indexes\."):
        matcher_decision(parse_scenario(bad), SEED_RULES)
    rules_only = matcher_decision(parse_scenario(raw), SEED_RULES, draw=False)
    assert rules_only.outcome == "undetermined"
    assert rules_only.chosen is None
    assert np.array_equal(index.enabled, [True, True])


def test_an_index_is_stored_as_blocks_and_priorities_that_change_apart():
    rows = [(tq_id, "LHCb-Production", "lhcb_user", "/CN=a", 50_000, 1.0, 0) for tq_id in range(1, 601)]
    values = [(tq_id, "sites", f"LCG.Site{tq_id % 7}.org") for tq_id in range(1, 601)]
    writer = IndexParts()
    first_digest, first = writer.parts(index_of(*rows, values=values))
    # ids 1–255, 256–511, 512–600: three blocks of BLOCK = 256 ids; the priorities whole; the index naming them
    assert sorted(kind for kind, _ in first.values()) == ["task_queue_block"] * 3 + ["task_queue_state", "task_queues"]
    # one priority moves: the same blocks, the priorities as a difference of one from the whole state
    moved = [(*row[:5], 7.5, row[6]) if row[0] == 300 else row for row in rows]
    index = index_of(*moved, values=values)
    second_digest, second = writer.parts(index)
    assert {d for d, (k, _) in second.items() if k == "task_queue_block"} == {
        d for d, (k, _) in first.items() if k == "task_queue_block"
    }
    states = [json.loads(text) for kind, text in second.values() if kind == "task_queue_state"]
    delta = next(state for state in states if "base" in state)
    assert delta["set"] == [[300, 7.5]]
    assert delta["drop"] == []
    # a task queue leaves: only its block is new
    index.disable(5)
    third_digest, third = writer.parts(index)
    new_blocks = {d for d, (k, _) in third.items() if k == "task_queue_block"} - set(second)
    assert len(new_blocks) == 1
    # read back, each state is the index it was
    for digest, parts in ((first_digest, first), (second_digest, second), (third_digest, third)):
        decoded = {d: json.loads(text) for d, (_, text) in parts.items()}
        snapshot = index_snapshot(decoded[digest], decoded)
        assert len(snapshot["task_queues"]) == (599 if digest == third_digest else 600)
    decoded = {d: json.loads(text) for d, (_, text) in third.items()}
    rebuilt = TaskQueueIndex.from_snapshot(index_snapshot(decoded[third_digest], decoded))
    assert rebuilt.rows == index.kept_rows()
    assert sorted(rebuilt.values_of[300]) == [("sites", "LCG.Site6.org")]
    # past a tenth of the task queues moving (and 64), the priorities are written whole again
    many = [(*row[:5], 2.0, row[6]) if row[0] <= 100 else row for row in moved]
    _, fourth = writer.parts(index_of(*many, values=values))
    states = [json.loads(text) for kind, text in fourth.values() if kind == "task_queue_state"]
    assert len(states) == 1
    assert "priorities" in states[0]
