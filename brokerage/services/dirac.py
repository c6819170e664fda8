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
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, Exists, OuterRef

from brokerage.adapters.dirac import (
    FIELDS,
    cpu_segments,
    dirac_groups,
    dirac_groups_data,
    dirac_priority_rows,
    engine_task_queues,
    task_queue_index_read,
)
from brokerage.engine.dirac.matcher import (
    CLAIM_PERMUTATION,
    CLAIM_SHUFFLE,
    SHUFFLE_PRIME,
    IndexParts,
    MatcherTrail,
    TaskQueueIndex,
    claim_order,
    matcher_run,
    permutation_keys,
)
from brokerage.engine.dirac.rules import (
    MATCH_RULE_KEYS,
    Group,
    MatchRules,
    Resource,
    no_match_reasons,
    task_queue_priorities,
)
from brokerage.engine.dirac.rules import cpu_segment as cpu_segment
from brokerage.engine.dirac.scenario import resource_data, resource_from_data
from brokerage.inputs_codec import canonical_json, day_of, part_digest
from brokerage.models import (
    DiracJob,
    DiracJobStatusLog,
    DiracMatchInputs,
    DiracMatchRecord,
    DiracTaskQueue,
    DiracTaskQueueValue,
)
from brokerage.models.dirac import match_resource_stored
from brokerage.selectors.dirac_rules import dirac_rules
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.services.bulk import bulk_update_values
from brokerage.services.inputs import parts_store

ACTOR = "dirac matcher"


def _requirements(job: Mapping[str, Any], segments) -> tuple[dict[str, Any], str]:
    single = {
        "ownerDN": job.get("owner", ""),
        "ownerGroup": job.get("ownerGroup", ""),
        "setup": job.get("setup", ""),
        "cpuTime": int(cpu_segment(float(job.get("cpuTime", 0)), segments)),
    }
    # RAM joins the digest only when asked for, so queues made before DIRAC v9's RAM requirements keep their key
    ram = {"minRAM": int(job.get("minRAM") or 0), "maxRAM": int(job.get("maxRAM") or 0)}
    if any(ram.values()):
        single.update(ram)
    multi = {name: sorted(set(job.get(name) or ())) for name in FIELDS}
    # seed 003's GridMiddlewares joins the digest only when a job names one (keys made before it stay as they were)
    if not multi["gridMiddlewares"]:
        del multi["gridMiddlewares"]
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
            minRAM=wanted[key].get("minRAM", 0),
            maxRAM=wanted[key].get("maxRAM", 0),
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
        for value in wanted[key].get(name, ())
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
    """Task-queue priorities from the group shares (settings.DIRAC_GROUPS / DIRAC_GROUP_SHARES, default 1000 a
    group) and the average priority of each queue's waiting jobs under the profile's rules (REFERENCE.md; the
    `dirac` profile: TaskQueueDB.recalculateTQSharesForEntity), for the groups given (a group's priorities depend
    only on its own queues) or all. Only changed priorities are written, and only then are the matchers' indexes
    told to rebuild. Returns how many changed."""
    rules = dirac_rules()
    rows = dirac_priority_rows(groups=groups, rules=rules)
    current = {row["id"]: row["priority"] for row in rows}
    priorities = task_queue_priorities(rows, groups=dirac_groups(), rules=rules)
    changed = sorted((tq_id, value) for tq_id, value in priorities.items() if value != current[tq_id])
    if changed:
        bulk_update_values(DiracTaskQueue, fields=("priority",), rows=changed)
        task_queue_version_bump()
    return len(changed)


def _waiting_groups(task_queue_id: int) -> list[tuple[float, int]]:
    """(user priority, number of waiting jobs) of a task queue, by priority: what the user priority is drawn from
    (dirac_matcher.user_priority_draw), so no job list is read."""
    return list(
        DiracJob.objects.filter(task_queue_id=task_queue_id, status="Waiting")
        .values_list("userPriority")
        .annotate(n=Count("pk"))
        .order_by("userPriority")
    )


def _claim(task_queue_id: int, priority: float, rng: random.Random, resource: Resource, now: datetime, first_jobs: int):
    """The first `first_jobs` waiting jobs of that priority by id, shuffled; the first one still Waiting becomes
    Matched. Returns the job (None: every one taken meanwhile), the first jobs by id and those passed over."""
    with transaction.atomic():
        first = DiracJob.objects.filter(task_queue_id=task_queue_id, status="Waiting", userPriority=priority).order_by(
            "jobID"
        )
        if connection.features.has_select_for_update_skip_locked:
            first = first.select_for_update(skip_locked=True, no_key=True)
        ids = list(first.values_list("jobID", flat=True)[:first_jobs])
        order = claim_order(ids, rng, CLAIM_SHUFFLE)
        for tried, job_id in enumerate(order):
            if DiracJob.objects.filter(jobID=job_id, status="Waiting").update(
                status="Matched", site=resource.site_name, matchTime=now, lastUpdateTime=now, minorStatus="Assigned"
            ):
                DiracJobStatusLog.objects.create(
                    job_id=job_id,
                    timestamp=now,
                    old_status="Waiting",
                    new_status="Matched",
                    actor=ACTOR,
                    reason=f"matched to {resource.site_name or 'a resource'}",
                )
                return job_id, ids, order[:tried]
    return None, ids, ids


