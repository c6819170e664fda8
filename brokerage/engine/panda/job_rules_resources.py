"""What a job asks of a queue, each rule's estimate beside its check: direct input access, the job's cores, memory,
scratch disk (and the output storage's space), walltime. The estimates are seed 002's and seed 000's formulas or,
under the `panda` profile, panda-server 1.0.4's (AtlasProdJobBroker, CoreUtils, JobUtils); every estimate is an
array over the candidate queues, made when a rule first reads it (JobGrid.prepare: ESTIMATE_KEYS)."""

from __future__ import annotations

import numpy as np

from brokerage.engine.core.plugin import NOTHING_FAILS, Context, Filter, Rejection, Variants, never
from brokerage.engine.panda.job_candidates import counts_as_scout
from brokerage.engine.panda.records import DEFAULT_COREPOWER

# seed 002: cpuEfficiency defaults to 90 %, baseWalltime to 600 s
DEFAULT_CPU_EFFICIENCY = 90.0
DEFAULT_BASE_WALLTIME = 600.0
# seed 000: memory is compared at 90 %; disk needs at least 1.5 GB of output and 300 MB of work directory
MEMORY_COMPENSATION = 0.9
DISK_OUTPUT_FLOOR_MB = 1.5 * 1024
DISK_WORK_FLOOR_MB = 300.0
# panda-server 1.0.4 InputChunk.defaultOutputSize: 1500 MB, not the seed's 1.5 GB
PANDA_DEFAULT_OUTPUT_MB = 1500
LOCAL_STORAGE_FLOOR_GB = 200.0
SCOUT_MIN_MAXTIME = 24 * 3600
# panda-server 1.0.4: scouts, merges and walltime-undefined jobs need 24 h of a 10 HS06 core
DAY_OF_HS06 = 24 * 3600 * 10


def job_estimates(task, jobs, arrays, config) -> None:
    """Every estimate of a job set at each queue, in the order they read one another, each by its variant."""
    direct_io_estimate.pick(config)(task, jobs, arrays)
    job_cores_estimate(task, arrays)
    memory_estimate.pick(config)(task, arrays)
    work_dir_estimate.pick(config)(task, arrays)
    disk_estimate.pick(config)(task, jobs, arrays)
    corepower_estimate.pick(config)(task, arrays)
    walltime_estimate(task, jobs, arrays)
    walltime_limits_estimate.pick(config)(task, jobs, arrays)


def events_per_job(task, jobs) -> int | None:
    return jobs.nEvents if jobs.nEvents is not None else task.nEventsPerJob


# --- direct access: the input read over LAN instead of copied to the worker node ---


def direct_io_seed(task, jobs, arrays) -> None:
    arrays["direct_io"] = arrays["direct_access_lan"]


def direct_io_panda(task, jobs, arrays) -> None:
    """CoreUtils.use_direct_io_for_job (1.0.4): never for merges; always at a queue with maxinputsize -1; else
    when the task allows input over LAN (use or only) and the queue reads directly."""
    if jobs.isMerge:
        arrays["direct_io"] = np.zeros(len(arrays["corecount"]), dtype=bool)
    else:
        arrays["direct_io"] = arrays["always_direct"] | (arrays["direct_access_lan"] & bool(task.allowInputLAN))


direct_io_estimate = Variants("DIRECT_IO_RULE", seed=direct_io_seed, panda=direct_io_panda)


def direct_access(context: Context) -> Rejection:
    """seed 000: a task reading its input only over LAN (allowInputLAN only) needs a queue that reads directly."""
    if context.task.allowInputLAN != "only":
        return NOTHING_FAILS
    return _direct_access_rejection(context, context["direct_access_lan"])


