"""Event service jobs ending (seed 002, "Final status of Event Service jobs"; the rules in brokerage.event_service):
their event ranges finished, failed (retried or fatal), done; the job to merging, failed or closed with its substatus
and task-buffer error; a new consumer for the ranges left; the job set's other ES jobs closed when one failed for good.
The ES merge job itself comes from job generation (services.merging: one per job set, once none of its ES jobs is
active), and its end finishes or fails the ES jobs (merge_jobs_after_end)."""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from datetime import datetime

from django.db import transaction
from django.db.models import Count, F, Q

from brokerage.event_service import (
    ES_ABORTED,
    MAX_ATTEMPT_ES_JOB,
    PEC_CORRUPTED_INPUT,
    EsJobEnd,
    EsOutcome,
    es_job_end,
    range_after_failure,
)
from brokerage.models import DatasetFile, Event, Job, JobStatusLog, Task
from brokerage.services.bulk import rows_insert
from brokerage.services.counters import dataset_counters_refresh, datasets_of_files
from brokerage.services.retries import event_files_close
from brokerage.services.status import job_status_transition_many
from brokerage.states import CO_JUMBO_JOB, ES_JOB, ES_MERGE_JOB, JOB_ACTIVE, JUMBO_JOB

ACTOR = "event service"
# the ranges a job holds while it runs
RUNNING_RANGES = ("sent", "running")
# where an ES job's end is decided from: running (the simulator), or any status a pilot's final update comes in
ENDING_FROM = ("sent", "starting", "running", "holding")
# what a range given to a pilot says of itself
RANGE_FIELDS = (
    "task_id", "PandaID", "file_id", "job_processID", "attemptNr", "def_min_eventID", "def_max_eventID", "file__lfn",
    "file__GUID", "file__scope",
)  # fmt: skip
# co-jumbo jobs whose ranges a jumbo job may take: not yet at a pilot
NOT_STARTED = ("pending", "defined", "waiting", "assigned", "activated", "throttled")
# the event range statuses a pilot reports (updateEventRanges' eventStatus)
PILOT_RANGE_STATUSES = ("running", "finished", "failed", "fatal")
# the jobs that ask for event ranges (EventServiceUtils: ES, jumbo and co-jumbo jobs)
RANGE_TAKERS = (ES_JOB, JUMBO_JOB, CO_JUMBO_JOB)
# the jobs that end by their ranges and wait in merging for their job set's ES merge job: ES jobs and co-jumbo jobs
# ("co-jumbo jobs are very similar to conventional event service jobs", seed 002)
ES_CONSUMERS = (ES_JOB, CO_JUMBO_JOB)
# where a co-jumbo job waits until the co-jumbo check ends it (services.jumbo): its events processed by jumbo jobs
CO_JUMBO_WAITING = ("waiting", "assigned", "activated")


def es_jobs_split(*, job_ids: list[int]) -> tuple[list[int], list[int]]:
    """Of jobs whose payload just ended, (the ES and co-jumbo jobs, the others). One query."""
    if not job_ids:
        return [], []
    es = set(
        Job.objects.filter(pk__in=job_ids, eventService__in=ES_CONSUMERS, isMerge=False).values_list("pk", flat=True)
    )
    return [pk for pk in job_ids if pk in es], [pk for pk in job_ids if pk not in es]


def range_fails(event_id: int, attempt: int, percent: int) -> bool:
    """Whether the demo's payload fails this event range at this attempt (task parameter `demoEventFailurePercent`):
    a hash of both, so a run is reproducible and a retried range draws again."""
    if percent <= 0:
        return False
    return int(hashlib.sha256(f"event:{event_id}:{attempt}".encode()).hexdigest()[:8], 16) % 100 < percent


def file_number(lfn: str) -> int:
    """A demo input file's number in its dataset (the story files' `._000003.pool.root.1`); -1 for another name."""
    found = re.search(r"\._(\d+)\.", lfn)
    return int(found[1]) if found else -1


