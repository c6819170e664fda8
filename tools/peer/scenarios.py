"""Randomized scenarios for the differential test against the real PanDA brokers.

Small grids (a few sites, up to a dozen queues) where every rule that differs between the seeds and panda-server
1.0.4 has a fair chance to decide: queues with "test" in the name, ANY / AUTO / plain release lists, CPU
architectures, unified (ucore) queues split into pseudo-queues, bootstrap figures (nBatchJob, numSlots, empty
queues), high priorities and scouts, t1Weight 0 / −1 / positive, IO-intensive tasks, network links with some of
their throughput figures missing. Deterministic per seed; plain data in our scenario format.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from .situations import anal_situations, job_situations, task_situations

RELEASE = "24.0.30"
PLATFORM = "x86_64-el9-gcc13-opt"
ARCHITECTURES = (PLATFORM, PLATFORM, f"{PLATFORM}#x86_64")
NOW = "2026-11-01T12:00:00Z"
FAIRSHARE_POLICIES = (
    "type=evgen:100%,type=simul:100%,type=any:0%",
    "type=evgensimul:100%",
    "type=simul:0%",
    "type=any:0%,type=evgen:100%",
    "priority>400:0%",
    "gshare=MC 16:0%",
)


def _pick(rng: random.Random, mild: bool, good: Any, options: list) -> Any:
    """In a mild scenario the good value most of the time, else any of `options`: mild scenarios keep queues, so
    that the weights and the rules of the weight loop are compared too, not only the filters that empty a grid."""
    if mild and rng.random() < 0.85:
        return good
    return rng.choice(options)


def _sw_tags(rng: random.Random, mild: bool = False) -> dict[str, Any]:
    roll = rng.random()
    tags = {"cmtconfigs": [PLATFORM], "containers": [], "cvmfs": ["atlas"], "architectures": [], "tags": []}
    if roll < 0.5:
        tags["containers"] = ["any"]
    elif roll < (0.97 if mild else 0.9):
        tags["tags"] = [
            {"cmtconfig": PLATFORM, "project": "AthSimulation", "release": RELEASE, "container_name": "", "sources": []}
        ]
        tags["cvmfs"] = []
    else:
        tags["cvmfs"] = []  # publishes nothing the task needs
    if rng.random() < 0.9:
        arch = _pick(rng, mild, "x86_64", ["x86_64"] * 5 + ["aarch64", "excl", "any"])
        tags["architectures"] = [{"type": "cpu", "arch": [arch] if arch != "excl" else ["x86_64", "excl"]}]
    return tags


def _add_queue(
    rng: random.Random,
    prefix: str,
    site: str,
    task_cores: int,
    queues: dict,
    sw_tags: dict,
    stats: dict,
    mild: bool = False,
) -> str:
    """One random production or unified queue at `site` (its CRIC record, software tags, statistics); its name
    is `prefix` with now and then a "test" suffix. A mild queue passes most rules (_pick)."""
    name = prefix + rng.choice(["", "", "", "", "_TEST", "_test"])
    unified = rng.random() < 0.3
    cores = task_cores if rng.random() < (0.9 if mild else 0.75) else rng.choice([1, 8])
    if unified:
        cores = rng.choice([1, 8, 8])
    releases = _pick(rng, mild, ["AUTO"], [["AUTO"]] * 12 + [["ANY"], ["ANY"], [RELEASE], ["23.0.1"]])
    queues[name] = {
        "atlas_site": site,
        "status": _pick(rng, mild, "online", ["online"] * 12 + ["brokeroff", "offline", "test"]),
        "type": "unified" if unified else "production",
        "capability": "ucore" if unified else "",
        "corecount": cores,
        "maxrss": _pick(rng, mild, 4000 * cores, [0, 2000 * cores, 4000 * cores, 4000 * cores, 32000]),
        "minrss": 0,
        "maxwdir": _pick(rng, mild, 100000, [0, 20000, 100000, 100000]),
        "maxtime": _pick(rng, mild, 3600 * 96, [0, 3600 * 12, 90000, 3600 * 48, 3600 * 96, 3600 * 96]),
        "mintime": 0,
        "releases": releases,
        "pledgedcpu": _pick(rng, mild, 0, [0] * 6 + [-1]),
        "wnconnectivity": "full#IPv4",
        "corepower": rng.choice([10.0, 10.0, 12.5]),
        "jobseed": "std",
        "transferringlimit": 0,
        "direct_access_lan": False,
        "cloud": "WORLD",
        "astorages": {"read_lan": [f"{site}_DATADISK"], "write_lan": [f"{site}_DATADISK"]},
        "fairsharepolicy": _pick(rng, mild, "", [""] * 14 + list(FAIRSHARE_POLICIES)),
    }
    if "AUTO" in releases:
        sw_tags[name] = _sw_tags(rng, mild)
    if rng.random() < (0.97 if mild else 0.9):
        empty = rng.random() < 0.15
        running = 0 if empty else rng.choice([0, 3, 15, 40, 100, 400])
        queue_stats = {
            "running": running,
            "activated": 0 if empty else rng.choice([0, 5, 30, 90, 250]),
            "assigned": 0 if empty else rng.choice([0, 0, 10, 60]),
            "starting": 0 if empty else rng.choice([0, 2, 20]),
            "defined": 0 if empty else rng.choice([0, 0, 5, 100]),
            "transferring": rng.choice([0, 0, 0, 0, 0, 50, 50, 3000]),
            "pilotsLast3h": _pick(rng, mild, 200, [0, 5, 50, 50, 200, 200, 200, 200, 50, 50]),
            "hoursSinceLastStart": rng.choice([0.5, 0.5, 0.5, 0.5, 3.0]),
        }
        if rng.random() < 0.3:
            queue_stats["nBatchJob"] = rng.choice([5, 30, 200])
        if rng.random() < 0.2:
            queue_stats["numSlots"] = rng.choice([0, 16, 400])
        stats[name] = queue_stats
    return name


def job_scenario(seed: int) -> dict[str, Any]:
    """One production job-brokerage scenario (plugin atlas_prod_job)."""
    rng = random.Random(f"peer-job:{seed}")
    n_sites = rng.randint(2, 5)
    sites = {f"SITE{i}": {"role": "nucleus" if i == 0 or rng.random() < 0.3 else "satellite"} for i in range(n_sites)}
    nucleus = "SITE0"
    endpoints: dict[str, Any] = {}
    for site in sites:
        total = rng.choice([500.0, 2000.0, 10000.0])
        endpoints[f"{site}_DATADISK"] = {
            "site": site,
            "space_total": total,
            "space_free": rng.choice([150.0] + [total * 0.5] * 7),
            "space_expired": rng.choice([0.0, 0.0, 100.0]),
        }
    task_cores = rng.choice([1, 1, 8])
    queues: dict[str, Any] = {}
    stats: dict[str, Any] = {}
    sw_tags: dict[str, Any] = {}
    # the nucleus usually has queues of its own (the real broker knows a nucleus only through them); half the
    # scenarios are mild, their queues passing most rules
    nucleus_has_queue = rng.random() < 0.9
    mild = rng.random() < 0.5
    for number in range(rng.randint(3, 24 if rng.random() < 0.3 else 14)):
        site = nucleus if number == 0 and nucleus_has_queue else rng.choice(list(sites))
        _add_queue(rng, f"Q{number}_{site}", site, task_cores, queues, sw_tags, stats, mild)
    network = []
    for site in sites:
        if site == nucleus or rng.random() < 0.15:
            continue
        link = {
            "src": site,
            "dst": nucleus,
            "closeness": rng.choice([0, 3, 7, 11, -1] if rng.random() < 0.1 else [2, 5, 8]),
        }
        link["queued"] = rng.choice([0, 20, 100, 200])
        for key in ("mbps_1w", "mbps_1d", "mbps_1h"):
            if rng.random() < 0.6:
                link[key] = rng.choice([0.5, 5.0, 30.0, 80.0, 150.0, 250.0])
        network.append(link)
    cores = task_cores
    priority = rng.choice([100, 150, 151, 300, 500, 800, 900, 1000])
    n_files = rng.choice([1, 2, 5])
    file_gb = rng.choice([0.5, 2.0, 4.0])
    dataset_files = rng.choice([10, 50, 200])
    replicas: dict[str, Any] = {}
    holders = rng.sample(list(sites), rng.randint(1, len(sites)))
    for position, site in enumerate(holders):
        found = dataset_files if position == 0 else rng.choice([dataset_files, dataset_files // 2, 1])
        replicas[f"{site}_DATADISK"] = {"nFiles": found, "sizeGB": round(found * file_gb, 3)}
    task = {
        "jediTaskID": 1000 + seed,
        "taskPriority": priority,
        "currentPriority": priority,
        "processingType": rng.choice(["simul", "evgen", "reprocessing", "urgent"]),
        "prodSourceLabel": "managed",
        "gshare": "MC 16",
        "coreCount": cores,
        "ramCount": rng.choice([1000, 1800, 2500]),
        "ramUnit": "MBPerCore",
        "baseRamCount": rng.choice([0, 0, 500]),
        "outDiskCount": rng.choice([0, 100, 500]),
        "outDiskUnit": "kBPerEvent",
        "workDiskCount": rng.choice([None, 1000]),
        "cpuTime": rng.choice([None, 0, 5, 5, 30, 30, 30, 300]),
        "cpuEfficiency": 90,
        "baseWalltime": 600,
        "ioIntensity": rng.choice([None, None, 100, 400, 500, 800]),
        "architecture": rng.choice(ARCHITECTURES),
        "transUses": f"AthSimulation-{RELEASE}",
        "transHome": f"AthSimulation-{RELEASE}",
        "nucleus": nucleus,
        "t1Weight": rng.choice([None, None, 0, -1, 3]),
    }
    task = {k: v for k, v in task.items() if v is not None}
    jobs = {
        "nFiles": n_files,
        "nEvents": n_files * rng.choice([100, 1000]),
        "inputSizeMB": n_files * file_gb * 1024,
        "isScout": rng.random() < 0.12,
    }
    # now and then an analysis queue, which production jobs never use (drawn apart, so that the rest of the
    # scenario stays what it was)
    extra = random.Random(f"peer-job-analysis:{seed}")
    if extra.random() < 0.2:
        name = _add_queue(extra, "ANALY", extra.choice(list(sites)), task_cores, queues, sw_tags, stats)
        queues[name].update(type="analysis", capability="")
    # now and then tape copies at some sites, read by their queues (drawn apart as well)
    tape = random.Random(f"peer-job-tape:{seed}")
    if tape.random() < 0.35:
        for site in tape.sample(list(sites), tape.randint(1, len(sites))):
            endpoint = f"{site}_DATATAPE"
            endpoints[endpoint] = {"site": site, "is_tape": True, "space_total": 1e7, "space_free": 5e6}
            found = tape.choice([dataset_files, dataset_files, dataset_files // 2])
            replicas[endpoint] = {"nFiles": found, "sizeGB": round(found * file_gb, 3)}
            for record in queues.values():
                if record["atlas_site"] == site:
                    record["astorages"]["read_lan"].append(endpoint)
        if tape.random() < 0.6:
            task["ioIntensity"] = 800
    scenario = {
        "plugin": "atlas_prod_job",
        "now": NOW,
        "seed": seed,
        "task": task,
        "jobs": jobs,
        "datasets": [
            {
                "name": f"mc23.{seed}.EVNT",
                "master": True,
                "nFiles": dataset_files,
                "sizeGB": dataset_files * file_gb,
                "replicas": replicas,
            }
        ],
        "sites": sites,
        "queues": queues,
        "sw_tags": sw_tags,
        "ddm_endpoints": endpoints,
        "network": network,
        "queue_stats": stats,
    }
    job_situations(seed, scenario)
    return scenario


def task_scenario(seed: int) -> dict[str, Any]:
    """One production task-brokerage scenario (plugin atlas_prod_task): nuclei with disk (and sometimes tape)
    storage of every size around the thresholds, remaining work around the 50 offset, WAN activities off now and
    then, input complete, partial, on tape only or nowhere."""
    rng = random.Random(f"peer-task:{seed}")
    sites: dict[str, Any] = {}
    endpoints: dict[str, Any] = {}
    stats: dict[str, Any] = {}
    n_nuclei = rng.randint(2, 6)
    for number in range(n_nuclei):
        name = f"NUC{number}"
        sites[name] = {"role": "nucleus", "state": "ACTIVE"}
        stats[name] = {
            "rw": rng.choice([0, 20, 49, 50, 51, 300, 5000, 200_000]),
            "outputQueued": rng.choice([0, 0, 100, 1999, 2000, 2001, 5000]),
        }
        if rng.random() < 0.04:
            continue  # a nucleus without disk storage (the real code raises on it)
        total = rng.choice([200_000.0, 1_000_000.0, 5_000_000.0])
        free = rng.choice([500.0, 102_400.0, 150_000.0, total * 0.3, total * 0.6, total * 0.6])
        status = {"read_wan": "ON", "write_wan": "ON"}
        if rng.random() < 0.1:
            status[rng.choice(["read_wan", "write_wan"])] = "OFF"
        endpoints[f"{name}_DATADISK"] = {
            "site": name,
            "space_total": total,
            "space_free": min(free, total),
            "space_expired": rng.choice([0.0, 0.0, 20_000.0]),
            "detailed_status": status,
        }
        if rng.random() < 0.3:
            endpoints[f"{name}_DATATAPE"] = {"site": name, "is_tape": True, "space_total": 1e7, "space_free": 5e6}
    sites["SAT0"] = {"role": "satellite", "state": "ACTIVE"}
    endpoints["SAT0_DATADISK"] = {"site": "SAT0", "space_total": 1e6, "space_free": 5e5}
    datasets = []
    for number in range(1 if rng.random() < 0.7 else 2):
        n_files = rng.choice([10, 50, 200, 1000])
        size = rng.choice([0.5, 5.0, 50.0, 2000.0, 20_000.0])
        replicas: dict[str, Any] = {}
        for name in list(endpoints):
            roll = rng.random()
            if roll < 0.25:
                replicas[name] = {"nFiles": n_files, "sizeGB": size}
            elif roll < 0.35:
                found = rng.choice([1, n_files // 20, n_files // 2])
                replicas[name] = {"nFiles": found, "sizeGB": round(size * found / n_files, 6)}
        kind = "EVNT" if number == 0 else "HITS"
        datasets.append(
            {
                "name": f"mc23.{seed}.{kind}",
                "master": number == 0,
                "nFiles": n_files,
                "sizeGB": size,
                "replicas": replicas,
            }
        )
    priority = rng.choice([300, 500, 799, 800, 900])
    task = {
        "jediTaskID": 2000 + seed,
        "taskPriority": priority,
        "currentPriority": priority,
        "processingType": "simul",
        "prodSourceLabel": "managed",
        "gshare": "MC 16",
        "coreCount": 1,
        "ramCount": 1000,
        "ramUnit": "MBPerCore",
        "outputEndpointType": "DATADISK",
        "ioIntensity": rng.choice([None, None, 100, 200, 300, 1000]),
        "t1Weight": rng.choice([None, None, None, -1]),
        "cpuTime": 10,
        "cpuEfficiency": 90,
        "baseWalltime": 600,
        "transUses": f"AthSimulation-{RELEASE}",
        "transHome": f"AthSimulation-{RELEASE}",
        "architecture": PLATFORM,
        "inputPreStaging": rng.random() < 0.1 or None,
        "taskBrokerOnMaster": (len(datasets) > 1 and rng.random() < 0.5) or None,
    }
    scenario = {
        "plugin": "atlas_prod_task",
        "now": NOW,
        "seed": seed,
        "task": {k: v for k, v in task.items() if v is not None},
        "jobs": {"nFiles": 1, "nEvents": 100, "inputSizeMB": 1000},
        "datasets": datasets,
        "sites": sites,
        "ddm_endpoints": endpoints,
        "nucleus_stats": stats,
        "network": [],
    }
    _nucleus_queues(random.Random(f"peer-task-queues:{seed}"), scenario)
    task_situations(seed, scenario)
    return scenario


def _nucleus_queues(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Most task scenarios get the nuclei's production queues, for the job check (AtlasProdTaskBroker runs job
    brokerage over them): up to three per nucleus, now and then none; each reads every endpoint of its site and
    writes to its disk ones, as a nucleus's storage is what its queues use in the real SiteMapper."""
    if rng.random() < 0.25:
        return
    task, endpoints = scenario["task"], scenario["ddm_endpoints"]
    task["coreCount"] = rng.choice([1, 1, 8])
    scenario["jobs"]["inputSizeMB"] = rng.choice([1000, 1000, 5000, 50_000, 200_000])
    queues: dict[str, Any] = {}
    sw_tags: dict[str, Any] = {}
    stats: dict[str, Any] = {}
    for site, record in scenario["sites"].items():
        if record["role"] != "nucleus":
            continue
        disk = sorted(name for name, e in endpoints.items() if e["site"] == site and not e.get("is_tape"))
        tape = sorted(name for name, e in endpoints.items() if e["site"] == site and e.get("is_tape"))
        for number in range(rng.choice([0, 1, 1, 2, 3])):
            name = _add_queue(rng, f"{site}_Q{number}", site, task["coreCount"], queues, sw_tags, stats)
            queues[name]["astorages"] = {"read_lan": disk + tape, "write_lan": disk}
    scenario.update(queues=queues, sw_tags=sw_tags, queue_stats=stats)


