"""No request answers 5xx (issue 31 found 54 of 6,229 hand-made requests doing so): every dashboard and API
parameter, and every name in a path, is fed "²" (isdigit() is true, int() fails), a NUL (PostgreSQL refuses it),
"%_%\\" (LIKE wildcards and an escape; django-filter's message formatting choked on it), 10,000 characters and −1.
Both databases (the suite runs on SQLite and PostgreSQL). Under /api/ every error, 4xx included, is the JSON error.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.test import Client

from brokerage.selectors.decisions import DECISION_FILTERS
from brokerage.selectors.jobs import JOB_FILTERS
from brokerage.selectors.tasks import TASK_FILTERS

HOSTILE = ("²", "\x00", "%_%\\", "x" * 10_000, "-1")

# every parameter each page reads (the selectors' filter lists, plus the pages' own)
PAGES = {
    "/": ["refresh"],
    "/search/": ["q"],
    "/tasks/": [*TASK_FILTERS, "window", "q", "sort", "page", "refresh"],
    "/jobs/": [*JOB_FILTERS, "page", "sort"],
    "/queues/": ["status"],
    "/decisions/": [*DECISION_FILTERS, "window", "page"],
    "/gdpconfig/": ["task", "preview_key", "preview_value"],
    "/dirac/": ["job"],
    "/wmcore/": ["request"],
    "/timeouts/": ["page"],
    "/shares/": [],
    "/tasks/{task}/": ["decision", "preview_key", "preview_value", "preview_plugin", "refresh"],
}
NAMED = ("/queues/{}/", "/sites/{}/", "/wmcore/requests/{}/", "/dirac/jobs/{}/", "/tasks/{}/", "/jobs/{}/")


@pytest.fixture(scope="module")
def api_operations(django_db_setup, django_db_blocker):
    """(path template, query parameter names) of every GET operation in our OpenAPI schema."""
    with django_db_blocker.unblock():
        schema = Client().get("/api/schema/?format=json").json()
    operations = []
    for path, item in schema["paths"].items():
        get = item.get("get")
        if get is None:
            continue
        parameters = [*item.get("parameters", []), *get.get("parameters", [])]
        operations.append((path, sorted({p["name"] for p in parameters if p["in"] == "query"})))
    return operations


def fill(template: str, value: str) -> str:
    out, rest = "", template
    while "{" in rest:
        before, _, after = rest.partition("{")
        _, _, rest = after.partition("}")
        out += before + quote(value, safe="")
    return out + rest


def assert_answered(response, path: str, what: str):
    assert response.status_code < 500, f"{path} {what}: {response.status_code}"
    if path.startswith("/api/") and response.status_code >= 400:
        error = response.json()["error"]
        assert error["status"] == response.status_code, (path, what)
        assert error["message"], (path, what)


@pytest.fixture
def clients(db):
    anonymous = Client()
    viewer = Client()
    viewer.force_login(User.objects.create_superuser("hostile", password="x" * 20))
    return anonymous, viewer


def test_every_dashboard_parameter_survives_hostile_values(clients, settings):
    settings.DASHBOARD_ANONYMOUS_READ = True
    from tests import factories

    task = factories.TaskFactory()
    for client in clients:
        for template, names in PAGES.items():
            path = template.format(task=task.pk)
            for name in names:
                for value in HOSTILE:
                    assert_answered(client.get(path, {name: value}), path, f"{name}={value[:12]!r}")


def test_every_name_in_a_path_survives_hostile_values(clients, settings):
    settings.DASHBOARD_ANONYMOUS_READ = True
    settings.API_ANONYMOUS_READ = True
    for client in clients:
        for template in NAMED:
            for value in HOSTILE:
                path = template.format(quote(value, safe=""))
                assert_answered(client.get(path), path, repr(value[:12]))


def test_every_api_parameter_survives_hostile_values(clients, api_operations, settings):
    settings.API_ANONYMOUS_READ = True
    for client in clients:
        for template, names in api_operations:
            for value in HOSTILE:
                path = fill(template, value)
                assert_answered(client.get(path), path, f"path {value[:12]!r}")
                concrete = fill(template, "1")
                for name in names:
                    assert_answered(client.get(concrete, {name: value}), concrete, f"{name}={value[:12]!r}")


def test_the_filter_that_crashed_django_filter_is_a_400_naming_it(clients):
    anonymous, _ = clients
    response = anonymous.get("/api/v1/jobs/", {"isScout": "%_%\\"})
    assert response.status_code == 400
    assert "isScout" in response.json()["error"]["fields"]


def test_a_nul_is_named_as_the_problem(clients):
    anonymous, _ = clients
    response = anonymous.get("/api/v1/tasks/", {"status": "run\x00ning"})
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "status": ["a NUL character (\\u0000) is not allowed in a query parameter."]
    }
    assert anonymous.get("/queues/a%00b/").status_code == 400
