"""Job generation and job brokerage over the database, one work queue per cycle (seed 002, JEDI's JobGenerator).

A cycle holds the JEDI process lock of (vo, prodSourceLabel, work queue), so only one worker generates for a
work queue at a time; it asks the job throttler per resource type how many jobs may be made, claims the work
queue's tasks that can have jobs (row locks that other workers skip, plus lockedBy/lockedTime), splits each
task's unused master input files into jobs (file or event level; scouts first), brokers each task's jobs as
one job set, and in one transaction per cycle stores the decisions, the jobs (defined → assigned at the chosen
queue), the files they use (ready → picked), their Event rows and the tasks' new statuses.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Case, CharField, Count, Exists, F, OuterRef, Q, Value, When
from django.db.models.functions import Coalesce, Greatest

from brokerage import jumbo
from brokerage.adapters.job_brokerage import (
    ANALYSIS_PLUGIN,
    JOBS_PER_SET,
    PLUGIN,
    SCOUT_JOBS,
    analysis_user_stats,
    job_grid_base,
    job_set_inputs,
    job_set_scenario,
    job_set_secondaries,
    job_set_task_rows,
)
from brokerage.adapters.shares import share_allocations
from brokerage.engine.core.decision import Decision as EngineDecision
from brokerage.engine.panda.job_broker import AtlasProdJobBroker
from brokerage.engine.panda.urgency import URGENT
from brokerage.gdpconfig import ConfigView
from brokerage.gdpconfig.registry import RESOURCE_TYPES
from brokerage.jumbo import jumbo_jobs_asked
from brokerage.models import (
    BrokerageCycle,
    DatasetFile,
    Event,
    Job,
    JobStatusLog,
    Task,
    WorkQueue,
)
from brokerage.models.jobs import input_files_text
from brokerage.plugins import THROTTLER_PLUGIN, plugin_registry
from brokerage.selectors.gdpconfig import cycle_gdpconfig
from brokerage.selectors.jumbo import jumbo_jobs_active
from brokerage.services.bulk import bulk_update_values, rows_insert, rows_lock
from brokerage.services.counters import dataset_counters_refresh
from brokerage.services.cycles import brokerage_pending_mark, task_claim, task_claim_release
from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_store_many, worker_name
from brokerage.services.locks import process_lock_acquire, process_lock_release
from brokerage.services.merging import MERGE_ATTEMPT_FAILED, MergeSet, merge_outcomes_apply, merge_sets
from brokerage.services.outputs import output_files_make
from brokerage.services.progress import task_completion_check
from brokerage.services.retries import job_retry_history_record
from brokerage.services.scouting import task_scouting_check
from brokerage.services.status import job_status_transition_many, task_status_transition_many
from brokerage.shares import GLOBAL_SHARE_LEVEL, WORK_QUEUE_LEVEL, ShareAllocation
from brokerage.splitter import (
    JobChunk,
    RandomSeeds,
    chunks_with_secondaries,
    job_set_summary,
    random_seeds,
    task_chunks,
)
from brokerage.states import (
    CO_JUMBO_JOB,
    ES_JOB,
    ES_MERGE_JOB,
    JUMBO_JOB,
    MERGE_MAX_ATTEMPTS,
    MERGE_PRIORITY,
    PREPROCESS_HANDLING,
    TASK_GENERATING,
    WAITING_CO_JUMBO,
)
from brokerage.throttle import (
    HIMEM_MB_PER_CORE,
    WHOLE_QUEUE_WORK_QUEUES,
    JobCounts,
    LimitLevel,
    ThrottleLimits,
    ThrottleVerdict,
    job_throttle,
    limit_keys,
    resource_family,
    throttle_threshold,
)

logger = logging.getLogger(__name__)

ACTOR = "job generator"
GENERATING = TASK_GENERATING  # the statuses whose tasks get new jobs
JOB_COUNT_STATUSES = ("running", "assigned", "activated", "starting", "defined", "waiting")


def work_queue_members(*, work_queue: WorkQueue) -> list[int]:
    """The work queues whose tasks a cycle for this one generates: itself, or a partition's sub-queues (seed 002,
    "Work queues": "JEDI works with the partition queue, e.g., tasks in the partition queue are submitted together
    regardless of sub queues")."""
    if not work_queue.is_partition:
        return [work_queue.pk]
    return list(WorkQueue.objects.filter(partition=work_queue).order_by("pk").values_list("pk", flat=True))


def work_queue_job_counts(*, work_queue_ids: list[int]) -> dict[str, dict[str, int]]:
    """Jobs of a work queue (a partition's: of its sub-queues) by resource type and status (one query): what the
    throttler compares."""
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for resource, status, jobs in (
        Job.objects.filter(workQueue_id__in=work_queue_ids, jobStatus__in=JOB_COUNT_STATUSES)
        .values_list("resource_type", "jobStatus")
        .annotate(n=Count("pk"))
    ):
        counts[resource][status] = jobs
    return counts


