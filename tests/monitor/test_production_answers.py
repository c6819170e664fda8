"""What the production settings' clients get (issue 47): pilots reach their paths with the dashboard and the API
closed to anonymous readers, an unknown admin address is our 404, the API's schema and docs follow the API's read
rule, and a database that cannot be reached is a 503 with Retry-After in each client's shape."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Permission, User
from django.db import OperationalError
from django.test import Client
from rest_framework.test import APIClient

from brokerage.models import Job
from tests import factories


def form_post(client, path: str, fields: dict):
    """A form post as the pilot sends one (application/x-www-form-urlencoded)."""
    return client.post(path, urlencode(fields), content_type="application/x-www-form-urlencoded")


pytestmark = pytest.mark.django_db


@pytest.fixture
def closed(settings):
    """The production settings' access rule: nothing readable without signing in or a token."""
    settings.API_ANONYMOUS_READ = settings.DASHBOARD_ANONYMOUS_READ = False


def pilot_client() -> APIClient:
    user = User.objects.create_user("pilot", password="x" * 20)
    user.user_permissions.add(Permission.objects.get(codename="change_job"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {factories.api_token(user, name='pilot')}")
    return client


def test_a_pilot_with_a_token_reaches_the_dispatcher_not_the_sign_in_page(closed):
    """Finding 2: /server/panda/… and /cache/… answered 302 → /login/ even with a valid token."""
    queue = factories.PandaQueueFactory(name="SAT_Q", pilot_driven=True)
    job = factories.JobFactory(jobStatus="running", computingSite=queue.name)
    pilot = pilot_client()
    got = form_post(pilot, "/server/panda/getJob", {"siteName": "SAT_Q", "node": "wn1"})
    assert got.status_code == 200
    assert got.json()["StatusCode"] == 20  # no activated job there: the dispatcher answered
    beat = form_post(pilot, "/server/panda/updateJob", {"jobId": job.pk, "state": "running"})
    assert (beat.status_code, beat.json()["StatusCode"]) == (200, 0)
    status = form_post(pilot, "/server/panda/getStatus", {"ids": str(job.pk)})
    assert status.json() == {"StatusCode": 0, "status": "running", "command": "NULL"}
    # without a token: the dispatcher's own refusal, still no sign-in page
    anonymous = APIClient().post("/server/panda/getJob", {"siteName": "SAT_Q"}, format="multipart")
    assert (anonymous.status_code, anonymous.json()["StatusCode"]) == (200, 60)
    anonymous_status = APIClient().post("/server/panda/getStatus", {"ids": str(job.pk)}, format="multipart")
    assert anonymous_status.json()["StatusCode"] == 60
    assert Job.objects.get(pk=job.pk).jobStatus == "running"


def test_the_pilots_caches_are_public_as_in_cric_unless_closed(closed, settings):
    """The real pilot fetches its queue and storages without credentials (pilot/info/dataloader.py)."""
    factories.PandaQueueFactory(name="SAT_Q", pilot_driven=True)
    anonymous = Client()
    whole = anonymous.get("/cache/schedconfig/SAT_Q.all.json")
    assert whole.status_code == 200
    assert whole.json()["name"] == "SAT_Q"
    assert anonymous.get("/cache/ddmendpoints.json").status_code == 200
    settings.PILOT_CACHES_ANONYMOUS_READ = False
    assert anonymous.get("/cache/ddmendpoints.json").status_code == 403
    assert pilot_client().get("/cache/schedconfig/SAT_Q.all.json").status_code == 200


def test_an_unknown_admin_address_is_our_404_for_staff():
    """Finding 4: the admin's catch-all raises Http404 without a message, and our 404 view failed on it."""
    browser = Client()
    browser.force_login(User.objects.create_user("staff", password="x" * 20, is_staff=True))
    for path in ("/admin/no-such-thing/", "/admin/brokerage/nomodel/", "/admin/auth/nothing/here/"):
        answer = browser.get(path)
        assert answer.status_code == 404, path
        assert b"Brokerage monitor" in answer.content


def test_the_api_schema_and_docs_follow_the_apis_read_rule(closed):
    """Finding 7: /api/schema/ (287 KB) and /api/docs/ were public while anonymous API reading was off."""
    for path in ("/api/schema/", "/api/docs/"):
        refused = Client().get(path)
        assert refused.status_code == 401, path
        assert refused.json()["error"]["code"] == "not_authenticated"
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Token {factories.api_token(User.objects.create_user('r', password='x'))}")
    assert reader.get("/api/schema/").status_code == 200
    signed_in = Client()
    signed_in.force_login(User.objects.get(username="r"))
    assert signed_in.get("/api/docs/").status_code == 200


def test_open_reading_keeps_the_schema_public(settings):
    settings.API_ANONYMOUS_READ = True
    assert Client().get("/api/schema/").status_code == 200


AWAY = OperationalError("connection to server on socket failed: No such file or directory")


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        ("/tasks/", "page"),
        ("/login/", "page"),
        ("/api/v1/tasks/", "api"),
        ("/api/v1/task/get_status?task_id=1", "panda"),
    ],
)
def test_a_database_out_of_reach_before_any_view_is_a_503_with_retry_after(monkeypatch, closed, path, shape):
    """Finding 5 (here without stopping a server: tests/test_production_guide.py stops a real one): the session
    read by a middleware fails before any view runs, which Django hands to our handler500."""
    from django.contrib.sessions.backends.db import SessionStore

    def away(self, *args, **kwargs):
        raise AWAY

    monkeypatch.setattr(SessionStore, "load", away)
    browser = Client(raise_request_exception=False)
    browser.cookies["sessionid"] = "x" * 32  # a session to read: the database is asked first thing
    answer = browser.get(path)
    assert answer.status_code == 503
    assert answer["Retry-After"] == "30"
    if shape == "page":
        assert b"Database unavailable" in answer.content
    elif shape == "api":
        assert answer.json()["error"]["code"] == "unavailable"
    else:
        assert answer.json()["success"] is False
        assert "cannot be reached" in answer.json()["message"]


