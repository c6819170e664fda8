"""Scenarios shaped like the real grid, beside the tidy ones of scenarios.py (issue 49: "a differential test is only
as good as the inputs its generator makes").

Each starts from a tidy scenario of scenarios.py and reshapes it the way CRIC and JEDI write their records:

- queue records as CRIC gives them (../shared/fixtures/cric/queuedata_CERN.json and the fields panda-server 1.0.4's
  SiteSpec, EntityModule.getSiteInfo and SiteMapper read): corepower 0 or null, maxrss / maxwdir / maxtime null,
  catchall text with the keys the real code reads (useJumboJobs, use_only_local_data, per_core_attr,
  allow_no_pilot, bareNucleus) among keys it ignores, `params` with max_io_intensity or catchall keys, now and then
  an empty cloud;
- bigger grids for job brokerage: 23 to 300 queues over 14 to 110 sites, several nuclei, satellites, and diskless
  sites whose queues write to a nucleus's storage;
- values exactly at the limits: a work directory equal to the job's need, a maxrss equal to the job's memory;
- tasks as JEDI leaves them: no ramCount, coreCount 0, output per MB of input (outDiskUnit kB), a work directory in
  GB, event service with consumers and attempts, DBRelease secondaries, tape-only input.

Deterministic per seed (a random stream apart from the tidy generator's); plain data in our scenario format.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from .scenarios import _add_queue, anal_scenario, job_scenario, task_scenario

# catchall items real queues carry that no broker reads (from CRIC records), and those the brokers read
IGNORED_CATCHALL = ("jobseed=all", "es_to_zip", "zip_time_gap=7200", "maxDiskPerCore=4000", "jobChunkSize=200")
READ_CATCHALL = ("useJumboJobs", "use_only_local_data", "per_core_attr", "allow_no_pilot", "bareNucleus=only")
MB = 1024**2


def _catchall(rng: random.Random) -> str:
    items = rng.sample(IGNORED_CATCHALL, rng.randint(0, 2))
    if rng.random() < 0.35:
        items.append(rng.choice(READ_CATCHALL))
    rng.shuffle(items)
    return ",".join(items)


def _reshape_queue(rng: random.Random, record: dict[str, Any], *, production: bool) -> None:
    """One queue record reshaped as CRIC writes it (in place)."""
    roll = rng.random()
    if roll < 0.08:
        record["corepower"] = None
    elif roll < 0.14:
        record["corepower"] = 0
    elif roll < 0.4:
        record["corepower"] = rng.choice([9.3, 11.72, 13.0, 15.2])
    # CRIC leaves these null (queuedata_CERN.json: pledgedcpu, transferringlimit, maxdiskio); maxwdir null is read
    # as 0 (entity_module.py); the real code would raise on a null maxtime or maxrss, which CRIC never sends
    for key in ("maxwdir", "pledgedcpu", "transferringlimit", "maxdiskio"):
        if rng.random() < 0.1:
            record[key] = None
    record["catchall"] = _catchall(rng)
    if rng.random() < 0.12:
        params: dict[str, Any] = {}
        if rng.random() < 0.6:
            params["max_io_intensity"] = rng.choice([100, 300, 500, 800])
        if rng.random() < 0.4:
            params[rng.choice(("use_only_local_data", "useJumboJobs", "allow_no_pilot"))] = True
        params["pilot_manager"] = "Harvester"  # a key no broker reads
        record["params"] = params
    if production and rng.random() < 0.03:
        record["cloud"] = ""
    elif rng.random() < 0.3:
        record["cloud"] = rng.choice(["WORLD", "DE", "US", "CA", "FR"])
    if "per_core_attr" in record["catchall"] and (record.get("corecount") or 0) > 1:
        for key in ("maxrss", "maxwdir"):  # CRIC gives them per core on such a queue
            if record.get(key):
                record[key] = record[key] // record["corecount"]
    if production and rng.random() < 0.04:
        record["status"] = "standby"  # online to the real production broker
    if rng.random() < 0.2:
        record["direct_access_lan"] = True
    if rng.random() < 0.05:
        record["maxinputsize"] = -1


def _reshape_queues(rng: random.Random, scenario: dict[str, Any], production) -> None:
    """Every queue record reshaped (`production`: whether a record runs production, for the empty cloud)."""
    for record in (scenario.get("queues") or {}).values():
        _reshape_queue(rng, record, production=production(record))


def _reshape_task(rng: random.Random, task: dict[str, Any], jobs: dict[str, Any], *, analysis: bool) -> None:
    """A task (and its job set) as JEDI leaves them (in place)."""
    roll = rng.random()
    if roll < 0.12:
        task.pop("ramCount", None)
    elif roll < 0.18:
        task["ramCount"] = 0
    if not analysis and rng.random() < 0.12:
        task["coreCount"] = 0
    roll = rng.random()
    if roll < 0.45:
        task["outDiskUnit"] = "kB"  # kB of output per MB of input
        task["outDiskCount"] = rng.choice([0, 10, 100, 500, 2000])
    elif roll < 0.6:
        task["outDiskUnit"] = rng.choice(["MB", "MBPerEvent"])
        task["outDiskCount"] = rng.choice([0, 1, 2])
    if rng.random() < 0.3:
        task["workDiskCount"] = rng.choice([0, 1, 2, 5, 1000])
        task["workDiskUnit"] = "GB" if task["workDiskCount"] < 100 else "MB"
    if not analysis and rng.random() < 0.1:
        task["eventService"] = True
        task["nEsConsumers"] = rng.choice([1, 2, 4])
        if rng.random() < 0.5:
            task["maxAttemptEsJob"] = rng.choice([0, 2, 5])
        if rng.random() < 0.5:  # a task with jumbo jobs keeps the useJumboJobs queues for them
            task["nJumboJobs"] = rng.choice([1, 2])
    if rng.random() < 0.15:
        task["cpuTime"] = rng.choice([0.5, 120, 900])
        jobs["nEvents"] = rng.choice([50, 1000, 5000])


def _disk_need_mb(task: dict[str, Any], jobs: dict[str, Any], direct: bool) -> int:
    """The job's scratch need as panda-server 1.0.4 reckons it (AtlasProdJobBroker.py 929-938), to set a queue's
    maxwdir exactly at it."""
    unit = task.get("outDiskUnit") or "kB"
    per_unit = (task.get("outDiskCount") or 0) * {"GB": 1024**3, "MB": MB, "kB": 1024}.get(unit[:2], 1)
    size_mb = float(jobs.get("inputSizeMB") or 0)
    scale = (jobs.get("nEvents") or 0) if "PerEvent" in unit else (size_mb or max(jobs.get("nFiles") or 1, 1))
    output = max(per_unit * scale, 1500 * MB)
    work = (
        0
        if task.get("workDiskCount") is None
        else task["workDiskCount"] * {"GB": 1024**3, "MB": MB}.get(task.get("workDiskUnit", "MB"), 1) + 300 * MB
    )
    return int((output + work + (0 if direct else round(size_mb * MB))) // MB)


def _at_limits(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Some queues' work directory and memory exactly at what the job needs."""
    task, jobs = scenario["task"], scenario.get("jobs") or {}
    for record in scenario.get("queues", {}).values():
        if rng.random() < 0.15 and (record.get("corecount") or 1) == 1 and "per_core_attr" not in record["catchall"]:
            record["maxwdir"] = _disk_need_mb(task, jobs, bool(record.get("direct_access_lan")))
        elif rng.random() < 0.15 and record.get("capability") == "ucore" and "per_core_attr" not in record["catchall"]:
            # a unified queue whose work directory per core is the job's need, or a MB short of it
            cores = record.get("corecount") or 1
            need = _disk_need_mb(task, jobs, bool(record.get("direct_access_lan")))
            record["maxwdir"] = need * cores - rng.choice([0, 0, 1])
        if rng.random() < 0.1 and task.get("ramCount") and (record.get("corecount") or 1) == 1:
            base = task.get("baseRamCount") or 0
            record["maxrss"] = int((task["ramCount"] + base) * 0.9)


