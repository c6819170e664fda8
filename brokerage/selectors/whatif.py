"""What-if over the past (issue 34): the decisions of a cycle, or of the cycles of a time window, run again on
their stored inputs with other gdpconfig values or another profile; which would change and how. Read-only."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from brokerage.gdpconfig import ConfigView
from brokerage.models import BrokerageCycle, Decision, DecisionTrace
from brokerage.selectors.inputs import REPLAYABLE, InputsUnavailable, grid_inputs
from brokerage.selectors.replay import candidates_changed, replay_one
from brokerage.services.inputs import inputs_decode

# At most this many decisions per what-if unless the caller says otherwise: a what-if answers within seconds.
DEFAULT_LIMIT = 2000
MAX_LIMIT = 20000


def what_if_cycles(*, since: datetime, until: datetime, plugin: str | None = None) -> list[int]:
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
) -> dict[str, Any]:
    """Every stored decision of `cycle_ids` (up to `limit`, the cycles in the order given) run again with
    `overrides` and `profile`: how many change outcome, choice or candidates, each changed one with what changed,
    the assignments per queue or nucleus before and after, and every decision that could not be replayed with why.
    Per cycle three queries (its inputs, its parts, its decisions with their traces and inputs)."""
    overrides = dict(overrides or {})
    ConfigView.from_flat(overrides)  # every override known and valid, or GdpConfigError naming it
    limit = max(1, min(int(limit), MAX_LIMIT))
    changed: list[dict[str, Any]] = []
    not_replayed: list[dict[str, Any]] = []
    before, after = Counter(), Counter()
    counts = Counter()
    looked_at = 0
    truncated = False
    for cycle_id in cycle_ids:
        if looked_at >= limit:
            truncated = True
            break
        decisions = list(
            Decision.objects.filter(cycle_id=cycle_id, plugin__in=REPLAYABLE).order_by("pk")[: limit - looked_at]
        )
        if not decisions:
            continue
        stored = {
            pk: (trace, own)
            for pk, trace, own in DecisionTrace.objects.filter(decision_id__in=[d.pk for d in decisions]).values_list(
                "decision_id", "trace", "inputs"
            )
        }
        try:
            grid = grid_inputs(cycle_id=cycle_id)
        except InputsUnavailable as why:
            not_replayed += [{"decision": d.pk, "task": d.task_id, "why": str(why)} for d in decisions]
            looked_at += len(decisions)
            continue
        for decision in decisions:
            looked_at += 1
            trace, own = stored.get(decision.pk, (None, None))
            if trace is None or own is None:
                why = "its trace and inputs have expired" if trace is None else "stored before inputs were kept"
                not_replayed.append({"decision": decision.pk, "task": decision.task_id, "why": why})
                continue
            result = replay_one(
                decision=decision,
                own=inputs_decode(own),
                grid=grid,
                profile=profile,
                overrides=overrides,
                stored_blob=trace,
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
