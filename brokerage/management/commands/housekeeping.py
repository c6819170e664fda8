"""Runs the housekeeping once (brokerage.services.housekeeping) and prints what it moved and dropped per table.

    manage.py housekeeping [--dry-run] [--now 2027-01-01T00:00Z] [--batch 5000] [--json]

Exit status: 0 when every step succeeded, 1 when one failed (recorded and printed; run it again), 2 for bad
arguments."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from brokerage.services.housekeeping import housekeeping_run


def _time(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(f"--now: {value!r} is not an ISO 8601 time (e.g. 2027-01-01T00:00Z)", returncode=2) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Archive ended jobs and drop history past its retention, recorded as a housekeeping run."

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="count what would be moved and dropped; change nothing"
        )
        parser.add_argument("--now", help="count retention back from this time instead of the clock (ISO 8601)")
        parser.add_argument("--batch", type=int, default=None, help="rows per transaction (HOUSEKEEPING_BATCH)")
        parser.add_argument("--json", action="store_true", help="print the run's record as JSON")

    def handle(self, *args, **options):
        now = _time(options["now"]) if options["now"] else timezone.now()
        if options["batch"] is not None and options["batch"] < 1:
            raise CommandError("--batch: give a whole number of rows, at least 1", returncode=2)
        run = housekeeping_run(now=now, dry_run=options["dry_run"], batch=options["batch"])
        if options["json"]:
            record = {
                "id": run.pk,
                "status": run.status,
                "dry_run": run.dry_run,
                "now": run.now.isoformat(),
                "seconds": run.duration_seconds,
                "rows_moved": run.rows_moved,
                "rows_dropped": run.rows_dropped,
                "tables": run.tables,
                "errors": run.errors,
            }
            self.stdout.write(json.dumps(record, indent=2, sort_keys=True))
        else:
            verb = "would move/drop" if run.dry_run else "moved/dropped"
            self.stdout.write(f"housekeeping run {run.pk} ({run.status}, {run.duration_seconds:.1f} s), {verb}:")
            for table, entry in sorted(run.tables.items()):
                moved, dropped = entry.get("moved", 0), entry.get("dropped", 0)
                if moved or dropped:
                    self.stdout.write(f"  {table:<36} moved {moved:>12,}  dropped {dropped:>12,}")
            self.stdout.write(f"  {'total':<36} moved {run.rows_moved:>12,}  dropped {run.rows_dropped:>12,}")
            for error in run.errors:
                self.stderr.write(f"{error['step']}: {error['error']}")
        if run.errors:
            raise CommandError(f"{len(run.errors)} step(s) failed (run {run.pk}); run it again", returncode=1)
