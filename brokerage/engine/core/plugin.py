"""The plugin framework: a plugin is an ordered list of named filters (each with its reason code) and a weight.

Filters see every candidate at once: a numeric rule is one numpy expression over arrays the plugin prepared,
returning which candidates fail and the numbers it compared (arrays, or a scalar when the value is the task's).
The framework applies the filters in order to the candidates still alive, records a Skip for each candidate a
filter removes and a Stage per filter, weighs the survivors, keeps the best N and draws the chosen one in
proportion to weight with the scenario's seed. `now`, the seed and the configuration come from the scenario.
"""

from __future__ import annotations

import gc
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from brokerage.engine.core.decision import Candidate, Decision, Frame, Skip, Stage
from brokerage.engine.core.reasons import reason_title
from brokerage.engine.core.scenario import Scenario

Detail = Mapping[str, Any]


@dataclass(slots=True)
class Rejection:
    """A filter's verdict over all candidates. `code` (optional, per candidate) overrides the filter's code
    where one rule has several outcomes (lowmemory / highmemory); it may be given as a function making them, then
    called only when a candidate fails. `detail` too may be a function, called only when someone reads why a
    candidate was skipped (a rule's numbers may need arrays its verdict does not). Never changed once made; not
    frozen, which would triple the cost of making one (some forty per decision)."""

    fails: np.ndarray
    detail: Detail | Callable[[], Detail] = field(default_factory=dict)
    code: np.ndarray | Callable[[], np.ndarray] | None = None


