"""A task's life around brokerage (seed 002, "Workflow for tasks with input datasets"): refining new tasks into
the brokerage queues, and closing them once every input file has an outcome.

Refining (JEDI's TaskRefiner): a registered task gets its work queue and is defined; a defined production task
without a nucleus goes to task brokerage (assigning), one with a nucleus (or an analysis task, which needs
none) is ready for job generation; its input datasets become ready. A task with an input dataset DDM does not
know (its DDM state "unknown") is broken instead, the dataset too (seed 002, "Broken tasks":
"Input datasets are unknown"; input dataset broken: "permanently unavailable").

Completion (JEDI's post-processing): when no master input file of a running task is waiting or in use any
more, the task goes to prepared and then done (every file finished), finished (some finished) or failed (none),
or exhausted, as its goal says (brokerage.engine.panda.task_outcome); its master dataset to done; its progress
and failure rate in percent follow its files all along, and its termination condition, once met, finishes it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Count, F, Q, Sum

from brokerage import jumbo
from brokerage.engine.panda.task_outcome import (
    TaskInputCounts,
    TaskOutcome,
    task_failure_rate,
    task_goal,
    task_outcome,
    termination_reached,
)
from brokerage.models import Dataset, DatasetFile, Job, Task
from brokerage.services.bulk import bulk_update_values
from brokerage.services.contents import datasets_contents_feed, datasets_pending_mark
from brokerage.services.counters import dataset_counters_refresh
from brokerage.services.merging import merges_pending
from brokerage.services.outputs import output_datasets_follow, outputs_pending, outputs_register
from brokerage.services.shares import task_work_queue_assign
from brokerage.services.status import status_transition_many, task_status_transition_many
from brokerage.states import JOB_ACTIVE, PREPROCESS_HANDLING

JOB_ENDED_STATUSES = ("finished", "failed", "closed", "cancelled")

ACTOR = "task refiner"
OPEN_FILE_STATUSES = ("ready", "picked", "running", "partial", "missing")
# seed 002 "Memory probe and brokerage": the shared memory (MB) of a job by the task's processingType
BASE_RAM_COUNT_MB = {"simul": 1000, "pile": 1500, "reco": 1000}
# Statuses whose tasks are closed when their inputs are all processed.
CLOSABLE = ("running", "scouted")


def task_refine(*, now: datetime, limit: int = 1000) -> dict[str, list[int]]:
    """registered → defined (with a work queue), defined → assigning, ready or topreprocess (a preprocess job
    first); preprocessed tasks defined again; input datasets → ready."""
    registered = list(Task.objects.filter(status="registered").order_by("pk").values_list("pk", flat=True)[:limit])
    moved: dict[str, list[int]] = tasks_preprocessed(now=now)
    moved.update(tasks_incexec_apply(now=now))
    moved.update(datasets_contents_feed(now=now))
    moved.update(tasks_rerefined(now=now))
    if registered:
        task_work_queue_assign(task_ids=registered)
        # seed 002 "Memory probe and brokerage": the baseramcount "is fixed per processingtype"; a task that names
        # its own keeps it
        for processing_type, base in BASE_RAM_COUNT_MB.items():
            Task.objects.filter(pk__in=registered, processingType=processing_type, baseRamCount__isnull=True).update(
                baseRamCount=base
            )
        tasks_goal_refine(task_ids=registered)
        outputs_register(task_ids=registered, now=now)
        # TaskRefinerBase (1.0.4): a task asking for jumbo jobs (nJumboJobs) starts with useJumbo W, unless it sets
        # its site ("This machinery is disabled if the task sets the site parameter", seed 002)
        Task.objects.filter(pk__in=registered, taskParams__has_key="nJumboJobs", site="").exclude(
            taskParams__nJumboJobs=0
        ).update(useJumbo=jumbo.WAITING)
        moved["defined"] = task_status_transition_many(
            from_status="registered",
            moves={pk: ("defined", "task parameters refined") for pk in registered},
            actor=ACTOR,
            now=now,
        )
    defined = list(
        Task.objects.filter(status="defined").order_by("pk").values_list("pk", "prodSourceLabel", "nucleus")[:limit]
    )
    unknown = datasets_unknown(task_ids=[pk for pk, *_ in defined])
    if unknown:
        moved["broken"] = tasks_break_on_unknown_inputs(unknown=unknown, now=now)
        defined = [row for row in defined if row[0] not in unknown]
    waiting = datasets_pending_mark(task_ids=[pk for pk, *_ in defined], now=now)
    if waiting:
        moved["pending"] = waiting
        defined = [row for row in defined if row[0] not in set(waiting)]
    moves = {}
    preprocess = task_preprocess_wanted(task_ids=[pk for pk, *_ in defined])
    for pk, label, nucleus in defined:
        if label in ("user", "panda") or nucleus:
            if pk in preprocess:
                moves[pk] = ("topreprocess", "a preprocess job first (preproSpec)")
            else:
                moves[pk] = ("ready", "no task brokerage needed" if not nucleus else f"nucleus {nucleus} preset")
        else:
            moves[pk] = ("assigning", "waiting for task brokerage")
    if moves:
        moved["assigning"] = task_status_transition_many(from_status="defined", moves=moves, actor=ACTOR, now=now)
        status_transition_many(
            model=Dataset,
            ids=Dataset.objects.filter(
                task_id__in=list(moves), status="defined", type__in=("input", "pseudo_input")
            ).values_list("pk", flat=True),
            from_status="defined",
            to_status="ready",
            reason="task refined",
            actor=ACTOR,
            now=now,
        )
    return moved


def tasks_goal_refine(*, task_ids: list[int]) -> None:
    """The goal and termination condition a new task's parameters ask for go to their columns (TaskRefinerBase
    1.0.4: goal in percent kept ×10, none above 100 %); a column already set is kept. One query, one update."""
    asking = Task.objects.filter(
        Q(taskParams__has_key="goal") | Q(taskParams__has_key="termCondition"), pk__in=task_ids
    ).values_list("pk", "taskParams", "goal", "termCondition")
    rows = [
        (
            pk,
            goal if goal is not None else task_goal(params.get("goal")),
            condition or str(params.get("termCondition") or "")[:100],
        )
        for pk, params, goal, condition in asking
    ]
    bulk_update_values(Task, fields=("goal", "termCondition"), rows=rows)


# The split rule a preprocessed task keeps (JEDI's splitRule token usePrePro: 1 to preprocess, 2 preprocessed)
PREPROCESSED = "preprocessed"


def task_preprocess_wanted(*, task_ids: list[int]) -> set[int]:
    """The tasks that run a preprocess job before their own (seed 002 topreprocess: "preprocess job is ready for the
    task"): those whose parameters carry JEDI's preproSpec and that were not preprocessed yet (one query)."""
    return {
        pk
        for pk, params in Task.objects.filter(pk__in=task_ids, taskParams__has_key="preproSpec").values_list(
            "pk", "taskParams"
        )
        if not (params or {}).get(PREPROCESSED)
    }


def tasks_preprocessed(*, now: datetime) -> dict[str, list[int]]:
    """Preprocessing tasks whose preprocess job ended: finished → the task is defined again, marked preprocessed, and
    refined into its own jobs (JEDI: "registered", with splitRule usePrePro=2); failed, closed or cancelled → broken,
    as nothing of the task can run without it (JEDI ends it through prepared). Two queries, one move each way."""
    ended = dict(
        Job.objects.filter(
            task__status="preprocessing", specialHandling=PREPROCESS_HANDLING, jobStatus__in=JOB_ENDED_STATUSES
        ).values_list("task_id", "jobStatus")
    )
    good = [pk for pk, status in ended.items() if status == "finished"]
    for pk, params in Task.objects.filter(pk__in=good).values_list("pk", "taskParams"):
        Task.objects.filter(pk=pk).update(taskParams={**(params or {}), PREPROCESSED: True})
    moved = {
        "defined": task_status_transition_many(
            from_status="preprocessing",
            moves={pk: ("defined", "preprocess job finished") for pk in good},
            actor=ACTOR,
            now=now,
        )
    }
    bad = {pk: f"preprocess job {status}" for pk, status in ended.items() if status != "finished"}
    task_status_transition_many(
        from_status="preprocessing",
        moves={pk: ("tobroken", reason) for pk, reason in bad.items()},
        actor=ACTOR,
        now=now,
        extra={pk: {"errorDialog": reason} for pk, reason in bad.items()},
    )
    moved["broken"] = task_status_transition_many(
        from_status="tobroken", moves={pk: ("broken", reason) for pk, reason in bad.items()}, actor=ACTOR, now=now
    )
    return {status: ids for status, ids in moved.items() if ids}


# The parameters a resubmission may change (seed 002, "Task resubmission": "site, cloud, includedSite, excludedSite,
# nFilesPerJob, nGBPerJob, nFiles, nEvents, and ignoreMissingInDS. Other parameters are not changed")
RESUBMIT_PARAMS = (
    "site",
    "cloud",
    "includedSite",
    "excludedSite",
    "nFilesPerJob",
    "nGBPerJob",
    "nFiles",
    "nEvents",
    "ignoreMissingInDS",
)
INCEXEC_PARAMS = "incexecParams"  # the new parameters, kept with the task between the command and the refiner


def tasks_incexec_apply(*, now: datetime) -> dict[str, list[int]]:
    """Tasks resubmitted with new parameters (toincexec): those a resubmission may change applied, the others
    dropped and said; failed input files ready again with new attempts (as a retry); every input dataset to update
    (JEDI's retryTask_JEDI for incexec: "toupdate"); the task → rerefine. A few queries per task (few are)."""
    moved = []
    for pk, params in Task.objects.filter(status="toincexec").values_list("pk", "taskParams"):
        params = dict(params or {})
        asked = params.pop(INCEXEC_PARAMS, {}) or {}
        applied = {key: value for key, value in asked.items() if key in RESUBMIT_PARAMS}
        ignored = sorted(set(asked) - set(applied))
        params.update(applied)
        Task.objects.filter(pk=pk).update(taskParams=params)
        max_attempt = int(params.get("maxAttempt", 3))
        DatasetFile.objects.filter(task_id=pk, status="failed", type__in=("input", "pseudo_input")).update(
            status="ready", maxAttempt=F("attemptNr") + max_attempt, maxFailure=F("maxFailure") + max_attempt
        )
        # the failed files ready again no longer count as failed (the integrity check found the drift)
        dataset_counters_refresh(dataset_ids=Dataset.objects.filter(task_id=pk).values_list("pk", flat=True), now=now)
        for status in ("ready", "done"):
            status_transition_many(
                model=Dataset,
                ids=Dataset.objects.filter(task_id=pk, type__in=("input", "pseudo_input"), status=status).values_list(
                    "pk", flat=True
                ),
                from_status=status,
                to_status="toupdate",
                reason="resubmitted with new parameters",
                actor=ACTOR,
                now=now,
            )
        said = ", ".join(f"{key}={value}" for key, value in sorted(applied.items())) or "no parameter changed"
        if ignored:
            said += "; not changed on resubmission: " + ", ".join(ignored)
        moved += task_status_transition_many(
            from_status="toincexec", moves={pk: ("rerefine", said[:500])}, actor=ACTOR, now=now
        )
    return {"rerefine": moved} if moved else {}


def tasks_rerefined(*, now: datetime) -> dict[str, list[int]]:
    """Tasks rerefined whose input datasets are all fed (none to update): running again when some input finished
    already, ready otherwise (as a retry). One query and a move each way."""
    rows = Task.objects.filter(status="rerefine").exclude(
        pk__in=Dataset.objects.filter(status="toupdate").values("task_id")
    )
    finished = set(
        DatasetFile.objects.filter(task__in=rows, status="finished").values_list("task_id", flat=True).distinct()
    )
    ids = list(rows.values_list("pk", flat=True))
    moved = task_status_transition_many(
        from_status="rerefine",
        moves={pk: ("running" if pk in finished else "ready", "inputs fed again") for pk in ids},
        actor=ACTOR,
        now=now,
    )
    return {"resumed": moved} if moved else {}


# A dataset's DDM state when DDM answered that it has no such dataset (JEDI's contents feeder: "unknown dataset")
DDM_UNKNOWN = "unknown"


def datasets_unknown(*, task_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
    """Task → its input datasets DDM does not know (state DDM_UNKNOWN, still defined); one query. A dataset whose
    DDM state was never checked is not judged."""
    unknown: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for task_id, dataset_id, name in Dataset.objects.filter(
        task_id__in=task_ids, type__in=("input", "pseudo_input"), status="defined", state=DDM_UNKNOWN
    ).values_list("task_id", "pk", "datasetName"):
        unknown[task_id].append((dataset_id, name))
    return dict(unknown)


def tasks_break_on_unknown_inputs(*, unknown: dict[int, list[tuple[int, str]]], now: datetime) -> list[int]:
    """The input datasets DDM does not know → broken, their tasks defined → tobroken → broken with the names in
    the reason; returns the tasks broken."""
    status_transition_many(
        model=Dataset,
        ids=[dataset_id for rows in unknown.values() for dataset_id, _ in rows],
        from_status="defined",
        to_status="broken",
        reason="unknown to DDM",
        actor=ACTOR,
        now=now,
    )
    reasons = {
        task_id: "input dataset " + ", ".join(name for _, name in rows)[:200] + " unknown to DDM"
        for task_id, rows in unknown.items()
    }
    task_status_transition_many(
        from_status="defined",
        moves={task_id: ("tobroken", reason) for task_id, reason in reasons.items()},
        actor=ACTOR,
        now=now,
        extra={task_id: {"errorDialog": reason[:255]} for task_id, reason in reasons.items()},
    )
    return task_status_transition_many(
        from_status="tobroken",
        moves={task_id: ("broken", reason) for task_id, reason in reasons.items()},
        actor=ACTOR,
        now=now,
    )


def task_completion_check(*, now: datetime) -> dict[str, list[int]]:
    """Updates the progress and failure rate of running tasks, finishes those whose termination condition is met,
    and closes those whose master inputs all have an outcome and the finishing tasks (finish command, termination
    condition) once none of their jobs is active. The outcome, its goal and the exhausted stop for a human follow
    brokerage.engine.panda.task_outcome (seed 002, PostProcessorBase 1.0.4). A fixed number of queries, the bulk
    updates and one bulk move per outcome."""
    counts = (
        DatasetFile.objects.filter(
            task__status__in=(*CLOSABLE, "finishing", "passed"),
            dataset__master__isnull=True,
            dataset__type__in=("input", "pseudo_input"),
        )
        .values("task_id", "dataset_id")
        .annotate(
            total=Count("pk"),
            finished=Count("pk", filter=Q(status="finished")),
            failed=Count("pk", filter=Q(status__in=("failed", "lost", "broken"))),
            open=Count("pk", filter=Q(status__in=OPEN_FILE_STATUSES)),
            events=Sum("nEvents"),
            events_finished=Sum("nEvents", filter=Q(status="finished")),
            attempts=Sum("attemptNr"),
            failed_attempts=Sum("failedAttempt"),
        )
    )
    per_task: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    datasets = set()
    for row in counts:
        for key in ("total", "finished", "failed", "open", "events", "events_finished", "attempts", "failed_attempts"):
            per_task[row["task_id"]][key] += row[key] or 0
        datasets.add(row["dataset_id"])
    dataset_counters_refresh(dataset_ids=datasets, now=now)
    inputs = {
        pk: TaskInputCounts(
            files=c["total"],
            finished=c["finished"],
            failed=c["failed"],
            events=c["events"],
            events_finished=c["events_finished"],
            attempts=c["attempts"],
            failed_attempts=c["failed_attempts"],
        )
        for pk, c in per_task.items()
    }
    # progress and failure rate are rewritten every round: a task another transaction holds keeps them until the next
    bulk_update_values(
        Task,
        fields=("progress", "failureRate"),
        rows=[
            (pk, c["finished"] * 100 // c["total"], task_failure_rate(inputs[pk]))
            for pk, c in per_task.items()
            if c["total"]
        ],
        skip_locked=True,
    )
    rows = {
        pk: (status, params or {}, goal, condition)
        for pk, status, params, goal, condition in Task.objects.filter(pk__in=list(per_task)).values_list(
            "pk", "status", "taskParams", "goal", "termCondition"
        )
    }
    tasks = {pk: row[0] for pk, row in rows.items()}
    # seed 002 TERMCONDITION: "to terminate task when 90% of files are successfully processed"
    terminated = {
        pk: ("finishing", f"termination condition {rows[pk][3]} met: {inputs[pk].finished:,} of {inputs[pk].files:,}")
        for pk, c in per_task.items()
        if tasks[pk] in CLOSABLE and c["open"] and termination_reached(rows[pk][3], inputs[pk])
    }
    finishing_now = [
        pk
        for status in CLOSABLE
        for pk in task_status_transition_many(
            from_status=status,
            moves={pk: move for pk, move in terminated.items() if tasks[pk] == status},
            actor=ACTOR,
            now=now,
            skip_locked=True,  # a task busy elsewhere is finished in the next round
        )
    ]
    tasks.update(dict.fromkeys(finishing_now, "finishing"))
    finishing = [pk for pk, status in tasks.items() if status == "finishing"]
    busy = set(Job.objects.filter(task_id__in=finishing, jobStatus__in=JOB_ACTIVE).values_list("task_id", flat=True))
    complete = {
        pk: c
        for pk, c in per_task.items()
        if c["total"] and (tasks[pk] == "passed" or (c["open"] == 0 if tasks[pk] != "finishing" else pk not in busy))
    }
    # a task whose outputs are merged waits for its merges (merging.py), and every task for its outputs: a job's
    # files are finished or failed with it (services.outputs)
    waiting = [pk for pk in complete if tasks[pk] not in ("finishing", "passed")]
    for pk in merges_pending(task_ids=waiting) | outputs_pending(task_ids=waiting):
        del complete[pk]
    if not complete:
        output_datasets_follow(now=now)
        return {"finishing": finishing_now} if finishing_now else {}
    scouted = [pk for pk in complete if tasks[pk] == "scouted"]
    if scouted:  # the scouts used every input: nothing left to generate
        task_status_transition_many(
            from_status="scouted",
            moves={pk: ("running", "scouts used every input file") for pk in scouted},
            actor=ACTOR,
            now=now,
            skip_locked=True,
        )
    for status, sources, reason in (
        ("running", ("running", "scouted"), "every input file processed"),
        ("finishing", ("finishing",), "no job left to finish"),
    ):
        task_status_transition_many(
            from_status=status,
            moves={pk: ("prepared", reason) for pk in complete if tasks[pk] in sources},
            actor=ACTOR,
            now=now,
            skip_locked=True,  # a task busy elsewhere is closed in the next round
        )
    outcomes: dict[str, dict[str, dict[int, tuple[str, str]]]] = defaultdict(lambda: defaultdict(dict))
    for pk in complete:
        status, params = tasks[pk], rows[pk][1]
        outcome = task_outcome(
            inputs[pk],
            goal=rows[pk][2],
            fail_goal_unreached=bool(params.get("failWhenGoalUnreached")),
            # a finish command (or a met termination condition) ends the task whatever it processed
            use_exhausted=bool(params.get("useExhausted")) and status != "finishing",
            passed=status == "passed",
        )
        if status == "finishing" and outcome.status in ("failed", "exhausted"):
            outcome = TaskOutcome("finished", outcome.reason)
        source = "passed" if status == "passed" else "prepared"
        outcomes[source][outcome.status][pk] = (outcome.status, outcome.reason)
    closed: dict[str, list[int]] = defaultdict(list)
    if finishing_now:
        closed["finishing"] = finishing_now
    for source, by_outcome in outcomes.items():
        for outcome, moves in by_outcome.items():
            closed[outcome] += task_status_transition_many(from_status=source, moves=moves, actor=ACTOR, now=now)
    ended = {pk for ids in closed.values() for pk in ids}
    # through the machine, logged: a dataset the contents feeder moved has a log its status must end with
    status_transition_many(
        model=Dataset,
        ids=Dataset.objects.filter(
            task_id__in=[pk for pk in complete if tasks[pk] != "finishing" and pk in ended],
            master__isnull=True,
            type__in=("input", "pseudo_input"),
            status="ready",
        ).values_list("pk", flat=True),
        from_status="ready",
        to_status="done",
        reason="every file processed",
        actor=ACTOR,
        now=now,
    )
    output_datasets_follow(now=now)
    return dict(closed)
