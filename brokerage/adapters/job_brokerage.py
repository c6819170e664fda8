"""Scenarios for production and analysis job brokerage, built from the database.

The grid part (grid.grid_base: sites, endpoints, network, queues with their storages, software tags, GPUs, the
per-queue job statistics) is read once per cycle and shared by every job set's scenario; a job set adds its task
and datasets, which the job-generation service has already read for all the cycle's tasks at once.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, F, Max, OuterRef, Q, Subquery, Sum, Value, Window
from django.db.models.functions import Coalesce, RowNumber

from brokerage.adapters.grid import (
    GRID_PARTS,
    USER_QUEUED,
    USER_RUNNING,
    grid_base,
    over_base,
)
from brokerage.adapters.task_brokerage import (
    JOB_TASK_PARAMETERS,
    TASK_FIELDS,
    first_usable_files,
    jumbo_values,
    task_values,
)
from brokerage.engine import Scenario, parse_scenario
from brokerage.models import (
    Dataset,
    DatasetFile,
    DatasetReplica,
    Event,
    Job,
    PandaQueue,
    Task,
    WorkQueue,
)
from brokerage.splitter import InputFile, SecondaryInput, job_set_summary, task_chunks
from brokerage.throttle import task_resource_type

PLUGIN = "atlas_prod_job"


def job_grid_base(*, now: datetime, gdpconfig: dict[str, Any]) -> Scenario:
    """The scenario part every job set of a cycle shares (grid.grid_base: eleven queries)."""
    return grid_base(now=now, gdpconfig=gdpconfig, plugin=PLUGIN)


def task_spec(task: dict[str, Any]) -> dict[str, Any]:
    """A task row (TASK_FIELDS + nucleus) as the scenario's task object, task parameters included."""
    params = task.get("taskParams") or {}
    spec = task_values(
        {
            key: value
            for key, value in task.items()
            if (key in TASK_FIELDS or key == "taskClass") and key not in ("taskParams", "parent_id")
        }
    )
    spec["nucleus"] = task.get("nucleus") or ""
    spec.update({key: params[key] for key in JOB_TASK_PARAMETERS if key in params})
    spec.update(jumbo_values(use_jumbo=task.get("useJumbo") or "", params=params, site=task.get("site") or ""))
    return spec


def job_set_scenario(
    *,
    base: Scenario,
    task: dict[str, Any],
    datasets: list[dict[str, Any]],
    jobs: dict[str, Any],
    seed: int,
    plugin: str = PLUGIN,
    user_stats: dict[str, Any] | None = None,
) -> Scenario:
    """One job set's scenario over the shared `base` (analysis job sets add their user_stats): no query."""
    parsed = parse_scenario(
        {
            "plugin": plugin,
            "now": base.now.isoformat(),
            "seed": seed,
            "task": task_spec(task),
            "jobs": jobs,
            "datasets": datasets,
            "user_stats": user_stats or {},
        }
    )
    return over_base(parsed, base, GRID_PARTS)


ANALYSIS_PLUGIN = "atlas_anal_job"
# before any decision: what the frozen clock compares a task's decisions with when none assigned
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _data_check_clock(*, task_ids: list[int], since: str) -> dict[int, datetime]:
    """When DATA_CHECK_TIMEOUT_USER starts counting for each task, from its stored analysis decisions (one query):
    `last_success` (seed 000), the task's last assigned decision, or its first decision when none was; `frozen`
    (panda-server's frozenTime), the first decision since then that did not assign. A task without a decision
    has no clock yet."""
    from brokerage.models import Decision, Task

    mine = Decision.objects.filter(task_id=OuterRef("pk"), plugin=ANALYSIS_PLUGIN)
    last_ok = mine.filter(outcome="assigned").order_by("-created").values("created")[:1]
    rows = Task.objects.filter(pk__in=task_ids).annotate(last_ok=Subquery(last_ok))
    if since == "frozen":
        after_ok = mine.exclude(outcome="assigned").filter(created__gt=Coalesce(OuterRef("last_ok"), Value(EPOCH)))
        clock = rows.annotate(clock=Subquery(after_ok.order_by("created").values("created")[:1]))
    else:
        first = mine.order_by("created").values("created")[:1]
        clock = rows.annotate(clock=Coalesce("last_ok", Subquery(first)))
    return {pk: moment for pk, moment in clock.values_list("pk", "clock") if moment}


