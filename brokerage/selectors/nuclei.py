"""What task brokerage needs to know about nuclei from the database."""

from __future__ import annotations

from brokerage.adapters.task_brokerage import remaining_work_by_nucleus, remaining_work_rows
from brokerage.models import (
    Site,
)


def nucleus_remaining_work(*, priority: int, gshare: str) -> dict[str, float]:
    """Remaining work per nucleus for a task of `priority` in `gshare` (one query)."""
    return remaining_work_by_nucleus(remaining_work_rows(), priority=priority, gshare=gshare)


def nucleus_names() -> list[str]:
    """The nuclei a task can be reassigned to."""

    return list(Site.objects.filter(role="nucleus").order_by("name").values_list("name", flat=True))