def direct_access_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "disk check" (1.0.4): merges are not asked; maxinputsize -1 reads directly too."""
    if context.task.allowInputLAN != "only" or context.scenario.jobs.isMerge:
        return NOTHING_FAILS
    return _direct_access_rejection(context, context["direct_access_lan"] | context["always_direct"])


def _direct_access_rejection(context: Context, able: np.ndarray) -> Rejection:
    return Rejection(
        ~able,
        {
            "allowInputLAN": "only",
            "direct_access_lan": context["direct_access_lan"],
            "directAlways": context["always_direct"],
        },
    )


DIRECT_ACCESS = Filter(
    "direct access", "remoteio", Variants("DIRECT_IO_RULE", seed=direct_access, panda=direct_access_panda)
)


# --- the job's cores (its check, core count, is with the worker-node rules) ---


def job_cores_estimate(task, arrays) -> None:
    """The job's cores at each queue: single-core tasks 1, multi-core ones the queue's, 0 = the queue's."""
    queue_cores = arrays["corecount"]
    if task.coreCount == 1:
        arrays["job_cores"] = np.ones_like(queue_cores)
    else:
        arrays["job_cores"] = np.where(queue_cores > 1, queue_cores, max(task.coreCount, 1))


# --- memory ---


def memory_seed(task, arrays) -> None:
    """seed 000: (baseRamCount + ramCount × the job's cores) for per-core RAM, their sum otherwise, at 90 %."""
    base, ram, job_cores = task.baseRamCount or 0.0, task.ramCount or 0.0, arrays["job_cores"]
    per_core = "percore" in (task.ramUnit or "").lower()
    needed = (base + ram * job_cores) if per_core else np.full_like(job_cores, base + ram)
    arrays["memory_needed"] = needed * MEMORY_COMPENSATION


def memory_panda(task, arrays) -> None:
    """AtlasProdJobBroker "memory check" (1.0.4): RAM × the queue's cores + baseRamCount for per-core RAM (the
    task's RAM alone otherwise), then JobUtils.compensate_ram_count: whole MB of 90 %."""
    base, ram, queue_cores = task.baseRamCount or 0.0, task.ramCount or 0.0, arrays["corecount"]
    per_core = "percore" in (task.ramUnit or "").lower()
    needed = (ram * queue_cores + base) if per_core else np.full_like(queue_cores, ram)
    arrays["memory_needed"] = np.floor(needed * MEMORY_COMPENSATION)


memory_estimate = Variants("MEMORY_RULE", seed=memory_seed, panda=memory_panda)


def memory(context: Context) -> Rejection:
    """The job's memory against the queue's maxrss (lowmemory) and minrss (highmemory); 0 is no limit."""
    needed, maxrss, minrss = context["memory_needed"], context["maxrss"], context["minrss"]
    low = (maxrss > 0) & (needed > maxrss)
    high = (minrss > 0) & (needed < minrss)
    task = context.task
    return Rejection(
        low | high,
        {
            "neededMB": needed,
            "maxrss": maxrss,
            "minrss": minrss,
            "ramCount": task.ramCount,
            "ramUnit": task.ramUnit,
            "baseRamCount": task.baseRamCount,
            "jobCoreCount": context["job_cores"],
        },
        code=lambda: np.where(low, "lowmemory", "highmemory"),
    )


def memory_panda_check(context: Context) -> Rejection:
    """InputChunk.getMaxRamCount (1.0.4): a merge asks the task's mergeRamCount, which no scenario carries: no
    requirement, no check; so does a task without ramCount (its getMaxRamCount is the chunk's 0, and the check runs
    only for a requirement: AtlasProdJobBroker.py 873-874). Other job sets as the seed."""
    if context.scenario.jobs.isMerge or not context.task.ramCount:
        return NOTHING_FAILS
    return memory(context)


memory_check = Variants("MEMORY_RULE", seed=memory, panda=memory_panda_check)
MEMORY = Filter("memory", "lowmemory", memory_check)


# --- scratch disk and the output storage ---


def work_dir_per_core(task, arrays) -> None:
    """seed 000: the queue's maxwdir per core."""
    arrays["maxwdir_per_core"] = arrays["maxwdir"] / arrays["corecount"]


