"""The analysis job broker's own rules (seed 000 "ATLAS Analysis Job Brokerage"; panda-server 1.0.4
AtlasAnalJobBroker), each with its filter, name and skip code; the rules it shares with production are in the
job_rules modules. `reusable` rules give the second loop the verdict of the first."""

from __future__ import annotations

import functools
import re

import numpy as np

from brokerage.engine.core.plugin import NOTHING_FAILS, Context, Filter, Rejection, Variants, among, never
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda import job_rules_data, job_rules_resources, job_rules_site, job_rules_worker
from brokerage.engine.panda.job_rules_resources import output_bytes, walltime_rejection, work_dir_bytes
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


def included_names(context: Context) -> tuple[str, ...]:
    """The includedSite list in force: the task's, or under ANALYSIS_SITES_RULE panda, when the task's site names
    a storage endpoint, the queues reading it (none known: no list at all; 1.0.4, 116-136)."""
    names = context.task.includedSite
    if sites_panda(context) and context.task.site:
        mode, readers = context.plugin.site_preassignment(context.scenario)
        if mode == "endpoint":
            names = readers  # the queues reading the named endpoint replace the task's includedSite
        elif mode == "":
            names = ()  # a site naming nothing known drops the includedSite list with it (1.0.4, 126-134)
    return tuple(names)


def included(context: Context) -> Rejection:
    names = included_names(context)
    if not names or (sites_panda(context) and "AUTO" in names):
        return NOTHING_FAILS  # AUTO: the queues not named are a fallback, judged late (included_auto)
    return Rejection(~_named(context, names), {"includedSite": ",".join(names)})


def _named(context: Context, names: tuple[str, ...]) -> np.ndarray:
    return np.array(
        [matches_site_list(names, q, s) for q, s in zip(context["unified"], context["site"], strict=True)], dtype=bool
    )


ANALYSIS_INCLUDED_SITES = Filter("included sites", "notincluded", included, reusable=True)


def included_auto(context: Context) -> Rejection:
    """ANALYSIS_SITES_RULE panda, AtlasAnalJobBroker "include/exclude check" (1.0.4, 1405-1437): with AUTO in
    includedSite the queues it does not name are kept only when none of those it names is left at that point
    (after the resource checks). A task's site naming an endpoint replaces the list (included_names)."""
    names = included_names(context)
    if "AUTO" not in names:
        return NOTHING_FAILS
    named = _named(context, names)
    if not (named & context.alive).any():
        return NOTHING_FAILS
    return Rejection(~named, {"includedSite": ",".join(names)})


ANALYSIS_INCLUDED_AUTO = Filter(
    "included sites (AUTO)", "notincluded", Variants("ANALYSIS_SITES_RULE", seed=never, panda=included_auto)
)


def hospital(context: Context) -> Rejection:
    """ANALYSIS_SITES_RULE panda, AtlasAnalJobBroker "hospital check" (1.0.4, 1486-1509): queues named *_HOSPITAL
    are left out while any other queue is still a candidate."""
    is_hospital = np.array([q.endswith("_HOSPITAL") for q in context["unified"].tolist()], dtype=bool)
    if not is_hospital.any() or not (~is_hospital & context.alive).any():
        return NOTHING_FAILS
    return Rejection(is_hospital, {"hospital": is_hospital})


def preassigned(context: Context) -> Rejection:
    """ANALYSIS_SITES_RULE panda, AtlasAnalJobBroker "preassign check" (1.0.4, 1464-1485): a task pre-assigned to a
    queue (its `site`) is brokered over every analysis queue; after the include/exclude check only its own queue
    stays, and none when that queue did not pass every check before."""
    if not site_mode(context):
        return NOTHING_FAILS
    own = context["unified"] == context.task.site
    passed = bool((own & context.alive).any())
    outcome = "is kept alone" if passed else "did not pass every check"
    detail = {"preassigned": context.task.site, "preassignedPassed": passed, "preassignedOutcome": outcome}
    return Rejection(~own if passed else np.ones(len(context.names), dtype=bool), detail)


