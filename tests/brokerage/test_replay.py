"""Every decision reproducible (issue 34): stored inputs, replay bit for bit, the scenario as a file, changes."""

import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import models
from django.test import override_settings

from brokerage.engine.dirac.rules import Resource
from brokerage.models import (
    BrokerageCycle,
    CycleInputs,
    Decision,
    DecisionTrace,
    DiracMatchInputs,
    DiracMatchRecord,
    ScenarioPart,
)
from brokerage.selectors.dirac_replay import dirac_match_replay, dirac_match_scenario
from brokerage.selectors.inputs import REPLAYABLE, InputsUnavailable, decision_scenario
from brokerage.selectors.preview import broker_preview_scenario
from brokerage.selectors.replay import decision_replay
from brokerage.selectors.whatif import cycles_what_if
from brokerage.services.demo_cadence import demo_cadence_run
from brokerage.services.demo_grid import demo_grid_build
from brokerage.services.dirac import dirac_match_request

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def demo_run(*, minutes: int) -> None:
    """make run's cadence on a fake clock for a few minutes."""
    demo_grid_build(size="small", now=NOW, seed=2026)
    demo_cadence_run(start=NOW, seconds=minutes * 60)


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    """One demo run for the module (the tests read it; a test's own changes are rolled back with it)."""
    with django_db_blocker.unblock(), override_settings(GRID_SIMULATOR=True, GRID_SIMULATOR_SPEED=60):
        demo_run(minutes=3)
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def test_every_decision_of_a_demo_run_replays_identically(demo):
    decisions = list(Decision.objects.filter(plugin__in=REPLAYABLE).order_by("pk"))
    assert {d.plugin for d in decisions} == set(REPLAYABLE)
    differing = []
    for decision in decisions:
        result = decision_replay(decision=decision)
        if not result["identical"] or not result["same_trace"]:
            differing.append((decision.pk, decision.plugin, result["difference"]))
    assert differing == []
    # every replayable decision carries its own side; every cycle of theirs its grid side
    assert DecisionTrace.objects.filter(decision__in=decisions, inputs__isnull=True).count() == 0
    cycles = {d.cycle_id for d in decisions}
    assert CycleInputs.objects.filter(cycle_id__in=cycles).count() == len(cycles)


def test_cycles_share_the_parts_that_did_not_change(demo):
    cycles = CycleInputs.objects.count()
    kinds = dict(ScenarioPart.objects.values_list("kind").annotate(n=models.Count("pk")).values_list("kind", "n"))
    # the queues, their software and storage did not change over the run: one part each for every cycle of the day;
    # the resolved gdpconfig one for PanDA's cycles, one for WMCore's pulls
    assert kinds["queues"] == kinds["software"] == kinds["storage"] == 1
    assert kinds["config"] == 2
    # the statistics move with the jobs: at most one part per cycle
    assert 1 < kinds["queue_stats"] <= cycles
    assert sum(kinds.values()) < 3 * cycles


def test_the_downloaded_scenario_runs_offline_to_the_same_decision(demo, tmp_path):
    for plugin in REPLAYABLE:
        decision = Decision.objects.filter(plugin=plugin).order_by("-n_candidates", "pk").first()
        path = tmp_path / f"{plugin}.json"
        path.write_text(json.dumps(decision_scenario(decision=decision)))
        out = StringIO()
        call_command("broker", str(path), "--json", stdout=out)
        offline = json.loads(out.getvalue())
        replayed = json.loads(json.dumps(decision_replay(decision=decision)["replayed"], default=str))
        assert offline == replayed
        assert offline["outcome"] == decision.outcome
        assert (offline["chosen"] or "") == decision.chosen


def test_a_replay_with_a_change_is_what_the_preview_gives_for_the_same_scenario_and_config(demo):
    cycles = list(BrokerageCycle.objects.filter(plugin__in=REPLAYABLE).values_list("pk", flat=True))
    effect = cycles_what_if(cycle_ids=cycles, overrides={"NQUEUED_SAT_CAP": 1})
    assert effect["changed_candidates"] > 0
    decision = Decision.objects.get(pk=effect["changed"][0]["decision"])
    replay = decision_replay(decision=decision, overrides={"NQUEUED_SAT_CAP": 1})
    assert not replay["identical"]
    scenario = decision_scenario(decision=decision)
    scenario["gdpconfig"] = {**scenario["gdpconfig"], "NQUEUED_SAT_CAP": 1}
    preview = broker_preview_scenario(scenario=scenario)["decision"]
    assert json.loads(json.dumps(preview, default=str)) == json.loads(json.dumps(replay["replayed"], default=str))


