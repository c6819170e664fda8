"""What a brokerage decision was decided on, kept so that any recent decision can be run again (issue 34).

A cycle's grid side (the queues, their statistics, the sites and links, storage, software, the resolved gdpconfig)
is split into parts that change at different speeds; each part is stored once a day by the hash of its content,
compressed, and a cycle names the parts it read (CycleInputs). Consecutive cycles share every part that did not
change. A decision's own side (its task, job set, datasets, user statistics) is stored with its trace
(DecisionTrace.inputs). All of it lives and expires with the traces (DECISION_TRACE_DAYS)."""

from __future__ import annotations

from django.db import models

from .base import CompactJSONField
from .decisions import BrokerageCycle
from .dirac import DiracMatchRecord


class ScenarioPart(models.Model):
    """One part of the grid side of cycles' scenarios (zlib-compressed JSON), stored once per day per content:
    a cycle reads only parts of its own day, so a day's parts are dropped whole with the day (a partition on
    PostgreSQL) once no kept trace's cycle is of that day."""

    day = models.DateTimeField(
        help_text="Midnight (UTC) of the day of the cycles that read it: what retention goes by."
    )
    kind = models.CharField(max_length=24, help_text="Which part of the scenario: queues, queue_stats, network, …")
    digest = models.CharField(max_length=32, help_text="BLAKE2b-128 of the part's canonical JSON.")
    size = models.PositiveIntegerField(help_text="Bytes of the JSON before compression.")
    data = models.BinaryField()

    class Meta:
        db_table = "brokerage_scenario_parts"
        constraints = [models.UniqueConstraint(fields=["day", "digest"], name="scenario_part_once_a_day")]

    def __str__(self) -> str:
        return f"{self.kind} {self.digest[:8]} ({self.day:%Y-%m-%d})"


class CycleInputs(models.Model):
    """The grid side a cycle's decisions were decided on: the scenario's header (plugin, now) and, by name, the
    digest of each ScenarioPart of the cycle's day it read."""

    cycle = models.OneToOneField(
        BrokerageCycle, primary_key=True, on_delete=models.CASCADE, db_constraint=False, related_name="stored_inputs"
    )
    started = models.DateTimeField(help_text="The cycle's start: what retention goes by.")
    head = models.JSONField(default=dict, help_text="The scenario's own small keys (plugin, now).")
    parts = models.JSONField(default=dict, help_text="Part name → digest of the ScenarioPart of the cycle's day.")

    class Meta:
        db_table = "brokerage_cycle_inputs"
        indexes = [models.Index(fields=["started"], name="cycle_inputs_started")]

    def __str__(self) -> str:
        return f"inputs of cycle {self.cycle_id}"


class DiracMatchInputs(models.Model):
    """What a DIRAC matching request drew from, so that it can be run again (issue 34): its configuration (a
    ScenarioPart: the matching parameters and the groups), and its trail (engine.dirac.matcher.MatcherTrail):
    per try the task-queue index it read (a ScenarioPart of its day, by digest: the index changes only when task
    queues come, go or are re-prioritised, so requests share it), per task queue drawn its waiting jobs by user
    priority, per claim its first jobs and those taken meanwhile. Kept as long as the traces
    (DECISION_TRACE_DAYS); the request's record stays DECISION_DAYS."""

    record = models.OneToOneField(
        DiracMatchRecord,
        primary_key=True,
        on_delete=models.DO_NOTHING,  # dropped by day before the records are, never one by one
        db_constraint=False,
        related_name="stored_inputs",
    )
    at = models.DateTimeField(help_text="The request's time: what retention goes by.")
    config = models.CharField(max_length=32, help_text="Digest of the ScenarioPart holding the configuration.")
    trail = CompactJSONField(help_text="The tries, the task queues drawn and the claims, in order.")

    class Meta:
        db_table = "dirac_match_inputs"
        verbose_name = "DIRAC matching request's inputs"
        verbose_name_plural = "DIRAC matching requests' inputs"
        indexes = [models.Index(fields=["at"], name="dirac_match_inputs_at")]

    def __str__(self) -> str:
        return f"inputs of DIRAC matching request {self.record_id}"