ANALYSIS_PREASSIGNED = Filter("preassigned", "nonpreassigned", preassigned)

ANALYSIS_HOSPITAL = Filter("hospital", "hospital", Variants("ANALYSIS_SITES_RULE", seed=never, panda=hospital))


def zero_share(context: Context) -> Rejection:
    """FAIRSHARE_RULE panda, AtlasAnalJobBroker "selection for fairshare" (1.0.4, 690-705): the production rule
    (hasZeroShare), unless the task is pre-assigned to a queue."""
    if site_mode(context) or not context.plugin.any_fairshare_policy(context.scenario):
        return NOTHING_FAILS  # (most grids: no analysis queue names a policy, and no column is made for it)
    return job_rules_site.zero_share_real(context)


# AtlasAnalJobBroker "selection with IO intensity" (1.0.4, 774-790): the production rule
ANALYSIS_MAX_IO_INTENSITY = Filter(
    "max IO intensity", "max_io_intensity", job_rules_data.MAX_IO_INTENSITY.check, reusable=True
)

ANALYSIS_ZERO_SHARE = Filter(
    "zero share", "zeroshare", Variants("FAIRSHARE_RULE", seed=never, panda=zero_share), reusable=True
)


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
    panda) keeps the queues with all the data when its queue is one of them, else those with some when its queue is
    one of those, else none. The real check scans every analysis queue, before any other filter, so the lists are
    made over all of them."""
    scan, disk, union, disk_union, _ = context.plugin.data_sites(context.scenario)
    unified = context["unified"].tolist()
    if site_mode(context):
        # the pre-assigned queue among those with all the data: those; among those with some: all of these;
        # neither: none (AtlasAnalJobBroker 624-630)
        site = context.task.site
        chosen = scan if site in scan else union if site in union else set()
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
    # a distributed dataset triggers transfers: VP avoided (AtlasAnalJobBroker 449-450)
    avoid = context.task.avoidVP or bool(context.plugin.distributed(context.scenario))
    merging, no_locality = context.scenario.jobs.isMerge, "data locality" in context.plugin.disabled_filters
    # no queue has all the data: the union of sites is taken, and VP avoided, as it would transfer to VP
    # (AtlasAnalJobBroker 629-639)
    union = not no_locality and bool(context.scenario.datasets) and union_taken(context)
    if not (avoid or merging or no_locality or union):
        return NOTHING_FAILS  # no reason to avoid a VP queue: none is read
    return Rejection(
        context["vp"],
        {"avoidVP": avoid, "merge": merging, "dataLocalityChecked": not no_locality, "unionLocality": union},
    )


ANALYSIS_VIRTUAL_PLACEMENT = Filter(
    "virtual placement", "overloaded_vp", Variants("ANALYSIS_VP_RULE", seed=vp, panda=vp_panda)
)


def scratch_seed(context: Context) -> tuple[np.ndarray, np.ndarray]:
    """seed 000 analysis scratch: (0 with direct access, else input) + outDiskCount × input + workDiskCount, in
    MB, against maxwdir / corecount: (needed, too small)."""
    task, jobs = context.task, context.scenario.jobs
    input_mb = np.where(context["direct_access_lan"], 0.0, jobs.inputSizeMB)
    needed = input_mb + (task.outDiskCount or 0.0) * jobs.inputSizeMB + (task.workDiskCount or 0.0)
    per_core = context["maxwdir_per_core"]
    return needed, (per_core > 0) & ~(per_core > needed)


def scratch_panda(context: Context) -> tuple[np.ndarray, np.ndarray]:
    """JOB_DISK_RULE panda, AtlasAnalJobBroker "scratch disk check" (1.0.4, 1105-1170), in bytes then whole MB:
    outDiskCount in its unit per MB of effective input + the work directory (+ 300 MB when set) + the input
    unless read directly (CoreUtils.use_direct_io_for_job); a merge needs twice its input. Skipped only when the
    need is above the queue's scaled maxwdir (not when equal). Worked: 100 kB a MB of 2,048 MB input = 200 MB,
    + 2,048 MB copied = 2,248 MB; a merge of 2,048 MB needs 4,096 MB."""
    task, jobs = context.task, context.scenario.jobs
    input_bytes = round(jobs.inputSizeMB * 1024**2)
    if jobs.isMerge:
        needed = np.full(len(context.names), float((2 * input_bytes) // 1024**2))
    else:
        # the output per MB of effective input whatever the unit says (no per-event branch here, unlike production)
        base = output_bytes(task, jobs, per_event=False) + work_dir_bytes(task)
        needed = np.floor((base + np.where(context["direct_io"], 0.0, input_bytes)) / 1024**2)
    per_core = context["maxwdir_per_core"]
    return needed, (per_core > 0) & (needed > per_core)


scratch_need = Variants("JOB_DISK_RULE", seed=scratch_seed, panda=scratch_panda)


def disk(context: Context) -> Rejection:
    """seed 000 analysis disk: the scratch need (scratch_need) against the queue's work directory, and more than
    200 GB free in the local storage. ANALYSIS_STORAGE_FLOOR_RULE panda (issue 33 D10): free plus expired, 200 GB
    or more (AtlasAnalJobBroker 1202-1203: skipped below)."""
    scratch, storage = scratch_disk(context), storage_space(context)
    return Rejection(scratch.fails | storage.fails, {**scratch.detail, **storage.detail})


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


def scratch_disk(context: Context) -> Rejection:
    """The scratch half of `disk` alone: the real broker's "scratch disk check" (ANALYSIS_SITES_RULE panda's order,
    which asks the storage floor at its "storage space check")."""
    needed, too_small = scratch_need(context)
    return Rejection(too_small, {"neededMB": needed, "maxwdirPerCore": context["maxwdir_per_core"]})


def storage_space(context: Context) -> Rejection:
    """The storage half of `disk` alone (storage_floor): AtlasAnalJobBroker's "storage space check" (1.0.4,
    1194-1206), before its endpoints' blacklist."""
    no_room, space_detail = storage_floor(context)
    return Rejection(no_room, {"storageFloorGB": 200, **space_detail})


