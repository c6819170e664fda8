"""PreparedArrays: prepare()'s arrays made when a rule first reads them, decided exactly as if made up front."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np
import pytest

from brokerage.engine import run, trace_encode
from brokerage.engine.core.plugin import Context, DeferredArrays, PreparedArrays, overlay_producer
from brokerage.engine.core.registry import PluginRegistry
from brokerage.engine.core.scenario import parse_scenario
from brokerage.engine.panda import analysis_rules
from brokerage.engine.panda.analysis_broker import AtlasAnalJobBroker
from brokerage.engine.panda.job_broker import AtlasProdJobBroker
from tools.peer.scenarios import anal_scenario, job_scenario


def test_a_group_is_made_once_on_first_read_and_shared_by_every_copy():
    calls = []

    def produce(arrays):
        calls.append(1)
        return {"doubled": arrays["running"] * 2, "tripled": arrays["running"] * 3}

    prepared = PreparedArrays({"running": np.array([1.0, 4.0])})
    prepared.lazily(("doubled", "tripled"), produce)
    first, second = prepared.copy(), prepared.copy()
    assert "doubled" not in first
    assert calls == []
    assert first["doubled"].tolist() == [2.0, 8.0]
    assert second["tripled"].tolist() == [3.0, 12.0]
    assert calls == [1]  # made once for both decisions


def test_a_producer_reads_the_prepared_arrays_never_a_decisions_writes():
    prepared = PreparedArrays({"running": np.array([10.0])})
    prepared.lazily(("share",), lambda arrays: {"share": arrays["running"] / 5})
    decision = prepared.copy()
    decision["running"] = np.array([99.0])  # a rule's own override
    assert decision["share"].tolist() == [2.0]  # 10 / 5, not 99 / 5


def test_a_key_a_decision_set_itself_is_not_replaced_by_its_group():
    prepared = PreparedArrays({"site": np.array(["A", "B"], dtype=object)})
    prepared.lazily(("at_nucleus", "closeness"), lambda a: {"at_nucleus": a["site"] == "A", "closeness": np.ones(2)})
    decision = prepared.copy()
    decision["at_nucleus"] = np.array([True, True])  # as the task broker's job check does
    assert decision["closeness"].tolist() == [1.0, 1.0]
    assert decision["at_nucleus"].tolist() == [True, True]


def test_a_key_its_group_does_not_make_stays_missing():
    prepared = PreparedArrays({})
    prepared.lazily(("hs06_needed", "walltime"), lambda _: {"walltime": np.zeros(1)})  # hs06 only under panda
    decision = prepared.copy()
    assert decision["walltime"].tolist() == [0.0]
    with pytest.raises(KeyError):
        decision["hs06_needed"]
    with pytest.raises(KeyError):
        decision["never_registered"]


def test_an_overlay_producer_writes_its_own_keys_only():
    prepared = PreparedArrays({"activated": np.array([2.0]), "assigned": np.array([3.0])})

    def fill(target):
        target["queued"] = target["activated"] + target["assigned"]

    prepared.lazily(("queued",), overlay_producer(fill))
    assert prepared.copy()["queued"].tolist() == [5.0]
    assert set(prepared) == {"activated", "assigned"}


def _made_up_front(broker_class):
    """The broker with every lazy group made before the first filter runs: the old, eager order."""

    class Eager(broker_class):
        def decide(self, scenario):
            self._prepared(scenario, list(self.initial_candidates(scenario)))  # the grid before the first filter
            return super().decide(scenario)

        def _prepared(self, scenario, names):
            arrays = super()._prepared(scenario, names)
            for key in list(getattr(arrays, "_groups", {})):
                with contextlib.suppress(KeyError):  # a key its group does not make under this configuration
                    arrays[key]
            return arrays

    return Eager


@pytest.mark.parametrize(
    ("plugin", "broker_class", "generate"),
    [("atlas_prod_job", AtlasProdJobBroker, job_scenario), ("atlas_anal_job", AtlasAnalJobBroker, anal_scenario)],
)
@pytest.mark.parametrize("profile", ["seed", "panda"])
def test_lazy_groups_decide_exactly_as_groups_made_up_front(plugin, broker_class, generate, profile):
    eager = PluginRegistry()
    eager.register(_made_up_front(broker_class))
    for seed in range(120):
        data = {**generate(seed), "plugin": plugin, "profile": profile}
        lazy_decision, eager_decision = run(data), run(data, registry=eager)
        assert trace_encode(lazy_decision) == trace_encode(eager_decision), seed
        assert lazy_decision.message == eager_decision.message


@pytest.mark.parametrize(
    ("plugin", "broker_class", "generate"),
    [("atlas_prod_job", AtlasProdJobBroker, job_scenario), ("atlas_anal_job", AtlasAnalJobBroker, anal_scenario)],
)
def test_every_key_a_group_makes_is_declared(plugin, broker_class, generate):
    """A key a producer writes without declaring it could never be read: each group makes only declared keys."""
    for seed in range(60):
        scenario = parse_scenario({**generate(seed), "plugin": plugin, "profile": "panda"})
        broker = broker_class()
        names = list(broker.initial_candidates(scenario))
        arrays = broker.prepare(scenario, names)
        groups: dict[int, tuple] = {}
        for key, group in arrays._groups.items():
            groups.setdefault(id(group), (group, set()))[1].add(key)
        for group, declared in groups.values():
            made = group.producer(group.origin)
            assert set(made) <= declared, sorted(set(made) - declared)


def test_deferred_arrays_are_prepared_on_the_first_read_keeping_a_rules_own_keys():
    calls = []

    def prepare():
        calls.append(1)
        prepared = PreparedArrays({"site": np.array(["A", "B"], dtype=object), "late": "prepared"})
        prepared.lazily(("doubled",), lambda a: {"doubled": np.array([2.0, 4.0])})
        return prepared

    arrays = DeferredArrays(prepare)
    arrays["late"] = []  # a rule's own key, written before anything was read
    assert calls == []
    assert arrays["site"].tolist() == ["A", "B"]
    assert arrays["late"] == []  # kept over the prepared value
    assert arrays["doubled"].tolist() == [2.0, 4.0]  # the prepared groups come with the arrays
    assert "site" in DeferredArrays(prepare)  # asking whether a key is there prepares them too
    assert DeferredArrays(prepare).get("site") is not None
    assert calls == [1, 1, 1]


@pytest.mark.parametrize(
    ("plugin", "broker_class", "scenario", "rule"),
    [
        # the input has no complete copy anywhere: the analysis broker stops at "input complete"
        ("atlas_anal_job", AtlasAnalJobBroker, anal_scenario(128), "input complete"),
        # the nucleus has no production queue: the job broker stops at "unknown nucleus"
        ("atlas_prod_job", AtlasProdJobBroker, job_scenario(209), "unknown nucleus"),
    ],
)
def test_a_decision_ended_by_the_tasks_own_rules_never_reads_the_grid(plugin, broker_class, scenario, rule):
    parsed = parse_scenario({**scenario, "plugin": plugin, "profile": "panda"})
    broker = broker_class()
    decision = broker.decide(parsed)
    assert decision.outcome == "pending"
    assert [stage.filter for stage in decision.stages if stage.after < stage.before] == [rule]
    cache = broker._snapshot_cache(parsed)
    assert not any(isinstance(key, tuple) and key[0] == "grid" for key in cache)
    assert "prepared" not in cache


def _checks_again(broker_class):
    """The broker with every filter's check run in every loop: no verdict reused."""

    class Again(broker_class):
        filters = tuple(replace(rule, reusable=False) for rule in broker_class.filters)

    return Again


