"""Plain builders for engine inputs: scenario dictionaries with only what a test cares about spelled out."""

from __future__ import annotations

import copy
from typing import Any

from brokerage.engine import Decision, parse_scenario, run

NOW = "2026-11-01T12:00:00Z"


def nucleus(
    name: str,
    *,
    state: str = "ACTIVE",
    bare: str = "",
    free: float = 300_000.0,
    expired: float = 0.0,
    total: float = 1_000_000.0,
    rw: float = 0.0,
    queued: int | None = 0,
    read_wan: str = "ON",
    write_wan: str = "ON",
    blacklisted: bool = False,
    disk: bool = True,
    tape: bool = False,
) -> dict[str, Any]:
    """One nucleus with its DATADISK (and optionally DATATAPE) endpoint and its statistics (sizes in GB)."""
    endpoints = {}
    if disk:
        endpoints[f"{name}_DATADISK"] = {
            "site": name,
            "space_total": total,
            "space_free": free,
            "space_expired": expired,
            "blacklisted": blacklisted,
            "detailed_status": {"read_wan": read_wan, "write_wan": write_wan},
        }
    if tape:
        endpoints[f"{name}_DATATAPE"] = {"site": name, "is_tape": True, "space_total": 5e6, "space_free": 1e6}
    stats = {"rw": rw}
    if queued is not None:
        stats["outputQueued"] = queued
    return {
        "name": name,
        "site": {"role": "nucleus", "state": state, "bareNucleus": bare},
        "endpoints": endpoints,
        "stats": stats,
    }


def dataset(name: str = "data.EVNT", *, size: float = 0.5, files: int = 5, master: bool = True, replicas=None):
    """replicas: {ENDPOINT: (nFiles, sizeGB)}."""
    return {
        "name": name,
        "master": master,
        "nFiles": files,
        "sizeGB": size,
        "replicas": {endpoint: {"nFiles": n, "sizeGB": s} for endpoint, (n, s) in (replicas or {}).items()},
    }


def task_scenario(*nuclei: dict[str, Any], task=None, datasets=None, gdpconfig=None, seed: int = 0, **extra):
    """An atlas_prod_task scenario over the given nuclei (a satellite is always present and never a candidate)."""
    sites = {"SAT": {"role": "satellite", "state": "ACTIVE"}}
    endpoints: dict[str, Any] = {}
    stats: dict[str, Any] = {}
    for item in nuclei:
        sites[item["name"]] = item["site"]
        endpoints.update(item["endpoints"])
        stats[item["name"]] = item["stats"]
    scenario = {
        "plugin": "atlas_prod_task",
        "now": NOW,
        "seed": seed,
        "gdpconfig": gdpconfig or {},
        "task": {"jediTaskID": 1, "taskPriority": 500, "gshare": "MC 16", "ioIntensity": 100, **(task or {})},
        "datasets": datasets if datasets is not None else [dataset()],
        "sites": sites,
        "ddm_endpoints": endpoints,
        "nucleus_stats": stats,
    }
    scenario.update(extra)
    return copy.deepcopy(scenario)


def decide(scenario: dict[str, Any], **options) -> Decision:
    return run(parse_scenario(scenario), **options)


