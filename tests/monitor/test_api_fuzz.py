"""Schemathesis against our own OpenAPI schema, in process, with every check that applies to single requests:
no server error, responses that conform to the schema (body, status code, content type, headers), invalid
requests refused, valid requests accepted, missing headers and unsupported methods answered properly, and, with
a token, no operation that ignores authentication. Every operation, anonymous and with a token; bounded and
reproducible in the suite (API_FUZZ_EXAMPLES=200 API_FUZZ_RANDOM=1 for a deeper local run)."""

import os
from datetime import UTC, datetime, timedelta

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    not_a_server_error,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from schemathesis.config import SchemathesisConfig

from monitor.api.schema import PANDA_PATHS
from tests.jobs.conftest import make_one_queue_grid, make_ready_task

TOKEN = "bm_" + "f" * 64  # the fuzzing superuser's token, created by the `some_data` fixture
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    missing_required_header,
    unsupported_method,
]
# PanDA's own methods (monitor.panda_api) keep PanDA's contract: a request they refuse is answered in a 200 with
# success false (panda-client reads the message there), so "invalid data is a 4xx" does not apply to them
PANDA_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    missing_required_header,
]
GENERATION = {"mode": "all"}  # positive and negative
anonymous = schemathesis.openapi.from_wsgi(
    "/api/schema/?format=json", get_wsgi_application(), config=SchemathesisConfig.from_dict({"generation": GENERATION})
)
with_token = schemathesis.openapi.from_wsgi(
    "/api/schema/?format=json",
    get_wsgi_application(),
    config=SchemathesisConfig.from_dict(
        {"generation": GENERATION, "auth": {"openapi": {"tokenAuth": {"api_key": f"Token {TOKEN}"}}}}
    ),
)


def unique_element_ids(context, body) -> bool:
    """The one rule of the preview's scenario that JSON Schema cannot state: WMCore element ids are unique (the
    engine refuses a repeated id with its path). Bodies that repeat one are left out of the valid requests."""
    scenario = body.get("scenario") if isinstance(body, dict) else None
    elements = scenario.get("elements") if isinstance(scenario, dict) else None
    if not isinstance(elements, list):
        return True
    ids = [str(item.get("id", item.get("_id"))) for item in elements if isinstance(item, dict)]
    return len(ids) == len(set(ids))


def narrowed_skip_search(context, query) -> bool:
    """The decisions filter `queue_skipped` reads traces, so it needs a task, a cycle or a window of a day
    (a 400 says so): a dependency between parameters JSON Schema cannot state. Queries without one are left out of
    the valid requests (tests/monitor/test_api.py checks the 400)."""
    if not isinstance(query, dict) or "queue_skipped" not in query:
        return True
    if any(query.get(key) not in (None, "") for key in ("jediTaskID", "cycle")):
        return True
    if query.get("created_after") in (None, ""):
        return False
    try:
        after = datetime.fromisoformat(str(query["created_after"]))
        before = datetime.fromisoformat(str(query["created_before"])) if query.get("created_before") else None
    except ValueError:
        return True  # not a time: refused for that, as it should be
    if after.tzinfo is None or (before is not None and before.tzinfo is None):
        return True
    return (before or datetime.now(UTC)) - after <= timedelta(days=1)


for fuzzed in (anonymous, with_token):
    fuzzed.hook("filter_body")(unique_element_ids)
    fuzzed.hook("filter_query")(narrowed_skip_search)

FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("API_FUZZ_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=not os.environ.get("API_FUZZ_RANDOM"),
)


@pytest.fixture
def keep_connection():
    """Like Django's test client: the test's transaction must survive each request (the real WSGI handler
    closes the database connection when a request ends)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def some_data(db, keep_connection):
    """A task with files and a job set, so that lookups and previews have something to find, and a superuser
    with the token the `with_token` schema sends."""
    from django.contrib.auth.models import User

    from brokerage.services.jobs import job_generation_cycle_run
    from tests import factories

    make_one_queue_grid()
    work_queue = factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)
    make_ready_task(work_queue, files=3, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=timezone.now())
    factories.api_token(User.objects.create_superuser("fuzz", password="x"), TOKEN)


def test_both_schemas_cover_every_operation():
    assert len(list(anonymous.get_all_operations())) == len(list(with_token.get_all_operations())) >= 30


@pytest.mark.django_db
@anonymous.parametrize()
@FUZZ_SETTINGS
def test_anonymous_requests_keep_the_contract(case, some_data):
    case.call_and_validate(checks=PANDA_CHECKS if case.path.startswith(PANDA_PATHS) else CHECKS)


@pytest.mark.django_db
@with_token.parametrize()
@FUZZ_SETTINGS
def test_requests_with_a_token_keep_the_contract(case, some_data):
    checks = PANDA_CHECKS if case.path.startswith(PANDA_PATHS) else CHECKS
    case.call_and_validate(checks=[*checks, ignored_auth])
