"""Scenarios for production job brokerage, built from the database.

The grid part (sites, endpoints, network, queues with their storages, software tags, GPUs, and the per-queue
job statistics) is read once per cycle — ten queries whatever the number of queues — and shared by every job
set's scenario; a job set adds its task and datasets, which the job-generation service has already read for
all the cycle's tasks at once. The job statistics (running, activated, … per queue) come from the Job table,
the pilot figures from QueuePilotStats, the time since the last job start from the jobs' startTime.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Avg, Count, F, FloatField, Max, Q, Sum
from django.db.models.functions import NullIf

from brokerage.adapters.task_brokerage import (
    TASK_FIELDS,
    TASK_GRID_PARTS,
    TASK_PARAMETERS,
    grid_parts,
    over_base,
    task_values,
)
from brokerage.engine import Scenario, parse_scenario
from brokerage.models import GpuSummary, Job, PandaQueue, QueuePilotStats, QueueStorage, SoftwareTags

PLUGIN = "atlas_prod_job"
# Queue columns we keep outside the CRIC record (the record itself is kept whole in PandaQueue.cric).
QUEUE_COLUMNS = (
    "status",
    "type",
    "capability",
    "resource_type",
    "cloud",
    "corecount",
    "corepower",
    "maxrss",
    "minrss",
    "maxwdir",
    "maxinputsize",
    "maxtime",
    "mintime",
    "releases",
    "pledgedcpu",
    "fairsharepolicy",
    "catchall",
    "direct_access_lan",
    "direct_access_wan",
    "transferringlimit",
    "maxdiskio",
    "wnconnectivity",
    "jobseed",
    "workflow",
    "harvester",
    "use_vp",
    "siteClass",
)
STATS_STATUSES = ("running", "activated", "assigned", "starting", "defined", "transferring")
JOB_TASK_PARAMETERS = (
    *TASK_PARAMETERS,
    "includedSite",
    "excludedSite",
    "avoidVP",
    "nEventsPerJob",
    "nFilesPerJob",
    "allowInputLAN",
    "container_name",
)
USER_RUNNING = ("running",)
USER_QUEUED = ("defined", "assigned", "activated", "starting")
# prodSourceLabels of analysis jobs (their users are counted per queue for the Analysis Stabilizer)
ANALYSIS_LABELS = ("user", "panda")
# toRunningRate: jobs started per hour over the last 6 hours (AtlasBrokerUtils.getSiteToRunRateStats' window)
TO_RUNNING_WINDOW = timedelta(hours=6)
# How far back job starts are looked for (bounded so the query never scans the whole history).
START_WINDOW = timedelta(days=7)
JOB_GRID_PARTS = (*TASK_GRID_PARTS, "queues", "queue_stats", "sw_tags", "gpu_summary")


def queue_records() -> dict[str, dict[str, Any]]:
    """Every queue as a CRIC record: the imported record, our columns over it, astorages from QueueStorage."""
    records: dict[str, dict[str, Any]] = {}
    for row in PandaQueue.objects.values("name", "site__name", "cric", *QUEUE_COLUMNS):
        record = dict(row.pop("cric") or {})
        name, site = row.pop("name"), row.pop("site__name")
        record.update({key: value for key, value in row.items() if value is not None})
        record.update({"name": name, "atlas_site": site, "astorages": {}})
        records[name] = record
    for queue, endpoint, role in QueueStorage.objects.values_list("queue__name", "endpoint__name", "role"):
        records[queue]["astorages"].setdefault(role, []).append(endpoint)
    return records


def queue_statistics(*, now: datetime, queues: dict[str, dict]) -> dict[str, dict[str, Any]]:
    """Per queue: jobs by status, running cores and their average disk IO per core, pilots and batch jobs, hours
    since the last job start, jobs started per hour over the last 6 h (toRunningRate), users with analysis jobs
    there (nUsers). Four queries."""
    stats: dict[str, dict[str, Any]] = {name: {status: 0 for status in STATS_STATUSES} for name in queues}
    stats_rows = (
        Job.objects.filter(jobStatus__in=STATS_STATUSES)
        .exclude(computingSite="")
        .values("computingSite", "jobStatus")
        .annotate(
            jobs=Count("pk"),
            cores=Sum("coreCount"),
            # JEDI getAvgDiskIO_JEDI: the running jobs' average disk IO per core
            disk_io=Avg(F("diskIO") / NullIf(F("coreCount"), 0), output_field=FloatField()),
        )
    )
    for row in stats_rows:
        entry = stats.get(row["computingSite"])
        if entry is None:
            continue
        entry[row["jobStatus"]] = row["jobs"]
        if row["jobStatus"] == "running":
            entry["runningCores"] = row["cores"] or 0
            if row["disk_io"] is not None:
                entry["avgDiskIOPerCore"] = row["disk_io"]
    starts = (
        Job.objects.filter(startTime__gte=now - START_WINDOW)
        .exclude(computingSite="")
        .values("computingSite")
        .annotate(last=Max("startTime"), recent=Count("pk", filter=Q(startTime__gte=now - TO_RUNNING_WINDOW)))
    )
    last_start = {}
    for row in starts:
        last_start[row["computingSite"]] = row["last"]
        entry = stats.get(row["computingSite"])
        if entry is not None and row["recent"]:
            entry["toRunningRate"] = row["recent"] / (TO_RUNNING_WINDOW.total_seconds() / 3600)
    users = (
        Job.objects.filter(prodSourceLabel__in=ANALYSIS_LABELS, jobStatus__in=USER_QUEUED + USER_RUNNING)
        .exclude(computingSite="")
        .values("computingSite")
        .annotate(users=Count("prodUserName", distinct=True))
    )
    for row in users:
        entry = stats.get(row["computingSite"])
        if entry is not None:
            entry["nUsers"] = row["users"]
    for name, entry in stats.items():
        if name in last_start:
            entry["hoursSinceLastStart"] = max((now - last_start[name]).total_seconds() / 3600, 0.0)
        elif entry["activated"]:
            entry["hoursSinceLastStart"] = START_WINDOW.total_seconds() / 3600
    for row in QueuePilotStats.objects.values("queue__name", "pilotsLast3h", "nBatchJob", "numSlots"):
        entry = stats.get(row["queue__name"])
        if entry is not None:
            entry.update(pilotsLast3h=row["pilotsLast3h"], nBatchJob=row["nBatchJob"])
            if row["numSlots"] is not None:
                entry["numSlots"] = row["numSlots"]
    return stats


def software_parts() -> dict[str, Any]:
    """sw_tags and gpu_summary (two queries)."""
    sw_tags = dict(SoftwareTags.objects.values_list("name", "data"))
    gpus: dict[str, list] = {}
    for row in GpuSummary.objects.values(
        "queue__name", "vendor", "model", "vram", "microarchitecture", "version", "driver_version"
    ):
        gpus.setdefault(row.pop("queue__name"), []).append(row)
    return {"sw_tags": sw_tags, "gpu_summary": gpus}


def job_grid_base(*, now: datetime, gdpconfig: dict[str, Any]) -> Scenario:
    """The scenario part every job set of a cycle shares (eleven queries)."""
    queues = queue_records()
    return parse_scenario(
        {
            "plugin": PLUGIN,
            "now": now.isoformat(),
            "gdpconfig": gdpconfig,
            **grid_parts(),
            **software_parts(),
            "queues": queues,
            "queue_stats": queue_statistics(now=now, queues=queues),
        }
    )


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
    return over_base(parsed, base, JOB_GRID_PARTS)


__all__ = ["PLUGIN", "Q", "job_grid_base", "job_set_scenario", "queue_records", "queue_statistics"]


ANALYSIS_PLUGIN = "atlas_anal_job"


def analysis_user_stats(*, now: datetime, task_ids: list[int]) -> dict[int, dict[str, Any]]:
    """`user_stats` for each analysis task (seed 000 analysis brokerage): the user's and the working group's
    running and queued jobs and cores, the user's jobs per queue, the task's finished, failed and closed jobs
    per queue, the user's running cores at hi-class queues, hours since the task's last finished job, and the
    global shares' usage. Six queries for all the tasks of a cycle."""
    # deferred import: selectors import models, and the adapters are imported by services at start-up
    from brokerage.models import Task
    from brokerage.selectors.shares import global_share_usage

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
    last_success: dict[int, datetime] = {}
    outcome_key = {"finished": "taskFinished", "failed": "taskFailed", "closed": "taskClosed"}
    for row in (
        Job.objects.filter(task_id__in=task_ids, jobStatus__in=tuple(outcome_key))
        .values("task_id", "computingSite", "jobStatus")
        .annotate(jobs=Count("pk"), last=Max("endTime"))
    ):
        entry = task_queues.setdefault(row["task_id"], {}).setdefault(row["computingSite"], {})
        entry[outcome_key[row["jobStatus"]]] = row["jobs"]
        if row["jobStatus"] == "finished" and row["last"] is not None:
            last_success[row["task_id"]] = max(last_success.get(row["task_id"], row["last"]), row["last"])
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
