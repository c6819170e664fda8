"""Scenarios for production task brokerage, built from the database.

The grid part (grid.grid_base: nuclei, storage endpoints, network, and the queues with their statistics, which
the job check reads) is read once per cycle and shared by every task's scenario; the task part (tasks, their
input datasets, the replicas of those datasets, the first job of each task, the remaining work per nucleus) is
read for all the cycle's tasks at once (five queries, six when tasks have parents), whatever their number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from typing import Any

from django.db.models import F, FloatField, OuterRef, Q, QuerySet, Subquery, Sum, Value, Window
from django.db.models.functions import Coalesce, Greatest, RowNumber

from brokerage.adapters import grid
from brokerage.adapters.grid import over_base
from brokerage.engine import Scenario, parse_scenario
from brokerage.jumbo import jumbo_jobs_asked
from brokerage.models import (
    Dataset,
    DatasetFile,
    DatasetReplica,
    Task,
)
from brokerage.splitter import job_set_summary, task_chunks

PLUGIN = "atlas_prod_task"
TASK_FIELDS = (
    "jediTaskID",
    "taskPriority",
    "currentPriority",
    "processingType",
    "prodSourceLabel",
    "gshare",
    "coreCount",
    "ramCount",
    "ramUnit",
    "baseRamCount",
    "outDiskCount",
    "outDiskUnit",
    "workDiskCount",
    "workDiskUnit",
    "ioIntensity",
    "diskIO",
    "cpuTime",
    "cpuEfficiency",
    "baseWalltime",
    "architecture",
    "transUses",
    "transHome",
    "userName",
    "workingGroup",
    "vo",
    "parent_id",
    "taskParams",
    "site",
    "eventService",
)
TASK_PARAMETERS = (
    "t1Weight",
    "fullChain",
    "ipConnectivity",
    "taskBrokerOnMaster",
    "inputPreStaging",
    "onlyTagsForFC",
    "maxCoreCount",
    "outputEndpointType",
)

# What job brokerage reads on top, the task broker's job check included.
JOB_TASK_PARAMETERS = (
    *TASK_PARAMETERS,
    "includedSite",
    "excludedSite",
    "avoidVP",
    "nEventsPerJob",
    "nFilesPerJob",
    "allowInputLAN",
    "container_name",
    # event service: the task parameters JEDI turns into the split rules nEsConsumers and maxAttemptEsJob
    "nEsConsumers",
    "maxAttemptEsJob",
)
# The first job of a task, which the job check sizes, comes from at most this many of its master files.
FIRST_JOB_FILES = 100


def jumbo_values(*, use_jumbo: str, params: dict, site: str) -> dict[str, Any]:
    """The scenario's nJumboJobs, for a task whose jumbo jobs are on (brokerage.jumbo.jumbo_jobs_asked); nothing
    otherwise."""
    asked = jumbo_jobs_asked(use_jumbo=use_jumbo or "", params=params, site=site)
    return {"nJumboJobs": asked} if asked else {}


def task_values(row: dict[str, Any]) -> dict[str, Any]:
    """A task row's set values in the scenario's types (JEDI keeps eventService as a number)."""
    values = {key: value for key, value in row.items() if value is not None}
    if "eventService" in values:
        values["eventService"] = bool(values["eventService"])
    return values


def grid_base(*, now: datetime, gdpconfig: dict[str, Any]) -> Scenario:
    """The scenario part every task of a cycle shares (grid.grid_base: eleven queries)."""
    return grid.grid_base(now=now, gdpconfig=gdpconfig, plugin=PLUGIN)


def task_scenarios(*, task_ids: list[int], base: Scenario, seed_of) -> dict[int, Scenario]:
    """One scenario per task over the shared `base` (a few queries for all tasks), each on the grid as it is."""
    return {task_id: scenario for task_id, scenario, _ in task_scenarios_live(task_ids=task_ids, base=base,
                                                                             seed_of=seed_of)}  # fmt: skip


def task_scenarios_live(
    *, task_ids: list[int], base: Scenario, seed_of
) -> Iterator[tuple[int, Scenario, Callable[[str], None]]]:
    """The scenarios of a cycle's tasks in the order given, each made when asked for, with a callback to say the
    task went to a nucleus: its own remaining work then counts in that nucleus's RW for the tasks after it of equal
    or lower priority in its share, as AtlasProdTaskBroker's live RW table does within a batch (1.0.4, lines
    610-620). The same few queries for all tasks."""
    tasks = {row["jediTaskID"]: row for row in Task.objects.filter(pk__in=task_ids).values(*TASK_FIELDS, "useJumbo")}
    parents = dict(
        Task.objects.filter(pk__in={t["parent_id"] for t in tasks.values() if t["parent_id"]}).values_list(
            "jediTaskID", "nucleus"
        )
    )
    datasets: dict[int, list[dict]] = {}
    names = set()
    for row in Dataset.objects.filter(task_id__in=task_ids, type__in=("input", "pseudo_input")).values(
        "task_id", "datasetName", "master_id", "nFiles", "datasetID"
    ):
        datasets.setdefault(row["task_id"], []).append(row)
        names.add(row["datasetName"])
    replicas: dict[str, dict[str, dict]] = {}
    for row in DatasetReplica.objects.filter(datasetName__in=names).values(
        "datasetName", "endpoint__name", "nFiles", "sizeGB"
    ):
        replicas.setdefault(row["datasetName"], {})[row["endpoint__name"]] = {
            "nFiles": row["nFiles"],
            "sizeGB": row["sizeGB"],
        }
    work = remaining_work_rows()
    own_work = dict(_task_work(Task.objects.filter(pk__in=task_ids)).values_list("pk", "work"))
    first_files = _first_files(task_ids)
    bare = {name: site.bareNucleus for name, site in base.sites.items()}
    for task_id in [pk for pk in task_ids if pk in tasks]:
        task = tasks[task_id]
        first = task_chunks(task, first_files.get(task_id, []), {}, 1)
        # AtlasProdTaskBroker's input chunk is read with readMinFiles, never as scouts (task_complex_module 1.0.4)
        jobs = job_set_summary(first, scouts=False, task=task) if first else {}
        params = task.pop("taskParams") or {}
        parent_id = task.pop("parent_id")
        use_jumbo = task.pop("useJumbo")
        spec = task_values(task)
        spec.update({key: params[key] for key in JOB_TASK_PARAMETERS if key in params})
        spec.update(jumbo_values(use_jumbo=use_jumbo, params=params, site=task["site"] or ""))
        if parent_id in parents:
            spec["parentNucleus"] = parents[parent_id] or ""
            spec["parentBareNucleus"] = bare.get(parents[parent_id] or "", "")
        data_rows = datasets.get(task_id, [])
        data = [
            {
                "name": row["datasetName"],
                "master": row["master_id"] is None,
                "nFiles": row["nFiles"],
                # a dataset's size is that of its most complete replica
                "sizeGB": max((r["sizeGB"] for r in replicas.get(row["datasetName"], {}).values()), default=0.0),
                "replicas": replicas.get(row["datasetName"], {}),
            }
            for row in data_rows
        ]
        rw = remaining_work_by_nucleus(work, priority=task["currentPriority"], gshare=task["gshare"])
        parsed = parse_scenario(
            {
                "plugin": PLUGIN,
                "now": base.now.isoformat(),
                "seed": seed_of(task_id),
                "task": spec,
                "jobs": jobs,
                "datasets": data,
                "nucleus_stats": {name: {"rw": value} for name, value in rw.items()},
            }
        )
        row = (task["gshare"], task["currentPriority"], float(own_work.get(task_id) or 0.0))
        yield task_id, over_base(parsed, base), partial(_work_add, work, row)


def _work_add(work: list[tuple[str, str, int, float]], row: tuple[str, int, float], nucleus: str) -> None:
    gshare, priority, amount = row
    work.append((nucleus, gshare, priority, amount))


def first_usable_files(files: QuerySet, *, per_task: int) -> QuerySet:
    """The first `per_task` of `files` per task, in file order, that jobs can still use: ready files, and files
    partly given out at event level (picked, running or partial, with events)."""
    return (
        files.filter(Q(status="ready") | Q(status__in=("picked", "running", "partial"), nEvents__isnull=False))
        .annotate(position=Window(RowNumber(), partition_by=[F("task_id")], order_by=F("fileID").asc()))
        .filter(position__lte=per_task)
    )


def _first_files(task_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The first FIRST_JOB_FILES usable files of each task's master input dataset (one query)."""
    files: dict[int, list[dict[str, Any]]] = {}
    masters = DatasetFile.objects.filter(
        task_id__in=task_ids, dataset__type__in=("input", "pseudo_input"), dataset__master__isnull=True
    )
    for row in first_usable_files(masters, per_task=FIRST_JOB_FILES).values(
        "fileID", "task_id", "fsize", "nEvents", "status"
    ):
        files.setdefault(row["task_id"], []).append(row)
    return files