def queue(
    name: str,
    *,
    site: str = "SAT",
    status: str = "online",
    corecount: int = 8,
    capability: str = "",
    maxrss: float = 32000,
    minrss: float = 0,
    maxwdir: float = 160000,
    maxtime: float = 259200,
    mintime: float = 0,
    releases=("ANY",),
    stats: dict | None = None,
    read_lan: str | None = None,
    write_lan: str | None = None,
    **cric,
) -> dict[str, Any]:
    """A CRIC-like queue record with its statistics. Busy enough not to trip the pilot or inactivity rules."""
    endpoint = f"{site}_DATADISK"
    record = {
        "name": name,
        "atlas_site": site,
        "status": status,
        "type": "production",
        "corecount": corecount,
        "capability": capability,
        "maxrss": maxrss,
        "minrss": minrss,
        "maxwdir": maxwdir,
        "maxtime": maxtime,
        "mintime": mintime,
        "releases": list(releases),
        "wnconnectivity": "full#IPv4",
        "corepower": 10.0,
        "jobseed": "std",
        "astorages": {"read_lan": [read_lan or endpoint], "write_lan": [write_lan or endpoint]},
        **cric,
    }
    queue_stats = {
        "running": 100,
        "activated": 20,
        "assigned": 0,
        "starting": 5,
        "defined": 0,
        "transferring": 0,
        "nBatchJob": 100,
        "pilotsLast3h": 50,
        "hoursSinceLastStart": 0.1,
        "runningCores": 800,
        **(stats or {}),
    }
    return {"name": name, "record": record, "stats": queue_stats}


def job_scenario(
    *queues,
    task=None,
    jobs=None,
    datasets=None,
    gdpconfig=None,
    sites=None,
    endpoints=None,
    network=None,
    nucleus_stats=None,
    seed: int = 0,
    **extra,
):
    """An atlas_prod_job scenario: nucleus NUC (with a DATADISK) and satellite site SAT unless told otherwise."""
    site_names = {"NUC": {"role": "nucleus", "state": "ACTIVE"}, "SAT": {"role": "satellite", "state": "ACTIVE"}}
    site_names.update(sites or {})
    ddm = {
        name + "_DATADISK": {
            "site": name,
            "space_total": 1e6,
            "space_free": 5e5,
            "detailed_status": {"read_lan": "ON", "write_lan": "ON", "read_wan": "ON", "write_wan": "ON"},
        }
        for name in site_names
    }
    ddm.update(endpoints or {})
    scenario = {
        "plugin": "atlas_prod_job",
        "now": NOW,
        "seed": seed,
        "gdpconfig": gdpconfig or {},
        "task": {
            "jediTaskID": 7,
            "taskPriority": 500,
            "currentPriority": 500,
            "processingType": "simul",
            "gshare": "MC 16",
            "coreCount": 8,
            "ramCount": 2000,
            "ramUnit": "MBPerCore",
            "baseRamCount": 0,
            "cpuTime": 300,
            "cpuEfficiency": 90,
            "baseWalltime": 600,
            "ioIntensity": 100,
            "nucleus": "NUC",
            **(task or {}),
        },
        "jobs": {"nEvents": 1000, "inputSizeMB": 2000, "nFiles": 2, **(jobs or {})},
        "datasets": datasets if datasets is not None else [],
        "sites": site_names,
        "queues": {q["name"]: q["record"] for q in queues},
        "queue_stats": {q["name"]: q["stats"] for q in queues},
        "ddm_endpoints": ddm,
        "network": network
        if network is not None
        else [{"src": "SAT", "dst": "NUC", "closeness": 2, "mbps_1h": 150, "queued": 15}],
        "nucleus_stats": nucleus_stats or {"NUC": {"rw": 0, "outputQueued": 100}},
    }
    scenario.update(extra)
    return copy.deepcopy(scenario)


def anal_scenario(*queues, task=None, user_stats=None, **extra):
    """An atlas_anal_job scenario: queues of type analysis, a single-core user task without nucleus."""
    for item in queues:
        item["record"].setdefault("type", "analysis")
        if item["record"]["type"] == "production":
            item["record"]["type"] = "analysis"
    scenario = job_scenario(
        *queues,
        task={
            "nucleus": "",
            "coreCount": 1,
            "gshare": "User Analysis",
            "prodSourceLabel": "user",
            "userName": "jdoe",
            "taskPriority": 1000,
            "currentPriority": 1000,
            "ramCount": 2000,
            "ramUnit": "MB",
            **(task or {}),
        },
        network=[],
        nucleus_stats={},
        **extra,
    )
    scenario["plugin"] = "atlas_anal_job"
    scenario["user_stats"] = user_stats or {}
    return scenario
