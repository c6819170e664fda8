"""Imports software tags: queue name (or ALL) → software document (seed 000 format)."""

from brokerage.management.importing import ImportCommand
from brokerage.services.imports import sw_tags_import


class Command(ImportCommand):
    help = "Import software tags (queue name or ALL → document). Idempotent; each refused entry is reported by name."
    importer = staticmethod(sw_tags_import)
