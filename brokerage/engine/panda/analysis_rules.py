"""The analysis job broker's own rules (seed 000 "ATLAS Analysis Job Brokerage"; panda-server 1.0.4
AtlasAnalJobBroker), each with its filter, name and skip code; the rules it shares with production are in the
job_rules modules. `reusable` rules give the second loop the verdict of the first."""

from __future__ import annotations

import functools
import re

import numpy as np

from brokerage.engine.core.plugin import NOTHING_FAILS, Context, Filter, Rejection, Variants, among
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda import job_rules_data, job_rules_resources, job_rules_site, job_rules_worker
from brokerage.engine.panda.job_rules_resources import walltime_rejection
from brokerage.engine.panda.software_panda import anal_gpu_queue_ok

# seed 000: the data-locality check is off for tasks of priority ≥ 2000
LOCALITY_PRIORITY = 2000
QUEUE_LENGTH_RUNNING_FLOOR = 20


def matches_site_list(names: tuple[str, ...], queue: str, site: str = "") -> bool:
    """includedSite/excludedSite name queues (seed 000: "the queues are included in the list"; issue 33 D11: never
    their sites), as AtlasBrokerUtils.isMatched (1.0.4, 476-491) compares them: a name with * is a regular
    expression searched in the queue's name (* as .*), any other must equal it."""
    for pattern in names:
        if not pattern:
            continue
        if "*" in pattern:
            if site_pattern(pattern).search(queue):
                return True
        elif pattern == queue:
            return True
    return False


@functools.lru_cache(maxsize=1024)
def site_pattern(text: str) -> re.Pattern:
    try:
        return re.compile(text.replace("*", ".*"))
    except re.error:
        return re.compile(re.escape(text).replace(r"\*", ".*"))


def catchall_keys(text: str) -> set[str]:
    return {item.strip().partition("=")[0] for item in text.split(",") if item.strip()}


def sites_panda(c: Context) -> bool:
    return c.config.get("ANALYSIS_SITES_RULE") == "panda"


def site_mode(c: Context) -> bool:
    """ANALYSIS_SITES_RULE panda and the task's site names a queue: the real broker keeps that queue to the end,
    re-appended after the problematic queues are dropped (AtlasAnalJobBroker 2277-2278, 1.0.4)."""
    return sites_panda(c) and c.plugin.site_preassignment(c.scenario)[0] == "site"


def locality_suppressed(scenario: Scenario) -> str:
    """seed 000: no locality check for taskPriority ≥ 2000, ioIntensity ≤ IO_INTENSITY_CUTOFF_USER, or when
    the task's last successful cycle is older than DATA_CHECK_TIMEOUT_USER hours."""
    task, config = scenario.task, scenario.config
    if task.taskPriority >= LOCALITY_PRIORITY:
        return f"taskPriority {task.taskPriority} ≥ {LOCALITY_PRIORITY}"
    cutoff = config.get("IO_INTENSITY_CUTOFF_USER")
    if cutoff is not None and (task.ioIntensity or 0.0) <= cutoff:
        return f"ioIntensity {task.ioIntensity or 0:g} ≤ IO_INTENSITY_CUTOFF_USER {cutoff:g}"
    timeout = config.get("DATA_CHECK_TIMEOUT_USER")
    hours = scenario.user_stats.get("hoursSinceLastSuccess")
    if timeout is not None and hours is not None and hours > timeout:
        return f"last successful cycle {hours:g} h ago > DATA_CHECK_TIMEOUT_USER {timeout:g} h"
    return ""


def excluded(c: Context) -> Rejection:
    names = c.task.excludedSite
    fails = (
        np.array([matches_site_list(names, q, s) for q, s in zip(c["unified"], c["site"], strict=True)], dtype=bool)
        if names
        else np.zeros(len(c.names), dtype=bool)
    )
    return Rejection(fails, {"excludedSite": ",".join(names)})


