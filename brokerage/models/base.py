"""Shared pieces of the domain models: the status-log base and the life-cycle contract of stateful rows."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import forms
from django.db import models

from brokerage.states import StateMachine


def run_constraints(prefix: str) -> list[models.BaseConstraint]:
    """The invariants of a record of a run (a cycle, a housekeeping run): it ends after it starts, and it has an end
    exactly when it is no longer running."""
    return [
        models.CheckConstraint(
            condition=models.Q(finished__isnull=True) | models.Q(finished__gte=models.F("started")),
            name=f"{prefix}_ends_after_start",
        ),
        models.CheckConstraint(
            condition=models.Q(status="running", finished__isnull=True)
            | (~models.Q(status="running") & models.Q(finished__isnull=False)),
            name=f"{prefix}_finished_iff_not_running",
        ),
    ]


class CompactJSONField(models.TextField):
    """JSON kept as compact text (no spaces), for a value only ever read whole and kept for a year: a decision's
    counts per reason, what a DIRAC pilot sent. PostgreSQL's jsonb spends a header and an aligned number per entry
    (135 bytes for the job brokerage's typical counts, against 75 as text); nothing queries inside them. Reads
    give back the decoded value, as JSONField does."""

    def from_db_value(self, value: Any, expression, connection) -> Any:
        return self.to_python(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as error:
                raise models.ValidationError(f"not JSON: {error}") from error
        return value

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def value_to_string(self, obj: models.Model) -> str:
        return self.get_prep_value(self.value_from_object(obj))

    def formfield(self, **kwargs: Any) -> forms.Field:
        return forms.JSONField(**{"required": not self.blank, **kwargs})


class StatusLogBase(models.Model):
    """One status change of an entity: when, from what, to what, why and by whom.

    Our own table, so snake_case names; `actor` plays the part of JEDI's modificationHost (process or user).
    """

    timestamp = models.DateTimeField(db_index=True)
    old_status = models.CharField(max_length=64, blank=True, help_text="Empty when the row was created.")
    new_status = models.CharField(max_length=64)
    reason = models.TextField(blank=True)
    actor = models.CharField(max_length=128, blank=True)

    class Meta:
        abstract = True
        ordering = ["timestamp", "id"]

    def __str__(self) -> str:
        return f"{self.old_status or '∅'} → {self.new_status} at {self.timestamp:%Y-%m-%d %H:%M:%S}"


class Stateful(models.Model):
    """A row with a life cycle. `status_transition` (brokerage.services.status) is the only writer of its status.

    Subclasses name their status column, their state machine, the other columns a move updates (JEDI sets
    oldStatus, stateChangeTime, startTime, endTime…) and the log row that records it, if they keep a log.
    """

    STATUS_FIELD = "status"
    # The columns the state machine depends on (a dataset's type picks the input or the output machine): a move of
    # many rows reads them to check each row against its own machine.
    MACHINE_FIELDS: tuple[str, ...] = ()

    class Meta:
        abstract = True

    @property
    def state_machine(self) -> StateMachine:
        raise NotImplementedError

    @property
    def current_status(self) -> str:
        return getattr(self, self.STATUS_FIELD)

    def transition_updates(self, old_status: str, new_status: str, now: datetime) -> dict[str, Any]:
        """Columns besides the status that change with this move."""
        return {}

    def status_log_entry(self, old_status: str, new_status: str, reason: str, actor: str, now: datetime):
        """An unsaved log row for this move, or None for entities that keep no status history."""
        return None
