"""What-if previews: run a brokerage plugin on a posted scenario, or on a task's current snapshot with gdpconfig
overrides, store nothing, and compare with the task's last stored decision of the same plugin — the queues (or
nuclei) gained and lost with their codes, and the change of choice. Admins see a parameter's effect before
saving it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from brokerage.adapters.task_brokerage import grid_base, task_scenarios
from brokerage.engine import parse_scenario
from brokerage.engine.core.decision import Decision as EngineDecision
from brokerage.gdpconfig import ConfigView
from brokerage.models import Decision, Task
from brokerage.plugins import plugin_registry
from brokerage.selectors.decisions import decision_trace


class PreviewUnavailable(ValueError):
    """The task cannot be previewed (unknown, or nothing to broker); the message says why."""


def _decide(scenario) -> EngineDecision:
    return plugin_registry().get(scenario.plugin)().decide(scenario)


def _difference(preview: dict[str, Any], stored: Decision | None) -> dict[str, Any] | None:
    if stored is None:
        return None
    trace = decision_trace(decision=stored)
    before = {candidate["name"] for candidate in trace["candidates"]}
    after = {candidate["name"] for candidate in preview["candidates"]}
    before_skipped, after_skipped = trace["skipped"], preview["skipped"]
    return {
        "stored_decision": stored.pk,
        "stored_created": stored.created.isoformat(),
        "gained": [
            {"name": name, "was": before_skipped.get(name, {}).get("code", "not considered")}
            for name in sorted(after - before)
        ],
        "lost": [
            {
                "name": name,
                "code": after_skipped.get(name, {}).get("code", "not considered"),
                "detail": after_skipped.get(name, {}).get("detail", {}),
            }
            for name in sorted(before - after)
        ],
        "chosen_before": stored.chosen or None,
        "chosen_now": preview["chosen"],
        "choice_changed": (stored.chosen or None) != preview["chosen"],
        "outcome_before": stored.outcome,
        "outcome_now": preview["outcome"],
    }


def broker_preview_scenario(*, scenario: dict[str, Any], profile: str | None = None) -> dict[str, Any]:
    """The decision on a posted scenario (ScenarioError names the JSON path of a bad input); `profile` replaces
    the scenario's own."""
    decision = _decide(parse_scenario({**scenario, "profile": profile} if profile else scenario))
    return {"decision": decision.to_dict(), "difference": None}


def broker_preview_task(
    *,
    task_id: int,
    now: datetime,
    overrides: dict[str, Any],
    plugin: str | None = None,
    profile: str | None = None,
) -> dict[str, Any]:
    """The decision the task would get now with `overrides` on top of the effective gdpconfig (under `profile`
    instead of the live one when given), and its difference from the task's last stored decision of that
    plugin. Bad overrides raise GdpConfigError naming the key."""
    from brokerage.adapters.job_brokerage import job_set_preview_scenario
    from brokerage.selectors.gdpconfig import cycle_gdpconfig
    from brokerage.states import WAITING_FOR_NUCLEUS

    task = Task.objects.filter(pk=task_id).values("status", "vo").first()
    if task is None:
        raise PreviewUnavailable(f"no task {task_id}")
    ConfigView.from_flat(overrides)  # every override known and valid, or GdpConfigError
    gdpconfig = {**cycle_gdpconfig(vo=task["vo"] or "atlas", profile=profile), **overrides}
    stored_plugins = set(Decision.objects.filter(task_id=task_id).values_list("plugin", flat=True))
    if plugin is None:
        job_plugins = stored_plugins & {"atlas_prod_job", "atlas_anal_job"}
        plugin = "atlas_prod_task" if task["status"] == WAITING_FOR_NUCLEUS or not job_plugins else job_plugins.pop()
    stored = Decision.objects.filter(task_id=task_id, plugin=plugin).select_related("cycle").first()
    seed = stored.seed if stored is not None else 0
    if plugin == "atlas_prod_task":
        base = grid_base(now=now, gdpconfig=gdpconfig)
        scenario = task_scenarios(task_ids=[task_id], base=base, seed_of=lambda _: seed)[task_id]
    else:
        scenario = job_set_preview_scenario(task_id=task_id, now=now, gdpconfig=gdpconfig, seed=seed)
        if scenario is None:
            raise PreviewUnavailable(f"task {task_id} has no input left and no job set to compare with")
        if scenario.plugin != plugin:  # the task's kind decides which job brokerage places its jobs
            raise PreviewUnavailable(f"task {task_id}'s jobs are brokered by {scenario.plugin}, not {plugin}")
    preview = _decide(scenario).to_dict()
    return {
        "decision": preview,
        "difference": _difference(preview, stored),
        "overrides": overrides,
        "profile": preview["profile"],
    }
