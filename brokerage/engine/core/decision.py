"""The engine's output: a Decision, its JSON form (SCENARIO.md "Output") and a compact stored trace."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from brokerage.engine.core.reasons import reason_order

OUTCOMES = ("assigned", "pending", "throttled", "matched", "no_match")
TRACE_FORMAT = 1


@dataclass(frozen=True)
class Candidate:
    """A candidate that passed every filter, with its weight and the factors the weight was built from."""

    name: str
    weight: float
    factors: Mapping[str, Any]


@dataclass(frozen=True)
class Skip:
    """Why one candidate was dropped: the reason code, the filter, and the numbers the rule compared."""

    code: str
    filter: str
    detail: Mapping[str, Any]


@dataclass(frozen=True)
class Stage:
    """One filter's effect: candidates before and after it; `note` says when a rule was switched off."""

    filter: str
    before: int
    after: int
    note: str = ""

    @property
    def cut(self) -> int:
        return self.before - self.after


@dataclass(frozen=True)
class Decision:
    plugin: str
    outcome: str
    chosen: str | None
    candidates: tuple[Candidate, ...]
    skipped: Mapping[str, Skip]
    stages: tuple[Stage, ...]
    message: str
    retry_after_minutes: int | None
    now: datetime
    seed: int
    initial: tuple[str, ...]
    candidate_kind: str = "queue"
    extra: Mapping[str, Any] = field(default_factory=dict)
    profile: str = "seed"
    # What the decision carries for its readers in this process, never stored nor answered (to_dict, the trace):
    # the task broker's job check's own job brokerage and the nuclei the real site mapper does not know, which the
    # JEDI-grammar log writes (core/jedi_log.py)
    asides: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """Each initial name's position (kept: a trace encoder and a later delta against this one both need it)."""
        return {name: position for position, name in enumerate(self.initial)}

    def code_counts(self) -> dict[str, int]:
        """How many candidates each reason code removed (without building every skip's detail)."""
        if hasattr(self.skipped, "code_counts"):
            return self.skipped.code_counts()
        counts: dict[str, int] = {}
        for skip in self.skipped.values():
            counts[skip.code] = counts.get(skip.code, 0) + 1
        return counts

    @property
    def primary_reason(self) -> str:
        """The reason code that removed the most candidates, expected ones (a queue of another kind) only when
        nothing else removed any ('' when nothing was skipped; reasons.reason_order)."""
        counts = self.code_counts()
        return reason_order(counts)[0] if counts else ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of SCENARIO.md's output, plus the seed, time and initial count used."""
        return {
            "plugin": self.plugin,
            "outcome": self.outcome,
            "retry_after_minutes": self.retry_after_minutes,
            "chosen": self.chosen,
            "candidates": [{"name": c.name, "weight": c.weight, "factors": dict(c.factors)} for c in self.candidates],
            "skipped": {
                name: {"code": s.code, "filter": s.filter, "detail": dict(s.detail)} for name, s in self.skipped.items()
            },
            "stages": [
                {"filter": s.filter, "before": s.before, "after": s.after, **({"note": s.note} if s.note else {})}
                for s in self.stages
            ],
            "message": self.message,
            "seed": self.seed,
            "profile": self.profile,
            "now": self.now.isoformat().replace("+00:00", "Z"),
            "candidate_kind": self.candidate_kind,
            "n_initial": len(self.initial),
            **({"extra": dict(self.extra)} if self.extra else {}),
        }


