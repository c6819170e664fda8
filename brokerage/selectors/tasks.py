"""Tasks as the pages read them: the filtered, sorted list with its status counts, and one task whole: what it is
waiting for, its latest decisions, the facts behind its state, the advice for shifters. Aggregated in SQL: the task
page costs the same number of queries for 10 jobs or 100,000."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import Count, Q

from brokerage import states
from brokerage.engine.core.advice import Advice, advice_unique, advise
from brokerage.engine.core.reasons import EXPECTED_CODES
from brokerage.engine.panda.task_states import MainError, TaskFacts, task_state_explain
from brokerage.grid_clock import grid_minutes, throttled_until
from brokerage.models import (
    Dataset,
    DatasetFile,
    Decision,
    Event,
    GlobalShare,
    Job,
    JobRetryHistory,
    Task,
    TaskStatusLog,
)
from brokerage.params import whole_number
from brokerage.plugins import THROTTLER_PLUGIN
from brokerage.selectors.decisions import TraceExpired, decision_trace, decision_trace_plain
from brokerage.selectors.jobs import job_error_summary
from brokerage.selectors.paging import PAGE_SIZE, WINDOWS, window_problem
from brokerage.selectors.timeouts import job_timeout_states
from brokerage.throttle import task_resource_type

TASK_SORTS = {
    "id": "jediTaskID",
    "priority": "currentPriority",
    "status": "status",
    "modified": "modificationTime",
    "created": "creationDate",
    "progress": "progress",
    "name": "taskName",
}


TASK_FILTERS = ("status", "taskType", "processingType", "userName", "workingGroup", "workQueue", "gshare", "nucleus")


@dataclass(frozen=True)
class TaskListing:
    page: Any
    total: int
    counts_by_status: list[tuple[str, int]]
    sort: str
    filters: dict[str, str]
    problems: dict[str, str]


def task_list(*, filters: dict[str, str], sort: str = "-modified", page: int = 1, now: datetime) -> TaskListing:
    """Tasks filtered by the columns of TASK_FILTERS, a modification window (`window`: 1h, 6h, 1d, 7d) and free
    text (`q`: id, name, user or errorDialog), sorted server-side, a page at a time with the total and the
    counts by status of the filtered set."""
    queryset = Task.objects.select_related("workQueue")
    applied = {}
    problems = {}
    status = (filters.get("status") or "").strip()
    if status and status not in states.TASK.statuses:
        problems["status"] = f"{status!r} is not a task status; one of {', '.join(states.TASK.statuses)}"
    if window_problem(filters.get("window") or ""):
        problems["window"] = window_problem(filters.get("window") or "")
    if sort.lstrip("-") not in TASK_SORTS:
        problems["sort"] = f"{sort!r} is not a column to sort by; one of {', '.join(TASK_SORTS)}"
    for key in TASK_FILTERS:
        value = (filters.get(key) or "").strip()
        if not value or key in problems:
            continue
        applied[key] = value
        if key == "workQueue":
            queryset = queryset.filter(workQueue__queue_name=value)
        else:
            queryset = queryset.filter(**{key: value})
    window = filters.get("window") or ""
    if window in WINDOWS:
        applied["window"] = window
        queryset = queryset.filter(modificationTime__gte=now - WINDOWS[window])
    text = (filters.get("q") or "").strip()
    if text:
        applied["q"] = text
        match = Q(taskName__icontains=text) | Q(userName__icontains=text) | Q(errorDialog__icontains=text)
        if whole_number(text) is not None:
            match |= Q(jediTaskID=whole_number(text))
        queryset = queryset.filter(match)
    key = sort.lstrip("-")
    if key not in TASK_SORTS:
        sort, key = "-modified", "modified"
    order = ("-" if sort.startswith("-") else "") + TASK_SORTS[key]
    counts = list(queryset.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    rank = {status: index for index, status in enumerate(states.TASK.statuses)}
    counts.sort(key=lambda item: rank.get(item[0], 99))
    total = sum(n for _, n in counts)
    paginator = Paginator(queryset.order_by(order, "-jediTaskID"), PAGE_SIZE)
    paginator.count = total  # known already: no second COUNT(*)
    return TaskListing(paginator.get_page(page), total, counts, sort, applied, problems)


def task_filter_choices() -> dict[str, list[str]]:
    """The values offered in the task list's filter menus (one small query each)."""
    return {
        "status": list(states.TASK.statuses),
        "workQueue": list(
            Task.objects.exclude(workQueue=None)
            .values_list("workQueue__queue_name", flat=True)
            .distinct()
            .order_by("workQueue__queue_name")
        ),
        "gshare": list(GlobalShare.objects.values_list("name", flat=True).order_by("name")),
        "processingType": list(
            Task.objects.values_list("processingType", flat=True).distinct().order_by("processingType")
        ),
    }


