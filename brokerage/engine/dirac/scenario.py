"""Reading a `dirac_match` scenario: the task queues, the waiting jobs, the groups and their shares, and the
resource that asks, from the JSON SCENARIO.md describes, with the sets and CPU segments normalised."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from brokerage.engine.core.scenario import ScenarioError
from brokerage.engine.dirac.rules import (
    DEFAULT_CPU_SEGMENTS,
    DEFAULT_GROUP_SHARE,
    GROUPING_FIELDS,
    LIST_KEYS,
    REQUIREMENT_SETS,
    RESOURCE_BANS,
    SEED_RULES,
    Group,
    MatchRules,
    Resource,
    TaskQueue,
    cpu_segment,
    real_priority,
    task_queue_priorities,
)

RESOURCE_SETS = ("tags", "requiredTags", *(ban for ban, _ in RESOURCE_BANS))
RESOURCE_TEXTS = ("setup", "pilotType", "ownerDN", "vo")


def _names(value: Any, path: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ScenarioError(path, "a list of names", value)
    return frozenset(value)


def _number(data: Mapping, key: str, path: str, default: float | None = None) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{path}.{key}", "a number", value)
    return float(value)


def _megabytes(data: Mapping, key: str, path: str) -> int:
    value = _number(data, key, path, 0)
    if value < 0 or value != int(value):
        raise ScenarioError(f"{path}.{key}", "a whole number of MB, 0 or more", data.get(key))
    return int(value)


def cpu_segments_from(raw: Any, path: str = "$.cpu_segments") -> tuple[float, ...]:
    """The CPU-time segments of a scenario (`cpu_segments`, default seed 003's): positive, strictly ascending."""
    if raw is None:
        return DEFAULT_CPU_SEGMENTS
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(path, "a non-empty list of CPU times in seconds", raw)
    values = []
    for index, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise ScenarioError(f"{path}[{index}]", "a positive number of seconds", value)
        if values and value <= values[-1]:
            raise ScenarioError(f"{path}[{index}]", f"a CPU time above the one before ({values[-1]:g})", value)
        values.append(float(value))
    return tuple(values)


def groups_from(raw: Any, path: str = "$.groups") -> dict[str, Group]:
    """A scenario's (or the installation's) DIRAC groups: {name: {share, vo, jobSharing, backgroundTQs}}."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScenarioError(path, "an object of groups by name", raw)
    groups = {}
    for name, spec in raw.items():
        where = f"{path}.{name}"
        if not isinstance(spec, dict):
            raise ScenarioError(where, "an object {share, vo, jobSharing, backgroundTQs}", spec)
        unknown = set(spec) - {"share", "vo", "jobSharing", "backgroundTQs"}
        if unknown:
            raise ScenarioError(f"{where}.{sorted(unknown)[0]}", "one of share, vo, jobSharing, backgroundTQs", None)
        share = _number(spec, "share", where, DEFAULT_GROUP_SHARE)
        if share < 0:
            raise ScenarioError(f"{where}.share", "a share of 0 or more", spec.get("share"))
        for flag in ("jobSharing", "backgroundTQs"):
            if not isinstance(spec.get(flag, False), bool):
                raise ScenarioError(f"{where}.{flag}", "true or false", spec.get(flag))
        groups[name] = Group(
            share=share,
            vo=str(spec.get("vo", "")),
            jobSharing=spec.get("jobSharing", False),
            backgroundTQs=spec.get("backgroundTQs", False),
        )
    return groups


def resource_from_data(data: Any, path: str = "$.resource") -> Resource:
    """A Resource from a scenario's (or a request's) plain data; errors name the path. Required tags count as
    offered too: TaskQueueDB answers "Wrong conditions" to a RequiredTag outside Tag, and a pilot that requires a
    tag can run what asks for it (docs/decisions.md)."""
    if not isinstance(data, dict):
        raise ScenarioError(path, "an object describing the resource", data)
    for key in RESOURCE_TEXTS:
        if not isinstance(data.get(key, ""), str):
            raise ScenarioError(f"{path}.{key}", "a name", data.get(key))
    lists = {}
    for key in LIST_KEYS:  # a name, or the list of names a real pilot sends
        value = data.get(key, "")
        if isinstance(value, str):
            lists[key] = (value,) if value else ()
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            lists[key] = tuple(dict.fromkeys(value))
        else:
            raise ScenarioError(f"{path}.{key}", "a name or a list of names", value)
    sets = {key: _names(data.get(key), f"{path}.{key}") for key in RESOURCE_SETS}
    sets["tags"] |= sets["requiredTags"]
    max_ram = None if data.get("maxRAM") is None else _megabytes(data, "maxRAM", path)
    for flag in ("jobSharing", "inSiteMask"):
        if not isinstance(data.get(flag, flag == "inSiteMask"), bool):
            raise ScenarioError(f"{path}.{flag}", "true or false", data.get(flag))
    return Resource(
        cpuTime=_number(data, "cpuTime", path),
        **{key: data.get(key, "") for key in RESOURCE_TEXTS},
        **lists,
        **sets,
        jobSharing=data.get("jobSharing", False),
        maxRAM=max_ram,
        inSiteMask=data.get("inSiteMask", True),
    )


def resource_data(resource: Resource) -> dict[str, Any]:
    """A Resource as plain data, the keys it sent only: what a match record stores so the monitor can test it
    later against any task queue (`resource_from_data` reads it back to an equal Resource)."""
    data: dict[str, Any] = {"cpuTime": resource.cpuTime}
    data |= {key: getattr(resource, key) for key in RESOURCE_TEXTS if getattr(resource, key)}
    # one value as a name (as records stored before lists were read), several as the list
    data |= {key: list(v) if len(v) > 1 else v[0] for key in LIST_KEYS if (v := getattr(resource, key))}
    data |= {key: sorted(getattr(resource, key)) for key in RESOURCE_SETS if getattr(resource, key)}
    if resource.jobSharing:
        data["jobSharing"] = True
    if not resource.inSiteMask:
        data["inSiteMask"] = False
    if resource.maxRAM is not None:
        data["maxRAM"] = resource.maxRAM
    return data


@dataclass(frozen=True)
class DiracScenario:
    """A dirac_match scenario's sections, parsed."""

    queues: list[TaskQueue]
    jobs: dict[int, list[tuple[int, float]]]
    resource: Resource
    groups: dict[str, Group]


