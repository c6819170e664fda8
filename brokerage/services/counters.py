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
from datetime import datetime

from django.db import transaction
from django.db.models import Q

from brokerage.models import Dataset, DatasetFile
from brokerage.selectors.counters import COUNTER_FIELDS, DatasetCounters, dataset_counters_from_files
from brokerage.services.bulk import bulk_update_values, rows_lock


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
