"""The REST API: every endpoint, its filters and pages, errors, access rules, the what-if preview, the schema."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from brokerage.models import Decision, GdpConfig, GdpConfigChange, Job
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from brokerage.services.jobs import job_generation_cycle_run
from tests import factories
from tests.jobs.conftest import make_one_queue_grid, make_ready_task
from tests.monitor.assets import foreign_assets

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def get(client, url, **params):
    response = client.get(url, params)
    assert response.status_code == 200, (url, response.status_code, response.content[:300])
    return response.json()


@pytest.fixture
def brokered(db):
    """A queue SAT_Q (link to the nucleus with 10 files queued) and SAT2_Q (link with 200: over NQUEUED_SAT_CAP
    150, so 'links_full'); a task whose job set went to SAT_Q."""
    queue = make_one_queue_grid()
    work_queue = factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)
    satellite = factories.SiteFactory(name="SAT2")
    disk = factories.StorageEndpointFactory(name="SAT2_DATADISK", site=satellite, space_total=1e6, space_free=5e5)
    second = factories.PandaQueueFactory(name="SAT2_Q", site=satellite, corecount=8, maxrss=64000, releases=["ANY"])
    for role in ("read_lan", "write_lan"):
        factories.QueueStorageFactory(queue=second, endpoint=disk, role=role)
    factories.NetworkLinkFactory(
        src=satellite, dst=factories.NucleusFactory(name="NUC"), closeness=2, mbps_1h=150, queued=200
    )
    task = make_ready_task(work_queue, files=6, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=NOW)
    return {"task": task, "queue": queue, "second": second, "work_queue": work_queue}


def test_every_collection_answers(client, brokered):
    for name in (
        "tasks",
        "jobs",
        "datasets",
        "sites",
        "queues",
        "work-queues",
        "global-shares",
        "cycles",
        "decisions",
        "gdpconfig",
    ):
        body = get(client, f"/api/v1/{name}/")
        assert "results" in body, name


def test_decision_list_filters_and_cursor_pages(client, brokered):
    task = brokered["task"]
    decision = Decision.objects.get(task=task)
    for params in (
        {"plugin": "atlas_prod_job"},
        {"outcome": "assigned"},
        {"jediTaskID": task.pk},
        {"chosen": "SAT_Q"},
        {"queue_skipped": "SAT2_Q", "jediTaskID": task.pk},
        {"queue_skipped": "SAT2_Q", "cycle": decision.cycle_id},
        {
            "queue_skipped": "SAT2_Q",
            "created_after": (NOW - timedelta(hours=23)).isoformat(),
            "created_before": (NOW + timedelta(minutes=1)).isoformat(),
        },
        {
            "created_after": (NOW - timedelta(minutes=1)).isoformat(),
            "created_before": (NOW + timedelta(minutes=1)).isoformat(),
        },
    ):
        ids = [row["id"] for row in get(client, "/api/v1/decisions/", **params)["results"]]
        assert ids == [decision.pk], params
    assert get(client, "/api/v1/decisions/", queue_skipped="SAT_Q", jediTaskID=task.pk)["results"] == []
    # unnarrowed, or over more than a day, it would decode thousands of traces: refused, naming what it needs
    for params in ({}, {"created_after": (NOW - timedelta(hours=25)).isoformat(), "created_before": NOW.isoformat()}):
        refused = client.get("/api/v1/decisions/", {"queue_skipped": "SAT2_Q", **params})
        assert refused.status_code == 400
        assert "jediTaskID, cycle, or created_after" in refused.json()["error"]["fields"]["queue_skipped"][0]
    assert get(client, "/api/v1/decisions/", reason="no_such_code")["results"] == []
    # cursor pages: one decision per page, the next link follows
    for _ in range(2):
        job_generation_cycle_run(work_queue_id=brokered["work_queue"].pk, now=NOW)  # nothing new: no input left
    factories.stored_decision()
    first = get(client, "/api/v1/decisions/", page_size=1)
    assert len(first["results"]) == 1
    assert "cursor=" in first["next"]
    second = client.get(first["next"]).json()
    assert second["results"][0]["id"] < first["results"][0]["id"]


def test_decision_detail_has_the_trace_with_sentences(client, brokered):
    decision = Decision.objects.get(task=brokered["task"])
    body = get(client, f"/api/v1/decisions/{decision.pk}/")
    assert body["chosen"] == "SAT_Q"
    skip = body["trace"]["skipped"]["SAT2_Q"]
    assert skip["code"] == "links_full"
    assert (skip["detail"]["linkQueued"], skip["detail"]["cap"]) == (200, 150)
    assert skip["sentence"]
    assert body["trace"]["by_reason"][0]["code"] == "links_full"


def test_jobs_carry_their_timeout_state(client, brokered):
    job = Job.objects.filter(task=brokered["task"]).first()
    body = get(client, "/api/v1/jobs/", jediTaskID=brokered["task"].pk)
    row = next(r for r in body["results"] if r["PandaID"] == job.pk)
    assert row["timeout"]["rule"] == "assigned"
    assert row["timeout"]["sentence"] == "assigned for 12 h"
    state = get(client, f"/api/v1/jobs/{job.pk}/timeout/")
    assert state["rule"] == "assigned"
    assert state["left_seconds"] <= 12 * 3600


def test_global_shares_with_usage(client):
    root = factories.GlobalShareFactory(name="WLCG", value=100)
    factories.GlobalShareFactory(name="MC", value=60, parent=root)
    body = get(client, "/api/v1/global-shares/MC/")
    assert body["parent"] == "WLCG"
    assert body["usage"]["normalised"] == pytest.approx(100.0)


def test_a_page_costs_a_fixed_number_of_queries(client):
    def queries(url, make, count):
        make(count)
        gdpconfig_cache_clear()
        with CaptureQueriesContext(connection) as captured:
            get(client, url)
        return len(captured)

    for url, make in (
        ("/api/v1/decisions/", lambda n: [factories.stored_decision() for _ in range(n)]),
        ("/api/v1/tasks/", lambda n: factories.TaskFactory.create_batch(n, workQueue=factories.WorkQueueFactory())),
        ("/api/v1/jobs/", lambda n: factories.JobFactory.create_batch(n, jobStatus="running")),
        ("/api/v1/queues/", lambda n: factories.PandaQueueFactory.create_batch(n)),
    ):
        assert queries(url, make, 2) == queries(url, make, 6), url


def test_errors_have_one_shape(client, brokered):
    missing = client.get("/api/v1/tasks/999999/")
    assert missing.status_code == 404
    assert missing.json()["error"]["status"] == 404
    bad = client.get("/api/v1/decisions/", {"created_after": "yesterday"})
    assert bad.status_code == 400
    assert "created_after" in bad.json()["error"]["fields"]
    bad_cursor = client.get("/api/v1/jobs/", {"cursor": "garbage"})
    assert bad_cursor.status_code == 404
    assert bad_cursor.json()["error"]["code"]


def staff(*permissions):
    user = User.objects.create_user("admin-" + "-".join(permissions or ("none",)), password="x")
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = APIClient()  # JSON bodies, the API's only format
    client.credentials(HTTP_AUTHORIZATION=f"Token {factories.api_token(user)}")
    return client


def test_gdpconfig_writes_need_a_token_with_permission_and_are_validated(client):
    payload = {"key": "NQUEUED_SAT_CAP", "value": 300, "vo": "atlas", "comment": "more room"}
    assert client.post("/api/v1/gdpconfig/", payload).status_code == 401
    assert staff().post("/api/v1/gdpconfig/", payload).status_code == 403
    writer = staff("add_gdpconfig", "change_gdpconfig", "delete_gdpconfig")
    created = writer.post("/api/v1/gdpconfig/", payload)
    assert created.status_code == 201, created.content
    assert created.json()["value"] == 300  # read back in its JSON type, as it is written (issue 50)
    row = GdpConfig.objects.get(key="NQUEUED_SAT_CAP", vo="atlas")
    assert (row.value, row.component) == ("300", "jobbroker")
    change = GdpConfigChange.objects.get(key="NQUEUED_SAT_CAP")
    assert (change.comment, change.username) == ("more room", "admin-add_gdpconfig-change_gdpconfig-delete_gdpconfig")
    # the value in its own JSON type (the schema states it per key), then the registry's bounds
    for value, message in (
        ("300", "expected a JSON whole number for NQUEUED_SAT_CAP"),
        (True, "expected a JSON whole number for NQUEUED_SAT_CAP"),
        (-5, "NQUEUED_SAT_CAP"),
    ):
        bad = writer.post("/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": value})
        assert bad.status_code == 400
        assert message in bad.json()["error"]["fields"]["value"][0]
    unknown = writer.post("/api/v1/gdpconfig/", {"key": "NO_SUCH_KEY", "value": 1})
    assert unknown.status_code == 400
    assert "unknown gdpconfig parameter" in unknown.json()["error"]["fields"]["key"][0]
    alone = writer.patch(f"/api/v1/gdpconfig/{row.pk}/", {"value": 250})
    assert alone.status_code == 400
    assert alone.json()["error"]["fields"] == {"key": ["key and value go together: give both"]}
    patched = writer.patch(f"/api/v1/gdpconfig/{row.pk}/", {"key": "NQUEUED_SAT_CAP", "value": 250})
    assert patched.status_code == 200
    assert GdpConfig.objects.get(pk=row.pk).value == "250"
    assert writer.delete(f"/api/v1/gdpconfig/{row.pk}/").status_code == 204
    assert GdpConfigChange.objects.filter(key="NQUEUED_SAT_CAP", action="delete").exists()


def test_moving_a_row_onto_another_rows_key_is_a_409_naming_the_key():
    """Found by schemathesis: a PATCH to the (app, component, key, vo) of another row was a 500 IntegrityError."""
    writer = staff("add_gdpconfig", "change_gdpconfig")
    first = writer.post("/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": 300, "vo": "atlas"}).json()
    second = writer.post("/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": 200, "vo": ""}).json()
    moved = writer.patch(f"/api/v1/gdpconfig/{second['id']}/", {"vo": "atlas"})
    assert moved.status_code == 409
    body = moved.json()["error"]
    assert (body["code"], list(body["fields"])) == ("conflict", ["key"])
    assert f"gdpconfig row {first['id']} already holds NQUEUED_SAT_CAP" in body["fields"]["key"][0]
    assert GdpConfig.objects.get(pk=second["id"]).vo == ""


def test_gdpconfig_parameters_list_every_registered_key(client):
    from brokerage.gdpconfig import REGISTRY

    rows = get(client, "/api/v1/gdpconfig/parameters/")
    assert len(rows) == len(REGISTRY)
    assert next(r for r in rows if r["key"] == "NQUEUED_SAT_CAP")["effective"] == 150


def test_sessions_need_csrf_for_writes():
    user = User.objects.create_superuser("root", password="x")
    session = Client(enforce_csrf_checks=True)
    session.force_login(user)
    response = session.post("/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": "300"})
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]


@override_settings(API_ANONYMOUS_READ=False)
def test_anonymous_reading_can_be_turned_off(client):
    assert client.get("/api/v1/tasks/").status_code == 401
    assert staff().get("/api/v1/tasks/").status_code == 200


def test_anonymous_clients_are_throttled(client, settings):
    from rest_framework.settings import api_settings
    from rest_framework.throttling import AnonRateThrottle

    original = AnonRateThrottle.THROTTLE_RATES
    AnonRateThrottle.THROTTLE_RATES = {**original, "anon": "3/minute"}
    try:
        from django.core.cache import cache

        cache.clear()
        codes = [client.get("/api/v1/sites/").status_code for _ in range(4)]
    finally:
        AnonRateThrottle.THROTTLE_RATES = original
    assert codes == [200, 200, 200, 429]
    assert api_settings.DEFAULT_THROTTLE_CLASSES


def test_preview_raising_the_satellite_cap_brings_the_queue_back(client, brokered):
    # the stored decision skipped SAT2_Q: 200 files queued on its link > NQUEUED_SAT_CAP 150
    body = client.post(
        "/api/v1/broker/preview",
        {"task": brokered["task"].pk, "plugin": "atlas_prod_job", "gdpconfig": {"NQUEUED_SAT_CAP": 300}},
        content_type="application/json",
    )
    assert body.status_code == 200, body.content
    result = body.json()
    assert result["difference"]["gained"] == [{"name": "SAT2_Q", "was": "links_full"}]
    assert result["difference"]["lost"] == []
    assert "SAT2_Q" in {c["name"] for c in result["decision"]["candidates"]}
    assert Decision.objects.count() == 1  # nothing stored
    # lowering it below the other link's queue loses SAT_Q with its code and changes the choice
    lower = client.post(
        "/api/v1/broker/preview",
        {"task": brokered["task"].pk, "gdpconfig": {"NQUEUED_SAT_CAP": 5}},
        content_type="application/json",
    ).json()
    assert lower["difference"]["lost"][0]["name"] == "SAT_Q"
    assert lower["difference"]["lost"][0]["code"] == "links_full"
    assert lower["difference"]["choice_changed"] is True
    # found by schemathesis: a task id written 83.0 (an integer in JSON Schema) was taken for a bare scenario
    as_float = client.post(
        "/api/v1/broker/preview",
        {"task": float(brokered["task"].pk), "plugin": "atlas_prod_job"},
        content_type="application/json",
    )
    assert as_float.status_code == 200, as_float.content
    not_whole = client.post(
        "/api/v1/broker/preview", {"task": 1.5, "plugin": "atlas_prod_job"}, content_type="application/json"
    )
    assert not_whole.status_code == 400
    assert "task" in not_whole.json()["error"]["fields"]


def test_preview_of_a_posted_scenario_and_bad_input(client):
    import json
    from pathlib import Path

    scenario = json.loads(Path("docs/examples/job_brokerage.json").read_text())
    body = client.post("/api/v1/broker/preview", {"scenario": scenario}, content_type="application/json")
    assert body.status_code == 200
    assert body.json()["decision"]["plugin"] == "atlas_prod_job"
    scenario["task"]["coreCount"] = "eight"
    bad = client.post("/api/v1/broker/preview", {"scenario": scenario}, content_type="application/json")
    assert bad.status_code == 400
    assert "$.task.coreCount" in bad.json()["error"]["fields"]["scenario"][0]
    # a plugin this installation does not have is the scenario's error too (found by the API fuzzing)
    elsewhere = {**json.loads(Path("docs/examples/job_brokerage.json").read_text()), "plugin": "no_such_plugin"}
    other = client.post("/api/v1/broker/preview", {"scenario": elsewhere}, content_type="application/json")
    assert other.status_code == 400
    assert "$.plugin: unknown brokerage plugin 'no_such_plugin'" in other.json()["error"]["fields"]["scenario"][0]
    neither = client.post("/api/v1/broker/preview", {}, content_type="application/json")
    assert neither.status_code == 400
    unknown = client.post("/api/v1/broker/preview", {"task": 999999, "gdpconfig": {}}, content_type="application/json")
    assert unknown.status_code == 404  # a task that does not exist, as for GET /api/v1/tasks/999999/
    assert "no task 999999" in unknown.json()["error"]["fields"]["task"][0]


def test_preview_of_a_task_as_the_other_job_brokerage_is_a_conflict_named(client, brokered):
    answer = client.post(
        "/api/v1/broker/preview",
        {"task": brokered["task"].pk, "plugin": "atlas_anal_job"},
        content_type="application/json",
    )
    assert answer.status_code == 409  # well formed; the task's kind is in the way
    error = answer.json()["error"]
    assert error["code"] == "conflict"
    assert error["fields"]["task"] == [
        f"task {brokered['task'].pk}'s jobs are brokered by atlas_prod_job, not atlas_anal_job"
    ]


def test_preview_under_another_profile(client, brokered):
    # the task's snapshot under the panda profile: the decision says so; the live profile stays seed
    body = client.post(
        "/api/v1/broker/preview",
        {"task": brokered["task"].pk, "plugin": "atlas_prod_job", "profile": "panda"},
        content_type="application/json",
    )
    assert body.status_code == 200, body.content
    assert body.json()["profile"] == "panda"
    assert body.json()["decision"]["profile"] == "panda"
    live = client.post(
        "/api/v1/broker/preview",
        {"task": brokered["task"].pk, "plugin": "atlas_prod_job"},
        content_type="application/json",
    )
    assert live.json()["profile"] == "seed"
    bad = client.post(
        "/api/v1/broker/preview", {"task": brokered["task"].pk, "profile": "pandas"}, content_type="application/json"
    )
    assert bad.status_code == 400
    assert "profile" in bad.json()["error"]["fields"]


def test_preview_of_a_scenario_under_a_profile(client):
    import json
    from pathlib import Path

    scenario = json.loads(Path("docs/examples/job_brokerage.json").read_text())
    body = client.post(
        "/api/v1/broker/preview", {"scenario": scenario, "profile": "panda"}, content_type="application/json"
    )
    assert body.status_code == 200
    assert body.json()["decision"]["profile"] == "panda"


def test_preview_rejects_bad_overrides_by_name(client, brokered):
    body = client.post(
        "/api/v1/broker/preview",
        {"task": brokered["task"].pk, "gdpconfig": {"NQUEUED_SAT_CAP": "many"}},
        content_type="application/json",
    )
    assert body.status_code == 400
    assert body.json()["error"]["fields"]["gdpconfig"] == {
        "NQUEUED_SAT_CAP": ["expected a JSON whole number for NQUEUED_SAT_CAP"]
    }
    below = client.post(
        "/api/v1/broker/preview",
        {"task": brokered["task"].pk, "gdpconfig": {"NQUEUED_SAT_CAP": -5}},
        content_type="application/json",
    )
    assert below.status_code == 400
    assert "NQUEUED_SAT_CAP" in below.json()["error"]["fields"]["gdpconfig"]["NQUEUED_SAT_CAP"][0]


def test_schema_lists_every_endpoint_and_docs_load(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = set(schema["paths"])
    for expected in (
        "/api/v1/tasks/",
        "/api/v1/jobs/",
        "/api/v1/jobs/{PandaID}/timeout/",
        "/api/v1/datasets/",
        "/api/v1/queues/",
        "/api/v1/sites/",
        "/api/v1/work-queues/",
        "/api/v1/global-shares/",
        "/api/v1/cycles/",
        "/api/v1/decisions/",
        "/api/v1/decisions/{id}/",
        "/api/v1/gdpconfig/",
        "/api/v1/gdpconfig/parameters/",
        "/api/v1/broker/preview",
    ):
        assert expected in paths, expected
    docs = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in docs
    assert foreign_assets(docs) == []


def test_task_page_offers_the_same_preview(client, brokered):
    url = f"/tasks/{brokered['task'].pk}/"
    response = client.get(
        url, {"preview_key": "NQUEUED_SAT_CAP", "preview_value": "300", "preview_plugin": "atlas_prod_job"}
    )
    assert response.status_code == 200
    preview = response.context["preview"]
    assert preview["difference"]["gained"] == [{"name": "SAT2_Q", "was": "links_full"}]
    html = response.content.decode()
    assert "SAT2_Q" in html
    assert "Come back (1)" in html
    assert "data-refresh" not in html  # a what-if result stays on screen
    bad = client.get(url, {"preview_key": "NQUEUED_SAT_CAP", "preview_value": "lots"})
    assert "is not a valid int" in bad.context["preview"]["error"]
    assert Decision.objects.count() == 1


def test_gdpconfig_page_sends_a_preview_to_the_task_page(client, brokered):
    task = brokered["task"].pk
    response = client.get("/gdpconfig/", {"task": task, "preview_key": "NQUEUED_SAT_CAP", "preview_value": "300"})
    assert response.status_code == 302
    assert response["Location"] == f"/tasks/{task}/?preview_key=NQUEUED_SAT_CAP&preview_value=300#preview"


def test_a_comment_longer_than_the_history_keeps_is_a_400_not_a_database_error():
    """Found by schemathesis on PostgreSQL: the API took 500 characters for a column of 256."""
    writer = staff("add_gdpconfig", "delete_gdpconfig")
    long = writer.post("/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": 300, "comment": "x" * 257})
    assert long.status_code == 400
    assert list(long.json()["error"]["fields"]) == ["comment"]
    row = writer.post("/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": 300, "comment": "x" * 256}).json()
    deleted = writer.delete(f"/api/v1/gdpconfig/{row['id']}/?comment={'y' * 257}")
    assert deleted.status_code == 400
    assert deleted.json()["error"]["fields"] == {"comment": ["at most 256 characters, without NUL"]}
    assert GdpConfig.objects.filter(pk=row["id"]).exists()


def test_a_running_cycle_has_a_null_duration_and_the_schema_allows_it(db):
    from brokerage.models import BrokerageCycle

    BrokerageCycle.objects.create(
        plugin="atlas_prod_task", started=datetime(2026, 11, 24, tzinfo=UTC), status="running"
    )
    row = APIClient().get("/api/v1/cycles/").json()["results"][0]
    assert row["status"] == "running"
    assert row["duration_seconds"] is None
    schema = Client().get("/api/schema/?format=json").json()
    duration = schema["components"]["schemas"]["Cycle"]["properties"]["duration_seconds"]
    assert "null" in (duration.get("type") if isinstance(duration.get("type"), list) else [duration.get("type")])


def test_an_absurd_gdpconfig_value_is_a_400_that_names_the_bound(db):
    writer = staff("add_gdpconfig", "change_gdpconfig")
    response = writer.post("/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": 99999999999999999999999})
    assert response.status_code == 400
    assert "must be at most 10,000,000" in str(response.json()["error"]["fields"])
    assert not GdpConfig.objects.exists()
    bounds = {row["key"]: row["bounds"] for row in APIClient().get("/api/v1/gdpconfig/parameters/").json()}
    assert bounds["NQUEUED_SAT_CAP"] == "0 – 10,000,000 files"


def test_the_job_list_speaks_the_task_lists_words_and_refuses_what_it_does_not_read(client, brokered):
    # issue 50: /api/v1/jobs/?status=failed answered assigned jobs (the filter was jobStatus); unknown parameters
    # were never refused; a bad choice did not say the good ones
    jobs = list(Job.objects.order_by("pk")[:3])
    assert len(jobs) == 3
    Job.objects.filter(pk=jobs[0].pk).update(jobStatus="failed", pilotErrorCode=1305, prodUserName="alice")
    Job.objects.filter(pk=jobs[1].pk).update(jobStatus="failed", exeErrorCode=65, prodUserName="bob")
    failed = client.get("/api/v1/jobs/", {"status": "failed"}).json()["results"]
    assert sorted(j["PandaID"] for j in failed) == [jobs[0].pk, jobs[1].pk]
    old_name = client.get("/api/v1/jobs/", {"jobStatus": "failed"}).json()["results"]
    assert sorted(j["PandaID"] for j in old_name) == [jobs[0].pk, jobs[1].pk]
    by_error = client.get("/api/v1/jobs/", {"error": "pilot:1305"}).json()["results"]
    assert [j["PandaID"] for j in by_error] == [jobs[0].pk]
    assert [j["PandaID"] for j in client.get("/api/v1/jobs/", {"user": "bob"}).json()["results"]] == [jobs[1].pk]
    bad_error = client.get("/api/v1/jobs/", {"error": "1305"})
    assert bad_error.status_code == 400
    assert "component:code" in bad_error.json()["error"]["fields"]["error"][0]
    unknown = client.get("/api/v1/jobs/", {"jobstatus": "failed"})
    assert unknown.status_code == 400
    message = unknown.json()["error"]["fields"]["jobstatus"][0]
    assert message.startswith("unknown query parameter; this operation takes: ")
    assert "jobStatus" in message
    assert " status," in message
    choice = client.get("/api/v1/jobs/", {"status": "fialed"})
    assert choice.status_code == 400
    assert choice.json()["error"]["fields"]["status"] == [
        "'fialed' is not one of: " + ", ".join(value for value, _ in Job._meta.get_field("jobStatus").choices)
    ]
    assert client.get("/api/v1/tasks/", {"foo": "1"}).status_code == 400
    assert client.get("/api/v1/tasks/", {"status": "running", "page": "1"}).status_code == 200


def test_a_bare_scenario_is_held_to_the_schema_as_a_wrapped_one(client):
    import json
    from pathlib import Path

    base = json.loads(Path("docs/examples/job_brokerage.json").read_text())
    for body, where in (
        ({**base, "gdpconfg": {}}, "$: unknown key 'gdpconfg' (did you mean 'gdpconfig'?)"),
        (
            {**base, "task": {**base["task"], "corecount": 8}},
            "$.task: unknown key 'corecount' (did you mean 'coreCount'?)",
        ),
        ({"plugin": "atlas_prod_task", "foo": 1}, "$: unknown key 'foo'"),
    ):
        for sent in (body, {"scenario": body}):
            answer = client.post("/api/v1/broker/preview", sent, content_type="application/json")
            assert answer.status_code == 400, sent
            assert answer.json()["error"]["fields"]["scenario"] == [where]


def test_a_task_and_a_job_carry_their_outputs_and_event_service_state(client):
    from brokerage import states
    from brokerage.services.outputs import outputs_register

    task = factories.TaskFactory(status="running", eventService=1, taskName="mc23.9.simul", processingType="simul")
    outputs_register(task_ids=[task.pk], now=NOW)
    output = task.datasets.get(type="output")
    job = factories.JobFactory(task=task, jobStatus="merging", jobSubStatus="es_wait", eventService=states.ES_JOB)
    factories.DatasetFileFactory(task=task, dataset=output, type="output", status="prepared", outPandaID=job.pk,
                                 lfn=f"HITS.{task.pk:08d}._000001.pool.root", fsize=700)  # fmt: skip
    file = factories.DatasetFileFactory(dataset=factories.DatasetFactory(task=task), status="running")
    for number, status in enumerate(("done", "done", "ready")):
        factories.EventFactory(file=file, PandaID=job.pk, status=status, job_processID=number)
    body = get(client, f"/api/v1/tasks/{task.pk}/contents/")
    by_type = {row["type"]: row for row in body["datasets"]}
    assert by_type["output"]["datasetName"] == f"mc23.9.simul.HITS_tid{task.pk:08d}_00"
    assert (by_type["output"]["nFiles"], by_type["output"]["by_status"]) == (1, [{"status": "prepared", "count": 1}])
    assert (by_type["log"]["nFiles"], by_type["log"]["by_status"]) == (0, [])
    assert body["events"]["by_status"] == [{"status": "ready", "count": 1}, {"status": "done", "count": 2}]
    assert body["events"]["jobs"] == [{"kind": "ES jobs", "count": 1}]
    body = get(client, f"/api/v1/jobs/{job.pk}/contents/")
    assert body["jobSubStatus"] == "es_wait"
    # no input file recorded for it: ${IN} stays for the reader to see; three ranges from event 0
    assert body["parameters"] == (
        f"--inputFile=${{IN}} --outputFile=HITS.{task.pk:08d}._000001.pool.root --randomSeed=${{RNDMSEED}} "
        "--skipEvents=0 --maxEvents=${MAXEVENTS}"
    )
    assert [(f["lfn"], f["status"], f["fsize"]) for f in body["outputs"]] == [
        (f"HITS.{task.pk:08d}._000001.pool.root", "prepared", 700)
    ]
    assert body["event_service"]["sentence"].startswith("Event service job (es_wait): its event ranges are done;")
    assert get(client, f"/api/v1/jobs/{factories.JobFactory().pk}/contents/")["event_service"] is None