ANALYSIS_EXCLUDED_SITES = Filter("excluded sites", "excluded", excluded, reusable=True)


def included(c: Context) -> Rejection:
    names = c.task.includedSite
    if sites_panda(c) and c.task.site:
        mode, readers = c.plugin.site_preassignment(c.scenario)
        if mode == "endpoint":
            names = readers  # the queues reading the named endpoint replace the task's includedSite
        elif mode == "":
            names = ()  # a site naming nothing known drops the includedSite list with it (1.0.4, 126-134)
    if not names:
        return NOTHING_FAILS
    fails = np.array(
        [not matches_site_list(names, q, s) for q, s in zip(c["unified"], c["site"], strict=True)], dtype=bool
    )
    return Rejection(fails, {"includedSite": ",".join(names)})


ANALYSIS_INCLUDED_SITES = Filter("included sites", "notincluded", included, reusable=True)


def analysis_status(c: Context) -> Rejection:
    """Online, unless pre-assigned through includedSite or site (seed 000). ANALYSIS_SITES_RULE panda
    (AtlasAnalJobBroker "selection for status", 1.0.4): offline queues are always out; brokeroff and test ones
    stay when the task names includedSite, or when the queue is the one its `site` names; others stay."""
    if sites_panda(c):
        status = c["status"]
        mode, _ = c.plugin.site_preassignment(c.scenario)
        lenient = bool(c.task.includedSite)
        at_site = (c["unified"] == c.task.site) if mode == "site" else np.zeros(len(c.names), dtype=bool)
        down = among(status, ("brokeroff", "test")) & ~(lenient | at_site)
        return Rejection((status == "offline") | down, {"status": status, "required": "online"})
    offline = c["status"] != "online"
    chosen = tuple(c.task.includedSite) + ((c.task.site,) if c.task.site else ())
    if chosen:
        preassigned = np.array(
            [matches_site_list(chosen, q, s) for q, s in zip(c["unified"], c["site"], strict=True)], dtype=bool
        )
        offline = offline & ~preassigned
    return Rejection(offline, {"status": c["status"], "required": "online"})


ANALYSIS_QUEUE_STATUS = Filter("queue status", "status", analysis_status, reusable=True)


def locality(c: Context) -> Rejection:
    # ANALYSIS_LOCALITY_RULE panda: the first loop always checks locality (the second loop goes without)
    suppressed = c.config.get("ANALYSIS_LOCALITY_RULE") != "panda" and locality_suppressed(c.scenario)
    if suppressed or not c.scenario.datasets:
        return NOTHING_FAILS
    if c.config.get("ANALYSIS_LOCALITY_RULE") == "panda":
        return locality_panda(c)
    with_data = c.alive & (c["missing_files"] == 0)
    if not c.config.get("ANALYSIS_SKIP_CLOSED") and with_data.any() and np.all(c["task_closed"][with_data] > 0):
        # seed 002 "Input data transfer": every queue with the data has closed jobs of the task in the last
        # 6 h (busy, its jobs got no CPU): new jobs go to the other queues, with their input
        return Rejection(
            with_data,
            {"closed": c["task_closed"], "windowHours": c.config.get("TW_DONE_JOB_STAT"), "rule": "input moved"},
            code=np.full(len(c.names), "closed", dtype=object),
        )
    return Rejection(
        c["missing_files"] > 0,
        {"missingFiles": c["missing_files"], "totalFiles": c["total_files"], "availableGB": c["local_size"]},
    )


ANALYSIS_DATA_LOCALITY = Filter("data locality", "fileunavailable", locality)