def test_the_replay_command_exits_0_identical_1_different_2_impossible(demo):
    cycles = list(BrokerageCycle.objects.filter(plugin__in=REPLAYABLE).values_list("pk", flat=True))
    changed = cycles_what_if(cycle_ids=cycles, overrides={"NQUEUED_SAT_CAP": 1})["changed"][0]["decision"]
    out = StringIO()
    call_command("replay", str(changed), stdout=out)
    assert "identical" in out.getvalue()
    with pytest.raises(CommandError) as different:
        call_command("replay", str(changed), "--set", "NQUEUED_SAT_CAP=1", stdout=StringIO())
    assert different.value.returncode == 1
    with pytest.raises(CommandError) as bad_key:
        call_command("replay", str(changed), "--set", "NO_SUCH_KEY=1", stdout=StringIO())
    assert bad_key.value.returncode == 2
    assert "NO_SUCH_KEY" in str(bad_key.value)
    DecisionTrace.objects.filter(decision_id=changed).delete()
    with pytest.raises(CommandError) as expired:
        call_command("replay", str(changed), stdout=StringIO())
    assert expired.value.returncode == 2
    assert "expired" in str(expired.value)
    throttle = Decision.objects.exclude(plugin__in=REPLAYABLE).exclude(plugin__in=("wmcore_pull",)).first()
    if throttle is not None:
        with pytest.raises(InputsUnavailable) as why:
            decision_replay(decision=throttle)
        assert why.value.code == "not_brokerage"


def test_what_if_counts_candidate_changes_outcomes_and_assignments(demo):
    cycles = list(BrokerageCycle.objects.filter(plugin__in=REPLAYABLE).values_list("pk", flat=True))
    effect = cycles_what_if(cycle_ids=cycles, overrides={"NQUEUED_SAT_CAP": 100000})
    assert effect["looked_at"] == Decision.objects.filter(cycle__in=cycles, plugin__in=REPLAYABLE).count()
    assert effect["replayed"] == effect["looked_at"]
    assert effect["not_replayed"] == []
    # candidates come back although few outcomes change: the old form's "0 would be decided differently"
    assert effect["changed_candidates"] > effect["changed_outcome"]
    assert effect["unchanged"] + effect["changed_candidates"] == effect["replayed"]
    before = sum(row["before"] for row in effect["assignments"])
    assert before == sum(row["after"] for row in effect["assignments"]) == effect["replayed"]
    bounded = cycles_what_if(cycle_ids=cycles, overrides={"NQUEUED_SAT_CAP": 100000}, limit=5)
    assert bounded["looked_at"] == 5
    assert bounded["truncated"]


def no_match_requests() -> None:
    """Requests no task queue fits: 10 s of CPU, below the first segment (500 s)."""
    for seed in (1, 2):
        dirac_match_request(resource=Resource(setup="LHCb-Production", cpuTime=10), now=NOW, seed=seed)


def test_every_dirac_matching_request_of_a_demo_run_replays_identically(demo):
    no_match_requests()
    records = list(DiracMatchRecord.objects.order_by("pk"))
    assert {record.matched for record in records} == {True, False}
    assert DiracMatchInputs.objects.count() == len(records)
    differing = []
    for record in records:
        result = dirac_match_replay(record=record)
        if not result["identical"] or not result["same_trace"]:
            differing.append((record.pk, result["difference"], result["undetermined"]))
    assert differing == []
    # the index is stored once per state, not per request
    assert ScenarioPart.objects.filter(kind="task_queues").count() < len(records) / 2


def test_a_dirac_request_downloaded_runs_offline_to_the_same_match(demo, tmp_path):
    no_match_requests()
    for matched in (True, False):
        record = DiracMatchRecord.objects.filter(matched=matched).order_by("pk").first()
        path = tmp_path / f"dirac-{record.pk}.json"
        path.write_text(json.dumps(dirac_match_scenario(record=record)))
        out = StringIO()
        call_command("broker", str(path), "--json", stdout=out)
        offline = json.loads(out.getvalue())
        assert offline["outcome"] == ("matched" if matched else "no_match")
        assert offline["chosen"] == (str(record.job) if matched else None)
        assert offline["extra"]["taskQueue"] == record.task_queue
        replayed = json.loads(json.dumps(dirac_match_replay(record=record)["replayed"], default=str))
        assert offline == replayed