def analysis_user_stats(
    *, now: datetime, task_ids: list[int], since: str = "last_success"
) -> dict[int, dict[str, Any]]:
    """`user_stats` for each analysis task (seed 000 analysis brokerage): the user's and the working group's
    running and queued jobs and cores, the user's jobs per queue, the task's finished, failed and closed jobs
    per queue, the user's running cores at hi-class queues, the hours DATA_CHECK_TIMEOUT_USER counts
    (`since`: DATA_CHECK_TIMEOUT_FROM, _data_check_clock), and the global shares' usage. Seven queries for all
    the tasks of a cycle."""
    # deferred import: selectors import models, and the adapters are imported by services at start-up
    from brokerage.adapters.shares import global_share_usage
    from brokerage.models import Task

    owners = {
        pk: (user, group)
        for pk, user, group in Task.objects.filter(pk__in=task_ids).values_list("pk", "userName", "workingGroup")
    }
    users = {user for user, _ in owners.values()}
    groups = {group for _, group in owners.values() if group}
    # the user's running cores at hi-class queues (seed 000: class A tasks are throttled on them)
    hi_queues = set(PandaQueue.objects.filter(siteClass="hi").values_list("name", flat=True))
    per_user: dict[str, dict[str, float]] = {}
    per_group: dict[str, dict[str, float]] = {}
    user_queues: dict[str, dict[str, dict[str, float]]] = {}
    for row in (
        Job.objects.filter(prodSourceLabel="user", jobStatus__in=USER_RUNNING + USER_QUEUED)
        .filter(Q(prodUserName__in=users) | Q(workingGroup__in=groups))
        .values("prodUserName", "workingGroup", "computingSite", "jobStatus")
        .annotate(jobs=Count("pk"), cores=Sum("coreCount"))
    ):
        running = row["jobStatus"] in USER_RUNNING
        counts = [(per_user, row["prodUserName"])] + ([(per_group, row["workingGroup"])] if row["workingGroup"] else [])
        for table, name in counts:
            entry = table.setdefault(name, {"running": 0, "queued": 0, "runningCores": 0, "queuedCores": 0})
            entry["running" if running else "queued"] += row["jobs"]
            entry["runningCores" if running else "queuedCores"] += row["cores"] or 0
        if running and row["computingSite"] in hi_queues:
            entry = per_user.setdefault(
                row["prodUserName"], {"running": 0, "queued": 0, "runningCores": 0, "queuedCores": 0}
            )
            entry["runningSlotsHiSites"] = entry.get("runningSlotsHiSites", 0) + (row["cores"] or 0)
        if row["computingSite"]:
            queue = user_queues.setdefault(row["prodUserName"], {}).setdefault(
                row["computingSite"], {"userQueued": 0, "userRunning": 0}
            )
            queue["userRunning" if running else "userQueued"] += row["jobs"]
    task_queues: dict[int, dict[str, dict[str, float]]] = {}
    last_success = _data_check_clock(task_ids=task_ids, since=since)
    outcome_key = {"finished": "taskFinished", "failed": "taskFailed", "closed": "taskClosed"}
    for row in (
        Job.objects.filter(task_id__in=task_ids, jobStatus__in=tuple(outcome_key))
        .values("task_id", "computingSite", "jobStatus")
        .annotate(jobs=Count("pk"))
    ):
        entry = task_queues.setdefault(row["task_id"], {}).setdefault(row["computingSite"], {})
        entry[outcome_key[row["jobStatus"]]] = row["jobs"]
    usage = {row["share"].name: row["usage"] for row in global_share_usage() if row["usage"] is not None}
    stats = {}
    for task_id, (user, group) in owners.items():
        queues = {name: dict(numbers) for name, numbers in user_queues.get(user, {}).items()}
        for name, numbers in task_queues.get(task_id, {}).items():
            queues.setdefault(name, {}).update(numbers)
        entry: dict[str, Any] = {
            "user": per_user.get(user, {}),
            "group": per_group.get(group, {}) if group else {},
            "gshareUsage": usage,
            "queues": queues,
        }
        if task_id in last_success:
            entry["hoursSinceLastSuccess"] = max((now - last_success[task_id]).total_seconds() / 3600, 0.0)
        stats[task_id] = entry
    return stats


