"""What DDM holds of a task's input, fed into its files (seed 002, "Transition of dataset status" and "of file
status"; panda-server 1.0.4's JEDI ContentsFeeder where the seed is silent).

DDM here is the replicas table: a dataset lists as many files as its largest replica holds, and a file is
available to a task where a replica at the task's nucleus holds it (any disk replica for a task without a nucleus),
the replicas holding a dataset's files in order. So:

- an input dataset DDM reports open and still empty is temporarily unavailable: defined → pending, and its task
  waits (defined → pending, "waiting for its files") until DDM lists files;
- an open dataset of a live task whose DDM listing grew, a pending one DDM now lists, and every input dataset of a
  task resubmitted with new parameters (incexec) needs updating: → toupdate;
- a dataset to update gets the files DDM lists beyond its own (ready where available, missing where not: "the
  file is missing in the cloud/site where corresponding task is assigned") and is ready; a task waiting on it
  resumes, a prepared one runs again;
- a missing file becomes ready once a replica where the task runs holds it; a ready file of an open dataset no
  replica there holds any more is lost, and ready again when one does (lost-file recovery).

Each step is a few queries whatever the number of datasets (bulk moves and inserts).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Q

from brokerage.engine.panda.task_outcome import file_attempt_limits
from brokerage.models import Dataset, DatasetFile, DatasetReplica, Task
from brokerage.services.bulk import bulk_update_values
from brokerage.services.counters import dataset_counters_refresh
from brokerage.services.status import status_transition_many, task_status_transition_many
from brokerage.states import INPUT_TYPES

ACTOR = "contents feeder"
GB = 1024**3
# task statuses whose open input datasets are looked at again for new files (JEDI: running, scouting, ready,
# defined; prepared too here: a task closing on an input that grew goes back to running)
LIVE = ("ready", "scouting", "scouted", "running", "prepared")
OPEN = "open"


def ddm_file_counts(*, names: list[str], nucleus_of: dict[str, str] | None = None) -> dict[str, tuple[int, int]]:
    """Dataset name → (files DDM lists: its largest replica's count, files available: the largest replica's at the
    task's nucleus site, given in `nucleus_of`, else at any disk endpoint). One query."""
    nucleus_of = nucleus_of or {}
    listed: dict[str, int] = defaultdict(int)
    available: dict[str, int] = defaultdict(int)
    for name, files, site, tape in DatasetReplica.objects.filter(datasetName__in=names).values_list(
        "datasetName", "nFiles", "endpoint__site__name", "endpoint__is_tape"
    ):
        listed[name] = max(listed[name], files)
        where = nucleus_of.get(name)
        if not tape and (not where or site == where):
            available[name] = max(available[name], files)
    return {name: (listed[name], available[name]) for name in names}


def datasets_pending_mark(*, task_ids: list[int], now: datetime) -> list[int]:
    """Of these defined tasks, those with an input dataset DDM reports open and that has no file yet: the dataset
    pending (temporarily unavailable) and the task pending, waiting for its files. Returns the tasks held."""
    empty = list(
        Dataset.objects.filter(
            task_id__in=task_ids, type__in=INPUT_TYPES, status="defined", state=OPEN, nFiles=0
        ).values_list("pk", "task_id", "datasetName")
    )
    counts = ddm_file_counts(names=[name for _, _, name in empty])
    waiting = [(pk, task_id, name) for pk, task_id, name in empty if counts[name][0] == 0]
    if not waiting:
        return []
    status_transition_many(
        model=Dataset,
        ids=[pk for pk, _, _ in waiting],
        from_status="defined",
        to_status="pending",
        reason="open in DDM, no file yet",
        actor=ACTOR,
        now=now,
    )
    reasons = {task_id: f"input dataset {name} is open and still empty: waiting for its files"[:255]
               for _, task_id, name in waiting}  # fmt: skip
    return task_status_transition_many(
        from_status="defined",
        moves={task_id: ("pending", reason) for task_id, reason in reasons.items()},
        actor=ACTOR,
        now=now,
        extra={task_id: {"errorDialog": reason} for task_id, reason in reasons.items()},
    )


def datasets_contents_feed(*, now: datetime) -> dict[str, list[int]]:
    """The feeder's round (module docstring): datasets to update marked, fed and ready, their tasks resumed, and
    missing files made ready where they became available. Returns what moved, by kind."""
    moved: dict[str, list[int]] = {}
    # pending datasets DDM now lists, and open datasets of live tasks whose listing grew
    candidates = list(
        Dataset.objects.filter(type__in=INPUT_TYPES)
        .filter(Q(status="pending") | Q(state=OPEN, status__in=("ready", "done"), task__status__in=LIVE))
        .values_list("pk", "status", "datasetName", "nFiles")
    )
    counts = ddm_file_counts(names=[name for _, _, name, _ in candidates])
    grown: dict[str, list[int]] = defaultdict(list)
    for pk, status, name, files in candidates:
        if counts[name][0] > files:
            grown[status].append(pk)
    for status, ids in grown.items():
        moved.setdefault("toupdate", []).extend(
            status_transition_many(
                model=Dataset,
                ids=ids,
                from_status=status,
                to_status="toupdate",
                reason="DDM lists new files",
                actor=ACTOR,
                now=now,
            )
        )
    moved["fed"] = _feed(now=now)
    moved.update(files_availability_recheck(now=now))
    return {kind: ids for kind, ids in moved.items() if ids}


def _nucleus_of(rows) -> dict[str, str]:
    """Dataset name → the nucleus of its task, where it has one (production tasks after task brokerage)."""
    return {name: nucleus for name, nucleus in rows if nucleus}


def _feed(*, now: datetime) -> list[int]:
    """Every dataset to update: the files DDM lists beyond its own added (ready where available, missing where
    not), its counts updated, ready; the tasks it held resumed. Returns the datasets fed."""
    rows = list(
        Dataset.objects.filter(type__in=INPUT_TYPES, status="toupdate").values_list(
            "pk", "task_id", "datasetName", "nFiles", "nEvents", "task__nucleus", "task__taskParams"
        )
    )
    if not rows:
        return []
    counts = ddm_file_counts(names=[row[2] for row in rows], nucleus_of=_nucleus_of((row[2], row[5]) for row in rows))
    new_files = []
    updates = []
    for pk, task_id, name, files, events, _, params in rows:
        listed, available = counts[name]
        max_attempt, max_failure = file_attempt_limits(params or {})
        per_file = (events or 0) // files if files and events else 1000
        for number in range(files, listed):
            new_files.append(
                DatasetFile(
                    dataset_id=pk,
                    task_id=task_id,
                    type="input",
                    status="ready" if number < available else "missing",
                    lfn=f"{name}._{number:06d}.pool.root.1",
                    fsize=GB,
                    nEvents=per_file,
                    maxAttempt=max_attempt,
                    maxFailure=max_failure,
                )
            )
        if listed > files:
            updates.append((pk, listed, (events or 0) + per_file * (listed - files)))
    DatasetFile.objects.bulk_create(new_files, batch_size=1000)
    bulk_update_values(Dataset, fields=("nFiles", "nEvents", "modificationTime"), rows=[(*row, now) for row in updates])
    fed = status_transition_many(
        model=Dataset,
        ids=[row[0] for row in rows],
        from_status="toupdate",
        to_status="ready",
        reason="files fed from DDM",
        actor=ACTOR,
        now=now,
    )
    tasks = {row[1] for row in rows if row[0] in set(fed)}
    # a task waiting for its input resumes where it was; a task closing goes back to running on its new files
    waiting = dict(Task.objects.filter(pk__in=tasks, status="pending").values_list("pk", "oldStatus"))
    task_status_transition_many(
        from_status="pending",
        moves={pk: (old or "defined", "its input dataset has files") for pk, old in waiting.items()
               if old in ("defined", "ready", "running")},
        actor=ACTOR,
        now=now,
        extra={pk: {"errorDialog": ""} for pk in waiting},
    )  # fmt: skip
    task_status_transition_many(
        from_status="prepared",
        moves={pk: ("running", "new input files") for pk in tasks},
        actor=ACTOR,
        now=now,
    )
    return fed


def files_availability_recheck(*, now: datetime) -> dict[str, list[int]]:
    """Input files against the replicas where their task runs, in each dataset's file order: missing ones a replica
    now holds are ready, lost ones too (lost-file recovery), and ready ones of an open dataset no replica there holds
    any more are lost ("available in the previous lookup but is now unavailable"). Looked at: the datasets with
    missing or lost files and the open ones of live tasks; three queries and a move per kind."""
    rows = list(
        Dataset.objects.filter(type__in=INPUT_TYPES)
        .filter(
            Q(pk__in=DatasetFile.objects.filter(status__in=("missing", "lost")).values("dataset_id"))
            | Q(state=OPEN, status="ready", task__status__in=LIVE)
        )
        .values_list("pk", "datasetName", "task__nucleus")
    )
    if not rows:
        return {}
    counts = ddm_file_counts(names=[name for _, name, _ in rows], nucleus_of=_nucleus_of((n, c) for _, n, c in rows))
    # every file of these datasets in one query, each dataset's in file order
    files_of: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for dataset_id, pk, status in (
        DatasetFile.objects.filter(dataset_id__in=[row[0] for row in rows])
        .order_by("dataset_id", "pk")
        .values_list("dataset_id", "pk", "status")
    ):
        files_of[dataset_id].append((pk, status))
    moves: dict[tuple[str, str], list[int]] = defaultdict(list)
    moved_ids: set[int] = set()
    for dataset_id, name, _ in rows:
        available = counts[name][1]
        for number, (pk, status) in enumerate(files_of[dataset_id]):
            if number < available and status in ("missing", "lost"):
                moves[(status, "ready")].append(pk)
                moved_ids.add(pk)
            elif number >= available and status == "ready":
                moves[("ready", "lost")].append(pk)
                moved_ids.add(pk)
    moved: dict[str, list[int]] = {}
    # a lost file counts as failed in its dataset's counters (selectors.counters): they follow the moves
    touched = {dataset_id for dataset_id, _, _ in rows if any(pk in moved_ids for pk, _ in files_of[dataset_id])}
    for (source, target), ids in moves.items():
        moved[f"{source} → {target}"] = status_transition_many(
            model=DatasetFile,
            ids=ids,
            from_status=source,
            to_status=target,
            reason="at a replica where its task runs" if target == "ready" else "no replica where its task runs",
            actor=ACTOR,
            now=now,
        )
    if touched:
        dataset_counters_refresh(dataset_ids=touched, now=now)
    return {kind: ids for kind, ids in moved.items() if ids}
