"""What-if over the past (issue 34): the decisions of a cycle, or of the cycles of a time window, run again on
their stored inputs with other gdpconfig values or another profile; which would change and how. Read-only."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from brokerage.engine import UnknownPlugin
from brokerage.gdpconfig import ConfigView
from brokerage.inputs_codec import inputs_decode
from brokerage.models import BrokerageCycle, Decision, DecisionTrace
from brokerage.plugins import plugin_registry
from brokerage.selectors.inputs import REPLAYABLE, InputsUnavailable, grid_inputs_many
from brokerage.selectors.replay import candidates_changed, replay_one

# At most this many decisions per what-if unless the caller says otherwise: a what-if answers within seconds.
DEFAULT_LIMIT = 2000
MAX_LIMIT = 20000
# cycles whose inputs and traces are read together (bounds the decoded parts held at once)
CYCLES_AT_ONCE = 50


def cycle_id_list(*, since: datetime, until: datetime, plugin: str | None = None) -> list[int]:
    """The cycles of a time window (of `plugin`, else of every replayable one), newest first."""
    cycles = BrokerageCycle.objects.filter(started__gte=since, started__lt=until, plugin__in=REPLAYABLE)
    if plugin:
        cycles = cycles.filter(plugin=plugin)
    return list(cycles.order_by("-started", "-pk").values_list("pk", flat=True))


def cycles_what_if(
    *,
    cycle_ids: list[int],
    profile: str | None = None,
    overrides: dict[str, Any] | None = None,
    limit: int = DEFAULT_LIMIT,
    seconds: float | None = None,
    baseline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every stored decision of `cycle_ids` (up to `limit`, the cycles in the order given) run again with
    `overrides` and `profile`: how many change outcome, choice or candidates, each changed one with what changed,
    the assignments per queue or nucleus before and after, and every decision that could not be replayed with why.
    Per cycle three queries (its inputs, its parts, its decisions with their traces and inputs).

    `seconds` bounds the time it takes (issue 47: one viewer's what-if over a day cost 15 s of CPU, eight of them
    stalled the site): past it no further decision is replayed, and `stopped_early` says how many were looked at
    of how many. None: no bound (the command line, the benchmarks).

    `baseline`: each decision is compared with itself run again under these values instead of as stored (a
    restore's what-if compares the revision with the values in force now)."""
    overrides = dict(overrides or {})
    ConfigView.from_flat(overrides)  # every override known and valid, or GdpConfigError naming it
    if baseline is not None:
        ConfigView.from_flat(baseline)
    limit = max(1, min(int(limit), MAX_LIMIT))
    by_cycle, selected, truncated = _decisions_by_cycle(cycle_ids=cycle_ids, limit=limit)
    tally = WhatIfTally()
    deadline = None if seconds is None else time.monotonic() + seconds
    ordered = list(by_cycle)
    for first in range(0, len(ordered), CYCLES_AT_ONCE):
        chunk = ordered[first : first + CYCLES_AT_ONCE]
        grids = grid_inputs_many(cycle_ids=chunk)
        ids = [d.pk for cycle_id in chunk for d in by_cycle[cycle_id]]
        stored = {
            pk: (trace, own)
            for pk, trace, own in DecisionTrace.objects.filter(decision_id__in=ids).values_list(
                "decision_id", "trace", "inputs"
            )
        }
        for cycle_id in chunk:
            for decision in by_cycle[cycle_id]:
                if deadline is not None and time.monotonic() > deadline:
                    tally.stopped_early = True
                    break
                tally.looked_at += 1
                trace, own = stored.get(decision.pk, (None, None))
                why = _why_not_replayable(grids[cycle_id], trace, own)
                if why:
                    tally.not_replayed.append({"decision": decision.pk, "task": decision.task_id, "why": why})
                    continue
                result = replay_one(
                    decision=decision,
                    own=inputs_decode(own),
                    grid=grids[cycle_id],
                    profile=profile,
                    overrides=overrides,
                    stored_blob=trace,
                    full=False,
                    baseline=baseline,
                )
                tally.add(decision, cycle_id, result["difference"])
            if tally.stopped_early:
                break
        if tally.stopped_early:
            break
    return {
        "cycles": list(cycle_ids),
        "profile": profile or "",
        "overrides": overrides,
        "baseline": baseline,
        "limit": limit,
        "truncated": truncated,
        "seconds": seconds,
        "selected": selected,
        **tally.summary(),
    }


