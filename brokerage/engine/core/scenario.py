"""The scenario: everything a plugin reads, parsed from plain JSON data into typed, read-only objects.

The names are those of ../shared/docs/SCENARIO.md; docs/scenario.md and docs/scenario.schema.json describe
every field. Parsing stops at the first problem with a ScenarioError naming its JSON path and what was expected.
Queue records, software tags, GPU summaries and queue/user statistics stay plain dictionaries (checked for the
types of the keys the brokers read): real CRIC dumps carry hundreds of keys and must paste in unchanged.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from brokerage.engine.core.reading import Reader, ScenarioError, key_path
from brokerage.gdpconfig import ConfigView, GdpConfigError
from brokerage.gdpconfig.profiles import PROFILE_NAMES


@dataclass(frozen=True)
class TaskSpec:
    """The JEDI task being brokered (or whose jobs are), with the task parameters the brokers read."""

    jediTaskID: int = 0
    taskPriority: int = 0
    currentPriority: int = 0
    processingType: str = ""
    prodSourceLabel: str = "managed"
    gshare: str = ""
    coreCount: int = 1
    ramCount: float | None = None
    ramUnit: str = ""
    baseRamCount: float = 0.0
    outDiskCount: float | None = None
    outDiskUnit: str = ""
    workDiskCount: float | None = None
    ioIntensity: float | None = None
    diskIO: float | None = None
    cpuTime: float | None = None
    cpuEfficiency: float | None = None
    baseWalltime: float | None = None
    architecture: str = ""
    transUses: str = ""
    transHome: str = ""
    container_name: str = ""
    nucleus: str = ""
    userName: str = ""
    workingGroup: str = ""
    vo: str = "atlas"
    t1Weight: float | None = None
    fullChain: str = ""
    ipConnectivity: str = ""
    taskBrokerOnMaster: bool = False
    inputPreStaging: bool = False
    onlyTagsForFC: bool = False
    maxCoreCount: int | None = None
    includedSite: tuple[str, ...] = ()
    excludedSite: tuple[str, ...] = ()
    avoidVP: bool = False
    nEventsPerJob: int | None = None
    nFilesPerJob: int | None = None
    parentNucleus: str = ""
    parentBareNucleus: str = ""
    outputEndpointType: str = "DATADISK"
    allowInputLAN: str = ""
    eventService: bool = False
    nEsConsumers: int | None = None
    maxAttemptEsJob: int | None = None
    nJumboJobs: int | None = None
    workDiskUnit: str = "MB"
    taskClass: str = ""
    site: str = ""


FULL_CHAIN_VALUES = ("", "only", "require", "capable")
BARE_NUCLEUS_VALUES = ("", "only", "allow")


def _frozen(cls: type, values: dict[str, Any]) -> Any:
    """The frozen dataclass `cls` with `values`, which name every one of its fields: what its __init__ makes,
    without setting the fields one by one through object.__setattr__ (a third of the time of reading a task)."""
    made = object.__new__(cls)
    made.__dict__.update(values)
    return made


def _parse_task(data: object) -> TaskSpec:
    r = Reader(data, "$.task")
    return _frozen(
        TaskSpec,
        dict(
            jediTaskID=r.integer("jediTaskID", 0),
            taskPriority=r.integer("taskPriority", 0),
            currentPriority=r.integer("currentPriority", r.data.get("taskPriority", 0)),
            processingType=r.text("processingType"),
            prodSourceLabel=r.text("prodSourceLabel", "managed"),
            gshare=r.text("gshare"),
            coreCount=r.integer("coreCount", 1, minimum=0),
            ramCount=r.number("ramCount", minimum=0),
            ramUnit=r.text("ramUnit"),
            baseRamCount=r.number("baseRamCount", 0, minimum=0) or 0.0,
            outDiskCount=r.number("outDiskCount", minimum=0),
            outDiskUnit=r.text("outDiskUnit"),
            workDiskCount=r.number("workDiskCount", minimum=0),
            # JediTaskSpec.getWorkDiskSize reads GB, MB and kB; any other unit is bytes there (and here)
            workDiskUnit=r.text("workDiskUnit", "MB") or "MB",
            ioIntensity=r.number("ioIntensity", minimum=0),
            diskIO=r.number("diskIO", minimum=0),
            cpuTime=r.number("cpuTime", minimum=0),
            cpuEfficiency=r.number("cpuEfficiency", minimum=0),
            baseWalltime=r.number("baseWalltime", minimum=0),
            architecture=r.text("architecture"),
            transUses=r.text("transUses"),
            transHome=r.text("transHome"),
            container_name=r.text("container_name"),
            nucleus=r.text("nucleus"),
            userName=r.text("userName"),
            workingGroup=r.text("workingGroup"),
            vo=r.text("vo", "atlas"),
            t1Weight=r.number("t1Weight"),
            fullChain=r.text("fullChain", choices=FULL_CHAIN_VALUES),
            ipConnectivity=r.text("ipConnectivity"),
            taskBrokerOnMaster=r.boolean("taskBrokerOnMaster"),
            inputPreStaging=r.boolean("inputPreStaging"),
            onlyTagsForFC=r.boolean("onlyTagsForFC"),
            maxCoreCount=r.integer("maxCoreCount", minimum=0),
            includedSite=r.names("includedSite"),
            excludedSite=r.names("excludedSite"),
            avoidVP=r.boolean("avoidVP"),
            nEventsPerJob=r.integer("nEventsPerJob", minimum=0),
            nFilesPerJob=r.integer("nFilesPerJob", minimum=0),
            parentNucleus=r.text("parentNucleus"),
            parentBareNucleus=r.text("parentBareNucleus", choices=BARE_NUCLEUS_VALUES),
            outputEndpointType=r.text("outputEndpointType", "DATADISK") or "DATADISK",
            allowInputLAN=r.text("allowInputLAN", choices=("", "use", "only")),
            eventService=r.boolean("eventService"),
            nEsConsumers=r.integer("nEsConsumers", minimum=1),
            maxAttemptEsJob=r.integer("maxAttemptEsJob", minimum=0),
            nJumboJobs=r.integer("nJumboJobs", minimum=0),
            taskClass=r.text("taskClass", choices=("", "S", "A", "B", "C")),
            site=r.text("site"),
        ),
    )


@dataclass(frozen=True)
class JobSet:
    """The set of jobs being brokered together (job brokers)."""

    nEvents: int | None = None
    inputSizeMB: float = 0.0
    nFiles: int = 0
    isScout: bool = False
    isMerge: bool = False
    isPreMerged: bool = False
    preassigned: tuple[str, ...] = ()
    preassignedSkippedHours: float = 0.0
    nJobs: int = 1


def _parse_jobs(data: object) -> JobSet:
    r = Reader(data, "$.jobs")
    return _frozen(
        JobSet,
        dict(
            nEvents=r.integer("nEvents", minimum=0),
            inputSizeMB=r.number("inputSizeMB", 0, minimum=0) or 0.0,
            nFiles=r.integer("nFiles", 0, minimum=0) or 0,
            isScout=r.boolean("isScout"),
            isMerge=r.boolean("isMerge"),
            isPreMerged=r.boolean("isPreMerged"),
            preassigned=r.names("preassigned"),
            preassignedSkippedHours=r.number("preassignedSkippedHours", 0, minimum=0) or 0.0,
            nJobs=r.integer("nJobs", 1, minimum=0),
        ),
    )


@dataclass(frozen=True)
class Replica:
    nFiles: int
    sizeGB: float


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    master: bool
    nFiles: int
    sizeGB: float
    replicas: Mapping[str, Replica]


def _parse_datasets(items: list) -> tuple[DatasetInfo, ...]:
    datasets = []
    for index, item in enumerate(items):
        r = Reader(item, f"$.datasets[{index}]")
        replicas = {}
        for endpoint, replica in r.obj("replicas").items():
            rr = Reader(replica, f"$.datasets[{index}].replicas", endpoint)
            replicas[endpoint] = Replica(
                nFiles=rr.integer("nFiles", 0, minimum=0) or 0, sizeGB=rr.number("sizeGB", 0, minimum=0) or 0.0
            )
        name = r.text("name")
        if not name:
            raise ScenarioError(r.at("name"), "a dataset name", r.data.get("name"))
        datasets.append(
            DatasetInfo(
                name=name,
                master=r.boolean("master", index == 0),
                nFiles=r.integer("nFiles", 0, minimum=0) or 0,
                sizeGB=r.number("sizeGB", 0, minimum=0) or 0.0,
                replicas=replicas,
            )
        )
    return tuple(datasets)


@dataclass(frozen=True)
class SiteInfo:
    role: str
    state: str
    bareNucleus: str


SITE_ROLES = ("nucleus", "satellite")


def _parse_sites(data: dict) -> dict[str, SiteInfo]:
    sites = {}
    for name, item in data.items():
        r = Reader(item, "$.sites", name)
        sites[name] = _frozen(
            SiteInfo,
            dict(
                role=r.text("role", "satellite", choices=SITE_ROLES),
                state=r.text("state", "ACTIVE"),
                bareNucleus=r.text("bareNucleus", choices=BARE_NUCLEUS_VALUES),
            ),
        )
    return sites


ACTIVITIES = ("read_lan", "write_lan", "read_wan", "write_wan")


@dataclass(frozen=True)
class EndpointInfo:
    """A DDM endpoint; sizes in GB."""

    site: str
    type: str
    space_total: float
    space_free: float
    space_used: float
    space_expired: float
    is_tape: bool
    blacklisted: bool
    detailed_status: Mapping[str, str]

    def activity(self, name: str) -> str:
        return self.detailed_status.get(name, "ON")


_ENDPOINT_NUMBERS = ("space_total", "space_free", "space_used", "space_expired")
_ENDPOINT_STATUSES = frozenset(("ON", "OFF", "TEST"))


def _endpoint_plain(name: str, item: object) -> EndpointInfo | None:
    """The common case at once: every key the brokers read has its JSON type (sizes finite and ≥ 0, activities
    ON, OFF or TEST in any case). None sends the endpoint through the reader below, which names what is wrong."""
    if type(item) is not dict:
        return None
    get = item.get
    site, kind, tape, blacklisted = get("site"), get("type"), get("is_tape"), get("blacklisted")
    if not (
        (site is None or type(site) is str)
        and (kind is None or type(kind) is str)
        and (tape is None or tape is True or tape is False)
        and (blacklisted is None or blacklisted is True or blacklisted is False)
    ):
        return None
    sizes = []
    for key in _ENDPOINT_NUMBERS:
        value = get(key)
        if value is None:
            sizes.append(0.0)
            continue
        number_type = type(value)
        if not ((number_type is int or (number_type is float and math.isfinite(value))) and value >= 0):
            return None
        sizes.append(float(value))
    status = {}
    activities = get("detailed_status")
    if activities is not None:
        if type(activities) is not dict:
            return None
        for activity, value in activities.items():
            if type(value) is not str or value.upper() not in _ENDPOINT_STATUSES:
                return None
            status[activity] = value.upper()
    kind = kind or (name.rsplit("_", 1)[-1] if "_" in name else "")
    return _frozen(
        EndpointInfo,
        {
            "site": site or "",
            "type": kind,
            "space_total": sizes[0],
            "space_free": sizes[1],
            "space_used": sizes[2],
            "space_expired": sizes[3],
            "is_tape": kind.endswith("TAPE") if tape is None else tape,
            "blacklisted": bool(blacklisted),
            "detailed_status": status,
        },
    )


def _parse_endpoints(data: dict) -> dict[str, EndpointInfo]:
    return {name: _endpoint_plain(name, item) or _read_endpoint(name, item) for name, item in data.items()}


def _read_endpoint(name: str, item: object) -> EndpointInfo:
    r = Reader(item, "$.ddm_endpoints", name)
    status = {}
    for activity, value in r.obj("detailed_status").items():
        if not isinstance(value, str) or value.upper() not in _ENDPOINT_STATUSES:
            raise ScenarioError(key_path(r.at("detailed_status"), activity), "'ON', 'OFF' or 'TEST'", value)
        status[activity] = value.upper()
    kind = r.text("type") or (name.rsplit("_", 1)[-1] if "_" in name else "")
    return _frozen(
        EndpointInfo,
        dict(
            site=r.text("site"),
            type=kind,
            space_total=r.number("space_total", 0, minimum=0) or 0.0,
            space_free=r.number("space_free", 0, minimum=0) or 0.0,
            space_used=r.number("space_used", 0, minimum=0) or 0.0,
            space_expired=r.number("space_expired", 0, minimum=0) or 0.0,
            is_tape=r.boolean("is_tape", kind.endswith("TAPE")),
            blacklisted=r.boolean("blacklisted"),
            detailed_status=status,
        ),
    )


@dataclass(frozen=True)
class NetworkLink:
    src: str
    dst: str
    closeness: float | None
    mbps_1h: float | None
    mbps_1d: float | None
    mbps_1w: float | None
    queued: int


def _parse_network(items: list) -> tuple[NetworkLink, ...]:
    links = []
    for index, item in enumerate(items):
        r = Reader(item, f"$.network[{index}]")
        closeness = r.number("closeness")
        if closeness is not None and not -1 <= closeness <= 11:
            raise ScenarioError(r.at("closeness"), "a closeness from -1 (blocked) to 11", closeness)
        links.append(
            _frozen(
                NetworkLink,
                dict(
                    src=r.text("src"),
                    dst=r.text("dst"),
                    closeness=closeness,
                    mbps_1h=r.number("mbps_1h", minimum=0),
                    mbps_1d=r.number("mbps_1d", minimum=0),
                    mbps_1w=r.number("mbps_1w", minimum=0),
                    queued=r.integer("queued", 0, minimum=0) or 0,
                ),
            )
        )
    return tuple(links)


@dataclass(frozen=True)
class NucleusStats:
    rw: float
    outputQueued: int | None


def _parse_nucleus_stats(data: dict) -> dict[str, NucleusStats]:
    stats = {}
    for name, item in data.items():
        r = Reader(item, "$.nucleus_stats", name)
        stats[name] = NucleusStats(
            rw=r.number("rw", 0, minimum=0) or 0.0, outputQueued=r.integer("outputQueued", minimum=0)
        )
    return stats


# CRIC keys the brokers read, with their JSON types: a real dump's value of another type is an error.
QUEUE_NUMBER_KEYS = (
    "corecount",
    "maxrss",
    "minrss",
    "maxwdir",
    "maxinputsize",
    "maxtime",
    "mintime",
    "pledgedcpu",
    "transferringlimit",
    "maxdiskio",
    "corepower",
)
QUEUE_TEXT_KEYS = (
    "status",
    "type",
    "capability",
    "fairsharepolicy",
    "catchall",
    "wnconnectivity",
    "jobseed",
    "workflow",
    "atlas_site",
    "cloud",
    "siteClass",
)
QUEUE_STATUSES = ("online", "offline", "test", "brokeroff", "paused", "standby")


_QUEUE_NUMBERS = frozenset(QUEUE_NUMBER_KEYS)
_QUEUE_TEXTS = frozenset(QUEUE_TEXT_KEYS)
_QUEUE_BOOLEANS = frozenset(("direct_access_lan", "direct_access_wan", "use_vp"))
# CRIC's `params`: extra queue parameters, an object (SiteSpec.extra_queue_params: catchall keys, max_io_intensity)
QUEUE_OBJECT_KEYS = ("params",)


def _queue_record_plain(record: dict) -> bool:
    """The common case at once: every key the brokers read has its JSON type (a scenario's queues are checked on
    every parse). False sends the record through the full check, which names what is wrong. The types are judged
    once per shape (the record's keys and the types of their values: a grid's records share a few shapes); the
    values are still read for what a type does not settle (a float's finiteness, the statuses, the lists)."""
    shape = (tuple(record), tuple(map(type, record.values())))
    floats = _SHAPES.get(shape)
    if floats is None:
        if len(_SHAPES) >= 4096:  # bounded: shapes are few, but a process may parse scenarios of any origin
            _SHAPES.clear()
        floats = _SHAPES[shape] = _shape_floats(shape)
    if floats is False:
        return False
    for key in floats:
        if not math.isfinite(record[key]):
            return False
    releases = record.get("releases")
    if releases is not None and not _text_list(releases):
        return False
    storages = record.get("astorages")
    if storages is not None and not (type(storages) is dict and all(map(_text_list, storages.values()))):
        return False
    status, site_class = record.get("status"), record.get("siteClass")
    return (status is None or status in QUEUE_STATUSES) and (site_class in (None, "", "hi", "mid", "lo"))


def _text_list(value: object) -> bool:
    """A list of text only (str.join refuses anything else, at C speed)."""
    if type(value) is not list:
        return False
    try:
        "".join(value)
    except TypeError:
        return False
    return True


# a queue record's shape → False when a key has the wrong type, else the number keys holding floats
_SHAPES: dict[tuple, tuple[str, ...] | bool] = {}


def _shape_floats(shape: tuple[tuple[str, ...], tuple[type, ...]]) -> tuple[str, ...] | bool:
    floats = []
    for key, kind in zip(*shape, strict=True):
        if kind is type(None):
            continue
        if key in _QUEUE_NUMBERS:
            if kind is float:
                floats.append(key)
            elif kind is not int:
                return False  # bool included: its type is not int
        elif key in _QUEUE_TEXTS:
            if kind is not str:
                return False
        elif (key in _QUEUE_BOOLEANS and kind is not bool) or (key == "params" and kind is not dict):
            return False
    return tuple(floats)


def check_queue_record(name: str, record: object, *, path: str = "$.queues") -> None:
    """Checks the types of the CRIC keys the brokers read in one queue record (ScenarioError with its path)."""
    if isinstance(record, dict) and _queue_record_plain(record):
        return
    r = Reader(record, path, name) if path else Reader(record, "$")
    for key in QUEUE_NUMBER_KEYS:
        r.number(key)
    for key in QUEUE_TEXT_KEYS:
        r.text(key)
    if "status" in r.data:
        r.text("status", choices=QUEUE_STATUSES)
    r.text("siteClass", choices=("", "hi", "mid", "lo"))
    releases = r.data.get("releases")
    if releases is not None and not (isinstance(releases, list) and all(isinstance(x, str) for x in releases)):
        raise ScenarioError(r.at("releases"), 'a list of releases (["ANY"], ["AUTO"] or names)', releases)
    for key in ("direct_access_lan", "direct_access_wan", "use_vp"):
        r.boolean(key)
    r.obj("params")
    for role, endpoints in r.obj("astorages").items():
        if not (isinstance(endpoints, list) and all(isinstance(x, str) for x in endpoints)):
            raise ScenarioError(key_path(r.at("astorages"), role), "a list of endpoint names", endpoints)


def _check_queues(data: dict) -> dict[str, dict]:
    for name, record in data.items():
        check_queue_record(name, record)
    return data


USER_COUNT_KEYS = ("running", "queued", "runningCores", "queuedCores", "runningSlotsHiSites")
USER_QUEUE_KEYS = ("userQueued", "userRunning", "taskFinished", "taskFailed", "taskClosed")
_USER_QUEUE_KEY_SET = frozenset(USER_QUEUE_KEYS)
_USER_COUNT_KEY_SET = frozenset(USER_COUNT_KEYS)


def _check_user_stats(data: dict) -> dict[str, Any]:
    """Analysis brokerage's numbers about the user (or working group), the shares and each queue."""
    for who in ("user", "group"):
        counts = data.get(who) or {}
        if type(counts) is dict and _counts_plain(counts, _USER_COUNT_KEY_SET):
            quota = counts.get("diskQuotaExceeded")
            if quota is None or quota is True or quota is False:
                continue  # the common case at once; the reader below names what is wrong
        r = Reader(counts, f"$.user_stats.{who}")
        for key in USER_COUNT_KEYS:
            r.number(key, minimum=0)
        r.boolean("diskQuotaExceeded")
    r = Reader(data, "$.user_stats")
    for share, usage in r.obj("gshareUsage").items():
        if isinstance(usage, bool) or not isinstance(usage, int | float) or usage < 0:
            raise ScenarioError(key_path("$.user_stats.gshareUsage", share), "a usage fraction ≥ 0", usage)
    r.number("hoursSinceLastSuccess", minimum=0)
    for queue_name, item in r.obj("queues").items():
        if type(item) is dict and _counts_plain(item, _USER_QUEUE_KEY_SET):
            continue
        q = Reader(item, "$.user_stats.queues", queue_name)
        for key in USER_QUEUE_KEYS:
            q.number(key, minimum=0)
    return data


def _counts_plain(item: dict, keys: frozenset[str]) -> bool:
    """Every one of `keys` the object has is absent, null or a finite number ≥ 0 (the common case, at once; the
    full check names what is wrong)."""
    for key in item.keys() & keys:
        value = item[key]
        kind = type(value)
        if kind is int:
            if value < 0:
                return False
        elif kind is float:
            if not (value >= 0 and math.isfinite(value)):
                return False
        elif value is not None:
            return False
    return True


def _check_object_of_objects(data: dict, path: str) -> dict[str, dict]:
    for name, item in data.items():
        if not isinstance(item, dict):
            raise ScenarioError(key_path(path, name), "an object", item)
    return data


@functools.lru_cache(maxsize=256)  # a cycle's scenarios share their `now`; a datetime is never changed
def iso_moment(text: str) -> datetime:
    """An ISO-8601 / RFC 3339 time in UTC (naive: UTC). RFC 3339 allows a lower-case t and z and a leap second
    (23:59:60, read as 23:59:59). ValueError when it is none, or when its offset moves it out of years 1-9999."""
    normal = re.sub(r"(T\d\d:\d\d):60", r"\1:59", text.upper()).replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(normal)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text!r} is out of range in UTC") from None


