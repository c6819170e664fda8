"""Drives the REAL PanDA/JEDI brokers of panda-server 1.0.4 on scenarios in our format, many per process.

Runs in the peer's own virtual environment (tools/peer/setup.py), never in the project's: it imports
pandaserver and pandajedi from the unpacked source archive. Every brokerage class is the real one
(AtlasProdJobBroker, AtlasBrokerUtils, SiteMapper with its unified → pseudo-queue split, SiteSpec built by the
real EntityModule.getSiteInfo over a stand-in cursor, JediTaskSpec, InputChunk); only what sits behind the
database, Rucio and CRIC is a small stand-in fed from the scenario.

Usage:  python panda_driver.py job SCENARIOS.json [REPEAT]   (a JSON list) → a JSON list of results on stdout, one
per scenario: {"status", "candidates": {unified queue: weight}, "pseudo": {queue: weight}, "skipped": {queue: codes},
"seconds"} or {"error": text}. With REPEAT > 1 each scenario is brokered that many times, each time from inputs built
afresh (outside the timing): the result is the first run's, "seconds" the fastest run's and "seconds_runs" every
run's time.
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
import os
import re
import sys
import time
import traceback
import types

from panda_fields import refusal  # tools/peer/panda_fields.py, on the driver's PYTHONPATH
from pandajedi.jedibrokerage import AtlasAnalJobBroker as anal_broker_module
from pandajedi.jedibrokerage import AtlasBrokerUtils
from pandajedi.jedibrokerage import AtlasProdJobBroker as job_broker_module
from pandajedi.jedibrokerage import AtlasProdTaskBroker as task_broker_module
from pandajedi.jedibrokerage.AtlasAnalJobBroker import AtlasAnalJobBroker
from pandajedi.jedibrokerage.AtlasProdJobBroker import AtlasProdJobBroker
from pandajedi.jedibrokerage.AtlasProdTaskBroker import AtlasProdTaskBroker
from pandajedi.jedibrokerage.JobBrokerBase import JobBrokerBase
from pandaserver.brokerage.SiteMapper import SiteMapper
from pandaserver.taskbuffer import task_split_rules
from pandaserver.taskbuffer.db_proxy_mods.entity_module import EntityModule
from pandaserver.taskbuffer.InputChunk import InputChunk
from pandaserver.taskbuffer.JediDatasetSpec import JediDatasetSpec
from pandaserver.taskbuffer.JediFileSpec import JediFileSpec
from pandaserver.taskbuffer.JediTaskSpec import JediTaskSpec
from pandaserver.taskbuffer.ResourceSpec import ResourceSpec
from pandaserver.userinterface import Client


# The real helpers return a set's order, so the real scan order changes with the hash seed, and one rule depends
# on it (t1Weight -1 keeps the bootstrapped queues scanned after the queue with the most running jobs). Pinned
# here to the scanned list's own order, which is the order our engine scans in.
def _unified_sites(self, scan_site_list):
    return tuple(dict.fromkeys(self.siteMapper.getSite(name).get_unified_name() for name in scan_site_list))


def _pseudo_sites(self, unified_list, scan_site_list):
    unified = set(unified_list)
    return tuple(name for name in scan_site_list if self.siteMapper.getSite(name).get_unified_name() in unified)


JobBrokerBase.get_unified_sites = _unified_sites
JobBrokerBase.get_pseudo_sites = _pseudo_sites

# No server to upload the brokerage log to.
Client.uploadLog = lambda message, task_id: (0, {"success": True, "message": "offline", "data": ""})

# ATLAS resource types (the JEDI resource_types table): name, mincore, maxcore, minrampercore, maxrampercore
RESOURCE_TYPES = [
    ResourceSpec("SCORE", 1, 1, None, 2000),
    ResourceSpec("MCORE", 2, None, None, 2000),
    ResourceSpec("SCORE_HIMEM", 1, 1, 2001, None),
    ResourceSpec("MCORE_HIMEM", 2, None, 2001, None),
]
STATUS_KEYS = ("running", "activated", "assigned", "starting", "defined", "transferring")


def resource_type_of(task: dict) -> str:
    cores = task.get("coreCount") or 1
    ram = task.get("ramCount") or 0
    per_core = ram if "PerCore" in (task.get("ramUnit") or "MBPerCore") else ram / max(cores, 1)
    return ("SCORE" if cores <= 1 else "MCORE") + ("_HIMEM" if per_core > 2000 else "")


class Cursor:
    """Answers the three queries EntityModule.getSiteInfo sends: endpoints, queue↔endpoint relations, slots."""

    def __init__(self, endpoints: list[dict], relations: list[dict], slots: list[tuple]):
        self.endpoints, self.relations, self.slots = endpoints, relations, slots
        self.result: list = []
        self.description: list = []
        self.arraysize = 0

    def execute(self, sql: str, *args) -> None:
        if "panda_ddm_relation" in sql:
            rows = self.relations
        elif "FROM ATLAS_PANDA.ddm_endpoint " in sql:
            rows = self.endpoints
        elif "Harvester_Slots" in sql:
            self.result = list(self.slots)
            return
        else:
            raise RuntimeError("unexpected SQL " + sql)
        columns = list(rows[0]) if rows else ["ddm_endpoint_name"]
        self.description = [(c,) for c in columns]
        self.result = [tuple(row[c] for c in columns) for row in rows]

    def fetchall(self) -> list:
        return self.result


class Proxy:
    """The database proxy; getSiteInfo and getDdmEndpoints are the real EntityModule methods."""

    backend = "oracle"
    getSiteInfo = EntityModule.getSiteInfo
    getDdmEndpoints = EntityModule.getDdmEndpoints

    def __init__(self, cursor: Cursor, queue_rows: list[tuple]):
        self.cur = cursor
        self.conn = types.SimpleNamespace(begin=lambda: None)
        self.queue_rows = queue_rows

    def create_tagged_logger(self, comment):
        return logging.getLogger("peer-proxy")

    def getClobObj(self, sql, variables):
        return True, self.queue_rows

    def _commit(self):
        return True

    def _rollback(self):
        return True

    def dump_error_message(self, log):
        traceback.print_exc(file=sys.stderr)


def site_info(scenario: dict):
    """The real getSiteInfo over the scenario's queues, sites and endpoints."""
    queues, sites, endpoints = scenario.get("queues", {}), scenario.get("sites", {}), scenario.get("ddm_endpoints", {})
    endpoint_rows = []
    for name, info in endpoints.items():
        status = {activity: "ON" for activity in ("read_lan", "write_lan", "read_wan", "write_wan")}
        status.update(info.get("detailed_status") or {})
        kind = info.get("type") or name.split("_")[-1]
        endpoint_rows.append(
            {
                "ddm_endpoint_name": name,
                "site_name": info.get("site"),
                "ddm_spacetoken_name": kind,
                "type": kind,
                "is_tape": "Y" if info.get("is_tape") else "N",
                "blacklisted": "Y" if info.get("blacklisted") else "N",
                "space_total": info.get("space_total"),
                "space_free": info.get("space_free"),
                "space_used": info.get("space_used"),
                "space_expired": info.get("space_expired"),
                "space_min_free": 0,
                "space_unavailable": 0,
                "detailed_status": json.dumps(status),
            }
        )
    relations = []
    for queue, record in queues.items():
        storages = record.get("astorages") or {}
        readers, writers = list(storages.get("read_lan") or []), list(storages.get("write_lan") or [])
        for endpoint in dict.fromkeys(readers + writers):
            info = endpoints.get(endpoint, {})
            relations.append(
                {
                    "panda_site_name": queue,
                    "ddm_endpoint_name": endpoint,
                    "is_local": "Y",
                    "ddm_spacetoken_name": info.get("type") or endpoint.split("_")[-1],
                    "is_tape": "Y" if info.get("is_tape") else "N",
                    "default_read": "Y" if readers and endpoint == readers[0] else "N",
                    "default_write": "Y" if writers and endpoint == writers[0] else "N",
                    "roles": ",".join(
                        r for r, names in (("read_lan", readers), ("write_lan", writers)) if endpoint in names
                    ),
                    "order_read": readers.index(endpoint) + 1 if endpoint in readers else None,
                    "order_write": writers.index(endpoint) + 1 if endpoint in writers else None,
                    "scope": "default",
                    "blacklisted_read": "Y" if info.get("blacklisted") else "N",
                }
            )
    slots = [
        (q, None, None, s["numSlots"])
        for q, s in scenario.get("queue_stats", {}).items()
        if s.get("numSlots") is not None
    ]
    rows = []
    for queue, record in queues.items():
        data = dict(record, nickname=queue)
        data.setdefault("cloud", "WORLD")
        site = record.get("atlas_site") or ""
        catchall = [c for c in (data.get("catchall") or "").split(",") if c]
        if sites.get(site, {}).get("bareNucleus"):
            catchall.append(f"bareNucleus={sites[site]['bareNucleus']}")
        data["catchall"] = ",".join(catchall)
        rows.append((queue, data, site, sites.get(site, {}).get("role", "")))
    return Proxy(Cursor(endpoint_rows, relations, slots), rows).getSiteInfo()


