"""CMS WMCore's work-queue pull over the database (seed 004): the five transitions from an assigned request to
jobs in the pool, the periodic location update, the explicit reset, and the statuses that follow.

1. `request_queue_work`   ReqMgr2 → global queue: inbox element Negotiating → Acquired, one Available element per
                          input block (or per slice of jobs without input), request assigned → acquired.
2. `work_pull`            global → local queue (pullWork): Normal sites, pending + running slots; elements → Negotiating
                          with the child queue; `work_replicate` copies them to the local inbox and queue (Available)
                          and marks inbox and global element Acquired.
3. `work_get`             local queue → WMBS (getWork): Normal and Draining sites, running jobs subtracted; a WMBS
                          subscription and its jobs per element; the element Running everywhere, the request
                          running-open.
4. `job_submitter_cache_refresh`  WMBS created jobs → the JobSubmitter cache (refilled below 30,000 jobs, or when the
                          last refresh is 20 minutes old).
5. `job_submitter_run`    cache → pool: per-type thresholds, the high-priority overflow, the schedd limit.

Every pull (2 and 3) stores a `wmcore_pull` Decision with each element not taken and why, and writes the reason
on the element (`stuck_reason`) for the monitor. Reads are `.values()` in a fixed number of queries per step;
writes are bulk. Statuses move only forward through `status_transition_many` (checked against the state machines,
logged); going back to Available is `element_reset`, logged with who asked.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import models, transaction
from django.db.models import Count, TextField
from django.db.models.functions import Cast

from brokerage import states
from brokerage.engine.plugins import wmcore_pull as engine
from brokerage.models import (
    JobSubmitterCacheEntry,
    JobSubmitterReport,
    WMBSJob,
    WMBSSubscription,
    WMCoreBlock,
    WMCoreElement,
    WMCoreElementStatusLog,
    WMCoreQueue,
    WMCoreRequest,
)
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.selectors.wmcore import (
    ELEMENT_HELD,
    wmcore_jobs_in_pool,
    wmcore_site_jobs,
    wmcore_site_loads,
    wmcore_site_resources,
    wmcore_submit_sites,
)
from brokerage.services.bulk import bulk_update_values
from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_store_many
from brokerage.services.status import status_transition_many

ACTOR_GLOBAL = "global workqueue"
ACTOR_LOCAL = "local workqueue"
ACTOR_SUBMITTER = "jobsubmitter"
CONFIG_KEYS = (
    "WMCORE_MAX_JOBS_PER_OWNER",
    "WMCORE_SCHEDD_FRACTION",
    "WMCORE_OVERFLOW_FRACTION",
    "WMCORE_CACHE_REFRESH_SIZE",
    "WMCORE_CACHE_REFRESH_MINUTES",
    "WMCORE_MAX_JOBS_TO_CACHE",
    "WMCORE_MAX_JOBS_PER_POLL",
)
# Stuck elements whose reason keeps its numbers on the row, highest priority first (the monitor lists the first 50).
STUCK_DETAILED = 1000
# What the matcher reads of an element besides its JSON columns (JSON_FIELDS, read as text).
ELEMENT_FIELDS = (
    "pk",
    "element_id",
    "request__RequestName",
    "Priority",
    "CreationTime",
    "Jobs",
    "NoInputUpdate",
    "NoPileupUpdate",
    "stuck_reason",
    "stuck_digest",
)


# --- status moves ---------------------------------------------------------------------------------------------


def wmbs_job_transition_many(
    *,
    job_ids: list[int],
    from_status: str,
    to_status: str,
    actor: str,
    now: datetime,
    reason: str = "",
    columns: Mapping[str, Any] | None = None,
) -> list[int]:
    """Moves WMBS jobs still in `from_status` (the pool reporting back: executing → complete → success …)."""
    return status_transition_many(
        model=WMBSJob,
        ids=job_ids,
        from_status=from_status,
        to_status=to_status,
        reason=reason,
        actor=actor,
        now=now,
        columns=columns,
    )


def _config_snapshot() -> dict[str, Any]:
    view = gdpconfig_view()
    return {key: view.get(key) for key in CONFIG_KEYS}


# --- 1. ReqMgr2 → global queue --------------------------------------------------------------------------------


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
    assigned = WMCoreRequest.objects.select_for_update().filter(RequestStatus="assigned")
    requests = list(
        assigned.values(
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
    )
    no_team = [r for r in requests if not r["Team"]]
    requests = [r for r in requests if r["Team"] and (not queue.team or r["Team"] == queue.team)]
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

    inbox_rows, queue_rows, failed, acquired = [], [], {}, []
    for request in requests:
        common = {
            "queue": queue,
            "request_id": request["pk"],
            "Priority": request["RequestPriority"],
            "SiteWhitelist": request["SiteWhitelist"],
            "SiteBlacklist": request["SiteBlacklist"],
            "NoInputUpdate": request["TrustSitelists"],
            "NoPileupUpdate": request["TrustPUSitelists"],
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
    created = WMCoreElement.objects.bulk_create(inbox_rows + queue_rows, batch_size=1000)
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
    return {"requests": len(acquired), "elements": len(queue_rows), "no_team": len(no_team), "failed": len(failed)}


# --- 2. and 3. matching: pullWork and getWork -----------------------------------------------------------------


JSON_FIELDS = ("Inputs", "ParentData", "PileupData", "SiteWhitelist", "SiteBlacklist")


def _element_rows(queryset, *extra: str) -> list[dict[str, Any]]:
    """Element rows for the matcher, the JSON columns as their text (`<name>_text`): equal texts (a request's
    site lists, its pileup, empty parents) are decoded once by `_ElementReader`."""
    casts = {f"{name}_text": Cast(name, TextField()) for name in JSON_FIELDS}
    return list(queryset.annotate(**casts).values(*ELEMENT_FIELDS, *casts, *extra))


class _ElementReader:
    """Engine elements from `_element_rows` rows. Each distinct JSON text is decoded once and its value shared:
    equal site lists are then one tuple, which the matcher's caches find by identity."""

    def __init__(self) -> None:
        self._sites: dict[str | None, tuple[str, ...]] = {}
        self._locations: dict[str | None, dict[str, tuple[str, ...]]] = {}

    def sites(self, text: str | None) -> tuple[str, ...]:
        found = self._sites.get(text)
        if found is None:
            found = self._sites[text] = tuple(json.loads(text) or ()) if text else ()
        return found

    def locations(self, text: str | None) -> dict[str, tuple[str, ...]]:
        found = self._locations.get(text)
        if found is None:
            value = json.loads(text) if text else {}
            found = self._locations[text] = {str(k): tuple(v or ()) for k, v in (value or {}).items()}
        return found

    def element(self, row: Mapping[str, Any]) -> engine.Element:
        return engine.Element(
            id=row["element_id"],
            priority=float(row["Priority"]),
            created=row["CreationTime"].timestamp(),
            jobs=int(row["Jobs"]),
            inputs=self.locations(row["Inputs_text"]),
            parents=self.locations(row["ParentData_text"]),
            pileup=self.locations(row["PileupData_text"]),
            whitelist=self.sites(row["SiteWhitelist_text"]),
            blacklist=self.sites(row["SiteBlacklist_text"]),
            trust_sitelists=bool(row["NoInputUpdate"]),
            trust_pileup_sitelists=bool(row["NoPileupUpdate"]),
            request=row["request__RequestName"],
        )


