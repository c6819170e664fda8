"""Stages 4 and 5, the JobSubmitter: WMBS jobs into its cache (`job_submitter_cache_refresh`), then from the
cache to the pool within the per-type thresholds, the high-priority overflow and the schedd limit
(`job_submitter_run`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from brokerage.engine.wmcore.job_submitter import FAILED_CODES, CachedJob, SubmitRules, assign_locations
from brokerage.models import (
    JobSubmitterCacheEntry,
    JobSubmitterReport,
    WMBSJob,
    WMCoreQueue,
)
from brokerage.selectors.wmcore import config_snapshot, wmcore_site_loads, wmcore_submit_sites
from brokerage.services.bulk import bulk_update_values
from brokerage.services.status import status_transition_many

from .common import ACTOR_SUBMITTER, schedd_free


def _cache_due(queue: WMCoreQueue, size: int, config: Mapping[str, Any], now: datetime) -> bool:
    """Seed 004: the cache holds up to 30,000 jobs and is refreshed periodically (~20 min): refilled while smaller
    than WMCORE_CACHE_REFRESH_SIZE, and anyway when the last refresh is WMCORE_CACHE_REFRESH_MINUTES old."""
    if size < int(config["WMCORE_CACHE_REFRESH_SIZE"]) or queue.cache_refreshed is None:
        return True
    return now - queue.cache_refreshed >= timedelta(minutes=int(config["WMCORE_CACHE_REFRESH_MINUTES"]))


@transaction.atomic
def job_submitter_cache_refresh(*, queue_id: int, now: datetime, force: bool = False) -> dict[str, int]:
    """WMBS → JobSubmitter cache: when due, drops entries whose job left `created` and adds created jobs not yet
    cached, highest priority first, up to WMCORE_MAX_JOBS_TO_CACHE read per refresh."""
    queue = WMCoreQueue.objects.select_for_update(no_key=True).get(pk=queue_id, kind="local")
    config = config_snapshot()
    entries = JobSubmitterCacheEntry.objects.filter(queue=queue)
    size = entries.count()
    if not force and not _cache_due(queue, size, config, now):
        return {"refreshed": 0, "added": 0, "dropped": 0, "size": size}
    # The ids first, then a delete by primary key: as one DELETE … IN (SELECT … JOIN), PostgreSQL planned a
    # nested semi-join that took minutes when the statistics still said the tables were empty.
    stale = list(entries.exclude(job__state="created").values_list("pk", flat=True))
    dropped = sum(
        JobSubmitterCacheEntry.objects.filter(pk__in=stale[start : start + 10_000]).delete()[0]
        for start in range(0, len(stale), 10_000)
    )
    new = list(
        WMBSJob.objects.filter(subscription__queue=queue, state="created", cache_entry__isnull=True)
        .order_by("-priority", "pk")
        .values("pk", "priority", "task_type", "possible_sites")[: int(config["WMCORE_MAX_JOBS_TO_CACHE"])]
    )
    JobSubmitterCacheEntry.objects.bulk_create(
        [
            JobSubmitterCacheEntry(
                queue=queue,
                job_id=job["pk"],
                priority=job["priority"],
                task_type=job["task_type"],
                possible_sites=job["possible_sites"],
                cached=now,
            )
            for job in new
        ],
        batch_size=2000,
    )
    queue.cache_refreshed = now
    queue.save(update_fields=["cache_refreshed"])
    return {"refreshed": 1, "added": len(new), "dropped": dropped, "size": size - dropped + len(new)}


@transaction.atomic
def job_submitter_run(*, queue_id: int, now: datetime) -> dict[str, Any]:
    """cache → pool (seed 004, "JobSubmitter Cache to GlideIn"): nothing when the schedd limit is reached; else the
    cache (refreshed when due) is matched to the sites' thresholds by job type, highest priority first, with the
    overflow for higher-priority jobs; the jobs sent become executing (Idle) at their site and leave the cache. The
    conditions met are stored per site and type (JobSubmitterReport) and on each job left waiting."""
    queue = WMCoreQueue.objects.select_for_update(no_key=True).get(pk=queue_id, kind="local")
    config = config_snapshot()
    free = schedd_free(queue=queue, config=config)
    limit = max(0, min(free, int(config["WMCORE_MAX_JOBS_PER_POLL"]))) if queue.enabled else 0
    refresh = job_submitter_cache_refresh(queue_id=queue_id, now=now)
    entries = list(
        JobSubmitterCacheEntry.objects.filter(queue=queue, job__state="created").values(
            "pk", "job_id", "priority", "task_type", "possible_sites", "waiting_reason"
        )
    )
    cached = [CachedJob(e["job_id"], e["priority"], e["task_type"], tuple(e["possible_sites"] or ())) for e in entries]
    result = assign_locations(
        cached,
        wmcore_submit_sites(queue=queue),
        wmcore_site_loads(queue=queue),
        overflow_fraction=float(config["WMCORE_OVERFLOW_FRACTION"]),
        limit=limit,
        rules=SubmitRules.from_config(config),
        now=now.timestamp(),
    )
    by_site: dict[str, list[int]] = defaultdict(list)
    for job_id, site in result.submitted:
        by_site[site].append(job_id)
    submitted = 0
    for site, job_ids in by_site.items():
        submitted += len(
            status_transition_many(
                model=WMBSJob,
                ids=job_ids,
                from_status="created",
                to_status="executing",
                reason="",
                actor=ACTOR_SUBMITTER,
                now=now,
                columns={"location": site, "batch_status": "Idle"},
            )
        )
    failed = _submit_failed(result.failed, now=now)
    gone = [job_id for job_id, _ in result.submitted] + failed
    JobSubmitterCacheEntry.objects.filter(queue=queue, job_id__in=gone).delete()
    changed = [
        (entry["pk"], result.waiting[entry["job_id"]][0])
        for entry in entries
        if entry["job_id"] in result.waiting and entry["waiting_reason"] != result.waiting[entry["job_id"]][0]
    ]
    bulk_update_values(JobSubmitterCacheEntry, fields=("waiting_reason",), rows=changed)
    if limit <= 0 and entries:
        result.conditions[("(schedd)", "all", "schedd_limit")] = len(entries)
    JobSubmitterReport.objects.bulk_create(
        JobSubmitterReport(queue=queue, at=now, site=site, task_type=task_type, condition=condition, count=count)
        for (site, task_type, condition), count in sorted(result.conditions.items())
    )
    return {
        "submitted": submitted,
        "failed": len(failed),
        "waiting": len(result.waiting),
        "limit": limit,
        "schedd_free": free,
        **refresh,
    }


def _submit_failed(failed: Mapping[int, tuple[str, Mapping[str, Any]]], *, now: datetime) -> list[int]:
    """Jobs refreshCache fails for their locations (WMCORE_SUBMIT_LOCATIONS wmcore): created → submitfailed, the
    exit code (71101–71103) kept on the job. Returns the ids moved."""
    by_code: dict[str, list[int]] = defaultdict(list)
    for job_id, (code, _) in failed.items():
        by_code[code].append(job_id)
    moved: list[int] = []
    for code, job_ids in sorted(by_code.items()):
        moved += status_transition_many(
            model=WMBSJob,
            ids=job_ids,
            from_status="created",
            to_status="submitfailed",
            reason=code,
            actor=ACTOR_SUBMITTER,
            now=now,
            columns={"exit_code": FAILED_CODES[code]},
        )
    return moved
