"""The housekeeping (issue 32): keeps history bounded. Each run, recorded as a HousekeepingRun:

1. moves jobs that ended more than JOB_ARCHIVE_AFTER_DAYS ago to the archive (PanDA: jobsActive4 → jobsArchived4
   after 3 days), in batches of HOUSEKEEPING_BATCH, each batch one transaction;
2. drops what has passed its retention, table by table (RETENTION), children before their parents, in batches,
   each batch one transaction.

Every batch is whole or not at all and every step picks its rows from their state, not from the run's memory, so a
run killed half-way (or failing) loses and doubles nothing and the next run goes on where it stopped. Two runs at
once share the work: batches lock their rows with SKIP LOCKED.

Traces are kept as long as a kept trace is stored as a change against them (a WMCore pull's delta), and a
cycle's frame as long as one of its traces is kept: retention never leaves a trace that cannot be read.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.apps import apps
from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Exists, Max, Min, OuterRef, Q, Value
from django.db.models.functions import Coalesce, Greatest, TruncDate
from django.utils import timezone

from brokerage import states
from brokerage.metrics import housekeeping_count
from brokerage.models import (
    BrokerageCycle,
    CycleFrame,
    CycleInputs,
    DatasetFile,
    DatasetStatusLog,
    Decision,
    DecisionHour,
    DecisionTrace,
    DiracJob,
    DiracJobStatusLog,
    DiracMatchInputs,
    DiracMatchRecord,
    Event,
    GlobalShareSnapshot,
    HousekeepingRun,
    HousekeepingStatus,
    IntegrityCheck,
    Job,
    JobErrorHour,
    JobRetryHistory,
    JobStateHour,
    JobStatusLog,
    JobSubmitterReport,
    JobTimeoutSummary,
    ScenarioPart,
    TaskStatusLog,
    WMBSJob,
    WMCoreElementStatusLog,
    WMCoreRequestStatusLog,
    WorkerHeartbeat,
    WorkerNode,
    WorkerNodeQueue,
)
from brokerage.models.jobs import JOB_ENDED
from brokerage.models.tasks import TASK_ENDED
from brokerage.partitions import (
    PARTITIONED,
    brin_ranges_summarize,
    partition_drop,
    partitioned,
    partitions_ahead,
    partitions_expired,
    partitions_make,
    period_start,
)
from brokerage.services.bulk import rows_lock
from brokerage.services.decisions import worker_name
from brokerage.services.summaries import decision_hours_rollup, job_error_hours_rollup, job_state_hours_rollup

logger = logging.getLogger(__name__)


# How far back a kept row can need an older one: a cycle lasts less, and a WMCore pull is stored as the change
# against a pull at most this old (services.wmcore.common refuses older bases).
NEEDED_WITHIN = timedelta(days=1)


@dataclass(frozen=True)
class Retention:
    """One kind of history: the rows of `model` whose `time_field` is older than `setting` days are dropped.
    `oldest_needed(cutoff)` gives the time of the oldest row past the cutoff that a kept row still needs (a trace
    a kept delta is stored against, a frame or a cycle of kept decisions): the cutoff moves back to it, so that
    whole partitions and batched deletes alike leave it. `keep` (a Q) double-checks the deletes."""

    model: type[models.Model]
    time_field: str
    setting: str
    oldest_needed: Callable[[datetime], datetime | None] | None = None
    keep: Q | None = None

    @property
    def table(self) -> str:
        return self.model._meta.db_table

    def days(self) -> int:
        return int(getattr(settings, self.setting))

    def cutoff(self, now: datetime) -> datetime:
        """The time before which rows go: `setting` days back, moved back past every row still needed."""
        cutoff = now - timedelta(days=self.days())
        for _ in range(100):  # a chain of bases moves it back a link at a time (KEYFRAME_EVERY links at most)
            needed = self.oldest_needed(cutoff) if self.oldest_needed else None
            if needed is None or needed >= cutoff:
                return cutoff
            cutoff = needed
        return cutoff


def _oldest_base_of_kept_traces(cutoff: datetime) -> datetime | None:
    bases = DecisionTrace.objects.filter(
        created__gte=cutoff, created__lt=cutoff + NEEDED_WITHIN, base__isnull=False
    ).values("base_id")
    return DecisionTrace.objects.filter(decision_id__in=bases, created__lt=cutoff).aggregate(m=Min("created"))["m"]


def _oldest_cycle_row_of_kept_traces(model: type[models.Model]) -> Callable[[datetime], datetime | None]:
    """For a table of one row per cycle that traces need (its frame, its inputs): the start of the oldest such row
    before the cutoff whose cycle has a kept trace."""

    def oldest(cutoff: datetime) -> datetime | None:
        kept = DecisionTrace.objects.filter(created__gte=cutoff, created__lt=cutoff + NEEDED_WITHIN)
        return model.objects.filter(cycle_id__in=kept.values("decision__cycle_id"), started__lt=cutoff).aggregate(
            m=Min("started")
        )["m"]

    return oldest


def _oldest_day_of_kept_inputs(cutoff: datetime) -> datetime | None:
    """A cycle or a DIRAC matching request reads the parts of its own day (ScenarioPart.day): the day of the oldest
    cycle or request inputs left (they are dropped first, so every one left is kept) must stay whole."""
    firsts = [
        CycleInputs.objects.aggregate(m=Min("started"))["m"],
        DiracMatchInputs.objects.aggregate(m=Min("at"))["m"],
    ]
    first = min((moment for moment in firsts if moment is not None), default=None)
    if first is None:
        return None
    return datetime.combine(first.astimezone(UTC).date(), datetime.min.time(), tzinfo=UTC)


def _oldest_cycle_of_kept_decisions(cutoff: datetime) -> datetime | None:
    kept = Decision.objects.filter(created__gte=cutoff, created__lt=cutoff + NEEDED_WITHIN)
    return BrokerageCycle.objects.filter(pk__in=kept.values("cycle_id"), started__lt=cutoff).aggregate(
        m=Min("started")
    )["m"]


def _oldest_running_run(cutoff: datetime) -> datetime | None:
    return HousekeepingRun.objects.filter(status=HousekeepingStatus.RUNNING).aggregate(m=Min("started"))["m"]


# In dropping order: a table's rows before those of the tables they point at.
RETENTION: tuple[Retention, ...] = (
    Retention(
        DecisionTrace,
        "created",
        "DECISION_TRACE_DAYS",
        oldest_needed=_oldest_base_of_kept_traces,
        keep=Q(Exists(DecisionTrace.objects.filter(base_id=OuterRef("decision_id")))),
    ),
    Retention(
        CycleFrame,
        "started",
        "DECISION_TRACE_DAYS",
        oldest_needed=_oldest_cycle_row_of_kept_traces(CycleFrame),
        keep=Q(Exists(DecisionTrace.objects.filter(decision__cycle_id=OuterRef("cycle_id")))),
    ),
    Retention(
        CycleInputs,
        "started",
        "DECISION_TRACE_DAYS",
        oldest_needed=_oldest_cycle_row_of_kept_traces(CycleInputs),
        keep=Q(Exists(DecisionTrace.objects.filter(decision__cycle_id=OuterRef("cycle_id")))),
    ),
    Retention(DiracMatchInputs, "at", "DECISION_TRACE_DAYS"),
    Retention(ScenarioPart, "day", "DECISION_TRACE_DAYS", oldest_needed=_oldest_day_of_kept_inputs),
    Retention(Decision, "created", "DECISION_DAYS"),
    Retention(DecisionHour, "hour", "DECISION_DAYS"),
    Retention(
        BrokerageCycle,
        "started",
        "DECISION_DAYS",
        oldest_needed=_oldest_cycle_of_kept_decisions,
        keep=Q(Exists(Decision.objects.filter(cycle_id=OuterRef("pk")))),
    ),
    Retention(DiracMatchRecord, "at", "DECISION_DAYS"),
    Retention(JobSubmitterReport, "at", "DECISION_DAYS"),
    Retention(JobStatusLog, "timestamp", "JOB_STATUS_LOG_DAYS"),
    Retention(TaskStatusLog, "timestamp", "STATUS_LOG_DAYS"),
    Retention(DatasetStatusLog, "timestamp", "STATUS_LOG_DAYS"),
    Retention(DiracJobStatusLog, "timestamp", "STATUS_LOG_DAYS"),
    Retention(WMCoreRequestStatusLog, "timestamp", "STATUS_LOG_DAYS"),
    Retention(WMCoreElementStatusLog, "timestamp", "STATUS_LOG_DAYS"),
    Retention(JobRetryHistory, "created", "JOB_DAYS"),
    Retention(GlobalShareSnapshot, "taken_at", "HISTORY_DAYS"),
    Retention(JobErrorHour, "hour", "HISTORY_DAYS"),
    Retention(JobStateHour, "hour", "HISTORY_DAYS"),
    Retention(JobTimeoutSummary, "taken_at", "TIMEOUT_SUMMARY_DAYS"),
    # DIRAC purges the jobs that ended (their logs go with them); a job that may still move stays
    Retention(DiracJob, "lastUpdateTime", "DIRAC_JOB_DAYS", keep=~Q(status__in=states.DIRAC_JOB_ENDED)),
    # WMBS jobs that ended, once their subscription has finished: an open one still counts its jobs
    # (services.wmcore.progress: an element is Done when all its jobs are over and one succeeded)
    Retention(
        WMBSJob,
        "state_time",
        "WMBS_JOB_DAYS",
        keep=~Q(state__in=states.WMBS_JOB_ENDED) | Q(subscription__finished__isnull=True),
    ),
    # a task's event ranges, then its files, once it ended long enough ago; a task run again (a retry, an
    # incremental execution) keeps its endTime until it ends again, so its status says whether it is over. Batched
    # deletes, not partitions: a task's rows are written over its whole life, and a time partition holding one
    # task that runs for months could never go whole (Zulip's retention deletes per realm in batches likewise)
    Retention(Event, "task__endTime", "EVENT_DAYS", keep=~Q(task__status__in=TASK_ENDED)),
    Retention(DatasetFile, "task__endTime", "TASK_FILES_DAYS", keep=~Q(task__status__in=TASK_ENDED)),
    Retention(IntegrityCheck, "started", "HISTORY_DAYS"),
    Retention(
        HousekeepingRun,
        "started",
        "HISTORY_DAYS",
        oldest_needed=_oldest_running_run,
        keep=Q(status=HousekeepingStatus.RUNNING),
    ),
    Retention(WorkerHeartbeat, "beat", "HISTORY_DAYS"),
    Retention(WorkerNode, "last_seen", "WORKER_NODE_DAYS"),
    Retention(WorkerNodeQueue, "last_seen", "WORKER_NODE_DAYS"),
)


def _archive_due(now: datetime):
    cutoff = now - timedelta(days=settings.JOB_ARCHIVE_AFTER_DAYS)
    return Job.objects.filter(archiveDay__isnull=True, jobStatus__in=JOB_ENDED).filter(
        Q(endTime__lt=cutoff) | Q(endTime__isnull=True, modificationTime__lt=cutoff)
    )


def jobs_archive(*, now: datetime, batch: int, dry_run: bool = False) -> int:
    """Moves the jobs that ended JOB_ARCHIVE_AFTER_DAYS before `now` to the archive, a batch per transaction;
    returns how many moved (would move, with `dry_run`). The archive day is the day the job ended (UTC)."""
    due = _archive_due(now)
    if dry_run:
        return due.count()
    if partitioned():  # the archive's months these jobs are filed under, before the first is moved
        span = due.aggregate(
            first=Min(Coalesce("endTime", "modificationTime")), last=Max(Coalesce("endTime", "modificationTime"))
        )
        if span["first"] is not None:
            partitions_make(
                Job._meta.db_table,
                since=span["first"].astimezone(UTC).date(),
                until=span["last"].astimezone(UTC).date(),
            )
    moved, last = 0, 0
    while True:
        with transaction.atomic():
            # a batch after the last one's PandaID (the active jobs' key index, walked from there), not the first
            # `batch` of what is still due: that would read again every row the earlier batches left behind
            due_ids = list(due.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:batch])
            if not due_ids:
                return moved
            last = due_ids[-1]
            # a job another transaction holds is left for the next run
            ids = rows_lock(Job, due_ids, skip_locked=True)
            moved += Job.objects.filter(pk__in=ids, archiveDay__isnull=True).update(
                archiveDay=TruncDate(Coalesce("endTime", "modificationTime"), tzinfo=UTC)
            )


def archived_jobs_drop(*, now: datetime, batch: int, dry_run: bool = False) -> Counter:
    """Drops archived jobs that ended JOB_DAYS before `now`, with their status logs (and the merge links to them
    cleared). Returns rows dropped per table."""
    before = (now - timedelta(days=settings.JOB_DAYS)).date()
    dropped: Counter = Counter()
    if partitioned():
        table = Job._meta.db_table
        for name, _, _ in partitions_expired(table, before=before):
            dropped += _job_partition_unlink(name, dry_run=dry_run)
        dropped += _partitions_drop(table, before=before, dry_run=dry_run)
        before = _partition_floor(table, before)
    return dropped + _drop(Job.objects.filter(archiveDay__lt=before), batch=batch, dry_run=dry_run, model=Job)


def _drop(queryset, *, batch: int, dry_run: bool, model: type[models.Model]) -> Counter:
    """Deletes the rows of `queryset` a batch per transaction (Django's collector takes the rows that point at
    them, as the models say: cascade or set null). Returns rows dropped per table."""
    dropped: Counter = Counter()
    if dry_run:
        dropped[model._meta.db_table] = queryset.count()
        return dropped
    while True:
        with transaction.atomic():
            # the rows looked for, locked and deleted within `queryset`: on a partitioned table its time filter keeps
            # each statement to the partitions past the cutoff (the job status log has no key index to find an id by)
            ids = rows_lock(
                model, queryset.order_by("pk").values_list("pk", flat=True)[:batch], skip_locked=True, within=queryset
            )
            if not ids:
                return dropped
            _, per_model = queryset.filter(pk__in=ids).delete()
            for label, count in per_model.items():
                dropped[_table_of(label)] += count


def _table_of(label: str) -> str:
    return apps.get_model(label)._meta.db_table


def _job_partition_unlink(name: str, *, dry_run: bool) -> Counter:
    """Before a month of archived jobs is dropped: the status logs left of its jobs go (when logs are kept as long
    as jobs; otherwise they expired first) and merge links to its jobs are cleared, as the collector does for
    deleted jobs (the archive's partial index on mergeJob_id keeps that cheap)."""
    jobs = f'SELECT "PandaID" FROM {connection.ops.quote_name(name)}'
    dropped: Counter = Counter()
    if dry_run:
        return dropped
    with transaction.atomic(), connection.cursor() as cursor:
        # a job's status logs are older than its end: with logs kept less long than jobs they have gone already,
        # and looking for them would join a month of jobs against every day of logs
        if settings.JOB_STATUS_LOG_DAYS >= settings.JOB_DAYS:
            cursor.execute(f'DELETE FROM panda_job_status_log WHERE "PandaID" IN ({jobs})')
            dropped[JobStatusLog._meta.db_table] += cursor.rowcount
        cursor.execute(f'UPDATE panda_jobs SET "mergeJob_id" = NULL WHERE "mergeJob_id" IN ({jobs})')
    return dropped


def _partitions_drop(table: str, *, before, dry_run: bool) -> Counter:
    """Drops the partitions of `table` wholly older than `before`; returns the rows they held."""
    dropped: Counter = Counter()
    for name, _, _ in partitions_expired(table, before=before):
        if dry_run:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(name)}")
                dropped[table] += cursor.fetchone()[0]
        else:
            dropped[table] += partition_drop(table, name)
        dropped[f"{table}:partitions"] += 1
    return dropped


