"""The software and hardware check as panda-server 1.0.4 runs it (`SOFTWARE_RULE` panda; issue 33 D4, D7 and the
nightly, container, GPU and AtlasOffline cases the differential test found).

The seed's check (software.py) reads the task and a queue's published software and answers once; the real one
is shaped differently, and a port of its shape decides alike on inputs nobody chose:
- the task's architecture string is read with JediTaskSpec's own regular expressions (get_sw_platform,
  get_base_platform, get_host_cpu_spec, get_host_gpu_spec), which do not depend on the order of the `@`, `#` and
  `&` parts, and a platform without `#` still names a CPU (its first part);
- JsonSoftwareCheck.check (AtlasBrokerUtils.py 932-1134) runs for queues whose releases are exactly ["AUTO"] and
  that publish software; every other queue passes only through the brokers' ANY rule;
- the production broker (AtlasProdJobBroker.py 763-848) leaves the whole check out for a task without transHome,
  and tells a release (`Project-1.2.3` or a cache) from a nightly (`rel_N` or a timestamp): nightlies need the
  nightlies repository;
- the analysis broker (AtlasAnalJobBroker.py 846-1060) first checks GPU queues (catchall `gpu`) for the platform,
  then reads transHome without its AnalysisTransforms prefix, and checks a three-part release as AtlasOffline of
  transUses, then as its own project;
- GPUs are matched as srvcore/hardware_matching.match_gpu_spec does: vendor, model and microarchitecture by one
  card, vram and versions by every card of the queue.

Every function is pure and cached per distinct key: a cycle asks the same questions for many job sets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from brokerage.engine.panda.software import SHORTHAND_KEYS, TaskSoftware, version_key

OPERATOR = re.compile(r"([=><!]+)(.+)")
ARCH_ALTERNATION = re.compile(r"^\(([A-Za-z0-9_.+-]+(?:\|[A-Za-z0-9_.+-]+)*)\)([A-Za-z0-9_.+-]+)$")
# JediTaskSpec's GPU shorthand: seed 000's table without its "version" alias
SHORTHAND = {key: spec for key, spec in SHORTHAND_KEYS.items() if key != "version"}


@dataclass(frozen=True)
class TaskHardware:
    """The task's side as JediTaskSpec reads its architecture."""

    sw_platform: str | None
    base_platform: str | None
    cpu_specs: tuple[tuple[str, str, str], ...] | None  # (arch, vendor, instr), "*" for any
    gpu_spec: tuple[tuple[str, Any], ...] | None  # the spec dict as sorted items


def _sw_platform(architecture: str | None) -> str | None:
    if architecture is None:
        return None
    match = re.search("^([^@#&]*)", architecture)
    return match.group(1) if match else architecture


def _base_platform(architecture: str | None) -> str | None:
    if architecture is None or "@" not in architecture:
        return None
    return re.search("@([^#&]*)", architecture).group(1) or None


def _cpu_specs(architecture: str | None) -> tuple[tuple[str, str, str], ...] | None:
    if not architecture:
        return None
    if "#" not in architecture:
        if re.search(r"^[\^@&]", architecture):
            return None
        arch = architecture.split("-")[0]
        return ((arch, "*", "*"),) if arch else None
    text = re.search(r"#([^\^@&]*)", architecture).group(1)
    if not text:
        return None
    text = text[1:] if text.startswith("(") else text
    text = text[:-1] if text.endswith(")") else text
    specs = []
    for part in text.split("|"):
        part += "-*" * (2 - part.count("-"))
        if "-" not in part:
            part += "-*"
        items = part.split("-")
        specs.append((items[0], items[1], items[2]))
    return tuple(specs)


