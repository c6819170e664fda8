"""The one way a task, dataset, file, event, job or any other stateful row changes status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from brokerage.metrics import job_moves_count
from brokerage.models import Task, TaskStatusLog
from brokerage.models.base import Stateful
from brokerage.states import IllegalTransition

__all__ = ["IllegalTransition", "status_transition", "status_transition_many", "task_note"]


def task_note(*, task: Task, actor: str, reason: str, now: datetime) -> TaskStatusLog:
    """A task status-log row (unsaved) that moves nothing: what a service did to the task in its status (a priority
    boost, a jumbo-job switch), so the task's timeline says it beside its moves."""
    return TaskStatusLog(
        task=task, timestamp=now, old_status=task.status, new_status=task.status, actor=actor, reason=reason[:500]
    )


def status_transition(
    *, obj: Stateful, new_status: str, reason: str = "", actor: str = "", now: datetime | None = None
) -> Stateful:
    """Moves `obj` to `new_status` if its state machine allows it, and records the move in its status log.

    The current status is re-read under a row lock, so a stale object in memory cannot slip an illegal move
    through; an illegal move raises IllegalTransition (an unknown status UnknownStatus) and changes nothing.
    On success the columns the move implies (oldStatus, stateChangeTime, startTime, endTime…) are updated
    with the status, in the same transaction as the log row, and `obj` is refreshed in memory.
    """
    now = now or timezone.now()
    model = type(obj)
    status_field = obj.STATUS_FIELD
    machine = obj.state_machine
    machine.require_known(new_status)
    with transaction.atomic():
        current = model.objects.select_for_update(no_key=True).values_list(status_field, flat=True).get(pk=obj.pk)
        machine.check(current, new_status, identifier=obj.pk)
        updates = {status_field: new_status, **obj.transition_updates(current, new_status, now)}
        model.objects.filter(pk=obj.pk).update(**updates)
        entry = obj.status_log_entry(current, new_status, reason, actor, now)
        if entry is not None:
            entry.save()
    for field, value in updates.items():
        setattr(obj, field, value)
    return obj


def task_status_transition_many(
    *,
    from_status: str,
    moves: dict[int, tuple[str, str]],
    actor: str = "",
    now: datetime | None = None,
    extra: dict[int, dict] | None = None,
    skip_locked: bool = False,
) -> list[int]:
    """Moves many tasks out of `from_status` at once: task id → (new status, reason), plus optional other
    columns per task. Each move is checked against the task state machine first (IllegalTransition for any
    illegal one, nothing changed); rows no longer in `from_status` (moved by someone else meanwhile) are left
    alone, and so are, with `skip_locked`, rows another transaction holds (a sweep that comes again). The rows
    are locked in ascending jediTaskID, the one lock order (services.bulk). Returns the ids moved. One update per
    distinct target and one bulk insert of log rows."""
    from brokerage.models import Task, TaskStatusLog
    from brokerage.services.bulk import bulk_update_values, rows_lock
    from brokerage.states import TASK

    now = now or timezone.now()
    for task_id, (new_status, _) in moves.items():
        TASK.check(from_status, new_status, identifier=task_id)
    moved: list[int] = []
    with transaction.atomic():
        locked = rows_lock(Task, moves, skip_locked=skip_locked)
        still_there = set(Task.objects.filter(pk__in=locked, status=from_status).values_list("pk", flat=True))
        by_target: dict[str, list[int]] = {}
        for task_id in still_there:
            by_target.setdefault(moves[task_id][0], []).append(task_id)
        for new_status, ids in by_target.items():
            Task.objects.filter(pk__in=ids).update(
                status=new_status, oldStatus=from_status, stateChangeTime=now, modificationTime=now
            )
        groups: dict[tuple[str, ...], list] = {}
        for task_id, columns in (extra or {}).items():
            if task_id in still_there and columns:
                fields = tuple(sorted(columns))
                groups.setdefault(fields, []).append((task_id, *(columns[field] for field in fields)))
        for fields, rows in groups.items():  # one UPDATE … FROM (VALUES …) per set of columns
            bulk_update_values(Task, fields=fields, rows=rows)
        TaskStatusLog.objects.bulk_create(
            TaskStatusLog(
                task_id=task_id,
                timestamp=now,
                old_status=from_status,
                new_status=moves[task_id][0],
                reason=moves[task_id][1],
                actor=actor,
            )
            for task_id in sorted(still_there)
        )
        moved = sorted(still_there)
    return moved


