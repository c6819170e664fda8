"""A stored decision's scenario rebuilt from its stored inputs (issue 34; models.inputs): the object `manage.py
broker` reads, and the parsed scenario the cycle decided on. Read-only."""

from __future__ import annotations

import json
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from brokerage.adapters.grid import GRID_PARTS as SHARED_PARTS
from brokerage.adapters.grid import over_base
from brokerage.engine import Frame, Scenario, parse_scenario
from brokerage.engine.core.scenario import PLUGIN_SECTIONS
from brokerage.inputs_codec import day_of, inputs_decode
from brokerage.models import CycleInputs, Decision, DecisionTrace, ScenarioPart
from brokerage.selectors.decisions import FRAMELESS_PLUGINS, cycle_frame, cycle_frames, trace_expiry

# Plugins whose decisions keep their inputs; a decision of another kind (a work queue's throttle verdict) has none.
REPLAYABLE = ("atlas_prod_task", "atlas_prod_job", "atlas_anal_job", "wmcore_pull")


class InputsUnavailable(LookupError):
    """Why a decision's scenario cannot be rebuilt: `code` for programs (expired, not_kept, not_brokerage,
    cycle_unknown, cycle_mismatch), the message for people."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class GridInputs:
    """A cycle's grid side as stored: its head, its parts' objects, and the frame its traces are encoded against."""

    cycle_id: int
    head: dict[str, Any]
    parts: dict[str, dict[str, Any]]
    digests: tuple[str, ...]
    frame: Frame | None

    def raw(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for part in self.parts.values():
            merged.update(part)
        return {**merged, **self.head}


# Parts never change once stored: decoded ones are kept (bounded), so that a what-if over many decisions of a cycle,
# or consecutive cycles sharing parts, decode each once.
_PARTS: OrderedDict[tuple[datetime, str], dict[str, Any]] = OrderedDict()
PARTS_KEPT = 48
# Parsed grid sides, by their parts' digests: the engine's per-snapshot caches stay warm across replays of a cycle.
_BASES: OrderedDict[tuple, Scenario] = OrderedDict()
BASES_KEPT = 8


def _remember(store: OrderedDict, key, value, bound: int):
    store[key] = value
    if len(store) > bound:
        store.popitem(last=False)
    return value


def _expired_message(decision: Decision) -> str:
    return (
        f"the inputs of decision {decision.pk} expired with its trace on {trace_expiry(decision=decision):%Y-%m-%d} "
        f"(DECISION_TRACE_DAYS)"
    )


def _grid_from(cycle_id: int, stored: dict[str, Any], frame: Frame | None, decoded: dict) -> GridInputs:
    day = day_of(stored["started"])
    parts = {}
    for name, digest in stored["parts"].items():
        if (day, digest) not in decoded:
            raise InputsUnavailable("expired", f"part {name} of cycle {cycle_id}'s inputs is no longer stored")
        parts[name] = decoded[(day, digest)]
    return GridInputs(
        cycle_id=cycle_id,
        head=dict(stored["head"]),
        parts=parts,
        digests=tuple(sorted(stored["parts"].values())),
        frame=frame,
    )


def _parts_read(stored: list[dict[str, Any]]) -> dict[tuple[datetime, str], dict[str, Any]]:
    """The parts these cycles name (one query per day for those not decoded already), by (day, digest)."""
    found: dict[tuple[datetime, str], dict[str, Any]] = {}
    wanted: dict[datetime, set[str]] = {}
    for row in stored:
        day = day_of(row["started"])
        for digest in row["parts"].values():
            if (day, digest) in _PARTS:
                found[(day, digest)] = _PARTS[(day, digest)]
            else:
                wanted.setdefault(day, set()).add(digest)
    for day, digests in wanted.items():
        for digest, data in ScenarioPart.objects.filter(day=day, digest__in=digests).values_list("digest", "data"):
            found[(day, digest)] = _remember(
                _PARTS, (day, digest), json.loads(zlib.decompress(bytes(data))), PARTS_KEPT
            )
    return found


def grid_inputs(*, cycle_id: int, decision: Decision | None = None) -> GridInputs:
    """The stored grid side of a cycle (three queries: its list of parts, the parts not decoded yet, its frame)."""
    stored = CycleInputs.objects.filter(cycle_id=cycle_id).values("started", "head", "parts").first()
    if stored is None:
        if decision is not None and decision.cycle_id == cycle_id:
            raise InputsUnavailable("expired", _expired_message(decision))
        raise InputsUnavailable("cycle_unknown", f"cycle {cycle_id} has no stored inputs (unknown, or expired)")
    decoded = _parts_read([stored])
    frame = None if stored["head"].get("plugin") in FRAMELESS_PLUGINS else cycle_frame(cycle_id)
    return _grid_from(cycle_id, stored, frame, decoded)


def grid_inputs_many(*, cycle_ids: list[int]) -> dict[int, GridInputs | InputsUnavailable]:
    """The stored grid sides of a few cycles (a what-if takes them fifty at a time), or why each cannot be had:
    two queries, and one per day of parts not decoded yet."""
    stored = {
        row.pop("cycle_id"): row
        for row in CycleInputs.objects.filter(cycle_id__in=cycle_ids).values("cycle_id", "started", "head", "parts")
    }
    frames = cycle_frames([c for c, row in stored.items() if row["head"].get("plugin") not in FRAMELESS_PLUGINS])
    decoded = _parts_read(list(stored.values()))
    found: dict[int, GridInputs | InputsUnavailable] = {}
    for cycle_id in cycle_ids:
        row = stored.get(cycle_id)
        if row is None:
            found[cycle_id] = InputsUnavailable("expired", f"cycle {cycle_id}'s inputs have expired")
            continue
        try:
            found[cycle_id] = _grid_from(cycle_id, row, frames.get(cycle_id), decoded)
        except InputsUnavailable as why:
            found[cycle_id] = why
    return found


def decision_inputs(*, decision: Decision) -> dict[str, Any]:
    """The decision's own side of its scenario (one query)."""
    if decision.plugin not in REPLAYABLE:
        raise InputsUnavailable(
            "not_brokerage",
            f"decision {decision.pk} is a {decision.plugin} decision: its inputs are not kept for replay",
        )
    found = list(DecisionTrace.objects.filter(decision_id=decision.pk).values_list("inputs", flat=True)[:1])
    if not found:
        raise InputsUnavailable("expired", _expired_message(decision))
    blob = found[0]
    if blob is None:
        raise InputsUnavailable("not_kept", f"decision {decision.pk} was stored before inputs were kept (issue 34)")
    return inputs_decode(blob)


