"""The end of scouting (seed 002): tasks whose scouts are done get their parameters from the first five finished
scouts and move on — scouted, or exhausted when the scouts show the task cannot run as defined, or broken when
no scout succeeded.

- Parameters: `brokerage.watchdog.scout_task_parameters` (ramCount with the MBPerCore rule, ioIntensity,
  diskIO, cpuTime by the HS06sPerEvent formula, outDiskCount, walltime); a scout's corePower is its queue's.
- Exhausted: production tasks whose scouts' cpuTime is more than twice the defined cpuTime; analysis tasks with
  more than 5 scouts shorter than 4 minutes and more than 1000 jobs expected.
- Broken: every scout ended and none finished ("No scout jobs succeeded").
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime

from django.db.models import Count, Q

from brokerage.models import DatasetFile, Job, PandaQueue, Task
from brokerage.services.bulk import bulk_update_values
from brokerage.services.status import task_status_transition_many
from brokerage.states import JOB_ACTIVE
from brokerage.watchdog import (
    SCOUTS_FOR_PARAMETERS,
    SHORT_SCOUT_SECONDS,
    ScoutJob,
    exhausted_reason,
    scout_task_parameters,
)

ACTOR = "job generator"
PARAMETER_FIELDS = (
    "ramCount",
    "ramUnit",
    "ioIntensity",
    "diskIO",
    "cpuTime",
    "cpuTimeUnit",
    "outDiskCount",
    "walltime",
)
SCOUT_FIELDS = (
    "task_id",
    "maxPSS",
    "coreCount",
    "startTime",
    "endTime",
    "nEvents",
    "inputFileBytes",
    "outputFileBytes",
    "computingSite",
)


def task_scouting_check(*, work_queue_id: int | None, now: datetime) -> dict[str, list[int]]:
    """Ends the scouting of the tasks whose scouts are done (module docstring); returns the tasks per outcome."""
    scouting = Task.objects.filter(status="scouting")
    if work_queue_id is not None:
        scouting = scouting.filter(workQueue_id=work_queue_id)
    counts = (
        Job.objects.filter(task__in=scouting, isScout=True)
        .values("task_id")
        .annotate(
            finished=Count("pk", filter=Q(jobStatus="finished")),
            active=Count("pk", filter=Q(jobStatus__in=JOB_ACTIVE)),
        )
    )
    done = {row["task_id"]: row for row in counts if row["finished"] >= SCOUTS_FOR_PARAMETERS or row["active"] == 0}
    if not done:
        return {}
    tasks = {
        row["jediTaskID"]: row
        for row in Task.objects.filter(pk__in=list(done)).values(
            "jediTaskID",
            "prodSourceLabel",
            "baseRamCount",
            "cpuEfficiency",
            "baseWalltime",
            "taskParams",
            *PARAMETER_FIELDS,
        )
    }
    scouts, short = _finished_scouts(list(done))
    files_left = dict(
        DatasetFile.objects.filter(task_id__in=list(done), status="ready", dataset__master__isnull=True)
        .values("task_id")
        .annotate(n=Count("pk"))
        .values_list("task_id", "n")
    )
    moves: dict[int, tuple[str, str]] = {}
    updates: list[tuple] = []
    for task_id, row in done.items():
        task = tasks[task_id]
        if row["finished"] == 0:
            moves[task_id] = ("tobroken", "no scout job succeeded")
            continue
        analysis = task["prodSourceLabel"] in ("user", "panda")
        found = scouts.get(task_id, [])
        params = None
        if len(found) >= SCOUTS_FOR_PARAMETERS:
            params = scout_task_parameters(
                found,
                ram_unit=task["ramUnit"] or "",
                base_ram_count=task["baseRamCount"],
                cpu_efficiency=task["cpuEfficiency"],
                base_walltime=task["baseWalltime"],
            )
            # a figure the scouts did not report keeps the task's value
            updates.append((task_id, *(task[f] if params[f] is None else params[f] for f in PARAMETER_FIELDS)))
        files_per_job = int((task["taskParams"] or {}).get("nFilesPerJob") or 1)
        why = exhausted_reason(
            analysis=analysis,
            scout_cpu_time=params["cpuTime"] if params else None,
            defined_cpu_time=task["cpuTime"],
            short_scouts=short.get(task_id, 0),
            expected_jobs=math.ceil(files_left.get(task_id, 0) / files_per_job),
        )
        if why:
            moves[task_id] = ("exhausted", why)
        else:
            moves[task_id] = ("scouted", "scout jobs done" + (": task parameters set from 5 scouts" if params else ""))
    bulk_update_values(Task, fields=PARAMETER_FIELDS, rows=updates)
    moved = task_status_transition_many(
        from_status="scouting",
        moves=moves,
        extra={
            task_id: {"errorDialog": reason[:255]} for task_id, (status, reason) in moves.items() if status != "scouted"
        },
        actor=ACTOR,
        now=now,
    )
    broken = [task_id for task_id in moved if moves[task_id][0] == "tobroken"]
    if broken:
        task_status_transition_many(
            from_status="tobroken",
            moves={pk: ("broken", "no scout job succeeded") for pk in broken},
            actor=ACTOR,
            now=now,
        )
    outcome: dict[str, list[int]] = defaultdict(list)
    for task_id in moved:
        outcome["broken" if moves[task_id][0] == "tobroken" else moves[task_id][0]].append(task_id)
    return dict(outcome)


def _finished_scouts(task_ids: list[int]) -> tuple[dict[int, list[ScoutJob]], dict[int, int]]:
    """The first SCOUTS_FOR_PARAMETERS finished scouts of each task by end time, and how many of all its
    finished scouts ran less than 4 minutes (two queries)."""
    power = dict(PandaQueue.objects.values_list("name", "corepower"))
    found: dict[int, list[ScoutJob]] = defaultdict(list)
    short: dict[int, int] = defaultdict(int)
    for row in (
        Job.objects.filter(task_id__in=task_ids, isScout=True, jobStatus="finished", startTime__isnull=False)
        .exclude(endTime__isnull=True)
        .order_by("task_id", "endTime", "pk")
        .values(*SCOUT_FIELDS)
    ):
        if (row["endTime"] - row["startTime"]).total_seconds() < SHORT_SCOUT_SECONDS:
            short[row["task_id"]] += 1
        if len(found[row["task_id"]]) < SCOUTS_FOR_PARAMETERS:
            found[row["task_id"]].append(
                ScoutJob(
                    maxPSS_kB=row["maxPSS"] or 0,
                    coreCount=row["coreCount"] or 1,
                    startTime=row["startTime"],
                    endTime=row["endTime"],
                    nEvents=row["nEvents"] or 0,
                    inputBytes=row["inputFileBytes"] or 0,
                    outputBytes=row["outputFileBytes"] or 0,
                    corePower=power.get(row["computingSite"]) or 10.0,
                )
            )
    return found, short