def _decisions_by_cycle(*, cycle_ids: list[int], limit: int) -> tuple[dict[int, list[Decision]], int, bool]:
    """Up to `limit` replayable decisions of the cycles, by cycle in the order given: (by cycle, how many, whether
    there were more). One query."""
    rank = {cycle_id: position for position, cycle_id in enumerate(cycle_ids)}
    decisions = sorted(
        Decision.objects.filter(cycle_id__in=cycle_ids, plugin__in=REPLAYABLE).order_by("-cycle_id", "pk")[: limit + 1],
        key=lambda d: (rank[d.cycle_id], d.pk),
    )
    truncated = len(decisions) > limit
    by_cycle: dict[int, list[Decision]] = {}
    for decision in decisions[:limit]:
        by_cycle.setdefault(decision.cycle_id, []).append(decision)
    return by_cycle, min(len(decisions), limit), truncated


def _why_not_replayable(grid, trace, own) -> str:
    """Why a decision cannot be run again, or "" when it can."""
    if isinstance(grid, InputsUnavailable):
        return str(grid)
    if trace is None:
        return "its trace and inputs have expired"
    if own is None:
        return "stored before inputs were kept"
    return ""


def _candidate_kind(plugin: str) -> str:
    """What a plugin's decisions choose ("nucleus", "queue", "task queue", "element"); the plugin's name when it is
    not installed (a decision of a plugin since removed)."""
    try:
        return plugin_registry().get(plugin).candidate_kind
    except UnknownPlugin:
        return plugin


@dataclass
class WhatIfTally:
    """What a what-if found so far: the decisions changed (with what changed), the assignments per target before
    and after, the decisions that could not be replayed, and how far it got."""

    changed: list[dict[str, Any]] = field(default_factory=list)
    not_replayed: list[dict[str, Any]] = field(default_factory=list)
    before: Counter = field(default_factory=Counter)
    after: Counter = field(default_factory=Counter)
    counts: Counter = field(default_factory=Counter)
    looked_at: int = 0
    stopped_early: bool = False

    def add(self, decision: Decision, cycle_id: int, difference: dict[str, Any]) -> None:
        # by what was chosen (a nucleus, a queue, a task queue, an element): one axis held nuclei, queues, 32-character
        # element ids and "(none)" together (issue 50); a decision that chose nothing counts as "" of its kind
        kind = _candidate_kind(decision.plugin)
        self.before[(kind, difference["chosen_before"] or "")] += 1
        self.after[(kind, difference["chosen_now"] or "")] += 1
        if not candidates_changed(difference):
            self.counts["unchanged"] += 1
            return
        self.counts["outcome"] += difference["outcome_changed"]
        self.counts["choice"] += difference["choice_changed"]
        self.counts["candidates"] += 1
        self.changed.append(
            {
                "decision": decision.pk,
                "task": decision.task_id,
                "plugin": decision.plugin,
                "cycle": cycle_id,
                "created": decision.created,
                **difference,
            }
        )

    def summary(self) -> dict[str, Any]:
        before, after = self.before, self.after
        return {
            "looked_at": self.looked_at,
            "stopped_early": self.stopped_early,
            "replayed": self.looked_at - len(self.not_replayed),
            "unchanged": self.counts["unchanged"],
            "changed_outcome": self.counts["outcome"],
            "changed_choice": self.counts["choice"],
            "changed_candidates": self.counts["candidates"],
            "changed": self.changed,
            "not_replayed": self.not_replayed,
            "assignments": [
                {"kind": key[0], "target": key[1] or None, "before": before[key], "after": after[key]}
                for key in sorted(set(before) | set(after), key=lambda k: (k[0], -max(before[k], after[k]), k[1]))
            ],
        }