def architecture(context: Context) -> Rejection:
    """The GPU queues' platform check alone, from the software check's own verdict (SOFTWARE_RULE panda marks it
    `check: architecture`): AtlasAnalJobBroker's "architecture check" (1.0.4, 846-872), which comes before its
    closed-jobs and SW/HW checks (ANALYSIS_SITES_RULE panda's order)."""
    if context.config.get("SOFTWARE_RULE") != "panda" or not _gpu_queue_alive(context):
        return NOTHING_FAILS  # only SOFTWARE_RULE panda checks the platform, only at GPU queues
    verdict = software(context)
    if verdict is NOTHING_FAILS or not isinstance(verdict.detail, dict) or "check" not in verdict.detail:
        return NOTHING_FAILS
    return Rejection(np.asarray(verdict.fails) & (verdict.detail["check"] == "architecture"), verdict.detail)


def _gpu_queue_alive(context: Context) -> bool:
    """Whether a candidate still in the running is a GPU queue (catchall `gpu`); the GPU queues once per snapshot."""
    cache = context.plugin._snapshot_cache(context.scenario)
    gpu = cache.get("gpu queues")
    if gpu is None:
        queues = context.scenario.queues.items()
        gpu = cache["gpu queues"] = frozenset(
            name for name, record in queues if "gpu" in catchall_keys(record.get("catchall") or "")
        )
    return bool(gpu) and any(name in gpu for name in context["unified"][context.alive].tolist())


ANALYSIS_ARCHITECTURE = Filter("architecture", "cache", architecture)

ANALYSIS_SCRATCH_DISK = Filter("scratch disk", "disk", scratch_disk, reusable=True)
ANALYSIS_STORAGE_SPACE = Filter("storage space", "disk", storage_space, reusable=True)


