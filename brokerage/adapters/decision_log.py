"""Stored decisions written to the brokerage log an operator ships as they ship JEDI's (issue 53): in JEDI's own
grammar, on the logger `brokerage.jedi.<the real broker>` (e.g. brokerage.jedi.AtlasProdJobBroker), one record a line
as the real broker writes them (brokerage/engine/panda/jedi_grammars.py), and as one JSON record a decision on
`brokerage.jedi.json`, for pipelines that read JSON. BROKERAGE_LOG says which (config/settings/base.py: off, jedi,
json or both; the logging configuration routes them). Nothing is rendered when neither logger is on, so the log
costs the cycles nothing unless it is wanted."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from brokerage.engine import Decision as EngineDecision
from brokerage.engine.panda.jedi_grammars import GRAMMARS, jedi_lines, jedi_record
from brokerage.models import Task

LOGGER_PREFIX = "brokerage.jedi"
JSON_LOGGER = logging.getLogger("brokerage.jedi.json")


def decisions_log(decisions: Iterable[tuple[EngineDecision, int | None]]) -> int:
    """Writes each (decision, task id) of a brokerage with a JEDI grammar to the loggers that are on; returns how
    many decisions were written. The tasks' priorities are read in one query, only when something is written."""
    json_on = JSON_LOGGER.isEnabledFor(logging.INFO)
    lines_loggers = {
        plugin: logging.getLogger(f"{LOGGER_PREFIX}.{grammar.broker}") for plugin, grammar in GRAMMARS.items()
    }
    lines_on = {plugin: logger.isEnabledFor(logging.INFO) for plugin, logger in lines_loggers.items()}
    wanted = [
        (decision, task_id)
        for decision, task_id in decisions
        if task_id is not None and decision.plugin in GRAMMARS and (json_on or lines_on[decision.plugin])
    ]
    if not wanted:
        return 0
    priorities = dict(
        Task.objects.filter(pk__in={task_id for _, task_id in wanted}).values_list("pk", "currentPriority")
    )
    for decision, task_id in wanted:
        priority = priorities.get(task_id)
        if lines_on[decision.plugin]:
            for line in jedi_lines(decision, task_id=task_id, priority=priority):
                lines_loggers[decision.plugin].info(line)
        if json_on:
            record = jedi_record(decision, task_id=task_id, priority=priority)
            JSON_LOGGER.info(json.dumps(record, separators=(",", ":"), sort_keys=True, default=_plain))
    return len(wanted)


def _plain(value):
    """numpy's numbers in a skip's detail as plain ones; anything else JSON has no word for as text."""
    return value.item() if hasattr(value, "item") else str(value)
