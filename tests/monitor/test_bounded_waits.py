"""Bounded waits for web requests on PostgreSQL (brokerage.db_session, monitor.middleware): a row another
transaction holds is a 409 within DB_WEB_LOCK_TIMEOUT_MS, a query past DB_WEB_STATEMENT_TIMEOUT_MS is a 503, JSON
under /api/ and a page in the layout elsewhere; never a worker hung until gunicorn kills it (issue 31)."""

from __future__ import annotations

import os
import threading
import time
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client
from rest_framework.test import APIClient

from brokerage.db_session import database_role, database_role_set, role_timeouts
from brokerage.models import GdpConfig, Task
from tests import factories


def form_post(client, path: str, fields: dict):
    """A form post as the pilot sends one (application/x-www-form-urlencoded)."""
    return client.post(path, urlencode(fields), content_type="application/x-www-form-urlencoded")


pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="timeouts: PostgreSQL pass only"
    ),
]


@pytest.fixture
def web_role(settings):
    settings.DB_WEB_LOCK_TIMEOUT_MS = 1500
    settings.DB_WEB_STATEMENT_TIMEOUT_MS = 4000  # longer than the lock timeout, as the defaults are
    database_role_set("web")
    yield
    database_role_set(None)


def test_each_role_gets_its_own_timeouts(settings, web_role):
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "1500ms"
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "4s"
    assert database_role() == "web"
    settings.DB_CYCLE_LOCK_TIMEOUT_MS = 10000
    settings.DB_CYCLE_STATEMENT_TIMEOUT_MS = 600000
    assert role_timeouts("cycle") == (10000, 600000)
    assert role_timeouts(None) == (0, 0)
    with pytest.raises(ValueError, match="expected one of"):
        database_role_set("browser")


def hold_row(model, pk, seconds: float) -> threading.Event:
    """Holds the row FOR UPDATE from another connection (without the web role) for `seconds`."""
    held = threading.Event()

    def run():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0")
                list(model.objects.select_for_update().filter(pk=pk).values_list("pk"))
                held.set()
                time.sleep(seconds)
        finally:
            connection.close()

    threading.Thread(target=run, daemon=True).start()
    assert held.wait(10)
    return held


def test_a_write_to_a_row_held_elsewhere_answers_409_within_the_lock_timeout(web_role):
    row = factories.GdpConfigFactory(key="NQUEUED_SAT_CAP", value="300", vo="atlas", component="jobbroker")
    writer = APIClient()
    writer.force_authenticate(User.objects.create_superuser("boss", password="x" * 20))
    hold_row(GdpConfig, row.pk, seconds=8)
    started = time.monotonic()
    response = writer.patch(f"/api/v1/gdpconfig/{row.pk}/", {"key": "NQUEUED_SAT_CAP", "value": 250})
    assert time.monotonic() - started < 5
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "busy"
    assert "being changed by another process" in response.json()["error"]["message"]


def test_a_page_action_on_a_held_task_answers_409_in_the_layout(web_role):
    task = factories.TaskFactory(status="running")
    browser = Client()
    browser.force_login(User.objects.create_superuser("boss", password="x" * 20))
    hold_row(Task, task.pk, seconds=8)
    response = browser.post(f"/tasks/{task.pk}/action/", {"action": "priority", "priority": "900"})
    assert response.status_code == 409
    assert b"Busy elsewhere" in response.content
    assert f'href="/tasks/{task.pk}/"'.encode() in response.content  # back to the task's page


def test_a_runaway_query_is_a_503_not_a_hung_worker(web_role, monkeypatch, settings):
    from monitor.api import views

    settings.DB_WEB_STATEMENT_TIMEOUT_MS = 300
    database_role_set("web")  # new connections get the shorter timeout
    factories.TaskFactory()
    slow = Task.objects.extra(where=["pg_sleep(2) IS NOT NULL"])  # a query that would run for seconds per row
    monkeypatch.setattr(views.TaskViewSet, "queryset", slow)
    started = time.monotonic()
    response = APIClient().get("/api/v1/tasks/")
    assert time.monotonic() - started < 2
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "timeout"
    monkeypatch.setattr("monitor.views.task_list", lambda **kwargs: list(slow))
    page = Client().get("/tasks/")
    assert page.status_code == 503
    assert b"Took too long" in page.content


def test_panda_clients_and_pilots_get_a_held_row_in_their_own_shape(web_role, settings):
    """Issue 47, finding 8: a locked row answered panda-client and the pilot in our API's error shape."""
    from django.contrib.auth.models import Permission

    from brokerage.models import Job

    task = factories.TaskFactory(status="running")
    job = factories.JobFactory(task=task, jobStatus="running")
    user = User.objects.create_user("pilot", password="x" * 20)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["change_task", "change_job"]))
    client = APIClient()
    client.force_authenticate(user)
    hold_row(Task, task.pk, seconds=8)
    killed = client.post("/api/v1/task/kill", {"task_id": task.pk}, format="json")
    assert killed.status_code == 409
    body = killed.json()
    assert set(body) == {"success", "message", "data"}
    assert body["success"] is False
    assert "being changed by another process" in body["message"]
    hold_row(Job, job.pk, seconds=8)
    update = form_post(client, "/server/panda/updateJob", {"jobId": job.pk, "state": "running"})
    assert update.status_code == 409
    assert update.json()["StatusCode"] == 30  # failed: the pilot sends its update again
    assert "being changed by another process" in update.json()["errorDialog"]
