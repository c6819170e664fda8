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


def sites_panda(context: Context) -> bool:
    return context.config.get("ANALYSIS_SITES_RULE") == "panda"


def site_mode(context: Context) -> bool:
    """ANALYSIS_SITES_RULE panda and the task's site names a queue: the real broker keeps that queue to the end,
    re-appended after the problematic queues are dropped (AtlasAnalJobBroker 2277-2278, 1.0.4)."""
    return sites_panda(context) and context.plugin.site_preassignment(context.scenario)[0] == "site"


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


def excluded(context: Context) -> Rejection:
    names = context.task.excludedSite
    fails = (
        np.array(
            [matches_site_list(names, q, s) for q, s in zip(context["unified"], context["site"], strict=True)],
            dtype=bool,
        )
        if names
        else np.zeros(len(context.names), dtype=bool)
    )
    return Rejection(fails, {"excludedSite": ",".join(names)})


ANALYSIS_EXCLUDED_SITES = Filter("excluded sites", "excluded", excluded, reusable=True)


def included(context: Context) -> Rejection:
    names = context.task.includedSite
    if sites_panda(context) and context.task.site:
        mode, readers = context.plugin.site_preassignment(context.scenario)
        if mode == "endpoint":
            names = readers  # the queues reading the named endpoint replace the task's includedSite
        elif mode == "":
            names = ()  # a site naming nothing known drops the includedSite list with it (1.0.4, 126-134)
    if not names:
        return NOTHING_FAILS
    fails = np.array(
        [not matches_site_list(names, q, s) for q, s in zip(context["unified"], context["site"], strict=True)],
        dtype=bool,
    )
    return Rejection(fails, {"includedSite": ",".join(names)})


ANALYSIS_INCLUDED_SITES = Filter("included sites", "notincluded", included, reusable=True)


def analysis_status(context: Context) -> Rejection:
    """Online, unless pre-assigned through includedSite or site (seed 000). ANALYSIS_SITES_RULE panda
    (AtlasAnalJobBroker "selection for status", 1.0.4): offline queues are always out; brokeroff and test ones
    stay when the task names includedSite, or when the queue is the one its `site` names; others stay."""
    if sites_panda(context):
        status = context["status"]
        mode, _ = context.plugin.site_preassignment(context.scenario)
        lenient = bool(context.task.includedSite)
        at_site = (
            (context["unified"] == context.task.site) if mode == "site" else np.zeros(len(context.names), dtype=bool)
        )
        down = among(status, ("brokeroff", "test")) & ~(lenient | at_site)
        return Rejection((status == "offline") | down, {"status": status, "required": "online"})
    offline = context["status"] != "online"
    chosen = tuple(context.task.includedSite) + ((context.task.site,) if context.task.site else ())
    if chosen:
        preassigned = np.array(
            [matches_site_list(chosen, q, s) for q, s in zip(context["unified"], context["site"], strict=True)],
            dtype=bool,
        )
        offline = offline & ~preassigned
    return Rejection(offline, {"status": context["status"], "required": "online"})


ANALYSIS_QUEUE_STATUS = Filter("queue status", "status", analysis_status, reusable=True)


def locality(context: Context) -> Rejection:
    """seed 000 data locality (below); off when locality is suppressed for the task or it has no input."""
    if locality_suppressed(context.scenario) or not context.scenario.datasets:
        return NOTHING_FAILS
    with_data = context.alive & (context["missing_files"] == 0)
    if (
        not context.config.get("ANALYSIS_SKIP_CLOSED")
        and with_data.any()
        and np.all(context["task_closed"][with_data] > 0)
    ):
        # seed 002 "Input data transfer": every queue with the data has closed jobs of the task in the last
        # 6 h (busy, its jobs got no CPU): new jobs go to the other queues, with their input
        return Rejection(
            with_data,
            {
                "closed": context["task_closed"],
                "windowHours": context.config.get("TW_DONE_JOB_STAT"),
                "rule": "input moved",
            },
            code=np.full(len(context.names), "closed", dtype=object),
        )
    return Rejection(
        context["missing_files"] > 0,
        {
            "missingFiles": context["missing_files"],
            "totalFiles": context["total_files"],
            "availableGB": context["local_size"],
        },
    )