def throttle_limits(*, config: ConfigView, work_queue: str, resource_type: str, threshold: float) -> ThrottleLimits:
    """The three limits for a work queue and resource type, each from the most specific key set (limit_keys), with
    its level; a stored 0 is passed over as unset, as JobThrottlerBase 1.0.4 does (`if value:`)."""
    found: dict[str, tuple[int | None, str, str | None]] = {}
    for tag in ("NQUEUELIMIT", "NQUEUECAP", "NRUNNINGCAP"):
        found[tag] = (None, LimitLevel.RESOURCE_TYPE, None)
        for key, level in limit_keys(tag, work_queue, resource_type):
            value, origin = config.explain(tag, workqueue=key[len(tag) + 1 :])
            if origin == key and value:
                found[tag] = (value, level, key)
                break
    return ThrottleLimits(
        threshold=threshold,
        queue_limit=found["NQUEUELIMIT"][0],
        queue_cap=found["NQUEUECAP"][0],
        running_cap=found["NRUNNINGCAP"][0],
        queue_limit_level=found["NQUEUELIMIT"][1],
        queue_cap_level=found["NQUEUECAP"][1],
        running_cap_level=found["NRUNNINGCAP"][1],
        keys={tag: key for tag, (_, _, key) in found.items() if key},
    )


def throttle_verdicts(
    *, work_queue: WorkQueue, resource_types: set[str], config: ConfigView, tasks: list[dict[str, Any]]
) -> dict[str, ThrottleVerdict]:
    """The throttler's verdict for each resource type the cycle's tasks need (two queries: the job counts and
    the highest queued priority per resource type with its number of jobs). The event service work queue is
    throttled as a whole, its priorities too (JobThrottlerBase.non_rt_wqs)."""
    members = work_queue_members(work_queue=work_queue)
    counts = {resource: JobCounts.from_statuses(by_status) for resource, by_status in
              work_queue_job_counts(work_queue_ids=members).items()}  # fmt: skip
    whole = sum(counts.values(), JobCounts())
    tops: dict[str, tuple[int, int]] = {}  # resource type → (its highest queued priority, jobs at it)
    for resource, priority, jobs in (
        Job.objects.filter(workQueue_id__in=members, jobStatus__in=("defined", "assigned", "activated", "starting"))
        .values_list("resource_type", "currentPriority")
        .annotate(jobs=Count("pk"))
        .order_by()
    ):
        if resource not in tops or priority > tops[resource][0]:
            tops[resource] = (priority, jobs)
    per_queue = work_queue.queue_name in WHOLE_QUEUE_WORK_QUEUES
    if per_queue and tops:
        top = max(priority for priority, _ in tops.values())
        tops = {"": (top, sum(jobs for priority, jobs in tops.values() if priority == top))}
    name = config_name(work_queue.queue_name)
    threshold = throttle_threshold(config=config)
    verdicts = {}
    for resource in sorted(resource_types):
        family = resource_family(resource)
        waiting = [t["currentPriority"] for t in tasks if per_queue or t["resource_type"] == resource]
        queued_priority, queued_at_top = tops.get("" if per_queue else resource, (None, 0))
        verdicts[resource] = job_throttle(
            work_queue=work_queue.queue_name,
            throttled=work_queue.queue_share is not None,
            resource=counts.get(resource, JobCounts()),
            family=sum((n for rt, n in counts.items() if rt.startswith(family)), JobCounts()),
            whole_queue=whole,
            limits=throttle_limits(config=config, work_queue=name, resource_type=resource, threshold=threshold),
            highest_waiting_priority=max(waiting, default=None),
            highest_queued_priority=queued_priority,
            queued_at_highest_priority=queued_at_top,
            analysis=work_queue.queue_type == "analysis",
        )
    return verdicts


def config_name(work_queue_name: str) -> str:
    """A work queue's name in a gdpconfig key (NQUEUELIMIT_MC_16, NTASKS_Heavy_Ion): spaces become underscores."""
    return "_".join(work_queue_name.split(" "))


def _claim(*, work_queue_ids: list[int], now: datetime, owner: str, per_resource_type: int, limit: int) -> list[int]:
    """The tasks of the work queues (one, or a partition's sub-queues together) that can get jobs: those with input
    left — ready files, or (event level) picked, running or partial files whose events are not all out — or with
    pre-merged outputs (or ES jobs' ranges) to merge, and those waiting for their preprocess job (topreprocess),
    highest priority first whichever sub-queue they are in; up to `per_resource_type` of each resource type (NTASKS:
    JobGenerator 1.0.4 gets nTasks tasks for each resource type of the work queue in turn), `limit` in all (the
    deployment's bound on a cycle, JOB_GENERATION_BATCH)."""
    inputs = DatasetFile.objects.filter(task=OuterRef("pk"), type__in=("input", "pseudo_input"))
    # jobs merging that no merge job holds (none yet, or its attempt failed): merging.merge_sets says when they are due
    unmerged = Job.objects.filter(task=OuterRef("pk"), jobStatus="merging", isMerge=False).filter(
        Q(mergeJob__isnull=True) | Q(mergeJob__jobStatus__in=MERGE_ATTEMPT_FAILED)
    )
    has_input = (
        Exists(inputs.filter(status="ready"))
        | (
            Q(taskParams__has_key="nEventsPerJob")
            & Exists(inputs.filter(status__in=("picked", "running", "partial"), nEvents__isnull=False))
        )
        | ((Q(taskParams__mergeOutput=True) | Q(eventService=ES_JOB)) & Exists(unmerged))
    )
    candidates = (
        Task.objects.filter(workQueue_id__in=work_queue_ids)
        .filter((Q(status__in=GENERATING) & has_input) | Q(status="topreprocess"))
        .order_by("-currentPriority", "jediTaskID")
    )
    candidates = candidates.annotate(claimed_type=task_resource_type_sql())
    claimed: list[int] = []
    for resource_type in RESOURCE_TYPES:
        if len(claimed) >= limit:
            break
        wanted = min(per_resource_type, limit - len(claimed))
        claimed += task_claim(
            candidates=candidates.filter(claimed_type=resource_type), now=now, owner=owner, limit=wanted
        )
    return claimed