# The verdict of a rule that does not apply to this decision: nothing fails, and _apply asks no array about it.
NOTHING_FAILS = Rejection(np.zeros(0, dtype=bool))


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector held off while a decision runs. A decision over a large grid allocates
    tens of thousands of small objects (its per-queue rows, the snapshot's arrays on a cold start) and creates no
    reference cycles worth collecting; with the collector on, that allocation triggers collections that each
    traverse the whole heap (the snapshot's records, the web framework), which on a grid of 10,000 queues cost
    more than the decision itself (measured: a cold decision plus the collection after it, 430-640 ms on, 290-480 ms
    paused). Collection resumes when the decision ends; a decision inside another (the task broker's job check,
    the analysis broker's second loop) leaves it to the outer one. The collector is process-wide: another thread
    deciding meanwhile finds it paused and leaves it so."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def never(context: Context) -> Rejection:
    """The variant of a rule that a profile does not have: nothing fails."""
    return NOTHING_FAILS


class Variants:
    """A rule (or a rule's estimate) written once per profile: the gdpconfig parameter `switch` picks the variant
    by its value, `seed` when the value names none (the seed profile, or an unset parameter). Every variant takes
    the same arguments; called with a Context first, the variants object is itself the rule:

        memory_estimate = Variants("MEMORY_RULE", seed=memory_estimate_seed, panda=memory_estimate_panda)
        Filter("input transfer", "io", Variants("IO_CHECK_RULE", seed=input_transfer, panda=input_transfer_panda))

    so a rule names its variants in one place and no check branches on the profile inside."""

    __slots__ = ("by_value", "seed", "switch")

    def __init__(self, switch: str, *, seed: Callable[..., Any], **by_value: Callable[..., Any]):
        self.switch, self.seed, self.by_value = switch, seed, by_value

    def pick(self, config) -> Callable[..., Any]:
        """The variant the configuration asks for."""
        return self.by_value.get(config.get(self.switch), self.seed)

    def __call__(self, context: Context, *args: Any) -> Any:
        # (pick's body, inlined: some rules ask a variant for every decision)
        return self.by_value.get(context.scenario.config.get(self.switch), self.seed)(context, *args)

    def __repr__(self) -> str:
        names = ", ".join(f"{value}={function.__name__}" for value, function in self.by_value.items())
        return f"Variants({self.switch!r}, seed={self.seed.__name__}, {names})"


@dataclass(frozen=True)
class Filter:
    """A named rule with its reason code. `fallback`, when given, is asked when the rule would remove every
    remaining candidate: a non-empty answer switches the rule off for this decision and says why. `reusable`: the
    verdict depends only on the scenario and the prepared arrays (not on which candidates are still alive, which
    rules are switched off, or what other rules wrote), so another loop over the same scenario and candidates
    (the analysis broker's second loop) takes it as it was."""

    name: str
    code: str
    check: Callable[[Context], Rejection]
    fallback: Callable[[Context], str] | None = None
    reusable: bool = False


# Per filter list: (the list, the switches its Variants read), and (the list, resolved) per list and switch values.
# The list itself is kept beside its id, so the id is never that of a list since collected.
_SWITCHES: dict[int, tuple[Sequence[Filter], tuple[str, ...]]] = {}
_RESOLVED: dict[tuple, tuple[Sequence[Filter], tuple[Filter, ...]]] = {}


def filters_resolved(filters: Sequence[Filter], config) -> Sequence[Filter]:
    """The filters as they run under `config`: each check written as Variants replaced by the variant the
    configuration picks. Made once per filter list and switch values, so a decision pays no dispatch per rule
    (a few per cent of a decision on a small grid)."""
    known = _SWITCHES.get(id(filters))
    if known is None or known[0] is not filters:
        known = _SWITCHES[id(filters)] = (
            filters,
            tuple(f.check.switch for f in filters if isinstance(f.check, Variants)),
        )
    switches = known[1]
    if not switches:
        return filters
    key = (id(filters), tuple(config.get(switch) for switch in switches))
    found = _RESOLVED.get(key)
    if found is None or found[0] is not filters:
        resolved = tuple(
            Filter(f.name, f.code, f.check.pick(config), f.fallback, f.reusable) if isinstance(f.check, Variants) else f
            for f in filters
        )
        found = _RESOLVED[key] = (filters, resolved)
    return found[1]


@dataclass(slots=True)
class Context:
    """What filters and weights read: the scenario, its configuration, the candidate names, and the arrays the
    plugin prepared (one value per candidate, in the order of `names`)."""

    scenario: Scenario
    names: list[str]
    arrays: dict[str, Any]
    alive: np.ndarray
    plugin: Any = None
    verdicts: dict[str, Rejection] = field(default_factory=dict)  # the reusable filters' verdicts, by filter

    @property
    def config(self):
        return self.scenario.config

    @property
    def task(self):
        return self.scenario.task

    def __getitem__(self, key: str) -> Any:
        return self.arrays[key]


class _Group:
    """Keys made together by one producer from the arrays as prepared (`origin`), once, into `made`."""

    __slots__ = ("made", "origin", "producer")

    def __init__(self, producer: Callable[[Mapping[str, Any]], dict], origin: Mapping[str, Any]):
        self.producer, self.origin, self.made = producer, origin, None

    def value(self, key: str) -> Any:
        if self.made is None:
            self.made = self.producer(self.origin)
        return self.made[key]


class PreparedArrays(dict):
    """prepare()'s arrays, some of them made only when a rule first reads them: a decision whose candidates are all
    gone after the first filters never pays for the numbers only later rules and the weight read (on a small grid,
    making every array up front was half of a decision's time).

    A group of keys (`lazily`) is made once, by a producer reading the arrays as they were prepared, never a
    decision's own writes, so what a key holds does not depend on which rule read it first; it is shared by every
    copy (`copy`), and a key a decision set itself is never replaced by a group made later."""

    __slots__ = ("_groups",)

    def __init__(self, values: Mapping[str, Any] = ()):
        super().__init__(values)
        self._groups: dict[str, _Group] = {}

    def lazily(self, keys: Sequence[str], producer: Callable[[Mapping[str, Any]], dict]) -> None:
        """Registers a producer for `keys` (each it may make; one it does not make stays missing), reading these
        arrays as they are once prepared."""
        group = _Group(producer, self)
        if not self.keys().isdisjoint(keys):
            for key in keys:
                self.pop(key, None)
        groups = self._groups
        for key in keys:  # (a plain loop: a third of dict.fromkeys and update for a dozen keys)
            groups[key] = group

    def copy(self) -> PreparedArrays:
        """A copy to write into (a decision's own keys, or more prepared groups over a grid's), sharing the arrays
        and the groups registered so far, made or not."""
        copy = PreparedArrays(self)
        copy._groups = dict(self._groups)
        return copy

    def __missing__(self, key: str) -> Any:
        group = self._groups.get(key)
        if group is None:
            raise KeyError(key)
        value = self[key] = group.value(key)
        return value


class DeferredArrays(PreparedArrays):
    """prepare()'s arrays made when a rule first reads one: a decision whose candidates all go at rules that read
    the task alone (its input incomplete everywhere, its nucleus unknown) never reads the grid, as the real broker
    returns before its loop over the sites. Keys a rule set before are kept over the prepared ones."""

    __slots__ = ("_prepare",)

    def __init__(self, prepare: Callable[[], Mapping[str, Any]]):
        super().__init__()
        self._prepare: Callable[[], Mapping[str, Any]] | None = prepare

    def _load(self) -> None:
        prepare, self._prepare = self._prepare, None
        prepared = prepare()
        groups = getattr(prepared, "_groups", {})
        own = dict(self)  # a rule's own keys, set before anything was read (rare)
        dict.update(self, prepared)
        if own:
            dict.update(self, own)
            groups = {key: group for key, group in groups.items() if key not in own}
        self._groups.update(groups)

    def __missing__(self, key: str) -> Any:
        if self._prepare is not None:
            self._load()
            if dict.__contains__(self, key):
                return dict.__getitem__(self, key)
        return super().__missing__(key)

    def __contains__(self, key: object) -> bool:
        if self._prepare is not None and not dict.__contains__(self, key):
            self._load()
        return dict.__contains__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        if self._prepare is not None and not dict.__contains__(self, key):
            self._load()
        return dict.get(self, key, default)

    def copy(self) -> PreparedArrays:
        if self._prepare is not None:
            self._load()
        return super().copy()


class _Overlay(dict):
    """Writes land here, reads fall through to `base`: a producer written as if it filled the arrays in place."""

    __slots__ = ("_base",)

    def __init__(self, base: Mapping[str, Any]):
        super().__init__()
        self._base = base

    def __missing__(self, key: str) -> Any:
        return self._base[key]


def overlay_producer(fill: Callable[[dict], None]) -> Callable[[PreparedArrays], dict]:
    """A producer from a function that writes its keys into the arrays it reads."""

    def produce(arrays: PreparedArrays) -> dict:
        target = _Overlay(arrays)
        fill(target)
        return dict(target)

    return produce


def among(values: np.ndarray | Sequence[Any], options: Sequence[Any] | frozenset | set) -> np.ndarray:
    """Which values are among the options (np.isin for a column of strings, by set lookup: np.isin sorts both
    sides, a tenth of a small decision's time)."""
    wanted = options if isinstance(options, frozenset | set) else frozenset(options)
    items = values.tolist() if isinstance(values, np.ndarray) else values
    return np.fromiter((value in wanted for value in items), dtype=bool, count=len(items))


def _plain(value: Any) -> Any:
    """A JSON-friendly scalar: numpy types unwrapped, floats rounded to keep traces short."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if value != value:  # NaN: unknown
            return None
        value = round(value, 4)
        return int(value) if value.is_integer() else value
    return value


def _column(value: Any, positions: np.ndarray | int) -> list[Any]:
    """One detail or factor key's values for the given positions (a count: the first that many, every value of a
    column that long), as plain JSON-friendly Python values: arrays indexed, scalars repeated, floats rounded to
    4 decimals, whole numbers as int, NaN (unknown) as None."""
    everyone = isinstance(positions, int)
    if not isinstance(value, np.ndarray):
        return [_plain(value)] * (positions if everyone else len(positions))
    selected = value[:positions] if everyone else value[positions]
    if selected.dtype.kind != "f":
        return selected.tolist()
    missing = np.isnan(selected).tolist()
    rounded = np.round(selected, 4).tolist()
    return [
        None if gap else (int(number) if number.is_integer() else number)
        for number, gap in zip(rounded, missing, strict=True)
    ]


def _rows(values: Detail, positions: np.ndarray | int) -> list[dict[str, Any]]:
    """Per-candidate dictionaries for the given positions (or the first that many), built column by column (one
    numpy conversion per key instead of one per value)."""
    columns = {key: _column(value, positions) for key, value in values.items()}
    if not columns:
        return [{} for _ in range(positions if isinstance(positions, int) else len(positions))]
    keys = list(columns)
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns.values(), strict=True)]


class SkipTable(Mapping[str, Skip]):
    """The skipped candidates of one decision, kept as the filters produced them (per filter: positions, codes and
    detail columns) and turned into name → Skip only when someone reads them. Deciding never pays for building
    a detail dictionary per skipped candidate; counting codes needs none either."""

    def __init__(self, names: list[str]):
        self._names = names
        self._groups: list[tuple[str, np.ndarray, list[str], Detail]] = []
        self._single: dict[str, Skip] = {}
        self._built: dict[str, Skip] | None = None
        self._size = 0

    def add_group(
        self, filter_name: str, positions: np.ndarray, codes: list[str], detail: Detail | Callable[[], Detail]
    ) -> None:
        # the detail columns are kept whole (never changed once a rule returned them) and read at the positions
        # only when someone asks; a rule may give them as a function, called then
        self._groups.append((filter_name, positions, codes, detail))
        self._size += len(positions)
        self._built = None

    def _detailed_groups(self) -> list[tuple[str, np.ndarray, list[str], Detail]]:
        """The groups with their detail columns made (once)."""
        for number, (filter_name, positions, codes, detail) in enumerate(self._groups):
            if callable(detail):
                self._groups[number] = (filter_name, positions, codes, detail())
        return self._groups

    def add(self, name: str, skip: Skip) -> None:
        self._single[name] = skip
        self._size += 1
        self._built = None

    def code_counts(self) -> dict[str, int]:
        # Counter counts an iterable in C: a decision that skips ten thousand queues pays microseconds, not ms
        counts: Counter[str] = Counter()
        for _, _, codes, _ in self._groups:
            counts.update(codes.tolist() if isinstance(codes, np.ndarray) else codes)
        counts.update(skip.code for skip in self._single.values())
        return dict(counts)

    def skip_codes(self) -> dict[str, str]:
        """Each skipped candidate's code, without building its details (a replay compares these)."""
        codes_by_name: dict[str, str] = {}
        for _, positions, codes, _ in self._groups:
            for position, code in zip(positions.tolist(), codes, strict=True):
                codes_by_name[self._names[position]] = str(code)
        codes_by_name.update((name, skip.code) for name, skip in self._single.items())
        return codes_by_name

    def columnar(self):
        """(filter, code, sorted positions, {key: values}) per group, straight from the filters' columns: what
        the trace encoder stores, without a dictionary per skipped candidate."""
        for filter_name, positions, codes, columns in self._detailed_groups():
            values = {key: _column(value, positions) for key, value in columns.items()}
            by_code: dict[str, list[int]] = {}
            for member, code in enumerate(codes):
                by_code.setdefault(str(code), []).append(member)
            for code, members in by_code.items():
                chosen = members if len(members) < len(codes) else None
                yield (
                    filter_name,
                    code,
                    positions.tolist() if chosen is None else positions[chosen].tolist(),
                    values if chosen is None else {k: [v[m] for m in chosen] for k, v in values.items()},
                )
        singles: dict[tuple[str, str], list[tuple[int, Detail]]] = {}
        position_of = {name: position for position, name in enumerate(self._names)}
        for name, skip in self._single.items():
            singles.setdefault((skip.filter, skip.code), []).append((position_of[name], skip.detail))
        for (filter_name, code), members in singles.items():
            members.sort(key=lambda item: item[0])
            keys = sorted({key for _, detail in members for key in detail})
            yield filter_name, code, [p for p, _ in members], {k: [d.get(k) for _, d in members] for k in keys}

    def _table(self) -> dict[str, Skip]:
        if self._built is None:
            built: dict[str, Skip] = {}
            for filter_name, positions, codes, columns in self._detailed_groups():
                rows = _rows(columns, positions)
                for position, code, detail in zip(positions.tolist(), codes, rows, strict=True):
                    built[self._names[position]] = Skip(str(code), filter_name, detail)
            built.update(self._single)
            self._built = built
        return self._built

    def __getitem__(self, name: str) -> Skip:
        return self._table()[name]

    def __iter__(self):
        return iter(self._table())

    def __len__(self) -> int:
        return self._size

    def __contains__(self, name: object) -> bool:
        return name in self._table()


class Plugin:
    """Base of every broker. Subclasses set `name`, `candidate_kind`, `retry_after_minutes`, `filters`, and
    implement `initial_candidates`, `prepare` and `weigh`."""

    name: ClassVar[str] = ""
    candidate_kind: ClassVar[str] = "queue"
    retry_after_minutes: ClassVar[int | None] = None
    max_candidates: ClassVar[int | None] = None
    # the stage that late_skips' candidates leave by
    late_stage: ClassVar[str] = "problematic"
    filters: ClassVar[Sequence[Filter]] = ()
    # Detail and factor keys that are the candidate's own attributes → the prepared array holding them.
    frame_keys: ClassVar[Mapping[str, str]] = {}

    def __init__(self, *, disabled_filters: frozenset[str] | set[str] = frozenset()):
        known = {f.name for f in self.filters}
        unknown = set(disabled_filters) - known
        if unknown:
            raise ValueError(f"{self.name}: no filter named {sorted(unknown)} (filters: {sorted(known)})")
        self.disabled_filters = frozenset(disabled_filters)

    # --- what a plugin provides ---
    def initial_candidates(self, scenario: Scenario) -> list[str]:
        raise NotImplementedError

    def prepare(self, scenario: Scenario, names: list[str]) -> dict[str, Any]:
        return {}

    def weigh(self, context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """Weights (≥ 0) of the surviving candidates (indices into names) and the factors per candidate."""
        raise NotImplementedError

    def filters_for(self, scenario: Scenario) -> Sequence[Filter]:
        """The filters in the order they run for this scenario (a profile may move some)."""
        return self.filters

    def rank_key(self, context: Context, survivors: np.ndarray, weights: np.ndarray) -> Callable[[int], Any]:
        """Sort key over survivor indices: best first, equal weights in name order (names are sorted)."""
        names = context.names
        return lambda i: (-weights[i], names[survivors[i]])

    def message(self, decision_parts: dict[str, Any]) -> str:
        return default_message(decision_parts)

    def _snapshot_cache(self, scenario: Scenario) -> dict:
        """Results that depend only on the snapshot and its configuration, kept while the same snapshot objects and
        configuration are in use (a cycle brokers many job sets over one snapshot; a new snapshot drops them). The
        configuration counts: a replay decides over the same stored snapshot objects under other values."""
        held = getattr(self, "_snapshot_held", None)
        if held is not None and held[2] is scenario:  # the scenario asked about last: the same snapshot
            return held[1]
        identity = (
            scenario.config,
            scenario.queues,
            scenario.queue_stats,
            scenario.ddm_endpoints,
            scenario.network,
            scenario.sites,
            scenario.sw_tags,
            scenario.gpu_summary,
        )
        if held is None or any(arrays is not b for arrays, b in zip(held[0], identity, strict=True)):
            held = (identity, {}, scenario)
        else:
            held = (held[0], held[1], scenario)
        self._snapshot_held = held
        return held[1]

    def _prepared(self, scenario: Scenario, names: list[str]) -> dict[str, Any]:
        """prepare()'s arrays, kept for the scenario last decided: a broker that decides the same scenario again
        with other filters (the analysis broker's second loop) reuses them. Filters read the arrays and add keys
        of their own, so each decision reads them through its own dict (DeferredArrays), never writing here."""
        cache = self._snapshot_cache(scenario)
        held = cache.get("prepared")
        if held is None or held[0] is not scenario or held[1] != names:
            held = cache["prepared"] = (scenario, list(names), self.prepare(scenario, names))
        return held[2]

    def _verdicts(self, scenario: Scenario, names: list[str]) -> dict[str, Rejection]:
        """The reusable filters' verdicts over the scenario last decided, shared by every loop over it and the same
        candidates (Filter.reusable)."""
        cache = self._snapshot_cache(scenario)
        held = cache.get("verdicts")
        if held is None or held[0] is not scenario or held[1] != names:
            held = cache["verdicts"] = (scenario, list(names), {})
        return held[2]

    def candidate_cap(self, context: Context) -> int | None:
        """How many of the best candidates a decision keeps (max_candidates; a plugin may decide per decision)."""
        return self.max_candidates

    def late_skips(self, context: Context) -> list[tuple[str, np.ndarray, str, Detail]]:
        """Candidates weighed with the others and dropped after (filter, mask, code, detail); none by default."""
        return []

    def decision_asides(self, context: Context) -> Mapping[str, Any]:
        """What a decision carries beside its trace for its readers in this process (Decision.asides, never
        stored); none by default (the task broker's job check keeps its own job brokerage there for the
        JEDI-grammar log)."""
        return {}

    def frame(self, scenario: Scenario) -> Frame:
        """The candidates and their own attributes, shared by every decision over the same snapshot."""
        names = list(self.initial_candidates(scenario))
        arrays = self.prepare(scenario, names)
        if isinstance(arrays, PreparedArrays):
            arrays = arrays.copy()
        # The same conversion as the skips' details, so that equal values compare equal.
        rows = _rows({key: np.asarray(arrays[array]) for key, array in self.frame_keys.items()}, len(names))
        return Frame(tuple(names), {key: [row[key] for row in rows] for key in self.frame_keys})

    # --- the common flow ---
    def decide(self, scenario: Scenario) -> Decision:
        with collector_paused():
            return self._decide(scenario)

    def _decide(self, scenario: Scenario) -> Decision:
        names = list(self.initial_candidates(scenario))
        arrays = DeferredArrays(lambda: self._prepared(scenario, names))
        context = Context(
            scenario, names, arrays, ~np.zeros(len(names), dtype=bool), self, self._verdicts(scenario, names)
        )
        skipped = SkipTable(names)
        stages: list[Stage] = []
        left = len(names)
        for rule in filters_resolved(self.filters_for(scenario), scenario.config):
            if rule.name in self.disabled_filters:
                continue
            stage = self._apply(rule, context, skipped, left)
            left = stage.after
            stages.append(stage)
        survivors = context.alive.nonzero()[0]  # np.flatnonzero's answer, without its Python layers
        candidates: list[Candidate] = []
        if len(survivors):
            weights, factors = self.weigh(context, survivors)
            weights = np.where(np.isfinite(weights) & (weights > 0), weights, 0.0)
            order = sorted(range(len(survivors)), key=self.rank_key(context, survivors, weights))
            factor_rows = _rows(factors, len(survivors))
            candidates = [Candidate(names[survivors[i]], float(weights[i]), factor_rows[i]) for i in order]
            late = [
                (name, np.asarray(mask, dtype=bool) & context.alive, code, detail)
                for name, mask, code, detail in self.late_skips(context)
            ]
            if any(mask.any() for _, mask, _, _ in late):
                # weighed with the others, then dropped (AtlasAnalJobBroker's problematic queues, late_skips)
                gone = np.zeros(len(names), dtype=bool)
                for filter_name, mask, code, detail in late:
                    positions = (mask & ~gone).nonzero()[0]
                    if len(positions):
                        skipped.add_group(filter_name, positions, [code] * len(positions), detail)
                    gone |= mask
                before = len(candidates)
                candidates = [c for c in candidates if not gone[names.index(c.name)]]
                stages.append(Stage(self.late_stage, before, len(candidates)))
            cap = self.candidate_cap(context)
            if cap is not None and len(candidates) > cap:
                for dropped in candidates[cap:]:
                    skipped.add(
                        dropped.name,
                        Skip(
                            "low_weight",
                            "best candidates",
                            {"weight": _plain(dropped.weight), "kept": cap},
                        ),
                    )
                stages.append(Stage("best candidates", len(candidates), cap))
                candidates = candidates[:cap]
        chosen = weighted_choice(candidates, scenario.seed)
        outcome = "assigned" if chosen is not None else "pending"
        parts = {
            "plugin": self,
            "scenario": scenario,
            "outcome": outcome,
            "chosen": chosen,
            "candidates": candidates,
            "skipped": skipped,
            "initial": names,
            "stages": stages,
        }
        return Decision(
            plugin=self.name,
            outcome=outcome,
            chosen=chosen,
            candidates=tuple(candidates),
            skipped=skipped,
            stages=tuple(stages),
            message=self.message(parts),
            retry_after_minutes=None if chosen is not None else self.retry_after_minutes,
            now=scenario.now,
            seed=scenario.seed,
            initial=tuple(names),
            candidate_kind=self.candidate_kind,
            profile=scenario.profile,
            asides=self.decision_asides(context),
        )

    def _apply(self, rule: Filter, context: Context, skipped: SkipTable, before: int | None = None) -> Stage:
        """One filter over the candidates still alive (`before` of them, counted when not given)."""
        alive = context.alive
        if before is None:
            before = int(np.count_nonzero(alive))
        if before == 0:
            return _stage(rule.name, 0, 0)
        if rule.reusable:
            verdict = context.verdicts.get(rule.name)
            if verdict is None:
                verdict = context.verdicts[rule.name] = rule.check(context)
        else:
            verdict = rule.check(context)
        if verdict is NOTHING_FAILS:
            return _stage(rule.name, before, before)
        fails = verdict.fails
        removed = alive & (fails if isinstance(fails, np.ndarray) and fails.dtype == bool else np.asarray(fails, bool))
        gone = int(np.count_nonzero(removed))
        if gone == 0:
            return _stage(rule.name, before, before)
        if rule.fallback is not None and gone == before:
            note = rule.fallback(context)
            if note:
                return Stage(rule.name, before, before, note)
        positions = removed.nonzero()[0]
        code = verdict.code
        codes = [rule.code] * gone if code is None else (code() if callable(code) else code)[positions].tolist()
        skipped.add_group(rule.name, positions, codes, verdict.detail)
        alive[positions] = False
        return _stage(rule.name, before, before - gone)


_STAGES: dict[tuple[str, int, int], Stage] = {}


def _stage(name: str, before: int, after: int) -> Stage:
    """A Stage without a note, shared: most filters keep or leave the same few counts in every decision."""
    key = (name, before, after)
    stage = _STAGES.get(key)
    if stage is None:
        if len(_STAGES) > 10_000:
            _STAGES.clear()
        stage = _STAGES[key] = Stage(name, before, after)
    return stage


def weighted_choice(candidates: Sequence[Candidate], seed: int) -> str | None:
    """One candidate drawn in proportion to weight with a generator seeded by `seed` (REFERENCE.md: the seed is
    recorded, so the draw can be replayed). All weights zero: every candidate is equally likely."""
    if not candidates:
        return None
    # A string seed goes through SHA-512 in random.seed, so neighbouring seeds (one per decision) start far apart.
    rng = random.Random(f"brokerage-draw:{seed}")
    total = sum(c.weight for c in candidates)
    if total <= 0:
        return candidates[rng.randrange(len(candidates))].name
    point = rng.random() * total
    running = 0.0
    for candidate in candidates:
        running += candidate.weight
        if point < running:
            return candidate.name
    return candidates[-1].name


def default_message(parts: dict[str, Any]) -> str:
    """One line a shifter understands: what was chosen among how many, or what removed everything."""
    plugin: Plugin = parts["plugin"]
    kind = plugin.candidate_kind
    initial, candidates, skipped = parts["initial"], parts["candidates"], parts["skipped"]
    if parts["chosen"] is not None:
        return (
            f"{kind} {parts['chosen']} chosen from {len(candidates)} candidate{'s' if len(candidates) != 1 else ''} "
            f"(of {len(initial)} considered)"
        )
    if not initial:
        return f"pending: no {kind} to consider"
    counts = skipped.code_counts()
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]
    summary = ", ".join(f"{n} {reason_title(code)}" for code, n in top)
    retry = f"; retry in {plugin.retry_after_minutes} min" if plugin.retry_after_minutes else ""
    return f"pending: all {len(initial)} {kind} candidates skipped ({summary}){retry}"