def locality_panda(context: Context) -> Rejection:
    """AtlasAnalJobBroker "input data check" (1.0.4, 538-640) with AtlasBrokerUtils.getAnalSitesWithDataDisk:
    per dataset, the queues reading a complete copy (disk or tape), or, when none does, those reading any copy
    (and both when no readable disk copy anywhere is complete and no queue has a complete one on disk); a
    queue needs every dataset. Queues with the data on disk go before those with it on tape only; when no
    queue has all of it, those with some of it (union). A task pre-assigned to a queue (ANALYSIS_SITES_RULE
    panda) needs that queue among them. The real check scans every analysis queue, before any other filter, so
    the lists are made over all of them (a pre-assigned task's candidates are its queue alone)."""
    scan, disk, union, disk_union, _ = context.plugin.data_sites(context.scenario)
    unified = context["unified"].tolist()
    if site_mode(context):
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
            "missingFiles": context["missing_files"],
            "totalFiles": context["total_files"],
            "availableGB": context["local_size"],
        },
    )


def locality_panda_check(context: Context) -> Rejection:
    """ANALYSIS_LOCALITY_RULE panda: the first loop always checks locality (the second loop goes without)."""
    if not context.scenario.datasets:
        return NOTHING_FAILS
    return locality_panda(context)


ANALYSIS_DATA_LOCALITY = Filter(
    "data locality", "fileunavailable", Variants("ANALYSIS_LOCALITY_RULE", seed=locality, panda=locality_panda_check)
)


def vp(context: Context) -> Rejection:
    """seed 000: VP queues are skipped when the task says avoidVP or they are overloaded. Overloaded is the
    queue-length rule on the queue's own numbers, unless the scenario states vpOverloaded."""
    avoid = context.task.avoidVP
    overloaded = np.where(context["vp_overloaded_given"], context["vp_overloaded"], too_long(context))
    fails = context["vp"] & (avoid | overloaded)
    return Rejection(
        fails,
        {
            "avoidVP": avoid,
            "vpOverloaded": overloaded,
            "queued": context["queued_all"],
            "running": context["running_real"],
        },
    )


def vp_panda(context: Context) -> Rejection:
    """ANALYSIS_VP_RULE panda, AtlasAnalJobBroker "avoid VP queue check" (1.0.4): VP queues are avoided for
    avoidVP, merges, no data-locality check, or data found only as a union of sites. Its -overloaded_vp needs data
    placed through VP alone, which no input describes, so the queue-length rule judges VP queues like any other."""
    avoid = context.task.avoidVP
    merging, no_locality = context.scenario.jobs.isMerge, "data locality" in context.plugin.disabled_filters
    union = False
    if not no_locality and context.scenario.datasets and not site_mode(context):
        # no queue has all the data: the union of sites is taken, and VP avoided, as it would transfer
        # to VP (AtlasAnalJobBroker 629-639)
        scan, disk, union_sites, _, _ = context.plugin.data_sites(context.scenario)
        union = not disk and not scan and bool(union_sites)
    if not (avoid or merging or no_locality or union):
        return NOTHING_FAILS  # no reason to avoid a VP queue: none is read
    return Rejection(
        context["vp"],
        {"avoidVP": avoid, "merge": merging, "dataLocalityChecked": not no_locality, "unionLocality": union},
    )


ANALYSIS_VIRTUAL_PLACEMENT = Filter(
    "virtual placement", "overloaded_vp", Variants("ANALYSIS_VP_RULE", seed=vp, panda=vp_panda)
)


