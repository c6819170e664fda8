"""What the incremental pull builds on in the engine: a match memo kept between pulls changes nothing in the
result, and a trace stored as the change against a base decodes to exactly the whole trace."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from brokerage.engine import BaseMissing, Candidate, Decision, Skip, Stage, TraceBase, trace_decode, trace_encode
from brokerage.engine.core.decision import trace_base_pk
from brokerage.engine.wmcore.elements import Element, PullRules
from brokerage.engine.wmcore.matching import MatchMemo, Slots, match_work
from brokerage.engine.wmcore.plugin import pull_decision

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
SITES = [f"T2_XX_S{i:02d}" for i in range(10)]
RULES = {
    "seed": PullRules(),
    "wmcore": PullRules(site_rule="wmcore", order="wmcore", rows_per_slice=7, max_rows=70, work_per_cycle=12),
}


def random_work(rng: random.Random, count: int, prefix: str = "e") -> list[Element]:
    work = []
    for n in range(count):
        whitelist = tuple(rng.sample(SITES, rng.randint(2, 6))) if rng.random() < 0.8 else ()
        work.append(
            Element(
                id=f"{prefix}{n:03d}",
                priority=float(rng.choice((1.0, 2.0, 2.0, 5.0))),
                created=float(rng.randint(0, 5)),
                jobs=rng.randint(1, 9),
                inputs={f"/D#{prefix}{n}": tuple(rng.sample(SITES, rng.choice((0, 1, 2, 3))))},
                whitelist=whitelist,
                blacklist=tuple(rng.sample(SITES, 1)) if rng.random() < 0.2 else (),
                trust_sitelists=rng.random() < 0.1,
                team=rng.choice(("", "", "prod", "other")),
                request=f"r{n % 7}",
                blowup=rng.choice((1.0, 1.0, 1.5)),
            )
        )
    return work


def random_sites(rng: random.Random, names=SITES) -> tuple[Slots, dict]:
    thresholds = {name: float(rng.randint(0, 25)) for name in names}
    site_jobs = {name: {float(rng.choice((1.0, 2.0, 5.0))): rng.randint(0, 15)} for name in names}
    return Slots(thresholds), site_jobs


@pytest.mark.parametrize("profile", sorted(RULES))
@pytest.mark.parametrize("case", range(12))
def test_a_memo_kept_between_pulls_gives_the_same_pulls(profile, case):
    rng = random.Random(case)
    rules = RULES[profile]
    work = random_work(rng, 60)
    memo = MatchMemo()
    for round_number in range(6):
        # between pulls: elements leave, arrive, change (a changed element is a new object); slots change; now
        # and then the site names change (the memo starts again)
        names = SITES if round_number != 3 else SITES[:-2]
        slots, site_jobs = random_sites(rng, names)
        kwargs = {"seed": round_number, "rules": rules, "team": "prod", "exclude_workflows": ("r3",)}
        with_memo = match_work(work, slots, site_jobs, memo=memo, **kwargs)
        without = match_work(work, slots, site_jobs, **kwargs)
        assert with_memo == without
        work = [e for e in work if rng.random() < 0.8] + random_work(rng, 8, prefix=f"n{round_number}-")
        work[0] = replace(work[0], inputs={"/D#moved": (SITES[0],)})


def pull_pair(rng: random.Random, rules: PullRules):
    """Two pulls a minute apart: the taken elements gone and counted at their sites, new elements, one element's
    priority changed, one site's threshold raised."""
    work = random_work(rng, 80)
    slots, site_jobs = random_sites(rng)
    first = match_work(work, slots, site_jobs, seed=1, rules=rules)
    before = pull_decision(pull=first, elements=work, slots=slots, step="pullWork", now=NOW, seed=1, queue="a")
    taken = {element.id for element, _ in first.taken}
    for element, site in first.taken:
        site_jobs[site][element.priority] = site_jobs[site].get(element.priority, 0) + element.jobs
    later = [e for e in work if e.id not in taken] + random_work(rng, 10, prefix="new")
    later[1] = replace(later[1], priority=9.0)
    thresholds = dict(slots.thresholds)
    thresholds[SITES[2]] += 20
    slots = Slots(thresholds)
    second = match_work(later, slots, site_jobs, seed=2, rules=rules)
    after = pull_decision(pull=second, elements=later, slots=slots, step="pullWork", now=NOW, seed=2, queue="a")
    return before, after


