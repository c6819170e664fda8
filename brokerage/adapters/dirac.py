"""DIRAC's rows as the engine's inputs (seed 003): the installation's groups and CPU segments, task queues with their
requirements (one at a time as TaskQueue for the pages, or all enabled ones as the live Matcher's TaskQueueIndex),
and the waiting jobs' priorities per task queue. Reads only; the Matcher and the job submission that write are
brokerage/services/dirac.py."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import Avg, Case, Exists, FloatField, OuterRef, Q, Value, When
from django.db.models.functions import Cast

from brokerage.engine.dirac.matcher import ROW, TaskQueueIndex
from brokerage.engine.dirac.rules import (
    DEFAULT_CPU_SEGMENTS,
    Group,
    MatchRules,
    TaskQueue,
    real_priority,
    task_queue_from,
)
from brokerage.engine.dirac.rules import cpu_segment as cpu_segment
from brokerage.engine.dirac.scenario import groups_from
from brokerage.models import (
    DiracJob,
    DiracTaskQueue,
    DiracTaskQueueValue,
)
from brokerage.models.dirac import REQUIREMENT_FIELDS

FIELDS = [name for name, _ in REQUIREMENT_FIELDS]


def cpu_segments() -> tuple[float, ...]:
    return tuple(getattr(settings, "DIRAC_CPU_SEGMENTS", DEFAULT_CPU_SEGMENTS))


def dirac_groups() -> dict[str, Group]:
    """The installation's DIRAC groups (settings.DIRAC_GROUPS, checked at startup by brokerage.checks), with the
    shares of DIRAC_GROUP_SHARES over theirs."""
    groups = groups_from(getattr(settings, "DIRAC_GROUPS", {}) or {}, "DIRAC_GROUPS")
    for name, share in (getattr(settings, "DIRAC_GROUP_SHARES", {}) or {}).items():
        groups[name] = Group(**{**groups.get(name, Group()).__dict__, "share": float(share)})
    return groups


def dirac_groups_data() -> dict[str, dict[str, Any]]:
    """The installation's groups as a scenario's `groups` section (what `manage.py broker` fills in)."""
    return {name: dict(group.__dict__) for name, group in dirac_groups().items()}


def dirac_priority_rows(*, groups: Iterable[str] | None, rules: MatchRules) -> list[dict[str, Any]]:
    """The task queues of these groups (all when None) that hold waiting jobs, as `task_queue_priorities` reads
    them: the averages of their waiting jobs' user and real priorities, the stored priority, and under
    DIRAC_PRIORITY_GROUPING their requirement values (two queries)."""
    # only queues holding waiting jobs: DIRAC deletes a task queue when its last job leaves
    # (TaskQueueDB.deleteTaskQueueIfEmpty), so an owner whose queues emptied no longer splits the group's share
    queues = DiracTaskQueue.objects.filter(Exists(DiracJob.objects.filter(task_queue=OuterRef("pk"), status="Waiting")))
    if groups is not None:
        queues = queues.filter(ownerGroup__in=list(groups))
    waiting = Q(jobs__status="Waiting")
    real = Case(
        When(jobs__userPriority__lte=0, then=Value(real_priority(0))),
        When(jobs__userPriority__gte=10, then=Value(real_priority(10))),
        default=Cast("jobs__userPriority", FloatField()),
        output_field=FloatField(),
    )
    rows = list(
        queues.annotate(
            averagePriority=Avg("jobs__userPriority", filter=waiting),
            averageRealPriority=Avg(real, filter=waiting),
        ).values(
            "id", "ownerGroup", "ownerDN", "setup", "cpuTime", "averagePriority", "averageRealPriority", "priority"
        )
    )
    if rules.priority_grouping:  # the requirement values decide which queues share a sum
        values: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for tq_id, name, value in DiracTaskQueueValue.objects.filter(task_queue__in=queues).values_list(
            "task_queue_id", "field", "value"
        ):
            values[tq_id][name].append(value)
        for row in rows:
            row.update(values.get(row["id"], {}))
    return rows


def engine_task_queues(*, queues) -> list[TaskQueue]:
    """The task queues of a queryset as the engine's TaskQueue, requirements included (two queries)."""
    values: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for tq, field, value in DiracTaskQueueValue.objects.filter(task_queue__in=queues).values_list(
        "task_queue", "field", "value"
    ):
        values[tq][field].add(value)
    return [
        task_queue_from(row, values[row["pk"]])
        for row in queues.values("pk", "ownerDN", "ownerGroup", "setup", "cpuTime", "priority", "minRAM", "maxRAM")
    ]


def task_queue_index_read(*, version: str) -> TaskQueueIndex:
    """The enabled task queues as the matcher's index (two queries)."""
    rows = (
        DiracTaskQueue.objects.filter(enabled=True)
        .order_by("pk")
        .values_list("pk", *ROW[1:])  # the index's row layout (matcher.ROW), the key first
    )
    values = DiracTaskQueueValue.objects.filter(task_queue__enabled=True).values_list("task_queue_id", "field", "value")
    return TaskQueueIndex(version, list(rows), values)