def disk(context: Context) -> Rejection:
    """seed 000 analysis disk: (0 with direct access, else input) + outDiskCount × input + workDiskCount
    against maxwdir / corecount, and more than 200 GB free in the local storage. ANALYSIS_STORAGE_FLOOR_RULE
    panda (issue 33 D10): free plus expired, 200 GB or more (AtlasAnalJobBroker 1202-1203: skipped below)."""
    task, jobs = context.task, context.scenario.jobs
    input_mb = np.where(context["direct_access_lan"], 0.0, jobs.inputSizeMB)
    needed = input_mb + (task.outDiskCount or 0.0) * jobs.inputSizeMB + (task.workDiskCount or 0.0)
    per_core = context["maxwdir_per_core"]
    too_small = (per_core > 0) & ~(per_core > needed)
    no_room, space_detail = storage_floor(context)
    detail = {"neededMB": needed, "maxwdirPerCore": per_core, "storageFloorGB": 200, **space_detail}
    return Rejection(too_small | no_room, detail)


def storage_floor_seed(context: Context) -> tuple[np.ndarray, dict]:
    """seed 000: more than 200 GB free in the local storage."""
    space = context["output_free"]
    with np.errstate(invalid="ignore"):
        return ~np.isnan(space) & ~(space > 200), {"storageFreeGB": space}


def storage_floor_panda(context: Context) -> tuple[np.ndarray, dict]:
    """ANALYSIS_STORAGE_FLOOR_RULE panda: free plus expired, 200 GB or more."""
    space = context["output_usable"]
    with np.errstate(invalid="ignore"):
        return ~np.isnan(space) & ~(space >= 200), {"storageUsableGB": space}


storage_floor = Variants("ANALYSIS_STORAGE_FLOOR_RULE", seed=storage_floor_seed, panda=storage_floor_panda)


ANALYSIS_DISK = Filter("disk", "disk", disk, reusable=True)


def walltime(context: Context) -> Rejection:
    """As production, with merge jobs joining scouts and walltime-undefined jobs in the 24 h rule. Under
    JOB_WALLTIME_RULE panda the production rule in HS06 seconds (AtlasAnalJobBroker runs the same checks)."""
    jobs = context.scenario.jobs
    return walltime_rejection(context, needs_a_day=jobs.isScout or jobs.isMerge or context["walltime_undefined"])


ANALYSIS_WALLTIME = Filter(
    "walltime",
    "shortwalltime",
    Variants("JOB_WALLTIME_RULE", seed=walltime, panda=job_rules_resources.walltime_panda),
    reusable=True,
)


def bad_jobs(context: Context) -> Rejection:
    """Skip when nFailed + nClosed ≥ max(2 × nFinished, MIN_BAD_JOBS_TO_SKIP_PQ) in the last TW_DONE_JOB_STAT
    hours (REFERENCE.md)."""
    bad = context["task_failed"] + context["task_closed"]
    limit = np.maximum(2 * context["task_finished"], context.config.get("MIN_BAD_JOBS_TO_SKIP_PQ"))
    # ANALYSIS_BAD_JOBS_STRICT (panda-server 1.0.4): only more than the limit marks the queue problematic
    too_many = bad > limit if context.config.get("ANALYSIS_BAD_JOBS_STRICT") else bad >= limit
    if context["stabilizer_panda"]:
        # AtlasAnalJobBroker 1730-1737 (1.0.4; issue 33 D13): asked only at queues the Analysis Stabilizer's
        # gates let it throttle, where the user has jobs, and never for merges
        too_many = too_many & context["throttleable"] & context["user_listed"] & (not context.scenario.jobs.isMerge)
    if site_mode(context):
        too_many = np.zeros(len(context.names), dtype=bool)  # problematic, but the pre-assigned queue stays
    detail = {
        "failedPlusClosed": bad,
        "limit": limit,
        "finished": context["task_finished"],
        "windowHours": context.config.get("TW_DONE_JOB_STAT"),
    }
    merging = context.scenario.jobs.isMerge
    fails = too_many & (not merging) if context.config.get("ANALYSIS_BAD_JOBS_STRICT") else too_many
    return problematic(context, "bad jobs", fails, "badsite", detail)


ANALYSIS_BAD_JOBS = Filter("bad jobs", "badsite", bad_jobs)