class WorkQueue:
    is_global_share = True
    queue_id = None
    queue_type = "managed"

    def __init__(self, gshare: str):
        self.queue_name = gshare


class TaskBuffer:
    """The statistics and configuration the brokers ask the database for, from the scenario."""

    def __init__(self, scenario: dict):
        self.scenario = scenario
        self.config = {"NW_ACTIVE": True, **(scenario.get("gdpconfig") or {})}
        task = scenario["task"]
        self.gshare = task.get("gshare", "MC 16")
        self.resource_type = resource_type_of(task)
        self.job_stats, self.rt_stats, self.site_data, self.core_stats, self.worker_stats = {}, {}, {}, {}, {}
        self.inactive, self.disk_io = set(), {}
        for name, stats in scenario.get("queue_stats", {}).items():
            counts = {key: stats.get(key, 0) or 0 for key in STATUS_KEYS}
            self.job_stats[name] = {self.gshare: counts}
            self.rt_stats[name] = {self.resource_type: {k: counts[k] for k in STATUS_KEYS if k != "transferring"}}
            self.site_data[name] = {"getJob": stats.get("pilotsLast3h", 0) or 0, "updateJob": 0}
            if (stats.get("hoursSinceLastStart") or 0) > 2:
                self.inactive.add(name)
            if stats.get("avgDiskIOPerCore") is not None:
                self.disk_io[name] = stats["avgDiskIOPerCore"]
            self.core_stats[name] = {"running": stats.get("runningCores", 0) or 0}
            if stats.get("nBatchJob"):
                self.worker_stats[name] = {
                    "harvester": {"label": {self.resource_type: {"running": stats["nBatchJob"]}}}
                }
        for name in scenario.get("queues", {}):
            self.site_data.setdefault(name, {"getJob": 0, "updateJob": 0})
        self.storage_mapping = {n: {"default": r.get("atlas_site")} for n, r in scenario.get("queues", {}).items()}
        self._site_mapper = None

    def getConfigValue(self, component, key, app="pandaserver", vo=None, default=None):
        return self.config.get(key, default)

    def load_resource_types(self, *args, **kwargs):
        return RESOURCE_TYPES

    def get_cloud_list(self):
        return sorted({r.get("cloud") or "WORLD" for r in self.scenario.get("queues", {}).values()} | {"WORLD"})

    def getSiteInfo(self):
        return site_info(self.scenario)

    def get_site_mapper(self):
        if self._site_mapper is None:
            self._site_mapper = SiteMapper(self)
        return self._site_mapper

    def load_sw_map(self):
        return dict(self.scenario.get("sw_tags") or {})

    def get_architecture_level_map(self):
        return {}

    def get_worker_node_gpu_map(self):
        # the pilots' GPU summary per queue, in the real monitoring's key names (hardware_matching.py)
        renamed = {"microarchitecture": "architecture", "version": "framework_version"}
        return {
            queue: [{renamed.get(key, key): value for key, value in gpu.items()} for gpu in gpus]
            for queue, gpus in (self.scenario.get("gpu_summary") or {}).items()
        }

    def get_core_statistics(self, vo, label):
        return True, self.core_stats

    def getJobStatisticsByGlobalShare(self, vo, exclude_rwq=False):
        return True, self.job_stats

    def getJobStatisticsWithWorkQueue_JEDI(self, vo, label):
        return True, self.job_stats

    def getJobStatisticsByResourceTypeSite(self, work_queue):
        return True, self.rt_stats

    def get_num_jobs_with_status_by_nucleus(self, vo, status):
        return True, {}

    def getWorkQueueMap(self):
        queue = WorkQueue(self.gshare)
        return types.SimpleNamespace(getQueueWithIDGshare=lambda queue_id, gshare: queue)

    def getInactiveSites_JEDI(self, flag, hours):
        return self.inactive

    def getAvgDiskIO_JEDI(self):
        return self.disk_io

    def getPandaSiteToOutputStorageSiteMapping(self):
        return self.storage_mapping

    def getNetworkMetrics(self, destination, keys):
        queued_key = next(k for k in keys if k.endswith("_queued"))
        metrics, total = {}, 0
        for link in self.scenario.get("network", []):
            if link.get("dst") != destination:
                continue
            values = {}
            if link.get("closeness") is not None:
                values["AGIS_closeness"] = link["closeness"]
            if link.get("queued") is not None:
                values[queued_key] = link["queued"]
                total += link["queued"]
            for ours, theirs in (
                ("mbps_1w", "dashb_mbps_1w"),
                ("mbps_1d", "dashb_mbps_1d"),
                ("mbps_1h", "dashb_mbps_1h"),
            ):
                if link.get(ours) is not None:
                    values[theirs] = link[ours]
            metrics[link["src"]] = values
        nucleus_stats = self.scenario.get("nucleus_stats", {}).get(destination, {})
        if nucleus_stats.get("outputQueued") is not None:
            total = nucleus_stats["outputQueued"]
        metrics["total"] = {queued_key: total}
        return metrics

    def getCurrentSiteData(self):
        return self.site_data

    def getNumReadyEvents(self, task_id):
        return None

    def get_distinct_resource_types_per_site(self, task_id):
        return {}

    def ups_load_worker_stats(self):
        return self.worker_stats

    def ups_get_queues(self):
        return list(self.worker_stats)

    def checkProcessLock_JEDI(self, **kwargs):
        return False