def _claim_in_one_statement(task_queue_id, priority, rng, resource: Resource, now, seed, first_jobs: int):
    """PostgreSQL: the claim, its status-log row and the match record in one statement (one round trip, atomic):
    the first `first_jobs` Waiting jobs of the priority by id, locked with SKIP LOCKED so concurrent matchers pass over
    each other's, ordered by the seeded permutation (dirac_matcher.claim_order); the first one becomes Matched.
    Returns the job, the first jobs by id and the match record's id."""
    multiplier, offset = permutation_keys(rng)
    reason = f"matched to {resource.site_name or 'a resource'}"
    record = _record_fields(resource, now)
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
            INSERT INTO dirac_match_records
                (at, site, "gridCE", setup, "cpuTime", resource, matched, job, task_queue, seed, reasons)
            SELECT %(now)s, %(site)s, %(ce)s, %(setup)s, %(cpu)s, %(resource)s, true, "jobID", %(tq)s, %(seed)s,
                '[]'::jsonb FROM picked
            RETURNING id
        )
        SELECT (SELECT "jobID" FROM picked), (SELECT array_agg("jobID" ORDER BY "jobID") FROM first_ten),
            (SELECT id FROM recorded)
    """
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "tq": task_queue_id,
                "priority": priority,
                "first": first_jobs,
                "site": resource.site_name,
                "now": now,
                "a": multiplier,
                "b": offset,
                "p": SHUFFLE_PRIME,
                "reason": reason,
                "actor": ACTOR,
                "setup": record["setup"],
                "cpu": record["cpuTime"],
                "ce": record["gridCE"],
                "resource": DiracMatchRecord._meta.get_field("resource").get_prep_value(record["resource"]),
                "seed": seed,
            },
        )
        job, first, record_id = cursor.fetchone()
    return job, list(first or []), record_id


_INDEX: TaskQueueIndex | None = None
# what this process's indexes are stored as (requirement blocks, priorities whole or as a difference)
_INDEX_PARTS = IndexParts()
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
    # no version (the cache is unreachable): other processes' changes cannot be seen, so the index is read anew
    if _INDEX is None or version is None or _INDEX.version != version:
        _INDEX = task_queue_index_read(version=version)
    return _INDEX


def _disable_if_empty(index: TaskQueueIndex, tq_id: int) -> None:
    """A task queue without waiting jobs leaves the matching (DIRAC deletes empty task queues); a later job for
    it enables it again. As DIRAC's deleteTaskQueueIfEmpty does, its group's priorities are computed again: its
    owner may no longer split the share. (DIRAC notices at the match that takes the last job; we at the first
    request that draws the empty queue.)"""
    index.disable(tq_id)
    emptied = DiracTaskQueue.objects.filter(pk=tq_id).exclude(
        Exists(DiracJob.objects.filter(task_queue=OuterRef("pk"), status="Waiting"))
    )
    group = emptied.values_list("ownerGroup", flat=True).first()
    if group is not None and emptied.update(enabled=False):
        dirac_priorities_update(groups=[group])


def _record_fields(resource: Resource, now: datetime) -> dict[str, Any]:
    """What a match record keeps of the request (the PostgreSQL claim writes the same columns in its SQL)."""
    return {
        "at": now,
        # the record's columns keep the first value sent (its stored resource, every value)
        "site": resource.site_name,
        "gridCE": resource.gridCE[0] if resource.gridCE else "",
        "setup": resource.setup,
        "cpuTime": int(resource.cpuTime),
        "resource": match_resource_stored(resource_data(resource)),
    }


def dirac_match_request(
    *, resource: Resource, now: datetime, seed: int | None = None, dry_run: bool = False
) -> dict[str, Any]:
    """One Matcher request under the profile's rules (engine.dirac.matcher.matcher_run over the database):
    the job claimed (or None) and how it was chosen; a no-match lists the nearest task queues with the rules they
    fail. Recorded as a DiracMatchRecord with the seed of its draws, and what it drew from (DiracMatchInputs) so
    that it can be run again. A dry run claims and records nothing: it tells which task queue and user priority
    the request would draw from."""
    config = gdpconfig_view()
    rules, groups = MatchRules.from_config(config), dirac_groups()
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    trail = MatcherTrail(writer=_INDEX_PARTS)
    record_ids: list[int] = []

    def index_now() -> TaskQueueIndex:
        index = task_queue_index()
        trail.index_read(index)
        return index

    def waiting(tq_id: int) -> list[tuple[float, int]]:
        found = _waiting_groups(tq_id)
        trail.waiting_read(tq_id, found)
        return found

    def claim(tq_id: int, priority: float, generator: random.Random) -> tuple[int | None, list[int]]:
        if connection.vendor == "postgresql":
            job, first, record_id = _claim_in_one_statement(
                tq_id, priority, generator, resource, now, seed, rules.jobs_per_try
            )
            trail.claimed(CLAIM_PERMUTATION, rules.jobs_per_try, first, [], job)
        else:
            with transaction.atomic():  # claim, log and record: one commit
                job, first, passed = _claim(tq_id, priority, generator, resource, now, rules.jobs_per_try)
                record_id = None
                if job is not None:
                    record_id = DiracMatchRecord.objects.create(
                        **_record_fields(resource, now), matched=True, job=job, task_queue=tq_id, seed=seed
                    ).pk
            trail.claimed(CLAIM_SHUFFLE, rules.jobs_per_try, first, passed, job)
        if record_id is not None:
            record_ids.append(record_id)
        return job, first

    outcome = matcher_run(
        resource=resource,
        rules=rules,
        groups=groups,
        rng=random.Random(seed),
        index_now=index_now,
        waiting=waiting,
        emptied=_disable_if_empty,
        claim=None if dry_run else claim,
    )
    if outcome.found:
        found = {
            "matched": True,
            "task_queue": outcome.task_queue,
            "user_priority": outcome.user_priority,
            "matching_task_queues": outcome.matching,
            "highest_cpu_time": outcome.highest_cpu_time,
            "task_queue_order": rules.tq_order,
            "seed": seed,
        }
        if dry_run:
            return {**found, "dry_run": True, "job": None}
        dirac_match_inputs_store(record_id=record_ids[-1], at=now, trail=trail, config=config)
        return {**found, "job": outcome.job, "first_jobs": outcome.first_jobs}
    nearest = dirac_no_match_explanation(resource=resource, rules=rules, groups=groups)
    if dry_run:
        return {"matched": False, "dry_run": True, "job": None, "nearest": nearest, "seed": seed}
    record = DiracMatchRecord.objects.create(
        **_record_fields(resource, now),
        matched=False,
        seed=seed,
        reasons=sorted({code for item in nearest for code in item["failed"]}),
    )
    dirac_match_inputs_store(record_id=record.pk, at=now, trail=trail, config=config)
    return {"matched": False, "job": None, "nearest": nearest, "seed": seed}


def dirac_match_config(*, config) -> dict[str, Any]:
    """The configuration a matching request ran under, as kept with it: the matching parameters (and the profile)
    and the installation's groups with their shares."""
    return {
        "gdpconfig": {key: config.get(key) for key in ("PROFILE", *MATCH_RULE_KEYS)},
        "groups": dirac_groups_data(),
    }


