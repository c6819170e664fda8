"""The grid as every broker reads it, built from the database once per cycle and shared by its decisions.

Sites, storage endpoints and network links; the queues as CRIC records with their storages; software tags and
GPUs; the per-queue job statistics (running, activated, … from the Job table, pilots from QueuePilotStats, the
time since the last job start). Eleven queries whatever the number of queues. Task brokerage reads the queues too:
its job check runs job brokerage over the nuclei's queues (AtlasProdTaskBroker, panda-server 1.0.4).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Avg, Count, F, FloatField, OuterRef, Subquery, Sum
from django.db.models.functions import NullIf

from brokerage.engine import Scenario, parse_scenario
from brokerage.models import (
    GpuSummary,
    Job,
    NetworkLink,
    PandaQueue,
    QueuePilotStats,
    QueueStorage,
    Site,
    SoftwareTags,
    StorageEndpoint,
)

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
USER_RUNNING = ("running",)
USER_QUEUED = ("defined", "assigned", "activated", "starting")
# prodSourceLabels of analysis jobs (their users are counted per queue for the Analysis Stabilizer)
ANALYSIS_LABELS = ("user", "panda")
# toRunningRate: jobs started per hour over the last 6 hours (AtlasBrokerUtils.getSiteToRunRateStats' window)
TO_RUNNING_WINDOW = timedelta(hours=6)
# The parts of a cycle's base scenario that every decision of the cycle shares (by reference, so the engine's
# per-snapshot caches stay warm from one decision to the next).
GRID_PARTS = (
    "config",
    "gdpconfig",
    "profile",
    "sites",
    "ddm_endpoints",
    "network",
    "queues",
    "queue_stats",
    "sw_tags",
    "gpu_summary",
)


def queue_records() -> dict[str, dict[str, Any]]:
    """Every queue as a CRIC record: the imported record, our columns over it, astorages from QueueStorage."""
    records: dict[str, dict[str, Any]] = {}
    for row in PandaQueue.objects.values("name", "site__name", "cric", *QUEUE_COLUMNS):
        record = dict(row.pop("cric") or {})
        name, site = row.pop("name"), row.pop("site__name")
        # an empty cloud column is a queue made here without one, not CRIC's empty cloud (which the record keeps and
        # the panda profile drops, CRIC_QUEUE_RULE)
        record.update({key: value for key, value in row.items() if value is not None and (key != "cloud" or value)})
        record.update({"name": name, "atlas_site": site, "astorages": {}})
        records[name] = record
    for queue, endpoint, role in QueueStorage.objects.values_list("queue__name", "endpoint__name", "role"):
        records[queue]["astorages"].setdefault(role, []).append(endpoint)
    return records


def _job_counts(*, now: datetime, queues: dict[str, dict]) -> dict[str, Any]:
    """What queue_statistics reads from the active jobs (four queries), as plain rows, kept for up to
    JOB_STATISTICS_MAX_AGE_SECONDS in the shared cache: every cycle of a round (a job-generation cycle per work
    queue, the task brokerage) reads the same counts, and at a million jobs a day these grouped counts over the
    active jobs were the server's largest cost (issue 32). PanDA's brokers read theirs from a materialized view
    that is refreshed now and then (panda-server 1.0.4 job_standalone_module, MV_JOBSACTIVE4_STATS)."""
    max_age = float(getattr(settings, "JOB_STATISTICS_MAX_AGE_SECONDS", 0))
    # the same key in every worker process (Python's own string hash differs from one process to the next)
    key = "job-statistics:" + hashlib.blake2b("\n".join(sorted(queues)).encode(), digest_size=12).hexdigest()
    if max_age > 0 and (held := cache.get(key)) is not None:
        return held
    counts = {
        "by_status": list(
            Job.objects.filter(jobStatus__in=STATS_STATUSES)
            .exclude(computingSite="")
            .values("computingSite", "jobStatus")
            .annotate(
                jobs=Count("pk"),
                cores=Sum("coreCount"),
                # JEDI getAvgDiskIO_JEDI: the running jobs' average disk IO per core
                disk_io=Avg(F("diskIO") / NullIf(F("coreCount"), 0), output_field=FloatField()),
            )
            .values_list("computingSite", "jobStatus", "jobs", "cores", "disk_io")
        ),
        # jobs started in the last 6 hours: all still active (a job is archived a day or more after its end)
        "started": dict(
            Job.objects.filter(archiveDay__isnull=True, startTime__gte=now - TO_RUNNING_WINDOW)
            .exclude(computingSite="")
            .values("computingSite")
            .annotate(n=Count("pk"))
            .values_list("computingSite", "n")
        ),
        # the last start per queue, from the end of the active jobs' (computingSite, startTime) index, not by
        # grouping a week of jobs (issue 32: a week at a real grid's rate is seven million rows a cycle)
        "last_start": {
            name: when
            for name, when in PandaQueue.objects.filter(name__in=list(queues))
            .annotate(last=last_start_subquery(now=now))
            .values_list("name", "last")
            if when is not None
        },
        "users": dict(
            Job.objects.filter(prodSourceLabel__in=ANALYSIS_LABELS, jobStatus__in=USER_QUEUED + USER_RUNNING)
            .exclude(computingSite="")
            .values("computingSite")
            .annotate(users=Count("prodUserName", distinct=True))
            .values_list("computingSite", "users")
        ),
    }
    if max_age > 0:
        cache.set(key, counts, timeout=max_age)
    return counts


def queue_statistics(*, now: datetime, queues: dict[str, dict]) -> dict[str, dict[str, Any]]:
    """Per queue: jobs by status, running cores and their average disk IO per core, pilots and batch jobs, hours
    since the last job start, jobs started per hour over the last 6 h (toRunningRate), users with analysis jobs
    there (nUsers). Five queries (one when the job counts are fresh in the cache, _job_counts)."""
    stats: dict[str, dict[str, Any]] = {name: {status: 0 for status in STATS_STATUSES} for name in queues}
    counts = _job_counts(now=now, queues=queues)
    for site, status, jobs, cores, disk_io in counts["by_status"]:
        entry = stats.get(site)
        if entry is None:
            continue
        entry[status] = jobs
        if status == "running":
            entry["runningCores"] = cores or 0
            if disk_io is not None:
                entry["avgDiskIOPerCore"] = disk_io
    for site, started in counts["started"].items():
        entry = stats.get(site)
        if entry is not None:
            entry["toRunningRate"] = started / (TO_RUNNING_WINDOW.total_seconds() / 3600)
    for site, users in counts["users"].items():
        entry = stats.get(site)
        if entry is not None:
            entry["nUsers"] = users
    last_start = counts["last_start"]
    for name, entry in stats.items():
        if name in last_start:
            entry["hoursSinceLastStart"] = max((now - last_start[name]).total_seconds() / 3600, 0.0)
        elif entry["activated"]:
            entry["hoursSinceLastStart"] = last_start_window().total_seconds() / 3600
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


def grid_parts() -> dict[str, Any]:
    """Sites, storage endpoints and network as scenario parts (three queries): what every broker reads."""
    sites = {
        row["name"]: {"role": row["role"], "state": row["state"], "bareNucleus": row["bareNucleus"]}
        for row in Site.objects.values("name", "role", "state", "bareNucleus")
    }
    endpoints = {
        row.pop("name"): {**row, "site": row.pop("site__name") or ""}
        for row in StorageEndpoint.objects.values(
            "name",
            "site__name",
            "type",
            "space_total",
            "space_free",
            "space_used",
            "space_expired",
            "is_tape",
            "blacklisted",
            "detailed_status",
        )
    }
    network = list(
        NetworkLink.objects.annotate(src_name=F("src__name"), dst_name=F("dst__name")).values(
            "src_name", "dst_name", "closeness", "mbps_1h", "mbps_1d", "mbps_1w", "queued"
        )
    )
    for link in network:
        link["src"], link["dst"] = link.pop("src_name"), link.pop("dst_name")
    return {"sites": sites, "ddm_endpoints": endpoints, "network": network}


def over_base(parsed: Scenario, base: Scenario, parts: tuple[str, ...] = GRID_PARTS) -> Scenario:
    """`parsed` (one task's or job set's part) with the shared `parts` taken from the cycle's `base`."""
    return replace(parsed, **{part: getattr(base, part) for part in parts})


