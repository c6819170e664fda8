"""What the job page and the error summaries read: one job with its history, the decision that placed it, its
files, its retries and its timeout; failed and closed jobs grouped by error, queue and attempt."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Case, CharField, Count, IntegerField, Max, Min, Q, QuerySet, Sum, Value, When
from django.db.models.functions import TruncHour
from django.utils import timezone

from brokerage import outputs as outputs_rules
from brokerage import states
from brokerage.job_errors import COMPONENTS, error_label, job_main_error
from brokerage.models import (
    Dataset,
    DatasetFile,
    Decision,
    Event,
    Job,
    JobErrorHour,
    JobParamsTemplate,
    JobRetryHistory,
    JobStateHour,
    JobStatusLog,
    PandaQueue,
)
from brokerage.models.jobs import input_files_parse, job_archive_window
from brokerage.params import whole_number
from brokerage.selectors.hours import hour_start, summarised_rows
from brokerage.selectors.paging import CappedPaginator
from brokerage.selectors.timeouts import job_timeout_states

ENDED_BADLY = ("failed", "closed", "cancelled")
JOB_PLUGINS = ("atlas_prod_job", "atlas_anal_job")


def _main_error_annotations() -> dict[str, Any]:
    """The main error of each job in SQL: the first component with a non-zero code (job_errors.COMPONENTS)."""
    has = [
        (component, code, diag, Q(**{f"{code}__gt": 0}) | Q(**{f"{code}__lt": 0}))
        for component, code, diag in COMPONENTS
    ]
    return {
        "error_component": Case(
            *(When(condition, then=Value(component)) for component, _, _, condition in has),
            default=Value(""),
            output_field=CharField(),
        ),
        "error_code": Case(
            *(When(condition, then=code) for _, code, _, condition in has), default=None, output_field=IntegerField()
        ),
        "error_diag": Case(
            *(When(condition, then=diag) for _, _, diag, condition in has), default=Value(""), output_field=CharField()
        ),
    }


def job_error_filter(text: str) -> Q | None:
    """The jobs whose main error is `component:code` ("pilot:1305", as error_label writes it; the component's name
    as COMPONENTS has it): that code in that column and none in the columns read before it. None when `text` is not
    of that form."""
    component, _, code = text.strip().partition(":")
    code = code.strip().split(" ", 1)[0]
    columns = [column for name, column, _ in COMPONENTS]
    names = [name for name, _, _ in COMPONENTS]
    if component not in names or not code.lstrip("-").isdigit() or len(code.lstrip("-")) > 9:
        return None
    index = names.index(component)
    condition = Q(**{columns[index]: int(code)})
    for earlier in columns[:index]:
        condition &= Q(**{f"{earlier}__isnull": True}) | Q(**{earlier: 0})
    return condition


ERROR_ROW_FIELDS = ("error_component", "error_code", "computingSite", "attemptNr", "jobStatus")


def job_error_rows(
    *,
    task_id: int | None = None,
    queue: str | None = None,
    since=None,
    until=None,
    user: str | None = None,
    cloud: str | None = None,
    site: str | None = None,
    queues: list[str] | None = None,
) -> list[dict]:
    """Jobs that ended badly, counted per main error, queue, attempt and status, read from the jobs (one query):
    the rows job_error_summary groups, and the housekeeping rolls up per hour. Narrowed to a task, a queue, a
    user, a cloud or a site's queues when asked."""
    jobs: QuerySet = Job.objects.filter(jobStatus__in=ENDED_BADLY)
    if task_id is not None:
        jobs = jobs.filter(task_id=task_id)
    if queue is not None:
        jobs = jobs.filter(computingSite=queue)
    if user is not None:
        jobs = jobs.filter(prodUserName=user)
    if cloud is not None:
        jobs = jobs.filter(cloud=cloud)
    if site is not None:
        jobs = jobs.filter(computingSite__in=PandaQueue.objects.filter(site__name=site).values("name"))
    if queues is not None:
        jobs = jobs.filter(computingSite__in=queues)
    if since is not None:
        jobs = jobs.filter(job_archive_window(since), stateChangeTime__gte=since)
    if until is not None:
        jobs = jobs.filter(stateChangeTime__lt=until)
    return list(
        jobs.annotate(**_main_error_annotations())
        .values(*ERROR_ROW_FIELDS)
        .annotate(n=Count("pk"), diag=Max("error_diag"), example=Min("pk"))
        .order_by()
    )


