"""Replay: a stored decision run again on its stored inputs (issue 34), as it was or with another profile, other
gdpconfig values or another cycle's grid side, and what changed. Read-only: nothing is stored."""

from __future__ import annotations

import json
import threading
from typing import Any

from brokerage.engine import Decision as EngineDecision
from brokerage.engine import trace_decode, trace_encode
from brokerage.engine.core.decision import stored_weight, trace_outline
from brokerage.gdpconfig import ConfigView
from brokerage.gdpconfig.profiles import PROFILE_NAMES
from brokerage.models import Decision, DecisionTrace
from brokerage.plugins import plugin_registry
from brokerage.selectors.decisions import decision_trace, decision_trace_plain
from brokerage.selectors.inputs import (
    GridInputs,
    InputsUnavailable,
    decision_inputs,
    decision_replay_why_not,
    grid_inputs,
    parsed_scenario,
)


def _outline_from(decision: EngineDecision, *, details: bool = True) -> dict[str, Any]:
    """A fresh engine decision as trace_outline gives a stored one (weights as stored), with the skips (whose
    details a lost candidate shows) when `details`."""
    return {
        "weights": {c.name: stored_weight(c.weight) for c in decision.candidates},
        "skip_codes": decision.skipped.skip_codes()
        if hasattr(decision.skipped, "skip_codes")
        else {name: skip.code for name, skip in decision.skipped.items()},
        "skips": decision.skipped if details else {},
    }


def _outline_of_trace(trace: dict[str, Any]) -> dict[str, Any]:
    return {
        "weights": {c["name"]: c["weight"] for c in trace["candidates"]},
        "skip_codes": {name: skip["code"] for name, skip in trace["skipped"].items()},
    }


def decision_difference(
    *, before: dict[str, Any], after: dict[str, Any], outcomes: tuple[str, str], chosen: tuple[str | None, str | None]
) -> dict[str, Any]:
    """What changed between two outlines of the same decision (trace_outline, _outline_from): candidates gained
    and lost, each with the reason it was skipped before or is now (and the numbers compared now), and the weight
    shifts of those kept by both; with the outcome and choice before and after."""
    weights_before, weights_after = before["weights"], after["weights"]
    skips_now = after.get("skips", {})

    def now_detail(name: str) -> dict[str, Any]:
        # the numbers build every skip's details at once: asked for only where they are shown (`skips` given)
        skip = skips_now.get(name) if skips_now else None
        return dict(skip.detail) if skip is not None else {}

    return {
        "outcome_before": outcomes[0],
        "outcome_now": outcomes[1],
        "chosen_before": chosen[0],
        "chosen_now": chosen[1],
        "outcome_changed": outcomes[0] != outcomes[1],
        "choice_changed": chosen[0] != chosen[1],
        "gained": [
            {"name": name, "was": before["skip_codes"].get(name, "not considered")}
            for name in sorted(set(weights_after) - set(weights_before))
        ],
        "lost": [
            {"name": name, "code": after["skip_codes"].get(name, "not considered"), "detail": now_detail(name)}
            for name in sorted(set(weights_before) - set(weights_after))
        ],
        "weight_shifts": [
            {"name": name, "before": weights_before[name], "now": weights_after[name]}
            for name in sorted(set(weights_before) & set(weights_after))
            if weights_before[name] != weights_after[name]
        ],
    }


def _comparable(trace: dict[str, Any]) -> dict[str, Any]:
    keys = ("initial", "candidate_kind", "candidates", "skipped", "stages", "extra", "profile")
    return json.loads(json.dumps({key: trace.get(key) for key in keys}, sort_keys=True, default=str))


def candidates_changed(difference: dict[str, Any]) -> bool:
    return bool(
        difference["outcome_changed"]
        or difference["choice_changed"]
        or difference["gained"]
        or difference["lost"]
        or difference["weight_shifts"]
    )


# One broker per plugin and thread, as a cycle keeps one for all its decisions: the engine's per-snapshot caches
# then stay warm from one replay of a cycle's decisions to the next.
_brokers = threading.local()


