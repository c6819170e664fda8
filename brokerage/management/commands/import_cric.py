"""Imports CRIC PanDA queues: a dump keyed by queue name, or one CRIC record."""

from brokerage.management.importing import ImportCommand
from brokerage.services.imports import cric_import


class Command(ImportCommand):
    help = (
        "Import CRIC PanDA queues (a dump keyed by queue name, or one record)."
        " Idempotent; each refused entry is reported by name."
    )
    importer = staticmethod(cric_import)