# JEDI's default: 10 scout jobs (task parameter nScoutJobs); brokerage.services.scouting ends the scouting.
SCOUT_JOBS = 10


# The most jobs one job set gets, and the most ready files read per task per cycle.
JOBS_PER_SET = 100


FILES_PER_TASK = 1000


def job_set_inputs(
    task_ids: list[int],
) -> tuple[dict[int, dict], dict[int, list[dict]], dict[str, dict], dict[int, int]]:
    """Master input datasets, their replicas, the first FILES_PER_TASK usable files per task and the events
    already given out per file (four queries for any number of tasks)."""
    masters = {
        row["task_id"]: row
        for row in Dataset.objects.filter(task_id__in=task_ids, type__in=("input", "pseudo_input"), master__isnull=True)
        .order_by("datasetID")
        .values("datasetID", "task_id", "datasetName", "nFiles", "nFilesUsed", "status")
    }
    replicas: dict[str, dict] = defaultdict(dict)
    for name, endpoint, n_files, size in DatasetReplica.objects.filter(
        datasetName__in=[m["datasetName"] for m in masters.values()]
    ).values_list("datasetName", "endpoint__name", "nFiles", "sizeGB"):
        replicas[name][endpoint] = {"nFiles": n_files, "sizeGB": size}
    files: dict[int, list[dict]] = defaultdict(list)
    usable = first_usable_files(
        DatasetFile.objects.filter(dataset_id__in=[m["datasetID"] for m in masters.values()]), per_task=FILES_PER_TASK
    ).values("fileID", "task_id", "dataset_id", "fsize", "nEvents", "status", "attemptNr", "ramCount", "PandaID")
    for row in usable:
        files[row["task_id"]].append(row)
    # a cancelled or discarded range (a fake co-jumbo job given back, a killed ES job: its outputs never merged) is
    # cut again
    used = dict(
        Event.objects.filter(task_id__in=task_ids)
        .exclude(status__in=("cancelled", "discarded"))
        .values("file_id")
        .annotate(last=Max("def_max_eventID"))
        .values_list("file_id", "last")
    )
    return masters, files, replicas, {file_id: last + 1 for file_id, last in used.items()}


def job_set_secondaries(task_ids: list[int]) -> tuple[dict[int, list[SecondaryInput]], dict[int, list[dict]]]:
    """The secondary input datasets of the tasks (master set; seed 002 "Dataset attributes") as the splitter takes
    them (splitter.SecondaryInput: up to FILES_PER_TASK files each, the ready ones of a followed dataset, every
    file of a shared one) and as the brokerage's scenario lists them (name, master False, files, size, replicas).
    Three queries for any number of tasks, none more without secondaries."""
    datasets = list(
        Dataset.objects.filter(task_id__in=task_ids, type="input", master__isnull=False)
        .order_by("datasetID")
        .values("datasetID", "task_id", "datasetName", "nFiles", "attributes")
    )
    if not datasets:
        return {}, {}
    shared = {
        row["datasetID"]
        for row in datasets
        if not SecondaryInput(row["datasetID"], row["attributes"] or "", ()).followed
    }
    files: dict[int, list[InputFile]] = defaultdict(list)
    rows = (
        DatasetFile.objects.filter(dataset_id__in=[row["datasetID"] for row in datasets])
        .filter(Q(status="ready") | Q(dataset_id__in=shared))
        .annotate(position=Window(RowNumber(), partition_by=[F("dataset_id")], order_by=F("fileID").asc()))
        .filter(position__lte=FILES_PER_TASK)
        .values_list("dataset_id", "fileID", "fsize", "nEvents")
    )
    for dataset_id, file_id, size, events in rows:
        files[dataset_id].append(InputFile(file_id, size or 0, events))
    replicas: dict[str, dict] = defaultdict(dict)
    for name, endpoint, n_files, size in DatasetReplica.objects.filter(
        datasetName__in=[row["datasetName"] for row in datasets]
    ).values_list("datasetName", "endpoint__name", "nFiles", "sizeGB"):
        replicas[name][endpoint] = {"nFiles": n_files, "sizeGB": size}
    inputs: dict[int, list[SecondaryInput]] = defaultdict(list)
    listed: dict[int, list[dict]] = defaultdict(list)
    for row in datasets:
        found = replicas.get(row["datasetName"], {})
        inputs[row["task_id"]].append(
            SecondaryInput(row["datasetID"], row["attributes"] or "", tuple(files.get(row["datasetID"], ())))
        )
        listed[row["task_id"]].append(
            {
                "name": row["datasetName"],
                "master": False,
                "nFiles": row["nFiles"],
                "sizeGB": max((r["sizeGB"] for r in found.values()), default=0.0),
                "replicas": found,
            }
        )
    return inputs, listed