def problematic(context: Context, name: str, fails: np.ndarray, code: str, detail: dict) -> Rejection:
    """ANALYSIS_STABILIZER_RULE panda: AtlasAnalJobBroker marks these queues problematic and weighs them with
    the others before it drops them (AtlasBrokerUtils.skipProblematicSites), so they count in the class sums
    of the new weight; the seed's rule skips them here."""
    if not context["stabilizer_panda"]:
        return Rejection(fails, detail)
    context.arrays.setdefault("late", []).append((name, fails & context.alive, code, detail))
    return NOTHING_FAILS


def closed(context: Context) -> Rejection:
    """ANALYSIS_SKIP_CLOSED (AtlasAnalJobBroker "selection for closed", 1.0.4): any of the task's jobs closed
    at a queue in the window skips it, unless the job set is pre-assigned or merges."""
    jobs = context.scenario.jobs
    site_mode = sites_panda(context) and context.plugin.site_preassignment(context.scenario)[0] == "site"
    if not context.config.get("ANALYSIS_SKIP_CLOSED") or jobs.isMerge or jobs.preassigned or site_mode:
        return NOTHING_FAILS
    return Rejection(context["task_closed"] > 0, {"closed": context["task_closed"]})


ANALYSIS_CLOSED_JOBS = Filter("closed jobs", "closed", closed, reusable=True)


def too_long(context: Context) -> np.ndarray:
    """Per queue, whether its queue is too long for its running jobs: seed 000, more than 2 × max(20, running)
    queued; ANALYSIS_OVERLOAD_RULE panda, more than OVERLOAD_MIN_QUEUE queued and nothing running, or
    queued/running above OVERLOAD_RATIO_OFFSET × the ratio over all queues."""
    return too_long_variant(context)


def too_long_seed(context: Context) -> np.ndarray:
    return context["queued_all"] > 2 * np.maximum(QUEUE_LENGTH_RUNNING_FLOOR, context["running_real"])


def too_long_panda(context: Context) -> np.ndarray:
    queued, running = context["queued_all"], context["running_real"]
    grand = context.plugin.grand_queue_ratio(context.scenario)
    min_queue, offset = context.config.get("OVERLOAD_MIN_QUEUE"), context.config.get("OVERLOAD_RATIO_OFFSET")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(running > 0, queued / np.where(running > 0, running, 1.0), np.inf)
    return (queued > min_queue) & ((running == 0) | (ratio > grand * offset))


too_long_variant = Variants("ANALYSIS_OVERLOAD_RULE", seed=too_long_seed, panda=too_long_panda)


def overload_panda(context: Context) -> Rejection:
    """AtlasAnalJobBroker "un-overloaded sites" (1.0.4): the queue too long (_too_long); when that leaves no
    queue, only those running nothing are skipped (problematic). Merges are not checked."""
    if context.scenario.jobs.isMerge:
        return NOTHING_FAILS
    grand = context.plugin.grand_queue_ratio(context.scenario)
    offset = context.config.get("OVERLOAD_RATIO_OFFSET")
    queued, running = context["queued_all"], context["running_real"]
    idle = (queued > context.config.get("OVERLOAD_MIN_QUEUE")) & (running == 0)
    overloaded = too_long(context)
    if not np.any(context.alive & ~overloaded):
        # every queue overloaded: the check keeps them, but those running nothing are problematic and
        # dropped after ranking (AtlasBrokerUtils.skipProblematicSites), not by the first loop itself
        probe = getattr(context.plugin, "first_loop_probe", False)
        idle = np.zeros_like(idle) if probe or site_mode(context) else idle
        detail = {"queued": queued, "running": running, "grandRatio": round(grand, 4), "ratioOffset": offset}
        return problematic(context, "queue length", idle, "overloaded", detail)
    return Rejection(
        overloaded,
        {"queued": queued, "running": running, "grandRatio": round(grand, 4), "ratioOffset": offset},
    )


def queue_length(context: Context) -> Rejection:
    """seed 000: more than 2 × max(20, running) queued (too_long)."""
    limit = 2 * np.maximum(QUEUE_LENGTH_RUNNING_FLOOR, context["running_real"])
    return Rejection(
        too_long(context), {"queued": context["queued_all"], "limit": limit, "running": context["running_real"]}
    )


