"""Every gdpconfig parameter the brokerage reads: key, component, type, unit, default and meaning.

Plain Python, no Django: the engine resolves scenario overrides with the same registry the admin validates
against. Defaults and components come from REFERENCE.md ("gdpconfig") and the seeds named on each entry.
Units are the ones an admin types in the real gdpconfig table (TB for the nucleus disk thresholds, GB for
input sizes, kB/s for IO intensities, hours for time windows).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .profiles import DEFAULT_PROFILE, PROFILE_NAMES, PROFILES

VALUE_TYPES = ("str", "int", "float", "bool", "json")
SUFFIX_KINDS = ("gshare", "workflow", "workqueue")
# JEDI resource types (longest first): throttler limits may be set per work queue and resource type
RESOURCE_TYPES = ("SCORE_HIMEM", "MCORE_HIMEM", "SCORE", "MCORE")
# A trailing * only on the throttler's MCORE/SCORE family limits (NQUEUELIMIT_MC_16_SCORE*, JEDI's spelling;
# services.gdpconfig refuses it on any other key)
KEY_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*\*?$")

# The largest value a numeric parameter takes when its entry names no maximum, by unit (issue 31: NQUEUED_SAT_CAP
# = 99999999999999999999999 was stored). Each is far beyond any real grid (a million cores, ten million jobs,
# ten years) yet keeps every comparison and sum in the engine's 64-bit arithmetic; a unit not listed gets
# NUMERIC_CEILING. The admin and the API name the bound in their error.
UNIT_CEILINGS = {
    "jobs": 10_000_000,
    "files": 10_000_000,
    "events": 10**12,
    "elements": 10_000_000,
    "tasks": 10_000_000,
    "slots": 10_000_000,
    "cores": 1_000_000,
    "priority": 10**9,
    "TB": 1_000_000,
    "GB": 1_000_000_000,
    "kB/s": 10**9,
    "kB/s per core": 10**9,
    "minutes": 10 * 365 * 24 * 60,
    "hours": 10 * 365 * 24,
    "days": 10 * 365,
    "ratio": 1_000_000,
}
NUMERIC_CEILING = 10**9


def bound_text(number: float) -> str:
    """1e+07 → 10,000,000: the bound as an admin reads it."""
    return f"{int(number):,}" if float(number).is_integer() else f"{number:,}"


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class GdpConfigError(ValueError):
    """Base of every gdpconfig error; the message always names the parameter."""


class UnknownParameter(GdpConfigError, KeyError):
    def __init__(self, key: str):
        self.key = key
        super().__init__(f"unknown gdpconfig parameter '{key}'")

    def __str__(self) -> str:  # KeyError would quote the whole message again
        return self.args[0]


class InvalidValue(GdpConfigError):
    def __init__(self, key: str, value_type: str, raw: object, why: str = ""):
        self.key = key
        self.value_type = value_type
        self.raw = raw
        detail = f": {why}" if why else ""
        super().__init__(f"{key}: {raw!r} is not a valid {value_type}{detail}")


def parse_value(key: str, value_type: str, raw: object) -> Any:
    """Turns a stored text (or a scenario's JSON value) into a typed value; InvalidValue names the parameter."""
    if value_type not in VALUE_TYPES:
        raise InvalidValue(key, value_type, raw, f"unknown type (known: {', '.join(VALUE_TYPES)})")
    if value_type == "json":
        if isinstance(raw, str):
            try:
                return json.loads(raw)
            except json.JSONDecodeError as error:
                raise InvalidValue(key, value_type, raw, error.msg) from None
        return raw
    if value_type == "str":
        if isinstance(raw, str):
            return raw
        raise InvalidValue(key, value_type, raw, "expected text")
    if value_type == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
            return raw.strip().lower() in _TRUE
        raise InvalidValue(key, value_type, raw, "expected True or False")
    if isinstance(raw, bool):  # bool is an int subclass: True is not a number of files
        raise InvalidValue(key, value_type, raw, "expected a number")
    if value_type == "int":
        if isinstance(raw, int):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        if isinstance(raw, str):
            try:
                return int(raw.strip())
            except ValueError:
                raise InvalidValue(key, value_type, raw, "expected a whole number") from None
        raise InvalidValue(key, value_type, raw, "expected a whole number")
    try:
        number = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise InvalidValue(key, value_type, raw, "expected a number") from None
    if not math.isfinite(number):
        raise InvalidValue(key, value_type, raw, "expected a finite number")
    return number


def format_value(value_type: str, value: Any) -> str:
    """The text stored in GdpConfig.value for a typed value (inverse of parse_value)."""
    if value_type == "json":
        return json.dumps(value, sort_keys=True)
    if value_type == "bool":
        return "True" if value else "False"
    return str(value)


@dataclass(frozen=True)
class Parameter:
    """One registered parameter.

    suffix: "gshare" or "workflow" when KEY_<name> rows (DISK_THRESHOLD_Express) override the general key.
    suffix_only: only the KEY_<name> rows count; the general key never applies (FAST_REBRO_THRESHOLD_NQUEUE).
    default None means "unset": the rule it controls is off. derived_default computes a default from others.
    """

    key: str
    component: str
    value_type: str
    default: Any
    unit: str
    description: str
    source: str
    app: str = "jedi"
    suffix: str | None = None
    suffix_only: bool = False
    minimum: float | None = None
    maximum: float | None = None
    derived_default: Callable[[Callable[[str], Any]], Any] | None = None
    derived_default_text: str = ""
    # A text parameter limited to these values (PROFILE, the rule switches of the profiles).
    choices: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.value_type not in VALUE_TYPES:
            raise ValueError(f"{self.key}: unknown type {self.value_type}")
        if self.suffix is not None and self.suffix not in SUFFIX_KINDS:
            raise ValueError(f"{self.key}: unknown suffix kind {self.suffix}")
        if self.value_type in ("int", "float") and self.maximum is None:
            object.__setattr__(self, "maximum", UNIT_CEILINGS.get(self.unit, NUMERIC_CEILING))
        if self.default is not None:
            self.validate(self.default)

    def parse(self, raw: object, key: str | None = None) -> Any:
        """Parses and checks the bounds; `key` names a per-gshare/workflow variant in error messages."""
        value = parse_value(key or self.key, self.value_type, raw)
        self.validate(value, key)
        return value

    def validate(self, value: Any, key: str | None = None) -> None:
        name = key or self.key
        if self.choices is not None and value not in self.choices:
            raise InvalidValue(name, self.value_type, value, "expected one of " + ", ".join(self.choices))
        if self.value_type in ("int", "float"):
            if self.minimum is not None and value < self.minimum:
                raise InvalidValue(name, self.value_type, value, f"must be at least {bound_text(self.minimum)}")
            if self.maximum is not None and value > self.maximum:
                raise InvalidValue(name, self.value_type, value, f"must be at most {bound_text(self.maximum)}")

    @property
    def bounds_text(self) -> str:
        """The range as an admin reads it ("0 – 10,000,000 files"); "" for a parameter that is not a number."""
        if self.value_type not in ("int", "float"):
            return ""
        low = bound_text(self.minimum) if self.minimum is not None else "−∞"
        return f"{low} – {bound_text(self.maximum)}" + (f" {self.unit}" if self.unit else "")

    @property
    def default_text(self) -> str:
        if self.derived_default is not None:
            return self.derived_default_text
        if self.default is None:
            return "unset"
        return format_value(self.value_type, self.default)


class Registry:
    """The registered parameters by key, with resolution of KEY_<gshare> / KEY_<workflow> variants."""

    def __init__(self, parameters: list[Parameter]):
        self._by_key: dict[str, Parameter] = {}
        for parameter in parameters:
            if parameter.key in self._by_key:
                raise ValueError(f"{parameter.key} registered twice")
            self._by_key[parameter.key] = parameter
        # Longest prefix first so DISK_THRESHOLD_X never resolves to a shorter registered key.
        self._suffixed = sorted((p for p in parameters if p.suffix), key=lambda p: len(p.key), reverse=True)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.find(key) is not None

    def get(self, key: str) -> Parameter:
        parameter = self._by_key.get(key)
        if parameter is None:
            raise UnknownParameter(key)
        return parameter

    def find(self, key: str) -> tuple[Parameter, str | None] | None:
        """The parameter a stored key belongs to and its suffix value: DISK_THRESHOLD_Express → (…, 'Express')."""
        parameter = self._by_key.get(key)
        if parameter is not None:
            return parameter, None
        for candidate in self._suffixed:
            prefix = candidate.key + "_"
            if key.startswith(prefix) and len(key) > len(prefix):
                return candidate, key[len(prefix) :]
        return None

    def components(self) -> list[str]:
        return sorted({parameter.component for parameter in self})


def parameter(
    key: str, component: str, value_type: str, default: Any, unit: str, description: str, source: str, **extra
):
    """One entry of the registry below, its fields in the order the table reads."""
    return Parameter(key, component, value_type, default, unit, description, source, **extra)


_REF = "REFERENCE.md gdpconfig"
_S000_TASK = "seed 000, ATLAS Production Task Brokerage"
_S000_JOB = "seed 000, ATLAS Production Job Brokerage"
_S000_ANAL = "seed 000, ATLAS Analysis Job Brokerage"
_S000_TIMEOUT = "seed 000, Timeout Rules"
_PANDA_JOB = "panda-server 1.0.4 AtlasProdJobBroker.doBrokerage"
_PANDA_JOBGEN = "panda-server 1.0.4 JobGenerator.get_params_to_get_tasks, panda_jedi.cfg jobgen"
_S002_T1 = "seed 002, T1 weight"
_S002_JUMBO = "seed 002, Jumbo job switcher"
_PANDA_JUMBO = "panda-server 1.0.4 JumboWatchDog.run"
_S002_THROTTLE = "seed 002, Job throttling"
_S003_MATCH = "seed 003, Resource matching"
_DIRAC_TQDB = "dirac 9.1.22 TaskQueueDB"
_S004_PRIORITY = "seed 004, Handling the priority and system limit"
_S004_CACHE = "seed 004, WMBS to JobSubmitter Cache transition"
_S004_GQ_LQ = "seed 004, From GQ to LQ"
_S004_LQ_WMBS = "seed 004, From LQ to WMBS"

REGISTRY = Registry(
    [
        # --- production task brokerage (nuclei) ---
        parameter(
            "DISK_THRESHOLD",
            "taskbrokerage",
            "int",
            100,
            "TB",
            "A nucleus is skipped unless spaceFree + spaceExpired − normalizedExpOutSize × RW exceeds this. "
            "DISK_THRESHOLD_<gshare> overrides it for one global share.",
            _S000_TASK,
            suffix="gshare",
            minimum=0,
        ),
        parameter(
            "FREE_DISK_CUTOFF",
            "taskbrokerage",
            "int",
            1000,
            "TB",
            "Largest free space that still raises a nucleus's weight (spaceFreeCutoff in the weight formula).",
            _S000_TASK,
            minimum=0,
        ),
        parameter(
            "INPUT_SIZE_THRESHOLD",
            "taskbrokerage",
            "float",
            1,
            "GB",
            "Above this total input size, a nucleus must hold at least INPUT_SIZE_FRACTION of the input data.",
            _S000_TASK,
            minimum=0,
        ),
        parameter(
            "INPUT_NUM_THRESHOLD",
            "taskbrokerage",
            "int",
            100,
            "files",
            "Above this number of input files, a nucleus must hold at least INPUT_NUM_FRACTION of the files.",
            _S000_TASK,
            minimum=0,
        ),
        parameter(
            "INPUT_SIZE_FRACTION",
            "taskbrokerage",
            "float",
            10,
            "%",
            "Share of the input size that must be local to a nucleus (data locality check).",
            _S000_TASK,
            minimum=0,
            maximum=100,
        ),
        parameter(
            "INPUT_NUM_FRACTION",
            "taskbrokerage",
            "float",
            10,
            "%",
            "Share of the input files that must be local to a nucleus (data locality check).",
            _S000_TASK,
            minimum=0,
            maximum=100,
        ),
        parameter(
            "MIN_IO_INTENSITY_WITH_LOCAL_DATA",
            "taskbrokerage",
            "float",
            200,
            "kB/s",
            "At or below this ioIntensity (and small input) the locality check may be dropped when no nucleus "
            "passes it; above it the weight uses the local input size.",
            _S000_TASK,
            minimum=0,
        ),
        parameter(
            "MIN_INPUT_SIZE_WITH_LOCAL_DATA",
            "taskbrokerage",
            "float",
            10000,
            "GB",
            "At or below this total input size (and low ioIntensity) the locality check may be dropped.",
            _S000_TASK,
            minimum=0,
        ),
        parameter(
            "MAX_TASK_PRIO_WITH_LOCAL_DATA",
            "taskbrokerage",
            "int",
            800,
            "priority",
            "Tasks with taskPriority at or above this drop the locality check when no nucleus passes it.",
            _S000_TASK,
        ),
        parameter(
            "NQUEUED_NUC_CAP",
            "taskbrokerage",
            "int",
            2000,
            "files",
            "A nucleus with more output files queued to it than this has a long transfer backlog and is skipped "
            "unless the task's t1Weight is negative.",
            f"{_S000_TASK}; {_REF}",
            minimum=0,
        ),
        # --- where panda-server 1.0.4's AtlasProdTaskBroker departs from seed 000 (profiles.py) ---
        parameter(
            "TASK_INPUT_COPY_REQUIRED",
            "taskbrokerage",
            "bool",
            False,
            "",
            "A task whose input dataset has no complete copy readable over WAN (read_wan not OFF or TEST) anywhere "
            "is not brokered at all (panda: 'incomplete/missing at online endpoints with read_wan=ON'). The seed "
            "lets data locality decide.",
            _S000_TASK,
        ),
        parameter(
            "TASK_JOB_CHECK",
            "taskbrokerage",
            "bool",
            False,
            "",
            "Before data locality, job brokerage, run as the task broker asks it (no nucleus yet, up to the pilot "
            "check), must keep at least one production queue of the nucleus, else the nucleus is skipped (panda: "
            "AtlasProdTaskBroker 'job check', -job). A scenario without queues checks the input completeness only.",
            _S000_TASK,
        ),
        parameter(
            "TASK_BACKLOG_STRICT",
            "taskbrokerage",
            "bool",
            False,
            "",
            "False (seed 002, 'below 2000 passes'): a nucleus with NQUEUED_NUC_CAP queued output files or more has "
            "a transfer backlog. True (panda, getBackloggedNuclei): only above the cap.",
            _S000_TASK,
        ),
        parameter(
            "TASK_ENDPOINT_RULE",
            "taskbrokerage",
            "str",
            "seed",
            "",
            "The nucleus's output storage. seed: every endpoint of the output type, free + expired summed, minus "
            "the expected output of the remaining work, must exceed DISK_THRESHOLD; each must be ON for read_wan "
            "and write_wan and not blacklisted. panda: the first endpoint of the type only; free + expired minus "
            "the expected output in whole GB must be at least DISK_THRESHOLD; read_wan and write_wan not OFF or "
            "TEST, asked before the space (a nucleus failing both is skipped for its WAN).",
            _S000_TASK,
            choices=("seed", "panda"),
        ),
        parameter(
            "TASK_LOCALITY_RULE",
            "taskbrokerage",
            "str",
            "seed",
            "",
            "Data locality. seed: every copy at the nucleus counts, the local share must exceed the fractions, "
            "the fallback reads taskPriority. panda: per dataset the first complete disk copy or the most complete "
            "one (disk or tape), strictly below the fractions is too little, a "
            "pre-staged task passes with any file at the nucleus, the fallback reads currentPriority and takes the "
            "data factor out of the weight.",
            _S000_TASK,
            choices=("seed", "panda"),
        ),
        parameter(
            "TASK_WEIGHT_RULE",
            "taskbrokerage",
            "str",
            "seed",
            "",
            "The nucleus weight. seed: tapeWeight × (free + expired) × min(FREE_DISK_CUTOFF, free) / (max(50, RW) × "
            "total) [× local input share when IO-intensive]. panda: 1/RW (1 when RW < 50) × local input share "
            "(when ioIntensity is unknown or above MIN_IO_INTENSITY_WITH_LOCAL_DATA) × 0.001 when tape holds more "
            "than disk × (usable − expected output) / total × min(FREE_DISK_CUTOFF, whole TB of usable − expected "
            "output).",
            _S000_TASK,
            choices=("seed", "panda"),
        ),
        # --- production job brokerage (queues) ---
        parameter(
            "NQUEUED_SAT_CAP",
            "jobbroker",
            "int",
            150,
            "files",
            "A satellite queue is skipped when its link to the nucleus has more files queued than this.",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "NQUEUED_NUC_CAP_FOR_JOBS",
            "jobbroker",
            "int",
            10000,
            "files",
            "Every queue is skipped when more files than this wait to be aggregated to the nucleus.",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "IO_INTENSITY_CUTOFF",
            "jobbroker",
            "float",
            200,
            "kB/s",
            "Tasks above this ioIntensity may not move more input than the two cut-offs below to a queue.",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "SIZE_CUTOFF_TO_MOVE_INPUT",
            "jobbroker",
            "float",
            10,
            "GB",
            "Largest missing input size an IO-intensive task may transfer to a queue.",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "NUM_CUTOFF_TO_MOVE_INPUT",
            "jobbroker",
            "int",
            100,
            "files",
            "Largest number of missing input files an IO-intensive task may transfer to a queue.",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "MAX_DISKIO_DEFAULT",
            "jobbroker",
            "float",
            None,
            "kB/s per core",
            "Disk IO limit of queues without their own maxdiskio; unset means no limit.",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "NW_THRESHOLD",
            "jobbroker",
            "float",
            1.7,
            "",
            "Urgent or priority ≥ 1000 jobs need networkWeight ≥ NW_THRESHOLD × NW_WEIGHT_MULTIPLIER.",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "NW_WEIGHT_MULTIPLIER",
            "jobbroker",
            "float",
            1,
            "",
            "Multiplier of NW_THRESHOLD for urgent jobs.",
            _S000_JOB,
            minimum=0,
        ),
        # --- profiles and the switches of the behaviours where panda-server 1.0.4 departs from the seeds ---
        parameter(
            "PROFILE",
            "brokerage",
            "str",
            "seed",
            "",
            "The profile whose values apply where no row is stored: seed (the seeds' behaviour) or panda "
            "(panda-server 1.0.4). See docs/gdpconfig.md, Profiles.",
            "REFERENCE.md ruling 5",
            choices=PROFILE_NAMES,
        ),
        parameter(
            "ANALYSIS_SW_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The release an analysis task is checked for. seed: its transHome/transUses as in production. panda "
            "(AtlasAnalJobBroker): a transHome ending in a three-part release is checked as the AtlasOffline "
            "release named by transUses.",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_VP_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "Virtual-placement queues. seed (seed 000): skipped when the task sets avoidVP or the queue is overloaded "
            "(the queue-length rule on its own numbers, unless the scenario states vpOverloaded). panda "
            "(AtlasAnalJobBroker 'avoid VP queue check'): skipped when the task sets avoidVP, the job set merges or "
            "the loop runs without the data locality check; an overloaded queue is -overloaded_vp only when it has "
            "the data through virtual placement alone, which no input describes, so the queue-length rule decides.",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_SKIP_CLOSED",
            "anal_jobbroker",
            "bool",
            False,
            "",
            "Any of the task's jobs closed at a queue in the window skips the queue for good (panda: "
            "AtlasAnalJobBroker -closed); the seed counts closed jobs only with the failed ones (badsite).",
            _S000_ANAL,
        ),
        parameter(
            "ANALYSIS_THROTTLE_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "The analysis throttle before brokerage. seed (seed 000): the caps, the quota and the User Analysis share "
            "for classes A, B and C. panda (AtlasAnalJobBroker 168-330, 1.0.4): the caps are not asked for merge job "
            "sets (issue 33 D9); class S counts as A; class A is throttled when usage × the user's share of "
            "USER_USAGE_THRESHOLD_A (½ without the user's evaluation) is above 100 % of target.",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_SITES_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "Pre-assigned analysis tasks and queue status. seed (seed 000): a task's site is its only queue (none "
            "when unknown), pre-assigned queues need not be online. panda (AtlasAnalJobBroker 95-143 and the status "
            "check, 1.0.4): a site naming a storage endpoint means the queues reading it, naming nothing is ignored; "
            "offline queues are always out, brokeroff and test ones stay when the task names includedSite or at its "
            "site; a pre-assigned task is checked over every analysis queue, skips the software and closed-jobs "
            "checks and keeps its own queue alone at the preassign check (nonpreassigned); the checks run in the "
            "real broker's order (input data first, include/exclude after the pilots, the scratch and storage "
            "space checks apart, the GPU architecture check before the closed jobs).",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_STABILIZER_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "The Analysis Stabilizer and the bad-jobs rule. seed (seed 000): every queue. panda (AtlasAnalJobBroker "
            "1606-1740, 1.0.4; issue 33 D13): not for merges; only where the user has jobs queued or running; the "
            "start rate counts only while jobs run; the bad-jobs rule is asked only at queues the stabilizer's gates "
            "let it throttle.",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_STORAGE_FLOOR_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "The analysis queue's output storage floor of 200 GB. seed: more than 200 GB free (seed 000, analysis "
            "disk). panda (AtlasAnalJobBroker 1202-1203): free plus expired space (space_usable), 200 GB or more.",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_BAD_JOBS_STRICT",
            "anal_jobbroker",
            "bool",
            False,
            "",
            "False (seed): failed + closed ≥ max(2 × finished, MIN_BAD_JOBS_TO_SKIP_PQ) skips the queue. True "
            "(panda): only above it, and not for merge jobs.",
            _S000_ANAL,
        ),
        parameter(
            "ANALYSIS_OVERLOAD_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "seed: more than 2 × max(20, running) jobs queued is overloaded. panda (AtlasAnalJobBroker): more than "
            "OVERLOAD_MIN_QUEUE queued with nothing running or queued/running above OVERLOAD_RATIO_OFFSET × the "
            "ratio over all queues; with the data locality check, an overloaded queue without every input dataset "
            "is overloaded_vp; when every queue is overloaded only those go, the others running nothing are "
            "problematic.",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_WEIGHT_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "The new basic weight (USE_NEW_BASIC_WEIGHT). seed: W_s × W_q of seed 000. panda (AtlasAnalJobBroker "
            "1.0.4): the job set's jobs handed to the site classes in the task class's order, each queue weighed "
            "by its class's share × its part of the class's remaining user queue, + 2^-20; the users of a queue "
            "counted one too many (the '_total' entry).",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALYSIS_LOCALITY_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "seed: no data locality check for taskPriority ≥ 2000, low ioIntensity or a timed-out task; otherwise a "
            "retry without it when the persistent filters leave nothing. panda (AtlasAnalJobBroker): a first loop "
            "always with the check, a second from all queues without it when the first keeps no queue and the "
            "input has a complete copy readable over WAN.",
            _S000_ANAL,
            choices=("seed", "panda"),
        ),
        parameter(
            "OVERLOAD_MIN_QUEUE",
            "anal_jobbroker",
            "int",
            20,
            "jobs",
            "ANALYSIS_OVERLOAD_RULE panda: a queue with at most this many queued jobs is never overloaded.",
            "panda-server 1.0.4 AtlasAnalJobBroker",
            minimum=0,
        ),
        parameter(
            "OVERLOAD_RATIO_OFFSET",
            "anal_jobbroker",
            "float",
            1.2,
            "",
            "ANALYSIS_OVERLOAD_RULE panda: how far above the ratio over all queues a queue's queued/running may go.",
            "panda-server 1.0.4 AtlasAnalJobBroker",
            minimum=0,
        ),
        parameter(
            "FAIRSHARE_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The queue's fairsharepolicy. seed: the most specific matching rule, 'evgensimul' = evgen or simul, a "
            "type no rule gives a share is zero-shared, urgent tasks ignore fairshare (seeds 000-002). panda "
            "(AtlasBrokerUtils.hasZeroShare): the first matching rule in order decides, types match the processing "
            "group as a regular expression, test jobs are never zero-shared, urgent tasks are not exempt.",
            _S000_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "EXCLUDE_TEST_QUEUES",
            "jobbroker",
            "bool",
            True,
            "",
            "Queues with 'test' in their name are left out of production job brokerage (seed 000). The real "
            "doBrokerage scans every queue of the cloud; their status decides.",
            _S000_JOB,
        ),
        parameter(
            "NUCLEUS_NEEDS_QUEUE",
            "jobbroker",
            "bool",
            False,
            "",
            "The task's nucleus must be a site with at least one queue, else job brokerage fails for every queue. "
            "The real doBrokerage knows nuclei only through their queues (SiteMapper) and stops with 'unknown "
            "nucleus'; the seeds say nothing.",
            _S000_JOB,
        ),
        parameter(
            "INPUT_COMPLETENESS_CHECK",
            "jobbroker",
            "bool",
            False,
            "",
            "Job brokerage (and the job check of task brokerage) fails for every queue when an input dataset has "
            "no complete copy on disk or tape that can be read over LAN or WAN; a copy missing at most "
            "MAX_MISSING_INPUT_FILES files or holding at least MIN_INPUT_COMPLETENESS % counts as complete; "
            "pre-staged tasks are not checked (AtlasProdJobBroker 'check dataset completeness'). The seeds say "
            "nothing.",
            _S000_JOB,
        ),
        parameter(
            "MAX_MISSING_INPUT_FILES",
            "jobbroker",
            "int",
            10,
            "files",
            "A copy missing at most this many files counts as complete for INPUT_COMPLETENESS_CHECK.",
            "panda-server 1.0.4 AtlasProdJobBroker",
            minimum=0,
        ),
        parameter(
            "MIN_INPUT_COMPLETENESS",
            "jobbroker",
            "int",
            90,
            "%",
            "A copy holding at least this share of the files counts as complete for INPUT_COMPLETENESS_CHECK.",
            "panda-server 1.0.4 AtlasProdJobBroker",
            minimum=0,
            maximum=100,
        ),
        parameter(
            "DATA_COMPLETE_ONLY_RULE",
            "jobbroker",
            "bool",
            False,
            "",
            "Input already at a queue counts only from complete copies for secondary datasets and, when the task's "
            "ioIntensity is above IO_INTENSITY_CUTOFF (without pre-staging), for the master dataset too "
            "(AtlasProdJobBroker, getAvailableFiles complete_only). The seed counts every copy.",
            _S000_JOB,
        ),
        parameter(
            "LOCAL_DATA_DISK_ONLY",
            "jobbroker",
            "bool",
            False,
            "",
            "Input already at a queue counts only from its disk copies for the data weight and the IO check; with "
            "IO_CHECK_RULE panda, queues holding the rest on tape are the IO check's second choice when no queue "
            "passes with disk alone (AtlasProdJobBroker siteSizeMap / siteSizeMapWT). The seed counts tape copies.",
            _S000_JOB,
        ),
        parameter(
            "PREASSIGNMENT_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "A pre-assigned job set. seed (seed 000): its queues only, whatever their status; merges drop it after "
            "24 h of skips. panda (AtlasProdJobBroker 181-227, 1.0.4): a merge scans the online production queues "
            "reading its queue's output storage (unified ones as themselves, then the pseudo-queues) and its queue "
            "last, which decides among equal weights past the ten kept; one pre-assigned queue leaves the status, "
            "inactive, opportunistic, core count, scout walltime, connectivity, event service, work shortage, "
            "pilot and IO checks out, several (or a merge's) the status, inactive, opportunistic and pilot checks.",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "DIRECT_IO_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "When a job reads its input directly (no scratch room for it, and the direct-access-only rule). seed "
            "(seed 000): at queues with direct_access_lan. panda (CoreUtils.use_direct_io_for_job, 1.0.4): never a "
            "merge; always at a queue with maxinputsize -1; else only when the task allows input over LAN (issue 33 "
            "D6).",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "CONNECTIVITY_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "Matching a task's ipConnectivity with the queues' wnconnectivity. seed (seed 000): full takes any task, "
            "http takes http or none, none takes none, an unset queue counts as full, an unset stack takes any. "
            "panda (1.0.4): the task's value is full or http (none is dropped), a full queue takes any task, an "
            "http one http tasks, a queue that says nothing takes none, and an IP stack must be the queue's.",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "JOB_ENDPOINT_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The job brokers' storage endpoint rules. seed (seed 000): the queue's first input and output endpoints "
            "read and written over LAN, and for satellites received and sent over WAN, and the nucleus's storage "
            "both. panda (AtlasBrokerUtils.check_endpoints_with_blacklist, 1.0.4): any of the queue's DATADISK "
            "endpoints will do (an input one blacklisted for reading is not the queue's); a nucleus queue whose "
            "input endpoint holds no complete copy of every dataset is checked for write_wan as a satellite (issue "
            "33 D3); a satellite needs a complete copy readable over WAN somewhere (source_blacklist); satellites "
            "are skipped while the nucleus's default output endpoint cannot receive over WAN (dest_blacklisted), and "
            "the nucleus backlog (NQUEUED_NUC_CAP_FOR_JOBS) skips satellites only: the link check passes the "
            "nucleus's own queues first, and reads a satellite's blocked link only when neither of those applies.",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "DISK_IO_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The disk IO rule's task side. seed (seed 000): the task's diskIO against the queue's limit. panda "
            "(AtlasProdJobBroker 695-698, 1.0.4): a multi-core task's diskIO divided by the queue's cores (whole "
            "kB/s).",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "FULL_CHAIN_RULE",
            "taskbrokerage",
            "str",
            "seed",
            "",
            "Full-chain tasks and bare nuclei in task brokerage. seed (seed 000): only needs bareNucleus=only, require "
            "only or allow, capable follows a parent that went to a bare nucleus, and every other task avoids "
            "bareNucleus=only. panda (AtlasProdTaskBroker 505-535, 1.0.4): only and require need only or allow, a "
            "task with any fullChain value (capable too) may go to an only nucleus, and a full-chain task whose parent "
            "ran at a bare nucleus follows it, whatever its value.",
            "panda-server 1.0.4 AtlasProdTaskBroker",
            choices=("seed", "panda"),
        ),
        parameter(
            "ES_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "Event service against the queues' jobseed. seed (seed 000): an event-service task needs es, eshigh or "
            "all; another avoids es. panda (AtlasProdJobBroker 1255-1290, 1.0.4): an event-service task avoids std, "
            "eshigh unless urgent (priority 900 or more, or scouts) and the 1-core pseudo-queues of unified queues; "
            "another avoids es.",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "SOFTWARE_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The software and hardware check of the job brokers. seed: seed 000's checks (with the three switches "
            "below). panda: panda-server 1.0.4's own (AtlasBrokerUtils.JsonSoftwareCheck and the brokers' SW/HW "
            "loops): the architecture read with JediTaskSpec's expressions, only ['AUTO'] queues read their "
            "published software, no check at all for a production task without transHome, nightlies (rel_N or a "
            "timestamp) need the nightlies repository, a base platform needs a container, analysis reads "
            "AnalysisTransforms' release and checks a three-part one as AtlasOffline, GPU-only queues take GPU "
            "tasks only, GPUs matched with every card meeting vram and versions (docs/decisions.md, issue 33).",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "RELEASES_ANY_SKIPS_HW_CHECK",
            "jobbroker",
            "bool",
            True,
            "",
            "True: a queue with releases ['ANY'] passes the software check and only its published hardware is "
            "checked. False (panda): ['ANY'] passes only when the task names no CPU or GPU (its architecture "
            "implies one as soon as it has a platform) and does not ask onlyTagsForFC with a container.",
            _S000_JOB,
        ),
        parameter(
            "RELEASES_LIST_ACCEPTED",
            "jobbroker",
            "bool",
            True,
            "",
            "True: a queue whose releases list names the task's release passes. False (panda): only ['AUTO'] "
            "(published tags) and ['ANY'] can pass; a plain list never does.",
            _S000_JOB,
        ),
        parameter(
            "CPU_CHECK_NEEDS_ARCHITECTURE",
            "jobbroker",
            "bool",
            False,
            "",
            "True (panda): a task with a CPU requirement only goes to AUTO queues that publish a CPU "
            "architecture. False: a queue that publishes none accepts any CPU.",
            "panda-server 1.0.4 AtlasBrokerUtils.JsonSoftwareCheck",
        ),
        parameter(
            "MAX_PRIO_TO_BOOTSTRAP",
            "jobbroker",
            "int",
            None,
            "priority",
            "Bootstrap figures (nBatchJob, numSlots, queues without any job) are used only up to this task "
            "priority. Unset: always (seed 000).",
            _PANDA_JOB,
        ),
        parameter(
            "BOOTSTRAP_NEEDS_PILOTS",
            "jobbroker",
            "bool",
            False,
            "",
            "True (panda): nBatchJob replaces a low running count only at Harvester queues with pilots in the "
            "last 3 hours, and never for a pre-assigned job set (the real broker counts no pilot for one).",
            _PANDA_JOB,
        ),
        parameter(
            "NUM_SLOTS_RULE",
            "jobbroker",
            "str",
            "max",
            "",
            "How numSlots sets the running count. max (seed 000): the largest of running and numSlots, or of "
            "running and starting when numSlots is 0. per_core (panda): max(numSlots ÷ corecount, running), or "
            "running + starting when numSlots is 0.",
            _S000_JOB,
            choices=("max", "per_core"),
        ),
        parameter(
            "NW_ACTIVE",
            "jobbroker",
            "bool",
            True,
            "",
            "The network weight multiplies the brokerage weight (PanDA's NW_ACTIVE; ATLAS runs with it on).",
            _PANDA_JOB,
        ),
        parameter(
            "NW_THROUGHPUT_LOOKUP",
            "jobbroker",
            "str",
            "newest_first",
            "",
            "Which FTS throughput feeds the network weight. newest_first (REFERENCE.md): 1 h, else 1 d, else 1 w. "
            "week_first (panda): 1 w, then 1 d, then 1 h, each replacing the one before, stopping at the first "
            "missing one (no 1 w figure: closeness is used).",
            _PANDA_JOB,
            choices=("newest_first", "week_first"),
        ),
        parameter(
            "T1_WEIGHT_HIGH_PRIO_SCOUTS",
            "jobbroker",
            "bool",
            False,
            "",
            "The nucleus weight of 100 for priority ≥ 900 (seed 002) is given to scouts too, never to event "
            "service tasks nor pre-assigned job sets (panda).",
            _S002_T1,
        ),
        parameter(
            "T1_WEIGHT_IO_STRICT",
            "jobbroker",
            "bool",
            False,
            "",
            "The nucleus weight for IO-intensive tasks with t1Weight 0 applies at ioIntensity ≥ 500 kB/s (seed "
            "002) or, when True (panda), above 500.",
            _S002_T1,
        ),
        parameter(
            "NEGATIVE_T1_WEIGHT_RULE",
            "jobbroker",
            "str",
            "nucleus",
            "",
            "t1Weight = −1: nucleus (seed 002) keeps every queue of the nucleus; most_running (panda) keeps only "
            "the one with the most running jobs.",
            _S002_T1,
            choices=("nucleus", "most_running"),
        ),
        parameter(
            "JOB_CAP_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The queued-jobs caps. seed (seed 000 and the REFERENCE.md cap ruling): activated + starting, then "
            "all queued, against max(NQUEUELIMITSITE, 2 × running). panda: activated + starting (+ assigned "
            "while input is missing) against max(NQUEUELIMITSITE, 2 × running) at non-unified queues, and per "
            "resource type, defined jobs included, everywhere; express tasks are never capped.",
            _S000_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "BOOTSTRAP_EMPTY_QUEUES",
            "jobbroker",
            "bool",
            False,
            "",
            "True (panda): a queue with no running or queued job at all is kept with weight 0 and placed first, "
            "so that it gets jobs to start with (not for merge or express jobs, nor above MAX_PRIO_TO_BOOTSTRAP).",
            _PANDA_JOB,
        ),
        parameter(
            "MAXWDIR_SCALING",
            "jobbroker",
            "str",
            "per_core",
            "",
            "The scratch space a job gets: per_core (seed 000) maxwdir ÷ corecount always; single_core_task "
            "(panda) divides only for a single-core task at a multi-core queue.",
            _S000_JOB,
            choices=("per_core", "single_core_task"),
        ),
        parameter(
            "MANY_ASSIGNED_RULE",
            "jobbroker",
            "str",
            "ratio",
            "",
            "The assigned-jobs penalty: ratio (REFERENCE.md) max(1, min(2, assigned ÷ activated)); plus_one "
            "(panda) max(1, min(2, (assigned + 1) ÷ (activated + 1))).",
            _PANDA_JOB,
            choices=("ratio", "plus_one"),
        ),
        parameter(
            "JOB_WALLTIME_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "seed (seed 000): estimated walltime against maxtime; scouts and walltime-undefined jobs need "
            "maxtime ≥ 24 h. panda: the task's HS06 seconds against (maxtime − baseWalltime) × corecount × "
            "corepower × cpuEfficiency, and scouts, merges and walltime-undefined jobs need 24 h × 10 HS06 × "
            "corecount of that.",
            _S000_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "JOB_DISK_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "seed (seed 000): input + max(1.5 GB, output) + max(300 MB, work dir), storage needs > 200 GB free. "
            "panda: input + max(1.5 GB, output) + work dir + 300 MB (work dir set), storage needs ≥ 200 GB "
            "free + expired.",
            _S000_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "PILOT_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "Queues without pilots in 3 hours: seed skips them unless catchall allow_no_pilot; panda skips them "
            "unless numSlots is set for the queue or the task is a test task.",
            _S000_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "IO_CHECK_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The input-transfer check of IO-intensive tasks: seed (seed 000) as a filter in its place; panda "
            "after the other filters, strict comparisons, queues with the input on tape as a second choice, "
            "switched off when no queue passes, not for merge or event-service jobs.",
            _S000_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "MEMORY_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "The job's memory against maxrss/minrss. seed (seed 000): (baseRamCount + ramCount × the job's cores) × "
            "0.9. panda: ramCount × the queue's cores + baseRamCount for per-core RAM (ramCount alone otherwise), "
            "× 0.9 in whole MB.",
            _S000_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "HIGH_PRIORITY_NUCLEUS_RULE",
            "jobbroker",
            "str",
            "weight",
            "",
            "Jobs of priority 800 or more, and scouts, away from the nucleus. weight (seed 000, which has no such "
            "filter, seed 002's T1 weight and panda-server 1.0.4): no filter, the nucleus's queues weigh at least "
            "100 times more (T1_WEIGHT_HIGH_PRIO_SCOUTS). skip (seed 001, Job Brokerage: "
            '"skip queues unless they are associated to the nucleus"): a filter (code t1weight).',
            "seed 001, Job Brokerage",
            choices=("skip", "weight"),
        ),
        parameter(
            "CRIC_QUEUE_RULE",
            "jobbroker",
            "str",
            "seed",
            "",
            "How the job brokers read a CRIC queue record where the seeds are silent. seed: corepower null or 0 "
            "counts 10, every queue is a candidate. panda (panda-server 1.0.4 getSiteInfo, SiteMapper, "
            "AtlasProdJobBroker): corepower null or 0 is 0 (no HS06 walltime), production queues with an empty "
            "cloud are dropped, catchall useJumboJobs queues take jumbo jobs only (-jumbo), use_only_local_data "
            "queues only tasks with their input at their site (-non_local), params.max_io_intensity caps a task's "
            "ioIntensity (-io), a queue's own catchall bareNucleus counts as its site's, and a task of coreCount 0 "
            "at priority 900 or above, or its scouts, goes to multi-core queues only.",
            _PANDA_JOB,
            choices=("seed", "panda"),
        ),
        parameter(
            "EXPRESS_MIN_PRIORITY",
            "jobbroker",
            "int",
            1000,
            "priority",
            "A task is express (no cap, network weight threshold) at this priority and above, or when its "
            "processingType is urgent (seed 000: 1000; panda-server's InputChunk.isExpress: above 1000, so 1001).",
            _S000_JOB,
            minimum=0,
        ),
        parameter(
            "INACTIVE_COUNTS_STARTING",
            "jobbroker",
            "bool",
            False,
            "",
            "An inactive queue is skipped for high-priority, scout and merge jobs when activated jobs wait there "
            "(seed 000) or, when True (panda), activated or starting jobs.",
            _S000_JOB,
        ),
        parameter(
            "TRANSFERRING_AT_NUCLEUS",
            "jobbroker",
            "bool",
            True,
            "",
            "The too-many-transferring rule applies to the nucleus's own queues too (seed 000). False (panda): "
            "only to queues outside the nucleus.",
            _S000_JOB,
        ),
        parameter(
            "NUCLEUS_OUTPUT_SHARING",
            "jobbroker",
            "bool",
            False,
            "",
            "Queues outside the nucleus whose output storage the nucleus's first production queue reads count as at "
            "the nucleus for the transferring rule, t1Weight −1 and the nucleus weight (panda-server 1.0.4 "
            "getSitesShareDDM). False (seed 000): only the nucleus's own queues.",
            _PANDA_JOB,
        ),
        parameter(
            "NQUEUELIMITSITE",
            "jobbroker",
            "int",
            20,
            "jobs",
            "Queued-job floor of the further filters: skip when queued > max(NQUEUELIMITSITE, 2 × running). "
            "0 gives the seed's literal 2 × running. NQUEUELIMITSITE_<gshare> (PanDA's own key) wins for one "
            "global share.",
            "REFERENCE.md cap ruling",
            suffix="gshare",
            minimum=0,
        ),
        parameter(
            "WORK_SHORTAGE",
            "core",
            "bool",
            False,
            "",
            "When True, opportunistic queues and over-pledged queues are skipped.",
            _S000_JOB,
        ),
        # --- analysis job brokerage ---
        parameter(
            "CAP_RUNNING_USER_JOBS",
            "anal_jobbroker",
            "int",
            None,
            "jobs",
            "Throttle a user's tasks above this many running jobs (queued: twice this). Unset: no cap.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "CAP_RUNNING_USER_CORES",
            "anal_jobbroker",
            "int",
            None,
            "cores",
            "Throttle a user's tasks above this many running cores (queued: twice this). Unset: no cap.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "CAP_RUNNING_GROUP_JOBS",
            "anal_jobbroker",
            "int",
            None,
            "jobs",
            "As CAP_RUNNING_USER_JOBS, for tasks of a working group.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "CAP_RUNNING_GROUP_CORES",
            "anal_jobbroker",
            "int",
            None,
            "cores",
            "As CAP_RUNNING_USER_CORES, for tasks of a working group.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "USER_JOB_CAP_RULE",
            "prio_mgr",
            "str",
            "seed",
            "",
            "Throttling a user's activated analysis jobs by the CAP_RUNNING_* caps. seed: more running than a set cap "
            "throttles them all, none over releases them, an unset cap is no cap. panda (AtlasAnalWatchDog, "
            "DBProxy.throttleUserJobs): an unset cap is 10,000, reaching a cap throttles the jobs longer than six "
            "hours, under 90 % of both caps releases them.",
            "seed 002, Throttled jobs and tasks",
            choices=("seed", "panda"),
        ),
        parameter(
            "USER_USAGE_THRESHOLD_A",
            "anal_jobbroker",
            "float",
            1000,
            "slots",
            "Class A tasks are throttled when User Analysis usage exceeds "
            "max(USER_USAGE_THRESHOLD_A / the user's running slots in hi-sites, 1) × 100 % of its target.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "TW_DONE_JOB_STAT",
            "anal_jobbroker",
            "float",
            6,
            "hours",
            "Time window for counting the task's finished, failed and closed jobs per queue.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "MIN_BAD_JOBS_TO_SKIP_PQ",
            "anal_jobbroker",
            "int",
            5,
            "jobs",
            "Skip a queue when nFailed + nClosed ≥ max(2 × nFinished, this).",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "BASE_QUEUE_LENGTH_PER_PQ",
            "anal_jobbroker",
            "int",
            100,
            "jobs",
            "Analysis Stabilizer: queues with fewer queued jobs are never throttled; floor of nQ_max.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "BASE_EXPECTED_WAIT_HOUR_ON_PQ",
            "anal_jobbroker",
            "float",
            8,
            "hours",
            "Analysis Stabilizer: a queue with nQ < this × to-running rate is not throttled.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "BASE_DEFAULT_QUEUE_LENGTH_PER_PQ_USER",
            "anal_jobbroker",
            "int",
            5,
            "jobs",
            "Analysis Stabilizer: floor of a user's max_q_len at a queue.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "BASE_QUEUE_RATIO_ON_PQ",
            "anal_jobbroker",
            "float",
            0.05,
            "",
            "Analysis Stabilizer: max_q_len is at least this × running jobs at the queue.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "STATIC_MAX_QUEUE_RUNNING_RATIO",
            "anal_jobbroker",
            "float",
            2.0,
            "",
            "Analysis Stabilizer: nQ_max is at least this × running jobs at the queue.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "MAX_EXPECTED_WAIT_HOUR",
            "anal_jobbroker",
            "float",
            12.0,
            "hours",
            "Analysis Stabilizer: nQ_max is at least this × the to-running rate.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "IO_INTENSITY_CUTOFF_USER",
            "anal_jobbroker",
            "float",
            None,
            "kB/s",
            "Analysis tasks at or below this ioIntensity skip the data locality check. Unset: check on.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "DATA_CHECK_TIMEOUT_USER",
            "anal_jobbroker",
            "float",
            None,
            "hours",
            "The data locality check is dropped when the task's last successful cycle is older than this.",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "DATA_CHECK_TIMEOUT_FROM",
            "anal_jobbroker",
            "str",
            "last_success",
            "",
            "What DATA_CHECK_TIMEOUT_USER counts from. last_success (seed 000): the task's last successful "
            "analysis brokerage cycle (its first cycle when none succeeded). frozen (panda-server 1.0.4, "
            "AtlasAnalJobBroker 502, JediTaskSpec.frozenTime): the first failing cycle since the last success.",
            _S000_ANAL,
            choices=("last_success", "frozen"),
        ),
        parameter(
            "PRESTAGE_LIMIT",
            "anal_jobbroker",
            "float",
            None,
            "TB",
            "A user's running tasks moving data (input staged from tape or transferred from disk for their jobs "
            "waiting to start) are throttled while the user's data in motion exceeds this; unset, no limit.",
            "seed 002, Throttled jobs and tasks",
            minimum=0,
        ),
        parameter(
            "PRESTAGE_RULE",
            "anal_jobbroker",
            "str",
            "seed",
            "",
            "How PRESTAGE_LIMIT is compared. seed: staging and transfers together over the limit. panda "
            "(AtlasAnalWatchDog.doForPreStaging, 1.0.4): each kind on its own over the limit (1 TB when unset), in "
            "whole GB.",
            "seed 002, Throttled jobs and tasks",
            choices=("seed", "panda"),
        ),
        parameter(
            "ANALY_TIMEOUT",
            "anal_jobbroker",
            "float",
            12,
            "hours",
            "Analysis jobs that did not start within this are reattempted (job rebrokerage).",
            "seed 002, Job rebrokerage / Input data transfer",
            minimum=0,
        ),
        parameter(
            "USE_NEW_BASIC_WEIGHT",
            "anal_jobbroker",
            "bool",
            False,
            "",
            "Analysis brokerage weighs queues with the new basic weight W_s × W_q instead of the original one "
            "(the seed says the original is in use and the new one is coming).",
            _S000_ANAL,
        ),
        parameter(
            "NEW_WEIGHT_EPSILON_1",
            "anal_jobbroker",
            "float",
            0.01,
            "jobs",
            "ε1 of the new basic weight's site-class table (must be larger than ε2).",
            _S000_ANAL,
            minimum=0,
        ),
        parameter(
            "NEW_WEIGHT_EPSILON_2",
            "anal_jobbroker",
            "float",
            0.001,
            "jobs",
            "ε2 of the new basic weight's site-class table (a small positive number below ε1).",
            _S000_ANAL,
            minimum=0,
        ),
        # --- watchdog ---
        parameter(
            "HEARTBEAT_TIMEOUT",
            "watcher",
            "float",
            2,
            "hours",
            "Running or starting jobs without a heartbeat for this long time out. HEARTBEAT_TIMEOUT_<workflow> "
            "overrides it for one workflow.",
            _S000_TIMEOUT,
            app="pandaserver",
            suffix="workflow",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_PENDING",
            "watcher",
            "float",
            1,
            "hours",
            "Pending jobs time out after this long in pending.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_WAITING",
            "watcher",
            "float",
            0.5,
            "hours",
            "Waiting jobs are closed after this long in waiting; not a co-jumbo job, which waits until the co-jumbo "
            "check finishes it or gives it back (seed 002; copyArchive.py 1.0.4 leaves them out too).",
            "seed 002, Timeout values for production jobs",
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_DEFINED",
            "watcher",
            "float",
            4,
            "hours",
            "Defined jobs time out after this long in defined.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_ASSIGNED",
            "watcher",
            "float",
            12,
            "hours",
            "Assigned jobs time out after this long in assigned.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_THROTTLED",
            "watcher",
            "float",
            168,
            "hours",
            "Throttled jobs are closed after this long (seed: 7 days).",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_ACTIVATED",
            "watcher",
            "float",
            48,
            "hours",
            "Activated or starting jobs time out after this long (seed: 2 days).",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_ACTIVATED_HIGH_PRIORITY",
            "watcher",
            "float",
            4,
            "hours",
            "Activated or starting jobs of priority 800 or more time out after this long at queues whose last job "
            "start is older than INACTIVE_QUEUE_HOURS or that are test or offline.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "INACTIVE_QUEUE_HOURS",
            "watcher",
            "float",
            2,
            "hours",
            "A queue whose last job start is older than this is inactive for the high-priority activated rule.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_SENT",
            "watcher",
            "float",
            0.5,
            "hours",
            "Sent jobs time out after this long in sent (seed: 30 min).",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_RUNNING",
            "watcher",
            "float",
            504,
            "hours",
            "Running jobs time out after this long in running (seed: 21 days).",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_HOLDING_HIGH_PRIORITY",
            "watcher",
            "float",
            3,
            "hours",
            "Holding jobs of priority 800 or more time out after this long.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_HOLDING",
            "watcher",
            "float",
            72,
            "hours",
            "Holding jobs of priority below 800 time out after this long (the seed's number is missing: 3 days).",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_TRANSFERRING_HIGH_PRIORITY",
            "watcher",
            "float",
            2,
            "days",
            "Transferring jobs of priority 800 or more at a queue without transtimehi time out after this long.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TIMEOUT_TRANSFERRING",
            "watcher",
            "float",
            3,
            "days",
            "Transferring jobs of priority below 800 at a queue without transtimelo time out after this long.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "TASK_PENDING_TIMEOUT",
            "watcher",
            "float",
            72,
            "hours",
            "A task the brokerage has kept pending (retried without success) for this long goes to exhausted "
            "(seed 002 exhausted: 'timed-out while pending in the brokerage'; the seed gives no number).",
            "seed 002, task status exhausted",
            minimum=0,
        ),
        parameter(
            "FAST_REBRO_THRESHOLD_NQNR_RATIO",
            "watcher",
            "float",
            3,
            "",
            "Fast rebrokerage needs nQueue/nRunning of the queue and gshare above this.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
        ),
        parameter(
            "FAST_REBRO_THRESHOLD_NQUEUE_FRAC",
            "watcher",
            "float",
            0.3,
            "",
            "Fast rebrokerage needs the queue's share of the gshare's queued jobs above this.",
            _S000_TIMEOUT,
            app="pandaserver",
            minimum=0,
            maximum=1,
        ),
        parameter(
            "FAST_REBRO_THRESHOLD_NQUEUE",
            "watcher",
            "int",
            None,
            "jobs",
            "Fast rebrokerage needs nQueue of the queue above FAST_REBRO_THRESHOLD_NQUEUE_<gshare>; a gshare "
            "without its own row never triggers it.",
            _S000_TIMEOUT,
            app="pandaserver",
            suffix="gshare",
            suffix_only=True,
            minimum=0,
        ),
        # --- jumbo jobs (seed 002: component jumbo_dog) ---
        parameter(
            "JUMBO_MAX_TASKS",
            "jumbo_dog",
            "int",
            1,
            "tasks",
            "The total number of active tasks with jumbo jobs.",
            _S002_JUMBO,
            minimum=0,
        ),
        parameter(
            "JUMBO_MIN_EVENTS_DISABLE",
            "jumbo_dog",
            "int",
            100000,
            "events",
            "Jumbo jobs are disabled in tasks with fewer remaining events.",
            _S002_JUMBO,
            minimum=0,
        ),
        parameter(
            "JUMBO_MIN_EVENTS_ENABLE",
            "jumbo_dog",
            "int",
            None,
            "events",
            "Tasks need this many remaining events to enable jumbo jobs.",
            _S002_JUMBO,
            minimum=0,
            derived_default=lambda get: get("JUMBO_MIN_EVENTS_DISABLE") * 10,
            derived_default_text="JUMBO_MIN_EVENTS_DISABLE × 10",
        ),
        parameter(
            "JUMBO_MAX_EVENTS",
            "jumbo_dog",
            "int",
            None,
            "events",
            "Upper limit on remaining events in all active tasks with jumbo jobs.",
            _S002_JUMBO,
            minimum=0,
            derived_default=lambda get: get("JUMBO_MAX_TASKS") * get("JUMBO_MIN_EVENTS_ENABLE") // 2,
            derived_default_text="JUMBO_MAX_TASKS × JUMBO_MIN_EVENTS_ENABLE / 2",
        ),
        parameter(
            "JUMBO_PER_TASK",
            "jumbo_dog",
            "int",
            1,
            "jobs",
            "The number of jumbo jobs per task.",
            _S002_JUMBO,
            minimum=0,
        ),
        parameter(
            "JUMBO_PER_SITE",
            "jumbo_dog",
            "int",
            1,
            "jobs",
            "The number of jumbo jobs per site for each task.",
            _S002_JUMBO,
            minimum=0,
        ),
        parameter(
            "JUMBO_MAX_CURR_PRIO",
            "jumbo_dog",
            "int",
            500,
            "priority",
            "Only tasks with a lower current priority can enable jumbo jobs.",
            _S002_JUMBO,
        ),
        parameter(
            "JUMBO_PROG_TO_BOOST",
            "jumbo_dog",
            "int",
            95,
            "%",
            "panda profile: a task with jumbo jobs whose remaining events are under this percent of its events (and "
            "fewer files left than JUMBO_MAX_FILES_TO_BOOST) is lifted to priority 900.",
            _PANDA_JUMBO,
            minimum=0,
        ),
        parameter(
            "JUMBO_MAX_FILES_TO_BOOST",
            "jumbo_dog",
            "int",
            500,
            "files",
            "panda profile: a task near its end is lifted to priority 900 only with fewer input files left.",
            _PANDA_JUMBO,
            minimum=0,
        ),
        parameter(
            "JUMBO_PRIO_DISABLED",
            "jumbo_dog",
            "int",
            500,
            "priority",
            "panda profile: a task whose jumbo jobs were disabled is lifted to this priority.",
            _PANDA_JUMBO,
        ),
        parameter(
            "JUMBO_DOG_RULE",
            "jumbo_dog",
            "str",
            "seed",
            "",
            "What JumboWatchDog does every ten minutes. seed: enables jumbo jobs in the eligible task with the most "
            "events left while there are fewer than JUMBO_MAX_TASKS tasks and JUMBO_MAX_EVENTS events with them, and "
            "disables them under JUMBO_MIN_EVENTS_DISABLE. panda (JumboWatchDog.py, 1.0.4): never enables; disables; "
            "lifts priorities (JUMBO_PRIO_DISABLED, JUMBO_PROG_TO_BOOST); kicks tasks with no active jumbo job; "
            "gives back the inputs of tasks at priority 900 for real co-jumbo jobs.",
            _S002_JUMBO,
            choices=("seed", "panda"),
        ),
        # --- job generation (JEDI's JobGenerator, per work queue: NTASKS_MC_16) ---
        parameter(
            "NTASKS",
            "jobgen",
            "int",
            50,
            "tasks",
            "The tasks a job-generation cycle takes for each resource type of a work queue (NTASKS_<work queue>; "
            "the unsuffixed row stands for JEDI's jobgen.nTasks of panda_jedi.cfg).",
            _PANDA_JOBGEN,
            suffix="workqueue",
            minimum=1,
        ),
        # --- job throttler (per work queue, optionally per resource type: NQUEUELIMIT_MC_16_SCORE) ---
        parameter(
            "SHARE_ALLOCATION_RULE",
            "prod_job_throttler",
            "str",
            "seed",
            "",
            "Whether job generation holds back a share running over its part of the grid. seed: each leaf global "
            "share and throttled work queue gets its share of the HS06 its pool executes, idle shares lent to "
            "stretchable work queues first; one over its target gets no new jobs while another one below its own "
            "has jobs waiting for a pilot. panda (JobGenerator, JobThrottlerBase, 1.0.4): no allocation at "
            "generation, shares are only served in getJob's order.",
            "seed 002, Shares",
            choices=("seed", "panda"),
        ),
        parameter(
            "THROTTLE_THRESHOLD",
            "prod_job_throttler",
            "float",
            2.0,
            "ratio",
            "Queued jobs may reach this many times the running ones before job generation is skipped.",
            _S002_THROTTLE,
            minimum=0,
        ),
        parameter(
            "THROTTLE_THRESHOLD_FOR_WORK_SHORTAGE",
            "prod_job_throttler",
            "float",
            None,
            "ratio",
            "The threshold while WORK_SHORTAGE is on; unset means 2.0 (panda-server 1.0.4's JobThrottlerBase).",
            _S002_THROTTLE,
            minimum=0,
        ),
        parameter(
            "NQUEUELIMIT",
            "prod_job_throttler",
            "int",
            None,
            "jobs",
            "Queue limit of a work queue (NQUEUELIMIT_<work queue>[_<resource type>]); unset: 4 bunches of jobs.",
            _S002_THROTTLE,
            suffix="workqueue",
            suffix_only=True,
            minimum=0,
        ),
        parameter(
            "NQUEUECAP",
            "prod_job_throttler",
            "int",
            None,
            "jobs",
            "Most jobs a work queue may hold queued (NQUEUECAP_<work queue>[_<resource type>]); a fifth of it "
            "may be generated per cycle.",
            _S002_THROTTLE,
            suffix="workqueue",
            suffix_only=True,
            minimum=0,
        ),
        parameter(
            "NRUNNINGCAP",
            "prod_job_throttler",
            "int",
            None,
            "jobs",
            "Above this many running jobs no job is generated for the work queue (NRUNNINGCAP_<work queue>…).",
            _S002_THROTTLE,
            suffix="workqueue",
            suffix_only=True,
            minimum=0,
        ),
        # --- DIRAC task-queue matching (seed 003; profile `dirac` = dirac 9.1.22 TaskQueueDB and Matcher) ---
        parameter(
            "DIRAC_TQ_ORDER",
            "matcher",
            "str",
            "seed",
            "",
            "How the Matcher orders matching task queues. seed: the highest CPU time first, then the smallest "
            "RAND()/priority among those. dirac (TaskQueueDB.matchAndGetJob): no CPU ordering; every matching queue "
            "by RAND()/Priority, the first ten tried in turn, the first with a waiting job wins, three tries.",
            _S003_MATCH,
            app="dirac",
            choices=("seed", "dirac"),
        ),
        parameter(
            "DIRAC_JOBS_PER_TRY",
            "matcher",
            "int",
            10,
            "jobs",
            "The first jobs by id (of the drawn user priority) one is picked from at random: 10 in seed 003, 50 in "
            "DIRAC v9 (numJobsPerTry).",
            _S003_MATCH,
            app="dirac",
            minimum=1,
        ),
        parameter(
            "DIRAC_MATCH_SETUP_PILOT_TYPE",
            "matcher",
            "bool",
            True,
            "",
            "Setup and pilot types are task-queue requirements (seed 003). DIRAC v9 has neither: off matches "
            "without them.",
            _S003_MATCH,
            app="dirac",
        ),
        parameter(
            "DIRAC_ABSENT_CE_PLATFORM",
            "matcher",
            "str",
            "seed",
            "",
            "A resource that sends no GridCE or no Platform. seed: a task queue requiring CEs or platforms does not "
            "match it. dirac (TaskQueueDB.__generateTQMatchSQL, `if not fv: continue`): no condition is added.",
            _S003_MATCH,
            app="dirac",
            choices=("seed", "dirac"),
        ),
        parameter(
            "DIRAC_GENERIC_PILOT_VO",
            "matcher",
            "bool",
            False,
            "",
            "A generic pilot (no owner, no group) that names its VO takes only jobs of that VO's groups "
            "(Matcher._checkCredentials). Off: seed 003's generic pilot takes any owner's jobs.",
            _S003_MATCH,
            app="dirac",
        ),
        parameter(
            "DIRAC_PRIORITY_AVERAGE",
            "matcher",
            "str",
            "user",
            "",
            "What a task queue's priority averages over its waiting jobs: user = their user priorities (REFERENCE.md), "
            "real = their RealPriorities, 0 → 1e-5 and 10 → 1e6 (TaskQueueDB.__setPrioritiesForEntity).",
            _DIRAC_TQDB,
            app="dirac",
            choices=("user", "real"),
        ),
        parameter(
            "DIRAC_SPLIT_JOB_SHARING",
            "matcher",
            "bool",
            True,
            "",
            "A JobSharing group's share is split among its owners like any group's (REFERENCE.md). Off: the group is "
            "one entity with its whole share (TaskQueueDB.recalculateTQSharesForEntity).",
            _DIRAC_TQDB,
            app="dirac",
        ),
        parameter(
            "DIRAC_PRIORITY_GROUPING",
            "matcher",
            "bool",
            False,
            "",
            "Task queues of one owner that differ only in sites, banned sites or RAM all get the sum of their "
            "priorities (TaskQueueDB.calculate_priority). Off: each keeps its own.",
            _DIRAC_TQDB,
            app="dirac",
        ),
        # --- CMS WMCore work-queue pull (seed 004) ---
        parameter(
            "WMCORE_MAX_JOBS_PER_OWNER",
            "workqueue",
            "int",
            15000,
            "jobs",
            "The schedd's MAX_JOBS_PER_OWNER: with WMCORE_SCHEDD_FRACTION it caps the jobs an agent keeps in the "
            "pool; at the cap no work is pulled and no job submitted. Set it to the schedd's own value.",
            _S004_PRIORITY,
            app="wmcore",
            minimum=0,
        ),
        parameter(
            "WMCORE_SCHEDD_FRACTION",
            "workqueue",
            "float",
            0.75,
            "",
            "The factor of MAX_JOBS_PER_OWNER an agent may use (WMCore's condor fraction).",
            _S004_PRIORITY,
            app="wmcore",
            minimum=0,
            maximum=1,
        ),
        parameter(
            "WMCORE_OVERFLOW_FRACTION",
            "jobsubmitter",
            "float",
            0.2,
            "",
            "A job of higher priority than every job of its type at a site may exceed the site's pending "
            "thresholds by this fraction of the pending slots (seed 004: 20 %, configurable).",
            _S004_PRIORITY,
            app="wmcore",
            minimum=0,
            maximum=10,
        ),
        parameter(
            "WMCORE_CACHE_REFRESH_SIZE",
            "jobsubmitter",
            "int",
            30000,
            "jobs",
            "The JobSubmitter cache is refilled from WMBS while it holds fewer jobs than this.",
            _S004_CACHE,
            app="wmcore",
            minimum=0,
        ),
        parameter(
            "WMCORE_CACHE_REFRESH_MINUTES",
            "jobsubmitter",
            "int",
            20,
            "minutes",
            "A full cache is refreshed anyway when its last refresh is this old.",
            _S004_CACHE,
            app="wmcore",
            minimum=0,
        ),
        parameter(
            "WMCORE_MAX_JOBS_TO_CACHE",
            "jobsubmitter",
            "int",
            50000,
            "jobs",
            "The most created jobs one refresh reads from WMBS (WMCore's maxJobsToCache).",
            _S004_CACHE,
            app="wmcore",
            minimum=1,
        ),
        parameter(
            "WMCORE_MAX_JOBS_PER_POLL",
            "jobsubmitter",
            "int",
            1000,
            "jobs",
            "The most jobs one submitter cycle hands to the pool (WMCore's maxJobsPerPoll).",
            _S004_CACHE,
            app="wmcore",
            minimum=0,
        ),
        # --- where wmagent 2.4.5.9 departs from seed 004 (profile `wmcore`) ---
        parameter(
            "WMCORE_FREE_SLOTS",
            "workqueue",
            "str",
            "seed",
            "",
            "A site's threshold in a pull. seed: pullWork pending + running slots, getWork pending + running slots "
            "minus the jobs running there. wmcore (WMBSHelper.freeSlots): the pending slots, × WMCORE_QUEUE_DEPTH "
            "for pullWork; getWork does not subtract running jobs.",
            _S004_GQ_LQ,
            app="wmcore",
            choices=("seed", "wmcore"),
        ),
        parameter(
            "WMCORE_QUEUE_DEPTH",
            "workqueue",
            "float",
            1.0,
            "",
            "WorkQueue's QueueDepth: pullWork's multiplier of each site's pending slots (WMCORE_FREE_SLOTS wmcore).",
            _S004_GQ_LQ,
            app="wmcore",
            minimum=0,
        ),
        parameter(
            "WMCORE_PULL_COUNTS",
            "workqueue",
            "str",
            "seed",
            "",
            "What pullWork counts at a site. seed: the jobs of elements the agent acquired and has not started, and "
            "its WMBS jobs not finished. wmcore (WorkQueue.freeResouceCheck): only the local queue's Available "
            "elements, placed by the same match against the pull's thresholds (calculateAvailableWork).",
            _S004_GQ_LQ,
            app="wmcore",
            choices=("seed", "wmcore"),
        ),
        parameter(
            "WMCORE_AVAILABLE_ORDER",
            "workqueue",
            "str",
            "seed",
            "",
            "The order a pull considers elements. seed: priority, then creation time, over all. wmcore "
            "(WorkQueueBackend.availableWork): the availableByPriority view (priority, then document id, both "
            "descending) read in slices of WMCORE_ROWS_PER_SLICE rows, each slice sorted by priority then creation "
            "time; rows past WMCORE_MAX_ROWS_PER_CYCLE are not read.",
            _S004_GQ_LQ,
            app="wmcore",
            choices=("seed", "wmcore"),
        ),
        parameter(
            "WMCORE_ROWS_PER_SLICE",
            "workqueue",
            "int",
            2500,
            "elements",
            "WorkQueue's RowsPerSlice: rows of the view read at a time (WMCORE_AVAILABLE_ORDER wmcore).",
            _S004_GQ_LQ,
            app="wmcore",
            minimum=1,
        ),
        parameter(
            "WMCORE_MAX_ROWS_PER_CYCLE",
            "workqueue",
            "int",
            50000,
            "elements",
            "WorkQueue's MaxRowsPerCycle: whole slices read per pull at most (WMCORE_AVAILABLE_ORDER wmcore).",
            _S004_GQ_LQ,
            app="wmcore",
            minimum=1,
        ),
        parameter(
            "WMCORE_WORK_PER_CYCLE",
            "workqueue",
            "int",
            0,
            "elements",
            "WorkQueue's WorkPerCycle: the most elements one pullWork or getWork takes; 0: no cap (the seed's).",
            _S004_GQ_LQ,
            app="wmcore",
            minimum=0,
        ),
        parameter(
            "WMCORE_SITE_RULE",
            "workqueue",
            "str",
            "seed",
            "",
            "Which sites an element may use. seed: the whitelist (empty: any site) minus the blacklist, within the "
            "sites of its data. wmcore (possibleSites and workRestrictions.js): an empty whitelist gives no site; an "
            "element passes when one site holds all its blocks and pileup, then any site holding one of them may "
            "take it; with both trust flags the whitelist as it is, blacklist not removed; parents only with "
            "ParentFlag.",
            _S004_GQ_LQ,
            app="wmcore",
            choices=("seed", "wmcore"),
        ),
        parameter(
            "WMCORE_PULL_SCHEDD_FRACTION",
            "workqueue",
            "float",
            0.75,
            "",
            'The factor of MAX_JOBS_PER_OWNER below which pullWork pulls (the seed\'s "some factor", as the '
            "JobSubmitter's); WorkQueueManagerWorkPoller calls availableScheddSlots with 1.0.",
            _S004_PRIORITY,
            app="wmcore",
            minimum=0,
            maximum=1,
        ),
        parameter(
            "WMCORE_TASK_PRIORITY",
            "jobsubmitter",
            "bool",
            False,
            "",
            "The JobSubmitter orders jobs by task-type priority × 10^7 + workflow priority (wmbs_sub_types: "
            "Harvesting 5, Merge 4, Skim 3, LogCollect 2, Cleanup 1, Processing and Production 0); off: the "
            "workflow priority alone (the seed).",
            _S004_CACHE,
            app="wmcore",
        ),
        parameter(
            "WMCORE_MERGE_IGNORES_PENDING",
            "jobsubmitter",
            "bool",
            False,
            "",
            "Merge jobs are not stopped by the site's total pending slots (NoPendingSlot), as in the 2.4.5.9 release "
            "(the git head has dropped it).",
            _S004_CACHE,
            app="wmcore",
        ),
        parameter(
            "WMCORE_SUBMIT_LOCATIONS",
            "jobsubmitter",
            "str",
            "seed",
            "",
            "Where a cached job may go. seed: Down/Aborted sites dropped (the job waits when none is left), draining "
            "sites dropped when another is left. wmcore (refreshCache): no site fails the job (71101), only "
            "Down/Aborted sites fail it (71102); a non-I/O job with only draining sites is not cached while the "
            "agent has a site draining for less than WMCORE_DRAIN_GRACE_HOURS, and fails (71103) after; a site the "
            "agent does not know counts as not draining.",
            _S004_CACHE,
            app="wmcore",
            choices=("seed", "wmcore"),
        ),
        parameter(
            "WMCORE_DRAIN_GRACE_HOURS",
            "jobsubmitter",
            "float",
            48.0,
            "hours",
            "JobSubmitterPoller's drainGracePeriod (WMCORE_SUBMIT_LOCATIONS wmcore).",
            _S004_CACHE,
            app="wmcore",
            minimum=0,
        ),
    ]
)