def _parse_now(value: object) -> datetime:
    if value is None:
        return datetime.now(UTC)
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return iso_moment(value)
    except ValueError:
        raise ScenarioError("$.now", "an ISO-8601 UTC time such as 2026-11-01T12:00:00Z", value) from None


@dataclass(frozen=True)
class Scenario:
    """One parsed scenario. `raw` keeps the input for replay; `extra` holds plugin-specific sections."""

    plugin: str
    now: datetime
    seed: int
    config: ConfigView
    gdpconfig: Mapping[str, Any]
    task: TaskSpec
    jobs: JobSet
    datasets: tuple[DatasetInfo, ...]
    sites: Mapping[str, SiteInfo]
    queues: Mapping[str, dict]
    sw_tags: Mapping[str, dict]
    gpu_summary: Mapping[str, list]
    ddm_endpoints: Mapping[str, EndpointInfo]
    network: tuple[NetworkLink, ...]
    queue_stats: Mapping[str, dict]
    nucleus_stats: Mapping[str, NucleusStats]
    user_stats: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    profile: str = "seed"


KNOWN_SECTIONS = {
    "plugin",
    "profile",
    "now",
    "seed",
    "gdpconfig",
    "task",
    "jobs",
    "datasets",
    "sites",
    "queues",
    "sw_tags",
    "gpu_summary",
    "ddm_endpoints",
    "network",
    "queue_stats",
    "nucleus_stats",
    "user_stats",
}


