"""What-if over the past (issue 34): the decisions of a cycle, or of the cycles of a time window, run again on
their stored inputs with other gdpconfig values or another profile; which would change and how. Read-only."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime
from typing import Any

from brokerage.gdpconfig import ConfigView
from brokerage.inputs_codec import inputs_decode
from brokerage.models import BrokerageCycle, Decision, DecisionTrace
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
) -> dict[str, Any]:
    """Every stored decision of `cycle_ids` (up to `limit`, the cycles in the order given) run again with
    `overrides` and `profile`: how many change outcome, choice or candidates, each changed one with what changed,
    the assignments per queue or nucleus before and after, and every decision that could not be replayed with why.
    Per cycle three queries (its inputs, its parts, its decisions with their traces and inputs).

    `seconds` bounds the time it takes (issue 47: one viewer's what-if over a day cost 15 s of CPU, eight of them
    stalled the site): past it no further decision is replayed, and `stopped_early` says how many were looked at
    of how many. None: no bound (the command line, the benchmarks)."""
    overrides = dict(overrides or {})
    ConfigView.from_flat(overrides)  # every override known and valid, or GdpConfigError naming it
    limit = max(1, min(int(limit), MAX_LIMIT))
    changed: list[dict[str, Any]] = []
    not_replayed: list[dict[str, Any]] = []
    before, after = Counter(), Counter()
    counts = Counter()
    rank = {cycle_id: position for position, cycle_id in enumerate(cycle_ids)}
    decisions = sorted(
        Decision.objects.filter(cycle_id__in=cycle_ids, plugin__in=REPLAYABLE).order_by("-cycle_id", "pk")[: limit + 1],
        key=lambda d: (rank[d.cycle_id], d.pk),
    )
    truncated = len(decisions) > limit
    decisions = decisions[:limit]
    by_cycle: dict[int, list[Decision]] = {}
    for decision in decisions:
        by_cycle.setdefault(decision.cycle_id, []).append(decision)
    ordered = list(by_cycle)
    deadline = None if seconds is None else time.monotonic() + seconds
    stopped_early = False
    looked_at = 0
    for first in range(0, len(ordered), CYCLES_AT_ONCE):
        if stopped_early:
            break
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
            grid = grids[cycle_id]
            if stopped_early:
                break
            for decision in by_cycle[cycle_id]:
                if deadline is not None and time.monotonic() > deadline:
                    stopped_early = True
                    break
                looked_at += 1
                trace, own = stored.get(decision.pk, (None, None))
                if isinstance(grid, InputsUnavailable) or trace is None or own is None:
                    why = (
                        str(grid)
                        if isinstance(grid, InputsUnavailable)
                        else "its trace and inputs have expired"
                        if trace is None
                        else "stored before inputs were kept"
                    )
                    not_replayed.append({"decision": decision.pk, "task": decision.task_id, "why": why})
                    continue
                result = replay_one(
                    decision=decision,
                    own=inputs_decode(own),
                    grid=grid,
                    profile=profile,
                    overrides=overrides,
                    stored_blob=trace,
                    full=False,
                )
                difference = result["difference"]
                before[difference["chosen_before"] or "(none)"] += 1
                after[difference["chosen_now"] or "(none)"] += 1
                if not candidates_changed(difference):
                    counts["unchanged"] += 1
                    continue
                counts["outcome"] += difference["outcome_changed"]
                counts["choice"] += difference["choice_changed"]
                counts["candidates"] += 1
                changed.append(
                    {
                        "decision": decision.pk,
                        "task": decision.task_id,
                        "plugin": decision.plugin,
                        "cycle": cycle_id,
                        "created": decision.created,
                        **difference,
                    }
                )
    return {
        "cycles": list(cycle_ids),
        "profile": profile or "",
        "overrides": overrides,
        "limit": limit,
        "looked_at": looked_at,
        "truncated": truncated,
        "stopped_early": stopped_early,
        "seconds": seconds,
        "selected": len(decisions),
        "replayed": looked_at - len(not_replayed),
        "unchanged": counts["unchanged"],
        "changed_outcome": counts["outcome"],
        "changed_choice": counts["choice"],
        "changed_candidates": counts["candidates"],
        "changed": changed,
        "not_replayed": not_replayed,
        "assignments": [
            {"target": name, "before": before[name], "after": after[name]}
            for name in sorted(set(before) | set(after), key=lambda n: (-max(before[n], after[n]), n))
        ],
    }
