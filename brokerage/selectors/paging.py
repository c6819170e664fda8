"""Pages over lists that can hold millions of rows (issue 32: a day of jobs at a real grid's rate is a million)."""

from __future__ import annotations

from datetime import timedelta

from django.core.paginator import Paginator
from django.utils.functional import cached_property

COUNT_CAP = 10_000


class CappedPaginator(Paginator):
    """A paginator that counts at most `cap` rows (one `SELECT count(*)` over a `LIMIT cap + 1` subquery), so that a
    page costs the same with a million rows in its window as with a thousand: `count` is then `cap` and `capped`
    says that there are more (the page shows "200+ pages" and asks for a narrower filter)."""

    cap = COUNT_CAP

    @cached_property
    def _bounded_count(self) -> int:
        return self.object_list[: self.cap + 1].count()

    @cached_property
    def count(self) -> int:
        return min(self._bounded_count, self.cap)

    @cached_property
    def capped(self) -> bool:
        return self._bounded_count > self.cap


class CountedPaginator(Paginator):
    """A paginator given its count, when the caller has it already (a grouped count of the same rows)."""

    def __init__(self, object_list, per_page, *, count: int, **kwargs) -> None:
        super().__init__(object_list, per_page, **kwargs)
        self._known_count = count

    @cached_property
    def count(self) -> int:
        return self._known_count


PAGE_SIZE = 50


WINDOWS = {"1h": timedelta(hours=1), "6h": timedelta(hours=6), "1d": timedelta(days=1), "7d": timedelta(days=7)}


def window_problem(window: str) -> str | None:
    if window and window not in WINDOWS:
        return f"{window!r} is not a time window; one of {', '.join(WINDOWS)}"
    return None
