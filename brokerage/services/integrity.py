"""Runs the integrity check and records what it found (brokerage.selectors.integrity)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from brokerage.models import IntegrityCheck
from brokerage.selectors.integrity import Finding, integrity_findings
from brokerage.services.decisions import worker_name

FINDINGS_KEPT = 200


def integrity_check_run(*, now: datetime) -> tuple[IntegrityCheck, list[Finding]]:
    """One check; the record keeps the count and the first FINDINGS_KEPT findings."""
    findings = integrity_findings(now=now)
    record = IntegrityCheck.objects.create(
        started=now,
        finished=max(timezone.now(), now),
        worker=worker_name(),
        n_findings=len(findings),
        findings=[finding.as_dict() for finding in findings[:FINDINGS_KEPT]],
    )
    return record, findings


def integrity_check_due(*, now: datetime) -> bool:
    """Whether the watchdog should run the check now (every INTEGRITY_CHECK_MINUTES)."""
    minutes = int(getattr(settings, "INTEGRITY_CHECK_MINUTES", 10))
    return not IntegrityCheck.objects.filter(started__gt=now - timedelta(minutes=minutes)).exists()
