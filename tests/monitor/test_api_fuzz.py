"""Schemathesis against our own OpenAPI schema, in process: generated requests (valid and invalid, bounded in
number) to every operation never get a server error — bad input is a 400 with field messages."""

import os

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.jobs.conftest import make_one_queue_grid, make_ready_task

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())


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
    """A task with files and a job set, so that lookups and previews have something to find."""
    from brokerage.services.jobs import job_generation_cycle_run
    from tests import factories

    make_one_queue_grid()
    work_queue = factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)
    make_ready_task(work_queue, files=3, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=timezone.now())


@pytest.mark.django_db
@schema.parametrize()
# bounded and reproducible in the suite; API_FUZZ_EXAMPLES=200 API_FUZZ_RANDOM=1 for a deeper local run
@settings(
    max_examples=int(os.environ.get("API_FUZZ_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=not os.environ.get("API_FUZZ_RANDOM"),
)
def test_no_server_error(case, some_data):
    case.call_and_validate(checks=[not_a_server_error])
