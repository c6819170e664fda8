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


def job_brokerage_scenario(*, queues: int, seed: int = 0, task_seed: int | None = None) -> dict[str, Any]:
    """A job-brokerage scenario over `queues` queues at 20 nuclei and many satellites, with a realistic mix of
    problems: offline queues, full or blocked links, memory, walltime and core mismatches, releases, storage
    states, idle and busy queues. `task_seed` varies the task over the same grid."""
    rng = random.Random(seed)
    n_sites = max(2, queues // 4)
    site_names = [f"SITE-{i:04d}" for i in range(n_sites)]
    nuclei = site_names[: min(20, n_sites)]
    sites = {name: {"role": "nucleus" if name in nuclei else "satellite", "state": "ACTIVE"} for name in site_names}
    endpoints, network, records, stats, tags = {}, [], {}, {}, {}
    for name in site_names:
        status = {"read_lan": "ON", "write_lan": "ON", "read_wan": "ON", "write_wan": "ON"}
        if rng.random() < 0.03:
            status[rng.choice(list(status))] = "OFF"
        endpoints[f"{name}_DATADISK"] = {
            "site": name,
            "space_total": 2_000_000.0,
            "space_free": round(rng.choice([150.0, 90_000.0, 500_000.0]), 1),
            "detailed_status": status,
        }
        for nucleus in nuclei:
            if nucleus != name and rng.random() < 0.6:
                network.append(
                    {
                        "src": name,
                        "dst": nucleus,
                        "closeness": -1 if rng.random() < 0.02 else rng.randint(0, 11),
                        "mbps_1h": round(rng.uniform(1, 400), 1) if rng.random() < 0.7 else None,
                        "queued": rng.choice([0, 10, 40, 120, 160]),
                    }
                )
    releases = ["24.0.30", "23.0.1", "21.0.38"]
    for index in range(queues):
        name = f"Q{index:05d}"
        site = rng.choice(site_names)
        cores = rng.choice([1, 8, 8, 8])
        records[name] = {
            "atlas_site": site,
            "status": rng.choices(["online", "offline", "brokeroff", "paused"], [88, 5, 4, 3])[0],
            "type": "unified",
            "corecount": cores,
            "capability": "ucore" if rng.random() < 0.3 else "",
            "maxrss": cores * rng.choice([1500, 2000, 3000, 4000]),
            "minrss": 0,
            "maxwdir": cores * rng.choice([5000, 10000, 20000]),
            "maxtime": rng.choice([43200, 86400, 172800, 259200]),
            "mintime": 0,
            "pledgedcpu": rng.choice([-1, 0, 1000, 5000, 20000]),
            "releases": rng.choice([["ANY"], ["AUTO"], [rng.choice(releases)]]),
            "wnconnectivity": rng.choice(["full#IPv4", "full#IPv4", "full#IPv6", "http#IPv4"]),
            "jobseed": rng.choice(["std", "std", "all", "es", "eshigh"]),
            "corepower": rng.choice([8.0, 10.0, 12.0]),
            "transferringlimit": rng.choice([0, 0, 3000]),
            "astorages": {"read_lan": [f"{site}_DATADISK"], "write_lan": [f"{site}_DATADISK"]},
        }
        running = rng.choice([0, 5, 50, 300, 2000])
        stats[name] = {
            "running": running,
            "activated": rng.randint(0, 3 * running + 30),
            "assigned": rng.randint(0, 50),
            "starting": rng.randint(0, 20),
            "defined": rng.randint(0, 30),
            "transferring": rng.randint(0, 2500),
            "nBatchJob": rng.randint(0, 60),
            "pilotsLast3h": rng.choice([0, 10, 100, 100]),
            "hoursSinceLastStart": rng.choice([0.1, 0.5, 3.0]),
            "runningCores": running * cores,
        }
        tags[name] = {
            "cmtconfigs": ["x86_64-el9-gcc13-opt"],
            "containers": ["any"],
            "cvmfs": ["atlas"],
            "architectures": [{"type": "cpu", "arch": ["x86_64"]}],
            "tags": [],
        }
    task_rng = random.Random(seed if task_seed is None else task_seed)
    nucleus = task_rng.choice(nuclei)
    return {
        "plugin": "atlas_prod_job",
        "now": "2026-11-01T12:00:00Z",
        "seed": seed if task_seed is None else task_seed,
        "task": {
            "jediTaskID": 50000000 + (task_seed or 0),
            "taskPriority": 500,
            "currentPriority": task_rng.choice([300, 500, 900]),
            "processingType": "simul",
            "gshare": "MC 16",
            "coreCount": task_rng.choice([1, 8]),
            "ramCount": task_rng.choice([1000, 2000]),
            "ramUnit": "MBPerCore",
            "cpuTime": 300,
            "cpuEfficiency": 90,
            "baseWalltime": 600,
            "ioIntensity": 100,
            "nucleus": nucleus,
            "transUses": "Athena-24.0.30",
            "architecture": "x86_64-el9-gcc13-opt",
            "ipConnectivity": "full#IPv4",
        },
        "jobs": {"nEvents": task_rng.choice([200, 1000, 5000]), "inputSizeMB": 4000, "nFiles": 2},
        "datasets": [],
        "sites": sites,
        "queues": records,
        "queue_stats": stats,
        "sw_tags": tags,
        "ddm_endpoints": endpoints,
        "network": network,
        "nucleus_stats": {nucleus: {"rw": 0, "outputQueued": 500}},
    }


def analysis_brokerage_scenario(*, queues: int, seed: int = 0, task_seed: int | None = None) -> dict[str, Any]:
    """The job-brokerage grid seen by analysis brokerage: analysis queues with site classes, a user task with a
    class, and per-queue user numbers for the Analysis Stabilizer."""
    data = job_brokerage_scenario(queues=queues, seed=seed, task_seed=task_seed)
    rng = random.Random(seed * 7 + 1)
    user_queues = {}
    for name, record in data["queues"].items():
        record["type"] = rng.choice(["analysis", "analysis", "unified"])
        record["siteClass"] = rng.choice(["hi", "mid", "lo"])
        record["use_vp"] = rng.random() < 0.05
        stats = data["queue_stats"][name]
        stats["toRunningRate"] = rng.choice([0, 5, 40, 200])
        stats["nUsers"] = rng.randint(1, 50)
        user_queues[name] = {
            "userQueued": rng.choice([0, 0, 5, 80, 400]),
            "userRunning": rng.randint(0, 40),
            "taskFinished": rng.randint(0, 10),
            "taskFailed": rng.randint(0, 6),
            "taskClosed": rng.randint(0, 3),
        }
    task_rng = random.Random(seed if task_seed is None else task_seed)
    data["plugin"] = "atlas_anal_job"
    data["task"].update(
        nucleus="",
        prodSourceLabel="user",
        userName="user.jdoe",
        gshare="User Analysis",
        coreCount=1,
        taskPriority=task_rng.choice([900, 1000, 2000]),
        taskClass=task_rng.choice(["S", "A", "B", "C"]),
        ramUnit="MB",
        ipConnectivity="",
    )
    data["jobs"]["nJobs"] = task_rng.choice([1, 10, 100])
    data["nucleus_stats"] = {}
    data["user_stats"] = {
        "user": {"running": 500, "queued": 300},
        "gshareUsage": {"User Analysis": 0.8},
        "queues": user_queues,
    }
    return data