class Rucio:
    """Replicas of the scenario's datasets; a replica holds the first nFiles files of its dataset."""

    def __init__(self, scenario: dict, files: dict[str, list]):
        self.endpoints = scenario.get("ddm_endpoints", {})
        self.datasets = {d["name"]: d for d in scenario.get("datasets") or []}
        self.files = files

    def isDistributedDataset(self, name):
        return False

    def listDatasetReplicas(self, name, **kwargs):
        dataset = self.datasets[name]
        total = dataset.get("nFiles")
        return {
            endpoint: [{"found": replica.get("nFiles", total), "total": total}]
            for endpoint, replica in (dataset.get("replicas") or {}).items()
        }

    def getSiteProperty(self, endpoint, name):
        return bool(self.endpoints.get(endpoint, {}).get("is_tape")) if name == "is_tape" else None

    def getAvailableFiles(self, dataset_spec, site_endpoints, site_mapper, complete_only=False, **kwargs):
        dataset = self.datasets[dataset_spec.datasetName]
        files = self.files[dataset_spec.datasetName]
        result = {}
        for site, endpoints in site_endpoints.items():
            disk = tape = 0
            for endpoint in endpoints:
                replica = (dataset.get("replicas") or {}).get(endpoint)
                if replica is None:
                    continue
                found = replica.get("nFiles", dataset.get("nFiles"))
                if complete_only and found < dataset.get("nFiles"):
                    continue
                if self.endpoints.get(endpoint, {}).get("is_tape"):
                    tape = max(tape, found)
                else:
                    disk = max(disk, found)
            result[site] = {"localdisk": files[:disk], "localtape": files[:tape], "cache": [], "remote": []}
        return result