# Resolved plain values per (registry, vo, profile, rows): the resolution is a pure function of these. Bounded: a
# process that sees many distinct configurations (what-if sweeps) starts over rather than growing.
_RESOLUTIONS: dict[tuple, dict[str, Any]] = {}
_RESOLUTIONS_MAX = 256


def _shared_resolutions(registry: Registry, vo: str, profile: str, rows: dict[tuple[str, str], Any]) -> dict[str, Any]:
    key = (registry, vo, profile, repr(sorted(rows.items())) if rows else "")
    found = _RESOLUTIONS.get(key)
    if found is None:
        if len(_RESOLUTIONS) >= _RESOLUTIONS_MAX:
            _RESOLUTIONS.clear()
        found = _RESOLUTIONS[key] = {}
    return found


class ConfigView:
    """Resolves parameters over stored rows: a VO row over a VO-less row, KEY_<gshare|workflow> over KEY,
    a stored value over the default.

    `rows` maps (key, vo) → typed value, with vo "" for rows that apply to every VO. A scenario's flat
    `gdpconfig` object is the same thing with every vo "" (see `from_flat`).
    """

    def __init__(
        self,
        rows: Mapping[tuple[str, str], Any],
        *,
        vo: str = "",
        registry: Registry = REGISTRY,
        profile: str | None = None,
    ):
        self._rows = dict(rows)
        self.vo = vo
        self.registry = registry
        if profile is None:
            profile = self._stored("PROFILE")[1] or DEFAULT_PROFILE
        if profile not in PROFILES:
            raise InvalidValue("PROFILE", "str", profile, "expected one of " + ", ".join(PROFILE_NAMES))
        # The profile layer: its values apply where no row is stored (profiles.py).
        self.profile = profile
        self._profile_values = PROFILES[profile].values
        # get() without a suffix, resolved once per key and shared by every view over the same rows and profile:
        # a decision reads some sixty keys, and each scenario parsed builds its own view over the same few rows
        self._plain: dict[str, Any] = _shared_resolutions(registry, vo, profile, self._rows)

    @classmethod
    def from_flat(
        cls, values: Mapping[str, Any], *, registry: Registry = REGISTRY, profile: str | None = None
    ) -> ConfigView:
        """A view over a flat KEY → value object (scenario files); each value is parsed and checked. `profile`
        (else the object's own PROFILE, else seed) supplies the values the object does not set."""
        rows: dict[tuple[str, str], Any] = {}
        for key, raw in values.items():
            found = registry.find(key)
            if found is None:
                raise UnknownParameter(key)
            rows[(key, "")] = found[0].parse(raw, key)
        return cls(rows, registry=registry, profile=profile)

    def _stored(self, key: str) -> tuple[bool, Any]:
        for vo in (self.vo, "") if self.vo else ("",):
            if (key, vo) in self._rows:
                return True, self._rows[(key, vo)]
        return False, None

    def get(
        self, key: str, *, gshare: str | None = None, workflow: str | None = None, workqueue: str | None = None
    ) -> Any:
        """The effective value of a registered key (UnknownParameter for any other)."""
        if gshare is None and workflow is None and workqueue is None:
            try:
                return self._plain[key]
            except KeyError:
                value = self._plain[key] = self.explain(key)[0]
                return value
        return self.explain(key, gshare=gshare, workflow=workflow, workqueue=workqueue)[0]

    def explain(
        self, key: str, *, gshare: str | None = None, workflow: str | None = None, workqueue: str | None = None
    ) -> tuple[Any, str]:
        """The effective value and where it came from: the stored key that won, or 'default'. A work queue
        suffix may name a resource type too ("MC_16_SCORE"), then the work queue alone ("MC_16") is tried next,
        as JEDI's throttler does."""
        parameter = self.registry.get(key)
        suffix_value = {"gshare": gshare, "workflow": workflow, "workqueue": workqueue}.get(parameter.suffix or "")
        if suffix_value:
            tries = [suffix_value]
            if parameter.suffix == "workqueue":
                tries += [suffix_value[: -len(rt) - 1] for rt in RESOURCE_TYPES if suffix_value.endswith("_" + rt)]
            for suffix in tries:
                specific = f"{key}_{suffix}"
                found, value = self._stored(specific)
                if found:
                    return value, specific
        if parameter.suffix_only:
            return None, "unset"
        found, value = self._stored(key)
        if found:
            return value, key
        if key in self._profile_values and key != "PROFILE":
            return self._profile_values[key], f"profile {self.profile}"
        if key == "PROFILE":
            return self.profile, "default" if self.profile == DEFAULT_PROFILE else "profile"
        if parameter.derived_default is not None:
            return parameter.derived_default(lambda other: self.get(other)), "default"
        return parameter.default, "default"

    def stored_custom(self) -> dict[str, Any]:
        """Stored keys the registry does not know (admins may add them with the custom flag)."""
        return {
            key: value for (key, vo), value in self._rows.items() if key not in self.registry and vo in ("", self.vo)
        }

    def as_flat(self, *, gshares: tuple[str, ...] = (), workflows: tuple[str, ...] = ()) -> dict[str, Any]:
        """Every effective value, plus the per-gshare/workflow variants asked for: what a cycle records."""
        flat: dict[str, Any] = {}
        for parameter in self.registry:
            if not parameter.suffix_only:
                flat[parameter.key] = self.get(parameter.key)
            names = gshares if parameter.suffix == "gshare" else workflows if parameter.suffix == "workflow" else ()
            for name in names:
                value, origin = self.explain(parameter.key, gshare=name, workflow=name)
                if origin != "default" and origin != parameter.key:
                    flat[f"{parameter.key}_{name}"] = value
        # work queue limits are few and named by the admin: every stored one is kept
        for key, vo in self._rows:
            found = self.registry.find(key)
            if found is not None and found[0].suffix == "workqueue" and found[1] and vo in ("", self.vo):
                flat[key] = self._stored(key)[1]
        flat.update(self.stored_custom())
        flat["PROFILE"] = self.profile  # the profile in force, also when the view was built with another one
        return flat
