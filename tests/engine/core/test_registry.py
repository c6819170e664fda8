"""Plugins: loaded from dotted paths, looked up by name, and filters can be switched off by name."""

import pytest

from brokerage.engine import PluginRegistry, UnknownPlugin, default_registry, parse_scenario, run
from tests.engine.builders import nucleus, task_scenario


def test_default_registry_knows_our_task_broker():
    assert "atlas_prod_task" in default_registry().names()


def test_a_third_party_plugin_loads_by_dotted_path():
    registry = PluginRegistry.from_paths(["tests.engine.third_party.EvenSiteBroker"])
    decision = run({"plugin": "even_sites", "sites": {"S-1": {}, "S-2": {}, "S-4": {}}, "seed": 3}, registry=registry)
    assert [c.name for c in decision.candidates] == ["S-2", "S-4"]
    assert decision.skipped["S-1"].code == "match"
    assert decision.skipped["S-1"].detail == {"number": 1}


def test_bad_paths_and_names_are_clear():
    with pytest.raises(ImportError, match=r"cannot load brokerage plugin 'tests\.engine\.nowhere\.Broker'"):
        PluginRegistry.from_paths(["tests.engine.nowhere.Broker"])
    with pytest.raises(UnknownPlugin, match="unknown brokerage plugin 'atlas_prod_tsk'"):
        run({"plugin": "atlas_prod_tsk"})
    registry = PluginRegistry.from_paths(["tests.engine.third_party.EvenSiteBroker"])
    with pytest.raises(ValueError, match="taken by"):
        registry.register(type("Clash", (registry.get("even_sites"),), {"name": "even_sites"}))


def test_filters_switch_off_by_name():
    scenario = parse_scenario(task_scenario(nucleus("A", state="DISABLED")))
    assert run(scenario).outcome == "pending"
    decision = run(scenario, disabled_filters=frozenset({"nucleus status"}))
    assert decision.chosen == "A"
    assert [stage.filter for stage in decision.stages][:2] == ["input copy", "full chain"]
    with pytest.raises(ValueError, match="no filter named"):
        run(scenario, disabled_filters=frozenset({"status filter"}))


def test_weighted_choice_is_proportional_over_many_seeds():
    from brokerage.engine import Candidate
    from brokerage.engine.core.plugin import weighted_choice

    candidates = [Candidate("A", 3.0, {}), Candidate("B", 1.0, {}), Candidate("C", 0.0, {})]
    picks = [weighted_choice(candidates, seed) for seed in range(10_000)]
    assert picks.count("A") / 10_000 == pytest.approx(0.75, abs=0.015)
    assert picks.count("C") == 0
    assert weighted_choice(candidates, 42) == weighted_choice(candidates, 42)
    assert weighted_choice([], 1) is None
    zero = [Candidate("X", 0.0, {}), Candidate("Y", 0.0, {})]
    assert {weighted_choice(zero, seed) for seed in range(50)} == {"X", "Y"}


def test_a_plugin_path_from_before_the_split_still_loads_and_says_the_new_one():
    old = "brokerage.engine.plugins.atlas_prod_job.AtlasProdJobBroker"
    with pytest.warns(FutureWarning, match=r"now 'brokerage\.engine\.panda\.job_broker\.AtlasProdJobBroker'"):
        registry = PluginRegistry.from_paths([old])
    assert registry.names() == ["atlas_prod_job"]
    assert registry.get("atlas_prod_job") is default_registry().get("atlas_prod_job")