def job_set_task_rows(task_ids: list[int]) -> dict[int, dict]:
    fields = {
        *TASK_FIELDS, "nucleus", "status", "workDiskCount", "taskName", "workQueue_id", "splitRule", "taskClass",
        "useJumbo",
    }  # fmt: skip
    rows = {row["jediTaskID"]: row for row in Task.objects.filter(pk__in=task_ids).values(*fields)}
    for row in rows.values():
        row["resource_type"] = task_resource_type(
            core_count=row["coreCount"], ram_count=row["ramCount"], ram_unit=row["ramUnit"]
        )
    return rows


def job_set_preview_scenario(*, task_id: int, now: datetime, gdpconfig: dict[str, Any], seed: int = 0):
    """The scenario the task's next job set would be brokered with now (reads only): its next chunk of inputs,
    or, when nothing is left to split, a job set like its latest one. None when the task has neither."""
    tasks = job_set_task_rows([task_id])
    task = tasks.get(task_id)
    if task is None:
        return None
    work_queue = WorkQueue.objects.filter(pk=task["workQueue_id"]).values("queue_type").first()
    analysis = (work_queue or {}).get("queue_type") == "analysis" or task["prodSourceLabel"] in ("user", "panda")
    base = job_grid_base(now=now, gdpconfig=gdpconfig)
    masters, files, replicas, used = job_set_inputs([task_id])
    scouts = task["status"] == "ready" and int((task["taskParams"] or {}).get("nScoutJobs", SCOUT_JOBS)) > 0
    chunks = task_chunks(task, files.get(task_id, []), used, SCOUT_JOBS if scouts else JOBS_PER_SET)
    if chunks:
        jobs = job_set_summary(chunks, scouts=scouts, task=task)
    else:
        latest = (
            # jobs without a job set do not count (and PostgreSQL would sort their NULL first)
            Job.objects.filter(task_id=task_id, jobsetID__isnull=False)
            .order_by("-jobsetID", "-pk")
            .values_list("jobsetID", flat=True)
            .first()
        )
        if latest is None:
            return None
        sizes = Job.objects.filter(task_id=task_id, jobsetID=latest).aggregate(
            events=Max("nEvents"), size=Max("inputFileBytes"), files=Max("nInputFiles"), jobs=Count("pk")
        )
        jobs = {
            "nEvents": sizes["events"],
            "inputSizeMB": (sizes["size"] or 0) / 1024**2,
            "nFiles": sizes["files"] or 0,
            "nJobs": sizes["jobs"],
        }
    master = masters.get(task_id)
    datasets = []
    if master is not None:
        found = replicas[master["datasetName"]]
        datasets.append(
            {
                "name": master["datasetName"],
                "master": True,
                "nFiles": master["nFiles"],
                "sizeGB": max((r["sizeGB"] for r in found.values()), default=0.0),
                "replicas": found,
            }
        )
    return job_set_scenario(
        base=base,
        task=task,
        datasets=datasets,
        jobs=jobs,
        seed=seed,
        plugin=ANALYSIS_PLUGIN if analysis else PLUGIN,
        user_stats=analysis_user_stats(
            now=now, task_ids=[task_id], since=base.config.get("DATA_CHECK_TIMEOUT_FROM")
        ).get(task_id)
        if analysis
        else None,
    )