def work_dir_single_core_task(task, arrays) -> None:
    """MAXWDIR_SCALING single_core_task, panda-server 1.0.4: maxwdir × task cores ÷ queue cores, the task's cores
    being 1 only for a single-core (non event service) task, the queue's otherwise. The check runs per unified
    queue (get_unified_sites), so a pseudo-queue divides by its unified queue's cores."""
    single = task.coreCount in (0, 1) and not task.eventService
    arrays["maxwdir_per_core"] = arrays["maxwdir"] / np.where(single, arrays["unified_corecount"], 1.0)


work_dir_estimate = Variants("MAXWDIR_SCALING", seed=work_dir_per_core, single_core_task=work_dir_single_core_task)


def disk_seed(task, jobs, arrays) -> None:
    """seed 000, in MB: input + max(1.5 GB, output) + max(300 MB, work dir); the input is 0 with direct access."""
    unit = (task.outDiskUnit or "kB").lower()
    n_events = events_per_job(task, jobs)
    input_mb = np.where(arrays["direct_io"], 0.0, jobs.inputSizeMB)
    out_count = (task.outDiskCount or 0.0) / (1024.0 if unit.startswith("kb") else 1.0)
    output_mb = out_count * (n_events or 0) if unit.endswith("perevent") else out_count * jobs.inputSizeMB
    arrays["disk_needed"] = (
        input_mb + max(DISK_OUTPUT_FLOOR_MB, output_mb) + max(DISK_WORK_FLOOR_MB, task.workDiskCount or 0)
    )


def effective_input_mb(jobs) -> float:
    """InputChunk.getMaxAtomSize(effectiveSize=True) (1.0.4) of a job: its master input in MB, a file without a
    size counting as 1 MB (CoreUtils.getEffectiveFileSize), so a job without input counts 1 MB a file."""
    return jobs.inputSizeMB if jobs.inputSizeMB > 0 else float(max(jobs.nFiles, 1))


def output_bytes(task, jobs, *, per_event: bool = True) -> float:
    """JediTaskSpec.getOutDiskSize × the job's scale (1.0.4): outDiskCount in bytes (its unit's prefix GB, MB or
    kB; none is bytes) per event of the job when the unit is per event (production only: `per_event`), else per MB
    of effective input (AtlasProdJobBroker.py 929-932, AtlasAnalJobBroker.py 1109-1113; outDiskUnit "kB" is kB of
    output per MB of input)."""
    unit = task.outDiskUnit or "kB"
    factor = {"GB": 1024**3, "MB": 1024**2, "kB": 1024}.get(unit[:2], 1)
    per_unit = max(task.outDiskCount or 0.0, 0.0) * factor
    if per_event and "PerEvent" in unit:
        return per_unit * (events_per_job(task, jobs) or 0)
    return per_unit * effective_input_mb(jobs)


def work_dir_bytes(task) -> float:
    """JediTaskSpec.getWorkDiskSize (1.0.4): workDiskCount in its unit plus a 300 MB safety margin; 0 when the
    task sets none."""
    if task.workDiskCount is None:
        return 0.0
    factor = {"GB": 1024**3, "MB": 1024**2, "kB": 1024}.get(task.workDiskUnit, 1)
    return task.workDiskCount * factor + DISK_WORK_FLOOR_MB * 1024**2


def disk_panda(task, jobs, arrays) -> None:
    """AtlasProdJobBroker "disk check" (1.0.4, 929-938), in bytes then whole MB: max(output, InputChunk.
    defaultOutputSize 1500 MB) + the work directory + the input unless read directly. Worked: 500 kB per MB of a
    4,096 MB input is 2,000 MB of output; + 4,096 MB copied in = 6,096 MB."""
    output = max(output_bytes(task, jobs), PANDA_DEFAULT_OUTPUT_MB * 1024**2)
    input_bytes = np.where(arrays["direct_io"], 0.0, round(jobs.inputSizeMB * 1024**2))
    arrays["disk_needed"] = np.floor((output + work_dir_bytes(task) + input_bytes) / 1024**2)