def es_jobs_end(
    *, succeeded: list[int], failed: list[int], now: datetime, reported: bool = False, lost: str = ""
) -> dict[int, EsOutcome]:
    """Ends the ES jobs whose payload just ended (`succeeded` or `failed` on the worker node), in PandaID order, each
    seeing its job set as the ones before left it. Their ranges, played by the simulator: a failed payload's all
    failed; a succeeded one's finished, but those its task's demo payload fails (`demoEventFailurePercent`, drawn;
    `demoFailingRanges`: [file number, first event] pairs that fail their first attempt).
    `reported`: a real pilot told each range's end itself (updateEventRanges): finished ones stay finished, fatal
    ones fatal, and a range it took but never reported failed. `lost` (pilot_failed, es_heartbeat) for the `failed`
    jobs: the pilot failed them, or the watchdog found their heartbeat lost. Finished ranges are done once their job
    has its final status or waits in merging; failed ones are ready for the next consumer or fatal. The caller holds
    their tasks (services.retries.job_tasks_lock). Returns each job's outcome."""
    ended = sorted([*succeeded, *failed])
    if not ended:
        return {}
    jobs = {
        row["pk"]: row
        for row in Job.objects.filter(pk__in=ended).values(
            "pk", "task_id", "jobsetID", "attemptNr", "maxAttempt", "computingSite", "jobStatus"
        )
    }
    params = dict(Task.objects.filter(pk__in={job["task_id"] for job in jobs.values()}).values_list("pk", "taskParams"))
    ok = set(succeeded)
    # every job's ranges in one read and three writes: a range belongs to one job, so no job's ranges see another's
    by_job: dict[int, list[tuple]] = defaultdict(list)
    if reported:
        for event_id, panda_id, status, attempt in Event.objects.filter(
            PandaID__in=ended, status__in=("finished", *RUNNING_RANGES, "failed")
        ).values_list("pk", "PandaID", "status", "attemptNr"):
            by_job[panda_id].append((event_id, status, attempt))
    else:
        # a range a jumbo job processed for it is finished already (services.simulator._jumbo_events_process)
        for event_id, panda_id, status, attempt, lfn, first in Event.objects.filter(
            PandaID__in=ended, status__in=(*RUNNING_RANGES, "finished")
        ).values_list("pk", "PandaID", "status", "attemptNr", "file__lfn", "def_min_eventID"):
            by_job[panda_id].append(
                (event_id, attempt, lfn, first) if status != "finished" else (event_id, None, "", 0)
            )
    all_good: list[int] = []
    after: dict[str, list[int]] = {"ready": [], "fatal": []}
    for pk in ended:
        job = jobs[pk]
        task_params = params.get(job["task_id"]) or {}
        limit = int(task_params.get("maxAttemptEsJob") or MAX_ATTEMPT_ES_JOB)
        if reported:
            good = [event_id for event_id, status, _ in by_job[pk] if status == "finished"]
            bad = [(event_id, attempt) for event_id, status, attempt in by_job[pk] if status != "finished"]
        else:
            percent = int(task_params.get("demoEventFailurePercent") or 0) if pk in ok else 100
            failing = {tuple(pair) for pair in task_params.get("demoFailingRanges") or ()} if pk in ok else set()
            bad = [
                (event_id, attempt)
                for event_id, attempt, lfn, first in by_job[pk]
                if attempt is not None
                and (range_fails(event_id, attempt, percent) or (attempt == 0 and (file_number(lfn), first) in failing))
            ]
            failed_ids = {event_id for event_id, _ in bad}
            good = [event_id for event_id, *_ in by_job[pk] if event_id not in failed_ids]
        all_good += good
        for event_id, attempt in bad:
            after[range_after_failure(attempt=attempt + 1, max_attempt=limit)].append(event_id)
        job["processed"], job["failed_ranges"], job["limit"] = len(good), len(bad), limit
        job["lost"] = lost if pk not in ok else ""
    # finished, and done at once: the job takes its final status or waits in merging just below
    Event.objects.filter(pk__in=all_good).update(status="done")
    for status, ids in after.items():
        Event.objects.filter(pk__in=ids).update(status=status, attemptNr=F("attemptNr") + 1)
    outcomes: dict[int, EsOutcome] = {}
    aborted: list[int] = []
    for pk in ended:
        # a job an earlier one's failure closed (es_aborted) has its outcome already
        if jobs[pk]["jobStatus"] not in (*ENDING_FROM, *CO_JUMBO_WAITING) or pk in aborted:
            continue
        outcomes[pk] = _job_end(jobs[pk], aborted=aborted, now=now)
    touched = datasets_of_files(file_filter=Q(events__PandaID__in=[*ended, *aborted]))
    event_files_close([*ended, *aborted], now=now, cancelled_ends=True)
    dataset_counters_refresh(dataset_ids=touched, now=now)
    return outcomes


