"""How two decisions are compared (tools/peer/compare.py): job weights relative 1e-6, task and analysis shares."""

from tools.peer.compare import compare_one
from tools.peer.scenarios import job_scenario


def test_job_weights_agree_within_one_part_in_a_million():
    assert compare_one("job", 1, {"A": 2.0, "B": 1.0}, {"A": 2.000001, "B": 1.0}, 1e-6).agrees
    result = compare_one("job", 1, {"A": 2.0, "B": 1.0}, {"A": 2.00001, "B": 1.0}, 1e-6)
    assert not result.agrees
    assert "A (2 vs 2.00001)" in result.note


def test_task_and_analysis_compare_shares_not_units():
    # 10 GB and 30 GB against 1 TB and 3 TB: the same draw probabilities 0.25 and 0.75
    assert compare_one("task", 1, {"N1": 10.0, "N2": 30.0}, {"N1": 1.0, "N2": 3.0}, 1e-6).agrees
    assert not compare_one("anal", 1, {"N1": 10.0, "N2": 30.0}, {"N1": 1.0, "N2": 2.0}, 1e-6).agrees


def test_a_different_kept_set_never_agrees():
    result = compare_one("job", 1, {"A": 1.0, "B": 1.0}, {"A": 1.0}, 1e-6)
    assert not result.agrees
    assert "only ours ['B']" in result.note


def test_both_keeping_nothing_agrees():
    assert compare_one("job", 1, {}, {}, 1e-6).agrees


def test_scenarios_are_deterministic_per_seed_and_differ_between_seeds():
    assert job_scenario(7) == job_scenario(7)
    assert job_scenario(7) != job_scenario(8)
