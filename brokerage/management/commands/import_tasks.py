"""Imports JEDI tasks from task parameter JSON (one object or a list)."""

from brokerage.management.importing import ImportCommand
from brokerage.services.imports import tasks_import


class Command(ImportCommand):
    help = (
        "Import JEDI tasks from task parameter JSON (an object or a list)."
        " Idempotent; each refused entry is reported by name."
    )
    importer = staticmethod(tasks_import)