@pytest.mark.parametrize("profile", sorted(RULES))
@pytest.mark.parametrize("case", range(10))
def test_a_delta_trace_decodes_to_the_whole_trace(profile, case):
    before, after = pull_pair(random.Random(100 + case), RULES[profile])
    base = trace_decode(trace_encode(before))
    whole = trace_encode(after)
    delta = trace_encode(after, base=TraceBase(41, before))
    assert trace_base_pk(delta) == 41
    assert trace_base_pk(whole) is None
    assert trace_decode(delta, base=base) == trace_decode(whole)
    assert len(delta) < len(whole)


def test_a_delta_stores_only_what_changed():
    before, after = pull_pair(random.Random(7), RULES["seed"])
    base = TraceBase(1, before)
    # against itself: nothing is stored but the runs of the base's list
    same = trace_decode(trace_encode(before, base=base), base=trace_decode(trace_encode(before)))
    assert same == trace_decode(trace_encode(before))
    changed = set(after.skipped.changed_since(before.skipped))
    assert "new000" in changed or "new000" in {c.name for c in after.candidates}
    unchanged = [name for name in after.skipped if name not in changed]
    assert unchanged, "some elements are left for the same reason with the same numbers"
    for name in unchanged:
        assert after.skipped[name] == before.skipped[name]


def test_a_delta_without_its_base_says_which_decision_it_needs():
    before, after = pull_pair(random.Random(8), RULES["seed"])
    with pytest.raises(BaseMissing, match="decision 5"):
        trace_decode(trace_encode(after, base=TraceBase(5, before)))


def generic(names, skipped: dict[str, Skip], chosen: str) -> Decision:
    return Decision(
        plugin="test",
        outcome="assigned",
        chosen=chosen,
        candidates=(Candidate(chosen, 1.0, {"w": 1}),),
        skipped=skipped,
        stages=(Stage("only", len(names), 1),),
        message="",
        retry_after_minutes=None,
        now=NOW,
        seed=0,
        initial=tuple(names),
    )


def test_a_delta_of_any_decision_carries_only_what_is_still_skipped():
    before = generic(
        ["A", "B", "C", "D"],
        {"A": Skip("full", "slots", {"n": 1}), "B": Skip("full", "slots", {"n": 2}), "C": Skip("down", "s", {})},
        "D",
    )
    # A unchanged, B's numbers changed, C is chosen now, D skipped now, E new and skipped, and F new in neither
    after = generic(
        ["E", "A", "B", "C", "D", "F"],
        {
            "A": Skip("full", "slots", {"n": 1}),
            "B": Skip("full", "slots", {"n": 3}),
            "D": Skip("down", "s", {}),
            "E": Skip("full", "slots", {"n": 0}),
        },
        "C",
    )
    decoded = trace_decode(trace_encode(after, base=TraceBase(9, before)), base=trace_decode(trace_encode(before)))
    assert decoded == trace_decode(trace_encode(after))
    assert decoded["skipped"]["B"]["detail"] == {"n": 3}
    assert "C" not in decoded["skipped"]
    assert "F" not in decoded["skipped"]


def test_under_the_wmcore_rule_each_element_names_its_own_block_without_a_location():
    """The wmcore rule's results are cached per distinct site lists and locations; two elements whose blocks have
    no location share those, but each reason must name the element's own block (found by the incremental pull's
    test: a warm memo named the block of an element seen in an earlier pull)."""
    first = Element(id="a", priority=1.0, created=0.0, jobs=1, inputs={"/D#1": ()}, whitelist=("T2_XX_S00",))
    second = replace(first, id="b", inputs={"/D#2": ()})
    slots, site_jobs = Slots({"T2_XX_S00": 10.0}), {}
    pull = match_work([first, second], slots, site_jobs, seed=0, rules=RULES["wmcore"])
    assert pull.rejected["a"] == ("no_input_location", {"blocks": ["/D#1"]})
    assert pull.rejected["b"] == ("no_input_location", {"blocks": ["/D#2"]})