def locality_panda(c: Context) -> Rejection:
    """AtlasAnalJobBroker "input data check" (1.0.4, 538-640) with AtlasBrokerUtils.getAnalSitesWithDataDisk:
    per dataset, the queues reading a complete copy (disk or tape), or, when none does, those reading any copy
    (and both when no readable disk copy anywhere is complete and no queue has a complete one on disk); a
    queue needs every dataset. Queues with the data on disk go before those with it on tape only; when no
    queue has all of it, those with some of it (union). A task pre-assigned to a queue (ANALYSIS_SITES_RULE
    panda) needs that queue among them. The real check scans every analysis queue, before any other filter, so
    the lists are made over all of them (a pre-assigned task's candidates are its queue alone)."""
    scan, disk, union, disk_union, _ = c.plugin.data_sites(c.scenario)
    unified = c["unified"].tolist()
    if site_mode(c):
        chosen = scan | union
    elif disk:
        chosen = disk
    elif not scan and union:
        chosen = disk_union or union
    else:
        chosen = scan
    has = np.array([name in chosen for name in unified], dtype=bool)
    # the numbers a shifter reads (the data at each queue, which the verdict does not need): made when read
    return Rejection(
        ~has,
        lambda: {
            "missingFiles": c["missing_files"],
            "totalFiles": c["total_files"],
            "availableGB": c["local_size"],
        },
    )


def vp(c: Context) -> Rejection:
    """seed 000: VP queues are skipped when the task says avoidVP or they are overloaded. Overloaded is the
    queue-length rule on the queue's own numbers, unless the scenario states vpOverloaded."""
    avoid = c.task.avoidVP
    overloaded = np.where(c["vp_overloaded_given"], c["vp_overloaded"], too_long(c))
    fails = c["vp"] & (avoid | overloaded)
    return Rejection(
        fails,
        {"avoidVP": avoid, "vpOverloaded": overloaded, "queued": c["queued_all"], "running": c["running_real"]},
    )


def vp_panda(c: Context) -> Rejection:
    """ANALYSIS_VP_RULE panda, AtlasAnalJobBroker "avoid VP queue check" (1.0.4): VP queues are avoided for
    avoidVP, merges, no data-locality check, or data found only as a union of sites. Its -overloaded_vp needs data
    placed through VP alone, which no input describes, so the queue-length rule judges VP queues like any other."""
    avoid = c.task.avoidVP
    merging, no_locality = c.scenario.jobs.isMerge, "data locality" in c.plugin.disabled_filters
    union = False
    if not no_locality and c.scenario.datasets and not site_mode(c):
        # no queue has all the data: the union of sites is taken, and VP avoided, as it would transfer
        # to VP (AtlasAnalJobBroker 629-639)
        scan, disk, union_sites, _, _ = c.plugin.data_sites(c.scenario)
        union = not disk and not scan and bool(union_sites)
    if not (avoid or merging or no_locality or union):
        return NOTHING_FAILS  # no reason to avoid a VP queue: none is read
    return Rejection(
        c["vp"],
        {"avoidVP": avoid, "merge": merging, "dataLocalityChecked": not no_locality, "unionLocality": union},
    )


ANALYSIS_VIRTUAL_PLACEMENT = Filter(
    "virtual placement", "overloaded_vp", Variants("ANALYSIS_VP_RULE", seed=vp, panda=vp_panda)
)


def disk(c: Context) -> Rejection:
    """seed 000 analysis disk: (0 with direct access, else input) + outDiskCount × input + workDiskCount
    against maxwdir / corecount, and more than 200 GB free in the local storage. ANALYSIS_STORAGE_FLOOR_RULE
    panda (issue 33 D10): free plus expired, 200 GB or more (AtlasAnalJobBroker 1202-1203: skipped below)."""
    task, jobs = c.task, c.scenario.jobs
    input_mb = np.where(c["direct_access_lan"], 0.0, jobs.inputSizeMB)
    needed = input_mb + (task.outDiskCount or 0.0) * jobs.inputSizeMB + (task.workDiskCount or 0.0)
    per_core = c["maxwdir_per_core"]
    too_small = (per_core > 0) & ~(per_core > needed)
    no_room, space_detail = storage_floor(c)
    detail = {"neededMB": needed, "maxwdirPerCore": per_core, "storageFloorGB": 200, **space_detail}
    return Rejection(too_small | no_room, detail)