JOB_ERROR_HOURS = "job_error_hours"  # the SummaryMark of JobErrorHour
JOB_STATE_HOURS = "job_state_hours"  # the SummaryMark of JobStateHour


def job_error_rows_recent(*, since: datetime, queue: str | None = None, queues: list[str] | None = None) -> list[dict]:
    """The rows of job_error_rows for everything since `since`, from the hourly summaries (JobErrorHour) and the
    jobs of the edges (_summarised); of one queue, or of a site's `queues`."""

    def summaries(first, mark):
        rows = JobErrorHour.objects.filter(hour__gte=first, hour__lt=mark)
        if queue is not None:
            rows = rows.filter(computingSite=queue)
        if queues is not None:
            rows = rows.filter(computingSite__in=queues)
        return rows.values(*ERROR_ROW_FIELDS).annotate(n=Sum("n"), diag=Max("diag"), example=Min("example")).order_by()

    return summarised_rows(
        mark_name=JOB_ERROR_HOURS,
        since=since,
        summaries=summaries,
        live=lambda start, until: job_error_rows(queue=queue, queues=queues, since=start, until=until),
    )


# A range up to this long is counted an hour at a time (job_state_rows)
HOUR_AT_A_TIME = timedelta(hours=3)


def _hour_slices(since: datetime, until: datetime | None, end: datetime) -> list[tuple[datetime, datetime | None]]:
    """[since, until) cut at the hours; with no `until`, the last slice (the one holding `end`) is left open."""
    slices: list[tuple[datetime, datetime | None]] = []
    start = since
    while True:
        boundary = hour_start(start) + timedelta(hours=1)
        if until is not None and boundary >= until:
            return [*slices, (start, until)]
        if until is None and boundary > end:
            return [*slices, (start, None)]
        slices.append((start, boundary))
        start = boundary


def job_state_rows(
    *,
    since: datetime,
    until: datetime | None = None,
    queue: str | None = None,
    now: datetime | None = None,
    queues: list[str] | None = None,
) -> list[dict]:
    """Job status moves per hour, queue and new status, read from the status logs: what the queue page charts, and
    the housekeeping rolls up per hour (JobStateHour). A range of up to three hours (the summaries' edges, an
    hour's roll-up) is counted an hour at a time, grouped without the hour: PostgreSQL cannot tell that a truncated
    time takes few values, so grouped by it, it sorted (and spilled to disk) the 260,000 moves of an hour that it
    counts in a small hash table without it. With no `until`, moves stamped after `now` count in its hour."""
    end = until or now or timezone.now()
    logs = JobStatusLog.objects.all()
    if queue is not None:
        logs = logs.filter(computingSite=queue)
    if queues is not None:  # a site's queues
        logs = logs.filter(computingSite__in=queues)
    if since <= end <= hour_start(since) + HOUR_AT_A_TIME:
        rows = []
        for start, stop in _hour_slices(since, until, end):
            moves = logs.filter(timestamp__gte=start, **({"timestamp__lt": stop} if stop is not None else {}))
            hour = hour_start(start)
            rows += [
                {"hour": hour, **row}
                for row in moves.values("computingSite", "new_status").annotate(n=Count("pk")).order_by()
            ]
        return rows
    logs = logs.filter(timestamp__gte=since)
    if until is not None:
        logs = logs.filter(timestamp__lt=until)
    return list(
        logs.annotate(hour=TruncHour("timestamp"))
        .values("hour", "computingSite", "new_status")
        .annotate(n=Count("pk"))
        .order_by()
    )


def job_state_rows_recent(
    *, since: datetime, queue: str | None = None, now: datetime | None = None, queues: list[str] | None = None
) -> list[dict]:
    """The rows of job_state_rows for everything since `since` (up to `now`, the clock by default), from
    JobStateHour and the logs of the edges; of one queue, or of a site's `queues`."""

    def summaries(first, mark):
        rows = JobStateHour.objects.filter(hour__gte=first, hour__lt=mark)
        if queue is not None:
            rows = rows.filter(computingSite=queue)
        if queues is not None:
            rows = rows.filter(computingSite__in=queues)
        return rows.values("hour", "computingSite", "new_status", "n")

    return summarised_rows(
        mark_name=JOB_STATE_HOURS,
        since=since,
        summaries=summaries,
        live=lambda start, until: job_state_rows(since=start, until=until, queue=queue, now=now, queues=queues),
    )


