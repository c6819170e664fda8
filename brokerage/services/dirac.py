"""DIRAC over the database: jobs into task queues, task-queue priorities, and the Matcher (seed 003).

A matching request evaluates the requirement rules over every enabled task queue at once (a numpy index per
process, rebuilt when the task queues change), then follows the seed's order: highest CPU time, smallest
RAND()/priority, the user priority of the job with the smallest RAND()/RealPriority (drawn per priority group
from the distribution of the minimum, so no job list is read), the jobs of that priority by id, the first ten
shuffled, the first one free. The claim is atomic: the ten are locked with SKIP LOCKED on PostgreSQL and the
job moves Waiting → Matched only if still Waiting, so two matchers never get the same job; on PostgreSQL the
claim, its log row and the match record are one statement.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Avg, Count, Exists, OuterRef, Q

from brokerage.engine.plugins.dirac_match import (
    ANY_TAG,
    DEFAULT_CPU_SEGMENTS,
    FIRST_JOBS,
    MIN_TQ_PRIORITY,
    Resource,
    TaskQueue,
    cpu_segment,
    no_match_reasons,
    real_priority,
    task_queue_priorities,
)
from brokerage.models import DiracJob, DiracJobStatusLog, DiracMatchRecord, DiracTaskQueue, DiracTaskQueueValue
from brokerage.models.dirac import REQUIREMENT_FIELDS
from brokerage.services.bulk import bulk_update_values

ACTOR = "dirac matcher"
FIELDS = [name for name, _ in REQUIREMENT_FIELDS]
# Task queues tried per request when the chosen one turns out empty (emptied by other matchers meanwhile).
CLAIM_ATTEMPTS = 20


def cpu_segments() -> tuple[float, ...]:
    return tuple(getattr(settings, "DIRAC_CPU_SEGMENTS", DEFAULT_CPU_SEGMENTS))


def _requirements(job: Mapping[str, Any], segments) -> tuple[dict[str, Any], str]:
    single = {
        "ownerDN": job.get("owner", ""),
        "ownerGroup": job.get("ownerGroup", ""),
        "setup": job.get("setup", ""),
        "cpuTime": int(cpu_segment(float(job.get("cpuTime", 0)), segments)),
    }
    multi = {name: sorted(set(job.get(name) or ())) for name in FIELDS}
    key = hashlib.sha256(json.dumps([single, multi], sort_keys=True).encode()).hexdigest()
    return {**single, **multi}, key


@transaction.atomic
def dirac_jobs_submit(*, jobs: list[dict[str, Any]], now: datetime) -> list[int]:
    """Puts jobs into the task queues of their requirements (created when new) as Waiting jobs, and updates the
    task-queue priorities. Returns the job ids. A fixed number of statements per call (bulk)."""
    segments = cpu_segments()
    wanted: dict[str, dict[str, Any]] = {}
    keys = []
    for job in jobs:
        requirements, key = _requirements(job, segments)
        wanted.setdefault(key, requirements)
        keys.append(key)
    existing = dict(
        DiracTaskQueue.objects.filter(requirementsKey__in=list(wanted)).values_list("requirementsKey", "pk")
    )
    new = [key for key in wanted if key not in existing]
    created = DiracTaskQueue.objects.bulk_create(
        DiracTaskQueue(
            requirementsKey=key,
            ownerDN=wanted[key]["ownerDN"],
            ownerGroup=wanted[key]["ownerGroup"],
            setup=wanted[key]["setup"],
            cpuTime=wanted[key]["cpuTime"],
            created=now,
        )
        for key in new
    )
    existing.update({tq.requirementsKey: tq.pk for tq in created})
    reenabled = DiracTaskQueue.objects.filter(pk__in=list(existing.values()), enabled=False).update(enabled=True)
    DiracTaskQueueValue.objects.bulk_create(
        DiracTaskQueueValue(task_queue_id=existing[key], field=name, value=value)
        for key in new
        for name in FIELDS
        for value in wanted[key][name]
    )
    rows = DiracJob.objects.bulk_create(
        DiracJob(
            task_queue_id=existing[key],
            status="Waiting",
            minorStatus="Pilot Agent Submission",
            userPriority=int(job.get("userPriority", 1)),
            owner=job.get("owner", ""),
            ownerGroup=job.get("ownerGroup", ""),
            submissionTime=now,
            lastUpdateTime=now,
        )
        for job, key in zip(jobs, keys, strict=True)
    )
    DiracJobStatusLog.objects.bulk_create(
        entry
        for job in rows
        for entry in (
            DiracJobStatusLog(job_id=job.pk, timestamp=now, old_status="", new_status="Received", actor=ACTOR),
            DiracJobStatusLog(
                job_id=job.pk,
                timestamp=now,
                old_status="Received",
                new_status="Waiting",
                actor=ACTOR,
                reason=f"in task queue {job.task_queue_id}",
            ),
        )
    )
    if created or reenabled:
        task_queue_version_bump()  # the matchers must see the new or re-enabled queues
    dirac_priorities_update(groups={requirements["ownerGroup"] for requirements in wanted.values()})
    return [job.pk for job in rows]


def dirac_priorities_update(*, groups: Iterable[str] | None = None) -> int:
    """Task-queue priorities from the group shares (settings.DIRAC_GROUP_SHARES, default 1000 a group) and the
    average priority of each queue's waiting jobs (REFERENCE.md), for the groups given (a group's priorities
    depend only on its own queues) or all. Only changed priorities are written, and only then are the matchers'
    indexes told to rebuild. Returns how many changed."""
    queues = DiracTaskQueue.objects.all()
    if groups is not None:
        queues = queues.filter(ownerGroup__in=list(groups))
    rows = list(
        queues.annotate(averagePriority=Avg("jobs__userPriority", filter=Q(jobs__status="Waiting"))).values(
            "id", "ownerGroup", "ownerDN", "averagePriority", "priority"
        )
    )
    for row in rows:
        row["averagePriority"] = row["averagePriority"] or 0.0
    current = {row["id"]: row["priority"] for row in rows}
    priorities = task_queue_priorities(rows, group_shares=getattr(settings, "DIRAC_GROUP_SHARES", {}))
    changed = sorted((tq_id, value) for tq_id, value in priorities.items() if value != current[tq_id])
    if changed:
        bulk_update_values(DiracTaskQueue, fields=("priority",), rows=changed)
        task_queue_version_bump()
    return len(changed)


def _pick_priority(task_queue_id: int, rng: random.Random) -> float | None:
    """The user priority of the job with the smallest RAND()/RealPriority: the minimum of n uniforms is
    1 − U^(1/n), so one draw per priority group gives the same law as one per job."""
    groups = list(
        DiracJob.objects.filter(task_queue_id=task_queue_id, status="Waiting")
        .values_list("userPriority")
        .annotate(n=Count("pk"))
        .order_by("userPriority")
    )
    if not groups:
        return None
    return min(groups, key=lambda g: ((1 - rng.random() ** (1 / g[1])) / real_priority(g[0]), g[0]))[0]


def _claim(task_queue_id: int, priority: float, rng: random.Random, resource: Resource, now: datetime):
    """The first ten waiting jobs of that priority by id, shuffled; the first one still Waiting becomes Matched."""
    with transaction.atomic():
        first = DiracJob.objects.filter(task_queue_id=task_queue_id, status="Waiting", userPriority=priority).order_by(
            "jobID"
        )
        if connection.features.has_select_for_update_skip_locked:
            first = first.select_for_update(skip_locked=True)
        ids = list(first.values_list("jobID", flat=True)[:FIRST_JOBS])
        rng.shuffle(ids)
        for job_id in ids:
            if DiracJob.objects.filter(jobID=job_id, status="Waiting").update(
                status="Matched", site=resource.site, matchTime=now, lastUpdateTime=now, minorStatus="Assigned"
            ):
                DiracJobStatusLog.objects.create(
                    job_id=job_id,
                    timestamp=now,
                    old_status="Waiting",
                    new_status="Matched",
                    actor=ACTOR,
                    reason=f"matched to {resource.site or 'a resource'}",
                )
                return job_id, ids
    return None, ids


# A permutation of job ids fixed by the request's seed: (id × a + b) mod p, p prime; orders the first ten "in
# random order" inside the database, reproducibly.
SHUFFLE_PRIME = 2_147_483_647


def _claim_in_one_statement(task_queue_id, priority, rng, resource: Resource, now, seed):
    """PostgreSQL: the claim, its status-log row and the match record in one statement (one round trip, atomic):
    the first ten Waiting jobs of the priority by id, locked with SKIP LOCKED so concurrent matchers pass over
    each other's, ordered by the seeded permutation; the first one becomes Matched."""
    multiplier, offset = rng.randrange(1, SHUFFLE_PRIME), rng.randrange(SHUFFLE_PRIME)
    reason = f"matched to {resource.site or 'a resource'}"
    sql = """
        WITH first_ten AS (
            SELECT "jobID" FROM dirac_jobs
            WHERE task_queue_id = %(tq)s AND status = 'Waiting' AND "userPriority" = %(priority)s
            ORDER BY "jobID" LIMIT %(first)s FOR UPDATE SKIP LOCKED
        ), picked AS (
            UPDATE dirac_jobs SET status = 'Matched', site = %(site)s, "matchTime" = %(now)s,
                "lastUpdateTime" = %(now)s, "minorStatus" = 'Assigned'
            WHERE "jobID" = (
                SELECT "jobID" FROM first_ten ORDER BY ("jobID" * %(a)s + %(b)s) %% %(p)s LIMIT 1
            )
            RETURNING "jobID"
        ), logged AS (
            INSERT INTO dirac_job_status_log (job_id, timestamp, old_status, new_status, reason, actor)
            SELECT "jobID", %(now)s, 'Waiting', 'Matched', %(reason)s, %(actor)s FROM picked
        ), recorded AS (
            INSERT INTO dirac_match_records (at, site, setup, "cpuTime", matched, job, task_queue, seed, reasons)
            SELECT %(now)s, %(site)s, %(setup)s, %(cpu)s, true, "jobID", %(tq)s, %(seed)s, '[]'::jsonb FROM picked
        )
        SELECT (SELECT "jobID" FROM picked), (SELECT array_agg("jobID" ORDER BY "jobID") FROM first_ten)
    """
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "tq": task_queue_id,
                "priority": priority,
                "first": FIRST_JOBS,
                "site": resource.site,
                "now": now,
                "a": multiplier,
                "b": offset,
                "p": SHUFFLE_PRIME,
                "reason": reason,
                "actor": ACTOR,
                "setup": resource.setup,
                "cpu": int(resource.cpuTime),
                "seed": seed,
            },
        )
        job, first = cursor.fetchone()
    return job, list(first or [])