@pytest.mark.parametrize("profile", ["seed", "panda"])
def test_reused_verdicts_decide_exactly_as_checks_run_again(profile):
    again = PluginRegistry()
    again.register(_checks_again(AtlasAnalJobBroker))
    loops = 0
    for seed in range(150):
        data = {**anal_scenario(seed), "plugin": "atlas_anal_job", "profile": profile}
        reused, checked = run(data), run(data, registry=again)
        assert trace_encode(reused) == trace_encode(checked), seed
        assert reused.message == checked.message
        loops += "retry" in reused.extra
    assert loops >= 20  # the second loop, where verdicts are reused, ran often enough to tell


def test_the_second_loop_takes_the_first_loops_software_verdict():
    """Seed 425: no queue passes the first loop (data locality), the second runs without it; the software check,
    which reads neither the candidates still alive nor the rules switched off, runs once for both loops."""
    calls = []
    software = next(rule for rule in AtlasAnalJobBroker.filters if rule.name == "software")
    assert software.reusable

    def counted(context):
        calls.append(1)
        return software.check(context)

    class Counting(AtlasAnalJobBroker):
        filters = tuple(
            replace(rule, check=counted) if rule is software else rule for rule in AtlasAnalJobBroker.filters
        )

    decision = Counting().decide(parse_scenario({**anal_scenario(425), "plugin": "atlas_anal_job", "profile": "panda"}))
    assert "retry" in decision.extra
    assert calls == [1]