def storage_floor_seed(c: Context) -> tuple[np.ndarray, dict]:
    """seed 000: more than 200 GB free in the local storage."""
    space = c["output_free"]
    with np.errstate(invalid="ignore"):
        return ~np.isnan(space) & ~(space > 200), {"storageFreeGB": space}


def storage_floor_panda(c: Context) -> tuple[np.ndarray, dict]:
    """ANALYSIS_STORAGE_FLOOR_RULE panda: free plus expired, 200 GB or more."""
    space = c["output_usable"]
    with np.errstate(invalid="ignore"):
        return ~np.isnan(space) & ~(space >= 200), {"storageUsableGB": space}


storage_floor = Variants("ANALYSIS_STORAGE_FLOOR_RULE", seed=storage_floor_seed, panda=storage_floor_panda)


ANALYSIS_DISK = Filter("disk", "disk", disk, reusable=True)


def walltime(c: Context) -> Rejection:
    """As production, with merge jobs joining scouts and walltime-undefined jobs in the 24 h rule. Under
    JOB_WALLTIME_RULE panda the production rule in HS06 seconds (AtlasAnalJobBroker runs the same checks)."""
    jobs = c.scenario.jobs
    return walltime_rejection(c, needs_a_day=jobs.isScout or jobs.isMerge or c["walltime_undefined"])


ANALYSIS_WALLTIME = Filter(
    "walltime",
    "shortwalltime",
    Variants("JOB_WALLTIME_RULE", seed=walltime, panda=job_rules_resources.walltime_panda),
    reusable=True,
)


def bad_jobs(c: Context) -> Rejection:
    """Skip when nFailed + nClosed ≥ max(2 × nFinished, MIN_BAD_JOBS_TO_SKIP_PQ) in the last TW_DONE_JOB_STAT
    hours (REFERENCE.md)."""
    bad = c["task_failed"] + c["task_closed"]
    limit = np.maximum(2 * c["task_finished"], c.config.get("MIN_BAD_JOBS_TO_SKIP_PQ"))
    # ANALYSIS_BAD_JOBS_STRICT (panda-server 1.0.4): only more than the limit marks the queue problematic
    too_many = bad > limit if c.config.get("ANALYSIS_BAD_JOBS_STRICT") else bad >= limit
    if c["stabilizer_panda"]:
        # AtlasAnalJobBroker 1730-1737 (1.0.4; issue 33 D13): asked only at queues the Analysis Stabilizer's
        # gates let it throttle, where the user has jobs, and never for merges
        too_many = too_many & c["throttleable"] & c["user_listed"] & (not c.scenario.jobs.isMerge)
    if site_mode(c):
        too_many = np.zeros(len(c.names), dtype=bool)  # problematic, but the pre-assigned queue stays
    detail = {
        "failedPlusClosed": bad,
        "limit": limit,
        "finished": c["task_finished"],
        "windowHours": c.config.get("TW_DONE_JOB_STAT"),
    }
    merging = c.scenario.jobs.isMerge
    fails = too_many & (not merging) if c.config.get("ANALYSIS_BAD_JOBS_STRICT") else too_many
    return problematic(c, "bad jobs", fails, "badsite", detail)


ANALYSIS_BAD_JOBS = Filter("bad jobs", "badsite", bad_jobs)


def problematic(c: Context, name: str, fails: np.ndarray, code: str, detail: dict) -> Rejection:
    """ANALYSIS_STABILIZER_RULE panda: AtlasAnalJobBroker marks these queues problematic and weighs them with
    the others before it drops them (AtlasBrokerUtils.skipProblematicSites), so they count in the class sums
    of the new weight; the seed's rule skips them here."""
    if not c["stabilizer_panda"]:
        return Rejection(fails, detail)
    c.arrays.setdefault("late", []).append((name, fails & c.alive, code, detail))
    return NOTHING_FAILS


