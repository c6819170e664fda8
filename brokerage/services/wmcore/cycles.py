"""The periodic turns: the global queue's, each agent's, and the whole chain."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from brokerage.models import (
    WMCoreQueue,
)

from .get_work import work_get
from .interventions import element_cancel
from .job_submitter import job_submitter_run
from .progress import wmcore_progress_update
from .pull_work import work_pull
from .queue_work import request_queue_work
from .replicate import work_replicate


def wmcore_agent_cycle_run(*, queue_id: int, now: datetime) -> dict[str, Any]:
    """One agent's turn: pullWork, the replication into its local queue, getWork and the JobSubmitter."""
    return {
        "pull": work_pull(queue_id=queue_id, now=now),
        "replicated": work_replicate(queue_id=queue_id, now=now),
        "get": work_get(queue_id=queue_id, now=now),
        "submit": job_submitter_run(queue_id=queue_id, now=now),
    }


def wmcore_global_cycle_run(*, now: datetime) -> dict[str, Any]:
    """The global queue's turn: statuses that follow the jobs, then new assigned requests (queueWork). Returns the
    summary and the local queues whose agents should take their turn."""
    progress = {**wmcore_progress_update(now=now), **element_cancel(now=now)}
    queued = request_queue_work(now=now)
    agents = list(WMCoreQueue.objects.filter(kind="local", enabled=True).order_by("pk").values_list("pk", flat=True))
    return {"progress": progress, "queued": queued, "agents": agents}


def wmcore_cycle_run(*, now: datetime) -> dict[str, Any]:
    """One pass of the whole chain in one process: the global queue's turn, every agent's turn, the statuses."""
    summary = wmcore_global_cycle_run(now=now)
    names = dict(WMCoreQueue.objects.filter(pk__in=summary["agents"]).values_list("pk", "name"))
    summary["queues"] = {names[pk]: wmcore_agent_cycle_run(queue_id=pk, now=now) for pk in summary["agents"]}
    summary["progress"] = wmcore_progress_update(now=now)
    return summary