# REFERENCE.md: RW counts the tasks in ready, scouting, running or pending.
RW_STATUSES = ("ready", "scouting", "running", "pending")


def remaining_work_rows() -> list[tuple[str, str, int, float]]:
    """(nucleus, gshare, currentPriority, RW in HS06 s) over the tasks assigned to a nucleus and in RW_STATUSES
    (REFERENCE.md): each task contributes max(0, nEvents − nEventsUsed) of its master inputs × cpuTime. One query."""
    rows = (
        _task_work(Task.objects.filter(status__in=RW_STATUSES).exclude(nucleus=""))
        .values("nucleus", "gshare", "currentPriority")
        .annotate(rw=Sum("work"))
        .values_list("nucleus", "gshare", "currentPriority", "rw")
    )
    return [(nucleus, gshare, priority, float(rw or 0.0)) for nucleus, gshare, priority, rw in rows]


def _task_work(tasks: QuerySet) -> QuerySet:
    """The tasks, each annotated with its remaining work `work` in HS06 s: max(0, nEvents − nEventsUsed) of its
    master inputs × cpuTime (calculateTaskWorldRW_JEDI, 1.0.4)."""
    remaining_events = (
        Dataset.objects.filter(task=OuterRef("pk"), type__in=("input", "pseudo_input"), master__isnull=True)
        .values("task")
        # a dataset whose nEvents is unknown (0) or behind its files' events has nothing left, never a negative
        # amount: the engine refuses a negative RW, and one such dataset would hide the others' work
        .annotate(left=Sum(Greatest(Coalesce(F("nEvents"), 0) - Coalesce(F("nEventsUsed"), 0), 0)))
        .values("left")
    )
    return tasks.annotate(
        work=Coalesce(Subquery(remaining_events), 0, output_field=FloatField())
        * Coalesce(F("cpuTime"), Value(0), output_field=FloatField())
    )


def remaining_work_by_nucleus(
    rows: list[tuple[str, str, int, float]], *, priority: int, gshare: str
) -> dict[str, float]:
    """RW per nucleus for a task of `priority` in `gshare`: the work of equal or higher priority, same gshare."""
    result: dict[str, float] = {}
    for nucleus, row_gshare, row_priority, amount in rows:
        if row_gshare == gshare and row_priority >= priority:
            result[nucleus] = result.get(nucleus, 0.0) + amount
    return result