def walltime(context: Context) -> Rejection:
    """As production, with merge jobs joining scouts and walltime-undefined jobs in the 24 h rule. Under
    JOB_WALLTIME_RULE panda the production rule in HS06 seconds (AtlasAnalJobBroker runs the same checks)."""
    jobs = context.scenario.jobs
    return walltime_rejection(context, needs_a_day=jobs.isScout or jobs.isMerge or context["walltime_undefined"])


def walltime_panda(context: Context) -> Rejection:
    """JOB_WALLTIME_RULE panda, AtlasAnalJobBroker "walltime check" and "minimum walltime capacity check" (1.0.4,
    1250-1372), in HS06 seconds. cpuTime × the job's events against the queue's (maxtime − baseWalltime) × cores ×
    corepower × efficiency (above: -shortwalltime) and its mintime likewise (below: -longwalltime), but not for
    merges or without cpuTime. Then scouts (not pre-assigned) and tasks without
    cpuTime need 24 h × 10 HS06 × cores of the queue's limit (without cpuTime the limit is maxtime × cores, so
    10 days): -scout_walltime, -min_walltime. Merges have no such need here, unlike production. Worked: no cpuTime,
    maxtime 345,600 s × 1 core < 864,000: skipped."""
    task, jobs = context.task, context.scenario.jobs
    needed = context["hs06_needed"]
    maxtime, mintime = context["maxtime"], context["mintime"]
    max_hs06, min_hs06 = context["maxtime_hs06"], context["mintime_hs06"]
    none = np.zeros(len(context.names), dtype=bool)
    short = long = none
    # (asked of a pre-assigned task's queue too: the real check has no sitePreAssigned exemption, 1.0.4 1256)
    if not (jobs.isMerge or not task.cpuTime or not needed > 0):
        short = (maxtime != 0) & (needed > max_hs06)
        long = (mintime != 0) & (needed < min_hs06) & ~short
    scout = jobs.isScout and not site_mode(context)
    day = none
    if scout or not task.cpuTime:
        day = (max_hs06 != 0) & (max_hs06 < job_rules_resources.DAY_OF_HS06 * context["corecount"]) & ~short & ~long

    def code() -> np.ndarray:  # made only for a skip
        day_code = "scout_walltime" if jobs.isScout else "min_walltime"
        return np.where(short, "shortwalltime", np.where(long, "longwalltime", day_code))

    return Rejection(
        short | long | day,
        {"hs06Needed": needed, "maxtimeHS06": max_hs06, "mintimeHS06": min_hs06, "maxtime": maxtime},
        code=code,
    )