def anal_scenario(seed: int) -> dict[str, Any]:
    """One analysis job-brokerage scenario (plugin atlas_anal_job): analysis and unified queues with site
    classes, the user's jobs per queue, the task's finished, failed and closed jobs per queue, queues long or
    short against their running jobs, input at some queues only."""
    rng = random.Random(f"peer-anal:{seed}")
    sites = {f"SITE{i}": {"role": "satellite"} for i in range(rng.randint(2, 4))}
    endpoints = {
        f"{site}_DATADISK": {"site": site, "space_total": 10000.0, "space_free": rng.choice([5000.0, 5000.0, 100.0])}
        for site in sites
    }
    queues: dict[str, Any] = {}
    stats: dict[str, Any] = {}
    sw_tags: dict[str, Any] = {}
    per_queue: dict[str, Any] = {}
    # half the scenarios are mild: their queues pass most rules, so that weights and the temporary rules decide
    mild = rng.random() < 0.5
    for number in range(rng.randint(3, 14 if mild else 10)):
        site = rng.choice(list(sites))
        name = f"ANALY_{number}_{site}"
        unified = rng.random() < 0.3
        queues[name] = {
            "atlas_site": site,
            "status": _pick(rng, mild, "online", ["online"] * 10 + ["brokeroff", "offline"]),
            "type": "unified" if unified else "analysis",
            "capability": "ucore" if unified else "",
            "corecount": 8 if unified else 1,
            "maxrss": _pick(rng, mild, 4000, [0, 2000, 4000, 16000]) * (8 if unified else 1),
            "minrss": 0,
            "maxwdir": _pick(rng, mild, 100000, [0, 100000]),
            "maxtime": _pick(rng, mild, 3600 * 96, [0, 3600 * 48, 3600 * 96]),
            "mintime": 0,
            "releases": ["AUTO"] if rng.random() < 0.5 else ["ANY"],
            "pledgedcpu": 0,
            "wnconnectivity": "full#IPv4",
            "corepower": 10.0,
            "jobseed": "std",
            "direct_access_lan": False,
            "cloud": "WORLD",
            "siteClass": rng.choice(["hi", "mid", "lo", None]),
            "astorages": {"read_lan": [f"{site}_DATADISK"], "write_lan": [f"{site}_DATADISK"]},
        }
        queues[name] = {k: v for k, v in queues[name].items() if v is not None}
        if "AUTO" in queues[name]["releases"]:
            sw_tags[name] = _sw_tags(rng, mild)
            if mild and rng.random() < 0.7:
                sw_tags[name]["containers"] = ["any"]
            if rng.random() < 0.8:  # analysis reads the AtlasOffline release (AtlasAnalJobBroker)
                for tag in sw_tags[name]["tags"]:
                    tag["project"] = "AtlasOffline"
        running = rng.choice([0, 5, 40, 300])
        stats[name] = {
            "running": running,
            "activated": rng.choice([0, 5, 30, 200, 800]),
            "assigned": rng.choice([0, 0, 10]),
            "starting": rng.choice([0, 2, 20]),
            "defined": rng.choice([0, 0, 5]),
            "transferring": 0,
            "pilotsLast3h": _pick(rng, mild, 200, [0, 50, 50, 200]),
            "hoursSinceLastStart": 0.5,
            "nUsers": rng.choice([1, 2, 5, 20]),
        }
        if rng.random() < 0.5:
            stats[name]["toRunningRate"] = rng.choice([0.0, 0.5, 5.0])
        if rng.random() < 0.6:
            per_queue[name] = {
                "userQueued": rng.choice([0, 5, 40, 300]),
                "userRunning": rng.choice([0, 5, 40]),
                "taskFinished": rng.choice([0, 0, 1, 10]),
                "taskFailed": rng.choice([0, 0, 2, 5]),
                "taskClosed": rng.choice([0] * 8 + [1, 3]),
            }
    n_files = rng.choice([2, 10])
    replicas = {}
    for endpoint in rng.sample(list(endpoints), rng.randint(0, len(endpoints))):
        found = n_files if rng.random() < 0.8 else n_files // 2
        replicas[endpoint] = {"nFiles": found, "sizeGB": found * 2.0}
    task = {
        "jediTaskID": 3000 + seed,
        "taskPriority": rng.choice([1000, 1000, 2000]),
        "currentPriority": rng.choice([900, 1000, 1000, 2000]),
        "processingType": "panda-client",
        "prodSourceLabel": "user",
        "gshare": "User Analysis",
        "userName": "jdoe",
        "taskClass": rng.choice(["S", "A", "B", "C", None]),
        "coreCount": 1,
        "ramCount": rng.choice([1000, 2000, 3000]),
        "ramUnit": "MB",
        "baseRamCount": rng.choice([0, 0, 500]),
        "ioIntensity": rng.choice([None, 100, 1000]),
        "cpuTime": rng.choice([None, 5]),
        "cpuEfficiency": 90,
        "baseWalltime": 0,
        "architecture": rng.choice(ARCHITECTURES),
        "transUses": f"Atlas-{RELEASE}",
        # as JEDI stores an analysis task's: the transform with the project and release, now and then bare
        "transHome": rng.choice([f"AnalysisTransforms-AthAnalysis_{RELEASE}"] * 3 + ["AnalysisTransforms"]),
    }
    user_stats = {
        "user": {
            "running": rng.choice([0, 100]),
            "queued": rng.choice([0, 50]),
            "runningCores": 100,
            "queuedCores": 50,
        },
        "gshareUsage": {"User Analysis": rng.choice([0.5, 0.5, 0.92, 0.97])},
        "queues": per_queue,
    }
    if rng.random() < 0.5:
        user_stats["user"]["runningSlotsHiSites"] = rng.choice([0, 500, 2000])
    if rng.random() < 0.3:
        user_stats["hoursSinceLastSuccess"] = rng.choice([1, 30])
    # now and then virtual-placement queues, and a task that avoids them (drawn apart: the rest stays as it was)
    extra = random.Random(f"peer-anal-vp:{seed}")
    if extra.random() < 0.3:
        for name in extra.sample(sorted(queues), extra.randint(1, len(queues))):
            queues[name]["use_vp"] = True
        if extra.random() < 0.4:
            task["avoidVP"] = True
    scenario = {
        "plugin": "atlas_anal_job",
        "now": NOW,
        "seed": seed,
        "task": {k: v for k, v in task.items() if v is not None},
        # one file per job: the real broker estimates the job set as one job per input file
        "jobs": {"nFiles": 1, "nEvents": 100, "inputSizeMB": 2048, "nJobs": n_files},
        "datasets": [
            {
                "name": f"user.jdoe.{seed}",
                "master": True,
                "nFiles": n_files,
                "sizeGB": n_files * 2.0,
                "replicas": replicas,
            }
        ],
        "sites": sites,
        "queues": queues,
        "sw_tags": sw_tags,
        "ddm_endpoints": endpoints,
        "network": [],
        "queue_stats": stats,
        "user_stats": user_stats,
    }
    anal_situations(seed, scenario)
    return scenario


