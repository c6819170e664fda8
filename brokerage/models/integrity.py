"""Records of the integrity check: counters against the rows they count, states against their logs."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q


class IntegrityCheck(models.Model):
    """One run of the integrity check (`manage.py check_integrity`, the watchdog): what it found.

    `findings` keeps the first INTEGRITY_FINDINGS_KEPT findings as {kind, entity, id, detail}; `n_findings`
    counts them all. The overview shows the latest run when it found something.
    """

    started = models.DateTimeField(db_index=True)
    finished = models.DateTimeField()
    worker = models.CharField(max_length=128, blank=True, default="")
    n_findings = models.PositiveIntegerField(default=0)
    findings = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "brokerage_integrity_checks"
        ordering = ["-started", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(finished__gte=F("started")), name="integrity_check_ends_after_start")
        ]

    def __str__(self) -> str:
        return f"integrity check {self.pk}: {self.n_findings} finding(s)"
