"""A rule's profile variants (engine/core/plugin.py Variants): the gdpconfig switch picks one, the seed's when the
value names none; a filter list is resolved once per switch values, so a decision pays no dispatch per rule."""

from brokerage.engine.core.plugin import NOTHING_FAILS, Filter, Variants, filters_resolved, never
from brokerage.gdpconfig import ConfigView


def seed_rule(context):
    return "seed"


def panda_rule(context):
    return "panda"


class Holder:
    """Just what Variants reads of a Context: the scenario's configuration."""

    def __init__(self, **values):
        self.config = ConfigView.from_flat(values)
        self.scenario = self


def test_the_switch_picks_the_variant_and_any_other_value_is_the_seed():
    rule = Variants("MEMORY_RULE", seed=seed_rule, panda=panda_rule)
    assert rule(Holder(MEMORY_RULE="panda")) == "panda"
    assert rule(Holder(MEMORY_RULE="seed")) == "seed"
    assert rule(Holder()) == "seed"  # the registry's default
    assert rule.pick(ConfigView.from_flat({"MEMORY_RULE": "panda"})) is panda_rule
    assert repr(rule) == "Variants('MEMORY_RULE', seed=seed_rule, panda=panda_rule)"


def test_a_variant_may_be_named_by_any_value_of_its_switch():
    rule = Variants("NUM_SLOTS_RULE", seed=seed_rule, per_core=panda_rule)
    assert rule(Holder(NUM_SLOTS_RULE="per_core")) == "panda"
    assert rule(Holder(NUM_SLOTS_RULE="max")) == "seed"  # the seed profile's value


def test_a_filter_list_is_resolved_once_per_switch_values():
    plain = Filter("plain", "status", seed_rule)
    varied = Filter("varied", "io", Variants("IO_CHECK_RULE", seed=seed_rule, panda=never), reusable=True)
    filters = (plain, varied)
    panda = ConfigView.from_flat({"IO_CHECK_RULE": "panda"})
    resolved = filters_resolved(filters, panda)
    assert [f.check for f in resolved] == [seed_rule, never]
    assert resolved[0] is plain
    assert resolved[1].reusable
    assert resolved[1].code == "io"
    assert filters_resolved(filters, ConfigView.from_flat({"IO_CHECK_RULE": "panda"})) is resolved
    assert [f.check for f in filters_resolved(filters, ConfigView.from_flat({}))] == [seed_rule, seed_rule]
    assert filters_resolved((plain,), panda) == (plain,)  # nothing to resolve: the list itself
    assert never(None) is NOTHING_FAILS


def test_a_decision_runs_with_the_collector_paused_and_restores_it():
    # core/plugin.collector_paused: off inside the decision, on again after it, left alone when already off
    import gc

    from brokerage.engine.core.plugin import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # a decision inside another
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()
