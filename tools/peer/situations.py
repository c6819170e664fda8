"""The situations the differential generator puts into its scenarios (issue 33), beyond the base grids of
tools/peer/scenarios.py: pre-assigned and merge job sets, urgent processing types, high priorities, full-chain
tasks and bare nuclei, pre-staging, GPU tasks and GPU-only queues, base platforms, containers with and without
onlyTagsForFC, nightlies and AtlasOffline releases, tasks without transHome, direct access, endpoints down,
working groups and their shares, work shortage, tasks without input, include and exclude lists, pre-assigned
analysis tasks, throttled users and groups, the Analysis Stabilizer's numbers.

Each situation draws from a random stream of its own (seed and situation name), so adding one never changes
what the others make, and each scenario lists the situations it got under `situations` (the engine keeps
unknown sections aside; the driver ignores it). Plain data, no Django.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

RELEASE = "24.0.30"
PLATFORM = "x86_64-el9-gcc13-opt"
CONTAINER = "atlas/athena:24.0.30"
CONTAINER_PATH = "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/atlas/athena:24.0.30"

Situation = tuple[str, float, Callable[[random.Random, dict[str, Any]], None]]


def _apply(kind: str, seed: int, scenario: dict[str, Any], situations: tuple[Situation, ...]) -> None:
    applied = []
    for name, chance, make in situations:
        rng = random.Random(f"peer-{kind}-{name}:{seed}")
        if rng.random() < chance:
            make(rng, scenario)
            applied.append(name)
    scenario["situations"] = applied


def _queue_names(scenario: dict[str, Any], *, types: tuple[str, ...] = ("production", "unified")) -> list[str]:
    return sorted(name for name, record in scenario.get("queues", {}).items() if record.get("type") in types)


def _site_of(scenario: dict[str, Any], queue: str) -> str:
    return scenario["queues"][queue].get("atlas_site", "")


# --- production job brokerage ---------------------------------------------------------------------------------


def _merge_files(scenario: dict[str, Any], files: int) -> None:
    """A merge job of `files` files of the master dataset: its size and events follow (the real broker sizes a
    job from its files)."""
    jobs = scenario["jobs"]
    master = next((d for d in scenario.get("datasets", []) if d.get("master", True)), None)
    per_file_mb = master["sizeGB"] * 1024 / max(master["nFiles"], 1) if master else 0.0
    per_file_events = (jobs.get("nEvents") or 0) / max(jobs.get("nFiles") or 1, 1)
    jobs.update(isMerge=True, isScout=False, nFiles=files, inputSizeMB=round(files * per_file_mb, 6))
    if jobs.get("nEvents") is not None:
        jobs["nEvents"] = int(files * per_file_events)


def _preassigned(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A job set pre-assigned to one queue: a merge job set at the queue holding the pre-merged outputs (now and
    then past the 24 h the real code waits), or a task whose `site` names the queue."""
    names = _queue_names(scenario)
    if not names:
        return
    jobs = scenario["jobs"]
    jobs["preassigned"] = [rng.choice(names)]
    if rng.random() < 0.6:
        _merge_files(scenario, rng.choice([2, 5, 10]))
        if rng.random() < 0.25:
            jobs["preassignedSkippedHours"] = rng.choice([25.0, 48.0])