def _latest_decisions(task_id: int) -> list[dict[str, Any]]:
    """The latest decision of each plugin for the task, with its decoded trace."""
    latest: dict[str, int] = {}
    for plugin, pk in (
        Decision.objects.filter(task_id=task_id).order_by("-created", "-pk").values_list("plugin", "pk")[:50]
    ):
        latest.setdefault(plugin, pk)
    # only the decisions shown bring their trace and their cycle's frame
    rows = {d.pk: d for d in Decision.objects.filter(pk__in=list(latest.values())).select_related("cycle")}
    return [
        {"decision": rows[pk], "trace": decision_trace(decision=rows[pk]), "plugin": plugin}
        for plugin, pk in sorted(latest.items())
    ]


def why_pending(task: Task, panels: list[dict[str, Any]]) -> list[str]:
    """Plain sentences for why the task is not progressing, each said once: the task's own error dialog (unless a
    decision says the same), then per decision that did not assign, its message with the full count of
    candidates by reason."""
    lines = []
    panels = _still_holding(task, panels)
    messages = {panel["decision"].message for panel in panels if panel["decision"].message}
    said = any(task.errorDialog in message or message in task.errorDialog for message in messages)
    if task.errorDialog and task.status == "pending" and not said:
        lines.append(task.errorDialog)
    for panel in panels:
        decision, trace = panel["decision"], panel["trace"]
        if decision.outcome == "assigned":
            continue
        considered = len(trace.get("initial") or []) or decision.n_candidates
        line = f"{PLUGIN_NAMES.get(decision.plugin, decision.plugin)} was {decision.outcome}"
        if trace["by_reason"]:
            # expected skips (queues of another kind) come last and say so: nobody is to act on them
            parts = [
                f"{group['count']} {group['title']}"
                + (
                    " (expected: queues built for other work than this task's; nothing to fix)"
                    if group["code"] in EXPECTED_CODES
                    else ""
                )
                for group in trace["by_reason"]
            ]
            line += f": of {considered} candidates, " + ", ".join(parts) + "."
        elif decision.message:
            line += f": {decision.message}"
        lines.append(line)
    if not lines and task.status == "pending":
        lines.append("The task is pending; its status history below says why.")
    return lines


