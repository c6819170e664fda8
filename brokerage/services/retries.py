"""What happens to a job's inputs when it ends (seed 002, "Job rebrokerage", "Memory increase in job retry").

Finished jobs finish their files (a pre-merged job once its outputs are merged: services.merging). Failed or
closed jobs (and pre-merged jobs cancelled when their merge failed) give their files back for another attempt: the
file's attemptNr goes up, and the file is ready again until attemptNr reaches maxAttempt or, counting failed jobs
only, failedAttempt reaches maxFailure; then it is failed. The next job generation picks the file up and records
the retry (JobRetryHistory) — random-seed files of pseudo inputs come back the same way, so a retried job reuses
its seeds. A job that ran out of memory raises the memory of its files' next job to the next step of 1000, 2000,
3000, 4000, 6000, 8000 above max(maxPSS, ramCount); when 30 % of a task's ended jobs failed that way, the task's
ramCount goes up too.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Count, Exists, F, Max, OuterRef, Q

from brokerage.event_service import ES_MERGE_FAILED
from brokerage.models import DatasetFile, Event, Job, JobRetryHistory, Task
from brokerage.services.bulk import bulk_update_values, rows_lock
from brokerage.services.counters import dataset_counters_refresh, datasets_of_files
from brokerage.services.merging import merge_jobs_after_end
from brokerage.states import ES_JOB, EVENTS_PROCESSED
from brokerage.watchdog import next_ram_count, task_needs_more_memory

# Pilot error codes of jobs killed for memory (PanDA pilot: payload out of memory, memory limit exceeded).
OUT_OF_MEMORY_CODES = (1212, 1235)


def _per_core(unit: str, megabytes: float, cores: int) -> float:
    return megabytes / max(cores, 1) if unit.endswith("PerCore") else megabytes


def job_tasks_lock(*, job_ids: list[int]) -> set[int]:
    """Locks the tasks of these jobs, in the one lock order, before a transaction that ends the jobs touches their
    files, datasets and tasks: tasks come before their children in every transaction (services.bulk). Without it
    the simulator held a job's files and datasets and then asked for its task (the memory raise) while job
    generation held the task and asked for the files: two deadlocks in an hour.

    Tasks another transaction holds are skipped, not waited for (issue 31: one task held FOR UPDATE must stop only
    itself; waiting made every job end on the grid wait with it). Returns the jobs whose tasks are now locked: the
    caller ends only those, the others at its next run."""
    pairs = list(Job.objects.filter(pk__in=job_ids).values_list("pk", "task_id"))
    locked = set(rows_lock(Task, {task_id for _, task_id in pairs}, skip_locked=True))
    return {pk for pk, task_id in pairs if task_id in locked}


def job_inputs_after_end(*, finished: list[int], failed: list[int], closed: list[int] = (), now: datetime) -> None:
    """Updates the files and events of jobs that just ended (module docstring), and of the pre-merged jobs a merge
    job among them finished or cancelled (services.merging). Bulk statements only."""
    merged, unmerged = merge_jobs_after_end(finished=finished, failed=[*failed, *closed], now=now)
    # ES jobs whose ES merge job just failed its last attempt: their files' done ranges will never be merged
    es_unmerged = list(
        Job.objects.filter(mergeJob_id__in=[*failed, *closed], jobSubStatus=ES_MERGE_FAILED).values_list(
            "pk", flat=True
        )
    )
    finished, closed = [*finished, *merged], [*closed, *unmerged]
    ended_badly = [*failed, *closed]
    touched = datasets_of_files(file_filter=Q(PandaID__in=[*finished, *ended_badly]))
    touched |= datasets_of_files(file_filter=Q(events__PandaID__in=[*finished, *ended_badly]))
    whole = DatasetFile.objects.filter(type__in=("input", "pseudo_input")).filter(
        Q(nEvents__isnull=True)
        | ~Q(pk__in=Event.objects.filter(PandaID__in=[*finished, *ended_badly]).values("file_id"))
    )
    whole.filter(PandaID__in=finished, status__in=("picked", "running")).update(
        status="finished", attemptNr=F("attemptNr") + 1, lastAttemptTime=now
    )
    for ids, failure in ((failed, 1), (closed, 0)):
        retry = whole.filter(PandaID__in=ids, status__in=("picked", "running"))
        # the last attempt (task_outcome.file_attempts_used_up): maxAttempt reached, or maxFailure by a failure
        used_up = Q(maxAttempt__isnull=False, attemptNr__gte=F("maxAttempt") - 1) | Q(
            maxFailure__isnull=False, failedAttempt__gte=F("maxFailure") - failure
        )
        retry.filter(used_up).update(
            status="failed",
            attemptNr=F("attemptNr") + 1,
            failedAttempt=F("failedAttempt") + failure,
            lastAttemptTime=now,
        )
        retry.exclude(used_up).update(
            status="ready",
            attemptNr=F("attemptNr") + 1,
            failedAttempt=F("failedAttempt") + failure,
            lastAttemptTime=now,
        )
    Event.objects.filter(PandaID__in=finished, status="running").update(status="finished")
    Event.objects.filter(PandaID__in=ended_badly, status__in=("sent", "running")).update(status="failed")
    event_files_close([*finished, *ended_badly, *es_unmerged], now=now, merge_failed=es_unmerged)
    dataset_counters_refresh(dataset_ids=touched, now=now)
    _memory_after_failures(failed, now=now)


def event_files_close(
    job_ids: list[int], *, now: datetime, cancelled_ends: bool = False, merge_failed: list[int] = ()
) -> None:
    """An event-level file ends once every event of it is given out and none of its ranges is still open; a running
    one none of whose ranges runs any more, some finished, is partial (seed 002: "split at event-level and some of
    event chunks were successfully finished") until its next range runs. `cancelled_ends`: a cancelled range is a
    failed one (an ES job set given up: services.event_service), not one to cut again (a fake co-jumbo job given
    back: services.jumbo)."""
    bad_statuses = ("failed", "fatal", "cancelled") if cancelled_ends else ("failed", "fatal")
    # a range cut again (discarded or cancelled by a kill, corrupted) is neither open nor processed: its events have
    # new rows
    superseded = ("discarded", "corrupted") if cancelled_ends else ("cancelled", "discarded", "corrupted")
    files = list(
        DatasetFile.objects.filter(events__PandaID__in=job_ids, status__in=("picked", "running", "partial"))
        .values("pk", "nEvents", "task_id")
        .distinct()
    )
    size = {row["pk"]: row["nEvents"] or 0 for row in files}
    # a file of an event service task (its ranges merged by ES merge jobs) is processed once they are merged: a done
    # range is still open (a kill in merging discards it, and the file goes back: task_commands._cancel); one whose
    # merge failed for good is failed (`merge_failed`: those jobs)
    merged_only = set(
        Task.objects.filter(pk__in={row["task_id"] for row in files}, eventService=ES_JOB).values_list("pk", flat=True)
    )
    unmerged = set(
        Event.objects.filter(PandaID__in=merge_failed, status="done").values_list("file_id", flat=True).distinct()
    )
    ranges = (
        Event.objects.filter(file_id__in=list(size))
        .values("file_id", "task_id")
        .annotate(
            last=Max("def_max_eventID", filter=~Q(status__in=superseded)),  # how far its live ranges reach
            open=Count("pk", filter=~Q(status__in=(*EVENTS_PROCESSED, *bad_statuses, *superseded))),
            bad=Count("pk", filter=Q(status__in=bad_statuses)),
            good=Count("pk", filter=Q(status__in=EVENTS_PROCESSED)),
            unmerged=Count("pk", filter=Q(status__in=("finished", "done"))),
            running=Count("pk", filter=Q(status__in=("sent", "running"))),
        )
    )
    done: dict[str, list[int]] = {"finished": [], "failed": []}
    partial = []
    for row in ranges:
        if row["task_id"] in merged_only:
            if row["file_id"] in unmerged:
                done["failed"].append(row["file_id"])
                continue
            row["open"] += row["unmerged"]
            row["good"] -= row["unmerged"]
        if row["open"] == 0 and row["last"] is not None and row["last"] + 1 >= size[row["file_id"]]:
            done["failed" if row["bad"] else "finished"].append(row["file_id"])
        elif row["good"] and not row["running"]:
            partial.append(row["file_id"])
    DatasetFile.objects.filter(pk__in=partial, status="running").update(status="partial", lastAttemptTime=now)
    for status, ids in done.items():
        DatasetFile.objects.filter(pk__in=ids).update(status=status, lastAttemptTime=now)


def _memory_after_failures(failed: list[int], *, now: datetime) -> None:
    out_of_memory = list(
        Job.objects.filter(pk__in=failed, pilotErrorCode__in=OUT_OF_MEMORY_CODES).values(
            "pk", "task_id", "maxPSS", "coreCount", "minRamCount", "task__ramUnit", "task__ramCount"
        )
    )
    if not out_of_memory:
        return
    files = DatasetFile.objects.filter(PandaID__in=[job["pk"] for job in out_of_memory]).values_list(
        "pk", "PandaID", "ramCount"
    )
    by_job = {job["pk"]: job for job in out_of_memory}
    updates = []
    for file_id, job_id, current in files:
        job = by_job[job_id]
        unit = job["task__ramUnit"] or ""
        pss = _per_core(unit, (job["maxPSS"] or 0) / 1024, job["coreCount"])
        updates.append((file_id, next_ram_count(max_pss_mb=pss, ram_count=max(current or 0, job["minRamCount"] or 0))))
    bulk_update_values(DatasetFile, fields=("ramCount",), rows=updates)
    # the whole task when 30 % of its ended jobs failed for memory
    task_ids = {job["task_id"] for job in out_of_memory}
    counts = (
        Job.objects.filter(task_id__in=task_ids, jobStatus__in=("finished", "failed"))
        .values("task_id")
        .annotate(ended=Count("pk"), memory=Count("pk", filter=Q(pilotErrorCode__in=OUT_OF_MEMORY_CODES)))
    )
    worst: dict[int, float] = defaultdict(float)
    for job in out_of_memory:
        unit = job["task__ramUnit"] or ""
        worst[job["task_id"]] = max(
            worst[job["task_id"]], _per_core(unit, (job["maxPSS"] or 0) / 1024, job["coreCount"])
        )
    current = {job["task_id"]: job["task__ramCount"] for job in out_of_memory}
    raised = [
        (row["task_id"], next_ram_count(max_pss_mb=worst[row["task_id"]], ram_count=current[row["task_id"]]))
        for row in counts
        if task_needs_more_memory(failed_for_memory=row["memory"], jobs=row["ended"])
    ]
    bulk_update_values(Task, fields=("ramCount",), rows=raised)


def job_retry_history_record(*, pairs: list[tuple[int, int, int]], now: datetime) -> None:
    """(task, old PandaID, new PandaID) of jobs that took over the files of ended jobs: JobRetryHistory rows,
    each with the first job of its chain as origin (one query, one insert)."""
    if not pairs:
        return
    origins = dict(
        JobRetryHistory.objects.filter(newPandaID__in=[old for _, old, _ in pairs]).values_list(
            "newPandaID", "originPandaID"
        )
    )
    JobRetryHistory.objects.bulk_create(
        (
            JobRetryHistory(
                task_id=task_id,
                oldPandaID=old,
                newPandaID=new,
                relationType="retry",
                originPandaID=origins.get(old) or old,
                created=now,
            )
            for task_id, old, new in sorted(set(pairs))
        ),
        ignore_conflicts=True,
    )


def event_files_give_back(*, job_ids: list[int], now: datetime) -> None:
    """The event-level files of jobs whose unprocessed ranges were cancelled (a fake co-jumbo job given back, an event
    service job killed), none of whose ranges is still open: ready again with one attempt more (a NULL maxAttempt
    stays NULL), so job generation cuts the cancelled ranges again."""
    open_ranges = Event.objects.filter(file_id=OuterRef("pk"), status__in=("ready", "sent", "running"))
    ids = set(
        DatasetFile.objects.filter(events__PandaID__in=job_ids, status__in=("picked", "running", "partial"))
        .exclude(Exists(open_ranges))
        .values_list("pk", flat=True)
    )
    DatasetFile.objects.filter(pk__in=ids).update(
        status="ready", attemptNr=F("attemptNr") + 1, maxAttempt=F("maxAttempt") + 1, lastAttemptTime=now
    )