def _merge(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A merge job set without a pre-assigned queue."""
    if scenario["jobs"].get("preassigned"):
        return
    _merge_files(scenario, rng.choice([2, 10]))


def _urgent(rng: random.Random, scenario: dict[str, Any]) -> None:
    scenario["task"]["processingType"] = rng.choice(["urgent", "urgent_reco", "reprocessing_urgent", "urgent"])


def _priority(rng: random.Random, scenario: dict[str, Any]) -> None:
    priority = rng.choice([799, 800, 900, 999, 1000, 1001])
    scenario["task"].update(taskPriority=priority, currentPriority=priority)


def _full_chain(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A full-chain task and bare nuclei: the nucleus and some other sites only or allow full-chain work."""
    task, sites = scenario["task"], scenario["sites"]
    task["fullChain"] = rng.choice(["only", "require", "capable", ""])
    if not task["fullChain"]:
        del task["fullChain"]
    for name in sites:
        if name == task.get("nucleus") or rng.random() < 0.3:
            mode = rng.choice(["only", "allow", ""])
            if mode:
                sites[name]["bareNucleus"] = mode


def _prestaging(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A pre-staged task: the input may be on tape only."""
    scenario["task"]["inputPreStaging"] = True
    for dataset in scenario.get("datasets", []):
        if rng.random() < 0.5:
            dataset["replicas"] = {
                endpoint: replica
                for endpoint, replica in dataset.get("replicas", {}).items()
                if scenario["ddm_endpoints"].get(endpoint, {}).get("is_tape")
            }


GPU_REQUESTS = ("nvidia", "nvidia", "nvidia:vram>=40960", "nvidia:model=.*A100.*", "nvidia:model!=.*P100.*", "amd")
GPU_CARDS = (
    {"vendor": "nvidia", "model": "NVIDIA A100-SXM4-40GB", "vram": 40960, "microarchitecture": "Ampere"},
    {"vendor": "nvidia", "model": "Tesla P100-PCIE-16GB", "vram": 16384, "microarchitecture": "Pascal"},
    {"vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "vram": 81920, "microarchitecture": "Hopper"},
)


def _gpu(rng: random.Random, scenario: dict[str, Any]) -> None:
    """GPU-capable and GPU-only queues (CRIC's gpu entry, with or without excl) and the cards their pilots report;
    most of the time the task asks for a GPU, sometimes it does not (GPU-only queues must refuse it)."""
    tags, gpus = scenario.setdefault("sw_tags", {}), scenario.setdefault("gpu_summary", {})
    for name in _queue_names(scenario, types=("production", "unified", "analysis")):
        if rng.random() < 0.5:
            continue
        entry = tags.setdefault(
            name, {"cmtconfigs": [PLATFORM], "containers": ["any"], "cvmfs": ["atlas"], "architectures": [], "tags": []}
        )
        scenario["queues"][name]["releases"] = ["AUTO"]
        entry.setdefault("architectures", []).append(
            {"type": "gpu", "vendor": ["nvidia", "excl"] if rng.random() < 0.4 else ["nvidia"]}
        )
        if rng.random() < 0.8:
            gpus[name] = [dict(card) for card in rng.sample(GPU_CARDS, rng.randint(1, 2))]
    if rng.random() < 0.8:
        task = scenario["task"]
        task["architecture"] = f"{task.get('architecture') or PLATFORM}&{rng.choice(GPU_REQUESTS)}"


def _base_platform(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A task asking for a base platform (`@el9`): only containers can give it."""
    task = scenario["task"]
    architecture = task.get("architecture") or PLATFORM
    head, sep, tail = architecture.partition("#")
    task["architecture"] = f"{head}@el9" + (sep + tail if sep else "")


def _container(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A fat-container task (by name or full path), with or without onlyTagsForFC; queues publish it among their
    tags, accept any container, or a prefix of its path; the "ALL" entry resolves the name to its path."""
    task = scenario["task"]
    task["container_name"] = rng.choice([CONTAINER, CONTAINER, CONTAINER_PATH])
    if rng.random() < 0.4:
        task["onlyTagsForFC"] = True
    tags = scenario.setdefault("sw_tags", {})
    tags["ALL"] = {
        "cmtconfigs": [],
        "containers": [],
        "cvmfs": [],
        "architectures": [],
        "tags": [{"cmtconfig": PLATFORM, "container_name": CONTAINER, "project": "Athena", "release": RELEASE,
                  "sources": [CONTAINER_PATH]}],
    }  # fmt: skip
    for name in _queue_names(scenario, types=("production", "unified", "analysis")):
        entry = tags.get(name)
        if entry is None:
            continue
        roll = rng.random()
        if roll < 0.3:
            entry["tags"] = [
                *(entry.get("tags") or []),
                {"cmtconfig": PLATFORM, "container_name": CONTAINER, "project": "Athena", "release": RELEASE,
                 "sources": [CONTAINER_PATH]},
            ]  # fmt: skip
        elif roll < 0.5:
            entry["containers"] = ["/cvmfs/unpacked.cern.ch/"]
        elif roll < 0.7:
            entry["containers"] = ["any"]
        else:
            entry["containers"] = []


def _nightly(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A nightly release (rel_N or a timestamp): the queues need the nightlies repository."""
    task = scenario["task"]
    release = rng.choice(["Athena-rel_3", "Athena-2026-10-31T2101", "AthSimulation-24.0.31"])
    task["transUses"] = task["transHome"] = release
    for entry in scenario.get("sw_tags", {}).values():
        if rng.random() < 0.5:
            entry["cvmfs"] = rng.choice([["atlas", "nightlies"], ["nightlies"], ["atlas"], ["any"]])


def _no_trans_home(rng: random.Random, scenario: dict[str, Any]) -> None:
    """No transHome: the real brokers leave the software and hardware check out."""
    task = scenario["task"]
    task.pop("transHome", None)
    if rng.random() < 0.5:
        task.pop("transUses", None)


def _direct_access(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Queues that read input directly (direct_access_lan, or maxinputsize -1: always), tasks that allow or
    require it."""
    for name in scenario.get("queues", {}):
        record = scenario["queues"][name]
        roll = rng.random()
        if roll < 0.35:
            record["direct_access_lan"] = True
        elif roll < 0.45:
            record["maxinputsize"] = -1
    choice = rng.choice(["use", "only", ""])
    if choice:
        scenario["task"]["allowInputLAN"] = choice


def _endpoints_down(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Storage endpoints with some activity OFF or TEST, now and then blacklisted."""
    for endpoint in scenario.get("ddm_endpoints", {}).values():
        if rng.random() < 0.4:
            status = endpoint.setdefault("detailed_status", {})
            status[rng.choice(["read_lan", "write_lan", "read_wan", "write_wan"])] = rng.choice(["OFF", "TEST"])
        elif rng.random() < 0.05:
            endpoint["blacklisted"] = True


def _working_group(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A working group's task, and queues whose fair-share policy names working groups."""
    group = rng.choice(["AP_Higgs", "GP_Top"])
    scenario["task"]["workingGroup"] = group
    for record in scenario.get("queues", {}).values():
        if rng.random() < 0.4:
            record["fairsharepolicy"] = rng.choice(
                [f"group={group}:0%", "group=AP_Higgs:100%,group=any:0%", f"group={group}:50%,type=simul:0%"]
            )


def _work_shortage(rng: random.Random, scenario: dict[str, Any]) -> None:
    """WORK_SHORTAGE on: opportunistic queues out, partly pledged ones out above their pledge."""
    scenario.setdefault("gdpconfig", {})["WORK_SHORTAGE"] = True
    for name, record in scenario.get("queues", {}).items():
        record["pledgedcpu"] = rng.choice([0, -1, 100, 500])
        stats = scenario.setdefault("queue_stats", {}).get(name)
        if stats is not None:
            stats["runningCores"] = rng.choice([0, 50, 99, 100, 101, 400, 800])


def _no_input(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A task without input (event generation): no datasets."""
    scenario["datasets"] = []
    scenario["jobs"]["inputSizeMB"] = 0
    scenario["jobs"]["nFiles"] = 0


def _hardware_asks(rng: random.Random, scenario: dict[str, Any]) -> None:
    """maxCoreCount, ipConnectivity against the queues' wnconnectivity, disk IO against maxdiskio."""
    task = scenario["task"]
    if rng.random() < 0.4:
        task["maxCoreCount"] = rng.choice([1, 4, 8])
    if rng.random() < 0.5:
        task["ipConnectivity"] = rng.choice(["full", "http", "none", "full#IPv6", "http#IPv4"])
        for record in scenario.get("queues", {}).values():
            record["wnconnectivity"] = rng.choice(["full#IPv4", "http#IPv4", "none", "full#IPv6", "full", ""])
    if rng.random() < 0.7:
        task["diskIO"] = rng.choice([50, 200, 1000])
        for name, record in scenario.get("queues", {}).items():
            if rng.random() < 0.5:
                record["maxdiskio"] = rng.choice([100, 500])
            stats = scenario.get("queue_stats", {}).get(name)
            if stats is not None and rng.random() < 0.7:
                stats["avgDiskIOPerCore"] = rng.choice([10.0, 150.0, 600.0])


def _bootstrap(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Queues being brought up: a few running jobs, Harvester workers, with or without pilots and numSlots; a
    low-priority task (the bootstrap figures count up to MAX_PRIO_TO_BOOTSTRAP, 150)."""
    scenario["task"].update(currentPriority=rng.choice([100, 150]), taskPriority=150)
    for stats in scenario.get("queue_stats", {}).values():
        if rng.random() < 0.5:
            stats.update(running=rng.choice([0, 3, 15]), nBatchJob=rng.choice([5, 30]))
            stats["pilotsLast3h"] = rng.choice([0, 0, 50])
            if rng.random() < 0.5:
                stats["numSlots"] = rng.choice([0, 16])


def _io_boundary(rng: random.Random, scenario: dict[str, Any]) -> None:
    """An IO-intensive task at the boundary of the nucleus weight (ioIntensity 500 kB/s), at normal priority."""
    task = scenario["task"]
    task.update(ioIntensity=500, currentPriority=rng.choice([300, 500]), taskPriority=500)
    task.pop("t1Weight", None)


def _disk_io_per_core(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A multi-core task whose disk IO is over a queue's limit, but not per core of it."""
    task = scenario["task"]
    task.update(coreCount=8, diskIO=rng.choice([200, 400, 1000]))
    for name, record in scenario.get("queues", {}).items():
        record["maxdiskio"] = 100
        stats = scenario.get("queue_stats", {}).get(name)
        if stats is not None:
            stats["avgDiskIOPerCore"] = rng.choice([50.0, 600.0])


def _connectivity(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A task asking full or http connectivity, and queues that publish none (CRIC's wnconnectivity empty)."""
    scenario["task"]["ipConnectivity"] = rng.choice(["full", "http", "http#IPv4"])
    for record in scenario.get("queues", {}).values():
        record["wnconnectivity"] = rng.choice(["", "", "full#IPv4", "http#IPv4"])


def _nucleus_without_queues(rng: random.Random, scenario: dict[str, Any]) -> None:
    """The task's nucleus is a site with storage and no queue of its own."""
    scenario["sites"]["NUCX"] = {"role": "nucleus"}
    scenario["ddm_endpoints"]["NUCX_DATADISK"] = {"site": "NUCX", "space_total": 1e5, "space_free": 5e4}
    scenario["task"]["nucleus"] = "NUCX"


def _nucleus_backlog(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Files waiting to be aggregated to the nucleus around NQUEUED_NUC_CAP_FOR_JOBS (10,000)."""
    nucleus = scenario["task"].get("nucleus")
    if nucleus:
        queued = rng.choice([0, 2001, 9999, 10000, 10001, 25000])
        scenario.setdefault("nucleus_stats", {})[nucleus] = {"rw": 0, "outputQueued": queued}


def _event_service(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Queues that take event-service jobs only (es), urgent ones only (eshigh) or both (all); now and then an
    event-service task."""
    for record in scenario.get("queues", {}).values():
        record["jobseed"] = rng.choice(["std", "std", "es", "eshigh", "all"])
    if rng.random() < 0.4:
        scenario["task"]["eventService"] = True


def _jumbo(rng: random.Random, scenario: dict[str, Any]) -> None:
    """An event-service task with jumbo jobs (nJumboJobs) among queues running event service, a few of which take
    jumbo jobs (catchall useJumboJobs): its job set weighs them, then keeps them for its jumbo jobs."""
    scenario["task"]["eventService"] = True
    scenario["task"]["nJumboJobs"] = rng.choice([1, 2, 5])
    names = _queue_names(scenario)
    for name in names:
        scenario["queues"][name]["jobseed"] = "all"
    for name in rng.sample(names, rng.randint(1, max(1, len(names) // 2))):
        record = scenario["queues"][name]
        record["catchall"] = ",".join(item for item in (record.get("catchall") or "", "useJumboJobs") if item)


def _input_incomplete(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Every copy of the input partial: past MAX_MISSING_INPUT_FILES (10) and under MIN_INPUT_COMPLETENESS (90 %),
    or just within one of them."""
    for dataset in scenario.get("datasets", []):
        total = dataset["nFiles"]
        for replica in dataset.get("replicas", {}).values():
            found = rng.choice([total // 4, max(total - 10, 0), int(total * 0.9), total - 11])
            replica["nFiles"] = max(min(found, total - 1), 0)
            replica["sizeGB"] = round(dataset["sizeGB"] * replica["nFiles"] / max(total, 1), 6)


def _crowded(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Twins of every queue (same site, record, software and statistics): more equal weights than the 10
    candidates the job broker keeps, so the order it scans queues in decides which stay."""
    twins = rng.choice([3, 5, 8])
    for name in list(scenario.get("queues", {})):
        for number in range(1, twins + 1):
            twin = f"{name}_T{number}"
            scenario["queues"][twin] = copy.deepcopy(scenario["queues"][name])
            for key in ("sw_tags", "queue_stats"):
                if name in scenario.get(key, {}):
                    scenario[key][twin] = copy.deepcopy(scenario[key][name])


JOB_SITUATIONS: tuple[Situation, ...] = (
    ("preassigned", 0.14, _preassigned),
    ("merge", 0.06, _merge),
    ("urgent", 0.1, _urgent),
    ("priority", 0.15, _priority),
    ("full chain", 0.15, _full_chain),
    ("pre-staging", 0.08, _prestaging),
    ("gpu", 0.12, _gpu),
    ("base platform", 0.1, _base_platform),
    ("container", 0.12, _container),
    ("nightly", 0.08, _nightly),
    ("no transHome", 0.06, _no_trans_home),
    ("direct access", 0.15, _direct_access),
    ("endpoints down", 0.15, _endpoints_down),
    ("working group", 0.1, _working_group),
    ("work shortage", 0.1, _work_shortage),
    ("no input", 0.06, _no_input),
    ("hardware asks", 0.15, _hardware_asks),
    ("nucleus backlog", 0.06, _nucleus_backlog),
    ("event service", 0.08, _event_service),
    ("jumbo", 0.1, _jumbo),
    ("input incomplete", 0.06, _input_incomplete),
    ("bootstrap", 0.08, _bootstrap),
    ("io boundary", 0.05, _io_boundary),
    ("connectivity", 0.05, _connectivity),
    ("nucleus without queues", 0.04, _nucleus_without_queues),
    ("disk io per core", 0.05, _disk_io_per_core),
    ("crowded", 0.08, _crowded),  # last: it copies the queues as the others left them
)


def job_situations(seed: int, scenario: dict[str, Any]) -> None:
    _apply("job", seed, scenario, JOB_SITUATIONS)


# --- production task brokerage ----------------------------------------------------------------------------------


def _task_full_chain(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Full-chain tasks, bare nuclei, and a parent that ran at a bare nucleus (or at a normal one)."""
    task, sites = scenario["task"], scenario["sites"]
    nuclei = sorted(name for name, record in sites.items() if record.get("role") == "nucleus")
    for name in nuclei:
        mode = rng.choice(["only", "allow", "", ""])
        if mode:
            sites[name]["bareNucleus"] = mode
    mode = rng.choice(["only", "require", "capable", "capable", ""])
    if mode:
        task["fullChain"] = mode
    if rng.random() < 0.5 and nuclei:
        parent = rng.choice(nuclei)
        task["parentNucleus"] = parent
        bare = sites[parent].get("bareNucleus", "")
        if bare:
            task["parentBareNucleus"] = bare


def _task_priority(rng: random.Random, scenario: dict[str, Any]) -> None:
    priority = rng.choice([799, 800, 900, 1000])
    scenario["task"].update(taskPriority=priority, currentPriority=priority)


def _task_t1_weight(rng: random.Random, scenario: dict[str, Any]) -> None:
    scenario["task"]["t1Weight"] = rng.choice([-1, 0, 2, 50])


def _wan_down(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Nucleus storage that cannot send or receive over WAN (the task broker's source and destination rules)."""
    for endpoint in scenario.get("ddm_endpoints", {}).values():
        if rng.random() < 0.4:
            endpoint.setdefault("detailed_status", {})[rng.choice(["read_wan", "write_wan"])] = rng.choice(
                ["OFF", "TEST"]
            )


def _task_no_input(rng: random.Random, scenario: dict[str, Any]) -> None:
    scenario["datasets"] = []
    scenario["jobs"]["inputSizeMB"] = 0  # the first job reads no input either


TASK_SITUATIONS: tuple[Situation, ...] = (
    ("full chain", 0.3, _task_full_chain),
    ("priority", 0.15, _task_priority),
    ("t1Weight", 0.15, _task_t1_weight),
    ("no input", 0.06, _task_no_input),
    ("endpoints down", 0.12, _wan_down),
)


def task_situations(seed: int, scenario: dict[str, Any]) -> None:
    _apply("task", seed, scenario, TASK_SITUATIONS)


# --- analysis job brokerage -------------------------------------------------------------------------------------


def _include_exclude(rng: random.Random, scenario: dict[str, Any]) -> None:
    """includedSite / excludedSite naming queues, sites, or patterns of them."""
    names = _queue_names(scenario, types=("analysis", "unified"))
    if not names:
        return
    task = scenario["task"]
    pick = rng.sample(names, rng.randint(1, min(2, len(names))))
    patterns = {
        "queue": pick,
        "site": sorted({_site_of(scenario, name) for name in pick}),
        "pattern": [pick[0].rsplit("_", 1)[0] + "_*"],
        "mixed": [pick[0], "NOWHERE"],
    }
    key = rng.choice(["includedSite", "excludedSite", "both"])
    kind = rng.choice(sorted(patterns))
    if key == "both":
        task["includedSite"] = patterns[kind]
        task["excludedSite"] = [rng.choice(names)]
    else:
        task[key] = patterns[kind]


def _anal_preassigned(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A task whose `site` names a queue (often one in a state to take it), a storage endpoint its queues read, or
    nothing known."""
    names = _queue_names(scenario, types=("analysis", "unified"))
    roll = rng.random()
    if roll < 0.6 and names:
        site = rng.choice(names)
        if rng.random() < 0.7:
            record = scenario["queues"][site]
            record.update(status=rng.choice(["online", "online", "brokeroff"]), corecount=1, type="analysis")
            record["capability"] = ""
            record["releases"] = ["ANY"]
            scenario.get("queue_stats", {}).get(site, {}).update(pilotsLast3h=50, running=50, activated=5)
            if rng.random() < 0.7:
                # room for any job: a task without cpuTime needs 24 h × 10 HS06 a core of the queue's maxtime, so
                # that the queue passes every check and the preassign check keeps it alone
                record.update(maxtime=3600 * 24 * 12, maxrss=16000, maxwdir=100000, minrss=0)
            if rng.random() < 0.5:
                # and a complete copy of the input where it reads (the input data check keeps it then)
                endpoint = f"{record['atlas_site']}_DATADISK"
                for dataset in scenario.get("datasets", []):
                    dataset.setdefault("replicas", {})[endpoint] = {
                        "nFiles": dataset["nFiles"],
                        "sizeGB": dataset["sizeGB"],
                    }
    elif roll < 0.85:
        site = rng.choice(sorted(scenario.get("ddm_endpoints", {})))
    else:
        site = "ANALY_NOWHERE"
    scenario["task"]["site"] = site


def _anal_working_group(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A working group's task: the group's counts and caps decide the throttle."""
    scenario["task"]["workingGroup"] = rng.choice(["AP_Higgs", "GP_Top"])
    scenario["user_stats"]["group"] = {
        "running": rng.choice([0, 500, 2001]),
        "queued": rng.choice([0, 3000, 4001]),
        "runningCores": rng.choice([0, 1000, 4001]),
        "queuedCores": rng.choice([0, 5000, 8001]),
    }
    config = scenario.setdefault("gdpconfig", {})
    config["CAP_RUNNING_GROUP_JOBS"] = rng.choice([None, 2000])
    config["CAP_RUNNING_GROUP_CORES"] = rng.choice([None, 4000])
    for key in ("CAP_RUNNING_GROUP_JOBS", "CAP_RUNNING_GROUP_CORES"):
        if config[key] is None:
            del config[key]


def _anal_throttle(rng: random.Random, scenario: dict[str, Any]) -> None:
    """The user's running and queued jobs and cores around the caps; the User Analysis share's usage around the
    class limits (S and A classes, with and without the user's evaluation)."""
    stats = scenario["user_stats"]
    stats["user"].update(
        running=rng.choice([0, 999, 1001]),
        queued=rng.choice([0, 1999, 2001]),
        runningCores=rng.choice([0, 1999, 2001]),
        queuedCores=rng.choice([0, 3999, 4001]),
    )
    config = scenario.setdefault("gdpconfig", {})
    config["CAP_RUNNING_USER_JOBS"] = 1000
    config["CAP_RUNNING_USER_CORES"] = 2000
    stats["gshareUsage"] = {"User Analysis": rng.choice([0.5, 0.89, 0.91, 0.96, 1.5, 2.5])}
    scenario["task"]["taskClass"] = rng.choice(["S", "A", "B", "C"])
    if rng.random() < 0.5:
        stats["user"].pop("runningSlotsHiSites", None)
    else:
        stats["user"]["runningSlotsHiSites"] = rng.choice([0, 500, 1000, 2000])


def _anal_merge(rng: random.Random, scenario: dict[str, Any]) -> None:
    """A merge job set (the user's caps and the problematic-queue rules do not apply to it)."""
    scenario["jobs"]["isMerge"] = True


def _stabilizer(rng: random.Random, scenario: dict[str, Any]) -> None:
    """The Analysis Stabilizer's numbers around its limits: queue lengths, start rates, users, the user's queue;
    and the task's failed and closed jobs there (the bad-jobs rule is asked where the stabilizer's gates open)."""
    for name, stats in scenario.get("queue_stats", {}).items():
        if rng.random() < 0.4:
            per_queue = scenario["user_stats"].setdefault("queues", {}).setdefault(name, {})
            per_queue.update(taskFailed=rng.choice([0, 5, 6, 12]), taskFinished=rng.choice([0, 2, 5]))
            if rng.random() < 0.6:  # a queue the stabilizer may throttle, where the user has jobs
                stats.update(activated=rng.choice([100, 400]), running=rng.choice([10, 50]), toRunningRate=5.0)
                per_queue["userQueued"] = rng.choice([1, 4, 60, 200])
            continue
        stats["activated"] = rng.choice([0, 50, 99, 100, 101, 400])
        stats["running"] = rng.choice([0, 10, 50, 200])
        stats["toRunningRate"] = rng.choice([0.0, 5.0, 12.5, 40.0])
        stats["nUsers"] = rng.choice([1, 2, 4, 10])
        per_queue = scenario["user_stats"].setdefault("queues", {}).setdefault(name, {})
        per_queue["userQueued"] = rng.choice([0, 4, 5, 6, 30, 200])
        per_queue["userRunning"] = rng.choice([0, 5, 50])


def _anal_storage(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Output storage around the 200 GB floor, free and expired space apart."""
    for endpoint in scenario.get("ddm_endpoints", {}).values():
        endpoint["space_free"] = rng.choice([150.0, 199.0, 200.0, 201.0, 5000.0])
        endpoint["space_expired"] = rng.choice([0.0, 0.0, 40.0, 60.0])


def _anal_pilots(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Queues without pilots, some with numSlots set."""
    for stats in scenario.get("queue_stats", {}).values():
        if rng.random() < 0.5:
            stats["pilotsLast3h"] = 0
            if rng.random() < 0.5:
                stats["numSlots"] = rng.choice([0, 16])


def _anal_releases(rng: random.Random, scenario: dict[str, Any]) -> None:
    """The analysis release forms: AtlasOffline, a project release, a nightly, no release at all."""
    task = scenario["task"]
    task["transUses"] = rng.choice(
        [f"Atlas-{RELEASE}", f"AthAnalysis-{RELEASE}", "Athena-rel_3", f"AnalysisBase-{RELEASE}", ""]
    )
    if not task["transUses"]:
        del task["transUses"]
        task.pop("transHome", None)
    elif rng.random() < 0.5:
        task["transHome"] = "AnalysisTransforms-" + task["transUses"].replace("-", "_", 1)


def _anal_disk_io(rng: random.Random, scenario: dict[str, Any]) -> None:
    """The task's disk IO against the queues' limits and their running jobs' average."""
    scenario["task"]["diskIO"] = rng.choice([50, 200, 1000])
    for name, record in scenario.get("queues", {}).items():
        if rng.random() < 0.6:
            record["maxdiskio"] = rng.choice([100, 500])
        stats = scenario.get("queue_stats", {}).get(name)
        if stats is not None and rng.random() < 0.8:
            stats["avgDiskIOPerCore"] = rng.choice([10.0, 150.0, 600.0])


def _anal_gpu(rng: random.Random, scenario: dict[str, Any]) -> None:
    """GPU analysis: GPU-capable queues (catchall gpu, CRIC's gpu entry, pilots' cards) publishing the task's
    release, and tasks asking for a GPU or not."""
    _gpu(rng, scenario)
    for name, record in scenario.get("queues", {}).items():
        tags = scenario.get("sw_tags", {}).get(name)
        if tags and any(entry.get("type") == "gpu" for entry in tags.get("architectures", [])):
            if rng.random() < 0.6:
                record["catchall"] = "gpu"
            tags["containers"] = ["any"]
            tags["cvmfs"] = ["atlas"]


def _anal_tape_and_datasets(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Tape copies read by some queues, and now and then a second dataset held elsewhere: queues with the data on
    disk go first, and when no queue has every dataset those with some of it are taken (union)."""
    endpoints = scenario["ddm_endpoints"]
    for site in sorted({e["site"] for e in endpoints.values()}):
        if rng.random() < 0.5:
            tape = f"{site}_DATATAPE"
            endpoints[tape] = {"site": site, "is_tape": True, "space_total": 1e7, "space_free": 5e6}
            for record in scenario.get("queues", {}).values():
                if record.get("atlas_site") == site:
                    record["astorages"]["read_lan"].append(tape)
    datasets = scenario.get("datasets", [])
    for dataset in datasets:
        for endpoint in [e for e in endpoints if e.endswith("_DATATAPE")]:
            if rng.random() < 0.5:
                found = rng.choice([dataset["nFiles"], dataset["nFiles"] // 2])
                per_file = dataset["sizeGB"] / max(dataset["nFiles"], 1)
                dataset["replicas"][endpoint] = {"nFiles": found, "sizeGB": round(found * per_file, 6)}
    if datasets and rng.random() < 0.5:
        files = rng.choice([2, 4])
        replicas = {}
        for endpoint in rng.sample(sorted(endpoints), rng.randint(1, len(endpoints))):
            found = rng.choice([files, files, files // 2])
            replicas[endpoint] = {"nFiles": found, "sizeGB": found * 1.5}
        datasets.append(
            {"name": datasets[0]["name"] + ".sec", "master": False, "nFiles": files, "sizeGB": files * 1.5,
             "replicas": replicas}
        )  # fmt: skip


def _anal_data_weight(rng: random.Random, scenario: dict[str, Any]) -> None:
    """Two datasets placed so the data weight tells queues apart: each at a different site (no queue has both:
    the union of sites, weighed by their GB on disk), or one site with the first on disk and the second on tape
    beside a site with both on tape (no queue has both on disk: 1 a dataset on disk, 0.001 on tape)."""
    queues = scenario.get("queues", {})
    sites = sorted({record["atlas_site"] for record in queues.values()})
    if len(sites) < 2 or not scenario.get("datasets"):
        return
    first, second = rng.sample(sites, 2)
    endpoints = scenario["ddm_endpoints"]
    for site in (first, second):
        tape = f"{site}_DATATAPE"
        endpoints.setdefault(tape, {"site": site, "is_tape": True, "space_total": 1e7, "space_free": 5e6})
        endpoints[f"{site}_DATADISK"].pop("detailed_status", None)
        for record in queues.values():
            if record["atlas_site"] == site and tape not in record["astorages"]["read_lan"]:
                record["astorages"]["read_lan"].append(tape)
    # queues at both sites able to take the job set, a task nobody throttles: what is left is the data weight
    scenario["task"]["taskClass"] = "A"
    scenario["user_stats"]["gshareUsage"] = {"User Analysis": 0.5}
    for name, record in queues.items():
        if record["atlas_site"] in (first, second) and rng.random() < 0.7:
            record.update(status="online", type="analysis", capability="", corecount=1, maxrss=4000, releases=["AUTO"])
            record.update(maxwdir=100000, maxtime=3600 * 96)
            scenario["sw_tags"][name] = {
                "cmtconfigs": [PLATFORM], "containers": ["any"], "cvmfs": ["atlas"], "tags": [],
                "architectures": [{"type": "cpu", "arch": ["x86_64"]}],
            }  # fmt: skip
            scenario["queue_stats"].setdefault(name, {}).update(pilotsLast3h=200)
    master = scenario["datasets"][0]
    files, size = master["nFiles"], master["sizeGB"]
    whole = {"nFiles": files, "sizeGB": size}
    if rng.random() < 0.5:
        master["replicas"] = {f"{first}_DATADISK": dict(whole)}
        other = {f"{second}_DATADISK": dict(whole, sizeGB=round(size / 3, 6))}
    else:
        master["replicas"] = {f"{first}_DATADISK": dict(whole), f"{second}_DATATAPE": dict(whole)}
        other = {f"{first}_DATATAPE": dict(whole), f"{second}_DATATAPE": dict(whole)}
    scenario["datasets"] = [
        master,
        {"name": master["name"] + ".two", "master": False, "nFiles": files, "sizeGB": size, "replicas": other},
    ]
    scenario["datasets"][1]["sizeGB"] = max(r["sizeGB"] for r in other.values())


ANALYSIS_SITUATIONS: tuple[Situation, ...] = (
    ("include exclude", 0.2, _include_exclude),
    ("preassigned", 0.2, _anal_preassigned),
    ("working group", 0.1, _anal_working_group),
    ("throttle", 0.15, _anal_throttle),
    ("merge", 0.1, _anal_merge),
    ("stabilizer", 0.2, _stabilizer),
    ("storage floor", 0.15, _anal_storage),
    ("pilots", 0.15, _anal_pilots),
    ("releases", 0.2, _anal_releases),
    ("gpu", 0.12, _anal_gpu),
    ("base platform", 0.1, _base_platform),
    ("container", 0.12, _container),
    ("no input", 0.06, _no_input),
    ("disk IO", 0.12, _anal_disk_io),
    ("tape and datasets", 0.2, _anal_tape_and_datasets),
    ("data weight", 0.1, _anal_data_weight),
    ("endpoints down", 0.2, _endpoints_down),
    ("priority", 0.1, lambda rng, s: s["task"].update(taskPriority=rng.choice([1000, 2000, 3000]))),
)


def anal_situations(seed: int, scenario: dict[str, Any]) -> None:
    _apply("anal", seed, scenario, ANALYSIS_SITUATIONS)