def _still_holding(task: Task, panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decisions that still explain where the task is: a brokerage that left it pending explains nothing once
    the task has come back (its retry) or moved on; the decisions stay on the page, under Brokerage."""
    return panels if task.status == "pending" else []


PLUGIN_NAMES = {
    "atlas_prod_task": "Task brokerage (choice of a nucleus)",
    "atlas_prod_job": "Job brokerage (choice of a queue)",
    "atlas_anal_job": "Analysis job brokerage (choice of a queue)",
}


def task_entered(task: Task) -> dict[str, Any]:
    """The move into the task's current status: its reason, who made it and when ({} when none is logged)."""
    return (
        TaskStatusLog.objects.filter(task_id=task.pk, new_status=task.status)
        .order_by("-pk")  # the moves' own order (selectors.integrity)
        .values("reason", "actor", "timestamp")
        .first()
    ) or {}


def task_headline(
    task: Task, panels: list[dict[str, Any]], *, now: datetime, entered: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The task's state, since when (its last status change; `entered` when the caller has read it), when
    brokerage tries again (the latest decision that did not assign, plus its retry delay) and, for a throttled
    task, when the watchdog releases it. The times are those the system acts on (brokerage.grid_clock)."""
    since = (task_entered(task) if entered is None else entered).get("timestamp")
    retry = None
    for panel in _still_holding(task, panels):
        decision = panel["decision"]
        if decision.outcome != "assigned" and decision.retry_after_minutes:
            at = decision.created + grid_minutes(decision.retry_after_minutes)
            if retry is None or at < retry["at"]:
                retry = {"at": at, "due": at <= now, "in": at - now, "plugin": decision.plugin}
    release = None
    if task.status == "throttled" and task.throttledTime is not None:
        at = throttled_until(since=task.throttledTime, level=task.numThrottled)
        release = {"at": at, "due": at <= now, "in": at - now, "to": task.oldStatus}
    return {"since": since, "for": (now - since) if since else None, "next_try": retry, "release": release}


def task_advice(
    task: Task, panels: list[dict[str, Any]], *, jobs_failed: int, jobs_total: int, state_advice: list[Advice]
) -> list[Advice]:
    """What a shifter can do: the advice of the task's state (engine/panda/task_states.py), then of its latest
    decisions while pending (engine/core/advice.py)."""
    result: list[Advice] = list(state_advice)
    for panel in _still_holding(task, panels):
        decision, trace = panel["decision"], panel["trace"]
        considered = len(trace.get("initial") or []) or decision.n_candidates
        result += advise(
            plugin=decision.plugin,
            outcome=decision.outcome,
            skipped=trace["skipped"],
            n_candidates=considered,
            nucleus=task.nucleus,
        )
    if jobs_failed and not result:
        result.append(
            Advice(
                "site",
                "Read the error summary: the commonest error tells whether the site, the data or the task is at fault.",
                f"{jobs_failed} of {jobs_total} jobs failed, were closed or cancelled.",
                (),
            )
        )
    return advice_unique(result)


RECENT_HOURS = 6  # a running task's failure rate: over its jobs that ended in the last hours


# The rule of a throttler verdict that lifts a SKIP for the tasks of the highest waiting priority (brokerage.throttle)
PRIORITY_LIMIT_SUFFIX = "_but_higher_priority_waiting"


def task_generation_hold(task: Task, *, now: datetime) -> tuple[str, dict] | None:
    """Why a task that could get jobs gets none: the job throttler's verdict on its work queue and resource type, or
    its share over its target (its work queue's, a sub-queue's partition's, or its global share's), when one was
    stored within the last two job-generation periods (a work queue held back is decided again each period; an older
    one no longer holds), as a reason code and its numbers. None when nothing holds it (one query, and the verdict's
    trace)."""
    if task.status not in states.TASK_GENERATING or task.workQueue is None:
        return None
    period = timedelta(seconds=float(settings.CELERY_BEAT_SCHEDULE["job-generation"]["schedule"]))
    resource = task_resource_type(core_count=task.coreCount, ram_count=task.ramCount, ram_unit=task.ramUnit)
    top = task.workQueue.partition.queue_name if task.workQueue.partition_id else task.workQueue.queue_name
    # the messages the job generator writes (services/jobs.py: throttler verdicts, share allocations); a partition's
    # cycle throttles its sub-queues' tasks together, in its own name
    messages = Q(message__startswith=f"work queue {top} {resource}:")
    if task.processingType != "urgent":  # urgent tasks ignore fairshare: never held by a share
        for share in (f"work queue {top}", f"global share {task.gshare}"):
            messages |= Q(message__startswith=f"{share} runs ") | Q(message__startswith=f"{share} holds ")
    held = (
        Decision.objects.filter(plugin=THROTTLER_PLUGIN, outcome="throttled", created__gte=now - 2 * period)
        .filter(messages)
        .order_by("-created", "-pk")
        .first()
    )
    if held is None:
        return None
    try:
        extra = decision_trace_plain(decision=held).get("extra") or {}
    except TraceExpired:
        return None
    rule = str(extra.get("rule", ""))
    detail = {
        **(extra.get("detail") or {}),
        "work_queue": top,
        "resource_type": resource,
        "priority": task.currentPriority,
    }
    if rule.endswith(PRIORITY_LIMIT_SUFFIX):
        if task.currentPriority >= (detail.get("highest_waiting_priority") or 0):
            return None  # the limit lets this task through
        return "throttle_priority_limit", detail
    return f"throttle_{rule}", detail


def task_state_facts(
    task: Task, *, entered: dict[str, Any], errors: dict | None, ended_badly: int, jobs_total: int, now: datetime
) -> TaskFacts:
    """What engine/panda/task_states.py needs of the task: the move into its status (`task_entered`: its reason, who,
    when), only what its state asks for (at most one more query), and whether the throttler holds its new jobs
    back (task_generation_hold)."""
    facts: dict[str, Any] = {"generation_hold": task_generation_hold(task, now=now)}
    if task.status == "throttled":
        top = (
            DatasetFile.objects.filter(task_id=task.pk, dataset__type__in=states.INPUT_TYPES)
            .order_by("-attemptNr", "pk")
            .values("lfn", "attemptNr")
            .first()
        )
        if top:
            facts.update(top_attempt=top["attemptNr"], top_attempt_file=top["lfn"])
        if task.throttledTime is not None:
            facts["release_at"] = throttled_until(since=task.throttledTime, level=task.numThrottled)
    elif task.status == "running":
        ended = Counter(
            dict(
                Job.objects.filter(
                    task_id=task.pk,
                    stateChangeTime__gte=now - timedelta(hours=RECENT_HOURS),
                    jobStatus__in=("finished", "failed", "closed", "cancelled"),
                )
                .values_list("jobStatus")
                .annotate(n=Count("pk"))
                .order_by()
            )
        )
        facts.update(recent_finished=ended["finished"], recent_failed=ended.total() - ended["finished"])
        if (task.taskParams or {}).get("mergeOutput"):
            merges = Job.objects.filter(task_id=task.pk).aggregate(
                merging=Count("pk", filter=Q(jobStatus="merging")),
                active=Count("pk", filter=Q(isMerge=True, jobStatus__in=states.JOB_ACTIVE)),
                failed=Count("pk", filter=Q(isMerge=True, jobStatus__in=("failed", "closed"))),
            )
            facts.update(
                merging_jobs=merges["merging"],
                merge_jobs_active=merges["active"],
                merge_attempts_failed=merges["failed"],
            )
        if task.useJumbo in ("W", "R", "P", "L"):
            jumbo = Job.objects.filter(task_id=task.pk, jobStatus__in=states.JOB_ACTIVE).aggregate(
                jumbo=Count("pk", filter=Q(eventService=states.JUMBO_JOB)),
                fakes=Count("pk", filter=Q(computingSite=states.WAITING_CO_JUMBO, jobStatus="waiting")),
            )
            facts.update(
                jumbo_flag=states.USE_JUMBO[task.useJumbo],
                jumbo_jobs_active=jumbo["jumbo"],
                fake_co_jumbo_waiting=jumbo["fakes"],
            )
    elif task.status == "scouting":
        scouts = Counter(
            dict(
                Job.objects.filter(task_id=task.pk, isScout=True)
                .values_list("jobStatus")
                .annotate(n=Count("pk"))
                .order_by()
            )
        )
        facts.update(
            scouts_wanted=int((task.taskParams or {}).get("nScoutJobs") or scouts.total()),
            scouts_done=scouts["finished"],
            scouts_failed=scouts["failed"] + scouts["closed"] + scouts["cancelled"],
        )
    main = (errors or {}).get("errors") or []
    if main:
        top_error = main[0]
        facts["main_error"] = MainError(
            label=top_error["label"],
            component=top_error["component"],
            code=top_error["code"],
            count=top_error["count"],
            queues=tuple(top_error["queues"]),
        )
    return TaskFacts(
        status=task.status,
        entered_reason=entered.get("reason", ""),
        entered_by=entered.get("actor", ""),
        entered_at=entered.get("timestamp"),
        error_dialog=task.errorDialog,
        old_status=task.oldStatus or "",
        throttle_level=task.numThrottled or 0,
        jobs_total=jobs_total,
        jobs_ended_badly=ended_badly,
        recent_hours=RECENT_HOURS,
        **facts,
    )


ENDED_BADLY = ("failed", "closed", "cancelled")


def _task_job_counts(*, task_id: int) -> tuple[Counter, list[dict[str, Any]]]:
    """The task's jobs by status, and by queue (the 30 busiest) with their active, finished and failed counts: one
    scan of its jobs, COUNT(*) by (queue, status), which PostgreSQL reads from the (task, status, site) index."""
    by_status: Counter = Counter()
    per_queue: dict[str, Counter] = {}
    rows = Job.objects.filter(task_id=task_id).values_list("computingSite", "jobStatus").annotate(n=Count("*"))
    for site, status, count in rows.order_by():
        by_status[status] += count
        per_queue.setdefault(site, Counter())[status] += count
    by_queue = sorted(
        (
            {
                "computingSite": site,
                "total": sum(counts.values()),
                "active": sum(counts[s] for s in states.JOB_ACTIVE),
                "finished": counts["finished"],
                "failed": sum(counts[s] for s in ENDED_BADLY),
            }
            for site, counts in per_queue.items()
        ),
        key=lambda row: (-row["total"], row["computingSite"]),
    )[:30]
    return by_status, by_queue


def _task_decision_selected(*, task_id: int, decision_id: int | None) -> dict[str, Any] | None:
    """The decision the page was asked to open, with its trace in words, when it is one of the task's."""
    if decision_id is None:
        return None
    chosen = Decision.objects.filter(pk=decision_id, task_id=task_id).select_related("cycle").first()
    if chosen is None:
        return None
    return {"decision": chosen, "trace": decision_trace(decision=chosen), "plugin": chosen.plugin}


DISTRIBUTION_JOBS = 5000  # the latest ended jobs a task's distributions are drawn from


def task_job_distributions(*, task_id: int) -> dict[str, list[dict[str, Any]]]:
    """How long the task's ended jobs ran and how much memory they used (BigPanDA's task page): one row per job
    with its status, wall seconds and maxRSS in MB, the latest DISTRIBUTION_JOBS of them (one query)."""
    rows = (
        Job.objects.filter(task_id=task_id, jobStatus__in=("finished", "failed"), startTime__isnull=False,
                           endTime__isnull=False)
        .order_by("-endTime")
        .values_list("jobStatus", "startTime", "endTime", "maxRSS")[:DISTRIBUTION_JOBS]
    )  # fmt: skip
    duration, memory = [], []
    for status, start, end, rss in rows:
        duration.append({"status": status, "value": max((end - start).total_seconds(), 0.0) / 3600})
        if rss:
            memory.append({"status": status, "value": rss / 1024})
    return {"duration": duration, "memory": memory}


def task_retry_chains(*, task_id: int, limit: int = 20) -> list[dict[str, Any]]:
    """The task's retry chains (JobRetryHistory): from each first job, the jobs that retried it in order, the longest
    chains first; a chain is the story of one piece of work failing and coming back."""
    links = list(
        JobRetryHistory.objects.filter(task_id=task_id).order_by("pk").values_list("oldPandaID", "newPandaID",
                                                                                  "relationType")
    )  # fmt: skip
    following = {old: (new, relation) for old, new, relation in links}
    retried = {new for _, new, _ in links}
    chains = []
    for first in sorted(following.keys() - retried):
        jobs, relations, current = [first], [], first
        while current in following and len(jobs) < 50:
            current, relation = following[current]
            jobs.append(current)
            relations.append(relation)
        chains.append({"jobs": jobs, "relations": relations, "length": len(jobs) - 1})
    chains.sort(key=lambda chain: (-chain["length"], chain["jobs"][0]))
    statuses = dict(
        Job.objects.filter(pk__in=[chain["jobs"][-1] for chain in chains[:limit]]).values_list("pk", "jobStatus")
    )
    for chain in chains[:limit]:
        chain["last_status"] = statuses.get(chain["jobs"][-1], "")
    return chains[:limit]


def task_why(*, task_id: int, now: datetime) -> dict[str, Any] | None:
    """Why the task is where it is and what a shifter can do, as its page says it (the sentences of its latest
    decisions while pending, of its state, of the throttler holding its new jobs back, and the advice with its
    evidence), without the rest of the page: what the API answers to "why does this task get no jobs"."""
    task = Task.objects.select_related("workQueue").filter(pk=task_id).first()
    if task is None:
        return None
    by_status, _ = _task_job_counts(task_id=task_id)
    jobs_failed = sum(by_status[s] for s in ENDED_BADLY)
    errors = job_error_summary(task_id=task_id, limit=10) if jobs_failed else None
    panels = _latest_decisions(task_id)
    facts = task_state_facts(
        task, entered=task_entered(task), errors=errors, ended_badly=jobs_failed, jobs_total=by_status.total(), now=now
    )
    state_why, state_advice = task_state_explain(facts)
    return {
        "task": task,
        "why": why_pending(task, panels) + state_why,
        "advice": task_advice(
            task, panels, jobs_failed=jobs_failed, jobs_total=by_status.total(), state_advice=state_advice
        ),
        "held_by_throttler": facts.generation_hold[0] if facts.generation_hold else None,
    }


# the kinds of jobs an event service task makes, by Job.eventService (EventServiceUtils, 1.0.4)
EVENT_SERVICE_KINDS = {
    states.ES_JOB: "ES jobs",
    states.ES_MERGE_JOB: "ES merge jobs",
    states.JUMBO_JOB: "jumbo jobs",
    states.CO_JUMBO_JOB: "co-jumbo jobs",
}


def task_event_summary(*, task_id: int) -> dict[str, Any] | None:
    """A task's event ranges by status (the event machine's order) and those jumbo jobs processed, and its event
    service jobs by kind; None for a task without event ranges. Two grouped queries (the (task, status) index)."""
    counts = dict(
        Event.objects.filter(task_id=task_id).values("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    if not counts:
        return None
    kinds = dict(
        Job.objects.filter(task_id=task_id, eventService__in=list(EVENT_SERVICE_KINDS))
        .values("eventService")
        .annotate(n=Count("pk"))
        .values_list("eventService", "n")
    )
    return {
        "by_status": [{"status": s, "count": counts[s]} for s in states.EVENT.statuses if s in counts],
        "total": sum(counts.values()),
        "by_jumbo": Event.objects.filter(task_id=task_id, is_jumbo=True).count(),
        "jobs": [{"kind": name, "count": kinds[flag]} for flag, name in EVENT_SERVICE_KINDS.items() if flag in kinds],
    }


def task_output_file_counts(*, task_id: int) -> dict[int, dict[str, int]]:
    """A task's output and log files by dataset and status, counted from the files (one grouped query on the
    (task, type, status) index): an output dataset's stored counters are written when it closes
    (services.outputs), the page shows where its files are now."""
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    for dataset_id, status, n in (
        DatasetFile.objects.filter(task_id=task_id, type__in=states.OUTPUT_TYPES)
        .values("dataset_id", "status")
        .annotate(n=Count("pk"))
        .values_list("dataset_id", "status", "n")
    ):
        counts[dataset_id][status] = n
    return counts


def task_datasets(*, task_id: int) -> list[dict[str, Any]]:
    """A task's datasets with their counters; an output or log dataset's counted from its files now, with its files
    by status (`by_status`, None for an input). Two queries."""
    datasets = list(
        Dataset.objects.filter(task_id=task_id)
        .order_by("type", "datasetID")
        .values("datasetID", "datasetName", "type", "status", "nFiles", "nFilesUsed", "nFilesFinished", "nFilesFailed")
    )
    output_files = task_output_file_counts(task_id=task_id)
    for row in datasets:
        if row["type"] in states.OUTPUT_TYPES:
            files = output_files.get(row["datasetID"], {})
            row.update(
                nFiles=sum(files.values()),
                nFilesFinished=files.get("finished", 0),
                nFilesFailed=files.get("failed", 0),
                by_status=[{"status": s, "count": files[s]} for s in states.OUTPUT_FILE.statuses if s in files],
            )
        else:
            row["by_status"] = None
    return datasets


def task_detail(*, task_id: int, now: datetime, decision_id: int | None = None) -> dict[str, Any] | None:
    """Everything the task page shows, in a fixed number of queries whatever the number of jobs."""
    task = Task.objects.select_related("workQueue", "parent").filter(pk=task_id).first()
    if task is None:
        return None
    jobs = Job.objects.filter(task_id=task_id)
    by_status, by_queue = _task_job_counts(task_id=task_id)
    jobs_by_status = [{"status": s, "count": by_status[s]} for s in states.JOB.statuses if s in by_status]
    datasets = task_datasets(task_id=task_id)
    panels = _latest_decisions(task_id)
    selected = _task_decision_selected(task_id=task_id, decision_id=decision_id)
    history = list(
        Decision.objects.filter(task_id=task_id)
        .order_by("-created", "-pk")
        .values("pk", "created", "plugin", "outcome", "chosen", "primary_reason", "jobsetID", "message")[:30]
    )
    oldest_active = list(
        jobs.filter(jobStatus__in=states.JOB_ACTIVE).order_by("stateChangeTime").values_list("pk", flat=True)[:20]
    )

    timeout_states = job_timeout_states(job_ids=oldest_active, now=now) if oldest_active else {}
    jobs_failed = sum(by_status[s] for s in ENDED_BADLY)
    errors = job_error_summary(task_id=task_id, limit=10) if jobs_failed else None
    entered = task_entered(task)
    state_why, state_advice = task_state_explain(
        task_state_facts(
            task, entered=entered, errors=errors, ended_badly=jobs_failed, jobs_total=sum(by_status.values()), now=now
        )
    )
    return {
        "task": task,
        "timeline": list(TaskStatusLog.objects.filter(task_id=task_id).order_by("pk")),
        "jobs_by_status": jobs_by_status,
        "jobs_total": sum(by_status.values()),
        "jobs_by_queue": by_queue,
        "datasets": datasets,
        "events": task_event_summary(task_id=task_id),
        "panels": panels,
        "selected": selected,
        "history": history,
        "why": why_pending(task, panels) + state_why,
        "headline": task_headline(task, panels, now=now, entered=entered),
        "advice": task_advice(
            task, panels, jobs_failed=jobs_failed, jobs_total=sum(by_status.values()), state_advice=state_advice
        ),
        "timeouts": [
            {"PandaID": pk, "state": state}
            for pk, state in sorted(timeout_states.items(), key=lambda item: item[1].left or timedelta.max)
        ],
        "children": list(Task.objects.filter(parent_id=task_id).values("jediTaskID", "taskName", "status")[:20]),
        "distributions": task_job_distributions(task_id=task_id),
        "retry_chains": task_retry_chains(task_id=task_id),
        "errors": errors,
        "recent_jobs": list(
            jobs.order_by("-stateChangeTime", "-pk").values(
                "pk",
                "jobStatus",
                "computingSite",
                "attemptNr",
                "stateChangeTime",
                "pilotErrorCode",
                "taskBufferErrorCode",
            )[:20]
        ),
    }