ANALYSIS_QUEUE_LENGTH = Filter(
    "queue length", "overloaded", Variants("ANALYSIS_OVERLOAD_RULE", seed=queue_length, panda=overload_panda)
)


def stabilizer(context: Context) -> Rejection:
    fails = context["throttleable"] & (context["user_queued"] > context["max_q_len"])
    if context["stabilizer_panda"]:
        # AtlasAnalJobBroker 1617-1725 (1.0.4): not for merges, and only where the user has jobs
        fails = fails & context["user_listed"] & (not context.scenario.jobs.isMerge)
    if site_mode(context):
        fails = np.zeros(len(context.names), dtype=bool)  # problematic, but the pre-assigned queue stays
    detail = {
        "userQueued": context["user_queued"],
        "maxQueueLength": context["max_q_len"],
        "queued": context["queued_all"],
        "nQmax": context["nq_max"],
        "userPercentage": context["user_percentage"],
        "running": context["running_real"],
        "toRunningRate": context["trr"],
    }
    return problematic(context, "analysis stabilizer", fails, "tmp_user_problem", detail)


ANALYSIS_STABILIZER = Filter("analysis stabilizer", "tmp_user_problem", stabilizer)


def pilots_panda(context: Context) -> Rejection:
    """PILOT_RULE panda, analysis (AtlasAnalJobBroker "selection for nPilot", 1.0.4; issue 33 D12): no pilot
    in the last 3 hours (no statistics counts as none) skips the queue unless the task is a test task; no
    numSlots exemption, as production has. The seed's rule is production's."""
    if context.task.prodSourceLabel == "test":
        return NOTHING_FAILS
    pilots = context["pilots"]
    return Rejection((pilots == 0) | np.isnan(pilots), {"pilotsLast3h": pilots})  # no statistics: none


ANALYSIS_PILOTS = Filter(
    "pilots", "nopilot", Variants("PILOT_RULE", seed=job_rules_site.pilots, panda=pilots_panda), reusable=True
)


def software(context: Context) -> Rejection:
    """The software check; ANALYSIS_SITES_RULE panda leaves it out for a task pre-assigned to a queue
    (AtlasAnalJobBroker "selection for release" runs only when not sitePreAssigned)."""
    if sites_panda(context) and context.plugin.site_preassignment(context.scenario)[0] == "site":
        if context.config.get("SOFTWARE_RULE") != "panda":
            return NOTHING_FAILS
        # the architecture check at GPU queues comes before, and applies to a pre-assigned queue too
        known = context.plugin.queue_records(context.scenario)
        task = context.plugin.task_software(context.task, context.config)
        fails = []
        for name in context.names:
            record, queue = known.get(name) or (context.scenario.queues[name], name)
            gpu_queue = "gpu" in catchall_keys(record.get("catchall") or "")
            tags = context.scenario.sw_tags.get(queue)
            fails.append(
                gpu_queue
                and not anal_gpu_queue_ok(
                    task,
                    record.get("releases"),
                    tags,
                    context.scenario.sw_tags.get("ALL"),
                    context.scenario.gpu_summary.get(queue),
                )
            )
        fails = np.array(fails, dtype=bool)
        return Rejection(fails, {"check": np.where(fails, "architecture", ""), "needed": context.task.architecture})
    return job_rules_worker.software(context)


ANALYSIS_SOFTWARE = Filter("software", "cache", software, reusable=True)


ANALYSIS_INPUT_COMPLETE = Filter("input complete", "input_missing", job_rules_data.input_complete, reusable=True)


ANALYSIS_DISK_IO = Filter("disk IO", "diskIO", job_rules_data.disk_io_check, reusable=True)


ANALYSIS_CORE_COUNT = Filter("core count", "cpucore", job_rules_worker.core_count, reusable=True)


ANALYSIS_MEMORY = Filter("memory", "lowmemory", job_rules_resources.memory_check, reusable=True)


ANALYSIS_STORAGE_ENDPOINTS = Filter("storage endpoints", "read_lan_blacklist", job_rules_data.endpoints)