def closed(c: Context) -> Rejection:
    """ANALYSIS_SKIP_CLOSED (AtlasAnalJobBroker "selection for closed", 1.0.4): any of the task's jobs closed
    at a queue in the window skips it, unless the job set is pre-assigned or merges."""
    jobs = c.scenario.jobs
    site_mode = sites_panda(c) and c.plugin.site_preassignment(c.scenario)[0] == "site"
    if not c.config.get("ANALYSIS_SKIP_CLOSED") or jobs.isMerge or jobs.preassigned or site_mode:
        return NOTHING_FAILS
    return Rejection(c["task_closed"] > 0, {"closed": c["task_closed"]})


ANALYSIS_CLOSED_JOBS = Filter("closed jobs", "closed", closed, reusable=True)


def too_long(c: Context) -> np.ndarray:
    """Per queue, whether its queue is too long for its running jobs: seed 000, more than 2 × max(20, running)
    queued; ANALYSIS_OVERLOAD_RULE panda, more than OVERLOAD_MIN_QUEUE queued and nothing running, or
    queued/running above OVERLOAD_RATIO_OFFSET × the ratio over all queues."""
    return too_long_variant(c)


def too_long_seed(c: Context) -> np.ndarray:
    return c["queued_all"] > 2 * np.maximum(QUEUE_LENGTH_RUNNING_FLOOR, c["running_real"])


def too_long_panda(c: Context) -> np.ndarray:
    queued, running = c["queued_all"], c["running_real"]
    grand = c.plugin.grand_queue_ratio(c.scenario)
    min_queue, offset = c.config.get("OVERLOAD_MIN_QUEUE"), c.config.get("OVERLOAD_RATIO_OFFSET")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(running > 0, queued / np.where(running > 0, running, 1.0), np.inf)
    return (queued > min_queue) & ((running == 0) | (ratio > grand * offset))


too_long_variant = Variants("ANALYSIS_OVERLOAD_RULE", seed=too_long_seed, panda=too_long_panda)


def overload_panda(c: Context) -> Rejection:
    """AtlasAnalJobBroker "un-overloaded sites" (1.0.4): the queue too long (_too_long); when that leaves no
    queue, only those running nothing are skipped (problematic). Merges are not checked."""
    if c.scenario.jobs.isMerge:
        return NOTHING_FAILS
    grand = c.plugin.grand_queue_ratio(c.scenario)
    offset = c.config.get("OVERLOAD_RATIO_OFFSET")
    queued, running = c["queued_all"], c["running_real"]
    idle = (queued > c.config.get("OVERLOAD_MIN_QUEUE")) & (running == 0)
    overloaded = too_long(c)
    if not np.any(c.alive & ~overloaded):
        # every queue overloaded: the check keeps them, but those running nothing are problematic and
        # dropped after ranking (AtlasBrokerUtils.skipProblematicSites), not by the first loop itself
        probe = getattr(c.plugin, "first_loop_probe", False)
        idle = np.zeros_like(idle) if probe or site_mode(c) else idle
        detail = {"queued": queued, "running": running, "grandRatio": round(grand, 4), "ratioOffset": offset}
        return problematic(c, "queue length", idle, "overloaded", detail)
    return Rejection(
        overloaded,
        {"queued": queued, "running": running, "grandRatio": round(grand, 4), "ratioOffset": offset},
    )


def queue_length(c: Context) -> Rejection:
    """seed 000: more than 2 × max(20, running) queued (too_long)."""
    limit = 2 * np.maximum(QUEUE_LENGTH_RUNNING_FLOOR, c["running_real"])
    return Rejection(too_long(c), {"queued": c["queued_all"], "limit": limit, "running": c["running_real"]})


ANALYSIS_QUEUE_LENGTH = Filter(
    "queue length", "overloaded", Variants("ANALYSIS_OVERLOAD_RULE", seed=queue_length, panda=overload_panda)
)


