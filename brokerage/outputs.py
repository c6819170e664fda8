"""The output side of a task (seed 002: "Output dataset registration", "Naming of output file", the JEDI_Output_Template
and JEDI_JobParams_Template tables, the output dataset and output file statuses): plain rules, no database.

A task's outputs come from its task parameters in JEDI's own form when it has them (`jobParameters` entries of type
"template" with param_type "output", and `log`, as panda-client and DEFT write them), else from defaults: one output
dataset of the type its processingType makes and one log dataset. Every job takes the next serial number of each
template (option B of seed 002, "adopted after discussion in ADC meeting"), and its file names are the template's
with the serial number in (JEDI's JediDBProxy, 1.0.4: `${SN}` and `${SN/P}` are six digits, `$JEDITASKID` the
task's ID).

An output file follows its job (FILE_FOLLOWS_JOB): defined when the job is made, running while it runs, prepared
once produced (the job holding, transferring its outputs, or merging), merging while a merge job takes it, finished
when its job (or its merge job) finished, failed when its job or its merge failed. Output datasets follow their
task: defined when refined, ready once registered (the task ready for jobs: "JEDI or DEFT registers output datasets
when tasks are activated"), running once files are added, prepared with the task, done when the task ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The file type a production step makes, by processingType (ATLAS's data formats); a step not listed makes DAOD
OUTPUT_TYPE_OF_STEP = {
    "evgen": "EVNT",
    "simul": "HITS",
    "pile": "RDO",
    "reco": "AOD",
    "deriv": "DAOD",
    "merge": "AOD",
}
DEFAULT_OUTPUT_TYPE = "DAOD"
LOG_STREAM = "LOG"
# JEDI's default job parameters for a task that gives none (the transformation's ATLAS arguments)
DEFAULT_JOB_PARAMS = (
    "--inputFile=${IN} --outputFile=${OUTPUT0} --randomSeed=${RNDMSEED} --skipEvents=${SKIPEVENTS} "
    "--maxEvents=${MAXEVENTS}"
)
SERIAL_DIGITS = 6
_SERIAL = re.compile(r"\$\{SN(/P)?\}")
_PLACEHOLDER = re.compile(r"\$\{([A-Z0-9_]+)\}")

# What each job move does to the job's output files: (statuses the files may be in, the status they go to), one
# UPDATE; a move not listed leaves them. A file a job failed to produce, or whose merge failed, is failed (seed 002:
# "the file was not produced or failed to be merged"). Every pair is a move of the output-file machine.
_OPEN = ("defined", "running", "prepared", "merging")
FILE_FOLLOWS_JOB: dict[str, tuple[tuple[str, ...], str]] = {
    "running": (("defined",), "running"),
    "holding": (("defined", "running"), "prepared"),
    "transferring": (("defined", "running"), "prepared"),
    "merging": (("defined", "running"), "prepared"),
    "finished": (_OPEN, "finished"),
    "failed": (_OPEN, "failed"),
    "closed": (_OPEN, "failed"),
    "cancelled": (_OPEN, "failed"),
}
# taken by a merge job (services.merging): the produced pre-merged files are being merged
MERGE_TAKES = (("prepared",), "merging")
# an output file not yet finished or failed: its task is not done while one is (services.progress)
OUTPUT_FILES_OPEN = _OPEN


@dataclass(frozen=True)
class OutputSpec:
    """One output or log dataset of a task and the template of its files."""

    dataset_name: str
    container_name: str
    file_type: str  # output or log
    template: str
    stream: str  # OUTPUT0, OUTPUT1…, LOG: the placeholder in the job parameters
    source_name: str = ""


def output_type_of(processing_type: str) -> str:
    return OUTPUT_TYPE_OF_STEP.get((processing_type or "").lower(), DEFAULT_OUTPUT_TYPE)


def _task_name_base(task_name: str) -> str:
    return task_name.rstrip("/")


def task_outputs(*, task_id: int, task_name: str, processing_type: str, params: dict[str, Any]) -> list[OutputSpec]:
    """The output and log datasets of a task: from its parameters in JEDI's form, else the defaults (module
    docstring). Names longer than the columns are cut (a dataset name 255, a container 132)."""
    specs: list[OutputSpec] = []
    for entry in params.get("jobParameters") or ():
        if not isinstance(entry, dict) or entry.get("type") != "template" or entry.get("param_type") != "output":
            continue
        value = str(entry.get("value") or "")
        template = value.partition("=")[2] if "=" in value else value
        dataset = str(entry.get("dataset") or "").rstrip("/") or f"{_task_name_base(task_name)}.output"
        if not template or not _SERIAL.search(template):
            continue
        specs.append(
            OutputSpec(
                dataset_name=dataset[:255],
                container_name=str(entry.get("container") or "").rstrip("/")[:132],
                file_type="output",
                template=template.replace("$JEDITASKID", str(task_id))[:256],
                stream=f"OUTPUT{len(specs)}",
                source_name=value.partition("=")[0] if "=" in value else "",
            )
        )
    if not specs:
        kind = output_type_of(processing_type)
        base = _task_name_base(task_name)
        specs.append(
            OutputSpec(
                dataset_name=f"{base}.{kind}_tid{task_id:08d}_00"[:255],
                container_name=f"{base}.{kind}"[:132],
                file_type="output",
                template=f"{kind}.{task_id:08d}._${{SN}}.pool.root",
                stream="OUTPUT0",
                source_name=f"{kind.lower()}.pool.root",
            )
        )
    log = params.get("log") if isinstance(params.get("log"), dict) else {}
    log_template = str(log.get("value") or "").replace("$JEDITASKID", str(task_id))
    if not _SERIAL.search(log_template):
        log_template = f"log.{task_id:08d}._${{SN}}.job.log.tgz"
    base = _task_name_base(task_name)
    specs.append(
        OutputSpec(
            dataset_name=(str(log.get("dataset") or "").rstrip("/") or f"{base}.log_tid{task_id:08d}_00")[:255],
            container_name=(str(log.get("container") or "").rstrip("/") or f"{base}.log")[:132],
            file_type="log",
            template=log_template[:256],
            stream=LOG_STREAM,
        )
    )
    return specs


def job_params_template(params: dict[str, Any]) -> str:
    """The task's job parameters template: its `jobParameters` joined as JEDI joins them (a constant's value as it
    is, a template's as its placeholder), else DEFAULT_JOB_PARAMS."""
    parts: list[str] = []
    outputs = 0
    for entry in params.get("jobParameters") or ():
        if not isinstance(entry, dict):
            continue
        value = str(entry.get("value") or "")
        if entry.get("type") == "template" and entry.get("param_type") == "output":
            name = value.partition("=")[0] if "=" in value else ""
            parts.append(f"{name}=${{OUTPUT{outputs}}}" if name else f"${{OUTPUT{outputs}}}")
            outputs += 1
        elif entry.get("type") == "template" and entry.get("param_type") == "input":
            name = value.partition("=")[0] if "=" in value else ""
            parts.append(f"{name}=${{IN}}" if name else "${IN}")
        elif value:
            parts.append(value)
    return " ".join(parts) or DEFAULT_JOB_PARAMS


def file_name(template: str, serial: int) -> str:
    """A file name from its template and serial number (JEDI: `${SN}` and `${SN/P}` as six digits)."""
    return _SERIAL.sub(f"{serial:0{SERIAL_DIGITS}d}", template)


def job_parameters(template: str, values: dict[str, str]) -> str:
    """The template with the job's values in; a placeholder the job has no value for stays as it is, so that a
    shifter sees what was not filled."""
    return _PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), template)
