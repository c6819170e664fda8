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
