"""Reasons ranked by whether someone can act on them (issue 35, finding 2): a skip that only says a queue is of
another kind (core count, event service) is expected, never the headline, the main reason or the first advice
while another reason removed something."""

from datetime import UTC, datetime

from brokerage.engine.core.advice import advise
from brokerage.engine.core.decision import Decision, Skip
from brokerage.engine.core.reasons import EXPECTED_CODES, reason_order


def decision_with(skips: dict[str, str]) -> Decision:
    return Decision(
        plugin="atlas_prod_job",
        outcome="pending",
        chosen=None,
        candidates=(),
        skipped={name: Skip(code, code, {}) for name, code in skips.items()},
        stages=(),
        message="",
        retry_after_minutes=60,
        now=datetime(2026, 11, 1, tzinfo=UTC),
        seed=0,
        initial=tuple(skips),
    )


def test_expected_reasons_rank_after_every_other_whatever_their_count():
    assert {"cpucore", "es"} <= EXPECTED_CODES
    # 40 multi-core queues against 3 without pilots and 2 full: the pilots first, core count last
    assert reason_order({"cpucore": 40, "nopilot": 3, "cap": 2}) == ["nopilot", "cap", "cpucore"]
    # among themselves, by count then code
    assert reason_order({"es": 2, "cpucore": 5}) == ["cpucore", "es"]
    assert reason_order({"cap": 2, "badsite": 2}) == ["badsite", "cap"]


def test_the_main_reason_is_one_someone_can_act_on():
    skips = {f"MCORE_{i}": "cpucore" for i in range(40)} | {"Q_A": "nopilot", "Q_B": "nopilot", "Q_C": "cap"}
    assert decision_with(skips).primary_reason == "nopilot"
    # only queues of another kind: then that is the reason (a 16-core task with no 16-core queue)
    assert decision_with({f"SCORE_{i}": "cpucore" for i in range(5)}).primary_reason == "cpucore"
    assert decision_with({}).primary_reason == ""


def test_the_first_advice_is_for_the_reason_someone_can_act_on():
    skipped = {f"MCORE_{i}": {"code": "cpucore"} for i in range(40)}
    skipped |= {"Q_A": {"code": "cap"}, "Q_B": {"code": "badsite"}}
    advice = advise(plugin="atlas_prod_job", outcome="pending", skipped=skipped, n_candidates=42)
    # core count has no action (the task's own choice); the two others come in the order of reason_order
    assert [item.codes for item in advice] == [("badsite",), ("cap",)]
