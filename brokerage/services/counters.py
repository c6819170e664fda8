"""Dataset counters that follow their files: nFilesUsed, nFilesFinished, nFilesFailed and nEventsUsed are
recomputed from the files' statuses, in SQL, by every service that moves input files.

Counting moves one by one drifted: a retried file went back to ready and was counted a second time when it was
used again (issue 17: 82 used of 77 files). JEDI itself takes a file off nFilesUsed when it goes back to ready
(panda-server 1.0.4, task_event_module.py: `SET nFilesUsed=nFilesUsed-1`); deriving the counters from the rows
gives that for every path at once, including the ones added later. One aggregate query and one bulk update per
call, over the datasets the call names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Count, Q, Sum

from brokerage.models import Dataset, DatasetFile
from brokerage.services.bulk import bulk_update_values, rows_lock
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


def dataset_counters_refresh(*, dataset_ids: Iterable[int], now: datetime) -> int:
    """Sets the counters of these input datasets from their files; returns how many changed.

    The datasets are locked (in the one lock order) before their files are counted: two transactions that each
    moved a file of one dataset would otherwise each count without the other's file and the later write would
    lose one (issue 31, two workers: nFilesFinished 30 where the files give 32). Locked first, the second waits
    for the first to commit and then counts both."""
    with transaction.atomic():
        locked = rows_lock(Dataset, dataset_ids)
        return _refresh(locked, now)


def _refresh(dataset_ids: list[int], now: datetime) -> int:
    wanted = dataset_counters_from_files(dataset_ids=dataset_ids)
    if not wanted:
        return 0
    stored = {
        row[0]: DatasetCounters(*row[1:])
        for row in Dataset.objects.filter(pk__in=list(wanted)).values_list("pk", *COUNTER_FIELDS)
    }
    changed = [
        (pk, counters.nFilesUsed, counters.nFilesFinished, counters.nFilesFailed, counters.nEventsUsed, now)
        for pk, counters in wanted.items()
        if stored.get(pk) != counters
    ]
    bulk_update_values(Dataset, fields=(*COUNTER_FIELDS, "modificationTime"), rows=changed)
    return len(changed)


def datasets_of_files(*, file_filter: Q) -> set[int]:
    """The datasets holding the files a service is about to move (call before the move when the move changes
    what the filter matches)."""
    return set(DatasetFile.objects.filter(file_filter).values_list("dataset_id", flat=True).distinct())
