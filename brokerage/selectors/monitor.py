"""What the dashboard pages read. Everything is aggregated in SQL; no page loads all the jobs of a task or a
queue (the task page costs the same number of queries for 10 jobs or 100,000)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import Count, F, Q, QuerySet, Sum

from brokerage import states
from brokerage.engine.advice import Advice, advice_unique, advise
from brokerage.engine.decision import OUTCOMES
from brokerage.engine.reasons import EXPECTED_CODES
from brokerage.engine.task_states import MainError, TaskFacts, task_state_explain
from brokerage.grid_clock import grid_minutes, throttled_until
from brokerage.models import (
    BrokerageCycle,
    Dataset,
    DatasetFile,
    Decision,
    GlobalShare,
    GlobalShareSnapshot,
    Job,
    JobTimeoutSummary,
    PandaQueue,
    Task,
    TaskStatusLog,
)
from brokerage.params import whole_number
from brokerage.plugins import decision_plugins, plugin_registry
from brokerage.selectors.decisions import decision_candidate, decision_count_rows_recent, decision_trace
from brokerage.selectors.jobs import job_error_rows_recent, job_error_summary, job_state_rows_recent
from brokerage.selectors.paging import CountedPaginator
from brokerage.selectors.shares import global_share_usage, work_queue_shares
from brokerage.selectors.timeouts import job_timeout_states

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
PAGE_SIZE = 50
WINDOWS = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "1d": timedelta(days=1), "7d": timedelta(days=7)}


@dataclass(frozen=True)
class TaskListing:
    page: Any
    total: int
    counts_by_status: list[tuple[str, int]]
    sort: str
    filters: dict[str, str]
    problems: dict[str, str]


def _window_problem(window: str) -> str | None:
    if window and window not in WINDOWS:
        return f"{window!r} is not a time window; one of {', '.join(WINDOWS)}"
    return None


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
    if _window_problem(filters.get("window") or ""):
        problems["window"] = _window_problem(filters.get("window") or "")
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
                + (" (expected: another kind)" if group["code"] in EXPECTED_CODES else "")
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


def nucleus_names() -> list[str]:
    """The nuclei a task can be reassigned to."""
    from brokerage.models import Site

    return list(Site.objects.filter(role="nucleus").order_by("name").values_list("name", flat=True))


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
    """What a shifter can do: the advice of the task's state (engine/task_states.py), then of its latest
    decisions while pending (engine/advice.py)."""
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


def task_state_facts(
    task: Task, *, entered: dict[str, Any], errors: dict | None, ended_badly: int, jobs_total: int, now: datetime
) -> TaskFacts:
    """What engine/task_states.py needs of the task: the move into its status (`task_entered`: its reason, who,
    when), and only what its state asks for (at most one more query)."""
    facts: dict[str, Any] = {}
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


def task_detail(*, task_id: int, now: datetime, decision_id: int | None = None) -> dict[str, Any] | None:
    """Everything the task page shows, in a fixed number of queries whatever the number of jobs."""
    task = Task.objects.select_related("workQueue", "parent").filter(pk=task_id).first()
    if task is None:
        return None
    jobs = Job.objects.filter(task_id=task_id)
    # one scan of the task's jobs: counts by (queue, status), from which both tables are made; COUNT(*) lets
    # PostgreSQL read them from the (task, status, site) index alone
    by_status: Counter = Counter()
    per_queue: dict[str, Counter] = {}
    for site, status, count in jobs.values_list("computingSite", "jobStatus").annotate(n=Count("*")).order_by():
        by_status[status] += count
        per_queue.setdefault(site, Counter())[status] += count
    jobs_by_status = [{"status": s, "count": by_status[s]} for s in states.JOB.statuses if s in by_status]
    ended_badly = ("failed", "closed", "cancelled")
    by_queue = sorted(
        (
            {
                "computingSite": site,
                "total": sum(counts.values()),
                "active": sum(counts[s] for s in states.JOB_ACTIVE),
                "finished": counts["finished"],
                "failed": sum(counts[s] for s in ended_badly),
            }
            for site, counts in per_queue.items()
        ),
        key=lambda row: (-row["total"], row["computingSite"]),
    )[:30]
    datasets = list(
        Dataset.objects.filter(task_id=task_id)
        .annotate(done=F("nFilesFinished") + F("nFilesFailed"))
        .order_by("type", "datasetID")
        .values("datasetID", "datasetName", "type", "status", "nFiles", "nFilesUsed", "nFilesFinished", "nFilesFailed")
    )
    panels = _latest_decisions(task_id)
    selected = None
    if decision_id is not None:
        chosen = Decision.objects.filter(pk=decision_id, task_id=task_id).select_related("cycle").first()
        if chosen is not None:
            selected = {"decision": chosen, "trace": decision_trace(decision=chosen), "plugin": chosen.plugin}
    history = list(
        Decision.objects.filter(task_id=task_id)
        .order_by("-created", "-pk")
        .values("pk", "created", "plugin", "outcome", "chosen", "primary_reason", "jobsetID", "message")[:30]
    )
    oldest_active = list(
        jobs.filter(jobStatus__in=states.JOB_ACTIVE).order_by("stateChangeTime").values_list("pk", flat=True)[:20]
    )

    timeout_states = job_timeout_states(job_ids=oldest_active, now=now) if oldest_active else {}
    jobs_failed = sum(by_status[s] for s in ended_badly)
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


def queue_detail(*, name: str, now: datetime, decisions: int = 40) -> dict[str, Any] | None:
    """The queue page: its attributes, jobs now and by state over the last day, its weight in recent job
    decisions, the reasons it was skipped most often, and its timeouts."""
    queue = PandaQueue.objects.select_related("site").filter(name=name).first()
    if queue is None:
        return None
    jobs_now = list(  # the jobs not yet archived: the archive's year behind would make the page slower each day
        Job.objects.filter(computingSite=name, archiveDay__isnull=True)
        .values("jobStatus")
        .annotate(count=Count("pk"))
        .values("jobStatus", "count")
        .order_by("jobStatus")
    )
    since = now - timedelta(days=1)
    # status moves per hour: the whole hours from their summaries (JobStateHour), the edges from the logs
    moves: Counter = Counter()
    for row in job_state_rows_recent(since=since, queue=name, now=now):
        moves[(row["hour"], row["new_status"])] += row["n"]
    over_time = [{"time": hour, "status": status, "count": count} for (hour, status), count in sorted(moves.items())]
    weights, skips = [], Counter()
    recent = (
        Decision.objects.filter(plugin__in=("atlas_prod_job", "atlas_anal_job"), created__gte=now - timedelta(days=2))
        .select_related("cycle")
        .order_by("-created", "-pk")[:decisions]
    )
    for decision in recent:
        entry = decision_candidate(decision=decision, name=name)
        if entry["weight"] is not None:
            weights.append({"time": decision.created, "weight": entry["weight"], "decision": decision.pk})
        if entry["skip_code"]:
            skips[entry["skip_code"]] += 1
    from brokerage.engine import reason_title

    timeouts = list(
        JobTimeoutSummary.objects.filter(computingSite=name, taken_at=_latest_timeout_pass())
        .values("rule", "watched", "approaching", "timed_out")
        .order_by("rule")
    )
    return {
        "queue": queue,
        "cric": sorted((queue.cric or {}).items()),
        "storages": list(queue.storages.select_related("endpoint").values_list("role", "endpoint__name")),
        "jobs_now": jobs_now,
        "archive_after_days": settings.JOB_ARCHIVE_AFTER_DAYS,
        "over_time": over_time,
        "weights": weights,
        "skipped": [{"code": c, "title": reason_title(c), "count": n} for c, n in skips.most_common(12)],
        "decisions_read": len(recent),
        "errors": job_error_summary(rows=job_error_rows_recent(queue=name, since=now - timedelta(days=1)), limit=10),
        "timeouts": timeouts,
    }


def _latest_timeout_pass() -> datetime | None:
    latest = JobTimeoutSummary.objects.order_by("-taken_at").values_list("taken_at", flat=True).first()
    return latest


def timeouts_overview(*, now: datetime) -> dict[str, Any]:
    """The latest watchdog pass by rule and by queue, the passes over the last day, and the active jobs closest
    to their deadline among the oldest ones of each watched status."""
    latest = _latest_timeout_pass()
    rows = JobTimeoutSummary.objects.filter(taken_at=latest) if latest else JobTimeoutSummary.objects.none()
    by_rule = list(
        rows.values("rule")
        .annotate(watched=Sum("watched"), approaching=Sum("approaching"), timed_out=Sum("timed_out"))
        .order_by("rule")
    )
    by_queue = list(
        rows.values("computingSite")
        .annotate(watched=Sum("watched"), approaching=Sum("approaching"), timed_out=Sum("timed_out"))
        .order_by("-timed_out", "-approaching", "computingSite")[:50]
    )
    history = [
        {"time": row["taken_at"], "status": row["rule"], "count": row["n"]}
        for row in JobTimeoutSummary.objects.filter(taken_at__gte=now - timedelta(days=1))
        .values("taken_at", "rule")
        .annotate(n=Sum("timed_out"))
        .order_by("taken_at")
    ]
    oldest = []
    for status in ("assigned", "activated", "starting", "sent", "running", "transferring", "holding"):
        oldest += list(
            Job.objects.filter(jobStatus=status).order_by("stateChangeTime").values_list("pk", flat=True)[:10]
        )
    states_now = job_timeout_states(job_ids=oldest, now=now) if oldest else {}
    jobs = {
        row["pk"]: row
        for row in Job.objects.filter(pk__in=oldest).values("pk", "jobStatus", "computingSite", "task_id")
    }
    closest = sorted(
        ({"job": jobs[pk], "state": state} for pk, state in states_now.items() if state.rule is not None),
        key=lambda item: item["state"].left,
    )[:40]
    return {"latest": latest, "by_rule": by_rule, "by_queue": by_queue, "history": history, "closest": closest}


def shares_overview(*, now: datetime) -> dict[str, Any]:
    """The global share tree with usage, its history, and the work-queue shares with their redistribution."""
    usage = global_share_usage()
    tree = [
        {
            "name": row["share"].name,
            "parent": row["share"].parent.name if row["share"].parent else None,
            "normalised": row["normalised"],
            "usage": row["usage"],
            "leaf": row["leaf"],
            "executing": row["executing_hs06"],
            "target": row["target_hs06"],
            "queued": row["queued_hs06"],
        }
        for row in usage
    ]
    history = [
        {"time": row["taken_at"], "status": row["share__name"], "count": row["usage"]}
        for row in GlobalShareSnapshot.objects.filter(taken_at__gte=now - timedelta(days=7), usage__isnull=False)
        .values("taken_at", "share__name", "usage")
        .order_by("taken_at")
    ]
    queues = []
    for queue_type in ("production", "analysis"):
        for row in work_queue_shares(queue_type=queue_type):
            queues.append(
                {
                    "name": row["queue"].queue_name,
                    "type": queue_type,
                    "share": row["share"] or 0,
                    "effective": round(row["effective"], 2),
                    "active": row["active"],
                    "stretchable": row["queue"].stretchable,
                    "tasks": row["tasks"],
                    "partition": row["partition"].queue_name if row["partition"] else "",
                }
            )
    return {"tree": tree, "history": history, "work_queues": queues}


DECISION_FILTERS = ("plugin", "outcome", "reason", "chosen", "queue", "task")
DEFAULT_DECISION_WINDOW = "1d"
DECISION_OUTCOMES = OUTCOMES
# the explorer's filters the hourly decision summary holds, by the summary's field
DECISION_SUMMARY_FILTERS = {"plugin": "plugin", "outcome": "outcome", "reason": "primary_reason"}


def decision_explorer(*, filters: dict[str, str], now: datetime, page: int = 1) -> dict[str, Any]:
    """Decisions filtered by plugin, outcome, reason code, chosen queue, task and time window, newest first.
    `queue` finds decisions that chose the queue or skipped it for the reason asked (trace search is bounded to
    the page)."""
    queryset: QuerySet = Decision.objects.select_related("cycle").order_by("-created", "-pk")
    applied = {}
    problems = {}
    outcome = (filters.get("outcome") or "").strip()
    if outcome and outcome not in DECISION_OUTCOMES:
        problems["outcome"] = f"{outcome!r} is not an outcome; one of {', '.join(DECISION_OUTCOMES)}"
    plugin = (filters.get("plugin") or "").strip()
    if plugin and plugin not in decision_plugins():
        problems["plugin"] = f"{plugin!r} is not a plugin; one of {', '.join(decision_plugins())}"
    task = (filters.get("task") or "").strip()
    if task and whole_number(task) is None:
        problems["task"] = f"{task!r} is not a task ID (a whole number)"
    if (filters.get("window") or "") != "all" and _window_problem(filters.get("window") or ""):
        problems["window"] = _window_problem(filters.get("window") or "")
    for key in DECISION_FILTERS:
        value = (filters.get(key) or "").strip()
        if not value or key in problems:
            continue
        applied[key] = value
        if key == "reason":
            queryset = queryset.filter(primary_reason=value)
        elif key in ("chosen", "queue"):
            queryset = queryset.filter(chosen=value)
        elif key == "task":
            queryset = queryset.filter(task_id=whole_number(value))
        elif key in ("plugin", "outcome"):
            queryset = queryset.filter(**{key: value})
    window = "" if "window" in problems else filters.get("window") or ""
    if window == "all":
        applied["window"] = window
    elif window == "" and "task" not in applied:
        # a year of decisions behind (issue 32): without a task, the explorer reads the last day unless asked for
        # more ("all" reads everything), so that its counts cost the same whatever lies behind
        window = DEFAULT_DECISION_WINDOW
    if window in WINDOWS:
        applied["window"] = window
        queryset = queryset.filter(created__gte=now - WINDOWS[window])
    # the outcomes, the reasons and the total in one pass: a day is 100,000 decisions at a real grid's rate, so a
    # window filtered at most by plugin, outcome and reason is counted from the hourly summaries and an hour or two
    # of decisions (DecisionHour); a task's or a queue's decisions are few and counted themselves
    if window in WINDOWS and set(applied) <= {"plugin", "outcome", "reason", "window"}:
        summary_filters = {DECISION_SUMMARY_FILTERS[key]: applied[key] for key in applied if key != "window"}
        counted = [
            (row["outcome"], row["primary_reason"], row["n"])
            for row in decision_count_rows_recent(since=now - WINDOWS[window], **summary_filters)
        ]
    else:
        counted = queryset.order_by().values_list("outcome", "primary_reason").annotate(n=Count("*"))
    outcomes: Counter = Counter()
    by_reason: Counter = Counter()
    for outcome_of, reason, n in counted:
        outcomes[outcome_of] += n
        if reason:
            by_reason[reason] += n
    outcome_counts = sorted(outcomes.items(), key=lambda item: DECISION_OUTCOMES.index(item[0]))
    reasons = [
        {"primary_reason": code, "n": n} for code, n in sorted(by_reason.items(), key=lambda item: (-item[1], item[0]))
    ][:15]
    paginator = CountedPaginator(queryset, PAGE_SIZE, count=sum(outcomes.values()))
    page_obj = paginator.get_page(page)
    from brokerage.engine import reason_title

    return {
        "page": page_obj,
        "filters": applied,
        "problems": problems,
        "outcomes": outcome_counts,
        "reasons": [
            {"code": r["primary_reason"], "title": reason_title(r["primary_reason"]), "count": r["n"]} for r in reasons
        ],
        "plugins": plugin_registry().names(),
        "cycles": list(
            BrokerageCycle.objects.order_by("-started").values(
                "pk", "plugin", "started", "finished", "status", "n_decisions", "n_assigned", "n_pending", "error"
            )[:10]
        ),
    }


def gdpconfig_overview(*, vo: str = "atlas") -> dict[str, Any]:
    """Effective parameters with their defaults and origin, and the recent revisions with their changes."""
    from brokerage.selectors.gdpconfig import gdpconfig_parameter_rows, gdpconfig_revision_list

    return {
        "parameters": gdpconfig_parameter_rows(vo=vo),
        "revisions": gdpconfig_revision_list(limit=30),
    }
