"""The incremental pull (issue 19): pullWork and getWork read only the rows that changed since the process's last
pull, keep the possible sites of unchanged elements, write only changed reasons and store the trace as the change
against the previous pull's — and decide exactly as a full pull would.

Each round changes the world the way agents and operators do (new requests, priorities and teams edited with a
bare UPDATE, locations updated, slots and site states changed, work put back or deleted, the other agent pulling
and writing its own reasons), then runs the same pull twice on the same database: cold (no snapshot, no memo,
a whole trace: what a new worker does) inside a savepoint that is rolled back, and warm (this process's snapshot
and trace chain). Everything a user can see must be equal: the result, the decision and its decoded trace, every
element row, the WMBS subscriptions."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import F

from brokerage.models import Decision, DecisionTrace, WMBSSubscription, WMCoreElement, WMCoreRequest, WMCoreSite
from brokerage.selectors.decisions import decision_trace
from brokerage.services.gdpconfig import gdpconfig_profile_apply
from brokerage.services.wmcore import common, snapshot, work_get, work_pull, work_replicate
from tests import factories

from .conftest import NOW

SITES = [f"T2_XX_S{i:02d}" for i in range(12)]
PRIORITIES = (50000.0, 90000.0, 90000.0, 200000.0)


def base_of(decision) -> int | None:
    """The decision whose trace this one's is stored against."""
    return DecisionTrace.objects.get(decision_id=decision.pk).base_id


def _world(rng: random.Random):
    global_queue = factories.WMCoreGlobalQueueFactory()
    agents = [
        factories.WMCoreQueueFactory(parent=global_queue, team="production"),
        factories.WMCoreQueueFactory(parent=global_queue, team=""),
    ]
    for agent in agents:
        for name in SITES:
            factories.WMCoreSiteFactory(
                queue=agent,
                name=name,
                state=rng.choice(("Normal", "Normal", "Normal", "Draining")),
                pending_slots=rng.randint(0, 40),
                running_slots=rng.randint(0, 80),
            )
    for _ in range(6):
        _arrive(global_queue, rng)
    return global_queue, agents


