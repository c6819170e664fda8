"""What JumboWatchDog reads (brokerage.jumbo): the event service tasks in the statuses it watches, with their events,
files and jumbo jobs (getTaskWithJumbo_JEDI, 1.0.4), and the queues that take jumbo jobs (CRIC catchall
useJumboJobs)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.db.models import F, Q, Sum

from brokerage.jumbo import STATUSES_READ, JumboTask
from brokerage.models import Dataset, DatasetFile, Event, Job, PandaQueue, Task
from brokerage.states import EVENTS_PROCESSED, JOB_ACTIVE, JUMBO_JOB, JUMBO_USE_CATCHALL


def jumbo_queues() -> list[str]:
    """The online queues whose CRIC catchall says they take jumbo jobs, by name."""
    return sorted(
        name
        for name, catchall in PandaQueue.objects.filter(status="online", catchall__contains=JUMBO_USE_CATCHALL)
        .values_list("name", "catchall")
        .iterator()
        if JUMBO_USE_CATCHALL in [item.split("=", 1)[0].strip() for item in catchall.split(",")]
    )


def jumbo_task_facts(*, now: datetime) -> list[JumboTask]:
    """Every event service task the watchdog may act on (in STATUSES_READ), as it reads them: the events and files
    of its master input, its events processed, its jumbo jobs active or ended in the last day by status, and for
    the seed's enabling whether a jumbo queue is online and its events are positional. A few queries, whatever
    the number of tasks."""
    tasks = list(
        Task.objects.filter(status__in=STATUSES_READ)
        .filter(Q(eventService__gt=0) | ~Q(useJumbo=""))
        .values("jediTaskID", "status", "useJumbo", "currentPriority", "site", "taskParams")
    )
    if not tasks:
        return []
    ids = [task["jediTaskID"] for task in tasks]
    masters = {
        row["task_id"]: row
        for row in Dataset.objects.filter(task_id__in=ids, type__in=("input", "pseudo_input"), master__isnull=True)
        .values("task_id")
        .annotate(
            events=Sum("nEvents"), files=Sum("nFiles"), finished=Sum("nFilesFinished"), failed=Sum("nFilesFailed")
        )
    }
    # events processed: the ranges of events done, and the events of whole files finished without event rows
    done: dict[int, int] = defaultdict(int)
    for task_id, size in (
        Event.objects.filter(task_id__in=ids, status__in=EVENTS_PROCESSED)
        .values("task_id")
        .annotate(size=Sum(F("def_max_eventID") - F("def_min_eventID") + 1))
        .values_list("task_id", "size")
    ):
        done[task_id] += size or 0
    for task_id, size in (
        DatasetFile.objects.filter(task_id__in=ids, type__in=("input", "pseudo_input"), status="finished")
        .exclude(events__isnull=False)
        .values("task_id")
        .annotate(size=Sum("nEvents"))
        .values_list("task_id", "size")
    ):
        done[task_id] += size or 0
    jumbo_jobs: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for task_id, status in (
        Job.objects.filter(task_id__in=ids, eventService=JUMBO_JOB)
        .filter(Q(endTime__isnull=True) | Q(endTime__gte=now - timedelta(days=1)))
        .values_list("task_id", "jobStatus")
    ):
        jumbo_jobs[task_id][status] += 1
    any_jumbo_queue = bool(jumbo_queues())
    facts = []
    for task in tasks:
        master = masters.get(task["jediTaskID"]) or {}
        params = task["taskParams"] or {}
        facts.append(
            JumboTask(
                jediTaskID=task["jediTaskID"],
                status=task["status"],
                useJumbo=task["useJumbo"],
                currentPriority=task["currentPriority"],
                site=task["site"],
                nEvents=int(master.get("events") or 0),
                nEventsDone=done[task["jediTaskID"]],
                nFiles=int(master.get("files") or 0),
                nFilesDone=int(master.get("finished") or 0) + int(master.get("failed") or 0),
                jumbo_jobs=dict(jumbo_jobs[task["jediTaskID"]]),
                at_jumbo_queue=any_jumbo_queue,
                positional_events=positional_events(params),
            )
        )
    return facts


def positional_events(params: dict) -> bool:
    """Seed 002: jumbo jobs need in-file positional event numbers, "taskParam.inFilePosEvtNum=True, nFilesPerJob=1,
    or nEventsPerJob<nEventsPerInputFile"."""
    per_job, per_file = params.get("nEventsPerJob"), params.get("nEventsPerInputFile")
    return (
        params.get("inFilePosEvtNum") is True
        or params.get("nFilesPerJob") == 1
        or (isinstance(per_job, int) and isinstance(per_file, int) and per_job < per_file)
    )


def jumbo_jobs_active(*, task_ids: list[int]) -> dict[int, dict[str, int]]:
    """Each task's active jumbo jobs per queue, as job generation counts them (getActiveJumboJobs_JEDI, 1.0.4: those
    in transferring or holding no longer count)."""
    active: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for task_id, site in (
        Job.objects.filter(task_id__in=task_ids, eventService=JUMBO_JOB, jobStatus__in=JOB_ACTIVE)
        .exclude(jobStatus__in=("transferring", "holding"))
        .values_list("task_id", "computingSite")
    ):
        active[task_id][site] += 1
    return {task_id: dict(sites) for task_id, sites in active.items()}