def dirac_match_inputs_store(*, record_id: int, at: datetime, trail: MatcherTrail, config) -> None:
    """Keeps what a request drew from (models.DiracMatchInputs): its configuration and every task-queue index it
    read as ScenarioParts of its day, each once by content (one query when all are known, two otherwise), and
    its trail."""
    config_text = canonical_json(dirac_match_config(config=config))
    texts = {part_digest(config_text): ("dirac_config", config_text)}
    texts.update(trail.parts)
    parts_store(day=day_of(at), texts=texts)
    DiracMatchInputs.objects.create(record_id=record_id, at=at, config=part_digest(config_text), trail=trail.as_data())


def dirac_no_match_explanation(
    *,
    resource: Resource,
    limit: int = 5,
    rules: MatchRules | None = None,
    groups: Mapping[str, Group] | None = None,
) -> list[dict[str, Any]]:
    """The task queues with waiting jobs that came nearest to matching: fewest failed rules (then the oldest),
    with every rule they fail, the values compared and their waiting jobs (three queries; no job table scan)."""
    from brokerage.engine.core.reasons import explain

    rules = rules or dirac_rules()
    groups = dirac_groups() if groups is None else groups
    with_jobs = DiracTaskQueue.objects.filter(
        Exists(DiracJob.objects.filter(task_queue=OuterRef("pk"), status="Waiting"))
    )
    scored = []
    for tq in engine_task_queues(queues=with_jobs):
        failed = no_match_reasons(tq, resource, rules, groups)
        if failed:
            scored.append((len(failed), tq.id, failed))
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
    """A Resource from a request body (validated by the API serializer; the engine's reading, so the API and a
    scenario file describe a resource alike)."""
    return resource_from_data({key: value for key, value in data.items() if key not in ("seed", "dry_run")})