def _json_default(value: Any) -> Any:
    """numpy scalars and other number-likes become plain numbers in the trace."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _pack(payload: dict[str, Any]) -> bytes:
    text = json.dumps(payload, separators=(",", ":"), default=_json_default, allow_nan=False)
    return zlib.compress(text.encode(), 6)


def _unpack(blob: bytes) -> dict[str, Any]:
    return json.loads(zlib.decompress(bytes(blob)))


@dataclass(frozen=True)
class Frame:
    """What every decision of one cycle shares: the candidates considered and their own attributes (a
    nucleus's free space, a queue's maxrss), one column per attribute in the order of `names`.

    A cycle stores its frame once; each decision's trace then keeps only what depends on the task. A value
    that differs from the frame is kept in the trace, so a trace is always exact, frame or not.
    """

    names: tuple[str, ...]
    columns: Mapping[str, list[Any]]

    def encode(self) -> bytes:
        return _pack({"v": TRACE_FORMAT, "names": list(self.names), "columns": dict(self.columns)})

    @classmethod
    def decode(cls, blob: bytes) -> Frame:
        payload = _unpack(blob)
        return cls(tuple(payload["names"]), payload["columns"])

    @functools.cached_property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.encode()).hexdigest()[:16]


def _split(
    positions: list[int], values: Mapping[str, list[Any]], frame: Frame | None, frame_index: dict[str, int], names
) -> tuple[dict[str, Any], dict[str, list[Any]], list[str]]:
    """Splits per-member values (one list per key) into values common to all members, keys whose values are
    exactly the frame's for these candidates, and the remaining columns."""
    common: dict[str, Any] = {}
    columns: dict[str, list[Any]] = {}
    from_frame: list[str] = []
    frame_rows = None
    for key in sorted(values):
        column = values[key]
        if frame is not None and key in frame.columns:
            if frame_rows is None:
                frame_rows = [frame_index.get(names[position], -1) if position >= 0 else -1 for position in positions]
            framed = frame.columns[key]
            if all(row >= 0 for row in frame_rows) and [framed[row] for row in frame_rows] == column:
                from_frame.append(key)
                continue
        first = column[0]
        if all(value == first for value in column):
            common[key] = first
        else:
            columns[key] = column
    return common, columns, from_frame


def _member_columns(details: list[Mapping[str, Any]]) -> dict[str, list[Any]]:
    keys = sorted({key for detail in details for key in detail})
    return {key: [detail.get(key) for detail in details] for key in keys}


@dataclass(frozen=True)
class TraceBase:
    """A stored decision that a new trace may be written against (a delta): its primary key and the engine
    Decision it stored. Only a caller that knows the stored decision exactly (it made it) can offer one."""

    pk: int
    decision: Decision

    @property
    def index(self) -> dict[str, int]:
        return self.decision.index


def _skip_groups(decision: Decision, index: dict[str, int], only: frozenset[str] | None = None):
    """(filter, code, sorted positions, {key: values}) per group of skips (`only`: of these names alone). A
    SkipTable hands over the columns the filters produced; any other mapping is regrouped from its entries."""
    columnar = getattr(decision.skipped, "columnar", None)
    if columnar is not None:
        yield from columnar() if only is None else columnar(only=only, index=index)
        return
    groups: dict[tuple[str, str], list[tuple[int, Mapping[str, Any]]]] = {}
    for name, skip in decision.skipped.items():
        if only is not None and name not in only:
            continue
        groups.setdefault((skip.filter, skip.code), []).append((index[name], skip.detail))
    for (filter_name, code), members in groups.items():
        members.sort(key=lambda item: item[0])
        yield filter_name, code, [p for p, _ in members], _member_columns([d for _, d in members])


def _changed_skips(decision: Decision, base: Decision) -> list[str]:
    """The names skipped now whose skip is new or differs from the base decision's."""
    changed_since = getattr(decision.skipped, "changed_since", None)
    if changed_since is not None and type(base.skipped) is type(decision.skipped):
        return changed_since(base.skipped)
    before = base.skipped
    return [name for name, skip in decision.skipped.items() if before.get(name) != skip]


def _initial_runs(names: tuple[str, ...], base: TraceBase) -> list[Any]:
    """The initial list as runs of the base's: [start, length] for consecutive names of the base's list, {"n":
    names} for names the base does not have. Positions are looked up in one pass, the runs found with numpy."""
    if not names:
        return []
    get = base.index.get
    at = np.fromiter((get(name, -1) for name in names), dtype=np.int64, count=len(names))
    new = at < 0
    # a run starts where the position does not follow the one before, or where a name is new or follows a new one
    starts = np.ones(len(at), dtype=bool)
    starts[1:] = (at[1:] != at[:-1] + 1) | new[1:] | new[:-1]
    runs: list[Any] = []
    bounds = [*np.flatnonzero(starts).tolist(), len(at)]
    for begin, end in itertools.pairwise(bounds):
        if new[begin]:
            if runs and type(runs[-1]) is dict:
                runs[-1]["n"].extend(names[begin:end])
            else:
                runs.append({"n": list(names[begin:end])})
        else:
            runs.append([int(at[begin]), end - begin])
    return runs


