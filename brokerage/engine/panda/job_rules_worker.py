"""The production job broker's rules on what a job needs of a queue's worker nodes: cores, software, memory,
scratch disk, walltime, network connectivity and the event-service seed, each rule's estimate beside its check
(seed 000; seed 002 for the estimates; panda-server 1.0.4 AtlasProdJobBroker)."""

from __future__ import annotations

import numpy as np

from brokerage.engine.core.plugin import (
    NOTHING_FAILS,
    Context,
    Filter,
    Rejection,
    among,
)
from brokerage.engine.panda.job_candidates import preassign_mode
from brokerage.engine.panda.records import split_connectivity

# seed 000
MEMORY_COMPENSATION = 0.9


DISK_OUTPUT_FLOOR_MB = 1.5 * 1024


# panda-server 1.0.4 InputChunk.defaultOutputSize: 1500 MB, not the seed's 1.5 GB
PANDA_DEFAULT_OUTPUT_MB = 1500


DISK_WORK_FLOOR_MB = 300.0


LOCAL_STORAGE_FLOOR_GB = 200.0


SCOUT_MIN_MAXTIME = 24 * 3600


# seed 002: cpuEfficiency defaults to 90 %, baseWalltime to 600 s
DEFAULT_CPU_EFFICIENCY = 90.0


DEFAULT_BASE_WALLTIME = 600.0


# panda-server 1.0.4: scouts, merges and walltime-undefined jobs need 24 h of a 10 HS06 core
DAY_OF_HS06 = 24 * 3600 * 10


# seed 000: full accepts any task, http accepts http or none, none accepts none
NETWORK_ACCEPTS = {"full": {"full", "http", "none", ""}, "http": {"http", "none", ""}, "none": {"none", ""}}


def walltime_rejection(c: Context, *, needs_a_day: bool) -> Rejection:
    """seed 000 walltime: jobs that need a day (scouts, undefined walltime; merges too for analysis) are skipped
    at queues whose maxtime is under 24 h; others when the estimate is above maxtime or below mintime."""
    maxtime, mintime, walltime = c["maxtime"], c["mintime"], c["walltime"]
    if needs_a_day:
        return Rejection(
            (maxtime > 0) & (maxtime < SCOUT_MIN_MAXTIME),
            {"maxtime": maxtime, "requiredMaxtime": SCOUT_MIN_MAXTIME, "scout": c.scenario.jobs.isScout},
            code=np.full(len(c.names), "scout_walltime", dtype=object),
        )
    long = (maxtime > 0) & (walltime > maxtime)
    short = (mintime > 0) & (walltime < mintime)
    return Rejection(
        long | short,
        {"walltime": walltime, "maxtime": maxtime, "mintime": mintime},
        code=lambda: np.where(long, "shortwalltime", "min_walltime"),
    )


