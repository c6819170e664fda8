"""Imports DDM storage endpoints: name → site, type, space in GB, tape, blacklisting, activity states."""

from brokerage.management.importing import ImportCommand
from brokerage.services.imports import ddm_endpoints_import


class Command(ImportCommand):
    help = (
        "Import DDM endpoints (name → site, space in GB, states). Idempotent; each refused entry is reported by name."
    )
    importer = staticmethod(ddm_endpoints_import)