def scenario_object(*, own: dict[str, Any], grid: GridInputs) -> dict[str, Any]:
    """The whole scenario as a file holds it: the grid side under the decision's own side, at the grid's time."""
    return {**grid.raw(), **own, "now": grid.head.get("now", own.get("now"))}


def decision_scenario(*, decision: Decision, cycle_id: int | None = None) -> dict[str, Any]:
    """The scenario object of a stored decision (over another cycle's grid side with `cycle_id`): what `manage.py
    broker` runs offline to the same decision. InputsUnavailable says why it cannot be rebuilt."""
    own = decision_inputs(decision=decision)
    return scenario_object(own=own, grid=grid_inputs(cycle_id=cycle_id or decision.cycle_id, decision=decision))


def gdpconfig_with(gdpconfig: dict[str, Any], *, profile: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """A cycle's resolved gdpconfig under another `profile` and with `overrides`. The stored values are resolved
    values: one equal to what the cycle's profile gives by itself is taken as that profile's and left to the new
    one; the others were set by an admin and stay (docs/decisions.md, issue 34)."""
    from brokerage.gdpconfig import ConfigView

    values = dict(gdpconfig)
    if profile and profile != values.get("PROFILE"):
        before = ConfigView.from_flat({}, profile=values.get("PROFILE") or None)
        for key in list(values):
            if key == "PROFILE":
                continue
            try:
                default = before.get(key)
            except Exception:  # a per-gshare variant or custom key: kept as stored
                continue
            if default == values[key]:
                del values[key]
        values["PROFILE"] = profile
    values.update(overrides)
    return values


def parsed_scenario(
    *, own: dict[str, Any], grid: GridInputs, profile: str | None = None, overrides: dict[str, Any] | None = None
) -> Scenario:
    """The scenario the engine decides on, built as the cycle built it: the grid side parsed once per cycle, profile
    and overrides (kept, so that the engine's per-snapshot caches stay warm over a cycle's decisions) and the
    decision's side over it (adapters.grid.over_base)."""
    plugin = own.get("plugin") or grid.head.get("plugin")
    if plugin in PLUGIN_SECTIONS:  # sections of its own shape (a WMCore pull's elements): parsed whole, per decision
        raw = scenario_object(own=own, grid=grid)
        if profile or overrides:
            raw["gdpconfig"] = gdpconfig_with(raw.get("gdpconfig", {}), profile=profile, overrides=overrides or {})
        return parse_scenario(raw)
    changes = json.dumps(overrides or {}, sort_keys=True, default=str)
    key = (plugin, grid.cycle_id, grid.digests, grid.head.get("now"), profile or "", changes)
    base = _BASES.get(key)
    if base is None:
        raw = grid.raw()
        if profile or overrides:
            raw["gdpconfig"] = gdpconfig_with(raw.get("gdpconfig", {}), profile=profile, overrides=overrides or {})
        base = _remember(_BASES, key, parse_scenario({**raw, "plugin": plugin}), BASES_KEPT)
    else:
        _BASES.move_to_end(key)
    parsed = parse_scenario({**own, "now": grid.head.get("now", own.get("now"))})
    return over_base(parsed, base, SHARED_PARTS)


def decision_replay_why_not(*, decision: Decision) -> str:
    """Empty when the decision can be replayed (its inputs are stored), else why not in a sentence (one query)."""
    try:
        if not DecisionTrace.objects.filter(decision_id=decision.pk, inputs__isnull=False).exists():
            decision_inputs(decision=decision)  # raises with the reason
    except InputsUnavailable as why:
        return f"It cannot be run again: {why}."
    return ""


def inputs_caches_clear() -> None:
    """Forgets every decoded part and parsed grid side (a test whose database starts again)."""
    _PARTS.clear()
    _BASES.clear()