def job_estimates(task, jobs, a, config) -> None:
    queue_cores = a["corecount"]
    if config.get("DIRECT_IO_RULE") == "panda":
        # CoreUtils.use_direct_io_for_job (1.0.4): never for merges; always at a queue with maxinputsize -1;
        # else when the task allows input over LAN (use or only) and the queue reads directly
        allowed = bool(task.allowInputLAN)
        a["direct_io"] = (
            np.zeros(len(queue_cores), dtype=bool)
            if jobs.isMerge
            else a["always_direct"] | (a["direct_access_lan"] & allowed)
        )
    else:
        a["direct_io"] = a["direct_access_lan"]
    # The job's cores at each queue: single-core tasks 1, multi-core ones the queue's, 0 = the queue's.
    if task.coreCount == 1:
        job_cores = np.ones_like(queue_cores)
    else:
        job_cores = np.where(queue_cores > 1, queue_cores, max(task.coreCount, 1))
    a["job_cores"] = job_cores
    base, ram = task.baseRamCount or 0.0, task.ramCount or 0.0
    per_core = "percore" in (task.ramUnit or "").lower()
    if config.get("MEMORY_RULE") == "panda":
        # AtlasProdJobBroker "memory check": RAM × the queue's cores + baseRamCount for per-core RAM (the
        # task's RAM alone otherwise), then JobUtils.compensate_ram_count: whole MB of 90 %.
        needed = (ram * queue_cores + base) if per_core else np.full_like(queue_cores, ram)
        a["memory_needed"] = np.floor(needed * MEMORY_COMPENSATION)
    else:
        a["memory_needed"] = ((base + ram * job_cores) if per_core else np.full_like(job_cores, base + ram)) * (
            MEMORY_COMPENSATION
        )
    n_events = jobs.nEvents if jobs.nEvents is not None else task.nEventsPerJob
    unit = (task.outDiskUnit or "kB").lower()
    if config.get("MAXWDIR_SCALING") == "single_core_task":
        # panda-server 1.0.4: maxwdir × task cores ÷ queue cores, the task's cores being 1 only for a
        # single-core (non event service) task, the queue's otherwise. The check runs per unified queue
        # (get_unified_sites), so a pseudo-queue divides by its unified queue's cores.
        single = task.coreCount in (0, 1) and not task.eventService
        a["maxwdir_per_core"] = a["maxwdir"] / np.where(single, a["unified_corecount"], 1.0)
    else:
        a["maxwdir_per_core"] = a["maxwdir"] / a["corecount"]
    if config.get("JOB_DISK_RULE") == "panda":
        # AtlasProdJobBroker "disk check", in bytes then whole MB: max(output, InputChunk.defaultOutputSize
        # 1500 MB) + work dir (+ 300 MB safety margin, only when the task sets one) + the input unless read
        # directly
        factor = {"gb": 1024**3, "mb": 1024**2, "kb": 1024}.get(unit[:2], 1)
        out_bytes = (task.outDiskCount or 0.0) * factor
        scale = (n_events or 0) if "perevent" in unit else jobs.inputSizeMB * 1024**2
        output = max(out_bytes * scale, PANDA_DEFAULT_OUTPUT_MB * 1024**2)
        work = 0.0 if task.workDiskCount is None else task.workDiskCount * 1024**2 + DISK_WORK_FLOOR_MB * 1024**2
        input_bytes = np.where(a["direct_io"], 0.0, round(jobs.inputSizeMB * 1024**2))
        a["disk_needed"] = np.floor((output + work + input_bytes) / 1024**2)
    else:
        # Disk (MB): input + max(1.5 GB, output) + max(300 MB, work dir); input is 0 with direct access.
        input_mb = np.where(a["direct_io"], 0.0, jobs.inputSizeMB)
        out_count = (task.outDiskCount or 0.0) / (1024.0 if unit.startswith("kb") else 1.0)
        output_mb = out_count * (n_events or 0) if unit.endswith("perevent") else out_count * jobs.inputSizeMB
        a["disk_needed"] = (
            input_mb + max(DISK_OUTPUT_FLOOR_MB, output_mb) + max(DISK_WORK_FLOOR_MB, task.workDiskCount or 0)
        )
    # Walltime (s): cpuTime × nEvents / (cores × corepower × efficiency) + baseWalltime (seed 000/002).
    efficiency = (DEFAULT_CPU_EFFICIENCY if task.cpuEfficiency is None else task.cpuEfficiency) / 100.0
    base_walltime = DEFAULT_BASE_WALLTIME if task.baseWalltime is None else task.baseWalltime
    a["walltime_undefined"] = not task.cpuTime or n_events is None
    if a["walltime_undefined"]:
        a["walltime"] = np.full_like(job_cores, np.nan)
    elif efficiency == 0:
        a["walltime"] = np.full_like(job_cores, base_walltime)
    else:
        a["walltime"] = task.cpuTime * n_events / (job_cores * a["corepower"] * efficiency) + base_walltime
    if config.get("JOB_WALLTIME_RULE") == "panda":
        # the queue's limits in HS06 seconds: (maxtime − baseWalltime) × cores × corepower × efficiency
        a["hs06_needed"] = np.nan if task.cpuTime is None else task.cpuTime * (n_events or 0)
        # (a limit of 0, "none", stays 0: cores and corepower are finite, so the products of 0 are 0)
        offset = base_walltime if task.cpuTime is not None else 0.0
        for limit in ("maxtime", "mintime"):
            value = (a[limit] - offset) * queue_cores
            if task.cpuTime is not None:
                value = np.trunc(value * a["corepower"] * efficiency)
            a[f"{limit}_hs06"] = value