def es_merge_corrupted_mark(
    *, merge_job_id: int, lfns: list[str], pilot_error_code: int | None, now: datetime
) -> list[int]:
    """An ES merge job that failed on corrupted input (a PEC_CORRUPTED_INPUT pilot error) and named the ES outputs it
    could not read (the pilot's corruptedFiles): the done ranges of the ES jobs that made them are corrupted
    ("flagged … in order to be re-processed", seed 002), as task_event_module.setCorruptedEventRanges (1.0.4) finds
    them through the ES jobs' zip files, and those outputs failed. Each such ES job gets a consumer for its
    corrupted ranges, their next attempt (a row each, so the corrupted ones stay to be read), as for ranges that
    failed. The merge's next attempt merges what is left. The caller holds the task. Returns the ranges marked."""
    if pilot_error_code not in PEC_CORRUPTED_INPUT or not lfns:
        return []
    if not Job.objects.filter(pk=merge_job_id, eventService=ES_MERGE_JOB).exists():
        return []
    outputs = DatasetFile.objects.filter(
        outPandaID__in=Job.objects.filter(mergeJob_id=merge_job_id).values("pk"), lfn__in=lfns
    )
    producers = sorted(set(outputs.values_list("outPandaID", flat=True)))
    ranges = list(Event.objects.filter(PandaID__in=producers, status="done"))
    Event.objects.filter(pk__in=[event.pk for event in ranges]).update(status="corrupted")
    outputs.filter(status="merging").update(status="failed")
    Event.objects.bulk_create(
        Event(
            task_id=event.task_id, dataset_id=event.dataset_id, file_id=event.file_id, PandaID=event.PandaID,
            job_processID=event.job_processID, def_min_eventID=event.def_min_eventID,
            def_max_eventID=event.def_max_eventID, attemptNr=event.attemptNr + 1, status="ready",
        )
        for event in ranges
    )  # fmt: skip
    for producer in sorted({event.PandaID for event in ranges}):
        _consumer_again({"pk": producer}, now=now)
    return [event.pk for event in ranges]


def _job_set_state(job: dict) -> dict[str, int]:
    """Where the job's job set stands: its ranges fatal, left to process (the job's own), done, and its other ES
    jobs active but merging (those ending in the same step and not decided yet are still running: active)."""
    members = Job.objects.filter(
        task_id=job["task_id"], jobsetID=job["jobsetID"], isMerge=False, eventService__in=ES_CONSUMERS
    )
    ranges = Counter(
        dict(
            Event.objects.filter(task_id=job["task_id"], PandaID__in=members.values("pk"))
            .values_list("status")
            .annotate(n=Count("pk"))
            .order_by()
        )
    )
    others = members.exclude(pk=job["pk"]).filter(Q(jobStatus__in=JOB_ACTIVE) & ~Q(jobStatus="merging"))
    return {
        "fatal": ranges["fatal"],
        "left": Event.objects.filter(PandaID=job["pk"], status="ready").count(),
        "done": ranges["done"] + ranges["merged"],
        "others": others.count(),
    }


