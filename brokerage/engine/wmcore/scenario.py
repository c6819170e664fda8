"""Reading a `wmcore_pull` scenario (elements, site resources, site jobs) and writing the same shapes back from
the models data, so that a stored pull can be replayed through the same parser."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from brokerage.engine.core.scenario import ScenarioError, iso_moment
from brokerage.engine.wmcore.elements import ELEMENT_STATUSES, PULL_WORK, SITE_STATES, STEPS, Element
from brokerage.engine.wmcore.job_submitter import schedd_free_slots
from brokerage.engine.wmcore.matching import SiteResources


def _reader_number(data: Mapping, key: str, path: str, default: float | None = None, *, minimum=None) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScenarioError(f"{path}.{key}", "a number", value)
    if minimum is not None and value < minimum:
        raise ScenarioError(f"{path}.{key}", f"a number ≥ {minimum:g}", value)
    return float(value)


def _site_list(value: Any, path: str) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ScenarioError(path, "a list of site names", value)
    return tuple(value)


def _locations(value: Any, path: str) -> dict[str, tuple[str, ...]]:
    """{block or dataset: [sites]}; a bare list of sites is one unnamed block."""
    if value in (None, ""):
        return {}
    if isinstance(value, list):
        return {"(data)": _site_list(value, path)}
    if not isinstance(value, dict):
        raise ScenarioError(path, "an object {block: [sites]}", value)
    return {str(block): _site_list(sites, f"{path}[{block!r}]") for block, sites in value.items()}


def _time(value: Any, path: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        raise ScenarioError(path, "a time (ISO-8601 or POSIX seconds)", value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return iso_moment(value).timestamp()
        except ValueError:
            pass
    raise ScenarioError(path, "a time (ISO-8601 or POSIX seconds)", value)


def _flag(data: Mapping, key: str, path: str) -> bool:
    value = data.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ScenarioError(f"{path}.{key}", "true or false", value)
    return value


def _shared(sites: tuple[str, ...], shared: dict[tuple, tuple] | None) -> tuple[str, ...]:
    """One tuple for equal site lists, so the matcher's caches find them by identity."""
    return sites if shared is None else shared.setdefault(sites, sites)


def parse_element(item: Any, path: str, shared: dict[tuple, tuple] | None = None) -> Element:
    """One element in WMCore's own keys: id, RequestName, Priority, CreationTime, Jobs, Inputs, ParentData,
    PileupData, SiteWhitelist, SiteBlacklist, NoInputUpdate, NoPileupUpdate, ParentFlag, blowupFactor, TeamName,
    Status (Available when not given)."""
    if not isinstance(item, dict):
        raise ScenarioError(path, "an object", item)
    identifier = item.get("id", item.get("_id"))
    if not isinstance(identifier, str | int) or isinstance(identifier, bool) or identifier == "":
        raise ScenarioError(f"{path}.id", "the element's id", identifier)
    return Element(
        id=str(identifier),
        priority=_reader_number(item, "Priority", path, 0),
        created=_time(item.get("CreationTime"), f"{path}.CreationTime"),
        jobs=int(_reader_number(item, "Jobs", path, 1, minimum=0)),
        inputs=_locations(item.get("Inputs"), f"{path}.Inputs"),
        parents=_locations(item.get("ParentData"), f"{path}.ParentData"),
        pileup=_locations(item.get("PileupData"), f"{path}.PileupData"),
        whitelist=_shared(_site_list(item.get("SiteWhitelist"), f"{path}.SiteWhitelist"), shared),
        blacklist=_shared(_site_list(item.get("SiteBlacklist"), f"{path}.SiteBlacklist"), shared),
        trust_sitelists=_flag(item, "NoInputUpdate", path),
        trust_pileup_sitelists=_flag(item, "NoPileupUpdate", path),
        request=str(item.get("RequestName", "")),
        parent_flag=None if item.get("ParentFlag") is None else _flag(item, "ParentFlag", path),
        blowup=_reader_number(item, "blowupFactor", path, 1.0, minimum=0),
        team=_team(item.get("TeamName"), f"{path}.TeamName"),
        status=_status(item.get("Status", "Available"), f"{path}.Status"),
    )


def _status(value: Any, path: str) -> str:
    if value not in ELEMENT_STATUSES:
        raise ScenarioError(path, f"one of {', '.join(ELEMENT_STATUSES)}", value)
    return value


def _team(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScenarioError(path, "a team name", value)
    return value


def parse_site_resources(extra: Mapping[str, Any]) -> list[SiteResources]:
    """`site_thresholds`: {SITE: slots} (the threshold itself, WMCore's tests write it so) or {SITE: {state,
    pendingSlots, runningSlots, runningJobs}}."""
    data = extra.get("site_thresholds")
    if not isinstance(data, dict):
        raise ScenarioError("$.site_thresholds", "an object {site: slots}", data)
    sites = []
    for name, value in data.items():
        path = f"$.site_thresholds[{name!r}]"
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value) or value < 0:
                raise ScenarioError(path, "a number ≥ 0", value)
            sites.append(SiteResources(str(name), "Normal", int(value), 0, 0))
            continue
        if not isinstance(value, dict):
            raise ScenarioError(path, "a number of slots or an object {state, pendingSlots, runningSlots}", value)
        state = value.get("state", "Normal")
        if state not in SITE_STATES:
            raise ScenarioError(f"{path}.state", "one of " + ", ".join(SITE_STATES), state)
        sites.append(
            SiteResources(
                str(name),
                state,
                int(_reader_number(value, "pendingSlots", path, 0, minimum=0)),
                int(_reader_number(value, "runningSlots", path, 0, minimum=0)),
                int(_reader_number(value, "runningJobs", path, 0, minimum=0)),
            )
        )
    return sites