def task_resource_type_sql() -> Case:
    """throttle.task_resource_type in SQL, for claiming by resource type: MCORE above one core, _HIMEM above
    2,000 MB a core (ramCount per core when its unit says PerCore, per job otherwise)."""
    cores = Greatest(Coalesce(F("coreCount"), Value(1)), Value(1))
    per_core_unit = Q(ramUnit__endswith="PerCore")
    himem = (per_core_unit & Q(ramCount__gt=HIMEM_MB_PER_CORE)) | (
        ~per_core_unit & Q(ramCount__gt=cores * HIMEM_MB_PER_CORE)
    )
    multi = Q(coreCount__gt=1)
    return Case(
        When(multi & himem, then=Value("MCORE_HIMEM")),
        When(multi, then=Value("MCORE")),
        When(himem, then=Value("SCORE_HIMEM")),
        default=Value("SCORE"),
        output_field=CharField(),
    )


def _held_decision(*, message: str, extra: dict, now, seed: int = 0) -> EngineDecision:
    """A decision of the job throttler that holds jobs back (a verdict, or a share over its part), stored with its
    numbers for the task pages and the API."""
    return EngineDecision(
        plugin=THROTTLER_PLUGIN,
        outcome="throttled",
        chosen=None,
        candidates=(),
        skipped={},
        stages=(),
        message=message[:500],
        retry_after_minutes=None,
        now=now,
        seed=seed,
        initial=(),
        extra=extra,
    )


def _throttled_decision(*, work_queue: WorkQueue, resource: str, verdict: ThrottleVerdict, now, seed) -> EngineDecision:
    return _held_decision(
        message=f"work queue {work_queue.queue_name} {resource}: {verdict.message}",
        extra={"rule": verdict.rule, "detail": dict(verdict.detail), "resource_type": resource},
        now=now,
        seed=seed,
    )


def _share_decision(*, allocation: ShareAllocation, now) -> EngineDecision:
    return _held_decision(
        message=allocation.message,
        extra={
            "rule": "share_over_target" if allocation.held == "running" else "share_queued_over_target",
            "detail": {
                "level": allocation.level,
                "share": allocation.name,
                "executing_hs06": round(allocation.executing, 1),
                "queued_hs06": round(allocation.queued, 1),
                "target_hs06": round(allocation.target, 1),
                "effective_percent": round(allocation.effective, 2),
                "threshold": allocation.queued_ratio,
            },
        },
        now=now,
    )


def share_holds(
    *, work_queue: WorkQueue, tasks: list[dict], config: ConfigView, now: datetime
) -> dict[int, ShareAllocation]:
    """Task → the share allocation that holds its new jobs back (SHARE_ALLOCATION_RULE): its work queue's (a
    sub-queue's partition's) or else its global share's, when over its target (running, or queued over the throttler's
    threshold × it). processingType urgent "also ignores
    fairshare" (seed 002, "Express"): never held."""
    threshold = throttle_threshold(config=config)
    allocations = share_allocations(config=config, queue_type=work_queue.queue_type, queued_ratio=threshold, now=now)
    top = work_queue.partition.queue_name if work_queue.partition_id else work_queue.queue_name
    queue_allocation = allocations.get((WORK_QUEUE_LEVEL, top))
    holds = {}
    for task in tasks:
        if task["processingType"] == URGENT:
            continue
        allocation = queue_allocation if queue_allocation and queue_allocation.held else None
        allocation = allocation or allocations.get((GLOBAL_SHARE_LEVEL, task["gshare"]))
        if allocation is not None and allocation.held:
            holds[task["jediTaskID"]] = allocation
    return holds


def job_generation_dispatch(*, now: datetime) -> list[int]:
    """The dispatch's turn before the work queues' cycles: closes the tasks whose master inputs all have an
    outcome (task_completion_check, once for every work queue: it reads every running task's files, and each
    work queue's cycle reading them again cost a sixth of the workers' time at a million jobs a day, issue 32),
    then returns the work queues to generate for (work_queues_generating)."""
    task_completion_check(now=now)
    return work_queues_generating()