def _arrive(global_queue, rng: random.Random) -> None:
    """A request of 5–30 block elements: whitelist (sometimes empty), a blacklisted site now and then, blocks at
    0–3 sites, pileup or trust flags for some, priorities and creation times with ties."""
    request = factories.WMCoreRequestFactory(Team=rng.choice(("production", "production", "", "other")))
    whitelist = rng.sample(SITES, rng.randint(3, 9)) if rng.random() < 0.8 else []
    blacklist = rng.sample(SITES, 1) if rng.random() < 0.2 else []
    pileup = {"/PU/A": rng.sample(SITES, 6)} if rng.random() < 0.2 else {}
    trust = rng.random() < 0.15
    created = NOW - timedelta(hours=rng.randint(1, 3))
    for block in range(rng.randint(5, 30)):
        factories.WMCoreElementFactory(
            queue=global_queue,
            request=request,
            Priority=rng.choice(PRIORITIES),
            Jobs=rng.randint(1, 40),
            Inputs={f"/D/{request.pk}#{block}": rng.sample(SITES, rng.choice((0, 1, 2, 3, 3)))},
            PileupData=pileup,
            SiteWhitelist=whitelist,
            SiteBlacklist=blacklist,
            NoInputUpdate=trust,
            blowupFactor=rng.choice((1.0, 1.0, 1.5)),
            CreationTime=created + timedelta(minutes=block // 3),
        )


def _change(rng: random.Random, global_queue, agents, minute: int) -> None:
    """Two to four of the things that happen between two pulls, each written the way its writer writes it."""
    available = WMCoreElement.objects.filter(queue=global_queue, database="queue", Status="Available")
    pks = list(available.values_list("pk", flat=True))
    for change in rng.sample(range(9), rng.randint(2, 4)):
        if change == 0:
            _arrive(global_queue, rng)
        elif change == 1 and pks:  # a priority edited with a bare UPDATE (no UpdateTime)
            WMCoreElement.objects.filter(pk__in=rng.sample(pks, min(5, len(pks)))).update(Priority=300000.0)
        elif change == 2:
            request = rng.choice(sorted(WMCoreRequest.objects.values_list("pk", flat=True)))
            WMCoreRequest.objects.filter(pk=request).update(Team=rng.choice(("production", "", "other")))
        elif change == 3:
            names = rng.sample(SITES, 3)
            WMCoreSite.objects.filter(queue=agents[0], name__in=names).update(running_slots=F("running_slots") + 30)
        elif change == 4:
            site = WMCoreSite.objects.get(queue=agents[0], name=rng.choice(SITES))
            site.state = "Draining" if site.state == "Normal" else "Normal"
            site.save()
        elif change == 5:  # work put back
            WMCoreElement.objects.filter(queue=global_queue, Status="Negotiating").filter(
                pk__in=list(
                    WMCoreElement.objects.filter(queue=global_queue, Status="Negotiating").values_list("pk", flat=True)
                )[:4]
            ).update(Status="Available", ChildQueue=None, site="")
        elif change == 6 and pks:
            WMCoreElement.objects.filter(pk__in=rng.sample(pks, min(3, len(pks)))).delete()
        elif change == 7 and pks:  # a location update
            WMCoreElement.objects.filter(pk=rng.choice(pks)).update(Inputs={"/D/moved#0": rng.sample(SITES, 2)})
        elif change == 8:  # the other agent's pull writes its own reasons on the shared elements
            work_pull(queue_id=agents[1].pk, now=NOW + timedelta(minutes=minute, seconds=30))


def _seen(result: dict) -> tuple:
    """Everything a user can see after a pull, the decision's primary key aside."""
    result = dict(result)
    decision = Decision.objects.get(pk=result.pop("decision"))
    trace = decision_trace(decision=decision)
    rows = list(
        WMCoreElement.objects.order_by("queue_id", "database", "element_id").values_list(
            "element_id",
            "queue_id",
            "database",
            "Status",
            "site",
            "ChildQueue_id",
            "stuck_reason",
            "stuck_detail",
            "stuck_digest",
            "stuck_since",
        )
    )
    subscriptions = sorted(WMBSSubscription.objects.values_list("element__element_id", "site", "task_type"))
    shown = {key: trace[key] for key in ("initial", "candidates", "skipped", "stages", "extra", "by_reason")}
    return result, shown, decision.outcome, decision.message, decision.primary_reason, rows, subscriptions


def _cold_then_warm(pull) -> tuple[tuple, Decision]:
    """The pull run cold (as a new worker: no snapshot, no trace to build on) and rolled back, then warm."""
    kept = (dict(snapshot._SNAPSHOTS), dict(common._PULL_BASES))
    snapshot._SNAPSHOTS.clear()
    common._PULL_BASES.clear()
    point = transaction.savepoint()
    try:
        cold = _seen(pull())
    finally:
        transaction.savepoint_rollback(point)
        snapshot._SNAPSHOTS.clear()
        snapshot._SNAPSHOTS.update(kept[0])
        common._PULL_BASES.clear()
        common._PULL_BASES.update(kept[1])
    result = pull()
    warm = _seen(result)
    assert warm == cold
    return warm, Decision.objects.get(pk=result["decision"])


@pytest.mark.parametrize("profile", ["seed", "wmcore"])
@pytest.mark.parametrize("world_seed", [3, 17, 29])
def test_a_warm_pull_decides_as_a_cold_one_round_after_round(db, profile, world_seed):
    rng = random.Random(world_seed)
    if profile != "seed":
        gdpconfig_profile_apply(profile=profile)
    global_queue, agents = _world(rng)
    agent = agents[0]
    taken = deltas = fewer_read = 0
    for minute in range(8):
        now = NOW + timedelta(minutes=minute)
        if minute:
            _change(rng, global_queue, agents, minute)
        seen, decision = _cold_then_warm(lambda now=now: work_pull(queue_id=agent.pk, now=now))
        taken += seen[0]["pulled"]
        deltas += base_of(decision) is not None
        available = WMCoreElement.objects.filter(queue=global_queue, database="queue", Status="Available").count()
        fewer_read += snapshot.element_snapshot(queue_id=global_queue.pk).last_read < available
        work_replicate(queue_id=agent.pk, now=now)
        seen, _ = _cold_then_warm(lambda now=now: work_get(queue_id=agent.pk, now=now))
        taken += seen[0]["subscriptions"]
    assert taken > 0
    # after the first, every pull in this process is stored as the change against the one before
    assert deltas == 7
    if connection.vendor == "postgresql":  # row versions: only changed rows are read again
        assert fewer_read >= 6


def test_a_row_written_twice_by_one_transaction_is_read_again(db):
    """The whole test runs in one transaction, as a pull inside a longer one would: every bare UPDATE here has the
    same xmin, so the version must also say where the row lies (the ctid) to see the second write."""
    global_queue = factories.WMCoreGlobalQueueFactory()
    agent = factories.WMCoreQueueFactory(parent=global_queue)
    factories.WMCoreSiteFactory(queue=agent, name="T2_XX_S00", pending_slots=0, running_slots=10)
    elements = [
        factories.WMCoreElementFactory(queue=global_queue, Priority=1000.0, Jobs=10, SiteWhitelist=["T2_XX_S00"])
        for _ in range(3)
    ]
    last = elements[-1]
    assert work_pull(queue_id=agent.pk, now=NOW)["pulled"] == 1  # ten slots, ten jobs: full after one
    # a first bare write that leaves its reason as it was: the next pull reads the row and writes nothing on it
    WMCoreElement.objects.filter(pk=last.pk).update(Jobs=12)
    work_pull(queue_id=agent.pk, now=NOW + timedelta(minutes=1))
    # the second write of the same transaction, then the site frees up
    WMCoreElement.objects.filter(pk=last.pk).update(Priority=5000.0)
    WMCoreElement.objects.filter(Status="Negotiating").update(Status="Done")
    seen, _ = _cold_then_warm(lambda: work_pull(queue_id=agent.pk, now=NOW + timedelta(minutes=2)))
    assert [candidate["name"] for candidate in seen[1]["candidates"]] == [last.element_id]


def test_a_whole_trace_starts_each_chain_and_deleting_a_base_takes_its_deltas_traces(db, monkeypatch):
    monkeypatch.setattr(common, "KEYFRAME_EVERY", 3)
    common._PULL_BASES.clear()
    rng = random.Random(5)
    global_queue, agents = _world(rng)
    decisions = []
    for minute in range(5):
        _arrive(global_queue, rng)
        result = work_pull(queue_id=agents[0].pk, now=NOW + timedelta(minutes=minute))
        decisions.append(Decision.objects.get(pk=result["decision"]))
    bases = [base_of(decision) for decision in decisions]
    assert bases == [None, decisions[0].pk, decisions[1].pk, None, decisions[3].pk]
    # each decodes, through its chain, to a trace naming every Available element of its pull
    for decision in decisions:
        trace = decision_trace(decision=decision)
        assert len(trace["skipped"]) + len(trace["candidates"]) == len(trace["initial"]) == decision.n_candidates
    decisions[0].delete()  # its trace goes, and the traces built on it (the deltas' rows stay, their traces expired)
    assert set(DecisionTrace.objects.values_list("decision_id", flat=True)) == {d.pk for d in decisions[3:]}
    assert Decision.objects.filter(pk__in=[d.pk for d in decisions[1:]]).count() == 4
    assert decision_trace(decision=decisions[1])["expired"] is True


def test_the_api_and_the_decision_page_read_a_pull_stored_as_a_change(db, client):
    rng = random.Random(9)
    global_queue, agents = _world(rng)
    first = work_pull(queue_id=agents[0].pk, now=NOW)
    _arrive(global_queue, rng)
    second = work_pull(queue_id=agents[0].pk, now=NOW + timedelta(minutes=1))
    decision = Decision.objects.get(pk=second["decision"])
    assert base_of(decision) == first["decision"]
    body = client.get(f"/api/v1/decisions/{decision.pk}/").json()
    skipped = body["trace"]["skipped"]
    assert len(skipped) == decision.n_candidates - second["pulled"] - second["lost"]
    assert skipped == decision_trace(decision=decision)["skipped"]
    waiting = WMCoreElement.objects.filter(queue=global_queue, Status="Available").order_by("pk").first()
    assert skipped[waiting.element_id]["code"] == waiting.stuck_reason
    assert client.get(f"/decisions/{decision.pk}/").status_code == 200