def _partition_floor(table: str, before):
    """The start of the period that holds `before`: rows past it are in a partition that is not wholly expired and
    stay until it is (partitions are dropped whole, never emptied with DELETE); rows before it can only be in the
    default partition (they came before their partition was made)."""
    spec = PARTITIONED[table]
    day = before if not isinstance(before, datetime) else before.astimezone(UTC).date()
    start = period_start(day, spec.period)
    if spec.dated or (isinstance(before, date) and not isinstance(before, datetime)):
        return start
    return datetime.combine(start, datetime.min.time(), tzinfo=UTC)


def history_drop(*, retention: Retention, now: datetime, batch: int, dry_run: bool = False) -> Counter:
    """Drops one kind of history older than its retention: on PostgreSQL whole partitions, then the stray rows
    of the default partition. Returns rows dropped per table (and partitions dropped, as `<table>:partitions`)."""
    cutoff = retention.cutoff(now)
    dropped: Counter = Counter()
    if partitioned() and retention.table in PARTITIONED:
        dropped += _partitions_drop(retention.table, before=cutoff, dry_run=dry_run)
        cutoff = _partition_floor(retention.table, cutoff)
    expired = retention.model.objects.filter(**{f"{retention.time_field}__lt": cutoff})
    if retention.keep is not None:
        expired = expired.exclude(retention.keep)
    return dropped + _drop(expired, batch=batch, dry_run=dry_run, model=retention.model)


