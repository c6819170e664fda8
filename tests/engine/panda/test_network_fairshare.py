"""Network weight (REFERENCE.md constants) and fair-share policies (seed 000 Zero Share)."""

import pytest

from brokerage.engine.panda.fairshare import FairsharePolicyError, parse_policy, share_for, zero_share_panda
from brokerage.engine.panda.network import network_weight, throughput_weight


@pytest.mark.parametrize(
    ("mbps", "weight"),
    [
        (250, 2.0),
        (200, 1.9),
        (150, 1.9),
        (100, 1.8),
        (80, 1.8),
        (75, 1.6),
        (60, 1.6),
        (50, 1.5),
        (30, 1.5),
        (20, 1.3),
        (15, 1.3),
        (10, 1.2),
        (5, 1.2),
        (2, 1.1),
        (1.5, 1.1),
        (1, 1.0),
        (0, 1.0),
    ],
)
def test_throughput_steps_are_strictly_above(mbps, weight):
    assert throughput_weight(mbps) == weight


def weight(**overrides):
    values = {
        "at_nucleus": False,
        "queued": 30,
        "sat_cap": 150,
        "mbps_1h": None,
        "mbps_1d": None,
        "mbps_1w": None,
        "closeness": None,
    }
    values.update(overrides)
    return network_weight(**values)


def test_freshest_throughput_wins():
    # queuedWeight = 2 − 30/150 = 1.8; 1h figure 120 Mbps → 1.9; weight = 0.5×1.8 + 0.5×1.9 = 1.85
    result = weight(mbps_1h=120, mbps_1d=5, mbps_1w=500)
    assert (result.queued_weight, result.throughput_weight, result.source) == (pytest.approx(1.8), 1.9, "mbps_1h")
    assert result.weight == pytest.approx(1.85)
    assert weight(mbps_1d=5, mbps_1w=500).source == "mbps_1d"
    assert weight(mbps_1w=500).throughput_weight == 2.0


def test_closeness_when_no_throughput():
    # closeness 0 → 1 + 11/11 = 2; closeness 11 → 1; unknown → 7.7 → 1 + 3.3/11 = 1.3
    assert weight(closeness=0).throughput_weight == 2.0
    assert weight(closeness=11).throughput_weight == 1.0
    unknown = weight()
    assert (unknown.throughput_weight, unknown.source) == (pytest.approx(1.3), "closeness default")
    assert unknown.weight == pytest.approx(0.5 * 1.8 + 0.5 * 1.3)


def test_queue_at_the_nucleus():
    result = weight(at_nucleus=True, queued=149, closeness=11)
    assert (result.weight, result.queued_weight, result.throughput_weight) == (2.5, 2.5, 2.5)


class TestFairshare:
    POLICY = "type=evgen:100%,type=simul:100%,type=any:0%"

    @pytest.mark.parametrize(("kind", "share"), [("evgen", 100), ("simul", 100), ("reco", 0)])
    def test_seed_example(self, kind, share):
        assert share_for(self.POLICY, processing_type=kind, working_group="", gshare="", priority=500)[0] == share

    def test_explicit_rules_beat_any_whatever_the_order(self):
        policy = "type=any:0%,type=evgen:100%"
        assert share_for(policy, processing_type="evgen", working_group="", gshare="", priority=1)[0] == 100

    def test_groups_gshares_priorities_and_wildcards(self):
        policy = "group=GP_*:0%,gshare=Express:100%,priority>900&type=any:50%"
        assert share_for(policy, processing_type="x", working_group="GP_Higgs", gshare="", priority=1)[0] == 0
        assert share_for(policy, processing_type="x", working_group="", gshare="Express", priority=1)[0] == 100
        share, rule = share_for(policy, processing_type="x", working_group="", gshare="MC", priority=950)
        assert (share, rule) == (50, "priority>900&type=any:50%")
        assert share_for(policy, processing_type="x", working_group="", gshare="MC", priority=100) == (None, "")

    def test_empty_policy_restricts_nothing(self):
        assert share_for("", processing_type="x", working_group="", gshare="", priority=0) == (None, "")

    @pytest.mark.parametrize("bad", ["type=evgen", "type=evgen:lots%", "colour=red:0%"])
    def test_bad_policies_are_errors(self, bad):
        with pytest.raises(FairsharePolicyError):
            parse_policy(bad)


class TestFairshareSeedFixes:
    """seeds 001/002: "type=evgensimul:100%: only evgen or simul jobs can be assigned as others have zero shares"."""

    @pytest.mark.parametrize(("kind", "share"), [("evgen", 100), ("simul", 100), ("reprocessing", 0), ("deriv", 0)])
    def test_evgensimul_alone_lets_only_evgen_and_simul_through(self, kind, share):
        assert (
            share_for("type=evgensimul:100%", processing_type=kind, working_group="", gshare="", priority=1)[0] == share
        )

    @pytest.mark.parametrize(("kind", "share"), [("evgen", 100), ("simul", 100), ("reprocessing", 0)])
    def test_evgensimul_with_any_zero(self, kind, share):
        policy = "type=evgensimul:100%,type=any:0%"
        assert share_for(policy, processing_type=kind, working_group="", gshare="", priority=1)[0] == share

    def test_only_positive_type_rules_make_unlisted_types_zero(self):
        # a zero rule alone restricts only what it names
        assert share_for("type=simul:0%", processing_type="evgen", working_group="", gshare="", priority=1) == (
            None,
            "",
        )


class TestFairsharePanda:
    """panda-server 1.0.4 hasZeroShare: first matching rule in order, regular expressions on the process group."""

    @staticmethod
    def zero(policy, kind="evgen", **extra):
        options = {"working_group": "", "gshare": "MC 16", "priority": 500, "merging": False, **extra}
        return zero_share_panda(policy, processing_type=kind, **options)[0]

    def test_evgensimul_matches_no_group_in_the_real_code(self):
        assert self.zero("type=evgensimul:100%", "reprocessing") is False
        assert self.zero("type=evgensimul:100%,type=any:0%", "evgen") is True

    def test_first_matching_rule_decides(self):
        assert self.zero("type=any:0%,type=evgen:100%", "evgen") is True
        assert self.zero("type=evgen:100%,type=any:0%", "evgen") is False

    def test_unknown_processing_types_are_others_and_test_jobs_never_zero(self):
        assert self.zero("type=others:0%", "urgent") is True
        assert self.zero("type=any:0%", "validation") is False

    def test_priority_comparison_not_for_merges(self):
        assert self.zero("priority>400:0%", priority=500) is True
        assert self.zero("priority>400:0%", priority=300) is False
        assert self.zero("priority>400:0%", priority=300, merging=True) is True