def _gpu_spec(architecture: str | None) -> tuple[tuple[str, Any], ...] | None:
    if architecture is None or "&" not in architecture:
        return None
    text = re.search(r"&([^\^@#]*)", architecture).group(1)
    if not text:
        return None
    parts = text.split(":")
    legacy = parts[0] + "-*" * (1 - parts[0].count("-"))
    items = legacy.split("-")
    spec: dict[str, Any] = {"vendor": items[0], "model": items[1]}
    for part in parts[1:]:
        match = re.match(r"(\w+)(>=|<=|!=|==|>|<|=)(.*)", part)
        if not match or match.group(1) not in SHORTHAND:
            continue
        key, op, value = SHORTHAND[match.group(1)], match.group(2), match.group(3)
        if key == "model":
            spec[key] = ("excl", value) if op == "!=" else value
        elif key == "microarchitecture":
            spec[key] = value
        else:
            spec[key] = ("==" if op == "=" else op) + value
    return tuple(sorted(spec.items()))


@lru_cache(maxsize=4096)
def task_hardware(architecture: str) -> TaskHardware:
    """JediTaskSpec's reading of an architecture string (the legacy form; JSON is read the same way by the
    real code and by ours only in the seed's check)."""
    text = architecture or None
    return TaskHardware(_sw_platform(text), _base_platform(text), _cpu_specs(text), _gpu_spec(text))


def _compare_version(actual: object, constraint: str) -> bool:
    """hardware_matching.compare_version_string: False when the constraint or the version cannot be read."""
    match = OPERATOR.match(constraint)
    if not match or actual in (None, ""):
        return False
    op, wanted = match.group(1).strip(), match.group(2).strip()
    op = "==" if op == "=" else op
    try:
        left, right = version_key(actual), version_key(wanted)
    except ValueError:
        return False
    if not re.search(r"\d", str(actual)) or not re.search(r"\d", wanted):
        return False
    return {
        "==": left == right,
        "!=": left != right,
        ">=": left >= right,
        "<=": left <= right,
        ">": left > right,
        "<": left < right,
    }.get(op, False)


def match_gpu_spec(spec: dict[str, Any], gpus: list[dict[str, Any]]) -> bool:
    """srvcore/hardware_matching.match_gpu_spec (1.0.4) over our GPU summary's keys (microarchitecture is their
    architecture, version their framework_version)."""
    vendor = spec.get("vendor", "*")
    if vendor != "*" and not any(g.get("vendor") and re.match(vendor, str(g["vendor"]), re.IGNORECASE) for g in gpus):
        return False
    model = spec.get("model", "*")
    if model != "*":
        pattern, excluded = (model[1], True) if isinstance(model, tuple) else (model, False)
        if not gpus:
            return False
        found = any(g.get("model") and re.match(pattern, str(g["model"]), re.IGNORECASE) for g in gpus)
        if found == excluded:
            return False
    if "vram" in spec and not (gpus and all(g.get("vram") and _compare_version(g["vram"], spec["vram"]) for g in gpus)):
        return False
    if "microarchitecture" in spec:
        wanted = spec["microarchitecture"]
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        if not gpus or not any(g.get("microarchitecture") in wanted for g in gpus):
            return False
    for ours, theirs in (("version", "version"), ("driver_version", "driver_version")):
        if theirs in spec and not (gpus and all(g.get(ours) and _compare_version(g[ours], spec[theirs]) for g in gpus)):
            return False
    return True