def _note_count(note, table: str, count: int) -> None:
    if table.endswith(":partitions"):
        note(table.removesuffix(":partitions"), partitions_dropped=count)
    else:
        note(table, dropped=count)


def housekeeping_run(*, now: datetime, dry_run: bool = False, batch: int | None = None) -> HousekeepingRun:
    """One housekeeping run (module docstring), recorded. A step that fails is recorded with its error and the
    run goes on with the next; the run then ends as failed."""
    batch = batch or settings.HOUSEKEEPING_BATCH
    if not dry_run:
        housekeeping_abandoned_close(now=timezone.now())
    run = HousekeepingRun.objects.create(started=timezone.now(), now=now, dry_run=dry_run, worker=worker_name())
    tables: dict[str, dict[str, object]] = {}
    errors: list[dict[str, str]] = []

    def note(table: str, **values) -> None:
        entry = tables.setdefault(table, {})
        for key, value in values.items():
            entry[key] = entry.get(key, 0) + value if isinstance(value, int) else value

    def make_ahead():
        for table in PARTITIONED:
            made = [] if dry_run else partitions_ahead(table, now=now)
            if made:
                note(table, partitions_made=len(made))

    steps = [("make partitions", make_ahead)] if partitioned() else []
    steps += [
        ("archive jobs", lambda: note(Job._meta.db_table, moved=jobs_archive(now=now, batch=batch, dry_run=dry_run)))
    ]
    for retention in RETENTION:

        def drop(retention=retention):
            note(retention.table, cutoff=retention.cutoff(now).isoformat())
            for table, count in history_drop(retention=retention, now=now, batch=batch, dry_run=dry_run).items():
                _note_count(note, table, count)

        steps.append((f"drop {retention.table}", drop))

    def roll_up():
        if partitioned() and not dry_run:  # the hours just written are read through the log's BRIN index
            since = (now - timedelta(days=2)).date()
            ranges = brin_ranges_summarize(JobStatusLog._meta.db_table, since=since)
            note(JobStatusLog._meta.db_table, brin_ranges_summarised=ranges)
        note(JobErrorHour._meta.db_table, hours_rolled_up=job_error_hours_rollup(now=now, dry_run=dry_run))
        note(JobStateHour._meta.db_table, hours_rolled_up=job_state_hours_rollup(now=now, dry_run=dry_run))
        note(DecisionHour._meta.db_table, hours_rolled_up=decision_hours_rollup(now=now, dry_run=dry_run))

    steps.append(("roll up summaries", roll_up))

    def drop_jobs():
        note(Job._meta.db_table, cutoff=(now - timedelta(days=settings.JOB_DAYS)).date().isoformat())
        for table, count in archived_jobs_drop(now=now, batch=batch, dry_run=dry_run).items():
            _note_count(note, table, count)

    steps.append(("drop archived jobs", drop_jobs))
    for name, step in steps:
        try:
            step()
        except Exception as error:  # recorded; the next step still runs and the next run retries this one
            logger.exception("housekeeping: %s failed", name)
            errors.append({"step": name, "error": f"{type(error).__name__}: {error}"[:500]})
    run.tables = tables
    run.errors = errors
    run.rows_moved = sum(int(entry.get("moved", 0)) for entry in tables.values())
    run.rows_dropped = sum(int(entry.get("dropped", 0)) for entry in tables.values())
    run.status = HousekeepingStatus.FAILED if errors else HousekeepingStatus.SUCCEEDED
    run.finished = max(timezone.now(), run.started)
    run.save()
    if not dry_run:
        housekeeping_count(tables)
    return run


def housekeeping_abandoned_close(*, now: datetime) -> int:
    """Runs left `running` by a worker that died (its heartbeat stale, or older than a day): failed, so that the
    record says so. Returns how many."""
    from brokerage.services.heartbeat import holders_gone

    running = list(
        HousekeepingRun.objects.filter(status=HousekeepingStatus.RUNNING).values_list("pk", "worker", "started")
    )
    gone = holders_gone(worker for _, worker, _ in running)
    abandoned = [pk for pk, worker, started in running if worker in gone or started < now - timedelta(days=1)]
    return HousekeepingRun.objects.filter(pk__in=abandoned, status=HousekeepingStatus.RUNNING).update(
        status=HousekeepingStatus.FAILED,
        finished=Greatest("started", Value(now)),
        errors=[{"step": "run", "error": "the worker stopped before the run ended"}],
    )
