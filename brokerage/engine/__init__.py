"""The brokerage engine: plain Python + numpy, no Django, DRF or Celery.

`run(scenario_data)` parses a scenario (SCENARIO.md), runs its plugin and returns a Decision. The same scenario
and seed always give the same decision: `now`, the seed and the configuration are part of the scenario.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from brokerage.engine.core.decision import (
    BaseMissing,
    Candidate,
    Decision,
    Frame,
    FrameMissing,
    Skip,
    Stage,
    TraceBase,
    trace_decode,
    trace_encode,
)
from brokerage.engine.core.plugin import Context, Filter, Plugin, Rejection
from brokerage.engine.core.reasons import REASONS, explain, reason_title
from brokerage.engine.core.registry import DEFAULT_PLUGINS, PluginRegistry, UnknownPlugin, default_registry
from brokerage.engine.core.scenario import Scenario, ScenarioError, parse_scenario

_DEFAULT = default_registry()  # built once: a registry per call imported every plugin module again


def run(
    scenario: Scenario | Mapping[str, Any],
    *,
    registry: PluginRegistry | None = None,
    disabled_filters: frozenset[str] = frozenset(),
) -> Decision:
    """Runs the scenario's plugin. Raises ScenarioError for bad input and UnknownPlugin for an unknown name."""
    parsed = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    plugin_class = (registry or _DEFAULT).get(parsed.plugin)
    return plugin_class(disabled_filters=disabled_filters).decide(parsed)


__all__ = [
    "DEFAULT_PLUGINS",
    "REASONS",
    "BaseMissing",
    "Candidate",
    "Context",
    "Decision",
    "Filter",
    "Frame",
    "FrameMissing",
    "Plugin",
    "PluginRegistry",
    "Rejection",
    "Scenario",
    "ScenarioError",
    "Skip",
    "Stage",
    "TraceBase",
    "UnknownPlugin",
    "default_registry",
    "explain",
    "parse_scenario",
    "reason_title",
    "run",
    "trace_decode",
    "trace_encode",
]
