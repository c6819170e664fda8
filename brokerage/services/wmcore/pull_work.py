"""Stage 2, global → local queue: `work_pull` (pullWork) matches the global queue's Available elements against an
agent's Normal sites and takes what fits."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db import transaction

from brokerage.adapters.wmcore import pull_inputs
from brokerage.engine.wmcore.elements import PULL_WORK, PullRules
from brokerage.engine.wmcore.matching import Slots, free_slots, match_work
from brokerage.models import WMCoreQueue
from brokerage.selectors.wmcore import config_snapshot, wmcore_site_jobs, wmcore_site_resources

from .common import elements_take, pull_seed, pull_store, schedd_free, stuck_record
from .snapshot import element_snapshot


@transaction.atomic
def work_pull(*, queue_id: int, now: datetime, seed: int | None = None) -> dict[str, Any]:
    """pullWork (seed 004, "From GQ to LQ" steps 1–3): the local queue matches the global queue's Available elements
    against its Normal sites (pending + running slots), and takes what fits: element → Negotiating, ChildQueue set,
    the chosen site kept. The agent's row and its global queue's row are locked: one pull at a time per global queue,
    and the move re-checks each element's status, so no element is taken twice."""
    queue = WMCoreQueue.objects.select_for_update(no_key=True).get(pk=queue_id, kind="local")
    # one pull at a time per global queue: agents compete for the same elements and write their reasons on them
    WMCoreQueue.objects.select_for_update(no_key=True).get(pk=queue.parent_id)
    config = config_snapshot()
    rules = PullRules.from_config(config)
    seed = pull_seed(now, queue) if seed is None else seed
    snapshot = element_snapshot(queue_id=queue.parent_id)
    with snapshot.held() as entries:
        elements = [entry.element for entry in entries.values()]
        sites = wmcore_site_resources(queue=queue)
        slots = free_slots(sites, step=PULL_WORK, rules=rules)
        free = schedd_free(queue=queue, config=config, for_pull=True) if queue.enabled else 0
        if config["WMCORE_PULL_COUNTS"] == "wmcore":
            site_jobs = _local_available_counts(queue=queue, slots=slots, rules=rules, seed=seed)
        else:
            site_jobs = wmcore_site_jobs(queue=queue, step=PULL_WORK)
        pull = match_work(
            elements,
            slots,
            site_jobs,
            seed=seed,
            schedd_free=free,
            rules=rules,
            team=queue.team,
            memo=snapshot.memo(f"{PULL_WORK} {queue.pk}"),
        )
        reason = f"pulled by {queue.name}"
        taken, moved = elements_take(
            entries, pull, to_status="Negotiating", reason=reason, now=now, columns={"ChildQueue": queue}
        )
        snapshot.note_written(stuck_record(entries, pull, queue=queue, step=PULL_WORK, now=now))
        decision_id = pull_store(
            queue=queue,
            pull=pull,
            elements=elements,
            slots=slots,
            step=PULL_WORK,
            now=now,
            seed=seed,
            config=config,
            inputs=pull_inputs(
                elements=elements,
                sites=sites,
                site_jobs=site_jobs,
                schedd_free_slots=free,
                team=queue.team,
                step=PULL_WORK,
                seed=seed,
                now=now,
                config=config,
            ),
        )
    return {
        "pulled": len(moved),
        "lost": len(taken) - len(moved),
        "jobs": pull.jobs_taken,
        "left": len(pull.rejected),
        "decision": decision_id,
    }


def _local_available_counts(*, queue: WMCoreQueue, slots: Slots, rules: PullRules, seed: int):
    """What today's pullWork counts at each site (WorkQueue.freeResouceCheck → calculateAvailableWork): the local
    queue's Available elements placed by the same match against the pull's thresholds, every element read in one
    sort, no cap, from empty counts; WMBS jobs are not counted."""
    snapshot = element_snapshot(queue_id=queue.pk)
    with snapshot.held() as entries:
        local = [entry.element for entry in entries.values()]
        whole = replace(rules, order="seed", work_per_cycle=0)
        return match_work(local, slots, {}, seed=seed + 1, rules=whole, memo=snapshot.memo("counts")).counted