def _delta_parts(decision: Decision, base: TraceBase, index: dict[str, int]) -> tuple[frozenset[str], list[int]]:
    """The skips a delta stores (new or changed) and the positions of names the base skipped that are neither
    skipped nor candidates now (what a reader must not carry over)."""
    changed = frozenset(_changed_skips(decision, base.decision))
    candidates = {c.name for c in decision.candidates}
    left = base.decision.skipped.keys() - decision.skipped.keys()
    unskipped = [index[name] for name in left if name in index and name not in candidates]
    return changed, sorted(unskipped)


def trace_encode(decision: Decision, *, frame: Frame | None = None, base: TraceBase | None = None) -> bytes:
    """The stored trace: compact, yet enough to answer "why was X not chosen" for every candidate.

    Skipped candidates are grouped by (filter, code); in a group, values equal for all members (the task's side
    of a comparison) are stored once, values found in the cycle's frame (the candidate's own attributes) are
    not stored at all, the rest as one column per key. Names are positions in the initial list, stored as gaps.
    Surviving candidates are stored the same way, in rank order. The JSON is deflated.

    With a `base` (a stored decision of the same kind, e.g. the previous pull of a queue) the trace is a delta:
    the initial list as runs of the base's, and only the skips that are new or changed; a reader decodes the
    base first (`trace_decode(..., base=...)`) and gets exactly what a whole trace would give.
    """
    names = decision.initial
    index = decision.index
    frame_index = {name: position for position, name in enumerate(frame.names)} if frame else {}
    only, unskipped = _delta_parts(decision, base, index) if base is not None else (None, [])
    packed_groups = []
    for filter_name, code, positions, values in _skip_groups(decision, index, only):
        common, columns, from_frame = _split(positions, values, frame, frame_index, names)
        gaps = [positions[0]] + [b - a for a, b in itertools.pairwise(positions)]
        packed_groups.append({"f": filter_name, "c": code, "i": gaps, "k": common, "v": columns, "fk": from_frame})
    ranked = [index.get(c.name, -1) for c in decision.candidates]
    if ranked:
        common, columns, from_frame = _split(
            ranked, _member_columns([c.factors for c in decision.candidates]), frame, frame_index, names
        )
    else:
        common, columns, from_frame = {}, {}, []
    if base is not None:
        initial: Any = {"runs": _initial_runs(names, base)}
    else:
        initial = None if frame is not None and tuple(frame.names) == tuple(names) else list(names)
    payload = {
        "v": TRACE_FORMAT,
        "initial": initial,
        **({"base": base.pk, "unskipped": unskipped} if base is not None else {}),
        "frame": frame.fingerprint if frame is not None else None,
        "kind": decision.candidate_kind,
        # Weights to 6 significant digits: the draw is already made and recorded, the trace is for reading.
        "cand": {
            "i": ranked,
            "w": [stored_weight(c.weight) for c in decision.candidates],
            "k": common,
            "v": columns,
            "fk": from_frame,
        },
        "skip": packed_groups,
        "stages": [[s.filter, s.before, s.after, s.note] for s in decision.stages],
        "extra": dict(decision.extra),
        "profile": decision.profile,
    }
    return _pack(payload)


class FrameMissing(ValueError):
    """The trace was stored against a cycle frame that was not given (or is not the right one)."""


class BaseMissing(ValueError):
    """The trace is a delta against another decision's, which was not given."""


def trace_base_pk(blob: bytes) -> int | None:
    """The decision a stored trace is a delta against (None: a whole trace)."""
    return _unpack(blob).get("base")


def _expand_runs(runs: list[Any], base_initial: list[str]) -> list[str]:
    initial: list[str] = []
    for run in runs:
        if type(run) is dict:
            initial += run["n"]
        else:
            initial += base_initial[run[0] : run[0] + run[1]]
    return initial