def widened(scenario: dict[str, Any], queues: int = 1000) -> dict[str, Any]:
    """The scenario with its queues copied, each copy at the same site with its own statistics, software tags and
    user numbers, until there are `queues` of them (the 1,000-queue comparison of `bench peer`): the same rules
    decide, over a grid of a real one's size. Copy n runs n more jobs than its original: equal weights past the
    ten candidates kept would leave the choice to the order of the scan, which the analysis broker shuffles."""
    wide = copy.deepcopy(scenario)
    originals = list(scenario.get("queues", {}))
    per_queue = (scenario.get("user_stats") or {}).get("queues") or {}
    number = 0
    while originals and len(wide["queues"]) < queues:
        number += 1
        for name in originals:
            if len(wide["queues"]) >= queues:
                break
            twin = f"{name}_C{number}"
            wide["queues"][twin] = copy.deepcopy(scenario["queues"][name])
            for key in ("sw_tags", "queue_stats"):
                if name in scenario.get(key, {}):
                    wide[key][twin] = copy.deepcopy(scenario[key][name])
            if twin in wide.get("queue_stats", {}):
                wide["queue_stats"][twin]["running"] = wide["queue_stats"][twin].get("running", 0) + number
            if name in per_queue:
                wide["user_stats"]["queues"][twin] = copy.deepcopy(per_queue[name])
    return wide