def task_spec(scenario: dict) -> JediTaskSpec:
    task, jobs = scenario["task"], scenario.get("jobs") or {}
    spec = JediTaskSpec()
    spec.jediTaskID = task.get("jediTaskID", 1)
    spec.taskPriority = task.get("taskPriority", 500)
    spec.currentPriority = task.get("currentPriority", spec.taskPriority)
    spec.processingType = task.get("processingType", "simul")
    spec.prodSourceLabel = task.get("prodSourceLabel", "managed")
    spec.gshare = task.get("gshare", "MC 16")
    spec.vo = task.get("vo", "atlas")
    spec.workQueue_ID = 1
    spec.coreCount = task.get("coreCount", 1)
    spec.ramCount = task.get("ramCount", 0)
    spec.ramUnit = task.get("ramUnit", "MBPerCore")
    spec.baseRamCount = task.get("baseRamCount", 0)
    spec.outDiskCount = task.get("outDiskCount")
    spec.outDiskUnit = task.get("outDiskUnit", "kB")
    spec.workDiskCount = task.get("workDiskCount")
    spec.workDiskUnit = task.get("workDiskUnit", "MB")
    spec.ioIntensity = task.get("ioIntensity")
    spec.ioIntensityUnit = "kBPerS"
    spec.diskIO = task.get("diskIO")
    spec.cpuTime = task.get("cpuTime")
    spec.cpuTimeUnit = "HS06sPerEvent" if task.get("cpuTime") is not None else None
    spec.cpuEfficiency = task.get("cpuEfficiency", 90)
    spec.baseWalltime = task.get("baseWalltime", 600)
    spec.walltime = spec.walltimeUnit = None
    spec.architecture = task.get("architecture")
    spec.transUses = task.get("transUses")
    spec.transHome = task.get("transHome") or None  # as given: none means no software check in 1.0.4
    spec.container_name = task.get("container_name")
    spec.nucleus = task.get("nucleus")
    spec.workingGroup = task.get("workingGroup")
    spec.eventService = 1 if task.get("eventService") else 0
    spec.site = None
    spec.cloud = "WORLD"
    spec.resource_type = resource_type_of(task)
    spec.frozenTime = spec.mergeCoreCount = spec.splitRule = None
    spec.setSplitRule("nFilesPerJob", str(max(int(task.get("nFilesPerJob") or jobs.get("nFiles", 1) or 1), 1)))
    if jobs.get("isMerge"):
        # a merge job takes nFilesPerMergeJob files (InputChunk sizes merges by it: 1.0.4 InputChunk.py 326-337)
        spec.setSplitRule("nFilesPerMergeJob", str(max(int(jobs.get("nFiles", 1) or 1), 1)))
    if jobs.get("isPreMerged"):
        spec.setSplitRule("mergeOutput", "1")
    if task.get("fullChain"):
        spec.setSplitRule("fullChain", {v: k for k, v in task_split_rules.enum_fullChain.items()}[task["fullChain"]])
    if jobs.get("preassigned") and not jobs.get("isMerge"):
        spec.site = ",".join(jobs["preassigned"])
    if task.get("t1Weight") is not None:
        spec.setSplitRule("t1Weight", str(int(task["t1Weight"])))
    if task.get("ipConnectivity"):
        spec.setIpConnectivity(task["ipConnectivity"])
    if task.get("maxCoreCount"):
        spec.setSplitRule("maxCoreCount", str(task["maxCoreCount"]))
    if task.get("allowInputLAN") in ("use", "only"):
        spec.setSplitRule("allowInputLAN", {v: k for k, v in spec.enum_inputLAN.items()}[task["allowInputLAN"]])
    if task.get("eventService") and task.get("nEsConsumers"):
        spec.setSplitRule("nEsConsumers", str(task["nEsConsumers"]))
    if task.get("eventService") and task.get("maxAttemptEsJob") is not None:
        spec.setSplitRule("maxAttemptEsJob", str(task["maxAttemptEsJob"]))
    if task.get("nJumboJobs"):
        # JediTaskSpec.getNumJumboJobs reads the split rule while useJumbo is on (R: jumbo jobs made)
        spec.useJumbo = spec.enum_useJumbo["running"]
        spec.setSplitRule("nJumboJobs", str(task["nJumboJobs"]))
    if task.get("onlyTagsForFC"):
        spec.setSplitRule("onlyTagsForFC", "1")
    if task.get("inputPreStaging"):
        spec.setSplitRule("inputPreStaging", "1")
    return spec