disk_estimate = Variants("JOB_DISK_RULE", seed=disk_seed, panda=disk_panda)


def disk(context: Context) -> Rejection:
    """seed 000: the job's disk needs more than the queue's maxwdir per core, or the output storage has 200 GB
    or less free."""
    per_core, needed, free = context["maxwdir_per_core"], context["disk_needed"], context["output_free"]
    too_small = (per_core > 0) & ~(per_core > needed)
    with np.errstate(invalid="ignore"):
        no_room = ~np.isnan(free) & ~(free > LOCAL_STORAGE_FLOOR_GB)
    return Rejection(
        too_small | no_room,
        {"neededMB": needed, "maxwdirPerCore": per_core, "storageFreeGB": free, "storageFloorGB": 200},
    )


def disk_panda_check(context: Context) -> Rejection:
    """panda-server 1.0.4: the work directory alone (the storage is the storage-space rule)."""
    per_core, needed = context["maxwdir_per_core"], context["disk_needed"]
    too_small = (per_core > 0) & (needed > per_core)
    return Rejection(too_small, {"neededMB": needed, "maxwdirPerCore": per_core})


DISK = Filter("disk", "disk", Variants("JOB_DISK_RULE", seed=disk, panda=disk_panda_check))


def storage_space(context: Context) -> Rejection:
    """JOB_DISK_RULE panda: the output storage's usable space (free + expired) below 200 GB. The seed has no such
    rule: its storage floor is part of the disk rule."""
    usable = context["output_usable"]
    with np.errstate(invalid="ignore"):
        no_room = ~np.isnan(usable) & (usable < LOCAL_STORAGE_FLOOR_GB)
    return Rejection(no_room, {"storageUsableGB": usable, "storageFloorGB": 200})


STORAGE_SPACE = Filter("storage space", "disk", Variants("JOB_DISK_RULE", seed=never, panda=storage_space))


# --- walltime ---


def cpu_efficiency(task) -> float:
    return (DEFAULT_CPU_EFFICIENCY if task.cpuEfficiency is None else task.cpuEfficiency) / 100.0


def base_walltime(task) -> float:
    return DEFAULT_BASE_WALLTIME if task.baseWalltime is None else task.baseWalltime


def corepower_default(task, arrays) -> None:
    """seed 000: a queue whose CRIC record gives no corepower (null or 0) counts 10 HS06 a core."""
    corepower = arrays["corepower"]
    arrays["queue_corepower"] = np.where(corepower > 0, corepower, DEFAULT_COREPOWER)


def corepower_as_given(task, arrays) -> None:
    """CRIC_QUEUE_RULE panda: corepower as CRIC gives it, null being 0 (entity_module.py 1855-1858, 1.0.4): the
    queue's HS06 walltime limits are then 0, and any job with a cpuTime is -shortwalltime there."""
    arrays["queue_corepower"] = arrays["corepower"]


corepower_estimate = Variants("CRIC_QUEUE_RULE", seed=corepower_default, panda=corepower_as_given)


def walltime_estimate(task, jobs, arrays) -> None:
    """seed 000/002, in seconds: cpuTime × nEvents / (cores × corepower × efficiency) + baseWalltime."""
    n_events, job_cores = events_per_job(task, jobs), arrays["job_cores"]
    efficiency, base = cpu_efficiency(task), base_walltime(task)
    arrays["walltime_undefined"] = not task.cpuTime or n_events is None
    if arrays["walltime_undefined"]:
        arrays["walltime"] = np.full_like(job_cores, np.nan)
    elif efficiency == 0:
        arrays["walltime"] = np.full_like(job_cores, base)
    else:
        with np.errstate(divide="ignore"):  # a corepower of 0 (CRIC_QUEUE_RULE panda): no limit reached, inf
            arrays["walltime"] = task.cpuTime * n_events / (job_cores * arrays["queue_corepower"] * efficiency) + base


