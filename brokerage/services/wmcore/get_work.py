"""Stage 3, local queue → WMBS: `work_get` (getWork) matches the local queue's elements against Normal and
Draining sites and makes a WMBS subscription and its jobs for each element taken."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from brokerage.adapters.wmcore import pull_inputs
from brokerage.engine.wmcore.elements import GET_WORK, PullRules
from brokerage.engine.wmcore.matching import free_slots, match_work
from brokerage.models import (
    WMBSJob,
    WMBSSubscription,
    WMCoreElement,
    WMCoreQueue,
    WMCoreRequest,
)
from brokerage.selectors.wmcore import config_snapshot, wmcore_requests_closed, wmcore_site_jobs, wmcore_site_resources
from brokerage.services.status import status_transition_many

from .common import (
    ACTOR_GLOBAL,
    ACTOR_LOCAL,
    elements_take,
    job_sites,
    propagate,
    pull_seed,
    pull_store,
    stuck_record,
)
from .snapshot import element_snapshot


@transaction.atomic
def work_get(*, queue_id: int, now: datetime, seed: int | None = None) -> dict[str, Any]:
    """getWork (seed 004, "From LQ to WMBS"): the local queue's Available elements are matched against its Normal and
    Draining sites with running jobs subtracted; each one taken gets a WMBS subscription at the chosen site and its
    jobs (created, with the element's possible sites), and becomes Running in every queue; its request becomes
    running-open."""
    queue = WMCoreQueue.objects.select_for_update(no_key=True).get(pk=queue_id, kind="local")
    config = config_snapshot()
    rules = PullRules.from_config(config)
    seed = pull_seed(now, queue) + 500 if seed is None else seed
    snapshot = element_snapshot(queue_id=queue.pk)
    with snapshot.held() as entries:
        elements = [entry.element for entry in entries.values()]
        resources = wmcore_site_resources(queue=queue)
        slots = free_slots(resources, step=GET_WORK, rules=rules)
        site_jobs = wmcore_site_jobs(queue=queue, step=GET_WORK)
        closed = wmcore_requests_closed()
        pull = match_work(
            elements,
            slots,
            site_jobs,
            seed=seed,
            rules=rules,
            team=queue.team,
            exclude_workflows=closed,
            memo=snapshot.memo(GET_WORK),
        )
        reason = f"WMBS subscription at {queue.name}"
        row_of, moved = elements_take(entries, pull, to_status="Running", reason=reason, now=now)
        snapshot.note_written(stuck_record(entries, pull, queue=queue, step=GET_WORK, now=now))
    moved = set(moved)
    taken = [(element, site) for element, site in pull.taken if row_of[element.id].pk in moved]
    subscriptions, jobs = _wmbs_work_create(
        queue, taken, row_of, known_sites=[site.name for site in resources], now=now
    )
    _work_running_mark(queue, taken, row_of, now=now)
    inputs = pull_inputs(
        elements=elements,
        sites=resources,
        site_jobs=site_jobs,
        schedd_free_slots=None,
        team=queue.team,
        exclude_workflows=closed,
        step=GET_WORK,
        seed=seed,
        now=now,
        config=config,
    )
    decision_id = pull_store(
        queue=queue,
        pull=pull,
        elements=elements,
        slots=slots,
        step=GET_WORK,
        now=now,
        seed=seed,
        config=config,
        inputs=inputs,
    )
    return {"subscriptions": len(subscriptions), "jobs": len(jobs), "left": len(pull.rejected), "decision": decision_id}


def _wmbs_work_create(queue: WMCoreQueue, taken, row_of, *, known_sites: list[str], now: datetime):
    """A WMBS subscription per element taken, at its site, and its jobs (wmbs_jobs_plan); bulk inserts."""
    task_type = dict(
        WMCoreRequest.objects.filter(pk__in={row_of[e.id].request_id for e, _ in taken}).values_list("pk", "TaskType")
    )
    subscriptions = WMBSSubscription.objects.bulk_create(
        [
            WMBSSubscription(
                queue=queue,
                element_id=row_of[element.id].pk,
                request_id=row_of[element.id].request_id,
                task_type=task_type[row_of[element.id].request_id],
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
    jobs = wmbs_jobs_plan(taken, row_of, by_element, task_type, known_sites=known_sites, now=now)
    WMBSJob.objects.bulk_create(jobs, batch_size=2000)
    return subscriptions, jobs


def wmbs_jobs_plan(taken, row_of, by_element, task_type, *, known_sites: list[str], now: datetime) -> list[WMBSJob]:
    """The jobs of the elements taken (no query): each element's number of jobs, created, at its priority, with
    the sites the element may run at among the known ones (job_sites)."""
    jobs = []
    for element, _ in taken:
        row = row_of[element.id]
        possible = job_sites(element, known_sites)
        jobs += [
            WMBSJob(
                subscription=by_element[row.pk],
                state="created",
                priority=element.priority,
                task_type=task_type[row.request_id],
                possible_sites=possible,
                state_time=now,
            )
            for _ in range(element.jobs)
        ]
    return jobs


def _work_running_mark(queue: WMCoreQueue, taken, row_of, *, now: datetime) -> None:
    """The elements taken become Running in every queue, their requests' inbox elements too, and the requests
    running-open."""
    started = [element.id for element, _ in taken]
    for from_status in ("Acquired", "Negotiating"):
        propagate(
            element_ids=started,
            from_status=from_status,
            to_status="Running",
            reason=f"running at {queue.name}",
            actor=ACTOR_LOCAL,
            now=now,
        )
    request_ids = {row_of[element.id].request_id for element, _ in taken}
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
