"""Replay: a stored decision run again on its stored inputs (issue 34), as it was or with another profile, other
gdpconfig values or another cycle's grid side, and what changed. Read-only: nothing is stored."""

from __future__ import annotations

import json
from typing import Any

from brokerage.engine import Decision as EngineDecision
from brokerage.engine import trace_decode, trace_encode
from brokerage.engine.decision import trace_base_pk
from brokerage.gdpconfig import ConfigView
from brokerage.models import Decision, DecisionTrace
from brokerage.plugins import plugin_registry
from brokerage.selectors.decisions import decision_trace_plain
from brokerage.selectors.inputs import GridInputs, InputsUnavailable, decision_inputs, grid_inputs, parsed_scenario


def _weights(trace: dict[str, Any]) -> dict[str, float]:
    return {candidate["name"]: candidate["weight"] for candidate in trace["candidates"]}


def decision_difference(*, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What changed between two decoded traces of the same decision (with their outcome and chosen): candidates
    gained and lost, each with the reason it was skipped before or is now, and weight shifts of those kept by both."""
    weights_before, weights_after = _weights(before), _weights(after)
    gained = sorted(set(weights_after) - set(weights_before))
    lost = sorted(set(weights_before) - set(weights_after))
    return {
        "outcome_before": before["outcome"],
        "outcome_now": after["outcome"],
        "chosen_before": before["chosen"],
        "chosen_now": after["chosen"],
        "outcome_changed": before["outcome"] != after["outcome"],
        "choice_changed": before["chosen"] != after["chosen"],
        "gained": [
            {"name": name, "was": before["skipped"].get(name, {}).get("code", "not considered")} for name in gained
        ],
        "lost": [
            {
                "name": name,
                "code": after["skipped"].get(name, {}).get("code", "not considered"),
                "detail": after["skipped"].get(name, {}).get("detail", {}),
            }
            for name in lost
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


def replay_one(
    *,
    decision: Decision,
    own: dict[str, Any],
    grid: GridInputs,
    profile: str | None = None,
    overrides: dict[str, Any] | None = None,
    stored_blob: bytes | None = None,
) -> dict[str, Any]:
    """Runs one decision again over `grid` (its own side `own`) and compares it with the stored one: the replayed
    trace is encoded against the stored frame, so with nothing changed it is the stored trace byte for byte."""
    scenario = parsed_scenario(own=own, grid=grid, profile=profile, overrides=overrides)
    replayed: EngineDecision = plugin_registry().get(scenario.plugin)().decide(scenario)
    blob = trace_encode(replayed, frame=grid.frame)
    if stored_blob is None:
        stored_blob = DecisionTrace.objects.filter(decision_id=decision.pk).values_list("trace", flat=True).first()
    if stored_blob is None:
        raise InputsUnavailable("expired", f"the trace of decision {decision.pk} is no longer stored")
    delta = trace_base_pk(bytes(stored_blob)) is not None
    if delta:  # stored as the change against an earlier pull's: compared decoded, as a reader sees it
        stored_trace = decision_trace_plain(decision=decision)
    else:
        stored_trace = trace_decode(bytes(stored_blob), frame=grid.frame)
    before = {**stored_trace, "outcome": decision.outcome, "chosen": decision.chosen or None}
    after = {**trace_decode(blob, frame=grid.frame), "outcome": replayed.outcome, "chosen": replayed.chosen}
    difference = decision_difference(before=before, after=after)
    same_trace = _comparable(stored_trace) == _comparable(after) if delta else bytes(stored_blob) == blob
    return {
        "decision": decision.pk,
        "plugin": decision.plugin,
        "task": decision.task_id,
        "cycle": grid.cycle_id,
        "own_cycle": grid.cycle_id == decision.cycle_id,
        "profile": replayed.profile,
        "overrides": dict(overrides or {}),
        "identical": same_trace and not candidates_changed(difference),
        "same_trace": same_trace,
        "difference": difference,
        "replayed": replayed.to_dict(),
        "message_before": decision.message,
    }


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
