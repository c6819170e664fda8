"""The health probes (monitor/health.py, brokerage/selectors/health.py; issue 53): answered without login or
throttle, cheap, and failing by name when a check fails. The database stopped under a running stack is
tests/test_production_guide.py's."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from brokerage.partitions import partitions_missing

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_answers():
    """No answer kept from another test; on PostgreSQL the partitions the housekeeping would have made ahead (the
    migrations make none), rolled back with the test."""
    from brokerage.partitions import PARTITIONED, partitioned, partitions_ahead
    from monitor import health

    if partitioned():
        for table in PARTITIONED:
            partitions_ahead(table, now=timezone.now())
    health._kept.clear()
    yield
    health._kept.clear()


def test_live_answers_without_the_database(client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/health/live")
    assert (response.status_code, response.json()) == (200, {"status": "pass"})
    assert len(queries) == 0


def test_ready_and_startup_pass_with_every_check_named(client, settings):
    settings.DASHBOARD_ANONYMOUS_READ = False  # no login needed all the same
    response = client.get("/health/ready")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["status"], body["failing"]) == ("pass", [])
    assert set(body["checks"]) == {"database", "cache", "broker", "migrations", "partitions"}
    assert all(check["ok"] for check in body["checks"].values())
    startup = client.get("/health/startup").json()
    assert set(startup["checks"]) == {"database", "migrations"}
    assert response["Cache-Control"].startswith("max-age=0")


def test_a_flood_of_probes_is_neither_throttled_nor_checked_each_time(client, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "dashboard_anon": "2/minute"}}  # fmt: skip
    client.get("/health/ready")
    with CaptureQueriesContext(connection) as queries:
        statuses = {client.get("/health/ready").status_code for _ in range(50)}
    assert statuses == {200}
    assert len(queries) == 0  # the answer kept HEALTH_CACHE_SECONDS, not one check per probe


def test_a_broker_it_cannot_write_fails_ready_by_name(client, settings, tmp_path):
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(tmp_path / "absent"),
        "data_folder_out": str(tmp_path / "absent"),
    }
    response = client.get("/health/ready")
    assert response.status_code == 503
    body = response.json()
    assert (body["status"], body["failing"]) == ("fail", ["broker"])
    assert body["checks"]["broker"]["detail"] == f"not writable: {tmp_path / 'absent'}"
    # the orchestrator's other probe is unaffected: the process still serves
    assert client.get("/health/startup").status_code == 200


def test_a_cache_it_cannot_reach_fails_ready(client, settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:9/0"}
    }
    from django.core.cache import caches

    caches._settings = None  # read the overridden CACHES
    try:
        body = client.get("/health/ready").json()
    finally:
        caches._settings = None
    assert body["failing"] == ["cache"]
    assert "ConnectionError" in body["checks"]["cache"]["detail"] or "Error" in body["checks"]["cache"]["detail"]


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="PostgreSQL partitions")
def test_partitions_not_made_ahead_are_named():
    # the test database has the partitions the migrations made; a year on, none of that year's is there
    later = datetime(2031, 6, 15, tzinfo=UTC)
    missing = partitions_missing(now=later)
    assert "brokerage_decision_traces_p20310615" in missing
    assert "brokerage_decision_traces_p20310616" in missing
    assert "panda_jobs_p203106" in missing
    assert "panda_jobs_p203107" in missing
