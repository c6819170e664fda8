"""The integrity check (reads only): each dataset counter against the files it counts, each logged entity's state
against the last entry of its status log, each file and event that a job holds against that job's state, and each
archived job against the day it ended.

Every finding names the row and the numbers or states that disagree. Run by `manage.py check_integrity` and by
the watchdog (brokerage.services.integrity); the overview shows the latest run when it found something.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from brokerage.models import (
    Dataset,
    DatasetFile,
    DatasetStatusLog,
    DiracJob,
    DiracJobStatusLog,
    Event,
    Job,
    JobStatusLog,
    Task,
    TaskStatusLog,
    WMCoreElement,
    WMCoreElementStatusLog,
    WMCoreRequest,
    WMCoreRequestStatusLog,
)
from brokerage.selectors.counters import (
    COUNTER_FIELDS,
    OUTPUT_COUNTER_FIELDS,
    dataset_counters_from_files,
    output_dataset_counters_from_files,
)
from brokerage.states import INPUT_TYPES, JOB_ACTIVE, OUTPUT_TYPES


@dataclass(frozen=True)
class Finding:
    """One disagreement: `kind` (counter, state log, holder, archive), the entity and its id, and what disagrees."""

    kind: str
    entity: str
    id: int
    detail: str

    def as_dict(self) -> dict:
        return asdict(self)


# (model, its log, the log's foreign key to it); their state must be the last logged new status
LOGGED = (
    (Task, TaskStatusLog, "task"),
    (Dataset, DatasetStatusLog, "dataset"),
    (Job, JobStatusLog, "job"),
    (DiracJob, DiracJobStatusLog, "job"),
    (WMCoreRequest, WMCoreRequestStatusLog, "request"),
    (WMCoreElement, WMCoreElementStatusLog, "element"),
)


def _counter_findings() -> list[Finding]:
    findings = []
    datasets = list(Dataset.objects.filter(type__in=INPUT_TYPES).values("pk", "nFiles", *COUNTER_FIELDS))
    wanted = dataset_counters_from_files(dataset_ids=[row["pk"] for row in datasets])
    for row in datasets:
        counters = wanted.get(row["pk"])
        if counters is None:
            continue  # no files loaded yet: the counters have nothing to count
        for field in COUNTER_FIELDS:
            if row[field] != getattr(counters, field):
                findings.append(
                    Finding(
                        "counter",
                        "dataset",
                        row["pk"],
                        f"{field} is {row[field]}, its files give {getattr(counters, field)}",
                    )
                )
        if row["nFilesUsed"] > row["nFiles"]:
            findings.append(
                Finding("counter", "dataset", row["pk"], f"nFilesUsed {row['nFilesUsed']} > nFiles {row['nFiles']}")
            )
    return findings


def _output_counter_findings() -> list[Finding]:
    """An output dataset's counters are written when it closes and must match its files once done
    (services.outputs)."""
    datasets = {
        row["pk"]: row
        for row in Dataset.objects.filter(type__in=OUTPUT_TYPES, status="done").values(
            "pk", "status", "nFiles", "nFilesFinished", "nFilesFailed"
        )
    }
    findings = []
    for pk, counts in output_dataset_counters_from_files(dataset_ids=datasets).items():
        stored = datasets[pk]
        findings += [
            Finding("counter", "dataset", pk, f"{field} is {stored[field]}, its files give {counts[field]}")
            for field in OUTPUT_COUNTER_FIELDS
            if stored[field] != counts[field]
        ]
    return findings


def _state_log_findings() -> list[Finding]:
    findings = []
    for model, log, link in LOGGED:
        status_field = model.STATUS_FIELD
        # the last log row by the sequence, the one clock of every writer: a row's log rows are written under its
        # row lock, so their ids follow the moves, while their timestamps are each cycle's own `now` (issue 31:
        # two workers wrote prepared at .952 and finished at .948, and the check cried wolf)
        last = log.objects.filter(**{link: OuterRef("pk")}).order_by("-id").values("new_status")[:1]
        rows = (
            # archived jobs ended for good and were checked while active; their logs expire before them
            (model.objects.filter(archiveDay__isnull=True) if model is Job else model.objects)
            .annotate(logged=Subquery(last))
            .filter(logged__isnull=False)
            .exclude(logged=F(status_field))
            .values_list("pk", status_field, "logged")
        )
        findings += [
            Finding("state log", model._meta.model_name, pk, f"state {state}, its log ends in {logged}")
            for pk, state, logged in rows
        ]
    return findings


def _holder_findings() -> list[Finding]:
    """Whole input files picked or running, and events sent or running, belong to a job that is still active."""
    ended = ~Q(job_status__in=JOB_ACTIVE)
    job_status = Job.objects.filter(pk=OuterRef("PandaID")).values("jobStatus")[:1]
    files = (
        DatasetFile.objects.filter(type__in=INPUT_TYPES, status__in=("picked", "running"))
        .exclude(Exists(Event.objects.filter(file_id=OuterRef("pk"))))
        .annotate(job_status=Subquery(job_status))
        .filter(Q(PandaID__isnull=True) | ended)
        .values_list("pk", "status", "PandaID", "job_status")
    )
    findings = [
        Finding("holder", "file", pk, f"{status} for job {panda_id}, which is {job or 'missing'}")
        for pk, status, panda_id, job in files
    ]
    events = (
        Event.objects.filter(status__in=("sent", "running"))
        .annotate(job_status=Subquery(job_status))
        .filter(Q(PandaID__isnull=True) | ended)
        .values_list("pk", "status", "PandaID", "job_status")
    )
    findings += [
        Finding("holder", "event", pk, f"{status} for job {panda_id}, which is {job or 'missing'}")
        for pk, status, panda_id, job in events
    ]
    return findings


# The archive is checked for the jobs filed in the last weeks: its older rows were checked when they were filed
# and nothing but the housekeeping writes them, and reading a year of jobs on every check would not end in time.
ARCHIVE_CHECKED_DAYS = 40


def _archive_findings(now: datetime) -> list[Finding]:
    """Archived jobs (issue 32) are filed under the day they ended: a job under another day would be dropped with
    the wrong partition, too early or too late."""
    misfiled = (
        Job.objects.filter(archiveDay__gte=(now - timedelta(days=ARCHIVE_CHECKED_DAYS)).date())
        .annotate(ended_on=TruncDate(Coalesce("endTime", "modificationTime"), tzinfo=UTC))
        .exclude(archiveDay=F("ended_on"))
        .values_list("pk", "archiveDay", "ended_on")
    )
    return [
        Finding("archive", "job", pk, f"archived under {day}, but it ended on {ended_on}")
        for pk, day, ended_on in misfiled
    ]


def integrity_findings(*, now: datetime | None = None) -> list[Finding]:
    """Everything the integrity check finds, counters first (a fixed number of queries)."""
    now = now or timezone.now()
    return [
        *_counter_findings(),
        *_output_counter_findings(),
        *_state_log_findings(),
        *_holder_findings(),
        *_archive_findings(now),
    ]
