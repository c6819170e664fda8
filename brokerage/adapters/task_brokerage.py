"""Scenarios for production task brokerage, built from the database.

The grid part (nuclei, storage endpoints, network) is read once per cycle and shared by every task's scenario;
the task part (tasks, their input datasets, the replicas of those datasets, the remaining work per nucleus) is
read for all the cycle's tasks at once (four queries, five when tasks have parents), whatever their number.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db.models import F

from brokerage.engine import Scenario, parse_scenario
from brokerage.models import Dataset, DatasetReplica, NetworkLink, Site, StorageEndpoint, Task
from brokerage.selectors.nuclei import remaining_work_rows, rw_for

PLUGIN = "atlas_prod_task"
TASK_FIELDS = (
    "jediTaskID",
    "taskPriority",
    "currentPriority",
    "processingType",
    "prodSourceLabel",
    "gshare",
    "coreCount",
    "ramCount",
    "ramUnit",
    "baseRamCount",
    "outDiskCount",
    "outDiskUnit",
    "workDiskCount",
    "ioIntensity",
    "diskIO",
    "cpuTime",
    "cpuEfficiency",
    "baseWalltime",
    "architecture",
    "transUses",
    "transHome",
    "userName",
    "workingGroup",
    "vo",
    "parent_id",
    "taskParams",
    "site",
    "eventService",
)
TASK_PARAMETERS = (
    "t1Weight",
    "fullChain",
    "ipConnectivity",
    "taskBrokerOnMaster",
    "inputPreStaging",
    "onlyTagsForFC",
    "maxCoreCount",
    "outputEndpointType",
)


def task_values(row: dict[str, Any]) -> dict[str, Any]:
    """A task row's set values in the scenario's types (JEDI keeps eventService as a number)."""
    values = {key: value for key, value in row.items() if value is not None}
    if "eventService" in values:
        values["eventService"] = bool(values["eventService"])
    return values


def grid_parts() -> dict[str, Any]:
    """Sites, storage endpoints and network as scenario parts (three queries): what every broker reads."""
    sites = {
        row["name"]: {"role": row["role"], "state": row["state"], "bareNucleus": row["bareNucleus"]}
        for row in Site.objects.values("name", "role", "state", "bareNucleus")
    }
    endpoints = {
        row.pop("name"): {**row, "site": row.pop("site__name") or ""}
        for row in StorageEndpoint.objects.values(
            "name",
            "site__name",
            "type",
            "space_total",
            "space_free",
            "space_used",
            "space_expired",
            "is_tape",
            "blacklisted",
            "detailed_status",
        )
    }
    network = list(
        NetworkLink.objects.annotate(src_name=F("src__name"), dst_name=F("dst__name")).values(
            "src_name", "dst_name", "closeness", "mbps_1h", "mbps_1d", "mbps_1w", "queued"
        )
    )
    for link in network:
        link["src"], link["dst"] = link.pop("src_name"), link.pop("dst_name")
    return {"sites": sites, "ddm_endpoints": endpoints, "network": network}


# The parts of a cycle's base scenario that every decision of the cycle shares (by reference, so the engine's
# per-snapshot caches stay warm from one decision to the next).
TASK_GRID_PARTS = ("config", "gdpconfig", "profile", "sites", "ddm_endpoints", "network")


def over_base(parsed: Scenario, base: Scenario, parts: tuple[str, ...] = TASK_GRID_PARTS) -> Scenario:
    """`parsed` (one task's or job set's part) with the shared `parts` taken from the cycle's `base`."""
    return replace(parsed, **{part: getattr(base, part) for part in parts})


def grid_base(*, now: datetime, gdpconfig: dict[str, Any]) -> Scenario:
    """The scenario part every task of a cycle shares (three queries)."""
    return parse_scenario({"plugin": PLUGIN, "now": now.isoformat(), "gdpconfig": gdpconfig, **grid_parts()})


def task_scenarios(*, task_ids: list[int], base: Scenario, seed_of) -> dict[int, Scenario]:
    """One scenario per task over the shared `base` (three queries for all tasks)."""
    tasks = {row["jediTaskID"]: row for row in Task.objects.filter(pk__in=task_ids).values(*TASK_FIELDS)}
    parents = dict(
        Task.objects.filter(pk__in={t["parent_id"] for t in tasks.values() if t["parent_id"]}).values_list(
            "jediTaskID", "nucleus"
        )
    )
    datasets: dict[int, list[dict]] = {}
    names = set()
    for row in Dataset.objects.filter(task_id__in=task_ids, type__in=("input", "pseudo_input")).values(
        "task_id", "datasetName", "master_id", "nFiles", "datasetID"
    ):
        datasets.setdefault(row["task_id"], []).append(row)
        names.add(row["datasetName"])
    replicas: dict[str, dict[str, dict]] = {}
    for row in DatasetReplica.objects.filter(datasetName__in=names).values(
        "datasetName", "endpoint__name", "nFiles", "sizeGB"
    ):
        replicas.setdefault(row["datasetName"], {})[row["endpoint__name"]] = {
            "nFiles": row["nFiles"],
            "sizeGB": row["sizeGB"],
        }
    work = remaining_work_rows()
    bare = {name: site.bareNucleus for name, site in base.sites.items()}
    scenarios = {}
    for task_id, task in tasks.items():
        params = task.pop("taskParams") or {}
        parent_id = task.pop("parent_id")
        spec = task_values(task)
        spec.update({key: params[key] for key in TASK_PARAMETERS if key in params})
        if parent_id in parents:
            spec["parentNucleus"] = parents[parent_id] or ""
            spec["parentBareNucleus"] = bare.get(parents[parent_id] or "", "")
        data_rows = datasets.get(task_id, [])
        data = [
            {
                "name": row["datasetName"],
                "master": row["master_id"] is None,
                "nFiles": row["nFiles"],
                # a dataset's size is that of its most complete replica
                "sizeGB": max((r["sizeGB"] for r in replicas.get(row["datasetName"], {}).values()), default=0.0),
                "replicas": replicas.get(row["datasetName"], {}),
            }
            for row in data_rows
        ]
        rw = rw_for(work, priority=task["currentPriority"], gshare=task["gshare"])
        parsed = parse_scenario(
            {
                "plugin": PLUGIN,
                "now": base.now.isoformat(),
                "seed": seed_of(task_id),
                "task": spec,
                "datasets": data,
                "nucleus_stats": {name: {"rw": value} for name, value in rw.items()},
            }
        )
        scenarios[task_id] = over_base(parsed, base)
    return scenarios