def _architecture_map(tags: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {spec["type"]: spec for spec in tags.get("architectures") or [] if isinstance(spec, dict) and "type" in spec}


def _exclusive(entry: dict[str, Any]) -> bool:
    return any(isinstance(values, list) and "excl" in values for values in entry.values())


def _hardware_ok(tags: dict, hardware: TaskHardware, gpus: list[dict]) -> bool:
    """The hardware half of JsonSoftwareCheck.check for one AUTO queue (a key the queue does not publish where the
    real code indexes it is its exception: the queue fails)."""
    if not tags.get("architectures"):
        # nothing published: only a task asking for no CPU or GPU feature passes (the checks below, at once)
        return not (hardware.cpu_specs or hardware.gpu_spec)
    architectures = _architecture_map(tags)
    if "cpu" in architectures and _exclusive(architectures["cpu"]) and hardware.cpu_specs is None:
        return False
    if "gpu" in architectures and _exclusive(architectures["gpu"]) and hardware.gpu_spec is None:
        return False
    if not (hardware.cpu_specs or hardware.gpu_spec):
        return True
    if not architectures:
        return False
    if hardware.cpu_specs:
        cpu = architectures.get("cpu")
        if cpu is None:
            return False
        if "arch" not in cpu:
            return False  # architecture_map["cpu"]["arch"]: KeyError, the queue is left out
        if not any(_cpu_spec_ok(cpu, spec) for spec in hardware.cpu_specs):
            return False
    if hardware.gpu_spec:
        return "gpu" in architectures and match_gpu_spec(dict(hardware.gpu_spec), gpus)
    return True


def _cpu_spec_ok(cpu: dict[str, Any], spec: tuple[str, str, str]) -> bool:
    arch, vendor, instr = spec
    arches = cpu["arch"]
    if arch == "*":
        if "excl" in arches:
            return False
    elif "any" not in arches and arch not in arches:
        try:
            if not any(re.search("^" + arch + "$", value) for value in arches):
                return False
        except re.error:
            return False
    for key, wanted in (("vendor", vendor), ("instr", instr)):
        if wanted == "*":
            if key in cpu and "excl" in cpu[key]:
                return False
        else:
            if key not in cpu:
                return False
            if "any" not in cpu[key] and wanted not in cpu[key]:
                return False
    return True


def json_check(
    releases: list[str] | None,
    tags: dict[str, Any] | None,
    all_entry: dict[str, Any] | None,
    gpus: list[dict],
    hardware: TaskHardware,
    *,
    cvmfs_tag: str | None,
    sw_project: str | None,
    sw_version: str | None,
    cmt_config: str | None,
    need_cvmfs: bool,
    cmt_config_only: bool,
    need_container: bool = False,
    container_name: str | None = None,
    only_tags_fc: bool = False,
) -> bool:
    """AtlasBrokerUtils.JsonSoftwareCheck.check (1.0.4) for one queue: True when the queue is in its ok list."""
    if list(releases or []) != ["AUTO"] or tags is None:
        return False
    if not _hardware_ok(tags, hardware, gpus):
        return False
    if not (cvmfs_tag or cmt_config or sw_project or sw_version or container_name) and (
        hardware.cpu_specs or hardware.gpu_spec
    ):
        return True
    containers = list(tags.get("containers") or [])
    tag_list = list(tags.get("tags") or [])
    if container_name:
        if not only_tags_fc and ("any" in containers or "/cvmfs" in containers):
            return True
        if container_name in {t.get("container_name") for t in tag_list if t.get("container_name")}:
            return True
        if container_name in {s for t in tag_list for s in (t.get("sources") or [])}:
            return True
        if not only_tags_fc:
            all_sources = [
                s
                for t in (all_entry or {}).get("tags") or []
                for s in (t.get("sources") or [])
                if t.get("container_name") == container_name
            ]
            for prefix in containers:
                if container_name.startswith(prefix) or any(source.startswith(prefix) for source in all_sources):
                    return True
        return False
    if cmt_config_only:
        return True
    cvmfs = list(tags.get("cvmfs") or [])
    if "any" in cvmfs or (cvmfs_tag is not None and cvmfs_tag in cvmfs):
        if "any" in containers or "/cvmfs" in containers:
            return True
        return not need_container and cmt_config in (tags.get("cmtconfigs") or [])
    if not need_cvmfs and (not need_container or "any" in containers):
        return any(
            t.get("cmtconfig") == cmt_config and t.get("project") == sw_project and t.get("release") == sw_version
            for t in tag_list
        )
    return False


def resolve_cmt_config(tags: dict[str, Any] | None, cmt_config: str, base_platform: str | None) -> str | None:
    """AtlasBrokerUtils.resolve_cmt_config: the queue's cmtconfig a regular-expression platform resolves to."""
    if tags is None:
        return None
    configs = list(tags.get("cmtconfigs") or [])
    if cmt_config in configs:
        return None
    resolved = None
    try:
        resolved = next((c for c in configs if re.search("^" + cmt_config + "$", c)), None)
    except re.error:
        return None
    if resolved is None:
        match = ARCH_ALTERNATION.search(cmt_config)
        cpus = [spec for spec in tags.get("architectures") or [] if spec.get("type") == "cpu"]
        arches = [arch for spec in cpus for arch in spec.get("arch", [])]
        if match and arches:
            resolved = next(
                (arch + match.group(2) for arch in match.group(1).split("|") if "any" in arches or arch in arches),
                None,
            )
    if resolved is None:
        return None
    return resolved + "@" + base_platform if base_platform else resolved


@lru_cache(maxsize=1024)
def _regexp(cmt_config: str | None) -> bool:
    if not cmt_config:
        return False
    try:
        return re.match(cmt_config, cmt_config) is None
    except re.error:
        return True


def _platform_resolved(tags, hardware: TaskHardware) -> bool:
    return not _regexp(hardware.sw_platform) or bool(
        resolve_cmt_config(tags, hardware.sw_platform, hardware.base_platform)
    )


@lru_cache(maxsize=4096)
def _prod_plan(task: TaskSoftware) -> tuple[TaskHardware, dict[str, Any], bool]:
    """The task's side of the production SW/HW check, read once per task: its hardware, the JsonSoftwareCheck
    arguments, and whether it asks for a release (else a nightly)."""
    hardware = task_hardware(task.architecture)
    home = task.transHome
    release = re.search(r"-\d+\.\d+\.\d+$", home) is not None or (
        re.search(r"rel_\d+(\n|$)", home) is None and re.search(r"\d{4}-\d{2}-\d{2}T\d{4}$", home) is None
    )
    parts = home.split("-")
    arguments = {
        "cvmfs_tag": "atlas" if release else "nightlies",
        "sw_project": parts[0] if release else None,
        "sw_version": (parts[1] if len(parts) > 1 else None) if release else None,
        "cmt_config": hardware.sw_platform,
        "need_cvmfs": False,
        "cmt_config_only": False,
        "need_container": hardware.base_platform is not None,
        "container_name": task.container_name or None,
        "only_tags_fc": task.onlyTagsForFC,
    }
    return hardware, arguments, release


def prod_software_panda(task: TaskSoftware, releases, tags, all_entry, gpus) -> tuple[bool, dict[str, Any]]:
    """AtlasProdJobBroker "SW/HW check" (1.0.4) for one queue."""
    if not task.transHome:
        return True, {}  # no transHome: the real broker leaves the whole check out (D4)
    hardware, arguments, release = _prod_plan(task)
    if json_check(releases, tags, all_entry, gpus or [], hardware, **arguments):
        if _platform_resolved(tags, hardware):
            return True, {}
        return False, {"check": "regexpcmtconfig", "needed": hardware.sw_platform, "queue": "not resolved"}
    any_release = list(releases or []) == ["ANY"]
    if (
        any_release
        and not (task.container_name and task.onlyTagsForFC)
        and hardware.cpu_specs is None
        and hardware.gpu_spec is None
    ):
        return True, {}
    return False, _cache_detail(task, hardware, releases, "release" if release else "nightly")


def _cache_detail(task: TaskSoftware, hardware: TaskHardware, releases, kind: str) -> dict[str, Any]:
    needed = f"{task.transHome}:{hardware.sw_platform or ''}"
    if task.container_name:
        needed += f" container {task.container_name}"
    if hardware.cpu_specs:
        needed += " cpu " + "|".join("-".join(spec) for spec in hardware.cpu_specs)
    if hardware.gpu_spec:
        needed += " gpu " + ",".join(f"{k}={v}" for k, v in hardware.gpu_spec)
    return {"check": kind, "needed": needed, "queue": ",".join(releases or ["AUTO"])}


def anal_gpu_queue_ok(task: TaskSoftware, releases, tags, all_entry, gpus) -> bool:
    """AtlasAnalJobBroker "architecture check" (1.0.4) at a GPU queue (catchall `gpu`): the task names a platform
    and the queue's published software has it (a cmtconfig-only JsonSoftwareCheck)."""
    hardware = task_hardware(task.architecture)
    if not hardware.sw_platform:
        return False
    # the call hands JsonSoftwareCheck no CPU or GPU spec: a GPU-only (excl) queue refuses even a GPU task here
    platform_only = TaskHardware(hardware.sw_platform, hardware.base_platform, None, None)
    return json_check(
        releases,
        tags,
        all_entry,
        gpus or [],
        platform_only,
        cvmfs_tag=None,
        sw_project=None,
        sw_version=None,
        cmt_config=hardware.sw_platform,
        need_cvmfs=False,
        cmt_config_only=True,
    )


@lru_cache(maxsize=4096)
def _anal_plan(task: TaskSoftware) -> tuple[TaskHardware, tuple[dict[str, Any], ...]]:
    """The task's side of the analysis SW/HW check, read once per task: its hardware and the JsonSoftwareCheck
    calls the real code makes in turn (a queue passes with the first that keeps it)."""
    hardware = task_hardware(task.architecture)
    home = re.sub("^[^-]+-*", "", task.transHome or "").replace("_", "-")
    common = {
        "cmt_config": hardware.sw_platform,
        "need_cvmfs": False,
        "container_name": task.container_name or None,
        "only_tags_fc": task.onlyTagsForFC,
    }
    three_part = re.search(r"-\d+\.\d+\.\d+$", home) is not None
    calls: list[dict[str, Any]] = []
    if (
        re.search(r"rel_\d+(\n|$)", home) is None
        and task.transHome not in ("AnalysisTransforms", "")
        and re.search(r"\d{4}-\d{2}-\d{2}T\d{4}$", home) is None
        and not three_part
    ):
        parts = home.split("-")
        version = parts[1] if len(parts) > 1 else None
        calls.append({"cvmfs_tag": "atlas", "sw_project": parts[0], "sw_version": version, "cmt_config_only": False})
    elif (home == "" and task.transUses) or (three_part and not re.search(r"-\d+\.\d+$", task.transUses or "")):
        if task.transUses:
            version = task.transUses.split("-")[-1]
            calls.append(
                {"cvmfs_tag": "atlas", "sw_project": "AtlasOffline", "sw_version": version, "cmt_config_only": False}
            )
        if len(home.split("-")) == 2:
            # the real code checks the sites the AtlasOffline check did not reach: the non-AUTO ones fail again
            project, version = home.split("-")
            calls.append({"cvmfs_tag": "atlas", "sw_project": project, "sw_version": version, "cmt_config_only": False})
    elif task.transHome:
        calls.append({"cvmfs_tag": "nightlies", "sw_project": None, "sw_version": None, "cmt_config_only": False})
        common["need_cvmfs"] = True
    else:
        calls.append({"cvmfs_tag": None, "sw_project": None, "sw_version": None, "cmt_config_only": True})
    return hardware, tuple({**common, **call} for call in calls)


def anal_software_panda(
    task: TaskSoftware, releases, tags, all_entry, gpus, *, queue_releases_any: bool | None = None
) -> tuple[bool, dict[str, Any]]:
    """AtlasAnalJobBroker "SW/HW check" (1.0.4) for one queue (the caller leaves it out for a pre-assigned task)."""
    hardware, calls = _anal_plan(task)
    gpus = gpus or []
    if any(json_check(releases, tags, all_entry, gpus, hardware, **call) for call in calls):
        if _platform_resolved(tags, hardware):
            return True, {}
        return False, {"check": "regexpcmtconfig", "needed": hardware.sw_platform, "queue": "not resolved"}
    if hardware.cpu_specs is None and hardware.gpu_spec is None and list(releases or []) == ["ANY"]:
        return True, {}
    return False, _cache_detail(task, hardware, releases, "release")