def parse_dirac_scenario(extra: Mapping[str, Any], rules: MatchRules = SEED_RULES) -> DiracScenario:
    """The dirac_match sections: `task_queues` [{id, ownerDN, ownerGroup, setup, cpuTime, priority, minRAM, maxRAM,
    sites …}], `jobs` [{jobID, taskQueue, userPriority}], `resource` {setup, cpuTime, site, gridCE, platform,
    pilotType, ownerGroup, ownerDN, tags, jobSharing, jobType, requiredTags, banned…, maxRAM, vo, inSiteMask},
    optionally `cpu_segments`, `groups` and `priorities` ("given", the default, or "computed": every queue's
    priority from the group shares and its waiting jobs under the profile's rules). Errors name the JSON path.

    A task queue's cpuTime is rounded up to the segments with `cpu_segment`, the function the live path applies
    when a job enters its task queue (services.dirac), so a scenario file and the database answer alike: a queue
    written with cpuTime 10 needs 500 s, one written with 400,000 needs the last segment, 300,000 s."""
    segments = cpu_segments_from(extra.get("cpu_segments"))
    groups = groups_from(extra.get("groups"))
    queues_data = extra.get("task_queues")
    if not isinstance(queues_data, list):
        raise ScenarioError("$.task_queues", "a list of task queues", queues_data)
    queues = []
    for index, item in enumerate(queues_data):
        path = f"$.task_queues[{index}]"
        if not isinstance(item, dict):
            raise ScenarioError(path, "an object", item)
        queues.append(
            TaskQueue(
                id=int(_number(item, "id", path)),
                ownerDN=str(item.get("ownerDN", "")),
                ownerGroup=str(item.get("ownerGroup", "")),
                setup=str(item.get("setup", "")),
                cpuTime=cpu_segment(_number(item, "cpuTime", path, 0), segments),
                priority=_number(item, "priority", path, 1.0),
                minRAM=_megabytes(item, "minRAM", path),
                maxRAM=_megabytes(item, "maxRAM", path),
                **{key: _names(item.get(key), f"{path}.{key}") for key in REQUIREMENT_SETS},
            )
        )
    jobs_data = extra.get("jobs") or []
    if not isinstance(jobs_data, list):
        raise ScenarioError("$.jobs", "a list of jobs", jobs_data)
    jobs: dict[int, list[tuple[int, float]]] = {}
    for index, item in enumerate(jobs_data):
        path = f"$.jobs[{index}]"
        if not isinstance(item, dict):
            raise ScenarioError(path, "an object", item)
        tq = int(_number(item, "taskQueue", path))
        jobs.setdefault(tq, []).append((int(_number(item, "jobID", path)), _number(item, "userPriority", path, 1)))
    mode = extra.get("priorities", "given")
    if mode not in ("given", "computed"):
        raise ScenarioError("$.priorities", '"given" or "computed"', mode)
    if mode == "computed":
        computed = task_queue_priorities(
            [queue_for_priorities(tq, [p for _, p in jobs.get(tq.id, ())]) for tq in queues],
            groups=groups,
            rules=rules,
        )
        queues = [TaskQueue(**{**tq.__dict__, "priority": computed[tq.id]}) for tq in queues]
    return DiracScenario(queues, jobs, resource_from_data(extra.get("resource")), groups)


def queue_for_priorities(tq: TaskQueue, user_priorities: Sequence[float]) -> dict[str, Any]:
    """What `task_queue_priorities` reads of a queue: its owner, group, requirements and the averages of its
    waiting jobs' user priorities and RealPriorities."""
    n = len(user_priorities)
    return {
        **{name: getattr(tq, name) for name in GROUPING_FIELDS},
        "id": tq.id,
        "averagePriority": sum(user_priorities) / n if n else 0.0,
        "averageRealPriority": sum(real_priority(p) for p in user_priorities) / n if n else 0.0,
    }