def job_error_summary(
    *,
    task_id: int | None = None,
    queue: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
    rows: list[dict] | None = None,
) -> dict[str, Any]:
    """Failed, closed and cancelled jobs of a task or a queue grouped by main error (component and code), with the
    queues and attempts they happened at and one diagnostic message of each; and per (error, queue, attempt).
    Two queries, whatever the number of jobs. `rows` (job_error_rows_recent) replaces the query."""
    if rows is None:
        rows = job_error_rows(task_id=task_id, queue=queue, since=since)
    errors: dict[tuple[str, int | None], dict[str, Any]] = {}
    for row in rows:
        key = (row["error_component"], row["error_code"])
        error = errors.setdefault(
            key,
            {
                "component": row["error_component"],
                "code": row["error_code"],
                "label": error_label(*key),
                "count": 0,
                "queues": {},
                "attempts": {},
                "statuses": {},
                "diag": row["diag"] or "",
                "example": row["example"],
            },
        )
        error["count"] += row["n"]
        error["queues"][row["computingSite"]] = error["queues"].get(row["computingSite"], 0) + row["n"]
        error["attempts"][row["attemptNr"]] = error["attempts"].get(row["attemptNr"], 0) + row["n"]
        error["statuses"][row["jobStatus"]] = error["statuses"].get(row["jobStatus"], 0) + row["n"]
        error["example"] = min(error["example"], row["example"])
    ordered = sorted(errors.values(), key=lambda e: (-e["count"], e["label"]))[:limit]
    for error in ordered:
        error["queues"] = sorted(error["queues"].items(), key=lambda item: (-item[1], item[0]))
        error["attempts"] = sorted(error["attempts"].items())
        error["statuses"] = sorted(error["statuses"].items(), key=lambda item: (-item[1], item[0]))
    total = sum(row["n"] for row in rows)
    return {"errors": ordered, "total": total}


def job_detail(*, job_id: int, now: datetime) -> dict[str, Any] | None:
    """The job page: the job, its status history, the decision that placed it (its job set's) and why it went
    there, its input files, the retries before and after it, its timeout state and its main error."""
    job = Job.objects.select_related("task", "workQueue").filter(pk=job_id).first()
    if job is None:
        return None
    decision = None
    if job.jobsetID is not None:
        decision = (
            Decision.objects.filter(task_id=job.task_id, plugin__in=JOB_PLUGINS, jobsetID=job.jobsetID)
            .order_by("-created", "-pk")
            .first()
        )
    why_here = None
    if decision is not None and decision.chosen == job.computingSite:
        from brokerage.selectors.decisions import decision_why_not

        why_here = decision_why_not(decision=decision, name=job.computingSite)
    retries = list(
        JobRetryHistory.objects.filter(Q(oldPandaID=job_id) | Q(newPandaID=job_id)).values(
            "oldPandaID", "newPandaID", "relationType", "originPandaID", "created"
        )
    )
    values = {column: getattr(job, column) for _, code, diag in COMPONENTS for column in (code, diag)}
    component, code, diag = job_main_error(values)
    errors = [
        {"component": name, "code": getattr(job, code_column), "diag": getattr(job, diag_column)}
        for name, code_column, diag_column in COMPONENTS
        if getattr(job, code_column) or getattr(job, diag_column)
    ]
    timeout = None
    if job.jobStatus in states.JOB_ACTIVE:
        timeout = job_timeout_states(job_ids=[job_id], now=now).get(job_id)
    inputs, outputs = job_input_files(job_ids=[job_id])[job_id][:200], job_output_files(job_id=job_id)
    return {
        "job": job,
        "history": list(JobStatusLog.objects.filter(job_id=job_id).order_by("pk")),
        "decision": decision,
        "why_here": why_here,
        "files": inputs,
        "outputs": outputs,
        "parameters": job_parameters(job=job, inputs=inputs, outputs=outputs),
        "usage": job_resource_use(job, now=now),
        "log_url": job_log_url(job.pilotID),
        "retries": retries,
        # its pilot is a real one (issue 36): its states and heartbeats are the pilot's reports
        "pilot_driven": PandaQueue.objects.filter(name=job.computingSite, pilot_driven=True).exists(),
        # a finished or merging job's codes are no error: an ES job's outcome (111 retried, 115 waiting, 112 merged)
        # stays in the table of codes below, not in the red box a shifter reads first
        "main_error": {"component": component, "code": code, "diag": diag, "label": error_label(component, code)}
        if code and job.jobStatus not in ("finished", "merging")
        else None,
        "errors": errors,
        "timeout": timeout,
        "merge": job_merge_state(job),
        "jumbo": job_event_service_state(job),
    }