def walltime_hs06_estimate(task, jobs, arrays) -> None:
    """JOB_WALLTIME_RULE panda: the job's need, cpuTime × nEvents, and the queue's limits in HS06 seconds,
    (maxtime − baseWalltime) × cores × corepower × efficiency. A limit of 0 ("none") stays 0: cores and corepower
    are finite, so the products of 0 are 0."""
    needed = np.nan if task.cpuTime is None else task.cpuTime * (events_per_job(task, jobs) or 0)
    if task.eventService and needed:
        # an event-service job's events are shared by its consumers and its attempts (AtlasProdJobBroker.py
        # 1031-1041, 1088): cpuTime × nEvents / nEsConsumers / maxAttemptEsJob, the latter 3 when the task sets none
        # (EventServiceUtils.defMaxAttemptEsJob), else the task's + 1
        attempts = 3 if task.maxAttemptEsJob is None else task.maxAttemptEsJob + 1
        needed /= (task.nEsConsumers or 1) * attempts
    arrays["hs06_needed"] = needed
    offset = base_walltime(task) if task.cpuTime is not None else 0.0
    for limit in ("maxtime", "mintime"):
        value = (arrays[limit] - offset) * arrays["corecount"]
        if task.cpuTime is not None:
            value = np.trunc(value * arrays["queue_corepower"] * cpu_efficiency(task))
        arrays[f"{limit}_hs06"] = value


def no_estimate(task, jobs, arrays) -> None:
    """The seed's walltime rule reads no HS06 arrays."""


walltime_limits_estimate = Variants("JOB_WALLTIME_RULE", seed=no_estimate, panda=walltime_hs06_estimate)


def walltime_rejection(context: Context, *, needs_a_day: bool) -> Rejection:
    """seed 000 walltime: jobs that need a day (scouts, undefined walltime; merges too for analysis) are skipped
    at queues whose maxtime is under 24 h; others when the estimate is above maxtime or below mintime."""
    maxtime, mintime, walltime = context["maxtime"], context["mintime"], context["walltime"]
    if needs_a_day:
        return Rejection(
            (maxtime > 0) & (maxtime < SCOUT_MIN_MAXTIME),
            {"maxtime": maxtime, "requiredMaxtime": SCOUT_MIN_MAXTIME, "scout": context.scenario.jobs.isScout},
            code=np.full(len(context.names), "scout_walltime", dtype=object),
        )
    long = (maxtime > 0) & (walltime > maxtime)
    short = (mintime > 0) & (walltime < mintime)
    return Rejection(
        long | short,
        {"walltime": walltime, "maxtime": maxtime, "mintime": mintime},
        code=lambda: np.where(long, "shortwalltime", "min_walltime"),
    )


def walltime(context: Context) -> Rejection:
    """seed 000: scouts and jobs whose walltime is undefined need a day; others their estimate."""
    return walltime_rejection(context, needs_a_day=context.scenario.jobs.isScout or context["walltime_undefined"])


def walltime_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "walltime check" (1.0.4) in HS06 seconds: cpuTime × nEvents against the queue's
    (maxtime − baseWalltime) × cores × corepower × efficiency; scouts, merges and jobs whose walltime is
    undefined need 24 h × 10 HS06 × cores of it; a mintime above the job's need skips it too."""
    task, jobs = context.task, context.scenario.jobs
    needed = context["hs06_needed"]
    maxtime, mintime = context["maxtime"], context["mintime"]
    max_hs06, min_hs06 = context["maxtime_hs06"], context["mintime_hs06"]
    with np.errstate(invalid="ignore"):
        short = (maxtime != 0) & (needed > 0) & (needed > max_hs06)
    undefined = task.cpuTime is None or task.cpuTime == 0
    needs_a_day = counts_as_scout(context) or jobs.isMerge or undefined
    day = np.full(len(context.names), False)
    if needs_a_day:
        day = (max_hs06 != 0) & (max_hs06 < DAY_OF_HS06 * context["corecount"]) & ~short
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


WALLTIME = Filter("walltime", "shortwalltime", Variants("JOB_WALLTIME_RULE", seed=walltime, panda=walltime_panda))