def input_chunk(
    scenario: dict, spec: JediTaskSpec, *, sized_by_jobs: bool = False
) -> tuple[InputChunk, dict[str, list]]:
    """The job set as JEDI sees it: each dataset's files (equal sizes), the job's files and events. With
    `sized_by_jobs` (task brokerage, whose job check sizes the task's first job) the master's files are sized so
    that one job of `jobs.nFiles` files holds `jobs.inputSizeMB`, and secondary files weigh nothing."""
    jobs = scenario.get("jobs") or {}
    files_per_job = max(int(jobs.get("nFiles", 1) or 1), 1)
    task = scenario.get("task") or {}
    events = int(jobs.get("nEvents") or 0) or int(task.get("nEventsPerJob") or 0)
    files_by_dataset: dict[str, list] = {}
    master, secondaries = None, []
    for index, dataset in enumerate(scenario.get("datasets") or []):
        is_master = dataset.get("master", index == 0)
        ds = JediDatasetSpec()
        ds.jediTaskID, ds.datasetID, ds.datasetName = spec.jediTaskID, index + 1, dataset["name"]
        ds.type = "input"
        ds.masterID = None if is_master else 1
        ds.nFiles = ds.nFilesToBeUsed = int(dataset.get("nFiles", 1))
        ds.nFilesUsed, ds.nEvents = 0, None
        ds.site = ds.storageToken = ds.creationTime = ds.modificationTime = ds.attributes = None
        ds.Files = []
        size = round(dataset.get("sizeGB", 0) * 1024**3 / max(ds.nFiles, 1))
        if sized_by_jobs:
            size = round(float(jobs.get("inputSizeMB", 0) or 0) * 1024**2 / files_per_job) if is_master else 0
        for number in range(ds.nFiles):
            f = JediFileSpec()
            f.jediTaskID, f.datasetID, f.fileID = spec.jediTaskID, ds.datasetID, 1000 * (index + 1) + number
            f.lfn, f.fsize, f.scope = f"{dataset['name']}._{number:06d}.pool.root", size, "mc23"
            f.nEvents = max(events // files_per_job, 1) if events else None
            f.startEvent = f.endEvent = f.PandaID = f.boundaryID = f.lumiBlockNr = None
            f.status, f.attemptNr, f.keepTrack, f.type = "ready", 0, 1, ds.type
            ds.addFile(f)
        files_by_dataset[ds.datasetName] = list(ds.Files)
        if master is None and is_master:
            master = ds
        else:
            secondaries.append(ds)
    if master is None and not secondaries:
        # a task without input (event generation) reads a pseudo dataset: a job's files carrying its events, for
        # each of the job set's jobs (analysis counts its jobs from the files)
        n_pseudo = files_per_job * max(int(jobs.get("nJobs", 1) or 1), 1)
        master = JediDatasetSpec()
        master.jediTaskID, master.datasetID, master.datasetName = spec.jediTaskID, 1, "pseudo_dataset"
        master.type, master.masterID = "pseudo_input", None
        master.nFiles = master.nFilesToBeUsed = n_pseudo
        master.nFilesUsed, master.nEvents = 0, None
        master.site = master.storageToken = master.creationTime = master.modificationTime = master.attributes = None
        master.Files = []
        for number in range(n_pseudo):
            f = JediFileSpec()
            f.jediTaskID, f.datasetID, f.fileID = spec.jediTaskID, 1, 1000 + number
            f.lfn, f.fsize, f.scope, f.type = f"pseudo_file_{number}", 0, "pseudo", "pseudo_input"
            f.nEvents = max(events // files_per_job, 1) if events else None
            f.startEvent = f.endEvent = f.PandaID = f.boundaryID = f.lumiBlockNr = None
            f.status, f.attemptNr, f.keepTrack = "ready", 0, 1
            master.addFile(f)
    preassigned = jobs.get("preassigned") or []
    if jobs.get("isMerge") and preassigned and master is not None:
        # pmerge: the master dataset names the queue holding the pre-merged outputs; the real code drops it once
        # the dataset was last changed over 24 h ago and the task has been frozen over 6 h
        master.site = preassigned[0]
        hours = float(jobs.get("preassignedSkippedHours") or 0)
        if hours >= 24:
            now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
            master.modificationTime = now - datetime.timedelta(hours=hours)
            master.creationTime = master.modificationTime - datetime.timedelta(hours=1)
            spec.frozenTime = now - datetime.timedelta(hours=hours)
    chunk = InputChunk(spec, master, secondaries)
    chunk.isMerging = bool(jobs.get("isMerge"))
    chunk.setUseScout(bool(jobs.get("isScout")))
    return chunk, files_by_dataset


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def cases_run(run, logger_name: str) -> None:
    """The main loop of a driver of one real component: the cases of the JSON file named first on the command line,
    each run with the lines `logger_name` writes meanwhile, the results (or the error the real code raised, a result
    too) as a JSON list on stdout."""
    with open(sys.argv[1]) as handle:
        cases = json.load(handle)
    lines = Lines()
    logger = logging.getLogger(logger_name)
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    results = []
    for case in cases:
        lines.lines.clear()
        try:
            results.append(run(case, lines))
        except Exception as error:  # the real code raising is a result too
            results.append({"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-2000:]})
    json.dump(results, sys.stdout)


def capture(*modules) -> Lines:
    lines = Lines()
    for module in modules:
        log = module.logger
        for handler in list(log.handlers):
            log.removeHandler(handler)
        log.addHandler(lines)
        log.setLevel(logging.DEBUG)
        log.propagate = False
    return lines


SKIP = re.compile(r"skip site[= ](\S+?)[ ,:].*criteria=(-\S+)")


def skipped_codes(lines: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in lines:
        match = SKIP.search(line)
        if match:
            codes = found.setdefault(match.group(1).split("/")[0], [])
            if match.group(2) not in codes:
                codes.append(match.group(2))
    return found


def run_job(scenario: dict, lines: Lines) -> dict:
    spec = task_spec(scenario)
    chunk, files = input_chunk(scenario, spec)
    broker = AtlasProdJobBroker(Rucio(scenario, files), TaskBuffer(scenario))
    started = time.perf_counter()
    status, _ = broker.doBrokerage(spec, "WORLD", chunk, {})
    seconds = time.perf_counter() - started
    pseudo = {name: candidate.weight for name, candidate in chunk.siteCandidates.items()}
    unified: dict[str, float] = {}
    for name, weight in pseudo.items():
        queue = name.split("/")[0]
        unified[queue] = max(unified.get(queue, weight), weight)
    skipped = {k: v for k, v in skipped_codes(lines.lines).items() if k not in unified}
    # the queues kept for the task's jumbo jobs (addSiteCandidateForJumbo) leave the job set's candidates: ours
    # say so with the reason jumbo
    for name in chunk.siteCandidatesJumbo:
        skipped.setdefault(name.split("/")[0], []).append("jumbo")
    return {
        "status": "assigned" if status == broker.SC_SUCCEEDED else "failed",
        "candidates": unified,
        "pseudo": pseudo,
        "skipped": skipped,
        "seconds": seconds,
        **({"log": list(lines.lines)} if os.environ.get("PEER_LOG") else {}),
    }


# --- task brokerage (AtlasProdTaskBroker) -------------------------------------------------------------------------

PERMISSIVE_TAGS = {
    "cmtconfigs": ["x86_64-el9-gcc13-opt"],
    "containers": ["any"],
    "cvmfs": ["atlas"],
    "architectures": [{"type": "cpu", "arch": ["x86_64"]}],
    "tags": [],
}


def with_site_queues(scenario: dict) -> dict:
    """The real broker knows nuclei only through their queues. A task scenario without queues gets for each site
    one permissive production queue `<SITE>_TB` reading all its endpoints and writing to its disk ones (the output
    type first), busy and with pilots, so that the real job check passes as ours does without queues (it checks
    the input's completeness only). A scenario with queues is taken as it is: a nucleus without a production
    queue does not exist for the real code, and our job check skips it."""
    if scenario.get("queues"):
        return scenario
    scenario = copy.deepcopy(scenario)
    queues, stats, tags = scenario.setdefault("queues", {}), scenario.setdefault("queue_stats", {}), {}
    scenario["sw_tags"] = tags = dict(scenario.get("sw_tags") or {})
    have = {record.get("atlas_site") for record in queues.values()}
    output_type = scenario["task"].get("outputEndpointType") or "DATADISK"
    # a task of coreCount 0 may need multi-core queues (AtlasProdJobBroker.py 289-295): an 8-core stand-in
    cores = (
        max(int(scenario["task"].get("coreCount", 1) if scenario["task"].get("coreCount", 1) is not None else 1), 0)
        or 8
    )
    endpoints = scenario.get("ddm_endpoints") or {}
    for site, record in (scenario.get("sites") or {}).items():
        if record.get("role") not in ("nucleus", "satellite") or site in have:
            continue
        names = sorted(n for n, e in endpoints.items() if e.get("site") == site)
        disk = sorted((n for n in names if not endpoints[n].get("is_tape")), key=lambda n: not n.endswith(output_type))
        tape = [n for n in names if n not in disk]
        queue = f"{site}_TB"
        # unified, to take any resource type; but an event-service task skips a unified queue's 1-core pseudo-queues
        # (-es_ucore, AtlasProdJobBroker.py 1280-1288), so for one the stand-in is a plain production queue
        unified = not scenario["task"].get("eventService")
        queues[queue] = {
            "atlas_site": site,
            "status": "online",
            "type": "production",
            "cloud": "WORLD",
            "corecount": cores,
            "capability": "ucore" if unified else "",
            "maxrss": 10**7,
            "minrss": 0,
            "maxwdir": 10**8,
            "maxtime": 10**7,
            "mintime": 0,
            "releases": ["AUTO"],
            "wnconnectivity": "full#IPv4",
            "corepower": 10.0,
            "jobseed": "all",
            "pledgedcpu": 0,
            "direct_access_lan": False,
            "transferringlimit": 10**6,
            "astorages": {"read_lan": disk + tape, "write_lan": disk or names},
        }
        stats.setdefault(queue, {"running": 100, "pilotsLast3h": 100, "hoursSinceLastStart": 0})
        tags.setdefault(queue, copy.deepcopy(PERMISSIVE_TAGS))
    return scenario


class TaskTaskBuffer(TaskBuffer):
    """What the task broker asks the database for, on top of what the job check asks."""

    def __init__(self, scenario: dict):
        super().__init__(scenario)
        self.remaining_work = {n: (s.get("rw") or 0) for n, s in (scenario.get("nucleus_stats") or {}).items()}
        self.updates: list = []
        self.assigned: list = []

    def calculateWorldRWwithPrio_JEDI(self, vo, label, work_queue, priority):
        return dict(self.remaining_work)

    def calculateTaskWorldRW_JEDI(self, task_id):
        return 0

    def getTaskParamsWithID_JEDI(self, task_id):
        return json.dumps(self.scenario["task"])

    def getBackloggedNuclei(self):
        # the real SQL: SUM(files queued on the links into the nucleus) > NQUEUED_NUC_CAP
        cap = self.config.get("NQUEUED_NUC_CAP", 2000)
        totals: dict[str, float] = {}
        for link in self.scenario.get("network") or []:
            if link.get("queued") is not None:
                totals[link["dst"]] = totals.get(link["dst"], 0) + link["queued"]
        for name, stats in (self.scenario.get("nucleus_stats") or {}).items():
            if stats.get("outputQueued") is not None:
                totals[name] = stats["outputQueued"]
        return [name for name, total in totals.items() if total > cap]

    def getDatasetsWithJediTaskID_JEDI(self, task_id, types):
        token = self.scenario["task"].get("outputEndpointType") or "DATADISK"
        found = []
        for number, kind in enumerate(("output", "log")):
            spec = JediDatasetSpec()
            spec.jediTaskID, spec.datasetID, spec.type = task_id, 100 + number, kind
            spec.datasetName, spec.storageToken = f"out.{kind}.{task_id}", token
            found.append(spec)
        return True, found

    def getTaskWithID_JEDI(self, task_id, lock):
        # the parent of a full-chain task is a full-chain task at parentNucleus (whose bare mode the real code reads
        # from that nucleus's queues: panda_fields.refusal checks it agrees with parentBareNucleus)
        task = self.scenario["task"]
        parent = JediTaskSpec()
        parent.jediTaskID, parent.nucleus, parent.splitRule = task_id, task.get("parentNucleus"), None
        if task.get("fullChain"):
            parent.setSplitRule(
                "fullChain", {v: k for k, v in task_split_rules.enum_fullChain.items()}[task["fullChain"]]
            )
        return True, parent

    def updateTask_JEDI(self, spec, criteria, **kwargs):
        self.updates.append(spec.errorDialog)
        return True

    def setCloudToTasks_JEDI(self, assignments):
        self.assigned.append(assignments)
        return True


class TaskRucio(Rucio):
    def getInterface(self, vo):
        return self

    def listReplicasPerDataset(self, name, deepScan=False):
        dataset = self.datasets[name]
        total, total_bytes = int(dataset.get("nFiles", 0)), round(dataset.get("sizeGB", 0) * 1024**3)
        replicas = {}
        for endpoint, replica in (dataset.get("replicas") or {}).items():
            found = int(replica.get("nFiles", total))
            size = replica.get("sizeGB", dataset.get("sizeGB", 0) * found / max(total, 1))
            replicas[endpoint] = [
                {"total": total, "found": found, "tsize": total_bytes, "asize": round(size * 1024**3)}
            ]
        return {name: replicas}


USE_NUCLEUS = re.compile(r"use nucleus=(\S+) weight=(\S+)")
SKIP_NUCLEUS = re.compile(r"skip nucleus=(\S+) .*criteria=(-\S+)")
SET_NUCLEUS = re.compile(r"set nucleus=(\S+)")


def run_task(scenario: dict, lines: Lines) -> dict:
    scenario = with_site_queues(scenario)
    buffer = TaskTaskBuffer(scenario)
    spec = task_spec(scenario)
    # a parent only when the scenario names its nucleus (the real code asks for it only then: parent_tid differs)
    spec.parent_tid = spec.jediTaskID - 1 if scenario["task"].get("parentNucleus") else spec.jediTaskID
    spec.frozenTime = None
    chunk, files = input_chunk(scenario, spec, sized_by_jobs=True)
    broker = AtlasProdTaskBroker(buffer, TaskRucio(scenario, files))
    started = time.perf_counter()
    broker.doBrokerage(
        [(spec.jediTaskID, [(spec, "WORLD", chunk)])],
        spec.vo,
        spec.prodSourceLabel,
        WorkQueue(spec.gshare),
        spec.resource_type,
    )
    seconds = time.perf_counter() - started
    weights: dict[str, float] = {}
    skipped: dict[str, list[str]] = {}
    errors = []
    for line in lines.lines:
        if match := USE_NUCLEUS.search(line):
            weights[match.group(1)] = float(match.group(2))
        elif match := SKIP_NUCLEUS.search(line):
            codes = skipped.setdefault(match.group(1), [])
            if match.group(2) not in codes:
                codes.append(match.group(2))
        if "failed with" in line or "Traceback" in line:
            errors.append(line[:1500])
    if errors:
        return {"error": errors[0], "trace": errors[0]}
    return {
        "status": "assigned" if buffer.assigned else "failed",
        "candidates": weights,
        # job brokerage kept no queue at all: the real code then stops without a skip line per nucleus
        "job_check_failed": any("no sites can run jobs" in line for line in lines.lines),
        "skipped": {name: codes for name, codes in skipped.items() if name not in weights},
        "seconds": seconds,
        **({"log": list(lines.lines)} if os.environ.get("PEER_LOG") else {}),
    }


# --- analysis job brokerage (AtlasAnalJobBroker) ------------------------------------------------------------------

TASK_CLASS = {"S": 1, "A": 1, "B": 0, "C": -1}
SITE_CLASS = {"hi": 1, "mid": 0, "lo": -1}


class AnalysisTaskBuffer(TaskBuffer):
    """The user's figures (`user_stats`) behind the queries AtlasAnalJobBroker and AtlasBrokerUtils send."""

    def __init__(self, scenario: dict):
        super().__init__(scenario)
        self.user_stats = scenario.get("user_stats") or {}

    def countJobsPerTarget_JEDI(self, target, is_user):
        counts = (self.user_stats.get("user") if is_user else self.user_stats.get("group")) or {}
        return {
            "nRunJobs": counts.get("running", 0) or 0,
            "nQueuedJobs": counts.get("queued", 0) or 0,
            "nRunCores": counts.get("runningCores", 0) or 0,
            "nQueuedCores": counts.get("queuedCores", 0) or 0,
        }

    def querySQL(self, sql, variables):
        metric = variables.get(":metric")
        task = self.scenario["task"]
        if metric == "gshare_preference":
            usage = (self.user_stats.get("gshareUsage") or {}).get(variables[":gshare"])
            return [(json.dumps({"usage_perc": usage}),)] if usage is not None else []
        if metric == "analy_task_eval":
            klass = task.get("taskClass")
            return [(json.dumps({"class": TASK_CLASS[klass]}),)] if klass in TASK_CLASS else []
        if metric == "analy_user_eval":
            slots = (self.user_stats.get("user") or {}).get("runningSlotsHiSites")
            if slots is None:
                return []
            threshold = self.config.get("USER_USAGE_THRESHOLD_A", 1000)
            return [(json.dumps({"rem_slots_A": max(threshold - slots, 0)}),)]  # metric_collector.py
        if metric == "analy_site_eval":
            return [
                (name, SITE_CLASS[record["siteClass"]])
                for name, record in self.scenario.get("queues", {}).items()
                if record.get("siteClass") in SITE_CLASS
            ]
        return []

    def getFailureCountsForTask_JEDI(self, task_id, hours):
        counts = {}
        for queue, values in (self.user_stats.get("queues") or {}).items():
            found = {
                theirs: values[ours]
                for ours, theirs in (("taskFinished", "finished"), ("taskFailed", "failed"), ("taskClosed", "closed"))
                if values.get(ours) is not None
            }
            if found:
                counts[queue] = found
        return counts

    def getSitesUsedByTask_JEDI(self, task_id):
        return True, []

    def getCache_JEDI(self, **kwargs):
        return None

    def lockProcess_JEDI(self, **kwargs):
        return True

    def unlockProcess_JEDI(self, **kwargs):
        return True

    def updateCache_JEDI(self, **kwargs):
        return True

    def getSiteToRunRateStats(self, vo, exclude_rwq, starttime_min, starttime_max):
        rates = {
            queue: stats["toRunningRate"]
            for queue, stats in self.scenario.get("queue_stats", {}).items()
            if stats.get("toRunningRate") is not None
        }
        return True, rates

    def getUsersJobsStats_JEDI(self, prod_source_label=None):
        user = self.scenario["task"].get("userName")
        per_queue = self.user_stats.get("queues") or {}
        found = {}
        for queue, stats in self.scenario.get("queue_stats", {}).items():
            users = {}
            mine = per_queue.get(queue) or {}
            # the user is in the real statistics of a queue where they have jobs queued or running (as live)
            if (mine.get("userQueued") or 0) + (mine.get("userRunning") or 0) > 0:
                users[user] = {"nQueue": mine.get("userQueued", 0) or 0, "nRunning": mine.get("userRunning", 0) or 0}
            for number in range(int(stats.get("nUsers") or 1) - len(users)):
                users[f"other{number}"] = {"nQueue": 0, "nRunning": 0}
            queued = sum(stats.get(key, 0) or 0 for key in ("defined", "activated", "assigned", "starting"))
            users["_total"] = {"nQueue": queued, "nRunning": stats.get("running", 0) or 0}
            found[queue] = {self.gshare: users}
        return found

    def get_origin_datasets(self, *args):
        return None


class AnalysisRucio(Rucio):
    def __init__(self, scenario: dict, files: dict[str, list]):
        super().__init__(scenario, files)
        self.user_stats = scenario.get("user_stats") or {}

    def check_global_quota(self, user):
        if (self.user_stats.get("user") or {}).get("diskQuotaExceeded"):
            return False, False, "user's global disk quota exceeded"
        return True, False, ""

    def get_endpoints_over_local_quota(self, user):
        return True, set()

    def listDatasetReplicas(self, name, **kwargs):
        dataset = self.datasets[name]
        total = dataset.get("nFiles")
        return {
            endpoint: [{"found": replica.get("nFiles", total), "total": total, "vp": False}]
            for endpoint, replica in (dataset.get("replicas") or {}).items()
        }

    def getAvailableFiles(self, dataset_spec, site_endpoints, site_mapper, **kwargs):
        if dataset_spec.datasetName not in self.datasets:
            found = {site: {"localdisk": [], "localtape": [], "cache": [], "remote": []} for site in site_endpoints}
        else:
            found = super().getAvailableFiles(
                dataset_spec, site_endpoints, site_mapper, complete_only=kwargs.get("complete_only", False)
            )
        for record in found.values():  # AtlasDDMClient.getAvailableFiles also gathers every kind under "all"
            record["all"] = {f for kind in ("localdisk", "localtape", "cache", "remote") for f in record[kind]}
        return found


def analysis_task_spec(scenario: dict) -> tuple[JediTaskSpec, dict]:
    task = scenario["task"]
    spec = task_spec(scenario)
    spec.prodSourceLabel = task.get("prodSourceLabel") or "user"
    spec.gshare = task.get("gshare", "User Analysis")
    spec.userName = spec.origUserName = task.get("userName", "jdoe")
    spec.workingGroup = task.get("workingGroup")
    spec.site = task.get("site")
    spec.nucleus = None
    # JEDI leaves an analysis task without a cloud parameter at None (TaskRefinerBase.py 191-198, 1.0.4): with
    # "WORLD" the real broker would skip every queue whose CRIC cloud is not WORLD (-cloudmismatch, 1423-1425)
    spec.cloud = task.get("cloud")
    # transHome as given (analysis tasks carry AnalysisTransforms-<project>_<release>, or AnalysisTransforms alone)
    hours = (scenario.get("user_stats") or {}).get("hoursSinceLastSuccess")
    if hours is not None:
        spec.frozenTime = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(hours=hours)
    parameters = {}
    if task.get("includedSite") or task.get("excludedSite"):
        # the policies 1.0.4 knows (task_split_rules.enum_limitedSites; AtlasAnalTaskRefiner 243-248)
        both = bool(task.get("includedSite")) and bool(task.get("excludedSite"))
        spec.setLimitedSites(
            "with_allow_and_denylist" if both else "with_allowlist" if task.get("includedSite") else "with_denylist"
        )
        for key in ("includedSite", "excludedSite"):
            if task.get(key):
                value = task[key]
                parameters[key] = value if isinstance(value, list) else [v for v in value.split(",") if v]
    if task.get("avoidVP"):
        spec.setSplitRule("avoidVP", "1")
    return spec, parameters


PROBLEMATIC = re.compile(r"getting rid of problematic site (\S+)")


def run_anal(scenario: dict, lines: Lines) -> dict:
    scenario = copy.deepcopy(scenario)
    scenario["task"].setdefault("gshare", "User Analysis")
    buffer = AnalysisTaskBuffer(scenario)
    spec, parameters = analysis_task_spec(scenario)
    chunk, files = input_chunk(scenario, spec)
    AtlasBrokerUtils.CACHE_SiteToRunRateStats.clear()
    AtlasBrokerUtils.CACHE_UsersJobsStats.clear()
    broker = AtlasAnalJobBroker(AnalysisRucio(scenario, files), buffer)
    broker.set_task_common_dict({})
    # a VP queue reads a *_VP_DISK endpoint (SiteSpec.use_vp); the pseudo-queues of a unified one share it
    vp_queues = {queue for queue, record in scenario.get("queues", {}).items() if record.get("use_vp")}
    for name, site_spec in broker.siteMapper.siteSpecList.items():
        if name in vp_queues or site_spec.get_unified_name() in vp_queues:
            site_spec.use_vp = lambda *args, **kwargs: True
    started = time.perf_counter()
    status, _ = broker.doBrokerage(spec, "WORLD", chunk, parameters)
    seconds = time.perf_counter() - started
    weights: dict[str, float] = {}
    for name, candidate in chunk.siteCandidates.items():
        queue = name.split("/")[0]
        weights[queue] = max(weights.get(queue, candidate.weight), candidate.weight)
    skipped = skipped_codes(lines.lines)
    for line in lines.lines:
        if match := PROBLEMATIC.search(line):
            skipped.setdefault(match.group(1).split("/")[0], []).append("-problematic")
    return {
        "status": "assigned" if status == broker.SC_SUCCEEDED else "failed",
        "candidates": weights,
        "skipped": {name: codes for name, codes in skipped.items() if name not in weights},
        "seconds": seconds,
        **({"log": list(lines.lines)} if os.environ.get("PEER_LOG") else {}),
    }


RUNNERS = {
    "job": (run_job, (job_broker_module,)),
    "task": (run_task, (job_broker_module, task_broker_module)),
    "anal": (run_anal, (anal_broker_module,)),
}


def main() -> None:
    kind, path = sys.argv[1], sys.argv[2]
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    runner, modules = RUNNERS[kind]
    lines = capture(*modules)
    with open(path) as handle:
        scenarios = json.load(handle)
    results = []
    for scenario in scenarios:
        lines.lines.clear()
        refused = refusal(scenario)
        if refused:  # the real code cannot be handed it: no comparison, and the reason says which field
            results.append({"refused": refused})
            continue
        try:
            result = runner(scenario, lines)
            if repeat > 1:
                runs = [result["seconds"]]
                for _ in range(repeat - 1):
                    lines.lines.clear()
                    runs.append(runner(scenario, lines)["seconds"])
                result.update(seconds=min(runs), seconds_runs=runs)
            results.append(result)
        except Exception as error:  # the real code raising is a result too (named in the comparison)
            results.append({"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-2000:]})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