# a priority written as a JSON key: a plain decimal number (as docs/scenario.schema.json states it)
PRIORITY_KEY = re.compile(r"^-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")


def parse_site_jobs(extra: Mapping[str, Any]) -> dict[str, dict[float, int]]:
    """`site_jobs`: {SITE: {priority: jobs}} — the jobs already at each site, by priority."""
    data = extra.get("site_jobs") or {}
    if not isinstance(data, dict):
        raise ScenarioError("$.site_jobs", "an object {site: {priority: jobs}}", data)
    result: dict[str, dict[float, int]] = {}
    for site, by_priority in data.items():
        path = f"$.site_jobs[{site!r}]"
        if not isinstance(by_priority, dict):
            raise ScenarioError(path, "an object {priority: jobs}", by_priority)
        counts: dict[float, int] = {}
        for priority in by_priority:
            if not PRIORITY_KEY.match(str(priority)):
                raise ScenarioError(path, "priorities as keys (numbers)", priority)
            level = float(priority)
            counts[level] = int(_reader_number(by_priority, priority, path, minimum=0))
        result[str(site)] = counts
    return result


@dataclass(frozen=True)
class PullScenario:
    step: str
    elements: list[Element]
    sites: list[SiteResources]
    site_jobs: dict[str, dict[float, int]]
    schedd_free: float | None
    team: str = ""
    exclude_workflows: tuple[str, ...] = ()


def parse_pull(extra: Mapping[str, Any], config) -> PullScenario:
    """The wmcore_pull sections: `elements`, `site_thresholds`, `site_jobs`, and optionally `step` (pullWork or
    getWork), `schedd` {jobs} (compared with WMCORE_MAX_JOBS_PER_OWNER × WMCORE_PULL_SCHEDD_FRACTION), `team`
    and `excludeWorkflows`."""
    step = extra.get("step", PULL_WORK)
    if step not in STEPS:
        raise ScenarioError("$.step", "pullWork or getWork", step)
    data = extra.get("elements")
    if not isinstance(data, list):
        raise ScenarioError("$.elements", "a list of work-queue elements", data)
    shared: dict[tuple, tuple] = {}
    elements = [parse_element(item, f"$.elements[{i}]", shared) for i, item in enumerate(data)]
    seen: set[str] = set()
    for i, element in enumerate(elements):
        if element.id in seen:
            raise ScenarioError(f"$.elements[{i}].id", "a unique element id", element.id)
        seen.add(element.id)
    schedd = extra.get("schedd")
    schedd_free = None
    if schedd is not None:
        if not isinstance(schedd, dict):
            raise ScenarioError("$.schedd", "an object {jobs}", schedd)
        schedd_free = schedd_free_slots(
            max_jobs_per_owner=int(config.get("WMCORE_MAX_JOBS_PER_OWNER")),
            fraction=float(config.get("WMCORE_PULL_SCHEDD_FRACTION")),
            jobs_in_schedd=int(_reader_number(schedd, "jobs", "$.schedd", 0, minimum=0)),
        )
    excluded = extra.get("excludeWorkflows") or []
    if not isinstance(excluded, list) or not all(isinstance(name, str) for name in excluded):
        raise ScenarioError("$.excludeWorkflows", "a list of request names", excluded)
    return PullScenario(
        step,
        elements,
        parse_site_resources(extra),
        parse_site_jobs(extra),
        schedd_free,
        _team(extra.get("team"), "$.team"),
        tuple(excluded),
    )


# --- the other way: what a live pull decided on, as a scenario file (issue 34: replay) ---------------------------


def _locations_data(locations: Mapping[str, tuple[str, ...]]) -> dict[str, list[str]]:
    return {block: list(sites) for block, sites in locations.items()}


def element_data(element: Element) -> dict[str, Any]:
    """An element in WMCore's keys, as parse_element reads it back to the same Element."""
    data: dict[str, Any] = {
        "id": element.id,
        "RequestName": element.request,
        "Priority": element.priority,
        "CreationTime": element.created,
        "Jobs": element.jobs,
        "Inputs": _locations_data(element.inputs),
        "ParentData": _locations_data(element.parents),
        "PileupData": _locations_data(element.pileup),
        "SiteWhitelist": list(element.whitelist),
        "SiteBlacklist": list(element.blacklist),
        "NoInputUpdate": element.trust_sitelists,
        "NoPileupUpdate": element.trust_pileup_sitelists,
        "blowupFactor": element.blowup,
        "TeamName": element.team,
    }
    if element.parent_flag is not None:
        data["ParentFlag"] = element.parent_flag
    return data


def site_resources_data(sites: Iterable[SiteResources]) -> dict[str, dict[str, Any]]:
    """`site_thresholds` as parse_site_resources reads it back."""
    return {
        site.name: {
            "state": site.state,
            "pendingSlots": site.pending_slots,
            "runningSlots": site.running_slots,
            "runningJobs": site.running_jobs,
        }
        for site in sites
    }


def site_jobs_data(site_jobs: Mapping[str, Mapping[float, int]]) -> dict[str, dict[str, int]]:
    """`site_jobs` as parse_site_jobs reads it back (priorities as keys: repr keeps every digit of a float)."""
    return {site: {repr(float(priority)): jobs for priority, jobs in by.items()} for site, by in site_jobs.items()}