def job_parameters(*, job: Job, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> str:
    """The job's parameters, its task's JEDI_JobParams_Template filled in (brokerage.outputs.job_parameters): ${IN}
    its input files, ${OUTPUT<n>} and ${LOG} its files of each output stream, ${RNDMSEED}, ${MAXEVENTS} and
    ${SKIPEVENTS} its seed, events and first event. Empty when its task has no template (a job made before outputs
    were registered). Two queries."""
    template = JobParamsTemplate.objects.filter(task_id=job.task_id).values_list("jobParamsTemplate", flat=True).first()
    if not template:
        return ""
    streams = dict(
        Dataset.objects.filter(pk__in={row["dataset_id"] for row in outputs}).values_list("pk", "streamName")
    )
    values = {"IN": ",".join(row["lfn"] for row in inputs if row["type"] in states.INPUT_TYPES)}
    for row in outputs:
        values.setdefault(streams.get(row["dataset_id"]) or "", row["lfn"])
    first = Event.objects.filter(PandaID=job.pk).aggregate(first=Min("def_min_eventID"))["first"]
    values.update(SKIPEVENTS=str(first or 0))
    if job.randomSeed is not None:
        values["RNDMSEED"] = str(job.randomSeed)
    if job.nEvents is not None:
        values["MAXEVENTS"] = str(job.nEvents)
    return outputs_rules.job_parameters(template, {key: value for key, value in values.items() if key and value})


def job_output_files(*, job_id: int) -> list[dict[str, Any]]:
    """The output and log files a job produces (outPandaID), 200 at most (one query)."""
    return list(
        DatasetFile.objects.filter(outPandaID=job_id, type__in=states.OUTPUT_TYPES)
        .order_by("type", "lfn")
        .values("pk", "lfn", "type", "status", "fsize", "GUID", "dataset_id", "dataset__datasetName")[:200]
    )


# what an event service job's substatus says (seed 002, "Final status of Event Service jobs"; services/event_service.py)
ES_SUBSTATUS_SENTENCES = {
    "es_retry": "it processed some of its event ranges; those left went to a new consumer of its job set, and it waits "
    "in merging for the job set's ES merge job.",
    "es_wait": "its event ranges are done; it waits in merging while other ES jobs of its job set still run, then one "
    "ES merge job merges the set.",
    "es_merge": "it was the last of its job set and every range of the set is done: the set's ES merge job merges "
    "them.",
    "es_inaction": "it processed no event range; its ranges went to another consumer (or the set was done without it).",
    "es_aborted": "another ES job of its job set failed for good (a range at its attempt limit), so the set was given "
    "up: its running ranges cancelled.",
    "es_merge_failed": "its job set's ES merge job failed its last attempt.",
    "pilot_failed": "its pilot reported it failed; the ranges it processed are kept for the merge, those left went "
    "to a new consumer (look at the pilot error below).",
    "es_heartbeat": "its pilot went silent before it processed any event range (heartbeat lost); its ranges went to "
    "a new consumer. If the queue loses many, look at its pilots and worker nodes.",
}


def job_event_service_state(job: Job) -> dict[str, Any] | None:
    """What an event service, ES merge, jumbo or co-jumbo job is and where it stands, in a sentence, with its event
    ranges by status and the task's active jumbo jobs. None for any other job. At most three queries."""
    if job.eventService in (states.ES_JOB, states.ES_MERGE_JOB):
        counts = dict(
            Event.objects.filter(PandaID__in=[job.pk] if job.eventService == states.ES_JOB else
                                 Job.objects.filter(mergeJob_id=job.pk).values("pk"))
            .values("status").annotate(n=Count("pk")).values_list("status", "n")
        )  # fmt: skip
        ranges = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"
        if job.eventService == states.ES_MERGE_JOB:
            sentence = f"ES merge job: it merges the event ranges of its job set's ES jobs (ranges: {ranges})."
        elif job.jobSubStatus in ES_SUBSTATUS_SENTENCES:
            sentence = f"Event service job ({job.jobSubStatus}): {ES_SUBSTATUS_SENTENCES[job.jobSubStatus]}"
            sentence += f" Its ranges: {ranges}."
        elif job.jobStatus == "failed" and job.taskBufferErrorCode == 114:
            sentence = (
                f"Event service job failed: {job.taskBufferErrorDiag or 'maximum event attempts reached'}; its job "
                f"set is given up (ranges: {ranges})."
            )
        else:
            sentence = (
                f"Event service job: its event ranges are given to it ahead and processed on the worker node, failed "
                f"ones retried by new consumers up to the task's maxAttemptEsJob (ranges: {ranges})."
            )
        return {"sentence": sentence, "jumbo_jobs": []}
    if job.eventService not in (states.JUMBO_JOB, states.CO_JUMBO_JOB):
        return None
    jumbo_jobs = list(
        Job.objects.filter(task_id=job.task_id, eventService=states.JUMBO_JOB, jobStatus__in=states.JOB_ACTIVE)
        .exclude(pk=job.pk)
        .order_by("pk")
        .values_list("pk", flat=True)[:20]
    )
    if job.eventService == states.JUMBO_JOB:
        processed = Event.objects.filter(task_id=job.task_id, is_jumbo=True).count()
        sentence = (
            f"Jumbo job: it takes any events of its task on demand, across every job set, at {job.computingSite}; "
            "the events it processes are finished, and done once their co-jumbo job finishes. Event ranges of the "
            f"task processed by jumbo jobs so far: {processed}."
        )
        return {"sentence": sentence, "jumbo_jobs": jumbo_jobs}
    counts = dict(
        Event.objects.filter(PandaID=job.pk)
        .order_by()
        .values("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    total = sum(counts.values())
    processed = sum(counts.get(status, 0) for status in states.EVENTS_PROCESSED)
    numbers = f"{processed} of its {total} event ranges processed"
    if job.jobSubStatus == "co_jumbo_reset":
        sentence = (
            "Fake co-jumbo job given back: its task disabled jumbo jobs or it waited over "
            f"{states.FAKE_CO_JUMBO_HOURS} hours, so its unprocessed ranges were cancelled and its input goes to a "
            f"real co-jumbo job ({numbers})."
        )
    elif job.computingSite == states.WAITING_CO_JUMBO and job.jobStatus == "waiting":
        sentence = (
            "Fake co-jumbo job: no queue running event service took its job set, so it waits at WAITING_CO_JUMBO "
            f"while the task's jumbo jobs process its events ({numbers}). The co-jumbo check finishes it once all "
            f"are processed, or gives it back for a real co-jumbo job after {states.FAKE_CO_JUMBO_HOURS} hours or "
            "when the task disables jumbo jobs. Waiting co-jumbo jobs have no timeout."
        )
    elif job.jobStatus == "finished" and processed == total and total:
        sentence = f"Co-jumbo job: finished once its events were processed ({numbers}); its events are done."
    else:
        sentence = (
            f"Co-jumbo job: it processes the events of its job set, which the task's jumbo jobs may take as well "
            f"({numbers}); if they process them all before it starts, the co-jumbo check finishes it."
        )
    return {"sentence": sentence, "jumbo_jobs": jumbo_jobs}


def job_merge_state(job: Job) -> dict[str, Any] | None:
    """Where a job of a task whose outputs are merged stands (services/merging.py, seed 002 "Output merging"): a
    pre-merged job's merge job, or a merge job's pre-merged jobs, in a sentence. None for any other job. At most
    one query."""
    tries = states.MERGE_MAX_ATTEMPTS
    if job.isMerge:
        premerged = list(Job.objects.filter(mergeJob_id=job.pk).order_by("pk").values_list("pk", flat=True)[:101])
        count = len(premerged)
        more = "over 100" if count > 100 else f"{count}"
        if job.jobStatus in states.JOB_ACTIVE:
            sentence = (
                f"Merge job, attempt {job.attemptNr} of {tries}, of {more} pre-merged jobs at "
                f"{job.computingSite}: they finish when it does; if its attempt {tries} fails they are "
                "cancelled and their inputs run again."
            )
        elif job.jobStatus == "finished":
            sentence = f"Merge job: it merged the outputs of {more} pre-merged jobs, which finished with it."
        elif job.attemptNr >= tries:
            sentence = (
                f"Merge job: its last attempt failed, so its {more} pre-merged jobs were cancelled and their inputs "
                "run again."
            )
        else:
            sentence = f"Merge job: this attempt failed; the next attempt merges the same {more} pre-merged jobs."
        return {"sentence": sentence, "premerged": premerged[:100], "merge_job": None}
    merge = None
    if job.mergeJob_id is not None:
        merge = Job.objects.filter(pk=job.mergeJob_id).values("pk", "jobStatus", "attemptNr").first()
    if job.jobStatus == "merging":
        if merge is None:
            sentence = (
                f"Its payload finished; its pre-merged outputs wait at {job.computingSite} until the task's other "
                "jobs there are done, then a merge job (priority 5,000) merges them. Merging jobs have no timeout."
            )
        elif merge["jobStatus"] in states.JOB_ACTIVE:
            sentence = (
                f"Its outputs are being merged by merge job {merge['pk']} (attempt {merge['attemptNr']} of "
                f"{tries}, {merge['jobStatus']}); it finishes when that job does."
            )
        else:
            sentence = (
                f"Merge job {merge['pk']} failed its attempt {merge['attemptNr']} of {tries}: the next "
                "attempt is made at the next job generation."
            )
    elif job.jobSubStatus == states.MERGE_FAILED_SUBSTATUS:
        sentence = "The merge of its outputs failed three times: it was cancelled and its input files run again."
    elif merge is not None:
        sentence = f"Its outputs were merged by merge job {merge['pk']}."
    else:
        return None
    return {"sentence": sentence, "premerged": [], "merge_job": merge["pk"] if merge else None}


def job_input_files(*, job_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The input files each job took, with the attempt it took them at, whatever happened to them since (two
    queries): a failed job's files went back to their dataset or on to another job, and the job still shows them
    (issue 50, finding 7). A job made before Job.inputFiles was kept shows the files that still name it."""
    taken = dict(Job.objects.filter(pk__in=job_ids).values_list("pk", "inputFiles"))
    pairs = {job_id: input_files_parse(text or "") for job_id, text in taken.items()}
    wanted = {file_id for rows in pairs.values() for file_id, _ in rows}
    legacy = {job_id for job_id, rows in pairs.items() if not rows}
    condition = Q(pk__in=wanted)
    if legacy:
        condition |= Q(PandaID__in=legacy, type__in=states.INPUT_TYPES)
    files = {
        row["pk"]: row
        for row in DatasetFile.objects.filter(condition).values(
            "pk", "lfn", "status", "attemptNr", "maxAttempt", "fsize", "nEvents", "PandaID", "type", "GUID",
            "checksum", "scope", "task_id", "dataset_id", "dataset__datasetName",
        )
    }  # fmt: skip
    holding: dict[int, list[tuple[int, int]]] = {}  # a legacy job's files: those that still name it
    for pk, row in files.items():
        if row["PandaID"] in legacy:
            holding.setdefault(row["PandaID"], []).append((pk, row["attemptNr"]))
    result: dict[int, list[dict[str, Any]]] = {}
    for job_id in job_ids:
        rows = pairs.get(job_id) or holding.get(job_id, [])
        result[job_id] = sorted(
            (
                {**files[file_id], "jobAttemptNr": attempt, "now_with": files[file_id]["PandaID"]}
                for file_id, attempt in rows
                if file_id in files
            ),
            key=lambda row: row["lfn"],
        )
    return result


FACET_SCAN = 10_000  # the latest jobs of a list its facets count (BigPanDA counts the jobs it loaded, too)


def job_facets(queryset: QuerySet) -> dict[str, Any]:
    """The latest FACET_SCAN jobs of a filtered list counted by status, queue, cloud, user and main error
    (BigPanDA's job-list facets), the commonest values of each, each a filter of the list; every facet's counts add
    up to the jobs counted. One query of those jobs' columns, counted here: six GROUP BYs over them cost 600 ms on
    a day of a million jobs (bench pages)."""
    columns = [*JOB_FACETS, *(code for _, code, _ in COMPONENTS)]
    rows = list(queryset.order_by("-stateChangeTime", "-pk").values(*columns)[:FACET_SCAN])
    counters: dict[str, Counter] = {name: Counter() for name in (*JOB_FACETS.values(), "error")}
    for row in rows:
        for column, name in JOB_FACETS.items():
            counters[name][row[column]] += 1
        if row["jobStatus"] in ENDED_BADLY:
            component, code, _ = job_main_error(row)
            if code:
                counters["error"][f"{component}:{code}"] += 1
    facets = []
    for name, counter in counters.items():
        ranked = sorted(counter.items(), key=lambda item: (-item[1], str(item[0])))
        facets.append(
            {
                "name": name,
                "values": [{"value": value, "count": count} for value, count in ranked[:FACET_VALUES]],
                "more": len(ranked) > FACET_VALUES,
            }
        )
    return {"facets": facets, "scanned": len(rows), "capped": len(rows) >= FACET_SCAN}


ERROR_WINDOWS = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "1d": timedelta(days=1), "7d": timedelta(days=7)}
ERROR_FILTERS = ("task", "queue", "site", "cloud", "user")


def error_overview(*, filters: dict[str, str], now: datetime) -> dict[str, Any]:
    """The errors page (BigPanDA's error summary): jobs that ended badly in a window (1h, 6h, 1d, 7d; a day by
    default), narrowed by task, queue, site, cloud and user, grouped by main error with the queues it struck; each
    error and queue a link to those jobs. Unfiltered, from the hourly summaries; filtered, from the jobs."""
    problems: dict[str, str] = {}
    window = (filters.get("window") or "1d").strip()
    if window not in ERROR_WINDOWS:
        problems["window"] = f"{window!r} is not a time window; one of {', '.join(ERROR_WINDOWS)}"
        window = "1d"
    applied = {key: (filters.get(key) or "").strip() for key in ERROR_FILTERS if (filters.get(key) or "").strip()}
    if "task" in applied and whole_number(applied["task"]) is None:
        problems["task"] = f"{applied.pop('task')!r} is not a task ID (a whole number)"
    since = now - ERROR_WINDOWS[window]
    if not applied:
        rows = job_error_rows_recent(since=since)
    elif set(applied) == {"queue"}:
        rows = job_error_rows_recent(since=since, queue=applied["queue"])
    else:
        rows = job_error_rows(
            task_id=whole_number(applied["task"]) if "task" in applied else None,
            queue=applied.get("queue"),
            user=applied.get("user"),
            cloud=applied.get("cloud"),
            site=applied.get("site"),
            since=since,
        )
    summary = job_error_summary(rows=rows, limit=100)
    return {"summary": summary, "filters": applied, "window": window, "windows": list(ERROR_WINDOWS),
            "problems": problems}  # fmt: skip


def job_resource_use(job: Job, *, now: datetime) -> dict[str, Any]:
    """What the job used, as BigPanDA's job page shows it: wall time (start to end, or to now while it runs), CPU
    time, CPU efficiency (CPU ÷ (wall × cores), in %) and memory (maxRSS, maxPSS in kB as the pilot reports them)."""
    wall = None
    if job.startTime:
        wall = max(((job.endTime or now) - job.startTime).total_seconds(), 0.0)
    cores = job.actualCoreCount or job.coreCount or 1
    cpu = job.cpuConsumptionTime
    efficiency = round(100 * cpu / (wall * cores), 1) if cpu is not None and wall else None
    return {"wall_seconds": wall, "cpu_seconds": cpu, "cores": cores, "cpu_efficiency": efficiency,
            "maxRSS_kB": job.maxRSS, "maxPSS_kB": job.maxPSS}  # fmt: skip


def job_log_url(pilot_id: str) -> str:
    """The pilot's log as pilot 3 names it in its pilotID ("id|stdout URL|…"); "" when it sent none."""
    for part in (pilot_id or "").split("|")[1:]:
        if part.startswith(("https://", "http://")):
            return part
    return ""


JOB_FILTERS = ("status", "queue", "task", "jobset", "cloud", "user", "site", "error")
# the job list's facets (BigPanDA's job list): column counted → the filter its links set
JOB_FACETS = {"jobStatus": "status", "computingSite": "queue", "cloud": "cloud", "prodUserName": "user"}
FACET_VALUES = 12  # the commonest values of each facet
# the job list's windows of last change; without a task it shows the last day unless asked for more (issue 32: a
# year of archive behind would make it slower each day; BigPanDA's job list shows the last 12 hours by default)
JOB_WINDOWS = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "1d": timedelta(days=1), "7d": timedelta(days=7)}
DEFAULT_JOB_WINDOW = "1d"


def job_list_problems(filters: dict[str, str]) -> dict[str, str]:
    """Each filter value the job list cannot use, with what it expects (the page shows them, nothing silently)."""
    problems = {}
    status = (filters.get("status") or "").strip()
    if status and status not in states.JOB.statuses:
        problems["status"] = f"{status!r} is not a job status; one of {', '.join(states.JOB.statuses)}"
    task = (filters.get("task") or "").strip()
    if task and whole_number(task) is None:
        problems["task"] = f"{task!r} is not a task ID (a whole number)"
    jobset = (filters.get("jobset") or "").strip()
    if jobset and whole_number(jobset) is None:
        problems["jobset"] = f"{jobset!r} is not a job set ID (a whole number)"
    error = (filters.get("error") or "").strip()
    if error and job_error_filter(error) is None:
        problems["error"] = f"{error!r} is not component:code (e.g. pilot:1305)"
    window = (filters.get("window") or "").strip()
    if window and window != "all" and window not in JOB_WINDOWS:
        problems["window"] = f"{window!r} is not a time window; one of {', '.join(JOB_WINDOWS)}, all"
    return problems


def job_list(
    *, filters: dict[str, str], page: int = 1, page_size: int = 50, now: datetime | None = None
) -> dict[str, Any]:
    """Jobs filtered by status, queue, task, job set and window of last change (the last day by default, unless a
    task is asked for; `all` for everything), most recently changed first, a page at a time; filters that are not
    valid are left out and named in `problems`."""
    problems = job_list_problems(filters)
    queryset = Job.objects.all()
    applied = {}
    for key in JOB_FILTERS:
        value = (filters.get(key) or "").strip()
        if not value or key in problems:
            continue
        applied[key] = value
        if key == "error":
            queryset = queryset.filter(job_error_filter(value))
        elif key == "site":
            queryset = queryset.filter(computingSite__in=PandaQueue.objects.filter(site__name=value).values("name"))
        else:
            column = {"status": "jobStatus", "queue": "computingSite", "task": "task_id", "jobset": "jobsetID",
                      "cloud": "cloud", "user": "prodUserName"}[key]  # fmt: skip
            queryset = queryset.filter(**{column: value})
    window = "" if "window" in problems else (filters.get("window") or "").strip()
    if window == "" and "task" not in applied:
        window = DEFAULT_JOB_WINDOW
    if window:
        applied["window"] = window
    if window in JOB_WINDOWS:
        since = (now or timezone.now()) - JOB_WINDOWS[window]
        queryset = queryset.filter(job_archive_window(since), stateChangeTime__gte=since)
    paginator = CappedPaginator(
        queryset.order_by("-stateChangeTime", "-pk").values(
            "pk",
            "task_id",
            "jobStatus",
            "computingSite",
            "attemptNr",
            "stateChangeTime",
            *[c for _, c, _ in COMPONENTS],
        ),
        page_size,
    )
    rows = paginator.get_page(page)
    for row in rows:
        component, code, _ = job_main_error(row)
        row["error"] = error_label(component, code) if code else ""
        row["error_key"] = f"{component}:{code}" if code else ""
    return {
        "page": rows,
        **dict(zip(("facets", "facets_scanned", "facets_capped"), job_facets(queryset).values(), strict=True)),
        "filters": applied,
        "problems": problems,
        "statuses": states.JOB.statuses,
        "windows": list(JOB_WINDOWS),
    }
