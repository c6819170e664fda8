"""Imports CRIC PanDA queues: a dump keyed by queue name, one CRIC record, or a directory holding the three files
PanDA's CRIC-free mode loads (sites.json, ddm_endpoints.json, panda_queues.json)."""

from pathlib import Path

from django.core.management.base import CommandError

from brokerage.management.importing import ImportCommand
from brokerage.management.jsonfile import read_json_argument
from brokerage.services.imports import CRIC_FREE_FILES, ImportFileError, cric_free_import, cric_import


class Command(ImportCommand):
    help = (
        "Import CRIC PanDA queues (a dump keyed by queue name, or one record), or, given a directory, PanDA's "
        "CRIC-free files: sites.json, ddm_endpoints.json and panda_queues.json. Idempotent; each refused entry is "
        "reported by name."
    )
    importer = staticmethod(cric_import)

    def handle(self, *args, file: str, no_progress: bool, **options):
        if file == "-" or not Path(file).is_dir():
            return super().handle(*args, file=file, no_progress=no_progress, **options)
        directory = Path(file)
        data = {}
        for key, name in CRIC_FREE_FILES.items():
            path = directory / name
            if not path.is_file():
                raise CommandError(
                    f"{path}: missing (a CRIC-free directory holds {', '.join(CRIC_FREE_FILES.values())})", returncode=2
                )
            data[key] = read_json_argument(str(path))[1]
        progress = None if no_progress else self._progress
        try:
            reports = cric_free_import(**data, progress=progress)
        except ImportFileError as error:
            raise CommandError(f"{directory}: {error}", returncode=2) from None
        refused = sum(
            self.write_report(report, str(directory / name))
            for report, name in zip(reports, CRIC_FREE_FILES.values(), strict=True)
        )
        if refused:
            raise CommandError(f"{refused} of {directory}'s entries refused (listed above)", returncode=1)