class TaskQueueIndex:
    """The enabled task queues of one moment as numpy columns, for matching without a database round trip per
    rule: codes for setup, group and owner, CPU time, priority, and one boolean column per requirement value.
    Built in two queries; rebuilt when the task-queue version (bumped whenever task queues are created,
    re-enabled or re-prioritised) changes. Task queues found empty are disabled, here and in the database."""

    def __init__(self, version: str):
        self.version = version
        rows = list(
            DiracTaskQueue.objects.filter(enabled=True)
            .order_by("pk")
            .values_list("pk", "setup", "ownerGroup", "ownerDN", "cpuTime", "priority")
        )
        self.ids = np.array([row[0] for row in rows], dtype=np.int64)
        self.position = {tq_id: i for i, tq_id in enumerate(self.ids.tolist())}
        self.codes: dict[str, dict[str, int]] = {"setup": {}, "group": {}, "owner": {}}

        def encode(kind: str, values: list[str]) -> np.ndarray:
            table = self.codes[kind]
            return np.array([table.setdefault(value, len(table)) for value in values], dtype=np.int64)

        self.setup = encode("setup", [row[1] for row in rows])
        self.group = encode("group", [row[2] for row in rows])
        self.owner = encode("owner", [row[3] for row in rows])
        self.cpu = np.array([row[4] for row in rows], dtype=float)
        self.priority = np.array([row[5] for row in rows], dtype=float)
        self.enabled = np.ones(len(rows), dtype=bool)
        n = len(rows)
        self.has: dict[str, np.ndarray] = {field: np.zeros(n, dtype=bool) for field in FIELDS}
        self.value: dict[tuple[str, str], np.ndarray] = {}
        for tq_id, field, value in DiracTaskQueueValue.objects.filter(task_queue__enabled=True).values_list(
            "task_queue_id", "field", "value"
        ):
            i = self.position.get(tq_id)
            if i is None:
                continue
            self.has[field][i] = True
            self.value.setdefault((field, value), np.zeros(n, dtype=bool))[i] = True
        self.tag_values = {value for field, value in self.value if field == "tags"}

    def _code(self, kind: str, value: str) -> int:
        return self.codes[kind].get(value, -1)

    def _offered(self, field: str, value: str) -> np.ndarray:
        found = self.value.get((field, value))
        return found if found is not None else np.zeros(len(self.ids), dtype=bool)

    def matching(self, resource: Resource) -> np.ndarray:
        """seed 003's rules over every task queue at once."""
        mask = self.enabled & (self.setup == self._code("setup", resource.setup)) & (self.cpu <= resource.cpuTime)
        if resource.private:
            mask &= self.group == self._code("group", resource.ownerGroup)
            if not resource.jobSharing:
                mask &= self.owner == self._code("owner", resource.ownerDN)
        if resource.site:
            mask &= ~self.has["sites"] | self._offered("sites", resource.site)
            mask &= ~self._offered("bannedSites", resource.site)
        for field, offered in (
            ("gridCEs", resource.gridCE),
            ("platforms", resource.platform),
            ("pilotTypes", resource.pilotType),
        ):
            mask &= ~self.has[field] | self._offered(field, offered)
        for tag in self.tag_values - set(resource.tags) - {ANY_TAG}:
            mask &= ~self.value[("tags", tag)]
        return mask

    def disable(self, tq_id: int) -> None:
        i = self.position.get(tq_id)
        if i is not None:
            self.enabled[i] = False