def job_status_transition_many(
    *,
    from_status: str,
    to_status: str,
    job_ids: list[int],
    reason: str = "",
    actor: str = "",
    now: datetime | None = None,
    columns: dict | None = None,
) -> list[int]:
    """Moves many jobs from `from_status` to `to_status` with one reason (the cycles and the grid simulator
    move jobs in groups). Checked against the job state machine first; jobs no longer in `from_status` are left
    alone. startTime/endTime follow the move as in `status_transition`; `columns` are set on every moved job.
    Returns the ids moved. Three statements whatever the number of jobs."""
    from brokerage.models import Job, JobStatusLog
    from brokerage.models.jobs import JOB_ENDED
    from brokerage.services.bulk import rows_insert
    from brokerage.states import JOB

    now = now or timezone.now()
    JOB.check(from_status, to_status, identifier=job_ids[0] if job_ids else None)
    if not job_ids:
        return []
    with transaction.atomic():
        rows = list(
            Job.objects.select_for_update(no_key=True)
            .filter(pk__in=job_ids, jobStatus=from_status)
            .order_by("pk")  # the one lock order (services.bulk)
            .values_list("pk", "computingSite")
        )
        moved = [pk for pk, _ in rows]
        updates: dict[str, Any] = {"jobStatus": to_status, "stateChangeTime": now, "modificationTime": now}
        if to_status == "running":  # the first start counts, in the same statement
            updates["startTime"] = Coalesce(F("startTime"), Value(now, output_field=DateTimeField()))
        updates.update(columns or {})
        if to_status in JOB_ENDED:
            updates["endTime"] = now
        Job.objects.filter(pk__in=moved).update(**updates)
        # a job's output files follow it, in the same transaction (brokerage/outputs.py)
        output_files_follow(job_ids=moved, job_status=to_status)
        site = (columns or {}).get("computingSite")
        rows_insert(
            JobStatusLog,
            fields=("job_id", "timestamp", "old_status", "new_status", "reason", "actor", "computingSite"),
            rows=(
                (pk, now, from_status, to_status, reason[:250], actor, site if site is not None else computing_site)
                for pk, computing_site in rows
            ),
        )
        job_moves_count(status=to_status, n=len(moved))
    return sorted(moved)


def status_transition_many(
    *,
    model: type[Stateful],
    ids: Iterable[int],
    from_status: str,
    to_status: str,
    reason: str = "",
    actor: str = "",
    now: datetime | None = None,
    columns: Mapping[str, Any] | None = None,
) -> list[int]:
    """`status_transition` for many rows of any Stateful model at once: each row checked against its own machine
    (the model's MACHINE_FIELDS pick it: a dataset's type), the rows still in `from_status` locked in primary-key
    order (one lock order for every writer), moved with the columns the model's `transition_updates` names plus
    `columns`, and logged through its `status_log_entry`. An illegal move for any row raises IllegalTransition
    and changes nothing. Rows moved meanwhile by someone else are left alone; returns the ids moved."""
    now = now or timezone.now()
    ids = list(ids)
    machine_fields = model.MACHINE_FIELDS
    if not machine_fields:  # one machine for every row: checked before anything is read
        model().state_machine.check(from_status, to_status, identifier=ids[0] if ids else None)
    if not ids:
        return []
    with transaction.atomic():
        rows = list(
            model.objects.select_for_update(no_key=True)
            .filter(pk__in=ids, **{model.STATUS_FIELD: from_status})
            .order_by("pk")
            .values_list("pk", *machine_fields)
        )
        templates: dict[tuple, Stateful] = {}
        for pk, *values in rows:
            key = tuple(values)
            if key not in templates:
                templates[key] = model(**dict(zip(machine_fields, key, strict=True)))
                templates[key].state_machine.check(from_status, to_status, identifier=pk)
        moved = [pk for pk, *_ in rows]
        template = next(iter(templates.values()), None) or model()
        updates = {
            model.STATUS_FIELD: to_status,
            **template.transition_updates(from_status, to_status, now),
            **(columns or {}),
        }
        model.objects.filter(pk__in=moved).update(**updates)
        entries = [model(pk=pk).status_log_entry(from_status, to_status, reason[:250], actor, now) for pk in moved]
        entries = [entry for entry in entries if entry is not None]
        if entries:
            type(entries[0]).objects.bulk_create(entries, batch_size=2000)
    return moved


def output_files_follow(*, job_ids: list[int], job_status: str) -> int:
    """The output files of jobs that just moved to `job_status`, moved as brokerage.outputs.FILE_FOLLOWS_JOB says
    (one UPDATE by the outPandaID index), part of the job's move (job_status_transition_many). Their sizes are not
    copied from the job: a job reports its outputs' total (Job.outputFileBytes, on its page), not each file's, and
    fetching it for every file (a correlated subquery over the job partitions) was nine tenths of this statement's
    time in bench keepup. Returns the files moved."""
    from brokerage.models import DatasetFile
    from brokerage.outputs import FILE_FOLLOWS_JOB

    if job_status not in FILE_FOLLOWS_JOB or not job_ids:
        return 0
    sources, target = FILE_FOLLOWS_JOB[job_status]
    return DatasetFile.objects.filter(outPandaID__in=job_ids, status__in=sources).update(status=target)