ANALYSIS_WALLTIME = Filter(
    "walltime",
    "shortwalltime",
    Variants("JOB_WALLTIME_RULE", seed=walltime, panda=walltime_panda),
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


# the late skip of a queue the overload check keeps though it runs nothing (overload_panda)
IDLE_QUEUE = "idle queue"


def overload_panda(context: Context) -> Rejection:
    """AtlasAnalJobBroker "un-overloaded sites" (1.0.4, 1545-1600): the queue too long (too_long). In a loop with
    the data locality check, an overloaded queue that does not have every input dataset itself (the real
    `scanSiteWoVP`: the queues with all the data, or with some when only the union was taken) is -overloaded_vp,
    the others -overloaded. When that leaves no queue, only the -overloaded_vp ones go; of the others, those running
    nothing are problematic and dropped after ranking (AtlasBrokerUtils.skipProblematicSites). Merges are not
    checked."""
    if context.scenario.jobs.isMerge:
        return NOTHING_FAILS
    grand = context.plugin.grand_queue_ratio(context.scenario)
    offset = context.config.get("OVERLOAD_RATIO_OFFSET")
    queued, running = context["queued_all"], context["running_real"]
    idle = (queued > context.config.get("OVERLOAD_MIN_QUEUE")) & (running == 0)
    overloaded = too_long(context)
    detail = {"queued": queued, "running": running, "grandRatio": round(grand, 4), "ratioOffset": offset}
    local = _with_all_data(context)
    code = np.where(local, "overloaded", "overloaded_vp")
    if np.any(context.alive & ~overloaded):
        return Rejection(overloaded, detail, code=code)
    # every queue overloaded: the check keeps those with the data, but those running nothing are problematic and
    # dropped after ranking, not by the first loop itself
    probe = getattr(context.plugin, "first_loop_probe", False)
    idle = np.zeros_like(idle) if probe or site_mode(context) else idle & local
    # named apart from the check itself: such a queue goes with the problematic ones, after the weights
    late = problematic(context, IDLE_QUEUE, idle, "overloaded", detail)
    gone = overloaded & ~local
    if late is not NOTHING_FAILS:  # (the seed's stabilizer rule skips problematic queues at once)
        gone = gone | late.fails
    return Rejection(gone, detail, code=code) if gone.any() else NOTHING_FAILS


def _with_all_data(context: Context) -> np.ndarray:
    """Per queue, whether the overload check counts it as holding the input itself: every queue without the data
    locality check or without input; with it, those with every dataset, or with some when the data check took the
    union."""
    n = len(context.names)
    if "data locality" in context.plugin.disabled_filters or not context.scenario.datasets:
        return np.ones(n, dtype=bool)
    scan, _, union, _, _ = context.plugin.data_sites(context.scenario)
    with_data = union if union_taken(context) else scan
    return np.array([name in with_data for name in context["unified"].tolist()], dtype=bool)


def union_taken(context: Context) -> bool:
    """Whether the data check (locality_panda) took the union of the queues with some of the input, no queue having
    all of it on disk or anywhere (AtlasAnalJobBroker 632-640: useUnionLocality); never for a task pre-assigned to
    a queue, whose branch comes first. The VP check, the overload check and the data weight read it."""
    if site_mode(context):
        return False
    scan, disk, union, _, _ = context.plugin.data_sites(context.scenario)
    return not disk and not scan and bool(union)


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


def input_complete(context: Context) -> Rejection:
    """The production rule, but a distributed dataset (a container) needs no complete copy (AtlasAnalJobBroker
    458, 1.0.4: `isDistributed is not True`): it is checked without them."""
    return job_rules_data.input_complete(context, context.plugin.located_datasets(context.scenario))


ANALYSIS_INPUT_COMPLETE = Filter("input complete", "input_missing", input_complete, reusable=True)


ANALYSIS_DISK_IO = Filter("disk IO", "diskIO", job_rules_data.disk_io_check, reusable=True)


ANALYSIS_CORE_COUNT = Filter("core count", "cpucore", job_rules_worker.core_count, reusable=True)


ANALYSIS_MEMORY = Filter("memory", "lowmemory", job_rules_resources.memory_check, reusable=True)


ANALYSIS_STORAGE_ENDPOINTS = Filter("storage endpoints", "read_lan_blacklist", job_rules_data.endpoints)


def local_data_only(context: Context) -> Rejection:
    """CRIC_QUEUE_RULE panda, AtlasAnalJobBroker's final file check (1.0.4, 2303-2362): a queue whose catchall says
    use_only_local_data needs each dataset's files at storage it reads (disk or tape), in both loops, unless no
    complete disk copy is readable anywhere (true_complete_disk_ok False); other queues are never skipped there."""
    scenario = context.scenario
    if not scenario.datasets:
        return NOTHING_FAILS
    only_local = context["local_data_only"]
    if not only_local.any():
        return NOTHING_FAILS
    held = context.plugin.local_complete(scenario)
    unified = context["unified"].tolist()
    lacking = np.array(
        [any(truly and name not in complete for complete, truly in held) for name in unified], dtype=bool
    )
    # weighed with the others first (the real check runs over the weighed candidates), then dropped
    late = (only_local & lacking & context.alive, "fileunavailable", {"useOnlyLocalData": only_local})
    context.arrays.setdefault("late", []).append(("local data only", *late))
    return NOTHING_FAILS


ANALYSIS_LOCAL_DATA_ONLY = Filter(
    "local data only", "fileunavailable", Variants("CRIC_QUEUE_RULE", seed=never, panda=local_data_only)
)
