"""ATLAS production job brokerage: choose the queue of a job set (seed 000, "ATLAS Production Job Brokerage").

Candidates are all queues without "test" in the name, or the pre-assigned ones. The filters run in the seed's
order, each with the real PanDA skip code (REFERENCE.md table); the survivors are weighed by running vs queued
jobs, data availability and the network weight to the nucleus, the best 10 kept, and one drawn in proportion
to weight. All skipped: pending, retried after 60 minutes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..fairshare import FairsharePolicyError, share_for, zero_share_panda
from ..network import network_weight
from ..plugin import (
    NOTHING_FAILS,
    Context,
    Filter,
    Plugin,
    PreparedArrays,
    Rejection,
    SkipTable,
    among,
    overlay_producer,
)
from ..scenario import Scenario
from ..software import SoftwareRules, TaskSoftware, software_check
from ..software_panda import prod_software_panda

# seed 000
MEMORY_COMPENSATION = 0.9
DISK_OUTPUT_FLOOR_MB = 1.5 * 1024
# panda-server 1.0.4 InputChunk.defaultOutputSize: 1500 MB, not the seed's 1.5 GB
PANDA_DEFAULT_OUTPUT_MB = 1500
DISK_WORK_FLOOR_MB = 300.0
LOCAL_STORAGE_FLOOR_GB = 200.0
SCOUT_MIN_MAXTIME = 24 * 3600
INACTIVE_HOURS = 2.0
TRANSFERRING_DEFAULT_LIMIT = 2000
BOOTSTRAP_RUNNING = 20
HIGH_PRIORITY = 800
PREASSIGNMENT_PATIENCE_HOURS = 24
# seed 002: cpuEfficiency defaults to 90 %, baseWalltime to 600 s
DEFAULT_CPU_EFFICIENCY = 90.0
DEFAULT_BASE_WALLTIME = 600.0
DEFAULT_COREPOWER = 10.0
# ATLAS resource types (JEDI resource_types table): name, min cores, max cores, min and max RAM per core (MB).
# A unified (ucore) queue is brokered as one pseudo-queue per type that fits it (seed 000 "Unified queues are
# resolved to pseudo-queues"; panda-server 1.0.4 SiteMapper.get_child_site_spec).
RESOURCE_TYPES = (
    ("SCORE", 1, 1, None, 2000),
    ("MCORE", 2, None, None, 2000),
    ("SCORE_HIMEM", 1, 1, 2001, None),
    ("MCORE_HIMEM", 2, None, 2001, None),
)
# panda-server 1.0.4: scouts, merges and walltime-undefined jobs need 24 h of a 10 HS06 core
DAY_OF_HS06 = 24 * 3600 * 10
WORKERS_CUTOFF = 20
WORLD_NUCLEUS_WEIGHT = 4


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


def _float(value: Any, default: float | None = 0.0) -> float | None:
    try:
        return float(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


def distinct(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct strings in sorted order and, per value, the position of its own (np.unique's answer with
    return_inverse, without its sort of the whole column): rules over strings run once per distinct value."""
    ordered = sorted(set(values))
    position = {value: i for i, value in enumerate(ordered)}
    return np.array(ordered, dtype=object), np.array([position[value] for value in values], dtype=np.intp)


def _catchall(text: str) -> dict[str, str]:
    options = {}
    for item in (text or "").split(","):
        key, _, value = item.strip().partition("=")
        if key:
            options[key.strip()] = value.strip()
    return options


def _split_connectivity(text: str) -> tuple[str, str]:
    network, _, stack = (text or "").partition("#")
    return network.strip().lower(), stack.strip()