_INDEX: TaskQueueIndex | None = None
VERSION_KEY = "dirac:task-queue-version"


def task_queue_version_bump() -> None:
    """Tells every process that the task queues changed (their indexes rebuild at their next request). The
    version is a fresh random token, never a counter: a cleared cache cannot bring back an old version."""
    cache.set(VERSION_KEY, uuid.uuid4().hex, None)


def task_queue_index() -> TaskQueueIndex:
    global _INDEX
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, uuid.uuid4().hex, None)
        version = cache.get(VERSION_KEY)
    if _INDEX is None or _INDEX.version != version:
        _INDEX = TaskQueueIndex(version)
    return _INDEX


def _disable_if_empty(index: TaskQueueIndex, tq_id: int) -> None:
    """A task queue without waiting jobs leaves the matching (DIRAC deletes empty task queues); a later job for
    it enables it again."""
    index.disable(tq_id)
    DiracTaskQueue.objects.filter(pk=tq_id).exclude(
        Exists(DiracJob.objects.filter(task_queue=OuterRef("pk"), status="Waiting"))
    ).update(enabled=False)


def dirac_match_request(
    *, resource: Resource, now: datetime, seed: int | None = None, dry_run: bool = False
) -> dict[str, Any]:
    """One Matcher request: the job claimed (or None) and how it was chosen; a no-match lists the nearest task
    queues with the rules they fail. Recorded as a DiracMatchRecord with the seed of its draws. A dry run claims
    and records nothing: it tells which task queue and user priority the request would draw from."""
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    rng = random.Random(seed)
    for _ in range(CLAIM_ATTEMPTS):
        index = task_queue_index()
        mask = index.matching(resource)
        if not mask.any():
            break
        top = index.cpu[mask].max()
        best = np.flatnonzero(mask & (index.cpu == top))
        # RAND()/priority for each, drawn at once from the request's seed; the smallest wins
        draws = np.random.default_rng(rng.getrandbits(64)).random(len(best))
        keys = draws / np.maximum(index.priority[best], MIN_TQ_PRIORITY)
        chosen = int(index.ids[best[int(np.argmin(keys))]])
        priority = _pick_priority(chosen, rng)
        if priority is None:
            _disable_if_empty(index, chosen)
            continue
        found = {
            "matched": True,
            "task_queue": chosen,
            "user_priority": priority,
            "matching_task_queues": int(mask.sum()),
            "highest_cpu_time": float(top),
            "seed": seed,
        }
        if dry_run:
            return {**found, "dry_run": True, "job": None}
        if connection.vendor == "postgresql":
            job, first = _claim_in_one_statement(chosen, priority, rng, resource, now, seed)
        else:
            with transaction.atomic():  # claim, log and record: one commit
                job, first = _claim(chosen, priority, rng, resource, now)
                if job is not None:
                    DiracMatchRecord.objects.create(
                        at=now,
                        site=resource.site,
                        setup=resource.setup,
                        cpuTime=int(resource.cpuTime),
                        matched=True,
                        job=job,
                        task_queue=chosen,
                        seed=seed,
                    )
        if job is not None:
            return {**found, "job": job, "first_jobs": sorted(first)}
    nearest = dirac_no_match_explanation(resource=resource)
    if dry_run:
        return {"matched": False, "dry_run": True, "job": None, "nearest": nearest, "seed": seed}
    DiracMatchRecord.objects.create(
        at=now,
        site=resource.site,
        setup=resource.setup,
        cpuTime=int(resource.cpuTime),
        matched=False,
        seed=seed,
        reasons=sorted({code for item in nearest for code in item["failed"]}),
    )
    return {"matched": False, "job": None, "nearest": nearest, "seed": seed}


