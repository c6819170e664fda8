"""The API keeps its contract with client input of any kind: no 500, every error in the API's JSON shape with the
field or parameter named, and the schema saying what really comes back. Each case was a finding of issue 17."""

import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from monitor.api.schema import PANDA_PATHS
from tests import factories

pytestmark = pytest.mark.django_db


def error_of(response, status):
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()["error"]
    assert body["status"] == status
    return body


@pytest.fixture
def schema(client):
    return client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


class TestBodies:
    def test_nesting_5000_deep_is_a_400_naming_the_depth(self, client):
        body = "[" * 5000 + "]" * 5000
        error = error_of(client.post("/api/v1/broker/preview", body, content_type="application/json"), 400)
        assert error["message"] == "JSON parse error - $: nested deeper than 64 levels"

    def test_nesting_just_past_the_bound_names_the_path(self, client):
        body = json.dumps({"scenario": {"plugin": "atlas_prod_task", "task": json.loads("[" * 63 + "]" * 63)}})
        error = error_of(client.post("/api/v1/broker/preview", body, content_type="application/json"), 400)
        assert error["message"].startswith("JSON parse error - $.scenario.task[0]")

    def test_a_10_mb_body_is_a_413_in_the_api_shape(self, client):
        body = json.dumps({"scenario": {"plugin": "atlas_prod_task", "x": "a" * 10_000_000}})
        error = error_of(client.post("/api/v1/broker/preview", body, content_type="application/json"), 413)
        assert error["code"] == "too_large"
        assert "at most 2621440 are accepted" in error["message"]

    def test_non_finite_numbers_are_refused(self, client):
        body = '{"scenario": {"plugin": "atlas_prod_task", "now": NaN}}'
        error = error_of(client.post("/api/v1/broker/preview", body, content_type="application/json"), 400)
        assert "JSON parse error" in error["message"]

    def test_the_suites_api_client_posts_json(self):
        error = error_of(APIClient().post("/api/v1/broker/preview", {"task": 999999}), 404)
        assert error["fields"] == {"task": ["no task 999999"]}

    def test_only_json_is_read(self, client):
        response = client.post("/api/v1/broker/preview", {"task": "1"})  # a form post
        assert error_of(response, 415)["code"] == "unsupported_media_type"

    def test_unknown_keys_are_named(self, client):
        response = client.post("/api/v1/broker/preview", {"task": 1, "gdpconfg": {}}, content_type="application/json")
        assert list(error_of(response, 400)["fields"]) == ["gdpconfg"]

    def test_flags_and_numbers_in_their_json_types(self, client):
        body = {"setup": "Production", "cpuTime": "100", "jobSharing": 0, "dry_run": True}
        response = client.post("/api/v1/dirac/match", body, content_type="application/json")
        assert error_of(response, 400)["fields"] == {
            "cpuTime": ["expected a number"],
            "jobSharing": ["expected true or false"],
        }


class TestPaths:
    @pytest.mark.parametrize("path", ["/api/v1/cycles//", "/api/v1/decisions/%22%0A%C3%9Fx/", "/api/v1/nothing"])
    def test_unknown_api_paths_are_a_json_404(self, client, path):
        assert error_of(client.get(path), 404)["code"] == "not_found"

    def test_a_write_to_an_unknown_path_is_a_404_not_a_csrf_page(self):
        session = Client(enforce_csrf_checks=True)
        assert error_of(session.delete("/api/v1/gdpconfig/%C2%84/"), 404)["code"] == "not_found"

    def test_a_csrf_failure_under_the_api_is_json(self):
        user = User.objects.create_superuser("root", password="x")
        session = Client(enforce_csrf_checks=True)
        session.force_login(user)
        response = session.post(
            "/api/v1/gdpconfig/", {"key": "NQUEUED_SAT_CAP", "value": 1}, content_type="application/json"
        )
        assert "CSRF" in error_of(response, 403)["message"]


class TestQueryParameters:
    @pytest.mark.parametrize(
        ("url", "parameter", "message"),
        [
            ("/api/v1/tasks/?page_size=lots", "page_size", "expected a whole number from 1 to 1000, got 'lots'"),
            ("/api/v1/tasks/?page_size=0", "page_size", "expected a whole number from 1 to 1000, got '0'"),
            ("/api/v1/tasks/?page=", "page", "expected a whole number from 1 to 1000000000, got ''"),
            ("/api/v1/decisions/?page_size=null", "page_size", "expected a whole number from 1 to 1000, got 'null'"),
            ("/api/v1/tasks/?status=bogus", "status", None),
            ("/api/v1/sites/?role=", "role", "a value is required when the parameter is given"),
            ("/api/v1/jobs/?isScout=maybe", "isScout", "expected true or false, got 'maybe'"),
            ("/api/v1/jobs/?jediTaskID=1.5", "jediTaskID", None),
            ("/api/v1/decisions/?created_after=", "created_after", "a value is required when the parameter is given"),
        ],
    )
    def test_invalid_values_are_a_400_naming_the_parameter(self, client, url, parameter, message):
        fields = error_of(client.get(url), 400)["fields"]
        assert list(fields) == [parameter]
        if message:
            assert fields[parameter] == [message]

    def test_an_unknown_ordering_names_the_known_fields(self, client):
        fields = error_of(client.get("/api/v1/tasks/?ordering=-bogus"), 400)["fields"]
        assert fields["ordering"][0].startswith("unknown field '-bogus': order by creationDate, currentPriority")

    def test_a_known_ordering_orders(self, client):
        first, second = factories.TaskFactory(currentPriority=1), factories.TaskFactory(currentPriority=9)
        rows = client.get("/api/v1/tasks/?ordering=-currentPriority,jediTaskID").json()["results"]
        assert [row["jediTaskID"] for row in rows] == [second.pk, first.pk]

    def test_a_page_past_the_end_is_a_404(self, client):
        assert error_of(client.get("/api/v1/tasks/?page=99"), 404)["code"] == "not_found"