def trace_decode(blob: bytes, *, frame: Frame | None = None, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The stored trace back as SCENARIO.md's `candidates`, `skipped` and `stages` (plus initial names). A delta
    needs its base decision's decoded trace as `base`; skips carried over from it are shared, not copied (read
    the result, do not change it)."""
    payload = _unpack(blob)
    if payload.get("v") != TRACE_FORMAT:
        raise ValueError(f"unknown trace format {payload.get('v')!r}")
    if payload.get("frame") and (frame is None or frame.fingerprint != payload["frame"]):
        raise FrameMissing(f"this trace needs the frame {payload['frame']} of its cycle")
    if payload.get("base") is not None and base is None:
        raise BaseMissing(f"this trace is stored as the change against decision {payload['base']}")
    if payload.get("base") is not None:
        initial = _expand_runs(payload["initial"]["runs"], base["initial"])
    else:
        initial = payload["initial"] if payload["initial"] is not None else list(frame.names)
    frame_index = {name: position for position, name in enumerate(frame.names)} if frame else {}

    def values_for(block: dict[str, Any], number: int, name: str) -> dict[str, Any]:
        values = dict(block["k"])
        for key, column in block["v"].items():
            values[key] = column[number]
        for key in block.get("fk", ()):
            values[key] = frame.columns[key][frame_index[name]]
        return dict(sorted(values.items()))

    skipped: dict[str, dict[str, Any]] = {}
    for group in payload["skip"]:
        position = 0
        for number, gap in enumerate(group["i"]):
            position = gap if number == 0 else position + gap
            name = initial[position]
            skipped[name] = {"code": group["c"], "filter": group["f"], "detail": values_for(group, number, name)}
    block = payload["cand"]
    candidates = []
    for number, (position, weight) in enumerate(zip(block["i"], block["w"], strict=True)):
        name = initial[position] if position >= 0 else "?"
        candidates.append({"name": name, "weight": weight, "factors": values_for(block, number, name)})
    if payload.get("base") is not None:
        skipped = _carry_skips(initial, skipped, base["skipped"], payload["unskipped"], candidates)
    return {
        "initial": initial,
        "candidate_kind": payload["kind"],
        "candidates": candidates,
        "skipped": skipped,
        "stages": [
            {"filter": name, "before": before, "after": after, **({"note": note} if note else {})}
            for name, before, after, note in payload["stages"]
        ],
        "extra": payload.get("extra", {}),
        # traces stored before profiles existed ran under the seeds' behaviour
        "profile": payload.get("profile", "seed"),
    }


def trace_outline(blob: bytes, *, frame: Frame | None = None) -> dict[str, Any] | None:
    """What a stored trace says of each candidate without the numbers: kept ones with their weight, skipped ones
    with their code (a replay compares these; decoding every detail costs ten times more at 1,000 queues). None
    for a trace stored as a change against another (trace_decode with its base reads those)."""
    payload = _unpack(blob)
    if payload.get("v") != TRACE_FORMAT:
        raise ValueError(f"unknown trace format {payload.get('v')!r}")
    if payload.get("base") is not None:
        return None
    if payload.get("frame") and (frame is None or frame.fingerprint != payload["frame"]):
        raise FrameMissing(f"this trace needs the frame {payload['frame']} of its cycle")
    initial = payload["initial"] if payload["initial"] is not None else list(frame.names)
    skip_codes: dict[str, str] = {}
    for group in payload["skip"]:
        position = 0
        for number, gap in enumerate(group["i"]):
            position = gap if number == 0 else position + gap
            skip_codes[initial[position]] = group["c"]
    block = payload["cand"]
    weights = {
        (initial[position] if position >= 0 else "?"): weight
        for position, weight in zip(block["i"], block["w"], strict=True)
    }
    return {"initial": initial, "weights": weights, "skip_codes": skip_codes}


def stored_weight(weight: float) -> float:
    """A weight as a trace stores it (6 significant digits)."""
    return float(f"{weight:.6g}")


def _carry_skips(initial, changed, before, unskipped, candidates) -> dict[str, Any]:
    """A delta's skips: the stored ones, and the base's for every other name still there that is neither a
    candidate nor listed as no longer skipped; in the order of the initial list."""
    leave = {initial[position] for position in unskipped}
    leave.update(candidate["name"] for candidate in candidates)
    skipped: dict[str, Any] = {}
    for name in initial:
        found = changed.get(name)
        if found is None and name not in leave:
            found = before.get(name)
        if found is not None:
            skipped[name] = found
    return skipped