def core_count(c: Context) -> Rejection:
    task = c.task
    if preassign_mode(c) == "site":  # panda: "selection for MP" left out
        return NOTHING_FAILS
    # a unified queue is brokered through its pseudo-queues, each with its own core count
    cores, ucore = c["corecount"], (c["capability"] == "ucore") & ~c["is_pseudo"]
    if c.config.get("PREASSIGNMENT_RULE") == "panda":
        ucore = np.zeros(len(c.names), dtype=bool)  # a unified queue itself is checked as it is (see above)
    if task.coreCount == 1:
        mismatch = (cores > 1) & ~ucore
    elif task.coreCount > 1:
        mismatch = (cores <= 1) & ~ucore
    else:
        mismatch = np.zeros(len(c.names), dtype=bool)
    too_many = np.zeros(len(c.names), dtype=bool)
    if task.maxCoreCount:
        too_many = c["job_cores"] > task.maxCoreCount

    def code() -> np.ndarray:  # made only for a skip
        return np.where(mismatch, "cpucore", "max_cpucore")

    return Rejection(
        mismatch | too_many,
        lambda: {  # the job's cores (estimated with its memory and walltime) only when the numbers are read
            "taskCoreCount": task.coreCount,
            "queueCoreCount": cores,
            "capability": c["capability"],
            "jobCoreCount": c["job_cores"],
            "maxCoreCount": task.maxCoreCount,
        },
        code=code,
    )


CORE_COUNT = Filter("core count", "cpucore", core_count)


def software(c: Context) -> Rejection:
    """The `cache` check, once per (task software, candidate list) per snapshot: job sets of the same release
    brokered over one snapshot reuse the verdicts."""
    key = c.plugin.task_software(c.task, c.config)
    cache = c.plugin._snapshot_cache(c.scenario)
    rules, check = c.plugin.software_checker(c.config)
    cache_key = ("software", key, rules, tuple(c.names))
    if cache_key not in cache:
        scenario = c.scenario
        sw_tags, gpu_summary, queues = scenario.sw_tags, scenario.gpu_summary, scenario.queues
        all_entry = sw_tags.get("ALL")
        extra = c.plugin.software_extra
        known = c.plugin.queue_records(scenario)
        # the pseudo-queues of a unified queue have its releases, software and GPUs: checked once for all, the
        # verdict kept as (fails, check, needed, queue)
        by_queue: dict[str, tuple[bool, str, str, str]] = {}
        rows = []
        for name in c.names:
            record, queue = known.get(name) or (queues[name], name)
            row = by_queue.get(queue)
            if row is None:
                ok, detail = check(
                    key,
                    record.get("releases"),
                    sw_tags.get(queue),
                    all_entry,
                    gpu_summary.get(queue),
                    **extra(record),
                )
                row = by_queue[queue] = (not ok, *(str(detail.get(k, "")) for k in ("check", "needed", "queue")))
            rows.append(row)
        fails, checks, needed, queue_side = zip(*rows, strict=False) if rows else [()] * 4
        cache[cache_key] = Rejection(
            np.array(fails, dtype=bool),
            {
                "check": np.array(checks, dtype=object),
                "needed": np.array(needed, dtype=object),
                "queue": np.array(queue_side, dtype=object),
            },
        )
    return cache[cache_key]


SOFTWARE = Filter("software", "cache", software)


