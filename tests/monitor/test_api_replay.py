"""Replay, scenario download and what-if through the API (issue 34), on the `brokered` grid of test_api: SAT2_Q was
skipped as links_full (200 files queued on its link > NQUEUED_SAT_CAP 150), the job set went to SAT_Q."""

import json

import pytest
from django.core.management import call_command

from brokerage.models import Decision, DecisionTrace
from tests.monitor.test_api import brokered  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db


def post(client, url, body):
    return client.post(url, body, content_type="application/json")


def test_a_replay_with_nothing_changed_is_identical(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    body = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {})
    assert body.status_code == 200, body.content
    result = body.json()
    assert result["identical"] is True
    assert result["same_trace"] is True
    assert result["difference"]["chosen_before"] == result["difference"]["chosen_now"] == "SAT_Q"
    assert Decision.objects.count() == 1  # nothing stored


def test_a_replay_with_a_raised_cap_brings_the_queue_back(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    result = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {"gdpconfig": {"NQUEUED_SAT_CAP": 300}}).json()
    assert result["identical"] is False
    assert result["difference"]["gained"] == [{"name": "SAT2_Q", "was": "links_full"}]
    assert result["difference"]["lost"] == []
    lower = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {"gdpconfig": {"NQUEUED_SAT_CAP": 5}}).json()
    # SAT_Q's link has 10 files queued > 5: lost with its code, nothing left to choose
    assert lower["difference"]["lost"][0]["name"] == "SAT_Q"
    assert lower["difference"]["lost"][0]["code"] == "links_full"
    assert lower["difference"]["choice_changed"] is True


def test_replay_bad_input_is_400_with_the_field_and_expired_inputs_409(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    bad = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {"gdpconfig": {"NO_SUCH_KEY": 1}})
    assert bad.status_code == 400
    assert "NO_SUCH_KEY" in bad.json()["error"]["fields"]["gdpconfig"]["NO_SUCH_KEY"][0]
    unknown_field = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {"profle": "panda"})
    assert unknown_field.status_code == 400
    assert post(client, "/api/v1/decisions/999999/replay/", {}).status_code == 404
    DecisionTrace.objects.update(inputs=None)
    gone = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {})
    assert gone.status_code == 409
    assert gone.json()["error"]["fields"]["decision"][0].startswith("not_kept")
    assert client.get(f"/api/v1/decisions/{decision.pk}/scenario/").status_code == 409


def test_the_downloaded_scenario_reproduces_the_decision_offline(client, brokered, tmp_path, capsys):  # noqa: F811
    decision = Decision.objects.get()
    response = client.get(f"/api/v1/decisions/{decision.pk}/scenario/")
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(response.json()))
    call_command("broker", str(path), "--json")
    offline = json.loads(capsys.readouterr().out)
    assert offline["chosen"] == "SAT_Q"
    assert {skip["code"] for name, skip in offline["skipped"].items() if name == "SAT2_Q"} == {"links_full"}


def test_what_if_over_a_cycle_and_over_a_window(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    body = post(client, f"/api/v1/cycles/{decision.cycle_id}/what-if/", {"gdpconfig": {"NQUEUED_SAT_CAP": 300}})
    assert body.status_code == 200, body.content
    result = body.json()
    assert result["looked_at"] == result["replayed"] == 1
    # a candidate came back: counted, whether the weighted draw among SAT_Q and SAT2_Q now lands on the other
    # queue or not (the queues' order, and so the draw, is the database's)
    assert result["changed_outcome"] == 0
    assert result["changed_candidates"] == 1
    assert result["changed"][0]["gained"] == [{"name": "SAT2_Q", "was": "links_full"}]
    window = post(
        client,
        "/api/v1/cycles/what-if/",
        {"since": "2026-11-01T00:00:00Z", "until": "2026-11-02T00:00:00Z", "gdpconfig": {"NQUEUED_SAT_CAP": 5}},
    ).json()
    assert window["cycles"] == [decision.cycle_id]
    assert window["changed_choice"] == 1
    # by kind of choice, a decision that chose nothing with no target (issue 50: one axis held every kind)
    assert {(row["kind"], row["target"]): (row["before"], row["after"]) for row in window["assignments"]} == {
        ("queue", "SAT_Q"): (1, 0),
        ("queue", None): (0, 1),
    }
    reversed_window = post(
        client, "/api/v1/cycles/what-if/", {"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"}
    )
    assert reversed_window.status_code == 200
    assert reversed_window.json()["cycles"] == []
    assert reversed_window.json()["looked_at"] == 0


def test_revisions_through_the_api_list_compare_and_restore_with_permission(client, brokered):  # noqa: F811
    from django.contrib.auth.models import Permission, User

    from brokerage.models import GdpConfig, GdpConfigRevision
    from brokerage.services.gdpconfig import gdpconfig_save

    gdpconfig_save(key="NQUEUED_SAT_CAP", value="300", comment="wider")
    wanted = GdpConfigRevision.objects.order_by("-pk").first()
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="5")
    listing = client.get("/api/v1/gdpconfig-revisions/").json()["results"]
    assert [r["action"] for r in listing][:2] == ["save", "save"]
    assert listing[1]["comment"] == "wider"
    assert listing[0]["changes"] == [
        {"key": "NQUEUED_SAT_CAP", "vo": "", "action": "update", "old_value": "300", "new_value": "5"}
    ]
    latest = listing[0]["id"]
    detail = client.get(f"/api/v1/gdpconfig-revisions/{latest}/", {"against": wanted.pk}).json()
    assert detail["against"] == wanted.pk
    assert [(d["key"], d["before"], d["after"]) for d in detail["difference"]] == [("NQUEUED_SAT_CAP", "300", "5")]
    assert client.get(f"/api/v1/gdpconfig-revisions/{latest}/", {"against": "x"}).status_code == 400
    assert client.get(f"/api/v1/gdpconfig-revisions/{latest}/", {"against": 10**9}).status_code == 404
    url = f"/api/v1/gdpconfig-revisions/{wanted.pk}/restore/"
    assert post(client, url, {}).status_code == 401
    reader = User.objects.create_user("reader", password="pw")
    client.force_login(reader)
    assert post(client, url, {}).status_code == 403
    reader.user_permissions.add(Permission.objects.get(codename="change_gdpconfig"))
    client.force_login(User.objects.get(pk=reader.pk))
    restored = post(client, url, {"comment": "back"})
    assert restored.status_code == 200
    assert restored.json()["action"] == "restore"
    assert GdpConfig.objects.get(key="NQUEUED_SAT_CAP").value == "300"
    again = post(client, url, {})
    assert again.status_code == 400
    assert "nothing to restore" in again.json()["error"]["fields"]["revision"][0]


def test_a_cycle_beyond_any_id_is_a_field_error_not_a_server_error(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    body = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {"cycle": 2**70})
    assert body.status_code == 400
    assert "cycle" in body.json()["error"]["fields"]
    unknown = post(client, f"/api/v1/decisions/{decision.pk}/replay/", {"cycle": 987654321})
    assert unknown.status_code == 404
    assert "cycle 987654321 has no stored inputs" in unknown.json()["error"]["message"]
