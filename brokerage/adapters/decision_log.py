"""Stored decisions written to the brokerage log an operator ships as they ship JEDI's (issue 53): in JEDI's own
grammar, on the logger `brokerage.jedi.<the real broker>` (brokerage.jedi.AtlasProdJobBroker, AtlasProdTaskBroker,
AtlasAnalJobBroker), one record a line as the real broker writes them (brokerage/engine/panda/jedi_grammars.py),
and as one JSON record a decision on
`brokerage.jedi.json`, for pipelines that read JSON. BROKERAGE_LOG says which (config/settings/base.py: off, jedi,
json or both; the logging configuration routes them). Nothing is rendered when neither logger is on, so the log
costs the cycles nothing unless it is wanted."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from brokerage.engine import Decision as EngineDecision
from brokerage.engine.panda.jedi_grammars import GRAMMARS, jedi_lines, jedi_record
from brokerage.models import Dataset, Task
from brokerage.states import INPUT_TYPES

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
    task_ids = {task_id for _, task_id in wanted}
    priorities = dict(Task.objects.filter(pk__in=task_ids).values_list("pk", "currentPriority"))
    # a broker whose lines name the job set's master dataset too (the analysis broker's `<jediTaskID=N
    # datasetID=M>`): the task's first master input dataset, read once for all, only when such lines are written
    masters: dict[int, int] = {}
    if any(GRAMMARS[decision.plugin].per_dataset and lines_on[decision.plugin] for decision, _ in wanted):
        rows = Dataset.objects.filter(task_id__in=task_ids, type__in=INPUT_TYPES, master__isnull=True).order_by(
            "datasetID"
        )
        for task_id, dataset_id in rows.values_list("task_id", "datasetID"):
            masters.setdefault(task_id, dataset_id)
    for decision, task_id in wanted:
        priority = priorities.get(task_id)
        if lines_on[decision.plugin]:
            lines = jedi_lines(decision, task_id=task_id, priority=priority, dataset_id=masters.get(task_id))
            for line in lines:
                lines_loggers[decision.plugin].info(line)
        if json_on:
            record = jedi_record(decision, task_id=task_id, priority=priority)
            JSON_LOGGER.info(json.dumps(record, separators=(",", ":"), sort_keys=True, default=_plain))
    return len(wanted)


def _plain(value):
    """numpy's numbers in a skip's detail as plain ones; anything else JSON has no word for as text."""
    return value.item() if hasattr(value, "item") else str(value)