def grid_base(*, now: datetime, gdpconfig: dict[str, Any], plugin: str) -> Scenario:
    """The scenario part every decision of a `plugin` cycle shares (eleven queries)."""
    queues = queue_records()
    return parse_scenario(
        {
            "plugin": plugin,
            "now": now.isoformat(),
            "gdpconfig": gdpconfig,
            **grid_parts(),
            **software_parts(),
            "queues": queues,
            "queue_stats": queue_statistics(now=now, queues=queues),
        }
    )


# How far back job starts are looked for: a week at most (bounded so the query never reads the whole history)
LAST_START_WINDOW = timedelta(days=7)


def last_start_window() -> timedelta:
    """How far back the last start per queue is looked for: a week, or less when jobs are archived sooner. A job is
    archived JOB_ARCHIVE_AFTER_DAYS after it ended, so every job that started since then is still active: the
    last start is read from the active jobs alone, and the archive keeps no (computingSite, startTime) index (issue
    32: 88 of its 383 bytes a job). The rules that read it (the watchdog's inactive queue, the job brokerage's
    inactive rule) compare it with a few hours."""
    return min(LAST_START_WINDOW, timedelta(days=settings.JOB_ARCHIVE_AFTER_DAYS))


def last_start_subquery(*, now: datetime) -> Subquery:
    """When a job last started at the queue named by OuterRef("name") within last_start_window(), read from the
    end of the active jobs' (computingSite, startTime) index: one index probe a queue, not a week of jobs grouped."""
    last = Job.objects.filter(
        archiveDay__isnull=True, computingSite=OuterRef("name"), startTime__gte=now - last_start_window()
    )
    return Subquery(last.order_by("-startTime").values("startTime")[:1])
