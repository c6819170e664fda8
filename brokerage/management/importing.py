"""The shared shape of the import commands: read a JSON file (or stdin), import, report every refused entry."""

from __future__ import annotations

from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError

from brokerage.management.jsonfile import read_json_argument
from brokerage.services.imports import ImportFileError, ImportReport

PROGRESS_FROM = 200  # entries; shorter imports finish before a bar would help


class ImportCommand(BaseCommand):
    """Subclasses set `importer` (a service taking data= and progress=) and `help`.

    Exit status: 0 all imported, 1 some entries refused (each is listed), 2 the file cannot be used at all.
    """

    importer: Callable[..., ImportReport]

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSON file, or - for standard input")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")

    def handle(self, *args, file: str, no_progress: bool, **options):
        source, data = read_json_argument(file)
        progress = None if no_progress else self._progress
        try:
            report = type(self).importer(data=data, progress=progress)
        except ImportFileError as error:
            raise CommandError(f"{source}: $: {error}", returncode=2) from None
        if self.write_report(report, source):
            raise CommandError(f"{len(report.errors)} of {source}'s entries refused (listed above)", returncode=1)

    def write_report(self, report: ImportReport, source: str) -> int:
        """The report's summary and notes on standard output, each refused entry on standard error (with where it
        came from); the number refused."""
        self.stdout.write(report.summary())
        for note in report.notes:
            self.stdout.write(f"note: {note}")
        for name, reason in report.errors:
            self.stderr.write(f"{source}: {name}: {reason}")
        return len(report.errors)

    def _progress(self, done: int, total: int) -> None:
        if total < PROGRESS_FROM:
            return
        if done == total or done % max(1, total // 50) == 0:
            filled = done * 30 // total
            self.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total}", ending="")
            if done == total:
                self.stderr.write("")