def work_queues_generating() -> list[int]:
    """The active production and analysis work queues a job-generation cycle each runs for: the normal queues
    outside any partition and the partitions, whose cycle generates for all their sub-queues together (seed 002:
    "tasks in the partition queue are submitted together regardless of sub queues")."""
    return list(
        WorkQueue.objects.filter(status="active", queue_type__in=("production", "analysis"), partition__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def job_generation_cycle_run(
    *, work_queue_id: int, now: datetime, vo: str = "atlas", prod_source_label: str = "managed", limit: int = 1000
) -> BrokerageCycle | None:
    """One job-generation cycle for a work queue; None when another worker holds the work queue's process
    lock. The cycle row records its status, duration, error and counts (assigned / pending / throttled)."""
    owner = worker_name()
    if not process_lock_acquire(
        vo=vo, prod_source_label=prod_source_label, work_queue_id=work_queue_id, owner=owner, now=now
    ):
        return None
    try:
        return _generate(work_queue_id=work_queue_id, now=now, vo=vo, owner=owner, limit=limit)
    finally:
        process_lock_release(vo=vo, prod_source_label=prod_source_label, work_queue_id=work_queue_id, owner=owner)


def _generate(*, work_queue_id: int, now: datetime, vo: str, owner: str, limit: int) -> BrokerageCycle:
    work_queue = WorkQueue.objects.get(pk=work_queue_id)
    members = work_queue_members(work_queue=work_queue)
    for member in members:
        task_scouting_check(work_queue_id=member, now=now)
    gdpconfig = cycle_gdpconfig(vo=vo)
    base = job_grid_base(now=now, gdpconfig=gdpconfig)
    analysis = work_queue.queue_type == "analysis"
    plugin = ANALYSIS_PLUGIN if analysis else PLUGIN
    broker = plugin_registry().get(plugin)()
    frame = broker.frame(base)
    cycle = cycle_start(plugin=plugin, now=now, gdpconfig=gdpconfig, frame=frame, inputs=base.raw)
    # NTASKS_<work queue>: a partition's sub-queues are generated together, under the partition's name
    per_resource_type = base.config.get("NTASKS", workqueue=config_name(work_queue.queue_name))
    claimed = _claim(work_queue_ids=members, now=now, owner=owner, per_resource_type=per_resource_type, limit=limit)
    try:
        tasks = job_set_task_rows(claimed)
        since = base.config.get("DATA_CHECK_TIMEOUT_FROM")
        user_stats = analysis_user_stats(now=now, task_ids=claimed, since=since) if analysis else {}
        ordered = sorted(tasks.values(), key=lambda t: (-t["currentPriority"], t["jediTaskID"]))
        # the shares first: a task its share holds back does not wait for jobs this cycle, so the throttler's
        # highest waiting priority is among the others' (a held share's urgent tasks would keep the rest out)
        holds = share_holds(work_queue=work_queue, tasks=ordered, config=base.config, now=now)
        ordered = [task for task in ordered if task["jediTaskID"] not in holds]
        verdicts = throttle_verdicts(
            work_queue=work_queue,
            resource_types={t["resource_type"] for t in ordered},
            config=base.config,
            tasks=ordered,
        )
        masters, files, replicas, used = job_set_inputs(claimed)
        secondaries = job_set_secondaries(claimed)
        items: list[DecisionToStore] = [
            DecisionToStore(_share_decision(allocation=allocation, now=now))
            for allocation in {(a.level, a.name): a for a in holds.values()}.values()
        ]
        items += [
            DecisionToStore(_throttled_decision(work_queue=work_queue, resource=rt, verdict=v, now=now, seed=0))
            for rt, v in verdicts.items()
            # a SKIP, or a PASS for the most urgent tasks only: both hold some task's jobs back, which its page says
            if not v.passed or v.min_priority is not None
        ]
        decided, plans = _job_set_decisions(
            ordered=ordered, verdicts=verdicts, inputs=(masters, files, replicas, used), cycle_id=cycle.pk,
            base=base, broker=broker, user_stats=user_stats, secondaries=secondaries,
        )  # fmt: skip
        items += decided
        # merge job sets of the tasks whose outputs are merged (merging.py), pre-assigned to their queue
        for number, merge in enumerate(merge_sets(tasks=tasks, now=now)):
            task = tasks[merge.task_id]
            jobset_id = (cycle.pk << 20) + len(ordered) + number
            scenario = job_set_scenario(
                base=base,
                task=task,
                datasets=[],
                jobs=merge.jobs(),
                seed=(jobset_id * 7919) % 2**31,
                plugin=broker.name,
                user_stats=user_stats.get(task["jediTaskID"]),
            )
            decision = broker.decide(scenario)
            items.append(
                DecisionToStore(decision, task_id=task["jediTaskID"], jobset_id=jobset_id, inputs=scenario.raw)
            )
            plans.append((task, [JobChunk((), merge.input_bytes, None)], jobset_id, decision, merge))
        with transaction.atomic():
            # every task this transaction writes, locked at once in the one lock order (services.bulk): the
            # later statements then never wait on a task while holding another
            rows_lock(Task, [task["jediTaskID"] for task, *_ in plans])
            decision_store_many(cycle=cycle, items=items, frame=frame)
            file_info = {row["fileID"]: row for rows in files.values() for row in rows}
            _apply(
                plans=plans, queues=base.queues, work_queue=work_queue, files=file_info, now=now,
                active_jumbo=jumbo_jobs_active(task_ids=[task["jediTaskID"] for task, *_ in plans]),
            )  # fmt: skip
    except Exception as error:
        logger.exception("job generation cycle %s failed", cycle.pk)
        return cycle_finish(cycle=cycle, now=now, error=f"{type(error).__name__}: {error}")
    finally:  # whatever happened, even in cycle_finish (brokerage.tasks closes a cycle left running)
        task_claim_release(task_ids=claimed, owner=owner)
    return cycle_finish(cycle=cycle, now=now)


@dataclass
class GenerationWrites:
    """What a cycle's decisions make (job_generation_plan), before anything is written: the new jobs (not saved),
    for each the chunk of inputs it takes and the jobs whose files it takes over, the tasks' moves and dialogs, and
    the merge sets placed or skipped."""

    jobs: list[Job] = field(default_factory=list)
    job_chunks: list[JobChunk] = field(default_factory=list)
    previous_jobs: list[list[int]] = field(default_factory=list)
    task_moves: dict[str, dict[int, tuple[str, str]]] = field(default_factory=lambda: defaultdict(dict))
    task_extra: dict[int, dict] = field(default_factory=dict)
    throttled_dialogs: list[tuple[int, str]] = field(default_factory=list)
    merged: list[tuple[MergeSet, int]] = field(default_factory=list)  # (merge set, index of its merge job in jobs)
    merge_skips: list[MergeSet] = field(default_factory=list)
    jumbo_flags: dict[int, str] = field(default_factory=dict)  # the useJumbo flag of tasks with jumbo jobs, after
    pending: list[int] = field(default_factory=list)
    assigned: list[int] = field(default_factory=list)


# A job set to write: (task row, its chunks, its job set id, its decision, the merge set it is, if one)
Plan = tuple[dict, list[JobChunk], int, EngineDecision, MergeSet | None]


def _job_set_decisions(
    *, ordered: list[dict], verdicts, inputs, cycle_id: int, base, broker, user_stats, secondaries=({}, {})
) -> tuple[list[DecisionToStore], list[Plan]]:
    """One job set per task the throttler lets through, in priority order, each brokered: scouts first (nScoutJobs)
    or JOBS_PER_SET jobs, never more than its resource type's budget left (the throttler's max jobs)."""
    masters, files, replicas, used = inputs
    budget = {rt: (v.max_jobs if v.max_jobs is not None else math.inf) for rt, v in verdicts.items()}
    items: list[DecisionToStore] = []
    plans: list[Plan] = []
    for sequence, task in enumerate(ordered):
        verdict = verdicts[task["resource_type"]]
        if not verdict.passed or (verdict.min_priority is not None and task["currentPriority"] < verdict.min_priority):
            continue
        master = masters.get(task["jediTaskID"])
        preprocess = task["status"] == "topreprocess"
        if master is None and not preprocess:
            continue
        scouts = task["status"] == "ready" and int((task["taskParams"] or {}).get("nScoutJobs", SCOUT_JOBS)) > 0
        wanted = int((task["taskParams"] or {}).get("nScoutJobs", SCOUT_JOBS)) if scouts else JOBS_PER_SET
        wanted = int(min(wanted, budget[task["resource_type"]]))
        if preprocess:  # one job, reading nothing of the task's input (JobGenerator.doGeneratePrePro, 1.0.4)
            chunks = [JobChunk((), 0, None)] if wanted > 0 else []
        else:
            chunks = task_chunks(task, files.get(task["jediTaskID"], []), used, wanted) if wanted > 0 else []
            # each job's secondary files beside its master ones (splitter, "Dataset attributes")
            chunks = chunks_with_secondaries(chunks, secondaries[0].get(task["jediTaskID"], ()))
        if not chunks:
            continue
        jobset_id = (cycle_id << 20) + sequence
        found = replicas[master["datasetName"]] if master else {}
        scenario = job_set_scenario(
            base=base,
            task=task,
            datasets=[]
            if master is None
            else [
                {
                    "name": master["datasetName"],
                    "master": True,
                    "nFiles": master["nFiles"],
                    "sizeGB": max((r["sizeGB"] for r in found.values()), default=0.0),
                    "replicas": found,
                },
                *secondaries[1].get(task["jediTaskID"], ()),
            ],
            jobs=job_set_summary(chunks, scouts=scouts, task=task),
            seed=(jobset_id * 7919) % 2**31,
            plugin=broker.name,
            user_stats=user_stats.get(task["jediTaskID"]),
        )
        decision = broker.decide(scenario)
        items.append(DecisionToStore(decision, task_id=task["jediTaskID"], jobset_id=jobset_id, inputs=scenario.raw))
        if decision.chosen is not None:
            budget[task["resource_type"]] -= len(chunks)
        plans.append((task, chunks, jobset_id, decision, None))
    return items, plans


def _apply(
    *, plans, queues, work_queue: WorkQueue, files: dict[int, dict], now: datetime, active_jumbo: dict | None = None
) -> None:
    """Writes the outcome of every job set: jobs, their log rows, files, events, dataset counters, tasks, and
    the retry history of files that come back after a failed or closed job."""
    seeds = task_random_seeds(tasks=[task for task, *_ in plans])
    plan = job_generation_plan(
        plans=plans, queues=queues, work_queue=work_queue, files=files, now=now, seeds=seeds, active_jumbo=active_jumbo
    )
    _write(plan, now=now)


# the stage of job brokerage that keeps the queues taking jumbo jobs for them (AtlasProdJobBroker.late_skips)
JUMBO_STAGE = AtlasProdJobBroker.late_stage


def jumbo_placements(*, task: dict, decision: EngineDecision, active: dict[int, dict[str, int]]) -> list[str]:
    """The queues of the jumbo jobs a job set adds (JobGenerator.makeJumboJobs, 1.0.4): as many as the task's
    nJumboJobs less its active ones, each at a queue job brokerage kept for jumbo jobs (the stage "jumbo jobs"), no
    queue holding more than maxJumboPerSite (1 unset) of the task's; queues in name order."""
    params = task["taskParams"] or {}
    asked = jumbo_jobs_asked(use_jumbo=task.get("useJumbo") or "", params=params, site=task.get("site") or "")
    running = dict(active.get(task["jediTaskID"], {}))
    wanted = asked - sum(running.values())
    if wanted <= 0:
        return []
    per_site = params.get("maxJumboPerSite") or 1
    candidates = sorted(name for name, skip in decision.skipped.items() if skip.filter == JUMBO_STAGE)
    placed: list[str] = []
    for name in candidates:
        queue = name.partition("/")[0]
        while len(placed) < wanted and running.get(queue, 0) < per_site:
            placed.append(queue)
            running[queue] = running.get(queue, 0) + 1
    return placed


def _event_service_flag(task: dict, *, merge: bool, co_jumbo: bool) -> int:
    """A new job's eventService (EventServiceUtils, 1.0.4): an event service task's merge job is an ES merge job (2),
    its other jobs co-jumbo (5) while it has jumbo jobs, else ES jobs (1); any other task's 0."""
    if task.get("eventService") != ES_JOB:
        return 0
    if merge:
        return ES_MERGE_JOB
    return CO_JUMBO_JOB if co_jumbo else ES_JOB


def _task_job_fields(task: dict, *, work_queue_id: int) -> dict:
    """What every job of a task takes from it (a partition's job: its own sub-queue's work queue)."""
    return {
        "prodSourceLabel": task["prodSourceLabel"] or "managed",
        "processingType": task["processingType"] or "",
        "nucleus": task["nucleus"] or "",
        "gshare": task["gshare"] or "",
        "workQueue_id": task.get("workQueue_id") or work_queue_id,
        "resource_type": task["resource_type"],
        "prodUserName": task["userName"] or "",
        "workingGroup": task["workingGroup"] or "",
        "transformation": task["transUses"] or "",
        "homepackage": task["transHome"] or "",
        "cmtConfig": task["architecture"] or "",
    }


def _jumbo_job(task: dict, queue: str, jobset_id: int, number: int, now: datetime, *, work_queue_id: int) -> Job:
    """A jumbo job: it takes any events of its task on demand, none given with it (seed 002)."""
    return Job(
        task_id=task["jediTaskID"],
        jobsetID=jobset_id,
        jobName=f"{task['taskName'][:200]}.{jobset_id}.jumbo{number}",
        jobStatus="pending",
        eventService=JUMBO_JOB,
        currentPriority=task["currentPriority"],
        assignedPriority=task["currentPriority"],
        computingSite=queue,
        **_task_job_fields(task, work_queue_id=work_queue_id),
        coreCount=task["coreCount"] or 1,
        nInputFiles=0,
        attemptNr=1,
        maxAttempt=int((task["taskParams"] or {}).get("maxAttempt", 3)),
        creationTime=now,
        modificationTime=now,
        stateChangeTime=now,
    )


def task_random_seeds(*, tasks: list[dict]) -> dict[int, RandomSeeds]:
    """The seed pools of the tasks that ask for random seeds (taskParams randomSeed: the initial value), from the
    seeds their jobs had so far (one query)."""
    first = {
        task["jediTaskID"]: int((task["taskParams"] or {})["randomSeed"])
        for task in tasks
        if isinstance((task["taskParams"] or {}).get("randomSeed"), int)
    }
    if not first:
        return {}
    used: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for task_id, seed, status in Job.objects.filter(task_id__in=list(first), randomSeed__isnull=False).values_list(
        "task_id", "randomSeed", "jobStatus"
    ):
        used[task_id].append((seed, status))
    return {task_id: random_seeds(first=value, used=used[task_id]) for task_id, value in first.items()}


def job_generation_plan(
    *,
    plans,
    queues,
    work_queue: WorkQueue,
    files: dict[int, dict],
    now: datetime,
    seeds: dict | None = None,
    active_jumbo: dict[int, dict[str, int]] | None = None,
) -> GenerationWrites:
    """The writes the decisions of a cycle ask for, made in memory (no query): plain, so the rules of job
    generation (cores, attempts, memory, scouts, merges, task moves, random seeds from `seeds`:
    task_random_seeds, jumbo jobs from `active_jumbo`: each task's active jumbo jobs per queue) can be read and
    tested apart."""
    seeds, active_jumbo = seeds or {}, active_jumbo or {}
    writes = GenerationWrites()
    jobs, job_chunks, previous_jobs = writes.jobs, writes.job_chunks, writes.previous_jobs
    task_moves, task_extra, throttled_dialogs = writes.task_moves, writes.task_extra, writes.throttled_dialogs
    merged, merge_skips = writes.merged, writes.merge_skips
    for task, chunks, jobset_id, decision, merge in plans:
        params = task["taskParams"] or {}
        if merge is not None and decision.chosen is None:
            # the merge job set found no queue: its pre-assigned queue was skipped (history for the 24-hour rule)
            merge_skips.append(merge)
            continue
        if decision.outcome == "throttled":
            # the user is over a cap (seed 000 analysis): the task waits where it is and says why
            throttled_dialogs.append((task["jediTaskID"], decision.message[:255]))
            continue
        scouts = merge is None and task["status"] == "ready" and int(params.get("nScoutJobs", SCOUT_JOBS)) > 0
        jumbo_sites = [] if merge or scouts else jumbo_placements(task=task, decision=decision, active=active_jumbo)
        if decision.chosen is None and not jumbo_sites:
            task_moves[task["status"]][task["jediTaskID"]] = ("pending", decision.message[:500])
            task_extra[task["jediTaskID"]] = {"errorDialog": decision.message[:255]}
            continue
        co_jumbo = merge is None and bool(
            jumbo_jobs_asked(use_jumbo=task.get("useJumbo") or "", params=params, site=task.get("site") or "")
        )
        # seed 002: jumbo jobs "can be generated when the PQ sets useJumbo and is lack of jumbo jobs, even if other
        # PQs are full …; in this case, fake co-jumbo jobs are generated with computingSite=WAITING_CO_JUMBO"; a task
        # lacking jumbo jobs (useJumbo L, kicked by the watchdog) gets jumbo jobs only (JobGenerator, "only")
        only_jumbo = task.get("useJumbo") == jumbo.LACK
        fake = decision.chosen is None
        site = WAITING_CO_JUMBO if fake else decision.chosen.partition("/")[0]
        jobs.extend(
            _jumbo_job(task, queue, jobset_id, number, now, work_queue_id=work_queue.pk)
            for number, queue in enumerate(jumbo_sites)
        )
        job_chunks.extend(JobChunk((), 0, None) for _ in jumbo_sites)
        previous_jobs.extend([] for _ in jumbo_sites)
        if only_jumbo:
            writes.jumbo_flags[task["jediTaskID"]] = jumbo.RUNNING
            continue
        # A pseudo-queue (CERN-UCORE/MCORE) sends the jobs to its unified queue, as PanDA does; coreCount 0: the
        # job takes the queue's cores (one at a single-core pseudo-queue).
        resource = "" if fake else decision.chosen.partition("/")[2]
        queue_cores = 1 if resource.startswith("SCORE") else (queues.get(site) or {}).get("corecount") or 1
        core_count = task["coreCount"] or queue_cores
        if co_jumbo:
            # useJumbo P while files are left to give out, R once every one is (setUseJumboFlag_JEDI, 1.0.4)
            taken = {file_id for chunk in chunks for file_id in chunk.files}
            left = any(
                row["task_id"] == task["jediTaskID"] and row["status"] == "ready" and file_id not in taken
                for file_id, row in files.items()
            )
            writes.jumbo_flags[task["jediTaskID"]] = jumbo.PENDING if left else jumbo.RUNNING
        for number, chunk in enumerate(chunks):
            inputs = [files[file_id] for file_id in chunk.files if file_id in files]
            # a retried file brings its attempt count and the memory its last failure asked for
            attempt = max((row["attemptNr"] for row in inputs), default=0) + 1
            ram = max([task["ramCount"] or 0, *(row["ramCount"] or 0 for row in inputs)]) or None
            previous_jobs.append(
                [row["PandaID"] for row in inputs if row["status"] == "ready" and row["PandaID"] is not None]
            )
            if merge is not None:
                merged.append((merge, len(jobs)))
            preprocess = task["status"] == "topreprocess"
            # seed 002, "Output merging": "merge jobs will be generated with priority=5000"
            priority = MERGE_PRIORITY if merge else task["currentPriority"]
            jobs.append(
                Job(
                    task_id=task["jediTaskID"],
                    jobsetID=jobset_id,
                    jobName=f"{task['taskName'][:200]}.{jobset_id}."
                    + ("merge" if merge else PREPROCESS_HANDLING if preprocess else str(number)),
                    specialHandling=PREPROCESS_HANDLING if preprocess else "",
                    jobStatus="pending",
                    eventService=_event_service_flag(task, merge=merge is not None, co_jumbo=co_jumbo),
                    currentPriority=priority,
                    assignedPriority=priority,
                    computingSite=site,
                    **_task_job_fields(task, work_queue_id=work_queue.pk),
                    isScout=merge is None
                    and task["status"] == "ready"
                    and int(params.get("nScoutJobs", SCOUT_JOBS)) > 0,
                    isMerge=merge is not None,
                    coreCount=1 if preprocess else core_count,
                    minRamCount=ram,
                    attemptNr=merge.attempt if merge else attempt,
                    # a preprocess job is tried once (doGeneratePrePro: maxAttempt = attemptNr)
                    maxAttempt=MERGE_MAX_ATTEMPTS if merge else 1 if preprocess else int(params.get("maxAttempt", 3)),
                    creationTime=now,
                    modificationTime=now,
                    stateChangeTime=now,
                    nEvents=chunk.n_events,
                    nInputFiles=len(merge.job_ids) if merge else len(chunk.files),
                    inputFileBytes=chunk.input_bytes,
                    # a merge job makes no events: no seed
                    randomSeed=seeds[task["jediTaskID"]].take()
                    if merge is None and task["jediTaskID"] in seeds
                    else None,
                    # the files it takes and their attempt, written with the job (a secondary's attempt is not read
                    # here: such a job's list is written by _use_inputs). bench keepup: a separate UPDATE of every
                    # new job was the costliest statement of job generation (14.7 s in ten minutes)
                    inputFiles=""
                    if chunk.secondary
                    else input_files_text([(f, files[f]["attemptNr"]) for f in chunk.files if f in files]),
                )
            )
            job_chunks.append(chunk)
        if merge is not None:
            continue  # a merge job set leaves the task where it is
        target = "scouting" if task["status"] == "ready" and jobs[-1].isScout else "running"
        target = "preprocessing" if task["status"] == "topreprocess" else target
        if task["status"] != target:
            to = decision.chosen or f"{WAITING_CO_JUMBO} (fake co-jumbo jobs)"
            task_moves[task["status"]][task["jediTaskID"]] = (target, f"{len(chunks)} jobs to {to}")
            task_extra[task["jediTaskID"]] = {"errorDialog": ""}
    writes.pending = [
        task["jediTaskID"] for task, _, _, decision, merge in plans if decision.outcome == "pending" and not merge
    ]
    writes.assigned = [task["jediTaskID"] for task, _, _, decision, merge in plans if decision.chosen and not merge]
    return writes


def _write(writes: GenerationWrites, *, now: datetime) -> None:
    """Writes what job_generation_plan made, in bulk statements whatever the number of jobs."""
    throttled_dialogs, previous_jobs = writes.throttled_dialogs, writes.previous_jobs
    bulk_update_values(Task, fields=("errorDialog",), rows=throttled_dialogs)
    # JEDI inserts its jobs pending (DBProxy.insertNewJob, 1.0.4: "jobs from JEDI"), and the Setupper, once their
    # input is registered for dispatch, makes them defined; ours are set up in the same transaction
    created = Job.objects.bulk_create(writes.jobs, batch_size=1000)
    rows_insert(
        JobStatusLog,
        fields=("job_id", "timestamp", "old_status", "new_status", "actor", "reason", "computingSite"),
        rows=((job.pk, now, "", "pending", ACTOR, "generated", job.computingSite) for job in created),
    )
    job_status_transition_many(
        from_status="pending",
        to_status="defined",
        job_ids=[job.pk for job in created],
        reason="set up: input registered for dispatch",
        actor=ACTOR,
        now=now,
    )
    # defined → assigned through the job state machine, in one move (three statements whatever the number of jobs
    # and queues): each log row carries its job's queue in computingSite
    # fake co-jumbo jobs wait (DBProxy.insertNewJob, 1.0.4: "put co-jumbo jobs in waiting")
    fake = [job.pk for job in created if job.computingSite == WAITING_CO_JUMBO]
    job_status_transition_many(
        from_status="defined",
        to_status="waiting",
        job_ids=fake,
        reason="fake co-jumbo job: waiting for a real co-jumbo job or for jumbo jobs to process its events",
        actor=ACTOR,
        now=now,
    )
    job_status_transition_many(
        from_status="defined",
        to_status="assigned",
        job_ids=[job.pk for job in created if job.computingSite != WAITING_CO_JUMBO],
        reason="chosen by job brokerage",
        actor=ACTOR,
        now=now,
    )
    for flag in (jumbo.PENDING, jumbo.RUNNING):
        Task.objects.filter(pk__in=[pk for pk, f in writes.jumbo_flags.items() if f == flag]).update(useJumbo=flag)
    merge_outcomes_apply(
        chosen=[(merge, created[index].pk) for merge, index in writes.merged], skipped=writes.merge_skips, now=now
    )
    _use_inputs(created, writes.job_chunks, now=now)
    output_files_make(jobs=created, now=now)
    job_retry_history_record(
        pairs=[(job.task_id, old, job.pk) for job, olds in zip(created, previous_jobs, strict=True) for old in olds],
        now=now,
    )
    brokerage_pending_mark(pending=writes.pending, assigned=writes.assigned, now=now)
    for from_status, moves in writes.task_moves.items():
        task_status_transition_many(
            from_status=from_status,
            moves=moves,
            extra={task_id: writes.task_extra[task_id] for task_id in moves if task_id in writes.task_extra},
            actor=ACTOR,
            now=now,
        )


def _use_inputs(created: list[Job], chunks: list[JobChunk], *, now: datetime) -> None:
    """Files of the new jobs ready → picked (event-level files stay picked while events remain), one Event row
    per (file, event range), and the datasets' counters from their files. Bulk statements only."""
    picked: dict[int, tuple[int, int]] = {}
    events: list[Event] = []
    for job, chunk in zip(created, chunks, strict=True):
        for file_id in (*chunk.files, *chunk.secondary):
            picked.setdefault(file_id, (job.pk, job.jobsetID))
        for event_range in chunk.ranges:
            events.append(
                Event(
                    task_id=job.task_id,
                    dataset_id=0,
                    file_id=event_range.fileID,
                    PandaID=job.pk,
                    status="ready",
                    def_min_eventID=event_range.first,
                    def_max_eventID=event_range.last,
                )
            )
    if not picked:
        return
    rows = list(DatasetFile.objects.filter(pk__in=list(picked)).values("pk", "dataset_id", "attemptNr", "status"))
    dataset_of = {row["pk"]: row["dataset_id"] for row in rows}
    attempt_of = {row["pk"]: row["attemptNr"] for row in rows}
    # an event-level file some of whose ranges run stays running while more of its ranges go out
    bulk_update_values(
        DatasetFile,
        fields=("status", "PandaID", "jobsetID", "lastAttemptTime"),
        rows=[
            (row["pk"], "running" if row["status"] == "running" else "picked", *picked[row["pk"]], now) for row in rows
        ],
    )
    # each job keeps the files it took and their attempt (Job.inputFiles), whoever takes them next
    bulk_update_values(
        Job,
        fields=("inputFiles",),
        rows=[
            (
                job.pk,
                input_files_text([(f, attempt_of[f]) for f in (*chunk.files, *chunk.secondary) if f in attempt_of]),
            )
            for job, chunk in zip(created, chunks, strict=True)
            if chunk.secondary  # the others' list was written with the job (job_generation_plan)
        ],
    )
    for event in events:
        event.dataset_id = dataset_of[event.file_id]
    Event.objects.bulk_create(events, batch_size=1000)
    dataset_counters_refresh(dataset_ids=set(dataset_of.values()), now=now)
