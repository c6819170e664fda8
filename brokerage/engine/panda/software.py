"""Software and hardware matching for job brokerage (seed 000: "Release/cache Availability Check for
releases=AUTO", "Checks for CPU and/or GPU Hardware", "Checks for Fat Containers", "Checks for Releases,
Caches, or Nightlies").

All string work is here and cached: an architecture string is parsed once per distinct string, and a
(task software, queue) verdict once per distinct pair per snapshot. Every verdict is (ok, detail) where the
detail says which check failed and what was needed, for the `cache` skip code.
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

OPERATORS = {
    "==": operator.eq,
    "=": operator.eq,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "!=": operator.ne,
}
_CONSTRAINT = re.compile(r"^\s*(==|>=|<=|!=|=|>|<)?\s*(.+?)\s*$")
# shorthand key → JSON gpu_spec key (seed 000 table: model, vram, cuda, uarch, driver)
SHORTHAND_KEYS = {
    "model": "model",
    "vram": "vram",
    "cuda": "version",
    "uarch": "microarchitecture",
    "driver": "driver_version",
    "version": "version",
    "microarchitecture": "microarchitecture",
    "driver_version": "driver_version",
}


class ArchitectureError(ValueError):
    """A task architecture string that cannot be read."""


@dataclass(frozen=True)
class Constraint:
    """An operator-prefixed requirement such as '>=40960' ('=' is '==')."""

    op: str
    value: str

    @classmethod
    def parse(cls, text: object) -> Constraint:
        match = _CONSTRAINT.match(str(text))
        if not match:
            raise ArchitectureError(f"cannot read the constraint {text!r}")
        op = match.group(1) or "=="
        return cls("==" if op == "=" else op, match.group(2))

    def holds(self, actual: object, *, numeric: bool = False) -> bool:
        if actual in (None, ""):
            return False
        if numeric:
            try:
                return OPERATORS[self.op](float(actual), float(self.value))
            except ValueError:
                return False
        return OPERATORS[self.op](version_key(actual), version_key(self.value))

    def __str__(self) -> str:
        return f"{self.op}{self.value}"


def version_key(text: object) -> tuple[int, ...]:
    """'575.57.08' → (575, 57, 8); trailing zeros dropped so 12.0 == 12."""
    parts = [int(number) for number in re.findall(r"\d+", str(text))]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


@dataclass(frozen=True)
class GpuSpec:
    """What a task asks of a GPU. Patterns are case-insensitive regular expressions (re.match)."""

    vendor: str = "*"
    model: str | None = None
    model_excluded: str | None = None
    vram: Constraint | None = None
    version: Constraint | None = None
    driver_version: Constraint | None = None
    microarchitecture: tuple[str, ...] = ()

    @property
    def specific(self) -> bool:
        """True when the request names more than a vendor (seed 000: "wildcard requests" otherwise)."""
        return any(
            (self.model, self.model_excluded, self.vram, self.version, self.driver_version, self.microarchitecture)
        )

    def describe(self) -> str:
        parts = [self.vendor]
        if self.model:
            parts.append(f"model={self.model}")
        if self.model_excluded:
            parts.append(f"model!={self.model_excluded}")
        for name in ("vram", "version", "driver_version"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}{value}")
        if self.microarchitecture:
            parts.append("uarch=" + "|".join(self.microarchitecture))
        return ":".join(parts)


@dataclass(frozen=True)
class CpuSpec:
    arch: str | None = None
    vendor: str | None = None
    instr: str | None = None


@dataclass(frozen=True)
class Architecture:
    """A task's architecture, old form `sw_platform<@base_platform><#host_cpu_spec><&host_gpu_spec>` or JSON."""

    sw_platform: str = ""
    base_platform: str = ""
    cpu: CpuSpec | None = None
    gpu: GpuSpec | None = None


def _gpu_from_dict(spec: dict[str, Any]) -> GpuSpec:
    model = spec.get("model")
    included, excluded = None, None
    if isinstance(model, dict):
        if model.get("excl"):
            excluded = model.get("pattern")
        else:
            included = model.get("pattern")
    elif model:
        included = str(model)
    uarch = spec.get("microarchitecture") or ()
    return GpuSpec(
        vendor=str(spec.get("vendor") or "*"),
        model=included,
        model_excluded=excluded,
        vram=Constraint.parse(spec["vram"]) if spec.get("vram") not in (None, "") else None,
        version=Constraint.parse(spec["version"]) if spec.get("version") not in (None, "") else None,
        driver_version=(
            Constraint.parse(spec["driver_version"]) if spec.get("driver_version") not in (None, "") else None
        ),
        microarchitecture=(uarch,) if isinstance(uarch, str) else tuple(uarch),
    )


