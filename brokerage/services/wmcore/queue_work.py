"""Stage 1 of seed 004's chain, ReqMgr2 → global queue: `request_queue_work` splits an assigned request into
Available elements, one per input block (or per slice of jobs without input)."""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction

from brokerage.models import (
    WMCoreBlock,
    WMCoreElement,
    WMCoreElementStatusLog,
    WMCoreQueue,
    WMCoreRequest,
)
from brokerage.services.status import status_transition_many

from .common import ACTOR_GLOBAL


def _block_elements(request: Mapping[str, Any], blocks: list[Mapping[str, Any]], parents, pileup) -> list[dict]:
    """One element per input block: jobs = ceil(files / FilesPerJob), its location, its parents' and pileup's."""
    elements = []
    for block in blocks:
        elements.append(
            {
                "Jobs": max(1, math.ceil(block["files"] / request["FilesPerJob"])),
                "Inputs": {block["name"]: sorted(block["sites"])},
                "ParentData": parents,
                "PileupData": pileup,
            }
        )
    return elements


def _slice_elements(request: Mapping[str, Any]) -> list[dict]:
    """Work without input is cut into elements of JobsPerElement jobs."""
    total, size = request["TotalJobs"], request["JobsPerElement"]
    return [
        {"Jobs": min(size, total - start), "Inputs": {}, "ParentData": {}, "PileupData": {}}
        for start in range(0, total, size)
    ]


REQUEST_FIELDS = (
    "pk",
    "RequestName",
    "RequestPriority",
    "Team",
    "InputDataset",
    "IncludeParents",
    "MCPileup",
    "FilesPerJob",
    "TotalJobs",
    "JobsPerElement",
    "SiteWhitelist",
    "SiteBlacklist",
    "TrustSitelists",
    "TrustPUSitelists",
    "created",
)


@dataclass
class QueueWorkPlan:
    """What queueWork makes of the assigned requests (queue_work_plan), before anything is written."""

    inbox_rows: list[WMCoreElement] = field(default_factory=list)
    queue_rows: list[WMCoreElement] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)  # request → why it fails
    acquired: list[int] = field(default_factory=list)


@transaction.atomic
def request_queue_work(*, now: datetime, global_queue_id: int | None = None) -> dict[str, int]:
    """queueWork (seed 004, "From ReqMgr to GQ"): every assigned request with a team (of the queue's team, when the
    queue names one) gets a Negotiating inbox element, is split by blocks into Available elements, its inbox element
    becomes Acquired and the request acquired. A request whose input has no block fails with the reason."""
    queue = (
        WMCoreQueue.objects.get(pk=global_queue_id, kind="global")
        if global_queue_id
        else WMCoreQueue.objects.filter(kind="global", enabled=True).order_by("pk").first()
    )
    if queue is None:
        return {"requests": 0, "elements": 0, "no_team": 0, "failed": 0}
    requests = list(
        WMCoreRequest.objects.select_for_update(no_key=True).filter(RequestStatus="assigned").values(*REQUEST_FIELDS)
    )
    no_team = [r for r in requests if not r["Team"]]
    requests = [r for r in requests if r["Team"] and (not queue.team or r["Team"] == queue.team)]
    plan = queue_work_plan(requests=requests, blocks_of=_blocks_of(requests), queue=queue, now=now)
    _queue_work_write(plan, queue=queue, now=now)
    return {
        "requests": len(plan.acquired),
        "elements": len(plan.queue_rows),
        "no_team": len(no_team),
        "failed": len(plan.failed),
    }


def _blocks_of(requests: list[dict]) -> dict[str, list[dict]]:
    """The blocks of the requests' input and pileup datasets, and of their parents, by dataset (two queries)."""
    datasets = {r["InputDataset"] for r in requests if r["InputDataset"]} | {r["MCPileup"] for r in requests}
    blocks_of: dict[str, list[dict]] = defaultdict(list)
    for block in (
        WMCoreBlock.objects.filter(dataset__in=datasets)
        .order_by("name")
        .values("name", "dataset", "parent_dataset", "files", "sites")
    ):
        blocks_of[block["dataset"]].append(block)
    parent_sets = {b["parent_dataset"] for bs in blocks_of.values() for b in bs if b["parent_dataset"]}
    for block in (
        WMCoreBlock.objects.filter(dataset__in=parent_sets)
        .order_by("name")
        .values("name", "dataset", "parent_dataset", "files", "sites")
    ):
        blocks_of.setdefault(block["dataset"], []).append(block)
    return blocks_of


