"""CRIC queue records as the PanDA brokers read them: numbers with their defaults, catchall keys, unified
queues resolved to pseudo-queues (one per resource type that fits), the site of a queue and its storage endpoints."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

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


def as_int(value: Any, default: int = 0) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


def as_float(value: Any, default: float | None = 0.0) -> float | None:
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


def catchall(text: str) -> dict[str, str]:
    options = {}
    for item in (text or "").split(","):
        key, _, value = item.strip().partition("=")
        if key:
            options[key.strip()] = value.strip()
    return options


# SiteSpec.catchall_keys (panda-server 1.0.4): the options a queue may set in its catchall text or, winning over
# it, in its `params` object (SiteSpec.getValueFromCatchall reads the extra queue parameters first)
CATCHALL_KEYS = frozenset(
    (
        "useJumboJobs", "gpu", "grandly_unified", "nSimEvents", "minEventsForJumbo", "maxDiskPerCore",
        "use_only_local_data", "disableReassign", "jobChunkSize", "bareNucleus", "secondaryNucleus",
        "allowed_processing", "excluded_processing", "per_core_attr", "allow_no_pilot",
    )
)  # fmt: skip


def queue_options(record: dict[str, Any]) -> dict[str, str]:
    """A queue's catchall options as panda-server 1.0.4 reads them: `key=value` items of its catchall text, and its
    `params` object's values of the same keys over them (SiteSpec.getValueFromCatchall / hasValueInCatchall)."""
    options = catchall(record.get("catchall") or "")
    params = record.get("params")
    if params:
        options.update(
            {key: "" if value is None else str(value) for key, value in params.items() if key in CATCHALL_KEYS}
        )
    return options


def option(record: dict[str, Any], key: str) -> str | None:
    """One catchall option of a queue (queue_options), None when the queue does not set it; most queues set none,
    and are answered without parsing."""
    if key not in (record.get("catchall") or "") and not record.get("params"):
        return None
    return queue_options(record).get(key)


def max_io_intensity(record: dict[str, Any]) -> float:
    """The queue's params.max_io_intensity (SiteSpec.get_max_io_intensity, 1.0.4), NaN when it sets none."""
    params = record.get("params")
    value = params.get("max_io_intensity") if isinstance(params, dict) else None
    return as_float(value, np.nan) if value is not None else np.nan


def per_core_scaled(record: dict[str, Any]) -> dict[str, Any]:
    """A record whose catchall says per_core_attr gives maxrss, minrss and maxwdir per core: the queue's are
    those × its corecount (EntityModule.getSiteInfo, entity_module.py 1980-1988, 1.0.4; a corecount of 0 or none
    leaves them). The record itself when it does not."""
    if option(record, "per_core_attr") is None:
        return record
    cores = as_int(record.get("corecount"))
    if cores <= 0:
        return record
    scaled = dict(record)
    for key in ("maxrss", "minrss", "maxwdir"):
        if record.get(key):
            scaled[key] = record[key] * cores
    return scaled


def cloud_missing(record: dict[str, Any]) -> bool:
    """A production (or unified) queue whose CRIC cloud is empty: panda-server 1.0.4's SiteMapper leaves it out
    ("Empty cloud", SiteMapper.py 75-79). A record without the key is a hand-written scenario's: kept."""
    if "cloud" not in record or record["cloud"]:
        return False
    return runs_production(record)


def runs_production(record: dict[str, Any]) -> bool:
    """SiteSpec.runs_production (1.0.4): a production or unified queue, or one whose catchall says grandly_unified."""
    return record.get("type") in ("production", "unified") or option(record, "grandly_unified") is not None


def runs_analysis(record: dict[str, Any]) -> bool:
    """SiteSpec.runs_analysis (1.0.4): an analysis or unified queue, or one whose catchall says grandly_unified."""
    return record.get("type") in ("analysis", "unified") or option(record, "grandly_unified") is not None


def first_production_queues(queues: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Site → its first production queue in the snapshot's order (the one panda-server 1.0.4's SiteMapper makes
    its NucleusSpec from; a cloudless one is not in the SiteMapper). One pass over the queues: callers keep it per
    snapshot."""
    first: dict[str, dict[str, Any]] = {}
    for record in queues.values():
        site = queue_site(record)
        if site not in first and runs_production(record) and not cloud_missing(record):
            first[site] = record
    return first


def nucleus_bare_mode(first_queue: dict[str, Any] | None, site_mode: str) -> str:
    """A nucleus's bareNucleus mode as SiteMapper.collect_nuclei_and_satellites sets it: its first production
    queue's catchall bareNucleus (only or allow), else the site's own (`site_mode`)."""
    own = option(first_queue, "bareNucleus") if first_queue is not None else None
    return own if own in ("only", "allow") else site_mode


def split_connectivity(text: str) -> tuple[str, str]:
    network, _, stack = (text or "").partition("#")
    return network.strip().lower(), stack.strip()


def pseudo_queue_records(name: str, record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The pseudo-queues of a unified queue: one per resource type its core count allows, with the core count and
    memory limits of that type (SiteMapper.get_child_site_spec, panda-server 1.0.4)."""
    cores = max(1, as_int(record.get("corecount"), 1))
    maxrss, minrss = as_float(record.get("maxrss")) or 0.0, as_float(record.get("minrss")) or 0.0
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