def parse_gpu_shorthand(text: str) -> GpuSpec:
    """'nvidia:model!=.*P100.*:vram>=40960:cuda>=12.0' or the older 'nvidia-A100' (vendor-model)."""
    head, *pairs = text.split(":")
    vendor, _, old_model = head.partition("-")
    spec: dict[str, Any] = {"vendor": vendor or "*"}
    if old_model:
        spec["model"] = old_model
    for pair in pairs:
        match = re.match(r"^\s*([A-Za-z_]+)\s*(==|>=|<=|!=|=|>|<)\s*(.*)$", pair)
        if not match or match.group(1) not in SHORTHAND_KEYS:
            raise ArchitectureError(
                f"cannot read the GPU requirement {pair!r} (keys: model, vram, cuda, uarch, driver)"
            )
        key, op, value = SHORTHAND_KEYS[match.group(1)], match.group(2), match.group(3)
        if key == "model":
            if op == "!=":
                spec["model"] = {"pattern": value, "excl": True}
            else:
                spec["model"] = value
        elif key == "microarchitecture":
            spec[key] = value.split("|")
        else:
            spec[key] = f"{op}{value}"
    return _gpu_from_dict(spec)


def _cpu_from_text(text: str) -> CpuSpec:
    arch, _, rest = text.partition("-")
    vendor, _, instr = rest.partition("-")
    return CpuSpec(arch or None, vendor or None, instr or None)


def _first(value: object) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return str(value) if value not in (None, "") else None


@lru_cache(maxsize=4096)
def parse_architecture(text: str) -> Architecture:
    """Reads a task architecture once per distinct string (the brokerage calls this per task and queue)."""
    text = (text or "").strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ArchitectureError(f"architecture JSON: {error.msg}") from None
        cpu_specs = data.get("cpu_specs") or []
        cpu = None
        if cpu_specs:
            first = cpu_specs[0]
            cpu = CpuSpec(_first(first.get("arch")), _first(first.get("vendor")), _first(first.get("instr")))
        gpu = _gpu_from_dict(data["gpu_spec"]) if data.get("gpu_spec") else None
        return Architecture(str(data.get("sw_platform") or ""), str(data.get("base_platform") or ""), cpu, gpu)
    gpu_text = cpu_text = None
    if "&" in text:
        text, gpu_text = text.split("&", 1)
    if "#" in text:
        text, cpu_text = text.split("#", 1)
    sw_platform, _, base_platform = text.partition("@")
    cpu = _cpu_from_text(cpu_text) if cpu_text else None
    gpu = parse_gpu_shorthand(gpu_text) if gpu_text else None
    return Architecture(sw_platform, base_platform, cpu, gpu)


def task_cpu(architecture: Architecture) -> CpuSpec | None:
    """The CPU the task needs: its host_cpu_spec, else the first part of sw_platform (seed 000)."""
    if architecture.cpu is not None:
        return architecture.cpu
    if architecture.sw_platform:
        return CpuSpec(arch=architecture.sw_platform.split("-")[0])
    return None


def _attribute_accepts(queue_values: list[str] | None, wanted: str | None) -> bool:
    """seed 000: ['blah'] accepts tasks asking blah or nothing; with 'excl' only tasks asking blah; [''] any.
    A task value may be a regular expression such as (x86_64|aarch64)."""
    if not queue_values:
        return True
    exclusive = "excl" in queue_values
    values = [value for value in queue_values if value != "excl"]
    if wanted is None:
        return not exclusive
    if "" in values or "any" in values:  # panda-server 1.0.4 JsonSoftwareCheck: "any" accepts every value
        return True
    return any(re.fullmatch(wanted, value, re.IGNORECASE) for value in values)


def cpu_check(
    queue_architectures: list[dict], cpu: CpuSpec | None, *, needs_architecture: bool = False
) -> tuple[bool, dict[str, Any]]:
    entries = [a for a in queue_architectures if a.get("type") == "cpu"]
    if not entries:
        if needs_architecture and cpu is not None:
            # panda-server 1.0.4: a queue that publishes no CPU cannot show it has the one asked for
            return False, {"check": "cpu", "needed": cpu.arch or "any", "queue": "no CPU architecture published"}
        return True, {}
    wanted = cpu or CpuSpec()
    for entry in entries:
        if all(_attribute_accepts(entry.get(name), getattr(wanted, name)) for name in ("arch", "vendor", "instr")):
            return True, {}
    return False, {
        "check": "cpu",
        "needed": "-".join(value for value in (wanted.arch, wanted.vendor, wanted.instr) if value) or "any",
        "queue": json.dumps(entries[0], sort_keys=True),
    }