def memory(c: Context) -> Rejection:
    if c.config.get("MEMORY_RULE") == "panda" and c.scenario.jobs.isMerge:
        # InputChunk.getMaxRamCount (1.0.4): a merge asks the task's mergeRamCount, which no scenario carries:
        # no requirement, no check
        return NOTHING_FAILS
    needed, maxrss, minrss = c["memory_needed"], c["maxrss"], c["minrss"]
    low = (maxrss > 0) & (needed > maxrss)
    high = (minrss > 0) & (needed < minrss)
    return Rejection(
        low | high,
        {
            "neededMB": needed,
            "maxrss": maxrss,
            "minrss": minrss,
            "ramCount": c.task.ramCount,
            "ramUnit": c.task.ramUnit,
            "baseRamCount": c.task.baseRamCount,
            "jobCoreCount": c["job_cores"],
        },
        code=lambda: np.where(low, "lowmemory", "highmemory"),
    )


MEMORY = Filter("memory", "lowmemory", memory)


def direct_access(c: Context) -> Rejection:
    if c.task.allowInputLAN != "only":
        return NOTHING_FAILS
    able = c["direct_access_lan"]
    if c.config.get("DIRECT_IO_RULE") == "panda":
        # AtlasProdJobBroker "disk check" (1.0.4): merges are not asked; maxinputsize -1 reads directly too
        if c.scenario.jobs.isMerge:
            return NOTHING_FAILS
        able = able | c["always_direct"]
    return Rejection(
        ~able,
        {"allowInputLAN": "only", "direct_access_lan": c["direct_access_lan"], "directAlways": c["always_direct"]},
    )


DIRECT_ACCESS = Filter("direct access", "remoteio", direct_access)


def disk(c: Context) -> Rejection:
    per_core = c["maxwdir_per_core"]
    if c.config.get("JOB_DISK_RULE") == "panda":
        too_small = (per_core > 0) & (c["disk_needed"] > per_core)
        return Rejection(too_small, {"neededMB": c["disk_needed"], "maxwdirPerCore": per_core})
    too_small = (per_core > 0) & ~(per_core > c["disk_needed"])
    with np.errstate(invalid="ignore"):
        no_room = ~np.isnan(c["output_free"]) & ~(c["output_free"] > LOCAL_STORAGE_FLOOR_GB)
    return Rejection(
        too_small | no_room,
        {
            "neededMB": c["disk_needed"],
            "maxwdirPerCore": per_core,
            "storageFreeGB": c["output_free"],
            "storageFloorGB": 200,
        },
    )


DISK = Filter("disk", "disk", disk)


def storage_space(c: Context) -> Rejection:
    """panda (JOB_DISK_RULE): the output storage's usable space (free + expired) below 200 GB; the seed's
    storage floor is part of the disk filter."""
    if c.config.get("JOB_DISK_RULE") != "panda":
        return NOTHING_FAILS
    with np.errstate(invalid="ignore"):
        no_room = ~np.isnan(c["output_usable"]) & (c["output_usable"] < LOCAL_STORAGE_FLOOR_GB)
    return Rejection(no_room, {"storageUsableGB": c["output_usable"], "storageFloorGB": 200})


STORAGE_SPACE = Filter("storage space", "disk", storage_space)


def walltime(c: Context) -> Rejection:
    jobs = c.scenario.jobs
    if c.config.get("JOB_WALLTIME_RULE") == "panda":
        return walltime_panda(c)
    return walltime_rejection(c, needs_a_day=jobs.isScout or c["walltime_undefined"])


WALLTIME = Filter("walltime", "shortwalltime", walltime)


