"""Compares each dataset counter with its files, each logged state with its log, each held file or event with its
job; prints every finding. Exit status: 0 nothing found, 1 findings (listed)."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from brokerage.services.integrity import integrity_check_run


class Command(BaseCommand):
    help = "Check counters against their rows and states against their logs; exit 1 when anything disagrees."

    def handle(self, *args, **options):
        record, findings = integrity_check_run(now=timezone.now())
        for finding in findings:
            self.stdout.write(f"{finding.kind}: {finding.entity} {finding.id}: {finding.detail}")
        if findings:
            raise CommandError(f"{len(findings)} integrity finding(s) (check {record.pk}, listed above)", returncode=1)
        self.stdout.write(f"integrity check {record.pk}: nothing found")
