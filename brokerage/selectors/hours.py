"""Reading the hourly summaries (issue 32): whole hours from the summary rows, the edges from the rows they count.

A summary (JobErrorHour, JobStateHour, DecisionHour) holds every whole hour from its mark's `since` to its `until`
(SummaryMark), the hours that had nothing to count included. A window that starts inside an hour, reaches back past
`since`, or ends after `until` reads those parts from the raw rows: the answer is the same as a count of the rows,
and costs an hour or two of them whatever lies behind."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from brokerage.models import SummaryMark


def hour_start(moment: datetime) -> datetime:
    """The start of the hour that holds `moment`."""
    return moment.replace(minute=0, second=0, microsecond=0)


def summarised_rows(
    *,
    mark_name: str,
    since: datetime,
    summaries: Callable[[datetime, datetime], list[dict]],
    live: Callable[[datetime, datetime | None], list[dict]],
) -> list[dict]:
    """Rows for everything since `since`: `summaries(first, until)` for the whole hours the summary holds (the
    SummaryMark `mark_name`) and `live(start, end)` for the rest: the part hour after `since`, any hours before the
    summary began, and what came after its mark (end None: up to now)."""
    mark = SummaryMark.objects.filter(name=mark_name).values_list("since", "until").first()
    first_whole = hour_start(since) + (timedelta(hours=1) if since != hour_start(since) else timedelta(0))
    if mark is None:
        return live(since, None)
    covered_from, until = mark
    start = max(first_whole, covered_from or until)
    if until <= start:  # nothing of the window is rolled up: the raw rows themselves
        return live(since, None)
    return [*summaries(start, until), *live(since, start), *live(until, None)]
