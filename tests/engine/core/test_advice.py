"""What a shifter can do about a decision (brokerage/engine/core/advice.py), with worked cases."""

from brokerage.engine.core.advice import ACTIONS, DATA, SITE, WAIT, advise
from brokerage.engine.core.reasons import reason_title


def skips(**groups):
    """name → {code, detail} from code=[(name, detail), …]."""
    return {name: {"code": code, "detail": detail} for code, members in groups.items() for name, detail in members}


def test_an_assigned_decision_needs_nothing():
    assert advise(plugin="atlas_prod_job", outcome="assigned", skipped=skips(io=[("Q1", {})]), n_candidates=3) == []


def test_input_only_at_a_nucleus_whose_queues_are_off_asks_for_a_replica_elsewhere():
    # the task 18 of the issue: the nucleus' two queues are brokeroff and 1-core, the 37 others too far
    skipped = skips(
        status=[("NUC_Q1", {"status": "brokeroff", "required": "online"})],
        cpucore=[("NUC_Q2", {"corecount": 1})],
        io=[(f"SAT_{i}", {}) for i in range(37)],
    )
    advice = advise(plugin="atlas_prod_job", outcome="pending", skipped=skipped, n_candidates=39, nucleus="NUC")
    assert len(advice) == 1  # one action, not one per reason
    first = advice[0]
    assert first.kind == DATA
    assert "replica of the input at another nucleus" in first.action
    assert "queues at NUC" in first.action
    assert "1 are brokeroff (NUC_Q1)" in first.evidence
    assert f"1 {reason_title('cpucore')} (NUC_Q2)" in first.evidence
    assert "The 37 other queues are input too far (SAT_0, SAT_1, SAT_2, SAT_3 and 33 more)" in first.evidence
    assert set(first.codes) == {"io", "status", "cpucore"}


def test_no_pilot_anywhere_is_a_site_problem_to_report():
    skipped = skips(nopilot=[("Q1", {}), ("Q2", {}), ("Q3", {})])
    advice = advise(plugin="atlas_prod_job", outcome="pending", skipped=skipped, n_candidates=3)
    assert [(a.kind, a.action) for a in advice] == [(SITE, ACTIONS["nopilot_all"].text)]
    assert advice[0].evidence == "All 3 candidate queues: no pilot for 3 hours (Q1, Q2, Q3)."


def test_otherwise_one_action_per_reason_commonest_first_with_the_share_it_covers():
    skipped = skips(links_full=[("A", {}), ("B", {})], nopilot=[("C", {})], zeroshare=[])
    advice = advise(plugin="atlas_prod_job", outcome="pending", skipped=skipped, n_candidates=4)
    assert [(a.kind, a.codes) for a in advice] == [(WAIT, ("links_full",)), (SITE, ("nopilot",))]
    assert advice[0].evidence == "2 of 4 candidates: link full (A, B)."
    assert advice[0].action.startswith("Wait: the link's transfer queue drains by itself")
    assert advice[1].evidence == "1 of 4 candidates: no pilots (C)."


def test_every_action_names_a_known_kind_and_reads_as_a_sentence():
    for code, action in ACTIONS.items():
        assert action.kind in ("wait", "site", "data", "task", "config"), code
        assert action.text.endswith("."), code