def test_a_second_loop_after_every_queue_went_before_the_data_locality_check_is_the_first_without_it():
    """When no queue reaches the data locality check, the loop without it is the same loop minus that check: taken
    as such, it equals brokering again with the check switched off (stages, skips, message)."""
    shortcuts = 0
    for seed in range(300):
        # the seed's order (ANALYSIS_SITES_RULE seed) asks several filters before the data locality check, which
        # the real order (panda) asks first of all but the input's completeness
        scenario = anal_scenario(seed)
        scenario["gdpconfig"] = {**scenario.get("gdpconfig", {}), "ANALYSIS_SITES_RULE": "seed"}
        parsed = parse_scenario({**scenario, "plugin": "atlas_anal_job", "profile": "panda"})
        decision = AtlasAnalJobBroker().decide(parsed)
        first = AtlasAnalJobBroker(disabled_filters=frozenset({"data locality"})).decide(parsed)
        locality_before = [stage.before for stage in first.stages if stage.filter == "data locality"]
        if "retry" not in decision.extra or locality_before:
            continue
        loop_one = super(AtlasAnalJobBroker, AtlasAnalJobBroker()).decide(parsed)
        if [s.before for s in loop_one.stages if s.filter == "data locality"] != [0]:
            continue
        shortcuts += 1
        note = decision.extra["retry"]
        assert decision.message == f"{first.message} ({note})"
        assert trace_encode(replace(decision, message=first.message, extra=first.extra)) == trace_encode(first), seed
    assert shortcuts >= 5


def test_a_rules_numbers_are_made_when_read_and_are_those_of_the_decision():
    """The data locality check decides from the data's sites; the data at each queue (missing files, GB) is made
    only when someone reads why a queue was skipped, from the decision's own arrays."""
    checked = 0
    for seed in range(60):
        parsed = parse_scenario({**anal_scenario(seed), "plugin": "atlas_anal_job", "profile": "panda"})
        if not parsed.datasets:
            continue
        broker = AtlasAnalJobBroker()
        names = list(broker.initial_candidates(parsed))
        arrays = DeferredArrays(lambda broker=broker, parsed=parsed, names=names: broker._prepared(parsed, names))
        context = Context(parsed, names, arrays, np.ones(len(names), dtype=bool), broker)
        verdict = analysis_rules.locality_panda(context)
        assert callable(verdict.detail)
        assert "missing_files" not in arrays  # the verdict did not need the data at each queue
        detail = verdict.detail()
        assert detail["missingFiles"] is arrays["missing_files"]
        assert detail["availableGB"] is arrays["local_size"]
        checked += 1
    assert checked >= 10
