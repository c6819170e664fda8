"""The watchdog over the database: job timeouts with a summary per queue and rule, and fast rebrokerage.

Timeouts (seed 000): every watched job is judged by `brokerage.watchdog.job_timeout_state` — the function the
monitor and the API call too — and the timed-out ones end: jobs that never ran are closed (PanDA's "killed by
the system"), running, holding or transferring ones failed; their inputs go back for another attempt. Each pass
stores, per queue and rule, how many jobs were watched, approaching (less than an hour left) and timed out.

Fast rebrokerage (seed 000): at a queue without Harvester slots, when for a gshare nQueue/nRun >
FAST_REBRO_THRESHOLD_NQNR_RATIO, nQueue/nQueue_total(gshare) > FAST_REBRO_THRESHOLD_NQUEUE_FRAC and nQueue >
FAST_REBRO_THRESHOLD_NQUEUE_<gshare>, the queued jobs beyond what the thresholds allow are closed for
reassignment, lowest priority and newest first.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Q

from brokerage.event_service import ES_HEARTBEAT
from brokerage.job_errors import TASK_BUFFER_EXPIRED, TASK_BUFFER_REASSIGNED, TASK_BUFFER_TRANSFER_TIMEOUT
from brokerage.models import Job, JobTimeoutSummary, PandaQueue, QueuePilotStats
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.selectors.timeouts import JOB_FIELDS, timeout_job, timeout_limits, timeout_queues
from brokerage.services.event_service import ENDING_FROM, es_jobs_end, es_jobs_split
from brokerage.services.retries import job_inputs_after_end, job_tasks_lock
from brokerage.services.status import job_status_transition_many
from brokerage.watchdog import CLOSE_ON_TIMEOUT, WATCHED_STATUSES, TimeoutQueue, job_timeout_state

ACTOR = "watchdog"
APPROACHING = timedelta(hours=1)
QUEUED_FOR_REBROKERAGE = ("defined", "assigned", "activated", "starting")


@dataclass(frozen=True)
class TimeoutPass:
    watched: int
    closed: list[int]
    failed: list[int]


def job_timeout_apply(*, now: datetime) -> TimeoutPass:
    """One watchdog pass (module docstring). Timed-out jobs end with the rule in their status log and error."""
    queues = timeout_queues(now=now)
    limits = timeout_limits(queues=queues)
    watched: Counter = Counter()
    approaching: Counter = Counter()
    due: dict[tuple[str, str], list[int]] = defaultdict(list)  # (status, sentence) → jobs
    timed_out: Counter = Counter()
    for row in Job.objects.filter(jobStatus__in=WATCHED_STATUSES).values(*JOB_FIELDS).iterator(chunk_size=5000):
        state = job_timeout_state(timeout_job(row), queues.get(row["computingSite"], TimeoutQueue()), limits, now)
        if state.rule is None:
            continue
        key = (row["computingSite"], state.rule)
        watched[key] += 1
        if state.timed_out:
            timed_out[key] += 1
            due[(row["jobStatus"], state.sentence)].append(row["pk"])
        elif state.left * limits.grid_speed <= APPROACHING:  # an hour of grid time, as the page's column says
            approaching[key] += 1
    closed, failed = [], []
    es_ended: dict[str, list[int]] = {}  # ES jobs ended by their ranges (services.event_service), by status
    with transaction.atomic():
        free = job_tasks_lock(job_ids=[pk for ids in due.values() for pk in ids])
        for (status, sentence), ids in due.items():
            ids = [pk for pk in ids if pk in free]  # the others' tasks are busy: the next run times them out
            target = "closed" if status in CLOSE_ON_TIMEOUT else "failed"
            if target == "failed" and status in ENDING_FROM:
                # an ES job whose heartbeat was lost ends by its ranges (those it reported finished stay), failed
                # es_heartbeat if it processed none (seed 002, "Final status of Event Service jobs")
                es_ids, ids = es_jobs_split(job_ids=ids)
                for pk, outcome in es_jobs_end(
                    succeeded=[], failed=es_ids, now=now, reported=True, lost=ES_HEARTBEAT
                ).items():
                    es_ended.setdefault(outcome.status, []).append(pk)
            moved = job_status_transition_many(
                from_status=status,
                to_status=target,
                job_ids=ids,
                reason=f"timeout: {sentence}",
                actor=ACTOR,
                now=now,
                columns={
                    # panda-server ErrorCode.py: EC_Transfer for a transfer that timed out, EC_Expire otherwise
                    "taskBufferErrorCode": TASK_BUFFER_TRANSFER_TIMEOUT
                    if status == "transferring"
                    else TASK_BUFFER_EXPIRED,
                    "taskBufferErrorDiag": f"timeout: {sentence}"[:300],
                },
            )
            (closed if target == "closed" else failed).extend(moved)
        job_inputs_after_end(finished=[], failed=failed, closed=closed, now=now)
        JobTimeoutSummary.objects.bulk_create(
            JobTimeoutSummary(
                taken_at=now,
                computingSite=site,
                rule=rule,
                watched=count,
                approaching=approaching[(site, rule)],
                timed_out=timed_out[(site, rule)],
            )
            for (site, rule), count in sorted(watched.items())
        )
    closed += es_ended.get("closed", [])
    failed += es_ended.get("failed", [])
    return TimeoutPass(sum(watched.values()), sorted(closed), sorted(failed))


@dataclass(frozen=True)
class RebrokerageCut:
    """Jobs closed at one queue for one gshare, and the numbers that decided it."""

    queue: str
    gshare: str
    n_queue: int
    n_running: int
    n_queue_total: int
    allowed: int
    closed: list[int]


def job_fast_rebrokerage(*, now: datetime, vo: str = "atlas") -> list[RebrokerageCut]:
    """Fast rebrokerage (module docstring): closes the excess queued jobs for reassignment."""
    config = gdpconfig_view(vo=vo)
    ratio = config.get("FAST_REBRO_THRESHOLD_NQNR_RATIO")
    fraction = config.get("FAST_REBRO_THRESHOLD_NQUEUE_FRAC")
    with_slots = set(QueuePilotStats.objects.filter(numSlots__isnull=False).values_list("queue__name", flat=True))
    paused = set(PandaQueue.objects.filter(status="paused").values_list("name", flat=True))
    counts = (
        Job.objects.filter(jobStatus__in=(*QUEUED_FOR_REBROKERAGE, "running"))
        .exclude(computingSite="")
        .values("computingSite", "gshare")
        .annotate(
            queued=Count("pk", filter=Q(jobStatus__in=QUEUED_FOR_REBROKERAGE)),
            running=Count("pk", filter=Q(jobStatus="running")),
        )
    )
    rows = list(counts)
    total_queued: Counter = Counter()
    for row in rows:
        total_queued[row["gshare"]] += row["queued"]
    cuts = []
    for row in rows:
        queue, gshare, n_queue, n_running = row["computingSite"], row["gshare"], row["queued"], row["running"]
        threshold = config.get("FAST_REBRO_THRESHOLD_NQUEUE", gshare=gshare)
        if threshold is None or queue in with_slots or queue in paused or n_queue == 0:
            continue  # the gshare does not define its threshold, Harvester slots, or reassignment is off
        ratio_over = n_running == 0 or n_queue / n_running > ratio
        fraction_over = n_queue / total_queued[gshare] > fraction
        if not (ratio_over and fraction_over and n_queue > threshold):
            continue
        allowed = max(threshold, math.ceil(ratio * n_running), math.ceil(fraction * total_queued[gshare]))
        excess = n_queue - allowed
        if excess <= 0:
            continue
        victims = list(
            Job.objects.filter(computingSite=queue, gshare=gshare, jobStatus__in=QUEUED_FOR_REBROKERAGE)
            .order_by("currentPriority", "-PandaID")
            .values_list("pk", "jobStatus")[:excess]
        )
        closed: list[int] = []
        by_status: dict[str, list[int]] = defaultdict(list)
        for pk, status in victims:
            by_status[status].append(pk)
        reason = (
            f"fast rebrokerage: nQueue {n_queue} / nRun {n_running} > {ratio:g}, {n_queue} / {total_queued[gshare]} "
            f"of {gshare} > {fraction:g}, nQueue > {threshold}"
        )
        with transaction.atomic():
            free = job_tasks_lock(job_ids=[pk for pk, _ in victims])
            for status, ids in by_status.items():
                ids = [pk for pk in ids if pk in free]  # the others' tasks are busy: left for the next run
                closed += job_status_transition_many(
                    from_status=status,
                    to_status="closed",
                    job_ids=ids,
                    reason=reason,
                    actor=ACTOR,
                    now=now,
                    columns={"taskBufferErrorCode": TASK_BUFFER_REASSIGNED, "taskBufferErrorDiag": reason[:300]},
                )
            job_inputs_after_end(finished=[], failed=[], closed=closed, now=now)
        cuts.append(RebrokerageCut(queue, gshare, n_queue, n_running, total_queued[gshare], allowed, sorted(closed)))
    return cuts


def watchdog_cycle_run(*, now: datetime) -> dict[str, int]:
    """One watchdog pass: job timeouts, fast rebrokerage, the users' job caps, then the task states (throttled,
    exhausted), and the integrity check when INTEGRITY_CHECK_MINUTES have passed since the last one."""
    from brokerage.services.integrity import integrity_check_due, integrity_check_run
    from brokerage.services.jumbo import co_jumbo_check, jumbo_watch_run
    from brokerage.services.task_commands import task_watch
    from brokerage.services.user_caps import user_jobs_cap, users_data_motion_throttle

    timeouts = job_timeout_apply(now=now)
    cuts = job_fast_rebrokerage(now=now)
    capped = user_jobs_cap(now=now)
    motion = users_data_motion_throttle(now=now)
    tasks = task_watch(now=now)
    # JumboWatchDog ("a sub-component of the WatchDog agent", seed 002) and the co-jumbo check, with every pass:
    # both act on the state they read, so a pass more often than JEDI's ten minutes and the hourly cron changes
    # how soon, not what (docs/decisions.md, "Jumbo jobs")
    jumbo = jumbo_watch_run(now=now)
    co_jumbo = co_jumbo_check(now=now)
    integrity = integrity_check_run(now=now)[0].n_findings if integrity_check_due(now=now) else None
    return {
        **({"integrity_findings": integrity} if integrity is not None else {}),
        "watched": timeouts.watched,
        "closed": len(timeouts.closed),
        "failed": len(timeouts.failed),
        "rebrokered": sum(len(cut.closed) for cut in cuts),
        "user_jobs_throttled": sum(len(move.jobs) for move in capped if move.verdict.action == "throttle"),
        "user_jobs_released": sum(len(move.jobs) for move in capped if move.verdict.action == "release"),
        "data_motion_tasks_throttled": sum(len(move.throttled) for move in motion),
        "data_motion_tasks_released": sum(len(move.released) for move in motion),
        **{f"tasks_{name}": len(ids) for name, ids in tasks.items()},
        "jumbo_actions": sum(1 for action in jumbo.actions if action.action != "keep"),
        **{f"co_jumbo_{name}": len(ids) for name, ids in co_jumbo.items()},
    }