def queue_work_plan(
    *, requests: list[dict], blocks_of: Mapping[str, list[dict]], queue: WMCoreQueue, now: datetime
) -> QueueWorkPlan:
    """Each request's inbox element and its Available elements, split by blocks (with their parents' and pileup's
    sites) or by jobs, or why it fails; in memory, no query."""
    plan = QueueWorkPlan()
    inbox_rows, queue_rows, failed, acquired = plan.inbox_rows, plan.queue_rows, plan.failed, plan.acquired
    for request in requests:
        common = {
            "queue": queue,
            "request_id": request["pk"],
            "Priority": request["RequestPriority"],
            "SiteWhitelist": request["SiteWhitelist"],
            "SiteBlacklist": request["SiteBlacklist"],
            "NoInputUpdate": request["TrustSitelists"],
            "NoPileupUpdate": request["TrustPUSitelists"],
            "ParentFlag": request["IncludeParents"],  # WMCore's start policies set it from IncludeParents
            "CreationTime": now,
            "UpdateTime": now,
        }
        pileup = {}
        if request["MCPileup"]:
            sites = sorted({s for b in blocks_of.get(request["MCPileup"], []) for s in b["sites"]})
            pileup = {request["MCPileup"]: sites}
        if request["InputDataset"]:
            blocks = blocks_of.get(request["InputDataset"], [])
            if not blocks:
                failed[request["pk"]] = f"no block of {request['InputDataset']} is known"
                continue
            parents = {}
            if request["IncludeParents"]:
                parent_names = {b["parent_dataset"] for b in blocks if b["parent_dataset"]}
                parents = {b["name"]: sorted(b["sites"]) for name in parent_names for b in blocks_of.get(name, [])}
            pieces = _block_elements(request, blocks, parents, pileup)
        else:
            pieces = _slice_elements(request)
            for piece in pieces:
                piece["PileupData"] = pileup
        if not pieces:
            failed[request["pk"]] = "the request has no work (no input and no jobs)"
            continue
        inbox_rows.append(
            WMCoreElement(
                **common,
                database="inbox",
                element_id=uuid.uuid4().hex,
                Status="Negotiating",
                Jobs=sum(p["Jobs"] for p in pieces),
            )
        )
        queue_rows += [
            WMCoreElement(**common, **piece, database="queue", element_id=uuid.uuid4().hex, Status="Available")
            for piece in pieces
        ]
        acquired.append(request["pk"])
    return plan


def _queue_work_write(plan: QueueWorkPlan, *, queue: WMCoreQueue, now: datetime) -> None:
    """The elements created and logged, the inbox elements Acquired, the requests acquired or failed."""
    acquired, failed = plan.acquired, plan.failed
    created = WMCoreElement.objects.bulk_create(plan.inbox_rows + plan.queue_rows, batch_size=1000)
    WMCoreElementStatusLog.objects.bulk_create(
        WMCoreElementStatusLog(
            element=row, timestamp=now, old_status="", new_status=row.Status, reason="queueWork", actor=ACTOR_GLOBAL
        )
        for row in created
    )
    inbox_ids = list(
        WMCoreElement.objects.filter(
            queue=queue, database="inbox", request_id__in=acquired, Status="Negotiating"
        ).values_list("pk", flat=True)
    )
    status_transition_many(
        model=WMCoreElement,
        ids=inbox_ids,
        from_status="Negotiating",
        to_status="Acquired",
        reason="split into block elements",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    status_transition_many(
        model=WMCoreRequest,
        ids=acquired,
        from_status="assigned",
        to_status="acquired",
        reason=f"in {queue.name}",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    for pk, reason in failed.items():
        status_transition_many(
            model=WMCoreRequest,
            ids=[pk],
            from_status="assigned",
            to_status="failed",
            reason=reason,
            actor=ACTOR_GLOBAL,
            now=now,
        )
