"""What every stage shares: the actors, the parameters a pull reads, element rows, the stuck reasons written
on the elements, the taking of elements and the storing of a pull's decision."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from brokerage.engine import TraceBase
from brokerage.engine.wmcore.elements import Element, possible_sites
from brokerage.engine.wmcore.job_submitter import schedd_free_slots
from brokerage.engine.wmcore.matching import Pull
from brokerage.engine.wmcore.plugin import pull_decision
from brokerage.models import (
    DecisionTrace,
    WMBSJob,
    WMCoreElement,
    WMCoreQueue,
)
from brokerage.selectors.wmcore import wmcore_jobs_in_pool
from brokerage.services.bulk import bulk_update_values
from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_store_many
from brokerage.services.status import status_transition_many

ACTOR_GLOBAL = "global workqueue"
ACTOR_LOCAL = "local workqueue"
ACTOR_SUBMITTER = "jobsubmitter"
# Stuck elements whose reason keeps its numbers on the row, highest priority first (the monitor lists the first 50).
STUCK_DETAILED = 1000


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


def schedd_free(*, queue: WMCoreQueue, config: Mapping[str, Any], for_pull: bool = False) -> int:
    """MAX_JOBS_PER_OWNER × factor minus the agent's jobs in the pool (seed 004); pullWork's factor is
    WMCORE_PULL_SCHEDD_FRACTION, the JobSubmitter's WMCORE_SCHEDD_FRACTION."""
    return schedd_free_slots(
        max_jobs_per_owner=int(config["WMCORE_MAX_JOBS_PER_OWNER"]),
        fraction=float(config["WMCORE_PULL_SCHEDD_FRACTION" if for_pull else "WMCORE_SCHEDD_FRACTION"]),
        jobs_in_schedd=wmcore_jobs_in_pool(queue=queue),
    )