def dirac_no_match_explanation(*, resource: Resource, limit: int = 5) -> list[dict[str, Any]]:
    """The task queues with waiting jobs that came nearest to matching: fewest failed rules (then the oldest),
    with every rule they fail, the values compared and their waiting jobs (three queries; no job table scan)."""
    from brokerage.engine.reasons import explain

    with_jobs = DiracTaskQueue.objects.filter(
        Exists(DiracJob.objects.filter(task_queue=OuterRef("pk"), status="Waiting"))
    )
    rows = list(with_jobs.values("pk", "ownerDN", "ownerGroup", "setup", "cpuTime", "priority"))
    values: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for tq, field, value in DiracTaskQueueValue.objects.filter(task_queue__in=with_jobs).values_list(
        "task_queue", "field", "value"
    ):
        values[tq][field].add(value)
    scored = []
    for row in rows:
        tq = TaskQueue(
            id=row["pk"],
            ownerDN=row["ownerDN"],
            ownerGroup=row["ownerGroup"],
            setup=row["setup"],
            cpuTime=row["cpuTime"],
            priority=row["priority"],
            **{name: frozenset(values[row["pk"]].get(name, ())) for name in FIELDS},
        )
        failed = no_match_reasons(tq, resource)
        if failed:
            scored.append((len(failed), row["pk"], failed))
    scored.sort(key=lambda item: item[:2])
    nearest = scored[:limit]
    waiting = dict(
        DiracJob.objects.filter(task_queue__in=[tq_id for _, tq_id, _ in nearest], status="Waiting")
        .values_list("task_queue")
        .annotate(n=Count("pk"))
        .values_list("task_queue", "n")
    )
    return [
        {
            "task_queue": tq_id,
            "waiting_jobs": waiting.get(tq_id, 0),
            "failed": [code for code, _ in failed],
            "reasons": [{"code": code, "detail": detail, "sentence": explain(code, detail)} for code, detail in failed],
        }
        for _, tq_id, failed in nearest
    ]


def resource_from(data: Mapping[str, Any]) -> Resource:
    """A Resource from a request body (validated by the API serializer)."""
    return Resource(
        setup=data.get("setup", ""),
        cpuTime=float(data.get("cpuTime", 0)),
        site=data.get("site", ""),
        gridCE=data.get("gridCE", ""),
        platform=data.get("platform", ""),
        pilotType=data.get("pilotType", ""),
        ownerGroup=data.get("ownerGroup", ""),
        ownerDN=data.get("ownerDN", ""),
        tags=frozenset(data.get("tags") or ()),
        jobSharing=bool(data.get("jobSharing", False)),
    )