def _bigger_grid(rng: random.Random, scenario: dict[str, Any]) -> None:
    """More sites and queues: satellites, diskless sites writing to a nucleus's storage, a second nucleus."""
    sites, queues, endpoints = scenario["sites"], scenario["queues"], scenario["ddm_endpoints"]
    stats, sw_tags = scenario["queue_stats"], scenario["sw_tags"]
    cores = scenario["task"].get("coreCount") or 1
    n_sites = rng.randint(14, 40 if rng.random() < 0.8 else 110)
    nuclei = [name for name, site in sites.items() if site.get("role") == "nucleus"]
    for number in range(len(sites), n_sites):
        name = f"SITE{number}"
        diskless = rng.random() < 0.15
        sites[name] = {"role": "nucleus" if rng.random() < 0.1 else "satellite"}
        if rng.random() < 0.05:
            sites[name]["bareNucleus"] = rng.choice(["only", "allow"])
        if not diskless:
            total = rng.choice([500.0, 2000.0, 10000.0, 200_000.0])
            endpoints[f"{name}_DATADISK"] = {
                "site": name,
                "space_total": total,
                "space_free": rng.choice([150.0, 199.0, 200.0, total * 0.5]),
                "space_expired": rng.choice([0.0, 0.0, 1.0]),
            }
        for q in range(rng.choice([1, 1, 2, 3, 5])):
            queue = _add_queue(rng, f"{name}_Q{q}", name, cores, queues, sw_tags, stats, mild=rng.random() < 0.6)
            if diskless:  # reads and writes a nucleus's storage (a site without its own)
                target = f"{rng.choice(nuclei or ['SITE0'])}_DATADISK"
                queues[queue]["astorages"] = {"read_lan": [target], "write_lan": [target]}
            if len(queues) >= 300:
                return
        if rng.random() < 0.6 and scenario.get("network") is not None:
            nucleus = scenario["task"].get("nucleus")
            if nucleus:
                scenario["network"].append(
                    {"src": name, "dst": nucleus, "closeness": rng.choice([2, 5, 8]), "queued": rng.choice([0, 50])}
                )