def schedd_free(*, queue: WMCoreQueue, config: Mapping[str, Any]) -> int:
    """MAX_JOBS_PER_OWNER × factor minus the agent's jobs in the pool (seed 004)."""
    return engine.schedd_free_slots(
        max_jobs_per_owner=int(config["WMCORE_MAX_JOBS_PER_OWNER"]),
        fraction=float(config["WMCORE_SCHEDD_FRACTION"]),
        jobs_in_schedd=wmcore_jobs_in_pool(queue=queue),
    )


def _digest(detail: Mapping[str, Any]) -> str:
    return hashlib.blake2b(json.dumps(detail, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()


def _record_stuck(rows: list[Mapping[str, Any]], pull: engine.Pull, *, queue: WMCoreQueue, step: str, now) -> None:
    """Writes each element's reason for staying (taken ones were cleared by their move). The numbers go with the
    reason for the STUCK_DETAILED highest-priority elements (what the monitor lists); every element's numbers are
    in the pull's decision trace. A row is written only when its reason or numbers changed (compared by digest),
    `stuck_since` only when the reason did: a steady queue of stuck elements costs no write."""
    by_element = {row["element_id"]: row for row in rows}
    new_reason, new_numbers = [], []
    detailed = 0
    for element_id in pull.order:
        found = pull.rejected.get(element_id)
        if found is None:
            continue
        code, detail = found
        detailed += 1
        full = {"queue": queue.name, "step": step, **(detail if detailed <= STUCK_DETAILED else {})}
        digest = _digest(full)
        row = by_element[element_id]
        if row["stuck_reason"] != code:
            new_reason.append((row["pk"], code, full, digest, now))
        elif row["stuck_digest"] != digest:
            new_numbers.append((row["pk"], full, digest))
    fields = ("stuck_reason", "stuck_detail", "stuck_digest", "stuck_since")
    bulk_update_values(WMCoreElement, fields=fields, rows=new_reason)
    bulk_update_values(WMCoreElement, fields=("stuck_detail", "stuck_digest"), rows=new_numbers)


NOT_STUCK = {"stuck_reason": "", "stuck_detail": {}, "stuck_digest": "", "stuck_since": None}


def _take(rows, pull: engine.Pull, *, to_status: str, reason: str, now, columns=None) -> tuple[dict, list[int]]:
    """Moves the elements a match took out of Available, with the site it chose and no stuck reason. Returns
    element pk → site, and the pks moved (an element moved by someone else meanwhile is left out)."""
    pk_of = {row["element_id"]: row["pk"] for row in rows}
    site_of = {pk_of[element.id]: site for element, site in pull.taken}
    moved = status_transition_many(
        model=WMCoreElement,
        ids=list(site_of),
        from_status="Available",
        to_status=to_status,
        reason=reason,
        actor=ACTOR_LOCAL,
        now=now,
        columns={**NOT_STUCK, **(columns or {})},
    )
    bulk_update_values(WMCoreElement, fields=("site",), rows=[(pk, site_of[pk]) for pk in moved])
    return site_of, moved


def _store_pull(*, queue: WMCoreQueue, pull, elements, slots, step: str, now, seed: int, config) -> int:
    decision = engine.pull_decision(
        pull=pull, elements=elements, slots=slots, step=step, now=now, seed=seed, queue=queue.name
    )
    cycle = cycle_start(plugin="wmcore_pull", now=now, gdpconfig={**config, "queue": queue.name, "step": step})
    stored = decision_store_many(cycle=cycle, items=[DecisionToStore(decision)])
    cycle_finish(cycle=cycle, now=now)
    return stored[0].pk


def _seed_for(now: datetime, queue: WMCoreQueue) -> int:
    return int(now.timestamp()) * 1000 + queue.pk % 1000


@transaction.atomic
def work_pull(*, queue_id: int, now: datetime, seed: int | None = None) -> dict[str, Any]:
    """pullWork (seed 004, "From GQ to LQ" steps 1–3): the local queue matches the global queue's Available elements
    against its Normal sites (pending + running slots), and takes what fits: element → Negotiating, ChildQueue set,
    the chosen site kept. The agent's row and its global queue's row are locked: one pull at a time per global queue,
    and the move re-checks each element's status, so no element is taken twice."""
    queue = WMCoreQueue.objects.select_for_update().get(pk=queue_id, kind="local")
    # one pull at a time per global queue: agents compete for the same elements and write their reasons on them
    WMCoreQueue.objects.select_for_update().get(pk=queue.parent_id)
    config = _config_snapshot()
    seed = _seed_for(now, queue) if seed is None else seed
    rows = _element_rows(WMCoreElement.objects.filter(queue_id=queue.parent_id, database="queue", Status="Available"))
    reader = _ElementReader()
    elements = [reader.element(row) for row in rows]
    slots = engine.free_slots(wmcore_site_resources(queue=queue), step=engine.PULL_WORK)
    free = schedd_free(queue=queue, config=config) if queue.enabled else 0
    site_jobs = wmcore_site_jobs(queue=queue, step=engine.PULL_WORK)
    pull = engine.match_work(elements, slots, site_jobs, seed=seed, schedd_free=free)
    site_of, moved = _take(
        rows, pull, to_status="Negotiating", reason=f"pulled by {queue.name}", now=now, columns={"ChildQueue": queue}
    )
    _record_stuck(rows, pull, queue=queue, step=engine.PULL_WORK, now=now)
    decision_id = _store_pull(
        queue=queue, pull=pull, elements=elements, slots=slots, step=engine.PULL_WORK, now=now, seed=seed, config=config
    )
    return {
        "pulled": len(moved),
        "lost": len(site_of) - len(moved),
        "jobs": pull.jobs_taken,
        "left": len(pull.rejected),
        "decision": decision_id,
    }


@transaction.atomic
def work_replicate(*, queue_id: int, now: datetime) -> int:
    """Seed 004, "From GQ to LQ" steps 4–5: the global elements this local queue negotiated are copied to its inbox
    (same element id), split into its queue (Available), and the inbox copy and the global element become Acquired.
    Returns the elements copied."""
    queue = WMCoreQueue.objects.get(pk=queue_id, kind="local")
    known = WMCoreElement.objects.filter(queue=queue, database="inbox").values_list("element_id", flat=True)
    originals = list(
        WMCoreElement.objects.filter(database="queue", ChildQueue=queue, Status="Negotiating")
        .exclude(queue=queue)
        .exclude(element_id__in=known)
    )
    if not originals:
        return 0
    copies = []
    for original in originals:
        for database, status in (("inbox", "Negotiating"), ("queue", "Available")):
            copy = WMCoreElement(
                queue=queue,
                database=database,
                element_id=original.element_id,
                request_id=original.request_id,
                Status=status,
                Priority=original.Priority,
                Jobs=original.Jobs,
                Inputs=original.Inputs,
                ParentData=original.ParentData,
                PileupData=original.PileupData,
                SiteWhitelist=original.SiteWhitelist,
                SiteBlacklist=original.SiteBlacklist,
                NoInputUpdate=original.NoInputUpdate,
                NoPileupUpdate=original.NoPileupUpdate,
                site=original.site,
                CreationTime=original.CreationTime,
                UpdateTime=now,
            )
            copies.append(copy)
    created = WMCoreElement.objects.bulk_create(copies, batch_size=1000)
    WMCoreElementStatusLog.objects.bulk_create(
        WMCoreElementStatusLog(
            element=row, timestamp=now, old_status="", new_status=row.Status, reason="replicated", actor=ACTOR_LOCAL
        )
        for row in created
    )
    inbox = [row.pk for row in created if row.database == "inbox"]
    status_transition_many(
        model=WMCoreElement,
        ids=inbox,
        from_status="Negotiating",
        to_status="Acquired",
        reason="split into the queue",
        actor=ACTOR_LOCAL,
        now=now,
    )
    status_transition_many(
        model=WMCoreElement,
        ids=[original.pk for original in originals],
        from_status="Negotiating",
        to_status="Acquired",
        reason=f"replicated to {queue.name}",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    return len(originals)


def _propagate(*, element_ids: list[str], from_status: str, to_status: str, reason: str, actor: str, now) -> None:
    """Moves every copy of these elements (global queue, local inbox) that is in `from_status`."""
    copies = WMCoreElement.objects.filter(element_id__in=element_ids, Status=from_status).values_list("pk", flat=True)
    status_transition_many(
        model=WMCoreElement,
        ids=list(copies),
        from_status=from_status,
        to_status=to_status,
        reason=reason,
        actor=actor,
        now=now,
    )


def _job_sites(element: engine.Element, known_sites: Iterable[str]) -> list[str]:
    restriction = engine.possible_sites(element)
    if restriction.sites is None:
        blocked = set(element.blacklist)
        return sorted(site for site in known_sites if site not in blocked)
    return sorted(restriction.sites)


@transaction.atomic
def work_get(*, queue_id: int, now: datetime, seed: int | None = None) -> dict[str, Any]:
    """getWork (seed 004, "From LQ to WMBS"): the local queue's Available elements are matched against its Normal and
    Draining sites with running jobs subtracted; each one taken gets a WMBS subscription at the chosen site and its
    jobs (created, with the element's possible sites), and becomes Running in every queue; its request becomes
    running-open."""
    queue = WMCoreQueue.objects.select_for_update().get(pk=queue_id, kind="local")
    config = _config_snapshot()
    seed = _seed_for(now, queue) + 500 if seed is None else seed
    rows = _element_rows(
        WMCoreElement.objects.filter(queue=queue, database="queue", Status="Available"),
        "request_id",
        "request__TaskType",
    )
    reader = _ElementReader()
    elements = [reader.element(row) for row in rows]
    resources = wmcore_site_resources(queue=queue)
    slots = engine.free_slots(resources, step=engine.GET_WORK)
    pull = engine.match_work(elements, slots, wmcore_site_jobs(queue=queue, step=engine.GET_WORK), seed=seed)
    row_of = {row["element_id"]: row for row in rows}
    _, moved = _take(rows, pull, to_status="Running", reason=f"WMBS subscription at {queue.name}", now=now)
    moved = set(moved)
    known_sites = [site.name for site in resources]
    taken = [(element, site) for element, site in pull.taken if row_of[element.id]["pk"] in moved]
    subscriptions = WMBSSubscription.objects.bulk_create(
        [
            WMBSSubscription(
                queue=queue,
                element_id=row_of[element.id]["pk"],
                request_id=row_of[element.id]["request_id"],
                task_type=row_of[element.id]["request__TaskType"],
                site=site,
                created=now,
            )
            for element, site in taken
        ],
        batch_size=1000,
    )
    if subscriptions and subscriptions[0].pk is None:  # databases that do not return ids from bulk inserts
        subscriptions = list(WMBSSubscription.objects.filter(element_id__in=[s.element_id for s in subscriptions]))
    by_element = {subscription.element_id: subscription for subscription in subscriptions}
    jobs = []
    for element, _ in taken:
        row = row_of[element.id]
        possible = _job_sites(element, known_sites)
        jobs += [
            WMBSJob(
                subscription=by_element[row["pk"]],
                state="created",
                priority=element.priority,
                task_type=row["request__TaskType"],
                possible_sites=possible,
                state_time=now,
            )
            for _ in range(element.jobs)
        ]
    WMBSJob.objects.bulk_create(jobs, batch_size=2000)
    started = [element.id for element, _ in taken]
    for from_status in ("Acquired", "Negotiating"):
        _propagate(
            element_ids=started,
            from_status=from_status,
            to_status="Running",
            reason=f"running at {queue.name}",
            actor=ACTOR_LOCAL,
            now=now,
        )
    request_ids = {row_of[element.id]["request_id"] for element in (e for e, _ in taken)}
    inbox = WMCoreElement.objects.filter(request_id__in=request_ids, database="inbox", queue__kind="global")
    status_transition_many(
        model=WMCoreElement,
        ids=list(inbox.filter(Status="Acquired").values_list("pk", flat=True)),
        from_status="Acquired",
        to_status="Running",
        reason="first work running",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    status_transition_many(
        model=WMCoreRequest,
        ids=request_ids,
        from_status="acquired",
        to_status="running-open",
        reason="first jobs created",
        actor=ACTOR_LOCAL,
        now=now,
    )
    _record_stuck(rows, pull, queue=queue, step=engine.GET_WORK, now=now)
    decision_id = _store_pull(
        queue=queue, pull=pull, elements=elements, slots=slots, step=engine.GET_WORK, now=now, seed=seed, config=config
    )
    return {"subscriptions": len(subscriptions), "jobs": len(jobs), "left": len(pull.rejected), "decision": decision_id}


# --- 4. and 5. the JobSubmitter -------------------------------------------------------------------------------


def _cache_due(queue: WMCoreQueue, size: int, config: Mapping[str, Any], now: datetime) -> bool:
    """Seed 004: the cache holds up to 30,000 jobs and is refreshed periodically (~20 min): refilled while smaller
    than WMCORE_CACHE_REFRESH_SIZE, and anyway when the last refresh is WMCORE_CACHE_REFRESH_MINUTES old."""
    if size < int(config["WMCORE_CACHE_REFRESH_SIZE"]) or queue.cache_refreshed is None:
        return True
    return now - queue.cache_refreshed >= timedelta(minutes=int(config["WMCORE_CACHE_REFRESH_MINUTES"]))


@transaction.atomic
def job_submitter_cache_refresh(*, queue_id: int, now: datetime, force: bool = False) -> dict[str, int]:
    """WMBS → JobSubmitter cache: when due, drops entries whose job left `created` and adds created jobs not yet
    cached, highest priority first, up to WMCORE_MAX_JOBS_TO_CACHE read per refresh."""
    queue = WMCoreQueue.objects.select_for_update().get(pk=queue_id, kind="local")
    config = _config_snapshot()
    entries = JobSubmitterCacheEntry.objects.filter(queue=queue)
    size = entries.count()
    if not force and not _cache_due(queue, size, config, now):
        return {"refreshed": 0, "added": 0, "dropped": 0, "size": size}
    dropped, _ = entries.exclude(job__state="created").delete()
    new = list(
        WMBSJob.objects.filter(subscription__queue=queue, state="created", cache_entry__isnull=True)
        .order_by("-priority", "pk")
        .values("pk", "priority", "task_type", "possible_sites")[: int(config["WMCORE_MAX_JOBS_TO_CACHE"])]
    )
    JobSubmitterCacheEntry.objects.bulk_create(
        [
            JobSubmitterCacheEntry(
                queue=queue,
                job_id=job["pk"],
                priority=job["priority"],
                task_type=job["task_type"],
                possible_sites=job["possible_sites"],
                cached=now,
            )
            for job in new
        ],
        batch_size=2000,
    )
    queue.cache_refreshed = now
    queue.save(update_fields=["cache_refreshed"])
    return {"refreshed": 1, "added": len(new), "dropped": dropped, "size": size - dropped + len(new)}


@transaction.atomic
def job_submitter_run(*, queue_id: int, now: datetime) -> dict[str, Any]:
    """cache → pool (seed 004, "JobSubmitter Cache to GlideIn"): nothing when the schedd limit is reached; else the
    cache (refreshed when due) is matched to the sites' thresholds by job type, highest priority first, with the
    overflow for higher-priority jobs; the jobs sent become executing (Idle) at their site and leave the cache. The
    conditions met are stored per site and type (JobSubmitterReport) and on each job left waiting."""
    queue = WMCoreQueue.objects.select_for_update().get(pk=queue_id, kind="local")
    config = _config_snapshot()
    free = schedd_free(queue=queue, config=config)
    limit = max(0, min(free, int(config["WMCORE_MAX_JOBS_PER_POLL"]))) if queue.enabled else 0
    refresh = job_submitter_cache_refresh(queue_id=queue_id, now=now)
    entries = list(
        JobSubmitterCacheEntry.objects.filter(queue=queue, job__state="created").values(
            "pk", "job_id", "priority", "task_type", "possible_sites", "waiting_reason"
        )
    )
    cached = [
        engine.CachedJob(e["job_id"], e["priority"], e["task_type"], tuple(e["possible_sites"] or ())) for e in entries
    ]
    result = engine.assign_locations(
        cached,
        wmcore_submit_sites(queue=queue),
        wmcore_site_loads(queue=queue),
        overflow_fraction=float(config["WMCORE_OVERFLOW_FRACTION"]),
        limit=limit,
    )
    by_site: dict[str, list[int]] = defaultdict(list)
    for job_id, site in result.submitted:
        by_site[site].append(job_id)
    submitted = 0
    for site, job_ids in by_site.items():
        submitted += len(
            status_transition_many(
                model=WMBSJob,
                ids=job_ids,
                from_status="created",
                to_status="executing",
                reason="",
                actor=ACTOR_SUBMITTER,
                now=now,
                columns={"location": site, "batch_status": "Idle"},
            )
        )
    JobSubmitterCacheEntry.objects.filter(queue=queue, job_id__in=[job_id for job_id, _ in result.submitted]).delete()
    changed = [
        (entry["pk"], result.waiting[entry["job_id"]][0])
        for entry in entries
        if entry["job_id"] in result.waiting and entry["waiting_reason"] != result.waiting[entry["job_id"]][0]
    ]
    bulk_update_values(JobSubmitterCacheEntry, fields=("waiting_reason",), rows=changed)
    if limit <= 0 and entries:
        result.conditions[("(schedd)", "all", "schedd_limit")] = len(entries)
    JobSubmitterReport.objects.bulk_create(
        JobSubmitterReport(queue=queue, at=now, site=site, task_type=task_type, condition=condition, count=count)
        for (site, task_type, condition), count in sorted(result.conditions.items())
    )
    return {"submitted": submitted, "waiting": len(result.waiting), "limit": limit, "schedd_free": free, **refresh}


# --- locations, reset, progress ----------------------------------------------------------------------------------


@transaction.atomic
def element_locations_update(*, now: datetime) -> int:
    """Seed 004, "Input data (block) location update": the input, parent and pileup locations of every Available
    element (global and local queues) are read again from the block replicas; returns the elements changed."""
    # the global queues' locks keep pulls (which write on Available elements too) out meanwhile
    list(WMCoreQueue.objects.select_for_update().filter(kind="global").order_by("pk").values_list("pk", flat=True))
    rows = list(WMCoreElement.objects.filter(Status="Available").values("pk", "Inputs", "ParentData", "PileupData"))
    names = {name for row in rows for field in ("Inputs", "ParentData") for name in (row[field] or {})}
    pileups = {name for row in rows for name in (row["PileupData"] or {})}
    where = {
        name: sorted(sites) for name, sites in WMCoreBlock.objects.filter(name__in=names).values_list("name", "sites")
    }
    pileup_sites: dict[str, set[str]] = defaultdict(set)
    for dataset, sites in WMCoreBlock.objects.filter(dataset__in=pileups).values_list("dataset", "sites"):
        pileup_sites[dataset].update(sites)
    changed = []
    for row in rows:
        inputs = {name: where.get(name, sites) for name, sites in (row["Inputs"] or {}).items()}
        parents = {name: where.get(name, sites) for name, sites in (row["ParentData"] or {}).items()}
        pileup = {
            name: sorted(pileup_sites[name]) if name in pileup_sites else sites
            for name, sites in (row["PileupData"] or {}).items()
        }
        if (inputs, parents, pileup) != (row["Inputs"], row["ParentData"], row["PileupData"]):
            changed.append((row["pk"], inputs, parents, pileup, now))
    bulk_update_values(WMCoreElement, fields=("Inputs", "ParentData", "PileupData", "UpdateTime"), rows=changed)
    WMCoreQueue.objects.update(locations_updated=now)
    return len(changed)


class ResetRefused(ValueError):
    """An element that is not Negotiating or Acquired, or whose work already runs, cannot go back."""


@transaction.atomic
def element_reset(*, element_pk: int, actor: str, reason: str, now: datetime) -> WMCoreElement:
    """The one way back (REFERENCE.md: statuses never move backwards except by an explicit reset): a global element
    Negotiating or Acquired by a local queue returns to Available, its local copies (not yet running) are removed,
    and the move is logged with who asked and why."""
    element = WMCoreElement.objects.select_for_update().get(pk=element_pk)
    if element.queue.kind != "global" or element.database != "queue":
        raise ResetRefused("only a global-queue element can be reset; its local copies follow it")
    if element.Status not in ELEMENT_HELD:
        raise ResetRefused(f"the element is {element.Status}; only Negotiating or Acquired elements can be reset")
    copies = WMCoreElement.objects.filter(element_id=element.element_id).exclude(pk=element.pk)
    if copies.filter(Status__in=("Running", "Done")).exists():
        raise ResetRefused("its work is already running in a local queue")
    copies.delete()
    old = element.Status
    WMCoreElement.objects.filter(pk=element.pk).update(
        Status="Available",
        ChildQueue=None,
        site="",
        UpdateTime=now,
        stuck_reason="",
        stuck_detail={},
        stuck_digest="",
        stuck_since=None,
    )
    WMCoreElementStatusLog.objects.create(
        element=element, timestamp=now, old_status=old, new_status="Available", reason=f"reset: {reason}", actor=actor
    )
    element.refresh_from_db()
    return element


class AbortRefused(ValueError):
    """A request that is already over (or not yet assigned work) cannot be aborted."""


ABORTABLE = ("assigned", "staging", "staged", "acquired", "running-open", "running-closed")
KILLABLE = tuple(state for state in states.WMBS_JOB_ACTIVE if states.WMBS_JOB.is_allowed(state, "killed"))


@transaction.atomic
def request_abort(*, request_id: int, actor: str, reason: str, now: datetime) -> WMCoreRequest:
    """An operator aborts a request: it becomes aborted and every element of it not over, in every queue, becomes
    CancelRequested; `element_cancel` then kills the jobs and ends them Canceled."""
    request = WMCoreRequest.objects.select_for_update().get(pk=request_id)
    if request.RequestStatus not in ABORTABLE:
        raise AbortRefused(f"the request is {request.RequestStatus}; only {', '.join(ABORTABLE)} can be aborted")
    status_transition_many(
        model=WMCoreRequest,
        ids=[request.pk],
        from_status=request.RequestStatus,
        to_status="aborted",
        reason=reason,
        actor=actor,
        now=now,
    )
    live = WMCoreElement.objects.filter(request=request, Status__in=("Available", "Negotiating", "Acquired", "Running"))
    for status, ids in _ids_by_status(live).items():
        status_transition_many(
            model=WMCoreElement,
            ids=ids,
            from_status=status,
            to_status="CancelRequested",
            reason=f"request aborted: {reason}",
            actor=actor,
            now=now,
        )
    request.refresh_from_db()
    return request


def _ids_by_status(queryset) -> dict[str, list[int]]:
    """The rows' ids grouped by their current status (a move needs one source status)."""
    grouped: dict[str, list[int]] = defaultdict(list)
    for pk, status in queryset.values_list("pk", queryset.model.STATUS_FIELD):
        grouped[status].append(pk)
    return grouped


@transaction.atomic
def element_cancel(*, now: datetime) -> dict[str, int]:
    """CancelRequested elements end: their WMBS jobs not over are killed (and leave the JobSubmitter cache), the
    elements become Canceled everywhere, and an aborted request whose elements are all over is aborted-completed."""
    cancelling = list(WMCoreElement.objects.filter(Status="CancelRequested").values_list("pk", flat=True))
    jobs = WMBSJob.objects.filter(subscription__element_id__in=cancelling)
    killed = 0
    for state, ids in _ids_by_status(jobs.filter(state__in=KILLABLE)).items():
        killed += len(
            status_transition_many(
                model=WMBSJob,
                ids=ids,
                from_status=state,
                to_status="killed",
                reason="request aborted",
                actor=ACTOR_LOCAL,
                now=now,
                columns={"batch_status": ""},
            )
        )
    JobSubmitterCacheEntry.objects.filter(job__in=jobs).delete()
    canceled = status_transition_many(
        model=WMCoreElement,
        ids=cancelling,
        from_status="CancelRequested",
        to_status="Canceled",
        reason="jobs killed",
        actor=ACTOR_LOCAL,
        now=now,
    )
    over = states.WMCORE_ELEMENT.final
    finished = [
        row["pk"]
        for row in WMCoreRequest.objects.filter(RequestStatus="aborted")
        .annotate(n=Count("elements"), over=Count("elements", filter=models.Q(elements__Status__in=over)))
        .values("pk", "n", "over")
        if row["n"] == row["over"]
    ]
    completed = status_transition_many(
        model=WMCoreRequest,
        ids=finished,
        from_status="aborted",
        to_status="aborted-completed",
        reason="every element over",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    return {"killed": killed, "canceled": len(canceled), "aborted_completed": len(completed)}


@transaction.atomic
def wmcore_progress_update(*, now: datetime) -> dict[str, int]:
    """Statuses that follow the jobs: an element whose WMBS jobs are all over is Done (Failed when none succeeded)
    everywhere; a request is running-closed once none of its elements waits to run, completed once all are over,
    and its inbox element then Done."""
    finished = states.WMBS_JOB.final | {"success", "exhausted", "killed", "retrydone"}
    subscriptions = (
        WMBSSubscription.objects.filter(finished__isnull=True)
        .annotate(total=Count("jobs"), over=Count("jobs", filter=models.Q(jobs__state__in=finished)))
        .annotate(good=Count("jobs", filter=models.Q(jobs__state__in=("success", "cleanout"))))
        .values("pk", "element__element_id", "total", "over", "good")
    )
    done, failed, closed = [], [], []
    for row in subscriptions:
        if row["total"] and row["over"] == row["total"]:
            (done if row["good"] else failed).append(row["element__element_id"])
            closed.append(row["pk"])
    WMBSSubscription.objects.filter(pk__in=closed).update(finished=now)
    for element_ids, to_status in ((done, "Done"), (failed, "Failed")):
        _propagate(
            element_ids=element_ids,
            from_status="Running",
            to_status=to_status,
            reason="jobs over",
            actor=ACTOR_LOCAL,
            now=now,
        )
    waiting = ("Available", "Negotiating", "Acquired")
    over = states.WMCORE_ELEMENT.final
    summary = {"elements_done": len(done), "elements_failed": len(failed), "running_closed": 0, "completed": 0}
    requests = WMCoreRequest.objects.filter(RequestStatus__in=("running-open", "running-closed"))
    elements = (
        WMCoreElement.objects.filter(request__in=requests, database="queue", queue__kind="global")
        .values("request_id")
        .annotate(
            n=Count("pk"),
            waiting=Count("pk", filter=models.Q(Status__in=waiting)),
            over=Count("pk", filter=models.Q(Status__in=over)),
        )
    )
    status_of = dict(requests.values_list("pk", "RequestStatus"))
    to_close, to_complete = [], []
    for row in elements:
        status = status_of[row["request_id"]]
        if row["over"] == row["n"]:
            to_complete.append((row["request_id"], status))
        elif status == "running-open" and row["waiting"] == 0:
            to_close.append(row["request_id"])
    summary["running_closed"] = len(
        status_transition_many(
            model=WMCoreRequest,
            ids=to_close,
            from_status="running-open",
            to_status="running-closed",
            reason="no element waits",
            actor=ACTOR_GLOBAL,
            now=now,
        )
    )
    for from_status in ("running-open", "running-closed"):
        ids = [pk for pk, status in to_complete if status == from_status]
        summary["completed"] += len(
            status_transition_many(
                model=WMCoreRequest,
                ids=ids,
                from_status=from_status,
                to_status="completed",
                reason="every element over",
                actor=ACTOR_GLOBAL,
                now=now,
            )
        )
    inbox = WMCoreElement.objects.filter(
        request_id__in=[pk for pk, _ in to_complete], database="inbox", Status="Running"
    )
    status_transition_many(
        model=WMCoreElement,
        ids=list(inbox.values_list("pk", flat=True)),
        from_status="Running",
        to_status="Done",
        reason="request completed",
        actor=ACTOR_GLOBAL,
        now=now,
    )
    return summary


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