def walltime_panda(c: Context) -> Rejection:
    """AtlasProdJobBroker "walltime check" (1.0.4) in HS06 seconds: cpuTime × nEvents against the queue's
    (maxtime − baseWalltime) × cores × corepower × efficiency; scouts, merges and jobs whose walltime is
    undefined need 24 h × 10 HS06 × cores of it; a mintime above the job's need skips it too."""
    task, jobs = c.task, c.scenario.jobs
    needed = c["hs06_needed"]
    maxtime, mintime = c["maxtime"], c["mintime"]
    max_hs06, min_hs06 = c["maxtime_hs06"], c["mintime_hs06"]
    with np.errstate(invalid="ignore"):
        short = (maxtime != 0) & (needed > 0) & (needed > max_hs06)
    undefined = task.cpuTime is None or task.cpuTime == 0
    if c.config.get("PREASSIGNMENT_RULE") == "panda":
        scout = jobs.isScout and preassign_mode(c) != "site"
    else:
        scout = jobs.isScout and not jobs.preassigned
    needs_a_day = scout or jobs.isMerge or undefined
    day = np.full(len(c.names), False)
    if needs_a_day:
        day = (max_hs06 != 0) & (max_hs06 < DAY_OF_HS06 * c["corecount"]) & ~short
    with np.errstate(invalid="ignore"):
        long = (mintime != 0) & ~(needed >= min_hs06) & ~short & ~day

    def code() -> np.ndarray:  # made only for a skip
        day_code = "scout_walltime" if jobs.isScout else "min_walltime"
        return np.where(short, "shortwalltime", np.where(day, day_code, "longwalltime"))

    return Rejection(
        short | day | long,
        {"hs06Needed": needed, "maxtimeHS06": max_hs06, "mintimeHS06": min_hs06, "maxtime": maxtime},
        code=code,
    )


def connectivity(c: Context) -> Rejection:
    if not c.task.ipConnectivity or preassign_mode(c) == "site":
        return NOTHING_FAILS
    task_network, task_stack = split_connectivity(c.task.ipConnectivity)
    values, inverse = c["connectivity_values"], c["connectivity_index"]
    panda = c.config.get("CONNECTIVITY_RULE") == "panda"
    if panda:
        # JediTaskSpec.setIpConnectivity (1.0.4) keeps only full or http, and IPv4 or IPv6
        task_network = task_network if task_network in ("full", "http") else ""
        task_stack = task_stack if task_stack in ("IPv4", "IPv6") else ""
        if not task_network and not task_stack:
            return NOTHING_FAILS
    verdicts = []
    for text in values.tolist():  # once per distinct wnconnectivity
        queue_network, queue_stack = split_connectivity(text)
        if panda:
            # AtlasProdJobBroker "network connectivity" (1.0.4): a full queue takes any task, an http one http
            # tasks; a queue that says nothing takes none; the IP stack must be the same
            network_ok = not task_network or queue_network == "full" or queue_network == task_network == "http"
            stack_ok = not task_stack or queue_stack == task_stack
        else:
            network_ok = task_network in NETWORK_ACCEPTS.get(queue_network or "full", set())
            # A task without an IP stack runs anywhere; one that names it needs a queue with that stack.
            stack_ok = not task_stack or queue_stack.lower() == task_stack.lower()
        verdicts.append(not (network_ok and stack_ok))
    fails = np.array(verdicts, dtype=bool)[inverse] if len(values) else np.zeros(0, dtype=bool)
    return Rejection(fails, {"ipConnectivity": c.task.ipConnectivity, "wnconnectivity": c["wnconnectivity"]})


NETWORK_CONNECTIVITY = Filter("network connectivity", "network", connectivity)


def event_service(c: Context) -> Rejection:
    """Event-service tasks need jobseed es, eshigh or all; normal ones avoid queues that take ES only."""
    if preassign_mode(c) == "site":
        return NOTHING_FAILS
    seeds = c["jobseed"]
    if c.config.get("ES_RULE") == "panda":
        # AtlasProdJobBroker "selection for event service" (1.0.4, 1255-1290): an event-service task avoids std
        # queues, and eshigh ones unless it is urgent (priority 900 or more, or scouts), and the 1-core
        # pseudo-queues of unified queues; other tasks avoid es queues
        if c.task.eventService:
            high = c.task.currentPriority >= 900 or c.scenario.jobs.isScout
            fails = (seeds == "std") | ((seeds == "eshigh") & (not high)) | (c["is_pseudo"] & (c["corecount"] == 1))
        else:
            fails = seeds == "es"
        return Rejection(fails, {"eventService": c.task.eventService, "jobseed": seeds})
    fails = ~among(seeds, ("es", "eshigh", "all")) if c.task.eventService else seeds == "es"
    return Rejection(fails, {"eventService": c.task.eventService, "jobseed": seeds})


EVENT_SERVICE = Filter("event service", "es", event_service)