def test_a_dirac_request_replays_through_the_command_the_api_and_the_page(demo, client):
    no_match_requests()
    record = DiracMatchRecord.objects.filter(matched=True).order_by("pk").first()
    out = StringIO()
    call_command("replay", str(record.pk), "--dirac-match", stdout=out)
    assert "identical: same job, task queue" in out.getvalue()
    # DIRAC v9's order draws over every matching queue: other steps, told from what was read, or said undetermined
    changed = [
        dirac_match_replay(record=other, profile="dirac")
        for other in DiracMatchRecord.objects.filter(matched=True).order_by("pk")[:20]
    ]
    assert all(result["profile"] == "dirac" for result in changed)
    assert any(not result["identical"] for result in changed)
    assert all(result["undetermined"] or result["difference"]["outcome_now"] == "matched" for result in changed)
    with pytest.raises(CommandError) as bad:
        call_command("replay", str(record.pk), "--dirac-match", "--cycle", "1", stdout=StringIO())
    assert bad.value.returncode == 2
    api = client.post(f"/api/v1/dirac/matches/{record.pk}/replay", {}, content_type="application/json")
    assert api.status_code == 200
    assert api.json()["identical"] is True
    wrong = client.post(
        f"/api/v1/dirac/matches/{record.pk}/replay", {"gdpconfig": {"NO_SUCH_KEY": 1}}, content_type="application/json"
    )
    assert wrong.status_code == 400
    assert "NO_SUCH_KEY" in wrong.json()["error"]["fields"]["gdpconfig"]
    assert client.post("/api/v1/dirac/matches/999999999/replay", {}, content_type="application/json").status_code == 404
    download = client.get(f"/api/v1/dirac/matches/{record.pk}/scenario")
    assert download.status_code == 200
    assert "attachment" in download["Content-Disposition"]
    assert download.json()["matcher"]["tries"]
    page = client.get(f"/dirac/matches/{record.pk}/replay/")
    assert page.status_code == 200
    assert b"Identical" in page.content
    assert f"/dirac/matches/{record.pk}/replay/".encode() in client.get(f"/dirac/matches/{record.pk}/").content
    DiracMatchInputs.objects.filter(record_id=record.pk).delete()
    gone = client.post(f"/api/v1/dirac/matches/{record.pk}/replay", {}, content_type="application/json")
    assert gone.status_code == 409
    assert "not_kept" in json.dumps(gone.json())
    with pytest.raises(CommandError) as expired:
        call_command("replay", str(record.pk), "--dirac-match", stdout=StringIO())
    assert expired.value.returncode == 2


def test_a_dirac_replay_with_a_change_is_what_the_preview_gives_for_the_same_scenario_and_config(demo):
    record = DiracMatchRecord.objects.filter(matched=True).order_by("pk").first()
    # one first job instead of ten: the claim takes the first waiting job of the priority by id
    replay = dirac_match_replay(record=record, overrides={"DIRAC_JOBS_PER_TRY": 1})
    assert replay["undetermined"] == ""
    claim = next(
        visit["claim"]
        for step in DiracMatchInputs.objects.get(pk=record.pk).trail["tries"]
        for visit in step["visits"]
        if "claim" in visit
    )
    expected = min(job for job in claim["first"] if job not in claim["passed"])
    assert replay["replayed"]["chosen"] == str(expected)
    assert replay["identical"] == (expected == record.job)
    scenario = dirac_match_scenario(record=record)
    scenario["gdpconfig"] = {**scenario["gdpconfig"], "DIRAC_JOBS_PER_TRY": 1}
    preview = broker_preview_scenario(scenario=scenario)["decision"]
    assert json.loads(json.dumps(preview, default=str)) == json.loads(json.dumps(replay["replayed"], default=str))
    # more first jobs than a request read (when it read a full ten) cannot be told
    full = next(
        inputs.record_id
        for inputs in DiracMatchInputs.objects.order_by("pk")
        for step in inputs.trail["tries"]
        for visit in step["visits"]
        if len(visit.get("claim", {}).get("first", ())) == 10
    )
    wider = dirac_match_replay(record=DiracMatchRecord.objects.get(pk=full), overrides={"DIRAC_JOBS_PER_TRY": 50})
    assert "where the request read 10" in wider["undetermined"]
    assert wider["difference"]["outcome_now"] == "undetermined"
