"""The API's conventions (issue 35, finding 10): a bare scenario file is a preview request, an unknown enum value in
a filter is a 400 in the API and the pages alike, missing credentials are a 401 that says how to authenticate, one
error code per kind of error, and one trailing-slash rule: every path answers with and without its final slash."""

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db

EXAMPLES = sorted(Path("docs/examples").glob("*.json"))


def post(client, url, body):
    return client.post(url, body, content_type="application/json")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_scenario_previews_bare_as_it_does_wrapped(client, path):
    scenario = {"now": "2026-11-01T12:00:00Z", **json.loads(path.read_text())}  # a file without `now` decides now
    bare = post(client, "/api/v1/broker/preview", scenario)
    wrapped = post(client, "/api/v1/broker/preview", {"scenario": scenario})
    assert bare.status_code == 200, bare.content
    assert bare.json() == wrapped.json()


def test_a_task_preview_still_names_the_task_by_its_id(client):
    # a task id, not an object: the task preview (here of a task that does not exist), not a bare scenario
    missing = post(client, "/api/v1/broker/preview", {"task": 999999, "plugin": "atlas_prod_task"})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "url", ["/api/v1/decisions/?plugin=bogus", "/api/v1/cycles/?plugin=bogus", "/api/v1/decisions/?outcome=bogus"]
)
def test_an_unknown_enum_value_in_an_api_filter_is_a_400_naming_it(client, url):
    response = client.get(url)
    assert response.status_code == 400
    field = url.split("?")[1].split("=")[0]
    assert "bogus" in response.json()["error"]["fields"][field][0]


def test_the_plugins_a_filter_accepts_are_the_installations_and_the_throttler(client):
    for plugin in ("atlas_prod_task", "atlas_prod_job", "atlas_anal_job", "wmcore_pull", "prod_job_throttler"):
        assert client.get(f"/api/v1/decisions/?plugin={plugin}").status_code == 200


def test_an_unknown_plugin_on_the_decisions_page_is_a_400_saying_so(client):
    page = client.get("/decisions/?plugin=bogus")
    assert page.status_code == 400
    assert "&#x27;bogus&#x27; is not a plugin" in page.content.decode()


def test_missing_credentials_are_a_401_with_how_to_authenticate(client):
    response = post(client, "/api/v1/dirac/match", {"setup": "LHCb-Production", "cpuTime": 1000})
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["error"]["code"] == "not_authenticated"


@pytest.mark.parametrize(
    ("method", "url", "status", "code"),
    [
        ("get", "/api/v1/tasks/999999/", 404, "not_found"),  # a missing object
        ("get", "/api/v1/no-such-thing/", 404, "not_found"),  # a missing route
        ("get", "/api/v1/decisions/999999/scenario/", 404, "not_found"),
        ("get", "/api/v1/broker/preview", 405, "method_not_allowed"),
    ],
)
def test_one_error_code_per_kind_of_error(client, method, url, status, code):
    response = getattr(client, method)(url)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code


@pytest.mark.parametrize(
    "path",
    ["/api/v1/decisions", "/api/v1/cycles", "/api/v1/tasks", "/api/v1/dirac/task-queues", "/api/v1/gdpconfig"],
)
def test_every_path_answers_with_and_without_its_final_slash(client, path):
    bare = client.get(path)
    slashed = client.get(path + "/")
    assert bare.status_code == slashed.status_code == 200
    assert bare.json() == slashed.json()


def test_a_post_works_at_either_form_of_its_path(client):
    scenario = json.loads(Path("docs/examples/job_brokerage.json").read_text())
    one = post(client, "/api/v1/broker/preview", scenario)
    other = post(client, "/api/v1/broker/preview/", scenario)
    assert one.status_code == other.status_code == 200
    assert one.json() == other.json()