def _gpu_entry_fits(spec: GpuSpec, gpu: dict[str, Any]) -> bool:
    if spec.vendor not in ("*", "") and not re.match(spec.vendor, str(gpu.get("vendor", "")), re.IGNORECASE):
        return False
    if spec.model and not re.match(spec.model, str(gpu.get("model", "")), re.IGNORECASE):
        return False
    if spec.vram is not None and not spec.vram.holds(gpu.get("vram"), numeric=True):
        return False
    if spec.version is not None and not spec.version.holds(gpu.get("version")):
        return False
    if spec.driver_version is not None and not spec.driver_version.holds(gpu.get("driver_version")):
        return False
    wanted_uarch = {u.lower() for u in spec.microarchitecture}
    return not (wanted_uarch and str(gpu.get("microarchitecture", "")).lower() not in wanted_uarch)


def gpu_only(queue_architectures: list[dict]) -> bool:
    """A queue whose GPU entry lists 'excl' takes GPU jobs only (issue 33 D1). seed 000: "with 'excl' only tasks
    asking" for it; panda-server 1.0.4 AtlasBrokerUtils.JsonSoftwareCheck 979-988 skips the queue for a task
    without a host GPU spec."""
    return any(
        entry.get("type") == "gpu" and any(isinstance(value, list) and "excl" in value for value in entry.values())
        for entry in queue_architectures
    )


def gpu_check(queue_architectures: list[dict], summary: list[dict], spec: GpuSpec) -> tuple[bool, dict[str, Any]]:
    """seed 000 two-stage gate: CRIC must list a GPU (capability), then the pilots' GPU summary must show one
    card meeting every attribute; an excluded model anywhere at the queue rejects it. Without summary data a
    GPU-capable queue accepts wildcard requests only."""
    needed = spec.describe()
    if not any(a.get("type") == "gpu" for a in queue_architectures):
        return False, {"check": "gpu", "needed": needed, "queue": "no GPU in CRIC"}
    if not summary:
        if spec.specific:
            return False, {"check": "gpu", "needed": needed, "queue": "no GPU reported by pilots"}
        return True, {}
    if spec.model_excluded and any(
        re.match(spec.model_excluded, str(gpu.get("model", "")), re.IGNORECASE) for gpu in summary
    ):
        return False, {"check": "gpu", "needed": needed, "queue": "has an excluded model"}
    if any(_gpu_entry_fits(spec, gpu) for gpu in summary):
        return True, {}
    cards = ", ".join(sorted({f"{g.get('vendor', '')} {g.get('model', '')} {g.get('vram', '')}MB" for g in summary}))
    return False, {"check": "gpu", "needed": needed, "queue": cards}


@dataclass(frozen=True)
class TaskSoftware:
    """The task's side of the software check; hashable so verdicts can be cached per distinct key."""

    architecture: str = ""
    transUses: str = ""
    transHome: str = ""
    container_name: str = ""
    onlyTagsForFC: bool = False


def split_release(text: str) -> tuple[str, str]:
    """'Athena-21.0.38' → ('Athena', '21.0.38'); 'AthDerivation-21.2.2.0' likewise; a bare version → ('', v)."""
    project, separator, version = (text or "").rpartition("-")
    return (project, version) if separator else ("", text or "")


def _resolve_container(name: str, all_entry: dict[str, Any] | None) -> str | None:
    """The source path of a container name from the "ALL" entry: its `containers` map, or a tag whose
    container_name is the name (first source)."""
    if not all_entry:
        return None
    containers = all_entry.get("containers")
    if isinstance(containers, dict) and name in containers:
        return str(containers[name])
    for tag in all_entry.get("tags") or []:
        if tag.get("container_name") == name and tag.get("sources"):
            return str(tag["sources"][0])
    return None


def container_check(task: TaskSoftware, tags: dict[str, Any], all_entry: dict[str, Any] | None) -> tuple[bool, dict]:
    name = task.container_name
    tag_list = tags.get("tags") or []
    containers = [str(c) for c in (tags.get("containers") or [])]
    if task.onlyTagsForFC:
        if any(tag.get("container_name") == name or name in (tag.get("sources") or []) for tag in tag_list):
            return True, {}
        return False, {"check": "container", "needed": name, "queue": "no tag with this container (onlyTagsForFC)"}
    if "any" in containers or "/cvmfs" in containers:
        return True, {}
    if any(name.startswith(prefix) for prefix in containers if prefix):
        return True, {}
    source = _resolve_container(name, all_entry)
    if source and any(source.startswith(prefix) for prefix in containers if prefix):
        return True, {}
    return False, {"check": "container", "needed": name, "resolved": source or "", "queue": ",".join(containers)}


