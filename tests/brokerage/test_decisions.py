"""Stored decisions: cycles, bulk storage with the frame, and reading a trace back in words."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from brokerage.engine import parse_scenario, run
from brokerage.engine.panda.synthetic import task_brokerage_scenario
from brokerage.engine.panda.task_broker import AtlasProdTaskBroker
from brokerage.models import BrokerageCycle, Decision
from brokerage.selectors.decisions import (
    decision_candidate,
    decision_latest,
    decision_list,
    decision_trace,
    decision_why_not,
)
from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_store_many
from tests import factories
from tests.engine.builders import nucleus, task_scenario

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def test_cycle_records_counts_and_status():
    task = factories.TaskFactory()
    assigned = run(task_scenario(nucleus("A")))
    pending = run(task_scenario(nucleus("A", state="DISABLED")))
    cycle = cycle_start(plugin="atlas_prod_task", now=NOW, gdpconfig={"NQUEUED_NUC_CAP": 2000})
    decision_store_many(
        cycle=cycle, items=[DecisionToStore(assigned, task_id=task.pk), DecisionToStore(pending, task_id=task.pk)]
    )
    cycle_finish(cycle=cycle, now=NOW + timedelta(seconds=3))
    cycle.refresh_from_db()
    assert (cycle.status, cycle.n_decisions, cycle.n_assigned, cycle.n_pending) == ("succeeded", 2, 1, 1)
    assert cycle.duration_seconds == 3
    assert cycle.gdpconfig == {"NQUEUED_NUC_CAP": 2000}
    failed = cycle_finish(cycle=cycle_start(plugin="atlas_prod_task", now=NOW), now=NOW, error="boom")
    assert (failed.status, failed.error) == ("failed", "boom")


def test_stored_row_summarises_the_decision():
    row = factories.stored_decision()
    assert (row.outcome, row.n_candidates, row.n_passed, row.primary_reason) == ("assigned", 3, 2, "status")
    assert row.chosen in {"A", "C"}
    assert row.retry_after_minutes is None


def test_pending_decision_stores_retry_and_no_choice():
    row = factories.stored_decision(scenario=task_scenario(nucleus("A", state="DISABLED")))
    assert (row.outcome, row.chosen, row.retry_after_minutes, row.n_passed) == ("pending", "", 30, 0)


def test_trace_answers_why_not_for_every_candidate():
    row = factories.stored_decision()
    trace = decision_trace(decision=Decision.objects.get(pk=row.pk))
    assert trace["skipped"]["B"]["sentence"] == "Its status is DISABLED, not ACTIVE."
    assert trace["by_reason"][0]["code"] == "status"
    why = decision_why_not(decision=row, name="B")
    assert (why["status"], why["code"], why["filter"]) == ("skipped", "status", "nucleus status")
    chosen = decision_why_not(decision=row, name=row.chosen)
    assert (chosen["status"], chosen["rank"] in (1, 2)) == ("chosen", True)
    assert decision_why_not(decision=row, name="NOWHERE") is None


def test_one_candidate_of_a_decision_as_the_queue_page_reads_it():
    from brokerage.models import DecisionTrace

    row = factories.stored_decision()  # A and C kept, B skipped for its status
    trace = decision_trace(decision=row)
    weight_of_a = next(c["weight"] for c in trace["candidates"] if c["name"] == "A")
    assert decision_candidate(decision=row, name="A") == {"weight": weight_of_a, "skip_code": ""}
    assert decision_candidate(decision=row, name="B") == {"weight": None, "skip_code": "status"}
    assert decision_candidate(decision=row, name="NOWHERE") == {"weight": None, "skip_code": ""}
    DecisionTrace.objects.filter(decision_id=row.pk).delete()  # past DECISION_TRACE_DAYS
    assert decision_candidate(decision=row, name="A") == {"weight": None, "skip_code": ""}


def test_cycle_frame_keeps_traces_small_and_exact():
    broker = AtlasProdTaskBroker()
    scenarios = [parse_scenario(task_brokerage_scenario(nuclei=200, seed=1, task_seed=t)) for t in range(5)]
    frame = broker.frame(scenarios[0])
    decisions = [broker.decide(s) for s in scenarios]
    cycle = cycle_start(plugin=broker.name, now=NOW, frame=frame)
    rows = decision_store_many(cycle=cycle, items=[DecisionToStore(d) for d in decisions], frame=frame)
    for row, decision in zip(rows, decisions, strict=True):
        stored = Decision.objects.select_related("cycle").get(pk=row.pk)
        trace = decision_trace(decision=stored)
        assert set(trace["skipped"]) == set(decision.skipped)
        assert [c["name"] for c in trace["candidates"]] == [c.name for c in decision.candidates]
        for name, skip in decision.skipped.items():
            assert trace["skipped"][name]["detail"] == dict(sorted(skip.detail.items()))


def test_decision_list_filters_without_loading_traces(django_assert_num_queries):
    task = factories.TaskFactory()
    factories.stored_decision(task=task)
    factories.stored_decision(task=task, scenario=task_scenario(nucleus("A", state="DISABLED")))
    factories.stored_decision()
    with django_assert_num_queries(1):
        rows = list(decision_list(task_id=task.pk, outcome="pending"))
    assert [r.outcome for r in rows] == ["pending"]
    assert not hasattr(rows[0], "trace")  # traces live in their own table (issue 32), read one at a time
    assert decision_latest(task_id=task.pk).task_id == task.pk
    assert decision_list(reason="status", outcome="assigned").count() == 2
    assert BrokerageCycle.objects.count() == 3


def test_constraints_tie_outcome_and_choice():
    from django.db import IntegrityError, transaction

    row = factories.stored_decision()
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.filter(pk=row.pk).update(chosen="")
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.filter(pk=row.pk).update(n_passed=99)


def test_decision_admin_page_shows_the_trace(admin_client_logged):
    row = factories.stored_decision()
    page = admin_client_logged.get(reverse("admin:brokerage_decision_change", args=[row.pk])).content.decode()
    assert "Its status is DISABLED, not ACTIVE." in page
    assert "nucleus status" in page


def test_decision_changelist_does_not_load_traces(admin_client_logged):
    factories.stored_decision()
    response = admin_client_logged.get(reverse("admin:brokerage_decision_changelist"))
    row = response.context["cl"].result_list[0]
    assert "gdpconfig" in row.cycle.get_deferred_fields()
    assert not hasattr(row, "trace")  # the traces live in their own table (issue 32)


def test_reason_counts_are_kept_as_compact_text_and_read_back_whole():
    """A year of decision rows: the counts per reason are text without spaces (75 bytes where jsonb took 135 in
    the keeping-up benchmark), read back as the dict they were, through the ORM and through a fixture."""
    from django.core import serializers
    from django.db import connection

    decision = factories.stored_decision()
    Decision.objects.filter(pk=decision.pk).update(reason_counts={"io": 293, "status": 53, "cpucore": 24})
    with connection.cursor() as cursor:
        cursor.execute("SELECT reason_counts FROM brokerage_decisions WHERE id = %s", [decision.pk])
        assert cursor.fetchone()[0] == '{"io":293,"status":53,"cpucore":24}'
    assert Decision.objects.get(pk=decision.pk).reason_counts == {"io": 293, "status": 53, "cpucore": 24}
    assert Decision.objects.filter(pk=decision.pk).values_list("reason_counts", flat=True)[0]["status"] == 53
    dumped = serializers.serialize("json", Decision.objects.filter(pk=decision.pk))
    Decision.objects.filter(pk=decision.pk).delete()
    for loaded in serializers.deserialize("json", dumped):
        loaded.save()
    assert Decision.objects.get(pk=decision.pk).reason_counts == {"io": 293, "status": 53, "cpucore": 24}


def test_a_lighter_candidate_drawn_is_said_to_be_a_draw_with_its_chance():
    from brokerage.selectors.decisions import candidate_draw

    candidates = [{"name": "CERN", "weight": 600.0}, {"name": "RAL", "weight": 300.0}, {"name": "BNL", "weight": 100.0}]
    # BNL: 100 of 1,000, 10.0 %; the heaviest, CERN, 60.0 %
    assert candidate_draw(chosen="BNL", candidates=candidates) == (
        "BNL was drawn at random among 3 candidates in proportion to their weights, as PanDA draws: a 10.0 % "
        "chance, against 60.0 % for the heaviest, CERN. A lighter candidate winning is the draw, not an error."
    )
    assert candidate_draw(chosen="CERN", candidates=candidates).startswith("CERN, the heaviest, was drawn")
    assert "a 60.0 % chance" in candidate_draw(chosen="CERN", candidates=candidates)
    assert candidate_draw(chosen="CERN", candidates=candidates[:1]) == ""  # alone: no draw to speak of
    assert candidate_draw(chosen=None, candidates=candidates) == ""
    zero = [{"name": "A", "weight": 0}, {"name": "B", "weight": 0}]
    assert (
        candidate_draw(chosen="B", candidates=zero)
        == "B was drawn at random among 2 candidates of weight 0, each as likely."
    )
