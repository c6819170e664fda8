"""Brokerage cycles and the decisions they took, each with a compact trace of every candidate's fate."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from brokerage.engine.core.decision import OUTCOMES

from .base import CompactJSONField, run_constraints


class CycleStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class BrokerageCycle(models.Model):
    """One run of a plugin over many tasks (a Celery cycle, a benchmark, an offline batch): when, by whom,
    with which resolved gdpconfig, how it ended and what it decided."""

    plugin = models.CharField(max_length=64)
    started = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=CycleStatus.choices, default=CycleStatus.RUNNING)
    error = models.TextField(blank=True, default="")
    worker = models.CharField(max_length=128, blank=True, default="", help_text="host and process that ran it")
    gdpconfig = models.JSONField(default=dict, blank=True, help_text="The effective parameters the cycle used.")
    revision = models.ForeignKey(
        "brokerage.GdpConfigRevision",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_constraint=False,  # cycles are partitioned on PostgreSQL
        related_name="cycles",
        help_text="The gdpconfig revision the cycle ran under (none before revisions were kept).",
    )
    n_decisions = models.PositiveIntegerField(default=0)
    n_assigned = models.PositiveIntegerField(default=0)
    n_pending = models.PositiveIntegerField(default=0)
    n_throttled = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "brokerage_cycles"
        ordering = ["-started", "-id"]
        constraints = run_constraints("cycle")
        indexes = [
            models.Index(fields=["plugin", "started"], name="cycle_plugin_started"),
            models.Index(fields=["status", "started"], name="cycle_status_started"),
        ]

    def __str__(self) -> str:
        return f"{self.plugin} cycle {self.pk} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        return (self.finished - self.started).total_seconds() if self.finished else None


class Decision(models.Model):
    """One brokerage decision: its outcome, what was chosen, the main reason others were not and how many
    candidates each reason removed. The row is small and kept DECISION_DAYS; its full trace (DecisionTrace), which
    answers "why not X" for every candidate, is most of the bytes and is kept apart for DECISION_TRACE_DAYS."""

    # no database constraint: cycles are partitioned on PostgreSQL (brokerage.partitions); Django cascades
    cycle = models.ForeignKey(BrokerageCycle, on_delete=models.CASCADE, related_name="decisions", db_constraint=False)
    task = models.ForeignKey(
        "brokerage.Task",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        db_column="jediTaskID",
        related_name="decisions",
        db_index=False,  # decision_task_created (task, created) serves every read by task: a year of rows, no twin
    )
    jobsetID = models.BigIntegerField(null=True, blank=True)
    plugin = models.CharField(max_length=64)
    created = models.DateTimeField(help_text="The `now` of the decision.")
    outcome = models.CharField(max_length=16, choices=[(o, o) for o in OUTCOMES])
    chosen = models.CharField(max_length=128, blank=True, default="")
    n_candidates = models.PositiveIntegerField(help_text="Candidates considered.")
    n_passed = models.PositiveIntegerField(help_text="Candidates that passed every filter.")
    primary_reason = models.CharField(max_length=32, blank=True, default="")
    message = models.CharField(max_length=500)
    retry_after_minutes = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField(default=0)
    profile = models.CharField(max_length=16, default="seed", help_text="The gdpconfig profile it ran under.")
    reason_counts = CompactJSONField(
        default=dict,
        blank=True,
        help_text="How many candidates each reason code removed: the summary that outlives the full trace.",
    )

    class Meta:
        db_table = "brokerage_decisions"
        ordering = ["-created", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(outcome__in=OUTCOMES), name="decision_outcome_known"),
            models.CheckConstraint(
                condition=Q(n_passed__lte=F("n_candidates")), name="decision_passed_within_considered"
            ),
            models.CheckConstraint(
                condition=Q(outcome__in=("assigned", "matched"), chosen__gt="")
                | (~Q(outcome__in=("assigned", "matched")) & Q(chosen="")),
                name="decision_chosen_iff_assigned",
            ),
        ]
        indexes = [
            models.Index(fields=["task", "created"], name="decision_task_created"),
            models.Index(fields=["plugin", "outcome", "created"], name="decision_plugin_outcome"),
            models.Index(fields=["chosen", "created"], name="decision_chosen"),
            models.Index(fields=["primary_reason", "created"], name="decision_reason"),
            models.Index(fields=["created"], name="decision_created"),  # the list, newest first; retention
        ]

    def __str__(self) -> str:
        return f"{self.plugin} {self.outcome} {self.chosen or '—'} ({self.created:%Y-%m-%d %H:%M})"


class DecisionHour(models.Model):
    """Decisions taken in one hour, per plugin, outcome and main reason (issue 32): what the decision explorer
    counts for every whole hour of its window, so that its outcome and reason counts read a day of summary rows and
    an hour or two of decisions, not the day's 100,000 at a real grid's rate. Rolled up by the housekeeping
    (services.summaries) from the decisions; the hours after the last one rolled up are read from the decisions
    themselves. Kept as long as the decisions (DECISION_DAYS)."""

    hour = models.DateTimeField(help_text="The hour's start (UTC); decisions whose `created` falls in it.")
    plugin = models.CharField(max_length=64)
    outcome = models.CharField(max_length=16, choices=[(o, o) for o in OUTCOMES])
    primary_reason = models.CharField(max_length=32, blank=True, default="")
    n = models.PositiveIntegerField()

    class Meta:
        db_table = "brokerage_decision_hours"
        ordering = ["-hour"]
        constraints = [models.CheckConstraint(condition=Q(n__gt=0), name="decision_hour_counts_decisions")]
        indexes = [models.Index(fields=["hour"], name="decision_hour")]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}h {self.plugin} {self.outcome} {self.primary_reason or '—'}: {self.n}"


class CycleFrame(models.Model):
    """The candidates and their attributes that all of a cycle's decision traces share (engine.Frame), stored once
    per cycle and kept as long as the traces that need it (DECISION_TRACE_DAYS)."""

    cycle = models.OneToOneField(
        BrokerageCycle, primary_key=True, on_delete=models.CASCADE, db_constraint=False, related_name="stored_frame"
    )
    started = models.DateTimeField(help_text="The cycle's start: what retention goes by.")
    frame = models.BinaryField()

    class Meta:
        db_table = "brokerage_cycle_frames"
        indexes = [models.Index(fields=["started"], name="frame_started")]

    def __str__(self) -> str:
        return f"frame of cycle {self.cycle_id}"


class DecisionTrace(models.Model):
    """The full trace of one decision (engine.trace_encode): every candidate's weight and factors, every skipped
    one's code, filter and numbers. Kept apart from the decision's row so that dropping old traces
    (DECISION_TRACE_DAYS) never touches the rows, which are kept far longer (DECISION_DAYS).

    `base` is the trace this one is stored as the change against (a WMCore pull's previous pull's). The housekeeping
    keeps a base as long as a kept delta needs it; a base deleted otherwise takes the traces built on it (the
    decisions' rows stay, their traces then read as expired)."""

    decision = models.OneToOneField(
        Decision, primary_key=True, on_delete=models.CASCADE, db_constraint=False, related_name="stored_trace"
    )
    created = models.DateTimeField(help_text="The decision's time: what retention goes by.")
    trace = models.BinaryField()
    base = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        db_constraint=False,
        db_column="base_decision_id",
        related_name="deltas",
    )
    inputs = models.BinaryField(
        null=True,
        blank=True,
        help_text="The decision's own side of its scenario (task, job set, datasets; zlib JSON): with its cycle's "
        "inputs (CycleInputs), what replay runs it again on. Empty for decisions stored before inputs were kept.",
    )

    class Meta:
        db_table = "brokerage_decision_traces"
        indexes = [
            models.Index(fields=["created"], name="trace_created"),
        ]

    def __str__(self) -> str:
        return f"trace of decision {self.decision_id}"