def pseudo_queue_records(name: str, record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The pseudo-queues of a unified queue: one per resource type its core count allows, with the core count and
    memory limits of that type (SiteMapper.get_child_site_spec, panda-server 1.0.4)."""
    cores = max(1, _int(record.get("corecount"), 1))
    maxrss, minrss = _float(record.get("maxrss")) or 0.0, _float(record.get("minrss")) or 0.0
    # the unified queue's own core count stays: the checks 1.0.4 runs per unified queue (disk) read it
    return [
        (
            f"{name}/{type_name}",
            dict(record, corecount=child_cores, maxrss=child_max, minrss=child_min, unified_corecount=cores),
        )
        for type_name, child_cores, child_max, child_min in _pseudo_queue_shapes(cores, maxrss, minrss)
    ]


@functools.lru_cache(maxsize=4096)  # pure arithmetic on three numbers, which a grid's queues share
def _pseudo_queue_shapes(cores: int, maxrss: float, minrss: float) -> tuple[tuple[str, int, float, float], ...]:
    """(resource type, cores, maxrss, minrss) of each pseudo-queue of a unified queue with these limits."""
    shapes = []
    for type_name, min_core, max_core, min_ram, max_ram in RESOURCE_TYPES:
        if min_core is not None and cores < min_core:
            continue
        child_cores = max(cores, min_core) if max_core is None else max(min(cores, max_core), min_core)
        child_min = (
            max(child_cores * min_ram - child_cores + 1, minrss * child_cores / cores)
            if min_ram is not None
            else max(minrss * child_cores / cores, minrss)
        )
        child_max = (
            min(child_cores * max_ram, maxrss * child_cores / cores)
            if max_ram is not None
            else min(maxrss * child_cores / cores, maxrss)
        )
        shapes.append((type_name, child_cores, child_max, child_min))
    return tuple(shapes)


def queue_site(record: dict[str, Any]) -> str:
    """The site a queue record belongs to (CRIC atlas_site; `site` in hand-written scenarios)."""
    return record.get("atlas_site") or record.get("site") or ""


# panda-server 1.0.4 DdmSpec.DOWNTIME_STATUSES: endpoint activities that count as down
DOWNTIME_STATUSES = ("OFF", "TEST")
# the four activities of a DDM endpoint, in the order the rules read them
ENDPOINT_ACTIVITIES = ("read_lan", "write_lan", "read_wan", "write_wan")


def readable(endpoint, activities=("read_lan", "read_wan")) -> bool:
    """A copy at `endpoint` can be read through one of `activities` (not OFF or TEST); an endpoint the scenario
    does not describe counts as readable (panda-server SiteMapper.is_readable_locally / _remotely)."""
    return endpoint is None or any(endpoint.activity(activity) not in DOWNTIME_STATUSES for activity in activities)


def _regarded_complete(found: int, total: int, config) -> bool:
    """get_sites_with_data: complete, or missing at most MAX_MISSING_INPUT_FILES files, or holding at least
    MIN_INPUT_COMPLETENESS % of them."""
    if found == total:
        return True
    max_missing, min_percent = config.get("MAX_MISSING_INPUT_FILES"), config.get("MIN_INPUT_COMPLETENESS")
    return bool(total and found) and (total - found <= max_missing or found / total * 100 >= min_percent)


def readable_over_wan(scenario: Scenario, datasets, *, nearly_complete: bool = False) -> bool:
    """Every dataset has a complete copy (with `nearly_complete`, one regarded as complete) somewhere whose
    endpoint can be read over WAN (read_wan not OFF/TEST); an endpoint the scenario does not describe counts as
    readable (panda-server SiteMapper.is_readable_remotely)."""
    config = scenario.config
    return all(
        any(
            (
                _regarded_complete(replica.nFiles, dataset.nFiles, config)
                if nearly_complete
                else replica.nFiles == dataset.nFiles
            )
            and dataset.nFiles > 0
            and readable(scenario.ddm_endpoints.get(endpoint_key), ("read_wan",))
            for endpoint_key, replica in dataset.replicas.items()
        )
        for dataset in datasets
    )


def input_incomplete(scenario: Scenario) -> str:
    """The first input dataset without a complete copy readable over LAN or WAN anywhere ('' when every one has
    one, when the check is off, or when the task is pre-staged). panda-server 1.0.4 AtlasProdJobBroker "check
    dataset completeness" with AtlasBrokerUtils.get_sites_with_data: a copy missing at most
    MAX_MISSING_INPUT_FILES files, or holding at least MIN_INPUT_COMPLETENESS %, counts as complete."""
    config = scenario.config
    if not config.get("INPUT_COMPLETENESS_CHECK") or scenario.task.inputPreStaging:
        return ""
    for dataset in scenario.datasets:
        complete = False
        for endpoint_key, replica in dataset.replicas.items():
            if not _regarded_complete(replica.nFiles, dataset.nFiles, config):
                continue
            if readable(scenario.ddm_endpoints.get(endpoint_key)):
                complete = True
                break
        if not complete:
            return dataset.name
    return ""


def complete_locations(scenario: Scenario) -> tuple[frozenset[str] | None, bool]:
    """AtlasProdJobBroker "check dataset completeness" (1.0.4, 316-385) as the endpoint check reads it: the
    endpoints holding a copy regarded as complete of every input dataset (None without input), and whether every
    dataset not being pre-staged has such a copy readable over WAN (or none readable even over LAN)."""
    config = scenario.config
    locations: frozenset[str] | None = None
    remote_ok = True
    for dataset in scenario.datasets:
        complete = [
            endpoint
            for endpoint, replica in dataset.replicas.items()
            if _regarded_complete(replica.nFiles, dataset.nFiles, config) and dataset.nFiles > 0
        ]
        locations = frozenset(complete) if locations is None else locations & frozenset(complete)
        if scenario.task.inputPreStaging or not complete:
            continue
        remote = any(readable(scenario.ddm_endpoints.get(e), ("read_wan",)) for e in complete)
        local = any(readable(scenario.ddm_endpoints.get(e), ("read_lan",)) for e in complete)
        if not remote and local:
            remote_ok = False
    return locations, remote_ok


URGENT = "urgent"


def is_urgent(task) -> bool:
    """processingType urgent (seeds 001, 002: "processingType=urgent"; seed 000's "*urgent*" is emphasis), compared
    whole as panda-server 1.0.4 does (InputChunk.isExpress: `processingType == "urgent"`): `urgent_reco` is not."""
    return task.processingType == URGENT


def is_express(task, config) -> bool:
    """seed 000: processingType urgent or priority ≥ 1000; panda-server 1.0.4 InputChunk.isExpress: above 1000."""
    return is_urgent(task) or task.currentPriority >= config.get("EXPRESS_MIN_PRIORITY")


def _urgent_or_scout(c: Context, *, merge_too: bool) -> bool:
    """Priority ≥ 800 or a scout (and, for the inactive-queue rule, merge and pre-merged jobs too)."""
    jobs = c.scenario.jobs
    return c.task.currentPriority >= HIGH_PRIORITY or jobs.isScout or (merge_too and (jobs.isMerge or jobs.isPreMerged))


def _cap_limit(c: Context) -> np.ndarray:
    # REFERENCE.md cap ruling: max(NQUEUELIMITSITE, 2 × running) so an empty queue can bootstrap
    return np.maximum(c.config.get("NQUEUELIMITSITE"), 2 * c["running_used"])


def _io_detail(c: Context, io: float, size_cut: float, num_cut: float) -> dict[str, Any]:
    """The numbers the input-transfer check compared (both profiles' variants)."""
    return {
        "ioIntensity": io,
        "missingGB": c["missing_size"],
        "sizeCutoffGB": size_cut,
        "missingFiles": c["missing_files"],
        "fileCutoff": num_cut,
    }


def running_used(grid: dict[str, Any], task, config) -> np.ndarray:
    """The running count the weight and the caps use.

    seed 000: the largest of the real number, min(nBatchJob, 20) when bootstrapping, numSlots when positive, the
    starting jobs when numSlots is 0. panda-server 1.0.4 (AtlasProdJobBroker "calculate weight"): nBatchJob
    (capped at 20) replaces a running count under 20 at Harvester queues with pilots, numSlots ÷ corecount or
    running + starting when numSlots is 0; both only up to MAX_PRIO_TO_BOOTSTRAP."""
    running, starting, slots = grid["running"], grid["starting"], grid["num_slots"]
    max_prio = config.get("MAX_PRIO_TO_BOOTSTRAP")
    allowed = max_prio is None or task.currentPriority <= max_prio
    workers = np.minimum(grid["nBatchJob"], WORKERS_CUTOFF)
    bootstrap_ok = (running < BOOTSTRAP_RUNNING) & (grid["nBatchJob"] > running) & allowed
    if config.get("BOOTSTRAP_NEEDS_PILOTS"):
        # a Harvester queue is one that reports batch workers
        bootstrap_ok &= (grid["nBatchJob"] > 0) & (grid["pilots"] > 0)
    if config.get("NUM_SLOTS_RULE") == "per_core":
        used = np.where(bootstrap_ok & (workers > running), workers, running)
        if not allowed:
            return used
        with np.errstate(invalid="ignore"):
            per_core = np.floor(slots / np.maximum(grid["corecount"], 1))
        used = np.where(slots == 0, used + starting, used)
        return np.where(slots > 0, np.maximum(per_core, used), used)
    if not len(running):
        return np.zeros(0)
    return np.maximum.reduce(
        [
            running,
            np.where(bootstrap_ok, workers, 0.0),
            np.where((slots > 0) & allowed, slots, 0.0),
            np.where((slots == 0) & allowed, starting, 0.0),
        ]
    )


def nucleus_weight(c: Context) -> float:
    """seed 002 "T1 weight": the factor of queues at the nucleus. The task's t1Weight; 0 or unset: 1, or the
    nucleus weight 4 (panda-server's WORLD_NUCLEUS_WEIGHT) for IO-intensive tasks (ioIntensity ≥ 500 kB/s; above
    500 with T1_WEIGHT_IO_STRICT); −1: 1 (the queues are limited to the nucleus instead); at priority ≥ 900 at
    least 100 (T1_WEIGHT_HIGH_PRIO_SCOUTS: scouts too, never event service or pre-assigned job sets)."""
    task, config, jobs = c.task, c.config, c.scenario.jobs
    weight = int(task.t1Weight or 0)
    if weight == 0:
        io = task.ioIntensity
        intensive = io is not None and (io > 500 if config.get("T1_WEIGHT_IO_STRICT") else io >= 500)
        weight = WORLD_NUCLEUS_WEIGHT if intensive else 1
    elif weight < 0:
        weight = 1
    if config.get("T1_WEIGHT_HIGH_PRIO_SCOUTS"):
        pre = AtlasProdJobBroker.preassign_mode(c) if config.get("PREASSIGNMENT_RULE") == "panda" else jobs.preassigned
        high = (task.currentPriority >= 900 or jobs.isScout) and not task.eventService and not pre
    else:
        high = task.currentPriority >= 900
    return float(max(weight, 100 if high else 1))


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


@dataclass(frozen=True)
class JobCheck:
    """Task brokerage's job check over some sites: each site's production queues, the ones job brokerage keeps,
    and for each other queue the first rule that skipped it (reason code, filter)."""

    queues: dict[str, list[str]]
    kept: dict[str, list[str]]
    skips: dict[str, tuple[str, str]]


# seed 000: full accepts any task, http accepts http or none, none accepts none
NETWORK_ACCEPTS = {"full": {"full", "http", "none", ""}, "http": {"http", "none", ""}, "none": {"none", ""}}


class AtlasProdJobBroker(Plugin):
    name = "atlas_prod_job"
    candidate_kind = "queue"
    retry_after_minutes = 60  # seed 000: "the task is pending for 1 hour"
    # DATA_COMPLETE_ONLY_RULE: production counts only complete copies of an IO-intensive task's master too
    # (AtlasProdJobBroker "get available files"); analysis only of secondaries (AtlasAnalJobBroker 1798-1801)
    master_complete_only_when_io = True
    max_candidates = 10  # seed 000: "the best 10 candidates are taken"
    frame_keys = {
        "status": "status",
        "closeness": "closeness",
        "linkQueued": "link_queued",
        "pledgedcpu": "pledgedcpu",
        "hoursSinceLastStart": "hours_since_start",
        "activated": "activated_real",
        "queueCoreCount": "corecount",
        "capability": "capability",
        "maxrss": "maxrss",
        "minrss": "minrss",
        "maxwdirPerCore": "maxwdir_per_core",
        "storageFreeGB": "output_free",
        "maxtime": "maxtime",
        "mintime": "mintime",
        "wnconnectivity": "wnconnectivity",
        "jobseed": "jobseed",
        "transferring": "transferring",
        "transferringLimit": "transferring_limit",
        "running": "running_real",
        "pilotsLast3h": "pilots",
        "runningCores": "running_cores",
        "networkWeight": "network_weight",
        "queuedWeight": "queued_weight",
        "throughputWeight": "throughput_weight",
        "networkSource": "network_source",
        "queueDiskIOLimit": "diskio_limit",
        "avgDiskIOPerCore": "avg_diskio",
    }

    # --- candidates and the arrays the filters read ---

    def initial_candidates(self, scenario: Scenario) -> list[str]:
        jobs = scenario.jobs
        records = self.queue_records(scenario)
        if scenario.config.get("PREASSIGNMENT_RULE") == "panda":
            mode, names = self.preassignment(scenario)
            if mode:
                return names
        elif jobs.preassigned and not self._preassignment_dropped(scenario):
            wanted = set(jobs.preassigned)
            return [name for name in records if records[name][1] in wanted]
        exclude_test = scenario.config.get("EXCLUDE_TEST_QUEUES")
        cache = self._snapshot_cache(scenario)
        key = ("all queues", exclude_test)
        if key not in cache:
            # seed 000: queues with "test" in the name are not candidates; the real doBrokerage scans them all.
            # Analysis queues never take production jobs (panda-server 1.0.4 SiteMapper puts only queues that
            # runs_production(), production or unified, in the clouds the broker scans).
            cache[key] = sorted(
                name
                for name, (record, unified) in records.items()
                if record.get("type") != "analysis" and not (exclude_test and "test" in unified.lower())
            )
        return list(cache[key])

    def queue_records(self, scenario: Scenario) -> dict[str, tuple[dict[str, Any], str]]:
        """Candidate name → (CRIC record, the queue whose statistics it uses), in the order the real broker scans
        them: plain queues in the snapshot's order, then the pseudo-queues of unified ones."""
        cache = self._snapshot_cache(scenario)
        if "records" not in cache:
            plain: dict[str, tuple[dict[str, Any], str]] = {}
            pseudo: dict[str, tuple[dict[str, Any], str]] = {}
            for name, record in scenario.queues.items():
                if record.get("capability") == "ucore":
                    for child_name, child in pseudo_queue_records(name, record):
                        pseudo[child_name] = (child, name)
                else:
                    plain[name] = (record, name)
            cache["records"] = {**plain, **pseudo}
        return cache["records"]

    def preassignment(self, scenario: Scenario) -> tuple[str, list[str]]:
        """PREASSIGNMENT_RULE panda (AtlasProdJobBroker.doBrokerage 181-227, 1.0.4): how the job set is pre-assigned
        and the queues it scans. A merge job set (pmerge) scans the queue holding the pre-merged outputs and the
        online production queues that read its output storage (DataServiceUtils.getSitesShareDDM), as a list;
        past 24 h it scans every queue, as if not pre-assigned. Another pre-assigned job set (the task's `site`)
        scans those queues (a unified one as its pseudo-queues): one queue is a "site" pre-assignment, which
        leaves many checks out, several a "list". Returns ('' | 'site' | 'list', candidate names)."""
        jobs = scenario.jobs
        if not jobs.preassigned or self._preassignment_dropped(scenario):
            return "", []
        cache = self._snapshot_cache(scenario)
        key = ("preassignment", jobs.preassigned, jobs.isMerge)
        if key in cache:
            return cache[key]
        records = self.queue_records(scenario)
        if jobs.isMerge:
            found = ("list", self._merge_scan(scenario, jobs.preassigned[0]))
            cache[key] = found
            return found
        wanted = set(jobs.preassigned)
        names = [name for name, (_, unified) in records.items() if unified in wanted]
        # the real scan keeps a unified queue itself beside its pseudo-queues (get_pseudo_sites, in the order of a
        # set): only the status check, which a pre-assigned job set skips, drops it (AtlasProdJobBroker 395-397)
        names += sorted(name for name in wanted if scenario.queues.get(name, {}).get("capability") == "ucore")
        found = ("site" if len(names) == 1 else "list", names)
        cache[key] = found
        return found

    def _merge_scan(self, scenario: Scenario, queue: str) -> list[str]:
        """The queues a merge job set scans, in the real order (AtlasProdJobBroker 215-219, 1.0.4): those sharing the
        pre-merged outputs' storage as SiteMapper lists them (plain and unified queues in CRIC order, a unified one
        as itself, then the pseudo-queues), the pre-assigned queue last. The order decides among equal weights."""
        sharing = self._sharing_output(scenario, queue, include_self=True)
        top = [name for name in scenario.queues if name in sharing and name != queue]
        children = [
            name for name, (_, parent) in self.queue_records(scenario).items() if name != parent and parent in sharing
        ]
        return top + children + ([queue] if queue in scenario.queues else [])

    def _sharing_output(self, scenario: Scenario, queue: str, *, include_self: bool = False) -> set[str]:
        """The online production queues whose input storage holds `queue`'s output storage (its first write_lan
        endpoint), and that run what it runs (DataServiceUtils.getSitesShareDDM); `queue` itself only with
        include_self (its pseudo-queues are listed as others are)."""
        record = scenario.queues.get(queue)
        if record is None:
            return set()
        output = ((record.get("astorages") or {}).get("write_lan") or [None])[0]
        unified = record.get("type") == "unified"
        found = set()
        for name, other in scenario.queues.items():
            if (name == queue and not include_self) or other.get("status", "online") != "online" or output is None:
                continue
            if other.get("type") not in ("production", "unified") or (unified and other.get("type") != "unified"):
                continue
            if output in ((other.get("astorages") or {}).get("read_lan") or []):
                found.add(name)
        return found

    def nucleus_default_out(self, scenario: Scenario, nucleus: str) -> str:
        """The nucleus's default output endpoint as SiteMapper sets it: the first write endpoint of the first
        production or unified queue at the nucleus."""
        for record in scenario.queues.values():
            if queue_site(record) == nucleus and record.get("type") in ("production", "unified"):
                return ((record.get("astorages") or {}).get("write_lan") or [""])[0]
        return ""

    def nuclei_known(self, scenario: Scenario) -> frozenset[str]:
        """The nucleus sites with a production or unified queue (SiteMapper.nuclei), once per snapshot."""
        cache = self._snapshot_cache(scenario)
        if "nuclei known" not in cache:
            cache["nuclei known"] = frozenset(
                queue_site(record)
                for record in scenario.queues.values()
                if record.get("type") in ("production", "unified")
                and (site := scenario.sites.get(queue_site(record))) is not None
                and site.role == "nucleus"
            )
        return cache["nuclei known"]

    @staticmethod
    def preassign_mode(c: Context) -> str:
        """The pre-assignment in force for the checks PREASSIGNMENT_RULE panda leaves out ('' under seed)."""
        if c.config.get("PREASSIGNMENT_RULE") != "panda":
            return ""
        return c.plugin.preassignment(c.scenario)[0]

    @staticmethod
    def _preassignment_dropped(scenario: Scenario) -> bool:
        """seed 000: merge jobs are pre-assigned, but not once those queues were skipped for 24 hours."""
        jobs = scenario.jobs
        return jobs.isMerge and jobs.preassignedSkippedHours >= PREASSIGNMENT_PATIENCE_HOURS

    # prepare()'s groups made only when a rule first reads one of their keys (PreparedArrays)
    NETWORK_KEYS = (
        "at_nucleus",
        "queue_sites",
        "closeness",
        "link_queued",
        "network_weight",
        "queued_weight",
        "throughput_weight",
        "network_source",
        "nucleus_queued",
        "nucleus_read_wan",
        "nucleus_write_wan",
    )
    DATA_KEYS = (
        "total_size",
        "total_files",
        "local_size",
        "local_files",
        "missing_size",
        "missing_files",
        "missing_size_with_tape",
        "missing_files_with_tape",
        "assigned_used",
    )
    ESTIMATE_KEYS = (
        "direct_io",
        "job_cores",
        "memory_needed",
        "maxwdir_per_core",
        "disk_needed",
        "walltime_undefined",
        "walltime",
        "hs06_needed",
        "maxtime_hs06",
        "mintime_hs06",
    )
    RUNNING_KEYS = ("running_used", "bootstrap_empty")

    def prepare(self, scenario: Scenario, names: list[str]) -> PreparedArrays:
        """Per-queue arrays. What depends only on the snapshot (CRIC, statistics, storage) is computed once per
        snapshot and candidate list and reused by every job set brokered over it; per decision only the
        nucleus-, task- and configuration-dependent arrays are computed, as whole-array operations, each group
        when a rule first reads it."""
        grid = self._grid(scenario, names)
        a = grid.copy()
        task, config = scenario.task, scenario.config
        limit = config.get("MAX_DISKIO_DEFAULT")
        a["diskio_limit"] = np.where(
            np.isnan(grid["own_diskio_limit"]), np.nan if limit is None else limit, grid["own_diskio_limit"]
        )
        a["nucleus"] = task.nucleus
        if config.get("PREASSIGNMENT_RULE") == "panda" and self.preassignment(scenario)[0]:
            # a pre-assigned job set scans its queues in the order preassignment() gives
            a["scan_order"] = np.arange(len(names), dtype=float)
        a.lazily(
            self.NETWORK_KEYS,
            lambda _: self._network(
                scenario, grid, task.nucleus, config.get("NQUEUED_SAT_CAP"), config.get("NW_THROUGHPUT_LOOKUP")
            ),
        )
        a.lazily(self.DATA_KEYS, overlay_producer(lambda target: self._prepare_data(scenario, grid, target)))
        a.lazily(
            self.ESTIMATE_KEYS,
            overlay_producer(lambda target: self._prepare_job_estimates(task, scenario.jobs, target, config)),
        )
        a.lazily(self.RUNNING_KEYS, overlay_producer(lambda target: self._prepare_running(scenario, grid, target)))
        return a

    @staticmethod
    def _prepare_running(scenario: Scenario, grid: dict[str, Any], a: dict[str, Any]) -> None:
        task, config = scenario.task, scenario.config
        a["running_used"] = running_used(grid, task, config)
        # panda (BOOTSTRAP_EMPTY_QUEUES): a queue without any running or queued job gets weight 0 and goes first
        max_prio = config.get("MAX_PRIO_TO_BOOTSTRAP")
        queued = a["activated"] + a["assigned"] + a["starting"] + a["defined"]
        a["bootstrap_empty"] = (
            (a["running_used"] + queued == 0)
            & bool(config.get("BOOTSTRAP_EMPTY_QUEUES"))
            & (max_prio is None or task.currentPriority <= max_prio)
            & (not scenario.jobs.isMerge)
            & (not is_express(task, config))
        )

    def _grid(self, scenario: Scenario, names: list[str]) -> PreparedArrays:
        cache = self._snapshot_cache(scenario)
        key = ("grid", tuple(names))
        if key not in cache:
            cache[key] = self._build_grid(scenario, names)
        return cache[key]

    # The grid's columns from the CRIC record (name, dtype), in the order _record_row gives them.
    RECORD_COLUMNS = (
        ("status", object),
        ("site", object),
        ("capability", object),
        ("corecount", float),
        ("maxrss", float),
        ("minrss", float),
        ("maxwdir", float),
        ("unified_corecount", float),
        ("maxtime", float),
        ("mintime", float),
        ("direct_access_lan", bool),
        ("always_direct", bool),
        ("corepower", float),
        ("own_diskio_limit", float),
        ("input_endpoint", object),
        ("output_endpoint", object),
    )
    # ... and those only production rules read, made from the records when one of them first is
    PRODUCTION_COLUMNS = (
        ("pledgedcpu", float),
        ("wnconnectivity", object),
        ("fairsharepolicy", object),
        ("jobseed", object),
        ("allow_no_pilot", bool),
        ("transferring_limit", float),
    )
    # The grid's columns from the queue's statistics: (name, statistics key, default, conversion).
    STAT_COLUMNS = (
        ("running", "running", 0, _int),
        ("activated", "activated", 0, _int),
        ("assigned", "assigned", 0, _int),
        ("starting", "starting", 0, _int),
        ("defined", "defined", 0, _int),
        ("transferring", "transferring", 0, _int),
        ("nBatchJob", "nBatchJob", 0, _int),
        ("runningCores", "runningCores", 0, _int),
        ("num_slots", "numSlots", -1, _int),
        ("pilots", "pilotsLast3h", np.nan, _float),
        ("hours_since_start", "hoursSinceLastStart", np.nan, _float),
        ("avg_diskio", "avgDiskIOPerCore", np.nan, _float),
    )

    @staticmethod
    def _record_row(record: dict[str, Any]) -> tuple:
        """One queue's values for RECORD_COLUMNS, read in one pass over its record. parse_scenario has checked that
        every number read here is a number or null (check_queue_record), so they are taken as they are."""
        get = record.get
        corecount = get("corecount")
        unified_corecount = get("unified_corecount", corecount)
        diskio = get("maxdiskio")
        storages = get("astorages") or {}
        return (
            get("status", "online"),
            get("atlas_site") or get("site") or "",
            get("capability") or "",
            max(int(corecount), 1) if corecount is not None else 1,
            get("maxrss") or 0.0,
            get("minrss") or 0.0,
            get("maxwdir") or 0.0,
            max(int(unified_corecount), 1) if unified_corecount is not None else 1,
            get("maxtime") or 0.0,
            get("mintime") or 0.0,
            bool(get("direct_access_lan")),
            # maxinputsize -1: the queue always reads its input directly (SiteSpec.always_use_direct_io)
            get("maxinputsize") == -1,
            get("corepower") or DEFAULT_COREPOWER,
            np.nan if diskio is None else diskio,
            (storages.get("read_lan") or [""])[0] or "",
            (storages.get("write_lan") or [""])[0] or "",
        )

    @classmethod
    def _record_rows(cls, scenario: Scenario, pairs: list[tuple[dict, str]], names: list[str]) -> list[tuple]:
        """_record_row for each candidate; a pseudo-queue's is its unified queue's with its own cores and memory
        limits, the only keys pseudo_queue_records sets (read once per unified queue, not once per type)."""
        rows, unified_rows = [], {}
        for (record, queue), name in zip(pairs, names, strict=True):
            if queue == name:
                rows.append(cls._record_row(record))
                continue
            base = unified_rows.get(queue)
            if base is None:
                base = unified_rows[queue] = cls._record_row(scenario.queues[queue])
            get = record.get
            corecount, unified_corecount = get("corecount"), get("unified_corecount", get("corecount"))
            rows.append(
                (
                    *base[:3],
                    max(int(corecount), 1) if corecount is not None else 1,
                    get("maxrss") or 0.0,
                    get("minrss") or 0.0,
                    base[6],
                    max(int(unified_corecount), 1) if unified_corecount is not None else 1,
                    *base[8:],
                )
            )
        return rows

    @staticmethod
    def _production_row(record: dict[str, Any]) -> tuple:
        """One queue's values for PRODUCTION_COLUMNS."""
        get = record.get
        pledged, catchall = get("pledgedcpu"), get("catchall")
        return (
            np.nan if pledged is None else pledged,
            get("wnconnectivity") or "",
            get("fairsharepolicy") or "",
            get("jobseed") or "std",
            bool(catchall) and "allow_no_pilot" in _catchall(catchall),
            int(get("transferringlimit") or 0) or TRANSFERRING_DEFAULT_LIMIT,
        )

    @classmethod
    def _columns(cls, rows: list[tuple], layout: tuple[tuple[str, type], ...]) -> dict[str, np.ndarray]:
        """Rows of values in `layout`'s order as one array per column."""
        # rows of one length by construction: a strict zip would check it again, value by value
        columns = list(zip(*rows, strict=False)) if rows else [()] * len(layout)
        return {key: np.array(values, dtype=dtype) for (key, dtype), values in zip(layout, columns, strict=True)}

    def _build_grid(self, scenario: Scenario, names: list[str]) -> PreparedArrays:
        known = self.queue_records(scenario)
        # a pseudo-queue reads its unified queue's statistics, pilots and software (panda-server 1.0.4)
        pairs = [known.get(name) or (scenario.queues[name], name) for name in names]
        records = [record for record, _ in pairs]
        unified = [queue for _, queue in pairs]
        # the statistics are read once per queue, whose pseudo-queues share them
        distinct_queues = {queue: position for position, queue in enumerate(dict.fromkeys(unified))}
        queue_stats = [scenario.queue_stats.get(queue, {}) for queue in distinct_queues]
        stats = [queue_stats[distinct_queues[queue]] for queue in unified]
        a = PreparedArrays()
        a.update(self._columns(self._record_rows(scenario, pairs, names), self.RECORD_COLUMNS))
        a.lazily(
            [key for key, _ in self.PRODUCTION_COLUMNS],
            lambda _: self._columns([self._production_row(record) for record in records], self.PRODUCTION_COLUMNS),
        )
        shared = len(distinct_queues) < len(unified)
        a.update(self._stat_columns(queue_stats, [distinct_queues[q] for q in unified] if shared else None))
        a["unified"] = np.array(unified, dtype=object)
        a["is_pseudo"] = np.array([u != name for u, name in zip(unified, names, strict=True)], dtype=bool)
        a["running_real"] = a["running"]
        a["activated_real"] = a["activated"]
        a["running_cores"] = a["runningCores"]
        a.lazily(self.ACTIVITY_KEYS, lambda grid: self._grid_activities(scenario, grid))
        a.lazily(self.SPACE_KEYS, lambda grid: self._grid_space(scenario, grid))
        a.lazily(("readers",), lambda _: {"readers": self._grid_readers(records)})
        a.lazily(self.DERIVED_KEYS, lambda grid: self._grid_derived(scenario, names, stats, grid))
        return a

    # what some rules read of the grid (the production broker's): made when one of them first does
    DERIVED_KEYS = (
        "scan_order",
        "policy_values",
        "policy_index",
        "connectivity_values",
        "connectivity_index",
        "site_bare",
        "has_stats",
    )

    def _grid_derived(self, scenario: Scenario, names: list[str], stats: list[dict], grid) -> dict[str, Any]:
        order = self._scan_positions(scenario)
        sites = scenario.sites
        derived = {
            "scan_order": np.array([order.get(name, len(order)) for name in names], dtype=float),
            "site_bare": np.array([sites[s].bareNucleus if s in sites else "" for s in grid["site"]], dtype=object),
            "has_stats": np.array([bool(st) for st in stats], dtype=bool),
        }
        # rules read per distinct string: the distinct values and, per queue, which one it has
        derived["policy_values"], derived["policy_index"] = distinct(grid["fairsharepolicy"].tolist())
        derived["connectivity_values"], derived["connectivity_index"] = distinct(grid["wnconnectivity"].tolist())
        return derived

    # the queues' storage endpoints, each group made when a rule first reads one of its keys: the activities of
    # their input and output endpoints, the output endpoint's space, and which queues read each endpoint
    ACTIVITY_KEYS = tuple(f"{role}_{activity}" for role in ("in", "out") for activity in ENDPOINT_ACTIVITIES)
    SPACE_KEYS = ("output_free", "output_usable")

    @classmethod
    def _stat_columns(cls, stats: list[dict[str, Any]], rows: list[int] | None = None) -> dict[str, np.ndarray]:
        """STAT_COLUMNS for the queues' statistics (`rows`: per candidate, its queue's position in `stats`, when
        pseudo-queues share their unified queue's): one float matrix when every value is a number or null (a null
        or absent one takes the column's default, counts are whole), converted as a whole, else value by value."""
        keys, whole, defaults = _STAT_LAYOUT
        try:
            # one flat list, a column after the other, absent values NaN already: numpy converts it at twice the
            # speed of rows holding None, and each column comes out contiguous
            flat = [s.get(key, math.nan) for key in keys for s in stats]
            matrix = np.array(flat, dtype=float).reshape(len(keys), len(stats))
        except (TypeError, ValueError):  # text where a number belongs: _int and _float read what they can
            return {
                name: np.array([convert(s.get(key), default) for s in stats], dtype=float)[rows or slice(None)]
                for name, key, default, convert in cls.STAT_COLUMNS
            }
        # in place, on the counts' columns and the missing values only (truncating and testing NaN or infinity
        # raise no floating-point error)
        np.trunc(matrix, out=matrix, where=whole)
        np.copyto(matrix, defaults, where=np.isnan(matrix))
        if rows is not None:
            matrix = matrix[:, rows]
        return {name: matrix[position] for position, (name, _, _, _) in enumerate(cls.STAT_COLUMNS)}

    def _scan_positions(self, scenario: Scenario) -> dict[str, int]:
        cache = self._snapshot_cache(scenario)
        if "scan positions" not in cache:
            cache["scan positions"] = {name: position for position, name in enumerate(self.queue_records(scenario))}
        return cache["scan positions"]

    @staticmethod
    def _grid_activities(scenario: Scenario, grid) -> dict[str, np.ndarray]:
        """Each activity of each queue's input and output endpoint (a blacklisted endpoint's are OFF; an unknown
        endpoint's empty)."""
        endpoints = scenario.ddm_endpoints
        made: dict[str, np.ndarray] = {}
        for role, key in (("in", "input_endpoint"), ("out", "output_endpoint")):
            rows = []
            for name in grid[key].tolist():
                info = endpoints.get(name) if name else None
                if info is None:
                    rows.append(("",) * len(ENDPOINT_ACTIVITIES))
                else:
                    rows.append(tuple("OFF" if info.blacklisted else info.activity(x) for x in ENDPOINT_ACTIVITIES))
            columns = list(zip(*rows, strict=False)) if rows else [()] * len(ENDPOINT_ACTIVITIES)
            for activity, values in zip(ENDPOINT_ACTIVITIES, columns, strict=True):
                made[f"{role}_{activity}"] = np.array(values, dtype=object)
        return made

    @staticmethod
    def _grid_space(scenario: Scenario, grid) -> dict[str, np.ndarray]:
        """The free space of each queue's output endpoint, and free plus expired (GB; unknown: NaN)."""
        endpoints = scenario.ddm_endpoints
        free, usable = [], []
        for name in grid["output_endpoint"].tolist():
            info = endpoints.get(name) if name else None
            free.append(np.nan if info is None else info.space_free)
            usable.append(np.nan if info is None else info.space_free + info.space_expired)
        return {"output_free": np.array(free, dtype=float), "output_usable": np.array(usable, dtype=float)}

    @staticmethod
    def _grid_readers(records: list[dict[str, Any]]) -> dict[str, list[int]]:
        """Endpoint → the queues (positions) that read from it over LAN, for the data-availability sums."""
        readers: dict[str, list[int]] = {}
        for position, record in enumerate(records):
            for endpoint in (record.get("astorages") or {}).get("read_lan") or []:
                readers.setdefault(endpoint, []).append(position)
        return readers

    def _network(
        self, scenario: Scenario, grid: dict[str, Any], nucleus: str, sat_cap: float, lookup: str
    ) -> dict[str, Any]:
        """The arrays that depend on the nucleus: at the nucleus, link to it, network weight (cached per nucleus)."""
        cache = self._snapshot_cache(scenario)
        key = ("network", id(grid), nucleus, sat_cap, lookup)
        if key in cache:
            return cache[key]
        links = {link.src: link for link in scenario.network if link.dst == nucleus}
        result: dict[str, Any] = {}  # the nucleus itself is prepared up front (prepare)
        sites = grid["site"].tolist()
        result["at_nucleus"] = np.array([bool(nucleus) and site == nucleus for site in sites], dtype=bool)
        result["queue_sites"] = frozenset(sites)
        # once per site (its queues share its link and weight): closeness, queued, the weights and their source
        by_site: dict[str, tuple] = {}
        for site in result["queue_sites"]:
            link = links.get(site)
            if not nucleus:
                weight = (1.0, 1.0, 1.0, "no nucleus")
            else:
                w = network_weight(
                    at_nucleus=site == nucleus,
                    queued=0 if link is None else link.queued,
                    sat_cap=sat_cap,
                    mbps_1h=None if link is None else link.mbps_1h,
                    mbps_1d=None if link is None else link.mbps_1d,
                    mbps_1w=None if link is None else link.mbps_1w,
                    closeness=None if link is None else link.closeness,
                    lookup=lookup,
                )
                weight = (w.weight, w.queued_weight, w.throughput_weight, w.source)
            by_site[site] = (
                np.nan if link is None or link.closeness is None else link.closeness,
                0 if link is None else link.queued,
                *weight,
            )
        rows = [by_site[site] for site in sites]
        closeness, queued, weights, queued_w, throughput_w, sources = zip(*rows, strict=False) if rows else [()] * 6
        result["closeness"] = np.array(closeness, dtype=float)
        result["link_queued"] = np.array(queued, dtype=float)
        result["network_weight"] = np.array(weights, dtype=float)
        result["queued_weight"] = np.array(queued_w, dtype=float)
        result["throughput_weight"] = np.array(throughput_w, dtype=float)
        result["network_source"] = np.array(sources, dtype=object)
        stats = scenario.nucleus_stats.get(nucleus)
        if stats is not None and stats.outputQueued is not None:
            result["nucleus_queued"] = stats.outputQueued
        else:
            result["nucleus_queued"] = sum(link.queued for link in links.values()) if nucleus else 0
        nucleus_endpoints = [
            info
            for info in scenario.ddm_endpoints.values()
            if info.site == nucleus and info.type == scenario.task.outputEndpointType
        ]
        result["nucleus_read_wan"] = (
            "ON" if all(e.activity("read_wan") == "ON" and not e.blacklisted for e in nucleus_endpoints) else "OFF"
        )
        result["nucleus_write_wan"] = (
            "ON" if all(e.activity("write_wan") == "ON" and not e.blacklisted for e in nucleus_endpoints) else "OFF"
        )
        cache[key] = result
        return result

    def _prepare_data(self, scenario: Scenario, grid: dict[str, Any], a: dict[str, Any]) -> None:
        """Input already at each queue's storage (its read_lan endpoints), per dataset the most complete copy."""
        n = len(grid["site"])
        readers = grid["readers"]
        task, config = scenario.task, scenario.config
        io_intensive = (
            task.ioIntensity is not None
            and task.ioIntensity > config.get("IO_INTENSITY_CUTOFF")
            and not task.inputPreStaging
        )
        # LOCAL_DATA_DISK_ONLY (panda siteSizeMap): the local input is what disk copies hold; with tape copies
        # too (siteSizeMapWT) it is the IO check's second choice
        disk_only = bool(config.get("LOCAL_DATA_DISK_ONLY"))
        # summed per queue in plain lists: a copy reaches the few queues that read its endpoint, where an array
        # operation per copy cost more than the rest of the data check
        local_size, local_files, with_tape_size, with_tape_files = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
        for dataset in scenario.datasets:
            # panda-server 1.0.4 ("get available files"): only complete copies count for a secondary dataset
            # and for an IO-intensive task's master (getAvailableFiles complete_only)
            complete_only = bool(config.get("DATA_COMPLETE_ONLY_RULE")) and (
                not dataset.master or (io_intensive and self.master_complete_only_when_io)
            )
            best: dict[int, list[float]] = {}  # position → [GB, files] of the most complete disk copy it reads
            tape: dict[int, list[float]] = {}  # ... of tape copies, apart under LOCAL_DATA_DISK_ONLY
            for endpoint, replica in dataset.replicas.items():
                if complete_only and replica.nFiles < dataset.nFiles:
                    continue
                positions = readers.get(endpoint)
                if positions is None:
                    continue
                info = scenario.ddm_endpoints.get(endpoint)
                target = tape if disk_only and info is not None and info.is_tape else best
                for position in positions:
                    held = target.setdefault(position, [0.0, 0.0])
                    held[0] = max(held[0], replica.sizeGB)
                    held[1] = max(held[1], replica.nFiles)
            for position, (size, files) in best.items():
                local_size[position] += size
                local_files[position] += files
            # the copies are the first files of the dataset (as the driver's Rucio answers): their union is the
            # larger of the two
            for position in best.keys() | tape.keys():
                disk_copy, tape_copy = best.get(position, (0.0, 0.0)), tape.get(position, (0.0, 0.0))
                with_tape_size[position] += max(disk_copy[0], tape_copy[0])
                with_tape_files[position] += max(disk_copy[1], tape_copy[1])
        local_size, local_files = np.array(local_size, dtype=float), np.array(local_files, dtype=float)
        with_tape_size, with_tape_files = np.array(with_tape_size, dtype=float), np.array(with_tape_files, dtype=float)
        total_size = float(sum(d.sizeGB for d in scenario.datasets))
        total_files = float(sum(d.nFiles for d in scenario.datasets))
        a["total_size"], a["total_files"] = total_size, total_files
        a["local_size"], a["local_files"] = local_size, local_files
        a["missing_size"] = np.maximum(total_size - local_size, 0.0)
        a["missing_files"] = np.maximum(total_files - local_files, 0.0)
        a["missing_size_with_tape"] = np.maximum(total_size - with_tape_size, 0.0)
        a["missing_files_with_tape"] = np.maximum(total_files - with_tape_files, 0.0)
        a["assigned_used"] = np.where(a["missing_files"] == 0, 0.0, a["assigned"])

    def _prepare_job_estimates(self, task, jobs, a, config) -> None:
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

    # --- weight ---

    def weigh(self, context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        config = context.config
        running = context["running_used"][survivors]
        activated = context["activated"][survivors]
        starting = context["starting"][survivors]
        defined = context["defined"][survivors]
        total = context["total_size"]
        missing_files = context["missing_files"][survivors]
        available = context["local_size"][survivors]
        if config.get("MANY_ASSIGNED_RULE") == "plus_one":
            # panda-server 1.0.4: the assigned jobs count only while input is missing at the queue
            assigned = context["assigned"][survivors]
            local = (total <= 0) | (context["missing_size"][survivors] <= 0)
            many_assigned = np.clip((assigned + 1) / (activated + 1), 1.0, 2.0)
            base = np.where(
                local,
                (running + 1) / (activated + starting + defined + 10),
                (running + 1) / (activated + assigned + starting + defined + 10) / many_assigned,
            )
            assigned = np.where(local, 0.0, assigned)
        else:
            assigned = context["assigned_used"][survivors]
            # REFERENCE.md: manyAssigned = max(1, min(2, assigned/activated)); activated 0: 2 if assigned else 1
            with np.errstate(divide="ignore", invalid="ignore"):
                many_assigned = np.where(
                    activated > 0,
                    np.maximum(1.0, np.minimum(2.0, assigned / np.where(activated > 0, activated, 1))),
                    np.where(assigned > 0, 2.0, 1.0),
                )
            base = (running + 1) / ((activated + assigned + starting + defined + 10) * many_assigned)
        data_factor = (
            (available + total) / (total * (missing_files / 100.0 + 1)) if total > 0 else np.ones(len(survivors))
        )
        network = context["network_weight"][survivors]
        t1_weight = nucleus_weight(context)
        nucleus_factor = np.where(context["at_nucleus"][survivors], t1_weight, 1.0)
        weights = base * data_factor * nucleus_factor
        if config.get("NW_ACTIVE"):
            weights = weights * network
        bootstrap = context["bootstrap_empty"][survivors]
        weights = np.where(bootstrap, 0.0, weights)
        return weights, {
            "running": running,
            "activated": activated,
            "assigned": assigned,
            "starting": starting,
            "defined": defined,
            "manyAssigned": many_assigned,
            "baseWeight": base,
            "dataWeight": data_factor,
            "availableGB": available,
            "missingFiles": missing_files,
            "nucleusWeight": nucleus_factor,
            "networkWeight": network,
            "bootstrap": bootstrap,
        }

    def rank_key(self, context: Context, survivors: np.ndarray, weights: np.ndarray):
        """panda (BOOTSTRAP_EMPTY_QUEUES): queues brought up from nothing first, then by weight, equal weights in
        the order the real broker scans them; otherwise by weight, equal weights by name."""
        if not context.config.get("BOOTSTRAP_EMPTY_QUEUES"):
            return super().rank_key(context, survivors, weights)
        order = context["scan_order"]
        return lambda i: (weights[i] != 0, -weights[i], order[survivors[i]])

    # --- filters, in the order of seed 000 ---

    @staticmethod
    def _status(c: Context) -> Rejection:
        jobs = c.scenario.jobs
        if AtlasProdJobBroker.preassign_mode(c):  # panda: no status check for a pre-assigned job set
            return NOTHING_FAILS
        in_force = jobs.preassigned and not AtlasProdJobBroker._preassignment_dropped(c.scenario)
        offline = c["status"] != "online"
        if in_force:  # seed 000: pre-assigned queues are used whatever their status
            offline = offline & ~among(c.names, jobs.preassigned)
        return Rejection(offline, {"status": c["status"], "required": "online"})

    @staticmethod
    def _input_complete(c: Context) -> Rejection:
        dataset = input_incomplete(c.scenario)
        if not dataset:
            return NOTHING_FAILS
        return Rejection(np.ones(len(c.names), dtype=bool), {"dataset": dataset})

    @staticmethod
    def _unknown_nucleus(c: Context) -> Rejection:
        """NUCLEUS_NEEDS_QUEUE (1.0.4 SiteMapper.collect_nuclei_and_satellites): a nucleus is known through any
        production or unified queue at it, whichever queues the job set scans (issue 33 D5: a job set
        pre-assigned away from the nucleus still knows it). Read from the task, not the arrays: the grid is not
        built for a job set that goes here."""
        nucleus = c.task.nucleus
        unknown = (
            bool(nucleus)
            and bool(c.config.get("NUCLEUS_NEEDS_QUEUE"))
            and nucleus not in c.plugin.nuclei_known(c.scenario)
        )
        if not unknown:
            return NOTHING_FAILS
        return Rejection(np.ones(len(c.names), dtype=bool), {"nucleus": nucleus})

    @staticmethod
    def _link_blocked(c: Context) -> Rejection:
        return Rejection(
            (c["closeness"] == -1) & ~c["at_nucleus"], {"closeness": c["closeness"], "nucleus": c["nucleus"]}
        )

    @staticmethod
    def _nucleus_storage(c: Context) -> Rejection:
        """JOB_ENDPOINT_RULE panda (AtlasProdJobBroker "link check", 1.0.4 455-475): when the nucleus's default
        output endpoint cannot receive over WAN, satellites are skipped (dest_blacklisted, a temporary problem).
        The seed checks the nucleus's storage in the endpoint rules instead."""
        nucleus = c["nucleus"]
        if c.config.get("JOB_ENDPOINT_RULE") != "panda" or not nucleus:
            return NOTHING_FAILS
        endpoint = c.plugin.nucleus_default_out(c.scenario, nucleus)
        info = c.scenario.ddm_endpoints.get(endpoint) if endpoint else None
        status = info.activity("write_wan") if info is not None else "ON"
        down = status in DOWNTIME_STATUSES
        return Rejection(~c["at_nucleus"] & down, {"endpoint": f"{endpoint} (nucleus {nucleus})", "write_wan": status})

    @staticmethod
    def _satellite_link_full(c: Context) -> Rejection:
        cap = c.config.get("NQUEUED_SAT_CAP")
        return Rejection(
            (c["link_queued"] >= cap) & ~c["at_nucleus"],
            {"linkQueued": c["link_queued"], "cap": cap, "capKey": "NQUEUED_SAT_CAP"},
        )

    @staticmethod
    def _nucleus_full(c: Context) -> Rejection:
        cap = c.config.get("NQUEUED_NUC_CAP_FOR_JOBS")
        full = bool(c["nucleus"]) and c["nucleus_queued"] >= cap
        fails = np.full(len(c.names), full, dtype=bool)
        if c.config.get("JOB_ENDPOINT_RULE") == "panda":
            # AtlasProdJobBroker "link check" (1.0.4, 465-482): the nucleus's own queues pass before any link rule
            fails &= ~c["at_nucleus"]
        return Rejection(
            fails,
            {"nucleusQueued": c["nucleus_queued"], "cap": cap, "capKey": "NQUEUED_NUC_CAP_FOR_JOBS"},
        )

    @staticmethod
    def _inactive(c: Context) -> Rejection:
        if not _urgent_or_scout(c, merge_too=True) or AtlasProdJobBroker.preassign_mode(c):
            return NOTHING_FAILS
        hours = c["hours_since_start"]
        waiting = c["activated_real"]
        if c.config.get("INACTIVE_COUNTS_STARTING"):
            waiting = waiting + c["starting"]
        fails = (hours > INACTIVE_HOURS) & (waiting > 0)
        return Rejection(fails, {"hoursSinceLastStart": hours, "activated": c["activated_real"], "limitHours": 2})

    @staticmethod
    def _opportunistic(c: Context) -> Rejection:
        if not _urgent_or_scout(c, merge_too=False) or AtlasProdJobBroker.preassign_mode(c):
            return NOTHING_FAILS
        return Rejection(c["pledgedcpu"] == -1, {"pledgedcpu": c["pledgedcpu"], "priority": c.task.currentPriority})

    @staticmethod
    def _zero_share(c: Context) -> Rejection:
        """seed 000 "Zero Share"; urgent tasks ignore fairshare (seed 002). FAIRSHARE_RULE panda: panda-server
        1.0.4's hasZeroShare, which has no urgent exemption."""
        task = c.task
        panda = c.config.get("FAIRSHARE_RULE") == "panda"
        if not panda and is_urgent(task):
            return NOTHING_FAILS
        policies, inverse = c["policy_values"], c["policy_index"]
        job = {
            "processing_type": task.processingType,
            "working_group": task.workingGroup,
            "gshare": task.gshare,
            "priority": task.currentPriority,
        }
        shares, rules = [], []
        for policy in policies.tolist():  # once per distinct policy string
            if panda:
                zero, rule = zero_share_panda(policy, merging=c.scenario.jobs.isMerge, **job)
            else:
                try:
                    share, rule = share_for(policy, **job)
                except FairsharePolicyError as error:
                    share, rule = None, f"unreadable policy ignored: {error}"
                zero = share == 0
            shares.append(zero)
            rules.append(rule)
        fails = np.array(shares, dtype=bool)[inverse] if len(policies) else np.zeros(0, dtype=bool)
        return Rejection(
            fails,
            {
                "rule": np.array(rules, dtype=object)[inverse] if len(policies) else fails,
                "processingType": task.processingType,
            },
        )

    @staticmethod
    def _io(c: Context) -> Rejection:
        config = c.config
        if config.get("IO_CHECK_RULE") == "panda":
            return AtlasProdJobBroker._io_panda(c)
        cutoff = config.get("IO_INTENSITY_CUTOFF")
        io = c.task.ioIntensity or 0.0
        if io <= cutoff:
            return NOTHING_FAILS
        size_cut, num_cut = config.get("SIZE_CUTOFF_TO_MOVE_INPUT"), config.get("NUM_CUTOFF_TO_MOVE_INPUT")
        fails = (c["missing_size"] >= size_cut) | (c["missing_files"] >= num_cut)
        return Rejection(fails, _io_detail(c, io, size_cut, num_cut))

    @staticmethod
    def _io_panda(c: Context) -> Rejection:
        """AtlasProdJobBroker "IO check" (1.0.4): for an IO-intensive task (not merge, not event service) with
        input, a queue missing more than SIZE_CUTOFF_TO_MOVE_INPUT GB (whole MB) or NUM_CUTOFF_TO_MOVE_INPUT
        files is skipped. When no queue passes, queues that pass counting their tape copies too are the second
        choice (LOCAL_DATA_DISK_ONLY tells the two apart); when none passes either, the check is switched off."""
        config, task, jobs = c.config, c.task, c.scenario.jobs
        io = task.ioIntensity
        if (
            io is None
            or io <= config.get("IO_INTENSITY_CUTOFF")
            or c["total_size"] <= 0
            or jobs.isMerge
            or task.eventService
            or AtlasProdJobBroker.preassign_mode(c) == "site"
        ):
            return NOTHING_FAILS
        size_cut, num_cut = config.get("SIZE_CUTOFF_TO_MOVE_INPUT"), config.get("NUM_CUTOFF_TO_MOVE_INPUT")
        fails = (np.floor(c["missing_size"] * 1024) > size_cut * 1024) | (c["missing_files"] > num_cut)
        # second choice: queues that would miss little counting their tape copies too
        fails_with_tape = (np.floor(c["missing_size_with_tape"] * 1024) > size_cut * 1024) | (
            c["missing_files_with_tape"] > num_cut
        )
        if not np.any(c.alive & ~fails_with_tape):
            return NOTHING_FAILS  # no queue passes: the check is switched off
        detail = _io_detail(c, io, size_cut, num_cut)
        if not np.any(c.alive & ~fails):
            detail.update(missingGB=c["missing_size_with_tape"], missingFiles=c["missing_files_with_tape"])
            return Rejection(fails_with_tape, {**detail, "tapeCounted": True})
        return Rejection(fails, detail)

    @staticmethod
    def _disk_io(c: Context) -> Rejection:
        limit = c["diskio_limit"]
        task_io = c.task.diskIO
        if task_io is None:
            return NOTHING_FAILS
        if c.config.get("DISK_IO_RULE") == "panda" and (c.task.coreCount or 0) > 1:
            # AtlasProdJobBroker "diskIO check" (1.0.4, 695-698): a multi-core task's diskIO per core of the queue
            task_io = np.floor(task_io / c["unified_corecount"])
        with np.errstate(invalid="ignore"):
            fails = ~np.isnan(limit) & (c["avg_diskio"] > limit) & (task_io > limit)
        return Rejection(fails, {"queueDiskIOLimit": limit, "avgDiskIOPerCore": c["avg_diskio"], "taskDiskIO": task_io})

    @staticmethod
    def _core_count(c: Context) -> Rejection:
        task = c.task
        if AtlasProdJobBroker.preassign_mode(c) == "site":  # panda: "selection for MP" left out
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

    @staticmethod
    def task_software(task, config) -> TaskSoftware:
        """The task's side of the software check (the analysis broker reads the release its own way)."""
        return TaskSoftware(task.architecture, task.transUses, task.transHome, task.container_name, task.onlyTagsForFC)

    @staticmethod
    def software_extra(record: dict[str, Any]) -> dict[str, Any]:
        """What the check of one queue needs beyond the shared arguments (analysis: whether it is a GPU queue)."""
        return {}

    @staticmethod
    def software_checker(config) -> tuple[Any, Callable[..., tuple[bool, dict[str, Any]]]]:
        """(what identifies the rules, the check of one queue): the seed's check with its switches, or
        SOFTWARE_RULE panda, panda-server 1.0.4's own (software_panda.py)."""
        if config.get("SOFTWARE_RULE") == "panda":
            return "panda", prod_software_panda
        rules = SoftwareRules(
            any_skips_hw_check=config.get("RELEASES_ANY_SKIPS_HW_CHECK"),
            list_accepted=config.get("RELEASES_LIST_ACCEPTED"),
            cpu_needs_architecture=config.get("CPU_CHECK_NEEDS_ARCHITECTURE"),
        )
        return rules, functools.partial(software_check, rules=rules)

    @staticmethod
    def _software(c: Context) -> Rejection:
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

    @staticmethod
    def _memory(c: Context) -> Rejection:
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

    @staticmethod
    def _direct_access(c: Context) -> Rejection:
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

    @staticmethod
    def _disk(c: Context) -> Rejection:
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

    @staticmethod
    def _storage_space(c: Context) -> Rejection:
        """panda (JOB_DISK_RULE): the output storage's usable space (free + expired) below 200 GB; the seed's
        storage floor is part of the disk filter."""
        if c.config.get("JOB_DISK_RULE") != "panda":
            return NOTHING_FAILS
        with np.errstate(invalid="ignore"):
            no_room = ~np.isnan(c["output_usable"]) & (c["output_usable"] < LOCAL_STORAGE_FLOOR_GB)
        return Rejection(no_room, {"storageUsableGB": c["output_usable"], "storageFloorGB": 200})

    @staticmethod
    def _endpoints(c: Context) -> Rejection:
        cache = c.plugin._snapshot_cache(c.scenario)
        if c.config.get("JOB_ENDPOINT_RULE") == "panda":
            locations, remote_ok = complete_locations(c.scenario)
            storage_type, nucleus_queues, locations = c.plugin.endpoint_terms(c, locations)
            key = ("endpoints panda", id(c["site"]), nucleus_queues.tobytes(), locations, remote_ok, storage_type)
            if key not in cache:
                cache[key] = AtlasProdJobBroker._endpoint_rules_panda(
                    c, locations, remote_ok, storage_type, nucleus_queues
                )
            return cache[key]
        key = ("endpoints", id(c["site"]), c["nucleus"], c.scenario.task.outputEndpointType)
        if key not in cache:
            cache[key] = AtlasProdJobBroker._endpoint_rules(c)
        return cache[key]

    @staticmethod
    def endpoint_terms(c: Context, locations: frozenset[str] | None) -> tuple[str | None, np.ndarray, Any]:
        """What the endpoint check compares (JOB_ENDPOINT_RULE panda): production looks at DATADISK endpoints, its
        nucleus's queues are the ones excused from WAN, and a nucleus queue without a complete copy is not."""
        return "DATADISK", c["at_nucleus"], locations

    @staticmethod
    def _endpoint_rules_panda(
        c: Context,
        locations: frozenset[str] | None,
        remote_ok: bool,
        storage_type: str | None,
        nucleus_queues: np.ndarray,
    ) -> Rejection:
        """JOB_ENDPOINT_RULE panda: AtlasBrokerUtils.check_endpoints_with_blacklist (1.0.4, 1215-1285) over each
        queue's DATADISK endpoints (an input one blacklisted for reading is not the queue's). Any input endpoint
        readable over LAN, any output one writable over LAN; a satellite (or a nucleus queue whose input endpoint
        holds no complete copy of every dataset, issue 33 D3) needs an input endpoint that receives over WAN and an
        output one that sends; a satellite also needs a complete copy somewhere that can be read over WAN."""
        scenario = c.scenario
        endpoints = scenario.ddm_endpoints
        known = c.plugin.queue_records(scenario)
        n = len(c.names)
        fails = np.zeros(n, dtype=bool)
        code = np.full(n, "", dtype=object)
        endpoint_names = np.full(n, "", dtype=object)
        activity = np.full(n, "", dtype=object)
        # per endpoint, once: (of the storage type asked, blacklisted, read_lan, write_lan, read_wan, write_wan up)
        seen: dict[str, tuple[bool, bool, bool, bool, bool, bool]] = {}

        def state(name: str) -> tuple[bool, bool, bool, bool, bool, bool]:
            found = seen.get(name)
            if found is None:
                info = endpoints.get(name)
                kind = info.type if info is not None else name.rsplit("_", 1)[-1]
                if info is None:
                    found = (storage_type is None or kind == storage_type, False, True, True, True, True)
                else:
                    found = (
                        storage_type is None or kind == storage_type,
                        bool(info.blacklisted),
                        *(info.activity(what) not in DOWNTIME_STATUSES for what in ENDPOINT_ACTIVITIES),
                    )
                seen[name] = found
            return found

        # a queue's verdict depends on its LAN endpoints and whether it is a nucleus queue: the queues of a site
        # (and a unified queue's pseudo-queues) share them
        verdicts: dict[tuple, tuple[str, str, str] | None] = {}
        for i, name in enumerate(c.names):
            record = (known.get(name) or (scenario.queues.get(name, {}), name))[0]
            storages = record.get("astorages") or {}
            nucleus_queue = bool(nucleus_queues[i])
            key = (tuple(storages.get("read_lan") or ()), tuple(storages.get("write_lan") or ()), nucleus_queue)
            if key not in verdicts:
                verdicts[key] = AtlasProdJobBroker._endpoint_verdict(
                    storages, nucleus_queue, state, locations, remote_ok
                )
            verdict = verdicts[key]
            if verdict is not None:
                fails[i] = True
                code[i], endpoint_names[i], activity[i] = verdict
        return Rejection(fails, {"endpoint": endpoint_names, "activity": activity, "required": "ON"}, code=code)

    @staticmethod
    def _endpoint_verdict(
        storages, nucleus_queue: bool, state, locations, remote_ok: bool
    ) -> tuple[str, str, str] | None:
        """One queue under JOB_ENDPOINT_RULE panda: None when it passes, else (rule, endpoints, activity)."""
        inputs = [e for e in storages.get("read_lan") or [] if state(e)[0] and not state(e)[1]]
        outputs = [e for e in storages.get("write_lan") or [] if state(e)[0]]
        read_lan = any(state(e)[2] for e in inputs)
        receive = source = False
        for e in inputs:
            if not nucleus_queue or (locations and e not in locations):
                receive |= state(e)[5]
            else:
                receive = source = True
        write_lan = any(state(e)[3] for e in outputs)
        send = False
        for e in outputs:
            if not nucleus_queue:
                send |= state(e)[4]
            else:
                send = source = True
        source = source or remote_ok
        for ok, rule, where, what in (
            (read_lan, "read_lan_blacklist", ",".join(inputs) or "no input endpoint", "read_lan"),
            (write_lan, "write_lan_blacklist", ",".join(outputs) or "no output endpoint", "write_lan"),
            (receive, "write_wan_blacklist", ",".join(inputs), "write_wan"),
            (send, "read_wan_blacklist", ",".join(outputs), "read_wan"),
            (source, "source_blacklist", "no complete copy readable over WAN", "read_wan"),
        ):
            if not ok:
                return rule, where, what
        return None

    @staticmethod
    def _endpoint_rules(c: Context) -> Rejection:
        """seed 000: input endpoints read_lan and output endpoints write_lan ON everywhere; for satellites the
        input endpoint must also receive (write_wan) and the output endpoint send (read_wan) over WAN, and the
        nucleus's endpoint both. The first endpoint of each role is the queue's primary one."""
        n = len(c.names)
        satellite = ~c["at_nucleus"] & bool(c["nucleus"])
        rules = [
            (
                "read_lan_blacklist",
                c["input_endpoint"],
                (c["in_read_lan"] != "") & (c["in_read_lan"] != "ON"),
                "read_lan",
            ),
            (
                "write_lan_blacklist",
                c["output_endpoint"],
                (c["out_write_lan"] != "") & (c["out_write_lan"] != "ON"),
                "write_lan",
            ),
            (
                "write_wan_blacklist",
                c["input_endpoint"],
                satellite & (c["in_write_wan"] != "") & (c["in_write_wan"] != "ON"),
                "write_wan",
            ),
            (
                "read_wan_blacklist",
                c["output_endpoint"],
                satellite & (c["out_read_wan"] != "") & (c["out_read_wan"] != "ON"),
                "read_wan",
            ),
            (
                "write_wan_blacklist",
                np.full(n, f"{c['nucleus']} (nucleus)", dtype=object),
                satellite & (c["nucleus_write_wan"] != "ON"),
                "write_wan",
            ),
            (
                "read_wan_blacklist",
                np.full(n, f"{c['nucleus']} (nucleus)", dtype=object),
                satellite & (c["nucleus_read_wan"] != "ON"),
                "read_wan",
            ),
        ]
        fails = np.zeros(n, dtype=bool)
        code = np.full(n, "", dtype=object)
        endpoint = np.full(n, "", dtype=object)
        activity = np.full(n, "", dtype=object)
        for rule_code, names, failing, activity_name in rules:
            new = failing & ~fails
            code[new], endpoint[new], activity[new] = rule_code, names[new], activity_name
            fails |= failing
        return Rejection(fails, {"endpoint": endpoint, "activity": activity, "required": "ON"}, code=code)

    @staticmethod
    def _walltime(c: Context) -> Rejection:
        jobs = c.scenario.jobs
        if c.config.get("JOB_WALLTIME_RULE") == "panda":
            return AtlasProdJobBroker._walltime_panda(c)
        return walltime_rejection(c, needs_a_day=jobs.isScout or c["walltime_undefined"])

    @staticmethod
    def _walltime_panda(c: Context) -> Rejection:
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
            scout = jobs.isScout and AtlasProdJobBroker.preassign_mode(c) != "site"
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

    @staticmethod
    def _connectivity(c: Context) -> Rejection:
        if not c.task.ipConnectivity or AtlasProdJobBroker.preassign_mode(c) == "site":
            return NOTHING_FAILS
        task_network, task_stack = _split_connectivity(c.task.ipConnectivity)
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
            queue_network, queue_stack = _split_connectivity(text)
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

    @staticmethod
    def _event_service(c: Context) -> Rejection:
        """Event-service tasks need jobseed es, eshigh or all; normal ones avoid queues that take ES only."""
        if AtlasProdJobBroker.preassign_mode(c) == "site":
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

    @staticmethod
    def _transferring(c: Context) -> Rejection:
        limit = np.maximum(c["transferring_limit"], 2 * c["running_real"])
        too_many = c["transferring"] > limit
        if not c.config.get("TRANSFERRING_AT_NUCLEUS"):
            too_many &= ~c["at_nucleus"]  # panda-server 1.0.4 checks only queues outside the nucleus
        return Rejection(too_many, {"transferring": c["transferring"], "limit": limit, "running": c["running_real"]})

    @staticmethod
    def _t1_weight(c: Context) -> Rejection:
        """t1Weight = −1: normal jobs go only to the nucleus's queues (seed 000)."""
        if (c.task.t1Weight or 0) >= 0 or c.scenario.jobs.isMerge or not c["nucleus"]:
            return NOTHING_FAILS
        return Rejection(~c["at_nucleus"], {"t1Weight": c.task.t1Weight, "nucleus": c["nucleus"], "site": c["site"]})

    @staticmethod
    def _full_chain(c: Context) -> Rejection:
        """seed 000: a full-chain task on a bare nucleus runs only at the nucleus; queues of a bareNucleus=only
        site take full-chain work only."""
        task = c.task
        nucleus_site = c.scenario.sites.get(c["nucleus"])
        nucleus_bare = nucleus_site.bareNucleus if nucleus_site else ""
        chain_on_bare = bool(task.fullChain) and nucleus_bare in ("only", "allow")
        elsewhere = ~c["at_nucleus"] if chain_on_bare else np.zeros(len(c.names), dtype=bool)
        only_chain = (c["site_bare"] == "only") & (not chain_on_bare)
        return Rejection(
            elsewhere | only_chain,
            {"fullChain": task.fullChain, "nucleusBare": nucleus_bare, "siteBare": c["site_bare"]},
            code=lambda: np.where(elsewhere, "full_chain", "not_full_chain"),
        )

    @staticmethod
    def _pilots(c: Context) -> Rejection:
        if c.config.get("PILOT_RULE") == "panda":
            # panda-server 1.0.4: no pilot seen (no statistics counts as none), unless numSlots is set for the
            # queue or the task is a test task that is not express; pre-assigned job sets are not checked
            jobs = c.scenario.jobs
            panda_rule = c.config.get("PREASSIGNMENT_RULE") == "panda"
            if AtlasProdJobBroker.preassign_mode(c) if panda_rule else jobs.preassigned:
                return NOTHING_FAILS
            label = c.task.prodSourceLabel
            if "test" in label and not is_express(c.task, c.config):
                return NOTHING_FAILS
            none = (c["pilots"] == 0) | np.isnan(c["pilots"])  # no statistics counts as none
            return Rejection(none & (c["num_slots"] < 0), {"pilotsLast3h": c["pilots"]})
        return Rejection((c["pilots"] == 0) & ~c["allow_no_pilot"], {"pilotsLast3h": c["pilots"]})

    @staticmethod
    def _urgent_network(c: Context) -> Rejection:
        task = c.task
        if not is_express(task, c.config) or not c.config.get("NW_ACTIVE"):
            return NOTHING_FAILS
        threshold = c.config.get("NW_THRESHOLD") * c.config.get("NW_WEIGHT_MULTIPLIER")
        return Rejection(
            c["network_weight"] < threshold, {"networkWeight": c["network_weight"], "threshold": threshold}
        )

    @staticmethod
    def _work_shortage(c: Context) -> Rejection:
        if not c.config.get("WORK_SHORTAGE") or AtlasProdJobBroker.preassign_mode(c) == "site":
            return NOTHING_FAILS
        pledged = c["pledgedcpu"]
        opportunistic = pledged == -1
        with np.errstate(invalid="ignore"):
            over = (pledged > 0) & (c["running_cores"] > pledged)
        return Rejection(
            opportunistic | over,
            {"pledgedcpu": pledged, "runningCores": c["running_cores"]},
            code=lambda: np.where(opportunistic, "non_pledged", "over_pledged"),
        )

    @staticmethod
    def _cap_panda(c: Context) -> Rejection:
        """AtlasProdJobBroker "check cap" (1.0.4): express tasks are never capped. At a non-unified queue
        activated + starting (+ assigned while input is missing) above max(NQUEUELIMITSITE, 2 × running) is
        `cap`; per resource type, defined jobs included, above max(NQUEUELIMITSITE, 2 × running) is `cap_rt`
        (the queue's own counts stand for the task's resource type)."""
        if is_express(c.task, c.config):
            return NOTHING_FAILS
        cutoff = c.config.get("NQUEUELIMITSITE", gshare=c.task.gshare or None) or BOOTSTRAP_RUNNING
        running = c["running_used"]
        assigned = np.where(c["missing_size"] > 0, c["assigned"], 0.0)
        queued = c["activated"] + c["starting"] + assigned
        limit = np.maximum(cutoff, 2 * running)
        plain = ~((c["capability"] == "ucore") | c["is_pseudo"]) & (queued > limit)
        queued_rt = queued + c["defined"]
        limit_rt = np.maximum(cutoff, 2 * np.maximum(c["running_real"], running))
        per_type = c["has_stats"] & (queued_rt > limit_rt) & ~c["bootstrap_empty"]
        return Rejection(
            plain | per_type,
            {
                "queued": np.where(plain, queued, queued_rt),
                "limit": np.where(plain, limit, limit_rt),
                "running": running,
            },
            code=lambda: np.where(plain, "cap", "cap_rt"),
        )

    @staticmethod
    def _most_running_at_nucleus(c: Context) -> Rejection:
        """t1Weight = −1 with NEGATIVE_T1_WEIGHT_RULE most_running (panda-server 1.0.4, "calculate weight"): the
        queues are scanned in order; each time one has more running jobs than any before it, everything kept so
        far is dropped and it is kept; queues being bootstrapped are kept when scanned. So the queue with the most
        running jobs stays (the first scanned on a tie), with the bootstrapped queues scanned after it.

        The real scan order is that of a Python set (JobBrokerBase.get_unified_sites); we scan in queue-list
        order, and the differential test pins the real code to the same order."""
        if (
            c.config.get("NEGATIVE_T1_WEIGHT_RULE") != "most_running"
            or (c.task.t1Weight or 0) >= 0
            or c.scenario.jobs.isMerge
        ):
            return NOTHING_FAILS
        alive = np.flatnonzero(c.alive)
        if not len(alive):
            return NOTHING_FAILS
        running, bootstrap = c["running_real"], c["bootstrap_empty"]
        kept: list[int] = []
        best = None
        for position in alive[np.argsort(c["scan_order"][alive], kind="stable")].tolist():
            if bootstrap[position]:
                kept.append(position)
            elif best is None or best < running[position]:
                best = running[position]
                kept = [position]
        fails = c.alive.copy()
        fails[kept] = False
        return Rejection(fails, {"running": running, "mostRunning": best if best is not None else 0})

    @staticmethod
    def _cap_activated(c: Context) -> Rejection:
        if c.config.get("JOB_CAP_RULE") == "panda":
            return AtlasProdJobBroker._cap_panda(c)
        queued = c["activated"] + c["starting"]
        limit = _cap_limit(c)
        return Rejection(
            queued > limit, {"activatedPlusStarting": queued, "limit": limit, "running": c["running_used"]}
        )

    @staticmethod
    def _cap_all(c: Context) -> Rejection:
        if c.config.get("JOB_CAP_RULE") == "panda":
            return NOTHING_FAILS  # one rule in the panda profile (above)
        queued = c["defined"] + c["activated"] + c["assigned_used"] + c["starting"]
        limit = _cap_limit(c)
        return Rejection(queued > limit, {"queued": queued, "limit": limit, "running": c["running_used"]})

    filters = (
        Filter("unknown nucleus", "unknown_nucleus", _unknown_nucleus),
        Filter("input complete", "input_missing", _input_complete),
        Filter("queue status", "status", _status),
        Filter("link blocked", "link_unusable", _link_blocked),
        Filter("nucleus storage", "dest_blacklisted", _nucleus_storage),
        Filter("satellite link full", "links_full", _satellite_link_full),
        Filter("nucleus backlog", "links_full", _nucleus_full),
        Filter("inactive queue", "inactive", _inactive),
        Filter("opportunistic queue", "opportunistic", _opportunistic),
        Filter("zero share", "zeroshare", _zero_share),
        Filter("input transfer", "io", _io),
        Filter("disk IO", "diskIO", _disk_io),
        Filter("core count", "cpucore", _core_count),
        Filter("software", "cache", _software),
        Filter("memory", "lowmemory", _memory),
        Filter("direct access", "remoteio", _direct_access),
        Filter("disk", "disk", _disk),
        Filter("storage space", "disk", _storage_space),
        Filter("storage endpoints", "read_lan_blacklist", _endpoints),
        Filter("walltime", "shortwalltime", _walltime),
        Filter("network connectivity", "network", _connectivity),
        Filter("event service", "es", _event_service),
        Filter("transferring", "transferring", _transferring),
        Filter("t1 weight", "t1weight", _t1_weight),
        Filter("full chain", "full_chain", _full_chain),
        Filter("pilots", "nopilot", _pilots),
        Filter("urgent network weight", "lowNetworkWeight", _urgent_network),
        Filter("work shortage", "non_pledged", _work_shortage),
        Filter("queued activated+starting", "cap", _cap_activated),
        Filter("queued all", "cap", _cap_all),
        Filter("t1 weight most running", "t1weight", _most_running_at_nucleus),
    )

    # The filters the real broker treats as temporary problems: it removes their queues only after the IO check
    # (AtlasProdJobBroker "temporary problem check"), so with IO_CHECK_RULE panda they run after it.
    TEMPORARY = frozenset(
        {
            "nucleus storage",
            "satellite link full",
            "nucleus backlog",
            "inactive queue",
            "disk IO",
            "storage space",
            "storage endpoints",
            "transferring",
            "pilots",
        }
    )
    LAST = ("urgent network weight", "queued activated+starting", "queued all", "t1 weight most running")

    def filters_for(self, scenario: Scenario):
        if scenario.config.get("IO_CHECK_RULE") != "panda":
            return self.filters
        return self._panda_order()

    # panda-server 1.0.4 AtlasProdJobBroker.doBrokerage(hintForTB=True), the task broker's "job check": the task
    # has no nucleus yet, so the rules against one are not run and every queue scanned counts as at a nucleus (the
    # real sites_in_nucleus then holds all nuclei's queues); the scan ends after the pilot check and drops the
    # temporary problems there, so the IO check and the rules of the weight loop are left out too.
    JOB_CHECK_LEFT_OUT = frozenset(
        {
            "unknown nucleus",
            "link blocked",
            "nucleus storage",
            "satellite link full",
            "nucleus backlog",
            "t1 weight",
            "full chain",
            "input transfer",
            *LAST,
        }
    )

    def job_check(self, scenario: Scenario, sites: Collection[str]) -> JobCheck:
        """Job brokerage as task brokerage asks it (JOB_CHECK_LEFT_OUT) over the production queues of `sites`, with
        the task scenario's `jobs` as the job set (AtlasProdTaskBroker passes the task's first input chunk)."""
        hint = replace(scenario, task=replace(scenario.task, nucleus=""), jobs=replace(scenario.jobs, preassigned=()))
        names = self._nucleus_queues(hint)
        arrays = self.prepare(hint, names).copy()
        arrays["at_nucleus"] = np.ones(len(names), dtype=bool)
        wanted = set(sites)
        site_of = arrays["site"].tolist()
        context = Context(hint, names, arrays, np.array([s in wanted for s in site_of], dtype=bool), self)
        skipped = SkipTable(names)
        for rule in self.filters_for(hint):
            if rule.name not in self.JOB_CHECK_LEFT_OUT and rule.name not in self.disabled_filters:
                self._apply(rule, context, skipped)
        queues: dict[str, list[str]] = {site: [] for site in wanted}
        kept: dict[str, list[str]] = {site: [] for site in wanted}
        skips: dict[str, tuple[str, str]] = {}
        for position, (name, site) in enumerate(zip(names, site_of, strict=True)):
            if site not in wanted:
                continue
            queues[site].append(name)
            if context.alive[position]:
                kept[site].append(name)
            else:
                skip = skipped[name]
                skips[name] = (skip.code, skip.filter)
        return JobCheck(queues, kept, skips)

    def _nucleus_queues(self, scenario: Scenario) -> list[str]:
        """The production queues at nuclei (pseudo-queues for unified ones), the same list for every task of a
        snapshot so that the per-snapshot arrays are built once."""
        cache = self._snapshot_cache(scenario)
        key = ("nucleus queues", scenario.config.get("EXCLUDE_TEST_QUEUES"))
        if key not in cache:
            records = self.queue_records(scenario)
            nuclei = {name for name, site in scenario.sites.items() if site.role == "nucleus"}
            cache[key] = [name for name in self.initial_candidates(scenario) if queue_site(records[name][0]) in nuclei]
        return list(cache[key])

    @classmethod
    @functools.cache
    def _panda_order(cls) -> tuple[Filter, ...]:
        """The real broker's order: permanent filters, the IO check, the temporary ones, the weight-loop checks."""
        by_name = {f.name: f for f in cls.filters}
        moved = cls.TEMPORARY | set(cls.LAST) | {"input transfer"}
        permanent = [f for f in cls.filters if f.name not in moved]
        temporary = [f for f in cls.filters if f.name in cls.TEMPORARY]
        return (*permanent, by_name["input transfer"], *temporary, *(by_name[name] for name in cls.LAST))


# _stat_columns' layout: the statistics keys in column order, which columns are whole counts, each column's default
_STAT_LAYOUT = (
    tuple(key for _, key, _, _ in AtlasProdJobBroker.STAT_COLUMNS),
    np.array([[convert is _int] for _, _, _, convert in AtlasProdJobBroker.STAT_COLUMNS]),  # a row per column
    np.array([[default] for _, _, default, _ in AtlasProdJobBroker.STAT_COLUMNS], dtype=float),
)