def _resolve_platform(pattern: str, cmtconfigs: list[str]) -> str:
    """A sw_platform may be a regular expression: it resolves to the first matching cmtconfig (seed 000)."""
    if not pattern:
        return ""
    for config in cmtconfigs:
        try:
            if re.fullmatch(pattern, config):
                return config
        except re.error:
            break
    return pattern


def release_check(task: TaskSoftware, architecture: Architecture, tags: dict[str, Any]) -> tuple[bool, dict]:
    """seed 000: 'any' or the cvmfs tag in cvmfs, and ('any' or '/cvmfs' in containers, or sw_platform in
    cmtconfigs); otherwise ('any' in containers or no base_platform) and a tag with the same cmtconfig,
    project and release."""
    release_text = task.transHome or task.transUses
    project, version = split_release(release_text)
    nightly = "nightl" in release_text.lower() or "nightl" in task.transHome.lower()
    cvmfs_tag = "nightlies" if nightly else "atlas"
    cvmfs = [str(c) for c in (tags.get("cvmfs") or [])]
    containers = [str(c) for c in (tags.get("containers") or [])]
    cmtconfigs = [str(c) for c in (tags.get("cmtconfigs") or [])]
    platform = _resolve_platform(architecture.sw_platform, cmtconfigs)
    if ("any" in cvmfs or cvmfs_tag in cvmfs) and (
        "any" in containers or "/cvmfs" in containers or (platform and platform in cmtconfigs)
    ):
        return True, {}
    if "any" in containers or not architecture.base_platform:
        for tag in tags.get("tags") or []:
            if (tag.get("cmtconfig"), tag.get("project"), tag.get("release")) == (platform, project, version):
                return True, {}
    return False, {"check": "release", "needed": f"{release_text} {platform}".strip(), "queue": "not published"}


@dataclass(frozen=True)
class SoftwareRules:
    """The switches of the software check (gdpconfig; the seed's values by default)."""

    any_skips_hw_check: bool = True
    list_accepted: bool = True
    cpu_needs_architecture: bool = False


def software_check(
    task: TaskSoftware,
    releases: list[str] | None,
    tags: dict[str, Any] | None,
    all_entry: dict[str, Any] | None,
    gpus: list[dict] | None,
    rules: SoftwareRules = SoftwareRules(),
) -> tuple[bool, dict[str, Any]]:
    """The whole `cache` check of one queue. ['ANY'] skips the release check, a plain list must name the
    task's release, ['AUTO'] (or nothing) reads the published tags. Hardware is checked in every case.

    With the panda rules (panda-server 1.0.4 "SW/HW check"): ['ANY'] passes only a task that names no CPU or
    GPU and does not ask onlyTagsForFC with a container, and then without any hardware check; a plain list never
    passes."""
    try:
        architecture = parse_architecture(task.architecture)
    except ArchitectureError as error:
        return False, {"check": "architecture", "needed": task.architecture, "queue": str(error)}
    release_list = [str(r) for r in (releases or ["AUTO"])]
    upper = [r.upper() for r in release_list]
    if "ANY" in upper and not rules.any_skips_hw_check:
        cpu = task_cpu(architecture)
        if cpu is None and architecture.gpu is None and not (task.container_name and task.onlyTagsForFC):
            return True, {}
        return False, {
            "check": "release",
            "needed": "-".join(v for v in (cpu.arch, cpu.vendor, cpu.instr) if v) if cpu else architecture.sw_platform,
            "queue": "ANY (no hardware published for a CPU or GPU request)",
        }
    if "ANY" not in upper and "AUTO" not in upper and not rules.list_accepted and (task.transUses or task.transHome):
        return False, {"check": "release", "needed": task.transHome or task.transUses, "queue": ",".join(release_list)}
    if "ANY" not in upper:
        if "AUTO" in upper:
            if tags is None:
                return False, {
                    "check": "release",
                    "needed": task.transHome or task.transUses,
                    "queue": "no software tags published",
                }
            if task.container_name:
                ok, detail = container_check(task, tags, all_entry)
            elif task.transUses or task.transHome:
                ok, detail = release_check(task, architecture, tags)
            else:
                ok, detail = True, {}
            if not ok:
                return ok, detail
        elif task.transUses or task.transHome:
            _, version = split_release(task.transHome or task.transUses)
            if version not in release_list:
                return False, {"check": "release", "needed": version, "queue": ",".join(release_list)}
    architectures = (tags or {}).get("architectures") or []
    ok, detail = cpu_check(architectures, task_cpu(architecture), needs_architecture=rules.cpu_needs_architecture)
    if not ok:
        return ok, detail
    if architecture.gpu is not None:
        return gpu_check(architectures, gpus or [], architecture.gpu)
    if gpu_only(architectures):
        return False, {"check": "gpu", "needed": "no GPU", "queue": "GPU jobs only (excl)"}
    return True, {}
