"""What a dataset's counters must be, read from its files (the services that move input files write them back,
brokerage/services/counters.py; the integrity check compares them, brokerage/selectors/integrity.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from brokerage.models import DatasetFile
from brokerage.states import INPUT_TYPES

# an input file is used once a job has taken it, and stays used through its outcome; back to ready (a retry, a
# killed job, a task retry) it is not used any more (JEDI's nFilesUsed)
USED_FILE_STATUSES = ("picked", "running", "partial", "finished", "failed")
FAILED_FILE_STATUSES = ("failed", "lost", "broken")
COUNTER_FIELDS = ("nFilesUsed", "nFilesFinished", "nFilesFailed", "nEventsUsed")


@dataclass(frozen=True)
class DatasetCounters:
    nFilesUsed: int
    nFilesFinished: int
    nFilesFailed: int
    nEventsUsed: int | None


def dataset_counters_from_files(*, dataset_ids: Iterable[int]) -> dict[int, DatasetCounters]:
    """What the counters of these input datasets must be, from their files (one query). nEventsUsed stays None
    for a dataset whose files carry no event counts."""
    rows = (
        DatasetFile.objects.filter(dataset_id__in=list(dataset_ids), dataset__type__in=INPUT_TYPES)
        .values("dataset_id")
        .annotate(
            used=Count("pk", filter=Q(status__in=USED_FILE_STATUSES)),
            finished=Count("pk", filter=Q(status="finished")),
            failed=Count("pk", filter=Q(status__in=FAILED_FILE_STATUSES)),
            events=Sum("nEvents", filter=Q(status__in=USED_FILE_STATUSES)),
            with_events=Count("pk", filter=Q(nEvents__isnull=False)),
        )
    )
    return {
        row["dataset_id"]: DatasetCounters(
            nFilesUsed=row["used"],
            nFilesFinished=row["finished"],
            nFilesFailed=row["failed"],
            nEventsUsed=(row["events"] or 0) if row["with_events"] else None,
        )
        for row in rows
    }


OUTPUT_COUNTER_FIELDS = ("nFiles", "nFilesFinished", "nFilesFailed")


def output_dataset_counters_from_files(*, dataset_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """What the counters of these output datasets must be, from their files (one query): the service that closes
    them writes them (services.outputs), the integrity check compares them once done."""
    return {
        row.pop("dataset_id"): row
        for row in DatasetFile.objects.filter(dataset_id__in=list(dataset_ids))
        .values("dataset_id")
        .annotate(
            nFiles=Count("pk"),
            nFilesFinished=Count("pk", filter=Q(status="finished")),
            nFilesFailed=Count("pk", filter=Q(status="failed")),
        )
    }