def _broker(plugin: str):
    held = getattr(_brokers, "by_plugin", None)
    if held is None:
        held = _brokers.by_plugin = {}
    if plugin not in held:
        held[plugin] = plugin_registry().get(plugin)()
    return held[plugin]


def replay_one(
    *,
    decision: Decision,
    own: dict[str, Any],
    grid: GridInputs,
    profile: str | None = None,
    overrides: dict[str, Any] | None = None,
    stored_blob: bytes | None = None,
    full: bool = True,
    baseline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Runs one decision again over `grid` (its own side `own`) and compares it with the stored one. With `full`
    (a single replay) the replayed trace is encoded against the stored frame and compared byte for byte, and the
    replayed decision comes back whole; without (a what-if over many) only what changed is worked out.

    `baseline`: compared not with the stored decision but with the same decision run again under these values (a
    restore's what-if: the decisions of the last hour ran under older values than those in force now, and compared
    with them it reported "0 would change", issue 50)."""
    scenario = parsed_scenario(own=own, grid=grid, profile=profile, overrides=overrides)
    replayed: EngineDecision = _broker(scenario.plugin).decide(scenario)
    if baseline is not None and not full:
        base_scenario = parsed_scenario(own=own, grid=grid, profile=profile, overrides=baseline)
        base: EngineDecision = _broker(base_scenario.plugin).decide(base_scenario)
        before, outcome, chosen, message = _outline_from(base, details=False), base.outcome, base.chosen, base.message
    else:
        if stored_blob is None:
            stored_blob = DecisionTrace.objects.filter(decision_id=decision.pk).values_list("trace", flat=True).first()
        if stored_blob is None:
            raise InputsUnavailable("expired", f"the trace of decision {decision.pk} is no longer stored")
        stored_blob = bytes(stored_blob)
        before = trace_outline(stored_blob, frame=grid.frame)
        delta = before is None
        if delta:  # stored as the change against an earlier pull's: read with its base, compared decoded
            stored_trace = decision_trace_plain(decision=decision)
            before = _outline_of_trace(stored_trace)
        outcome, chosen, message = decision.outcome, decision.chosen or None, decision.message
    difference = decision_difference(
        before=before,
        after=_outline_from(replayed, details=full),
        outcomes=(outcome, replayed.outcome),
        chosen=(chosen, replayed.chosen),
    )
    result = {
        "decision": decision.pk,
        "plugin": decision.plugin,
        "task": decision.task_id,
        "cycle": grid.cycle_id,
        "own_cycle": grid.cycle_id == decision.cycle_id,
        "profile": replayed.profile,
        "overrides": dict(overrides or {}),
        "difference": difference,
        "message_before": message,
    }
    if full:
        blob = trace_encode(replayed, frame=grid.frame)
        if delta:
            same_trace = _comparable(stored_trace) == _comparable(trace_decode(blob, frame=grid.frame))
        else:
            same_trace = stored_blob == blob
        result.update(
            identical=same_trace and not candidates_changed(difference),
            same_trace=same_trace,
            replayed=replayed.to_dict(),
        )
    else:
        result["identical"] = not candidates_changed(difference)
    return result


def decision_replay(
    *,
    decision: Decision,
    cycle_id: int | None = None,
    profile: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The decision run again on its stored inputs (InputsUnavailable says why it cannot be; GdpConfigError names
    a bad override). Five queries: the decision's inputs, the cycle's inputs and parts, its frame, the stored trace."""
    if overrides:
        ConfigView.from_flat(overrides)  # every override known and valid, or GdpConfigError naming it
    own = decision_inputs(decision=decision)
    grid = grid_inputs(cycle_id=cycle_id or decision.cycle_id, decision=decision)
    return replay_one(decision=decision, own=own, grid=grid, profile=profile, overrides=overrides)


def decision_detail(*, decision_id: int) -> dict[str, Any] | None:
    """One stored decision with its trace in words (any plugin), and whether it can be replayed."""
    decision = Decision.objects.select_related("cycle").filter(pk=decision_id).first()
    if decision is None:
        return None
    why_not = decision_replay_why_not(decision=decision)
    return {
        "decision": decision,
        "trace": decision_trace(decision=decision),
        "replayable": not why_not,
        "replay_why": why_not,
        "profiles": PROFILE_NAMES,
    }