class TestSchemaSaysWhatComesBack:
    def test_nullable_names_are_nullable(self, client, schema):
        share = factories.GlobalShareFactory(parent=None)
        row = client.get(f"/api/v1/global-shares/{share.name}/").json()
        assert row["parent"] is None
        components = schema["components"]["schemas"]
        for component, field in (("GlobalShare", "parent"), ("WorkQueue", "partition"), ("Task", "workQueue")):
            assert "null" in components[component]["properties"][field]["type"], (component, field)
        assert "null" in components["WMCoreElement"]["properties"]["ChildQueue"]["type"]

    def test_lists_are_lists(self, client, schema):
        for path in ("/api/v1/dirac/task-queues", "/api/v1/gdpconfig/parameters/"):
            response = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
            assert response["type"] == "array", path
            assert isinstance(client.get(path).json(), list)

    def test_every_text_query_parameter_says_it_refuses_nul(self, client, schema):
        # the server refuses NUL in any query parameter (monitor.request_guard); a cursor sent with one was a
        # "schema-valid request refused" to the fuzz test
        for path, operations in schema["paths"].items():
            if path.startswith(PANDA_PATHS):  # PanDA's contract: its own
                continue
            for method, operation in operations.items():
                for parameter in operation.get("parameters", []):
                    kind = parameter.get("schema", {})
                    if parameter["in"] == "query" and kind.get("type") == "string":
                        assert {"pattern", "enum", "format"} & set(kind), (method, path, parameter["name"])
        assert client.get("/api/v1/jobs/", {"cursor": "a\x00b"}).status_code == 400

    def test_every_operation_documents_its_errors(self, schema):
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                codes = set(operation["responses"])
                if path.startswith(PANDA_PATHS):  # PanDA's contract: its envelope, refusals in a 200
                    assert {"200", "403", "405", "413", "429"} <= codes, (method, path)
                    continue
                assert {"400", "403", "404", "406", "429"} <= codes, (method, path)
                if method in ("post", "put", "patch"):
                    assert {"413", "415"} <= codes, (method, path)
                    assert set(operation["requestBody"]["content"]) == {"application/json"}, (method, path)

    def test_anonymous_reading_is_in_the_security_requirements(self, schema):
        assert {} in schema["paths"]["/api/v1/tasks/"]["get"]["security"]
        assert {} in schema["paths"]["/api/v1/broker/preview"]["post"]["security"]
        assert {} not in schema["paths"]["/api/v1/gdpconfig/"]["post"]["security"]

    def test_number_filters_state_their_range(self, schema):
        parameters = {p["name"]: p for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"]}
        assert parameters["jediTaskID"]["schema"] == {
            "type": "integer",
            "format": "int64",
            "minimum": -(2**63),
            "maximum": 2**63 - 1,
        }
        assert parameters["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000}

    def test_gdpconfig_overrides_are_typed_per_key(self, schema):
        overrides = schema["components"]["schemas"]["GdpConfigOverrides"]
        assert overrides["properties"]["NQUEUED_SAT_CAP"]["type"] == "integer"
        assert overrides["additionalProperties"] is False
        variants = [re.compile(pattern) for pattern in overrides["patternProperties"]]
        assert any(pattern.match("DISK_THRESHOLD_Express") for pattern in variants)
        # a registered key is not a variant of a shorter one
        assert not any(pattern.match("FAST_REBRO_THRESHOLD_NQUEUE_FRAC") for pattern in variants)
        assert any(pattern.match("FAST_REBRO_THRESHOLD_NQUEUE_MC") for pattern in variants)


class TestNamesInUrls:
    """Queue, site and share names with "/", spaces or letters beyond ASCII open in pages and API paths alike."""

    NAMES = ["CERN/MCORE", "ANALY SITE", "ÉCOLE_Ω"]

    @pytest.mark.parametrize("name", NAMES)
    def test_queue_page_and_api(self, client, name):
        from django.urls import reverse

        site = factories.SiteFactory(name=f"{name}-site")
        factories.PandaQueueFactory(name=name, site=site)
        page = reverse("monitor:queue", args=[name])
        assert client.get(page).status_code == 200, page
        body = client.get(reverse("api:pandaqueue-detail", args=[name])).json()
        assert body["name"] == name
        assert client.get(reverse("api:site-detail", args=[site.name])).json()["name"] == site.name
