"""DIRAC reads for the operator's pages (seed 003): the task queues and the match rate, one job (its task queue,
that queue's priority and the numbers it comes from, the rules it fails for the sites and CEs that asked lately),
one task queue, no-matches by site and CE over time, one matching request. A fixed number of queries each,
whatever the numbers of jobs and requests."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max
from django.db.models.functions import Trunc

from brokerage.adapters.dirac import dirac_groups, dirac_priority_rows, engine_task_queues
from brokerage.engine import explain, reason_title
from brokerage.engine.core.scenario import ScenarioError
from brokerage.engine.dirac.rules import Resource, no_match_reasons, task_queue_priority_terms
from brokerage.engine.dirac.scenario import resource_from_data
from brokerage.models import DiracJob, DiracJobStatusLog, DiracMatchRecord, DiracTaskQueue, DiracTaskQueueValue
from brokerage.models.dirac import match_resource_sent
from brokerage.params import BIGGEST_ID
from brokerage.selectors.dirac_rules import dirac_rules

# The sites and CEs a job page tests its task queue against: those that asked in this window, latest first.
ASKED_LATELY = timedelta(days=1)
ASKERS_SHOWN = 25
# How many of the window's requests are read to find them (the latest first; a busy grid repeats its CEs).
ASKER_RECORDS_READ = 5000
SITES_SHOWN = 30
JOBS_SHOWN = 20


def dirac_task_queues(*, limit: int = 200) -> list[dict[str, Any]]:
    """DIRAC task queues with waiting jobs, largest first: sizes, priorities, requirements (three queries)."""
    sizes = dict(
        DiracJob.objects.filter(status="Waiting")
        .values_list("task_queue")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .values_list("task_queue", "n")[:limit]
    )
    requirements: dict[int, dict[str, list[str]]] = {}
    for tq, name, value in DiracTaskQueueValue.objects.filter(task_queue__in=list(sizes)).values_list(
        "task_queue", "field", "value"
    ):
        requirements.setdefault(tq, {}).setdefault(name, []).append(value)
    rows = [
        {**row, "waiting": sizes[row["id"]], "requirements": requirements.get(row["id"], {})}
        for row in DiracTaskQueue.objects.filter(pk__in=list(sizes)).values(
            "id", "ownerDN", "ownerGroup", "setup", "cpuTime", "priority", "minRAM", "maxRAM"
        )
    ]
    return sorted(rows, key=lambda row: (-row["waiting"], row["id"]))


def dirac_no_matches_by_site(*, now: datetime, window: timedelta = ASKED_LATELY) -> dict[str, Any]:
    """Matching requests per site and CE over the window: how many asked, how many found no job, the reasons
    counted, and the no-matches per hour of the sites and CEs with the most (two queries and one read of the
    no-matches' reason lists)."""
    records = DiracMatchRecord.objects.filter(at__gte=now - window)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for site, ce, matched, n, last in (
        records.values_list("site", "gridCE", "matched").annotate(n=Count("pk"), last=Max("at")).order_by()
    ):
        row = rows.setdefault(
            (site, ce), {"site": site, "gridCE": ce, "requests": 0, "no_match": 0, "last": last, "reasons": Counter()}
        )
        row["requests"] += n
        row["no_match"] += 0 if matched else n
        row["last"] = max(row["last"], last)
    for site, ce, codes in records.filter(matched=False).values_list("site", "gridCE", "reasons")[:ASKER_RECORDS_READ]:
        rows[(site, ce)]["reasons"].update(codes or [])
    table = sorted(rows.values(), key=lambda row: (-row["no_match"], -row["requests"], row["site"], row["gridCE"]))
    for row in table:
        row["reasons"] = [
            {"code": code, "title": reason_title(code), "count": n} for code, n in row["reasons"].most_common(4)
        ]
        row["label"] = _label(row["site"], row["gridCE"])
    charted = {(row["site"], row["gridCE"]) for row in table[:8] if row["no_match"]}
    timeline = [
        {"time": hour, "where": _label(site, ce), "count": n}
        for hour, site, ce, n in records.filter(matched=False)
        .annotate(hour=Trunc("at", "hour"))
        .values_list("hour", "site", "gridCE")
        .annotate(n=Count("pk"))
        .order_by("hour")
        if (site, ce) in charted
    ]
    return {"rows": table[:SITES_SHOWN], "timeline": timeline, "total_rows": len(table)}


def _label(site: str, ce: str) -> str:
    return f"{site or 'no site'} · {ce}" if ce else site or "no site"


def dirac_overview(*, now: datetime) -> dict[str, Any]:
    """The DIRAC page: task queues, match rate over the last day (per hour), commonest no-match reasons, the
    no-matches by site and CE, the latest requests."""
    records = DiracMatchRecord.objects.filter(at__gte=now - timedelta(days=1))
    rate = [
        {"time": row["hour"], "status": "matched" if row["matched"] else "no match", "count": row["n"]}
        for row in records.annotate(hour=Trunc("at", "hour"))
        .values("hour", "matched")
        .annotate(n=Count("pk"))
        .order_by("hour")
    ]
    reasons: Counter = Counter()
    for codes in records.filter(matched=False).values_list("reasons", flat=True)[:ASKER_RECORDS_READ]:
        reasons.update(codes or [])
    return {
        "task_queues": dirac_task_queues(),
        "rate": rate,
        "reasons": [{"code": c, "title": reason_title(c), "count": n} for c, n in reasons.most_common(10)],
        "by_site": dirac_no_matches_by_site(now=now),
        "waiting": DiracJob.objects.filter(status="Waiting").count(),
        "recent": list(
            DiracMatchRecord.objects.order_by("-at", "-id").values(
                "pk", "at", "site", "gridCE", "cpuTime", "matched", "job", "task_queue", "reasons"
            )[:15]
        ),
        "matched_last_day": records.filter(matched=True).count(),
        "requests_last_day": records.count(),
        "tq_order": dirac_rules().tq_order,
    }


def dirac_task_queue_priority(*, task_queue: DiracTaskQueue) -> dict[str, Any]:
    """How the Matcher's priority of this task queue comes about under the installation's rules: the group's
    share, how many owners split it, the queue's average against its owner's total, background and grouped
    queues — recomputed from the waiting jobs now, beside the stored value the Matcher draws with."""
    rules = dirac_rules()
    rows = dirac_priority_rows(groups=[task_queue.ownerGroup], rules=rules)
    terms = task_queue_priority_terms(rows, groups=dirac_groups(), rules=rules).get(task_queue.pk)
    if terms is None:
        return {"stored": task_queue.priority, "terms": None}
    return {
        "stored": task_queue.priority,
        "terms": terms,
        "siblings": sorted(tq_id for tq_id in terms["grouped_with"] if tq_id != task_queue.pk),
        "rules": rules,
        # the stored value changes when a job enters, leaves or the shares change; a difference is a pending update
        "current": abs(terms["priority"] - task_queue.priority) <= 1e-9 * max(1.0, task_queue.priority),
    }


def _resource_of(record: dict[str, Any]) -> tuple[Resource, bool]:
    """The resource a stored request sent, and whether it is whole: requests stored before the resource was kept
    give back their site, setup and CPU time only."""
    data = match_resource_sent(record)
    if data is not None:
        try:
            return resource_from_data(data), True
        except ScenarioError:
            pass
    partial = {"cpuTime": float(record["cpuTime"]), "site": record["site"], "setup": record["setup"]}
    return resource_from_data({**partial, "gridCE": record["gridCE"]}), False


def dirac_askers_tested(*, task_queue_id: int, now: datetime) -> list[dict[str, Any]]:
    """The sites and CEs that asked for work in the last day (latest first, one row per site and CE), each with
    every rule this task queue fails for what it sent, the values compared and the sentence (two queries)."""
    (queue,) = engine_task_queues(queues=DiracTaskQueue.objects.filter(pk=task_queue_id))
    rules, groups = dirac_rules(), dirac_groups()
    seen: set[tuple[str, str]] = set()
    rows = []
    for record in (
        DiracMatchRecord.objects.filter(at__gte=now - ASKED_LATELY)
        .order_by("-at", "-id")
        .values("pk", "at", "site", "gridCE", "setup", "cpuTime", "resource", "matched", "job", "task_queue")[
            :ASKER_RECORDS_READ
        ]
    ):
        key = (record["site"], record["gridCE"])
        if key in seen:
            continue
        seen.add(key)
        resource, whole = _resource_of(record)
        failed = no_match_reasons(queue, resource, rules, groups)
        rows.append(
            {
                "record": record,
                "whole": whole,
                "passes": not failed,
                "reasons": [
                    {"code": code, "title": reason_title(code), "detail": detail, "sentence": explain(code, detail)}
                    for code, detail in failed
                ],
            }
        )
        if len(rows) == ASKERS_SHOWN:
            break
    return rows


def dirac_job_detail(*, job_id: int, now: datetime) -> dict[str, Any] | None:
    """One DIRAC job for an operator: where it is (status, task queue, site), its task queue's priority and the
    numbers it comes from, its place among the queue's jobs, and the rules the queue fails for each site and CE
    that asked lately. None when there is no such job."""
    job = DiracJob.objects.select_related("task_queue").filter(pk=job_id).first()
    if job is None:
        return None
    detail: dict[str, Any] = {
        "job": job,
        "history": list(DiracJobStatusLog.objects.filter(job=job).order_by("-timestamp", "-pk")[:10]),
        "task_queue": job.task_queue,
    }
    if job.task_queue is None:
        return detail
    same_queue = DiracJob.objects.filter(task_queue=job.task_queue, status="Waiting")
    detail |= _task_queue_facts(job.task_queue, now)
    detail["ahead"] = (
        same_queue.filter(userPriority=job.userPriority, pk__lt=job.pk).count() if job.status == "Waiting" else None
    )
    return detail


def dirac_job_explained(*, job_id: int, now: datetime) -> dict[str, Any] | None:
    """`dirac_job_detail` as plain data, for the API (the page and the API say the same)."""
    detail = dirac_job_detail(job_id=job_id, now=now)
    if detail is None:
        return None
    job = detail["job"]
    priority = detail.get("priority")
    return {
        "jobID": job.pk,
        "status": job.status,
        "minorStatus": job.minorStatus,
        "userPriority": job.userPriority,
        "owner": job.owner,
        "ownerGroup": job.ownerGroup,
        "site": job.site,
        "task_queue": job.task_queue_id,
        "requirements": detail.get("requirements", {}),
        "priority": {key: priority[key] for key in ("stored", "terms", "current") if key in priority}
        if priority
        else None,
        "ahead": detail.get("ahead"),
        "askers": [
            {
                "site": row["record"]["site"],
                "gridCE": row["record"]["gridCE"],
                "at": row["record"]["at"],
                "match_record": row["record"]["pk"],
                "matched": row["record"]["matched"],
                "whole": row["whole"],
                "passes": row["passes"],
                "failed": [
                    {"code": r["code"], "detail": r["detail"], "sentence": r["sentence"]} for r in row["reasons"]
                ],
            }
            for row in detail.get("askers", [])
        ],
    }


def dirac_job_exists(*, job_id: int) -> bool:
    """Whether job `job_id` exists (an ID past 64 bits names no row, rather than a database error)."""
    return job_id <= BIGGEST_ID and DiracJob.objects.filter(pk=job_id).exists()


def _task_queue_facts(task_queue: DiracTaskQueue, now: datetime) -> dict[str, Any]:
    """What the job and task-queue pages both show of a queue: requirements, priority explained, waiting jobs by
    user priority, the rules it fails per site and CE that asked lately."""
    waiting = DiracJob.objects.filter(task_queue=task_queue, status="Waiting")
    return {
        "requirements": _requirements(task_queue.pk),
        "priority": dirac_task_queue_priority(task_queue=task_queue),
        "waiting_by_priority": list(
            waiting.values_list("userPriority").annotate(n=Count("pk")).order_by("-userPriority")
        ),
        "askers": dirac_askers_tested(task_queue_id=task_queue.pk, now=now),
    }


def _requirements(task_queue_id: int) -> dict[str, list[str]]:
    requirements: dict[str, list[str]] = {}
    for name, value in DiracTaskQueueValue.objects.filter(task_queue_id=task_queue_id).values_list("field", "value"):
        requirements.setdefault(name, []).append(value)
    return {name: sorted(values) for name, values in sorted(requirements.items())}


def dirac_task_queue_detail(*, task_queue_id: int, now: datetime) -> dict[str, Any] | None:
    """One task queue: its requirements, its priority explained, its waiting jobs by user priority (the first
    ones listed), and the rules it fails for the sites and CEs that asked lately."""
    task_queue = DiracTaskQueue.objects.filter(pk=task_queue_id).first()
    if task_queue is None:
        return None
    waiting = DiracJob.objects.filter(task_queue=task_queue, status="Waiting")
    return {
        "task_queue": task_queue,
        **_task_queue_facts(task_queue, now),
        "first_jobs": list(
            waiting.order_by("-userPriority", "pk").values("pk", "userPriority", "owner", "submissionTime")[:JOBS_SHOWN]
        ),
    }


def dirac_match_detail(*, record_id: int) -> dict[str, Any] | None:
    """One DIRAC matching request, with its reasons' titles and what the resource sent."""
    record = DiracMatchRecord.objects.filter(pk=record_id).first()
    if record is None:
        return None
    return {
        "record": record,
        "reasons": [{"code": code, "title": reason_title(code)} for code in record.reasons or []],
        "sent": [
            (key, ", ".join(value) if isinstance(value, list) else value)
            for key, value in sorted((record.sent() or {}).items())
        ],
    }