def _job_end(job: dict, *, aborted: list[int], now: datetime) -> EsOutcome:
    state = _job_set_state(job)
    outcome = es_job_end(
        EsJobEnd(
            processed=job["processed"],
            failed=job["failed_ranges"],
            attempt=job["attemptNr"],
            max_attempt=job["maxAttempt"] or 1,
            fatal_in_set=state["fatal"],
            left_in_set=state["left"],
            done_in_set=state["done"],
            others_active=state["others"],
            lost=job.get("lost", ""),
        )
    )
    current = Job.objects.get(pk=job["pk"]).jobStatus
    if current in ("sent", "starting"):  # a pilot's final update: its payload ran
        job_status_transition_many(
            from_status=current, to_status="running", job_ids=[job["pk"]], reason="payload ran", actor=ACTOR, now=now
        )
        current = "running"
    job_status_transition_many(
        from_status=current,
        to_status=outcome.status,
        job_ids=[job["pk"]],
        reason=f"event service: {outcome.diag}",
        actor=ACTOR,
        now=now,
        columns={
            "jobSubStatus": outcome.substatus,
            "taskBufferErrorCode": outcome.code,
            "taskBufferErrorDiag": outcome.diag[:300],
        },
    )
    if outcome.fatal_left:
        Event.objects.filter(PandaID=job["pk"], status="ready").update(status="fatal")
    if outcome.retry:
        _consumer_again(job, now=now)
    if outcome.abort_others:
        aborted += _others_abort(job, now=now)
    return outcome


def _consumer_again(job: dict, *, now: datetime) -> int:
    """A new consumer for the job's ranges left (its next attempt, at the same queue), as ppEventServiceJob makes
    one: a copy of the job, its ranges handed over."""
    old = Job.objects.get(pk=job["pk"])
    new = Job.objects.get(pk=job["pk"])
    new.pk = None
    for column in ("jobSubStatus", "taskBufferErrorDiag", "pilotErrorDiag", "exeErrorDiag", "batchID", "pilotID"):
        setattr(new, column, "")
    for column in ("taskBufferErrorCode", "pilotErrorCode", "exeErrorCode", "startTime", "endTime", "mergeJob"):
        setattr(new, column, None)
    new.jobStatus, new.attemptNr = "pending", old.attemptNr + 1
    new.creationTime = new.modificationTime = new.stateChangeTime = now
    new.save()
    rows_insert(
        JobStatusLog,
        fields=("job_id", "timestamp", "old_status", "new_status", "actor", "reason", "computingSite"),
        rows=[
            (new.pk, now, "", "pending", ACTOR, f"consumer again for the ranges left by {old.pk}", new.computingSite)
        ],
    )
    Event.objects.filter(PandaID=old.pk, status="ready").update(PandaID=new.pk)
    for source, target in (("pending", "defined"), ("defined", "assigned")):
        job_status_transition_many(
            from_status=source, to_status=target, job_ids=[new.pk], reason="event ranges retried", actor=ACTOR, now=now
        )
    return new.pk


def _others_abort(job: dict, *, now: datetime) -> list[int]:
    """The job set's other active ES jobs closed, es_aborted ("killed since associated ES jobs failed"): their running
    ranges cancelled, ranges not started fatal with the job set."""
    others = list(
        Job.objects.filter(
            task_id=job["task_id"], jobsetID=job["jobsetID"], eventService__in=ES_CONSUMERS, isMerge=False
        )
        .exclude(pk=job["pk"])
        .filter(jobStatus__in=JOB_ACTIVE)
        .exclude(jobStatus="merging")
        .values_list("pk", "jobStatus")
    )
    by_status: dict[str, list[int]] = defaultdict(list)
    for pk, status in others:
        by_status[status].append(pk)
    closed: list[int] = []
    for status, ids in by_status.items():
        closed += job_status_transition_many(
            from_status=status,
            to_status="closed",
            job_ids=ids,
            reason=f"event service: ES job {job['pk']} of its job set failed",
            actor=ACTOR,
            now=now,
            columns={"jobSubStatus": ES_ABORTED},
        )
    Event.objects.filter(PandaID__in=closed, status__in=RUNNING_RANGES).update(status="cancelled")
    Event.objects.filter(PandaID__in=closed, status="ready").update(status="fatal")
    return closed