def _digest(detail: Mapping[str, Any]) -> str:
    return hashlib.blake2b(json.dumps(detail, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()


def stuck_record(
    entries: Mapping[str, Any], pull: Pull, *, queue: WMCoreQueue, step: str, now
) -> dict[int, tuple[str, str]]:
    """Writes each element's reason for staying (taken ones were cleared by their move). The numbers go with the
    reason for the STUCK_DETAILED highest-priority elements (what the monitor lists); every element's numbers are
    in the pull's decision trace. A row is written only when its reason or numbers changed (compared by digest),
    `stuck_since` only when the reason did: a steady queue of stuck elements costs no write. `entries` are the
    snapshot's, by element id (anything with pk, stuck_reason and stuck_digest). Returns pk → (reason, digest) of
    the rows written."""
    bare = {"queue": queue.name, "step": step}
    bare_digest = _digest(bare)
    new_reason, new_numbers = [], []
    by_pk: dict[int, str] = {}
    detailed = 0
    rejected = pull.rejected
    for element_id in pull.order:
        found = rejected.get(element_id)
        if found is None:
            continue
        code, detail = found
        detailed += 1
        if detailed <= STUCK_DETAILED:
            full = {**bare, **detail}
            digest = _digest(full)
        else:
            full, digest = bare, bare_digest
        entry = entries[element_id]
        if entry.stuck_reason != code:
            new_reason.append((entry.pk, code, full, digest, now))
        elif entry.stuck_digest != digest:
            new_numbers.append((entry.pk, full, digest))
            by_pk[entry.pk] = code
    fields = ("stuck_reason", "stuck_detail", "stuck_digest", "stuck_since")
    bulk_update_values(WMCoreElement, fields=fields, rows=new_reason)
    bulk_update_values(WMCoreElement, fields=("stuck_detail", "stuck_digest"), rows=new_numbers)
    written = {pk: (code, digest) for pk, code, _, digest, _ in new_reason}
    written.update((pk, (by_pk[pk], digest)) for pk, _, digest in new_numbers)
    return written


NOT_STUCK = {"stuck_reason": "", "stuck_detail": {}, "stuck_digest": "", "stuck_since": None}


def elements_take(
    entries: Mapping[str, Any], pull: Pull, *, to_status: str, reason: str, now, columns=None
) -> tuple[dict[str, Any], list[int]]:
    """Moves the elements a match took out of Available, with the site it chose and no stuck reason. Returns the
    taken elements' entries by element id, and the pks moved (an element moved by someone else meanwhile is left
    out)."""
    taken = {element.id: entries[element.id] for element, _ in pull.taken}
    site_of = {taken[element.id].pk: site for element, site in pull.taken}
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
    return taken, moved


# A pull's trace is stored as the change against the previous pull of the same queue and step that this process
# stored (it holds that decision exactly), up to KEYFRAME_EVERY deltas in a row; then, or when the process holds
# none (another worker, a restart), a whole trace. A reader decodes the chain from its whole trace (at most
# KEYFRAME_EVERY − 1 deltas).
KEYFRAME_EVERY = 20
_PULL_BASES: dict[tuple[int, str], tuple[TraceBase, int, bytes]] = {}


# A pull is stored against a base at most this old (a whole trace otherwise): the housekeeping keeps a base as long
# as a kept delta needs it, looking this far back (services.housekeeping.NEEDED_WITHIN).
BASE_AT_MOST = timedelta(hours=12)


def _pull_base(queue: WMCoreQueue, step: str, now: datetime) -> tuple[TraceBase | None, int]:
    found = _PULL_BASES.get((queue.pk, step))
    if found is None:
        return None, 0
    base, depth, digest = found
    if not timedelta(0) <= now - base.decision.now <= BASE_AT_MOST or depth + 1 >= KEYFRAME_EVERY:
        return None, 0
    # the decision must still be stored as this process made it: a rolled-back pull leaves a key that another
    # decision may take (SQLite reuses them, a test database starts again), so its stored trace is compared too
    stored = DecisionTrace.objects.filter(decision_id=base.pk, decision__plugin="wmcore_pull").values_list(
        "trace", flat=True
    )
    blob = stored.first()
    if blob is None or _trace_digest(bytes(blob)) != digest:
        return None, 0
    return base, depth + 1


def pull_bases_forget() -> None:
    """Forgets the pulls later ones would be stored against (a test whose database starts again with the same ids:
    a delta's bytes alone cannot tell its base's names apart)."""
    _PULL_BASES.clear()


def _trace_digest(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=16).digest()


def pull_store(*, queue: WMCoreQueue, pull, elements, slots, step: str, now, seed: int, config, inputs=None) -> int:
    """Stores a pull as a decision of its own cycle; `inputs` (pull_inputs) what it decided on, for replay."""
    decision = pull_decision(pull=pull, elements=elements, slots=slots, step=step, now=now, seed=seed, queue=queue.name)
    base, depth = _pull_base(queue, step, now)
    shared, own = inputs if inputs is not None else (None, None)
    cycle = cycle_start(
        plugin="wmcore_pull", now=now, gdpconfig={**config, "queue": queue.name, "step": step}, inputs=shared
    )
    stored = decision_store_many(cycle=cycle, items=[DecisionToStore(decision, trace_base=base, inputs=own)])
    cycle_finish(cycle=cycle, now=now)
    _PULL_BASES[(queue.pk, step)] = (TraceBase(stored[0].pk, decision), depth, _trace_digest(stored[0].trace_blob))
    return stored[0].pk


def pull_seed(now: datetime, queue: WMCoreQueue) -> int:
    return int(now.timestamp()) * 1000 + queue.pk % 1000


def propagate(*, element_ids: list[str], from_status: str, to_status: str, reason: str, actor: str, now) -> None:
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


def job_sites(element: Element, known_sites: Iterable[str]) -> list[str]:
    restriction = possible_sites(element)
    if restriction.sites is None:
        blocked = set(element.blacklist)
        return sorted(site for site in known_sites if site not in blocked)
    return sorted(restriction.sites)


def ids_by_status(queryset) -> dict[str, list[int]]:
    """The rows' ids grouped by their current status (a move needs one source status)."""
    grouped: dict[str, list[int]] = defaultdict(list)
    for pk, status in queryset.values_list("pk", queryset.model.STATUS_FIELD):
        grouped[status].append(pk)
    return grouped