# Sections a plugin reads in its own shape (docs/scenario.md): kept raw in `extra`, not parsed as the generic ones.
PLUGIN_SECTIONS = {
    "dirac_match": frozenset({"task_queues", "jobs", "resource", "matcher"}),
    "wmcore_pull": frozenset(
        {"elements", "site_thresholds", "site_jobs", "step", "schedd", "team", "excludeWorkflows"}
    ),
}


def parse_scenario(data: object, *, plugin: str | None = None) -> Scenario:
    """Parses a scenario object; `plugin` overrides (or supplies) the scenario's own plugin name."""
    r = Reader(data, "$")
    name = plugin or r.text("plugin")
    if not name:
        raise ScenarioError("$.plugin", "the name of a brokerage plugin", r.data.get("plugin"))
    seed = r.integer("seed", 0)
    own = PLUGIN_SECTIONS.get(name, frozenset())
    gdpconfig = r.obj("gdpconfig")
    # The profile supplies what the scenario's own gdpconfig does not set (docs/gdpconfig.md, Profiles).
    profile = r.text("profile", choices=("", *PROFILE_NAMES)) or None
    try:
        config = ConfigView.from_flat(gdpconfig, profile=profile)
    except GdpConfigError as error:
        key = getattr(error, "key", "")
        raise ScenarioError(key_path("$.gdpconfig", key), str(error), show_got=False) from None
    return _frozen(
        Scenario,
        dict(
            plugin=name,
            now=_parse_now(r.data.get("now")),
            seed=seed,
            config=config,
            gdpconfig=dict(gdpconfig),
            task=_parse_task(r.obj("task")),
            jobs=JobSet() if "jobs" in own else _parse_jobs(r.obj("jobs")),
            datasets=_parse_datasets(r.lst("datasets")),
            sites=_parse_sites(r.obj("sites")),
            queues=_check_queues(r.obj("queues")),
            sw_tags=_check_object_of_objects(r.obj("sw_tags"), "$.sw_tags"),
            gpu_summary=r.obj("gpu_summary"),
            ddm_endpoints=_parse_endpoints(r.obj("ddm_endpoints")),
            network=_parse_network(r.lst("network")),
            queue_stats=_check_object_of_objects(r.obj("queue_stats"), "$.queue_stats"),
            nucleus_stats=_parse_nucleus_stats(r.obj("nucleus_stats")),
            user_stats=_check_user_stats(r.obj("user_stats")),
            extra={key: value for key, value in r.data.items() if key not in KNOWN_SECTIONS or key in own},
            raw=r.data,
            profile=config.profile,
        ),
    )