def event_range_id(*, task_id: int, panda_id: int, file_id: int, process_id: int, attempt: int) -> str:
    """JEDI's eventRangeID (task_event_module.makeEventRangeID, 1.0.4)."""
    return f"{task_id}-{panda_id}-{file_id}-{process_id}-{attempt}"


def pilot_event_ranges_get(*, job_id: int, n_ranges: int, now: datetime) -> list[dict]:
    """getEventRanges: up to `n_ranges` ranges for a running ES, co-jumbo or jumbo job, now sent. An ES or co-jumbo
    job gets its own ready ranges; a jumbo job any ready range of its task whose co-jumbo job has not started (seed
    002: a jumbo job "can process any events in the task across all jobsets"), marked as a jumbo job's. Each as the
    pilot reads it (eventRangeID, startEvent, lastEvent, LFN, GUID, scope). Nothing for any other job."""
    job = (
        Job.objects.filter(pk=job_id, jobStatus__in=ENDING_FROM, eventService__in=RANGE_TAKERS)
        .values("pk", "task_id", "eventService")
        .first()
    )
    if job is None or n_ranges <= 0:
        return []
    if job["eventService"] == JUMBO_JOB:
        waiting = Job.objects.filter(task_id=job["task_id"], eventService=CO_JUMBO_JOB, jobStatus__in=NOT_STARTED)
        ranges = Event.objects.filter(task_id=job["task_id"], status="ready", PandaID__in=waiting.values("pk"))
    else:
        ranges = Event.objects.filter(PandaID=job_id, status="ready")
    with transaction.atomic():
        chosen = list(ranges.select_for_update(skip_locked=True).order_by("pk")[:n_ranges].values_list("pk", flat=True))
        Event.objects.filter(pk__in=chosen).update(status="sent", is_jumbo=job["eventService"] == JUMBO_JOB)
    rows = Event.objects.filter(pk__in=chosen).order_by("pk").values(*RANGE_FIELDS)
    return [
        {
            "eventRangeID": event_range_id(
                task_id=row["task_id"],
                panda_id=row["PandaID"],
                file_id=row["file_id"],
                process_id=row["job_processID"],
                attempt=row["attemptNr"],
            ),
            "startEvent": row["def_min_eventID"],
            "lastEvent": row["def_max_eventID"],
            "LFN": row["file__lfn"],
            "GUID": row["file__GUID"],
            "scope": row["file__scope"],
        }
        for row in rows
    ]


def pilot_event_ranges_update(*, updates: list[dict], now: datetime) -> list[bool]:
    """updateEventRanges: each {eventRangeID, eventStatus} a pilot sends; True for each range found sent or running
    and moved to the status reported (running, finished, failed, fatal), False for any other."""
    parsed: list[tuple[tuple[int, ...], str] | None] = []
    for update in updates:
        parts = str(update.get("eventRangeID", "")).split("-")
        status = update.get("eventStatus")
        if len(parts) != 5 or not all(part.isdigit() for part in parts) or status not in PILOT_RANGE_STATUSES:
            parsed.append(None)
        else:
            parsed.append((tuple(int(part) for part in parts), status))
    # the ranges named, found in one read and moved in one UPDATE per status (a range named twice takes the last)
    keys = {key for entry in parsed if entry is not None for key in [entry[0]]}
    found = {
        (task_id, panda_id, file_id, process_id, attempt): pk
        for pk, task_id, panda_id, file_id, process_id, attempt in Event.objects.filter(
            PandaID__in={key[1] for key in keys}, status__in=RUNNING_RANGES
        ).values_list("pk", "task_id", "PandaID", "file_id", "job_processID", "attemptNr")
    }
    last = {key: status for key, status in (entry for entry in parsed if entry is not None) if key in found}
    for status in PILOT_RANGE_STATUSES:
        ids = [found[key] for key, wanted in last.items() if wanted == status]
        Event.objects.filter(pk__in=ids, status__in=RUNNING_RANGES).update(status=status)
    return [entry is not None and entry[0] in found for entry in parsed]