def _dbrelease(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A DBRelease secondary (ddo.*), which task brokerage leaves out of data locality, now and then."""
    if rng.random() < 0.15 and scenario.get("datasets"):
        holder = rng.choice(sorted(scenario["ddm_endpoints"]))
        scenario["datasets"].append(
            {
                "name": "ddo.000001.Atlas.Ideal.DBRelease.v330201",
                "master": False,
                "nFiles": 1,
                "sizeGB": 0.5,
                "replicas": {holder: {"nFiles": 1, "sizeGB": 0.5}},
            }
        )


def job_real_scenario(seed: int) -> dict[str, Any]:
    """A production job-brokerage scenario shaped like the real grid."""
    scenario = copy.deepcopy(job_scenario(100_000 + seed))
    rng = random.Random(f"real-job:{seed}")
    if rng.random() < 0.7:
        _bigger_grid(rng, scenario)
    _reshape_queues(rng, scenario, lambda record: record.get("type") != "analysis")
    _reshape_task(rng, scenario["task"], scenario["jobs"], analysis=False)
    _at_limits(rng, scenario)
    if scenario["task"].get("nJumboJobs"):
        _jumbo_queues(rng, scenario)
    scenario["seed"] = seed
    return scenario


def _jumbo_queues(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A task with jumbo jobs meets queues running event service (jobseed all), some of which take jumbo jobs
    (catchall useJumboJobs): those its job set weighs and then keeps for its jumbo jobs."""
    names = sorted(scenario["queues"])
    for name in rng.sample(names, min(len(names), rng.randint(2, 8))):
        record = scenario["queues"][name]
        record["jobseed"] = "all"
        if rng.random() < 0.5:
            record["catchall"] = ",".join(item for item in (record.get("catchall") or "", "useJumboJobs") if item)


def _reads_elsewhere(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A nucleus's data is what its queues read: now and then a queue reads another site's disk too, or leaves its
    own tape out."""
    endpoints = sorted(scenario.get("ddm_endpoints") or {})
    for record in (scenario.get("queues") or {}).values():
        reads = record.setdefault("astorages", {}).setdefault("read_lan", [])
        if rng.random() < 0.2 and endpoints:
            extra = rng.choice(endpoints)
            if extra not in reads:
                reads.append(extra)
        if rng.random() < 0.15:
            record["astorages"]["read_lan"] = [e for e in reads if not e.endswith("TAPE")]


def _bare_satellite(rng: random.Random, scenario: dict[str, Any]) -> None:
    template = copy.deepcopy(next(iter(scenario["queues"].values())))
    template.update(
        atlas_site="SAT0",
        status="online",
        catchall=f"bareNucleus={rng.choice(['only', 'allow'])}",
        astorages={"read_lan": ["SAT0_DATADISK"], "write_lan": ["SAT0_DATADISK"]},
    )
    template.pop("cloud", None)
    scenario["queues"]["SAT0_Q0"] = template
    stats = scenario.setdefault("queue_stats", {})
    stats["SAT0_Q0"] = {"running": 100, "pilotsLast3h": 100, "hoursSinceLastStart": 0.1}
    tags = scenario.setdefault("sw_tags", {})
    first = next(iter(tags.values()), None)
    if first is not None:
        tags["SAT0_Q0"] = copy.deepcopy(first)
    if rng.random() < 0.7:
        scenario["task"]["fullChain"] = rng.choice(["only", "require", "capable"])


def task_real_scenario(seed: int) -> dict[str, Any]:
    """A production task-brokerage scenario shaped like the real grid."""
    scenario = copy.deepcopy(task_scenario(100_000 + seed))
    rng = random.Random(f"real-task:{seed}")
    for record in (scenario.get("queues") or {}).values():
        # not an empty cloud: the real task broker raises on a nucleus whose queues the SiteMapper dropped
        # (AtlasProdTaskBroker.py 342, its default output endpoint None)
        _reshape_queue(rng, record, production=False)
    _reshape_task(rng, scenario["task"], scenario["jobs"], analysis=False)
    _dbrelease(rng, scenario)
    _reads_elsewhere(rng, scenario)
    if scenario.get("queues") and rng.random() < 0.3:
        # a satellite in bare-nucleus mode (its queue's catchall): a nucleus for full-chain tasks
        _bare_satellite(rng, scenario)
    scenario["seed"] = seed
    return scenario


def _likely(scenario: dict[str, Any]) -> list[str]:
    """The queues most likely to pass the persistent checks (online, any release or any container), else all."""
    tags = scenario.get("sw_tags") or {}
    good = [
        name
        for name, record in sorted(scenario["queues"].items())
        if record.get("status") == "online"
        and ("ANY" in (record.get("releases") or []) or "any" in (tags.get(name) or {}).get("containers", []))
    ]
    return good or sorted(scenario["queues"])


def _hospital(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A hospital queue (*_HOSPITAL) beside one of the queues, its twin in every number."""
    name = rng.choice(_likely(scenario))
    twin = f"{name}_HOSPITAL"
    scenario["queues"][twin] = copy.deepcopy(scenario["queues"][name])
    for section in (
        scenario.get("queue_stats"),
        scenario.get("sw_tags"),
        (scenario.get("user_stats") or {}).get("queues"),
    ):
        if section is not None and name in section:
            section[twin] = copy.deepcopy(section[name])


def _analysis_task(rng: random.Random, scenario: dict[str, Any]) -> None:
    """What analysis tasks and queues carry in real life: includedSite with AUTO, a zero share in a queue's
    fair-share policy, merge job sets, no cpuTime."""
    task, jobs, queues = scenario["task"], scenario["jobs"], scenario["queues"]
    if rng.random() < 0.2:
        likely = _likely(scenario)
        named = rng.sample(likely, min(rng.choice([1, 2]), len(likely)))
        if rng.random() < 0.6:  # a plain queue the user names, which passes what the others pass
            base = rng.choice(likely)
            clean = f"{base}_USER"
            scenario["queues"][clean] = dict(
                copy.deepcopy(queues[base]),
                status="online",
                type="analysis",
                capability="",
                corecount=1,
                releases=["AUTO"],
                maxwdir=10**6,
                maxtime=10**7,
                fairsharepolicy="",
            )
            tags = copy.deepcopy((scenario.get("sw_tags") or {}).get(base) or {"cmtconfigs": [], "tags": []})
            scenario.setdefault("sw_tags", {})[clean] = {**tags, "containers": ["any"], "cvmfs": ["atlas"]}
            for section in (scenario.get("queue_stats"), (scenario.get("user_stats") or {}).get("queues")):
                if section is not None and base in section:
                    section[clean] = copy.deepcopy(section[base])
            named = [clean]
        task["includedSite"] = [*named, "AUTO"]
    if rng.random() < 0.15:
        for record in rng.sample(list(queues.values()), max(1, len(queues) // 3)):
            record["fairsharepolicy"] = rng.choice(["type=any:0%", "gshare=User Analysis:0%", "type=evgen:0%"])
    if rng.random() < 0.15 and scenario.get("datasets"):
        # a container (a name ending in "/"): distributed over sites, its copies often incomplete
        master = scenario["datasets"][0]
        master["name"] = master["name"].rstrip("/") + "/"
        spread = rng.random() < 0.7  # every copy incomplete: only the container's files spread over sites
        for replica in master["replicas"].values():
            if (spread or rng.random() < 0.5) and master["nFiles"] > 1:
                replica["nFiles"] = rng.randint(1, max(1, master["nFiles"] // 2))
                replica["sizeGB"] = round(master["sizeGB"] * replica["nFiles"] / master["nFiles"], 6)
    if rng.random() < 0.1:
        jobs["isMerge"] = True
    if rng.random() < 0.1:
        task.pop("cpuTime", None)


def _job_input_as_chunked(scenario: dict[str, Any]) -> None:
    """jobs.inputSizeMB as the real InputChunk makes a job: its files of the master dataset and as many of each
    secondary (the driver sizes every file from its dataset). Our scenario has one input size, from which the
    output is scaled too, where the real code scales it by the master's files only: with a secondary the task sets
    no output size."""
    jobs, task, datasets = scenario["jobs"], scenario["task"], scenario.get("datasets") or []
    files = max(int(jobs.get("nFiles") or 1), 1)
    total = 0.0
    for dataset in datasets:
        n = max(int(dataset.get("nFiles") or 1), 1)
        total += dataset.get("sizeGB", 0) * 1024 / n * min(files, n)
    if datasets:
        jobs["inputSizeMB"] = round(total, 6)
    if len(datasets) > 1:  # analysis scales the output by input MB whatever the unit
        task.pop("outDiskCount", None)


def anal_real_scenario(seed: int) -> dict[str, Any]:
    """An analysis job-brokerage scenario shaped like the real grid."""
    scenario = copy.deepcopy(anal_scenario(100_000 + seed))
    rng = random.Random(f"real-anal:{seed}")
    if rng.random() < 0.45:
        _hospital(rng, scenario)
    _reshape_queues(rng, scenario, lambda record: record.get("type") == "unified")
    _reshape_task(rng, scenario["task"], scenario["jobs"], analysis=True)
    _analysis_task(rng, scenario)
    _job_input_as_chunked(scenario)
    _at_limits(rng, scenario)
    scenario["seed"] = seed
    return scenario


REAL_SHAPED = {"job": job_real_scenario, "task": task_real_scenario, "anal": anal_real_scenario}