def stabilizer(c: Context) -> Rejection:
    fails = c["throttleable"] & (c["user_queued"] > c["max_q_len"])
    if c["stabilizer_panda"]:
        # AtlasAnalJobBroker 1617-1725 (1.0.4): not for merges, and only where the user has jobs
        fails = fails & c["user_listed"] & (not c.scenario.jobs.isMerge)
    if site_mode(c):
        fails = np.zeros(len(c.names), dtype=bool)  # problematic, but the pre-assigned queue stays
    detail = {
        "userQueued": c["user_queued"],
        "maxQueueLength": c["max_q_len"],
        "queued": c["queued_all"],
        "nQmax": c["nq_max"],
        "userPercentage": c["user_percentage"],
        "running": c["running_real"],
        "toRunningRate": c["trr"],
    }
    return problematic(c, "analysis stabilizer", fails, "tmp_user_problem", detail)


ANALYSIS_STABILIZER = Filter("analysis stabilizer", "tmp_user_problem", stabilizer)


def pilots_panda(c: Context) -> Rejection:
    """PILOT_RULE panda, analysis (AtlasAnalJobBroker "selection for nPilot", 1.0.4; issue 33 D12): no pilot
    in the last 3 hours (no statistics counts as none) skips the queue unless the task is a test task; no
    numSlots exemption, as production has. The seed's rule is production's."""
    if c.task.prodSourceLabel == "test":
        return NOTHING_FAILS
    pilots = c["pilots"]
    return Rejection((pilots == 0) | np.isnan(pilots), {"pilotsLast3h": pilots})  # no statistics: none


ANALYSIS_PILOTS = Filter(
    "pilots", "nopilot", Variants("PILOT_RULE", seed=job_rules_site.pilots, panda=pilots_panda), reusable=True
)


def software(c: Context) -> Rejection:
    """The software check; ANALYSIS_SITES_RULE panda leaves it out for a task pre-assigned to a queue
    (AtlasAnalJobBroker "selection for release" runs only when not sitePreAssigned)."""
    if sites_panda(c) and c.plugin.site_preassignment(c.scenario)[0] == "site":
        if c.config.get("SOFTWARE_RULE") != "panda":
            return NOTHING_FAILS
        # the architecture check at GPU queues comes before, and applies to a pre-assigned queue too
        known = c.plugin.queue_records(c.scenario)
        task = c.plugin.task_software(c.task, c.config)
        fails = []
        for name in c.names:
            record, queue = known.get(name) or (c.scenario.queues[name], name)
            gpu_queue = "gpu" in catchall_keys(record.get("catchall") or "")
            tags = c.scenario.sw_tags.get(queue)
            fails.append(
                gpu_queue
                and not anal_gpu_queue_ok(
                    task,
                    record.get("releases"),
                    tags,
                    c.scenario.sw_tags.get("ALL"),
                    c.scenario.gpu_summary.get(queue),
                )
            )
        fails = np.array(fails, dtype=bool)
        return Rejection(fails, {"check": np.where(fails, "architecture", ""), "needed": c.task.architecture})
    return job_rules_worker.software(c)


ANALYSIS_SOFTWARE = Filter("software", "cache", software, reusable=True)


ANALYSIS_INPUT_COMPLETE = Filter("input complete", "input_missing", job_rules_data.input_complete, reusable=True)


ANALYSIS_DISK_IO = Filter("disk IO", "diskIO", job_rules_data.disk_io_check, reusable=True)


ANALYSIS_CORE_COUNT = Filter("core count", "cpucore", job_rules_worker.core_count, reusable=True)


ANALYSIS_MEMORY = Filter("memory", "lowmemory", job_rules_resources.memory_check, reusable=True)


ANALYSIS_STORAGE_ENDPOINTS = Filter("storage endpoints", "read_lan_blacklist", job_rules_data.endpoints)
