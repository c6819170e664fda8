"""Records of the housekeeping (issue 32): what each run archived and dropped, table by table."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from .base import run_constraints
from .decisions import CycleStatus

# a housekeeping run goes through the states of a brokerage cycle: running, then succeeded or failed
HousekeepingStatus = CycleStatus


class HousekeepingRun(models.Model):
    """One run of the housekeeping (the beat task or `manage.py housekeeping`): partitions made ahead, jobs moved
    to the archive, history dropped past its retention.

    `tables` holds {table: {"moved": n, "dropped": n, "partitions_made": n, "partitions_dropped": n, "cutoff":
    ISO time}} for every table it touched; `errors` the steps that failed, with their messages. A run that fails
    half-way leaves every batch it finished done and is safe to run again. `now` is the logical time the
    retention was measured from (the wall clock, or --now)."""

    started = models.DateTimeField(db_index=True)
    finished = models.DateTimeField(null=True, blank=True)
    now = models.DateTimeField(help_text="The time the retention periods were counted back from.")
    status = models.CharField(max_length=16, choices=HousekeepingStatus.choices, default=HousekeepingStatus.RUNNING)
    dry_run = models.BooleanField(default=False, help_text="Counted what it would do; changed nothing.")
    worker = models.CharField(max_length=128, blank=True, default="")
    tables = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    rows_moved = models.PositiveBigIntegerField(default=0)
    rows_dropped = models.PositiveBigIntegerField(default=0)

    class Meta:
        db_table = "brokerage_housekeeping_runs"
        ordering = ["-started", "-id"]
        constraints = run_constraints("housekeeping")

    def __str__(self) -> str:
        kind = "dry run" if self.dry_run else "run"
        return f"housekeeping {kind} {self.pk} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        return (self.finished - self.started).total_seconds() if self.finished else None


class SummaryMark(models.Model):
    """How far a summary has been rolled up (issue 32): every whole hour from `since` to `until` is in it,
    including the hours that had nothing to count. Readers take those hours from the summary and the rest from the
    rows (selectors.hours)."""

    name = models.CharField(max_length=64, unique=True)
    since = models.DateTimeField(null=True, blank=True, help_text="The first hour rolled up.")
    until = models.DateTimeField(help_text="The end of the last hour rolled up.")

    class Meta:
        db_table = "brokerage_summary_marks"
        constraints = [
            models.CheckConstraint(condition=Q(since__isnull=True) | Q(since__lte=F("until")), name="summary_mark_span")
        ]

    def __str__(self) -> str:
        since = f"{self.since:%Y-%m-%d %H:%M}" if self.since else "?"
        return f"{self.name} {since} to {self.until:%Y-%m-%d %H:%M}"
