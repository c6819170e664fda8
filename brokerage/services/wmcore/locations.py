"""The periodic location update of Available elements (seed 004, "Input data (block) location update")."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db import transaction

from brokerage.models import (
    WMCoreBlock,
    WMCoreElement,
    WMCoreQueue,
)
from brokerage.services.bulk import bulk_update_values


@transaction.atomic
def element_locations_update(*, now: datetime) -> int:
    """Seed 004, "Input data (block) location update": the input, parent and pileup locations of every Available
    element (global and local queues) are read again from the block replicas; returns the elements changed."""
    # the global queues' locks keep pulls (which write on Available elements too) out meanwhile. Every queue row is
    # written at the end, so all are locked first, in the one order: the local queues, then the global ones, as a
    # pull locks its agent's queue and then its global queue (global first deadlocked against a pull)
    for kind in ("local", "global"):
        list(
            WMCoreQueue.objects.select_for_update(no_key=True)
            .filter(kind=kind)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
    rows = list(WMCoreElement.objects.filter(Status="Available").values("pk", "Inputs", "ParentData", "PileupData"))
    names = {name for row in rows for field in ("Inputs", "ParentData") for name in (row[field] or {})}
    pileups = {name for row in rows for name in (row["PileupData"] or {})}
    where = {
        name: sorted(sites) for name, sites in WMCoreBlock.objects.filter(name__in=names).values_list("name", "sites")
    }
    pileup_sites: dict[str, set[str]] = defaultdict(set)
    for dataset, sites in WMCoreBlock.objects.filter(dataset__in=pileups).values_list("dataset", "sites"):
        pileup_sites[dataset].update(sites)
    changed = []
    for row in rows:
        inputs = {name: where.get(name, sites) for name, sites in (row["Inputs"] or {}).items()}
        parents = {name: where.get(name, sites) for name, sites in (row["ParentData"] or {}).items()}
        pileup = {
            name: sorted(pileup_sites[name]) if name in pileup_sites else sites
            for name, sites in (row["PileupData"] or {}).items()
        }
        if (inputs, parents, pileup) != (row["Inputs"], row["ParentData"], row["PileupData"]):
            changed.append((row["pk"], inputs, parents, pileup, now))
    bulk_update_values(WMCoreElement, fields=("Inputs", "ParentData", "PileupData", "UpdateTime"), rows=changed)
    WMCoreQueue.objects.update(locations_updated=now)
    return len(changed)