def test_a_database_lost_inside_a_view_is_a_503_too(monkeypatch):
    from monitor.api import views

    def away(*args, **kwargs):
        raise AWAY

    monkeypatch.setattr(views.TaskViewSet, "get_queryset", away)
    answer = APIClient().get("/api/v1/tasks/")
    assert (answer.status_code, answer["Retry-After"]) == (503, "30")
    monkeypatch.setattr("monitor.views.task_list", away)
    page = Client().get("/tasks/")
    assert (page.status_code, page["Retry-After"]) == (503, "30")


@pytest.mark.parametrize(("signed_in", "scope"), [(False, "dashboard_anon"), (True, "dashboard_user")])
def test_dashboard_pages_are_throttled_per_user_and_anonymous_client(signed_in, scope, monkeypatch):
    """Finding 3: dashboard pages had no throttle. Each client has its own count; the API's are apart."""
    from django.core.cache import cache

    from monitor.access import DashboardAnonThrottle, DashboardUserThrottle

    for throttle in (DashboardAnonThrottle, DashboardUserThrottle):  # the classes themselves: another test may
        # have given a base class rates of its own
        monkeypatch.setattr(throttle, "THROTTLE_RATES", {**throttle.THROTTLE_RATES, scope: "3/minute"})
    try:
        cache.clear()
        browser = Client()
        if signed_in:
            browser.force_login(User.objects.create_user("shifter", password="x" * 20))
        codes = [browser.get("/sites/").status_code for _ in range(4)]
        refused = browser.get("/tasks/")
        other = Client()
        if signed_in:
            other.force_login(User.objects.create_user("other", password="x" * 20))
            other_code = other.get("/sites/").status_code
        else:
            other_code = other.get("/sites/", REMOTE_ADDR="10.1.2.3").status_code
        api = browser.get("/api/v1/sites/").status_code
    finally:
        cache.clear()
    assert codes == [200, 200, 200, 429]
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert b"Too many requests" in refused.content
    assert other_code == 200  # another user, another address: its own count
    assert api == 200  # the API's throttle is its own


def test_anonymous_visitors_are_held_to_the_anonymous_rate_only(monkeypatch):
    """DRF's user throttle counts an anonymous client by its address as well: with DASHBOARD_ANON_RATE raised to
    10/minute and the user rate at 3, the bench's anonymous clients were refused after 3 pages."""
    from django.core.cache import cache

    from monitor.access import DashboardAnonThrottle, DashboardUserThrottle

    monkeypatch.setattr(DashboardAnonThrottle, "THROTTLE_RATES", {"dashboard_anon": "10/minute"})
    monkeypatch.setattr(DashboardUserThrottle, "THROTTLE_RATES", {"dashboard_user": "3/minute"})
    try:
        cache.clear()
        codes = [Client().get("/sites/").status_code for _ in range(11)]
    finally:
        cache.clear()
    assert codes == [200] * 10 + [429]
