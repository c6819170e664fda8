"""Synthetic scenarios of any size with a realistic mix of problems, for benchmarks and property tests.

Deterministic for a given seed. Plain data (the JSON a scenario file would hold), so they go through the same
parser as real input.
"""

from __future__ import annotations

import random
from typing import Any


def task_brokerage_scenario(
    *, nuclei: int, seed: int = 0, task_seed: int | None = None, n_datasets: int = 2
) -> dict[str, Any]:
    """A task-brokerage scenario over `nuclei` nuclei built from `seed`; `task_seed` varies only the task and its
    input data over the same grid (as the tasks of one brokerage cycle see one snapshot)."""
    grid = synthetic_grid(nuclei=nuclei, seed=seed)
    return {**grid, **synthetic_task(grid, seed=seed if task_seed is None else task_seed, n_datasets=n_datasets)}


def synthetic_grid(*, nuclei: int, seed: int = 0) -> dict[str, Any]:
    """Nuclei with about 10 % not ACTIVE, 5 % bare-only, 10 % with a transfer backlog, 5 % without output
    storage, 10 % short of space and 5 % with WAN writing off."""
    rng = random.Random(seed)
    sites: dict[str, Any] = {}
    endpoints: dict[str, Any] = {}
    stats: dict[str, Any] = {}
    for name in (f"NUC-{i:04d}" for i in range(nuclei)):
        roll = rng.random()
        sites[name] = {
            "role": "nucleus",
            "state": "DISABLED" if roll < 0.10 else "ACTIVE",
            "bareNucleus": "only" if 0.10 <= roll < 0.15 else ("allow" if 0.15 <= roll < 0.2 else ""),
        }
        total = rng.choice([2048000.0, 4096000.0, 8192000.0])
        free = round(total * rng.uniform(0.2, 0.6), 1)
        if rng.random() < 0.10:
            free = round(rng.uniform(1000, 50000), 1)  # short of space
        if rng.random() >= 0.05:  # 5 % have no storage for the output
            endpoints[f"{name}_DATADISK"] = {
                "site": name,
                "space_total": total,
                "space_free": free,
                "space_expired": round(free * rng.uniform(0, 0.2), 1),
                "detailed_status": {"read_wan": "ON", "write_wan": "OFF" if rng.random() < 0.05 else "ON"},
            }
        if rng.random() < 0.3:
            endpoints[f"{name}_DATATAPE"] = {
                "site": name,
                "is_tape": True,
                "space_total": total * 5,
                "space_free": total,
            }
        stats[name] = {
            "rw": float(rng.randint(1_000_000, 500_000_000)),
            "outputQueued": rng.randint(2100, 5000) if rng.random() < 0.10 else rng.randint(0, 1500),
        }
    sites["SAT-0000"] = {"role": "satellite", "state": "ACTIVE"}
    return {
        "plugin": "atlas_prod_task",
        "now": "2026-11-01T12:00:00Z",
        "sites": sites,
        "ddm_endpoints": endpoints,
        "nucleus_stats": stats,
    }


def synthetic_task(grid: dict[str, Any], *, seed: int, n_datasets: int = 2) -> dict[str, Any]:
    """A task and its input datasets, with replicas at about a third of the grid's nuclei."""
    rng = random.Random(seed)
    names = sorted(name for name, site in grid["sites"].items() if site["role"] == "nucleus")
    endpoints = grid["ddm_endpoints"]
    datasets = []
    for index in range(n_datasets):
        size = round(rng.uniform(50, 5000), 1)
        files = rng.randint(50, 2000)
        replicas = {}
        for name in rng.sample(names, max(1, len(names) // 3) if names else 0):
            endpoint = f"{name}_DATADISK" if rng.random() < 0.8 else f"{name}_DATATAPE"
            if endpoint in endpoints:
                share = rng.choice([1.0, 1.0, 0.5, 0.05])
                replicas[endpoint] = {"nFiles": int(files * share), "sizeGB": round(size * share, 1)}
        datasets.append(
            {
                "name": f"mc23.{seed}.{index}.EVNT",
                "master": index == 0,
                "nFiles": files,
                "sizeGB": size,
                "replicas": replicas,
            }
        )
    return {
        "seed": seed,
        "task": {
            "jediTaskID": 40000000 + seed,
            "taskPriority": rng.choice([300, 500, 700, 900]),
            "gshare": "MC 16",
            "processingType": "simul",
            "ioIntensity": rng.choice([50, 150, 400, 900]),
            "cpuTime": 300,
            "coreCount": 8,
            "t1Weight": 0,
        },
        "datasets": datasets,
    }
