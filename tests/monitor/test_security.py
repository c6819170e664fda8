"""Authorisation (issue 31, finding 3): a viewer could read every API token in the admin and write gdpconfig with
the admin's; a staff user without permissions opened the parameters page; no page sent a Content-Security-Policy;
the production dashboard was public while the API was not."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from brokerage.models import ApiToken
from tests import factories

pytestmark = pytest.mark.django_db


def viewer_with_every_view_permission() -> User:
    user = User.objects.create_user("viewer", password="x" * 20, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    return user


def test_a_viewer_cannot_read_tokens_nor_write_with_what_it_sees():
    boss = User.objects.create_superuser("boss", password="x" * 20)
    secret = factories.api_token(boss, name="pilot factory")
    factories.GdpConfigFactory(key="NQUEUED_SAT_CAP", value="300", vo="atlas", component="jobbroker")
    viewer = viewer_with_every_view_permission()
    browser = Client()
    browser.force_login(viewer)
    listing = browser.get("/admin/brokerage/apitoken/")
    assert listing.status_code == 200
    page = listing.content.decode()
    stored = ApiToken.objects.get(user=boss)
    # issue 47: its owner, name, creation and expiry; never the token, its digest or the key knox finds it by
    assert "pilot factory" in page
    assert "boss" in page
    for hidden in (secret, stored.digest, stored.token_key, secret[3:15]):
        assert hidden not in page
    view = browser.get(f"/admin/brokerage/apitoken/{stored.pk}/change/")
    assert view.status_code == 200
    assert "pilot factory" in view.content.decode()
    for hidden in (stored.digest, stored.token_key, secret[3:15]):
        assert hidden not in view.content.decode()
    # what a viewer can see is no credential
    stolen = APIClient()
    stolen.credentials(HTTP_AUTHORIZATION=f"Token {secret[:15]}")
    assert stolen.patch("/api/v1/gdpconfig/1/", {"value": 1}).status_code == 401
    # its own token reads but cannot write
    own = APIClient()
    own.credentials(HTTP_AUTHORIZATION=f"Token {factories.api_token(viewer)}")
    row = own.get("/api/v1/gdpconfig/").json()["results"][0]
    assert own.patch(f"/api/v1/gdpconfig/{row['id']}/", {"value": 1}).status_code == 403
    # the owner's token works, so the refusals above are about permission
    boss_client = APIClient()
    boss_client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert (
        boss_client.patch(f"/api/v1/gdpconfig/{row['id']}/", {"key": "NQUEUED_SAT_CAP", "value": 250}).status_code
        == 200
    )


def test_a_token_is_shown_once_when_made_in_the_admin_and_expires():
    boss = User.objects.create_superuser("boss", password="x" * 20)
    browser = Client()
    browser.force_login(boss)
    add = browser.get("/admin/brokerage/apitoken/add/")
    assert add.status_code == 200
    initial = add.context["adminform"].form.initial["expiry"]
    assert timedelta(days=89) < initial - timezone.now() <= timedelta(days=90)  # API_TOKEN_DAYS
    made = browser.post(
        "/admin/brokerage/apitoken/add/",
        {"user": boss.pk, "name": "nightly report", "expiry_0": "2099-01-01", "expiry_1": "00:00:00"},
        follow=True,
    )
    message = str(next(iter(made.context["messages"])))
    token = re.search(r"bm_[0-9a-f]{64}", message).group(0)
    assert "shown only this once" in message
    stored = ApiToken.objects.get()
    assert stored.name == "nightly report"
    assert token not in (stored.digest, stored.token_key)
    assert browser.get(f"/admin/brokerage/apitoken/{stored.pk}/change/").content.decode().count(token) == 0
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/v1/tasks/").status_code == 200
    ApiToken.objects.update(expiry=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/tasks/").status_code == 401


def test_a_header_that_is_not_utf8_is_a_401():
    response = Client().get("/api/v1/tasks/", HTTP_AUTHORIZATION=b"Token \xff\xfe".decode("latin-1"))
    assert response.status_code == 401


def admin_pages() -> list[str]:
    """Every admin page of every registered model that takes no object: lists, add forms and our own views."""
    urls = []
    for model_admin in admin.site._registry.values():
        for pattern in model_admin.get_urls():
            if pattern.name and not pattern.pattern.regex.groups and "<" not in str(pattern.pattern):
                urls.append(reverse(f"admin:{pattern.name}"))
    return sorted(set(urls))


def test_every_admin_page_checks_its_model_permission():
    staff = User.objects.create_user("staff", password="x" * 20, is_staff=True)
    browser = Client()
    browser.force_login(staff)
    pages = admin_pages()
    assert "/admin/brokerage/gdpconfig/parameters/" in pages
    assert len(pages) > 80
    opened = {url: browser.get(url).status_code for url in pages}
    assert {url: status for url, status in opened.items() if status == 200} == {}


def test_every_response_carries_a_content_security_policy():
    factories.TaskFactory()
    boss = User.objects.create_superuser("boss", password="x" * 20)
    browser = Client()
    browser.force_login(boss)
    for url in ("/", "/tasks/", "/api/v1/tasks/", "/api/docs/", "/admin/", "/login/", "/no-such-page/"):
        policy = browser.get(url)["Content-Security-Policy"]
        assert "script-src 'self';" in policy, url
        assert "frame-ancestors 'none'" in policy
        assert "unsafe-eval" not in policy
    # the API docs start Swagger UI from a script of their own, not inline
    docs = browser.get("/api/docs/").content.decode()
    assert not re.search(r"<script>(?!\s*</script>)", docs)


def test_one_anonymous_read_policy_for_the_dashboard_and_the_api(settings):
    factories.TaskFactory(userName="someone.private")
    settings.API_ANONYMOUS_READ = False
    settings.DASHBOARD_ANONYMOUS_READ = False
    anonymous = Client()
    page = anonymous.get("/tasks/")
    assert page.status_code == 302
    assert page["Location"] == "/login/?next=/tasks/"
    assert anonymous.get("/api/v1/tasks/").status_code == 401
    assert anonymous.get("/login/").status_code == 200  # the way in stays open
    user = User.objects.create_user("shifter", password="s3cret-enough-pw")
    signed_in = anonymous.post("/login/", {"username": "shifter", "password": "s3cret-enough-pw", "next": "/tasks/"})
    assert signed_in["Location"] == "/tasks/"
    assert b"someone.private" in anonymous.get("/tasks/").content
    assert user.is_authenticated
    settings.DASHBOARD_ANONYMOUS_READ = True
    assert Client().get("/tasks/").status_code == 200


def test_production_settings_keep_both_closed(monkeypatch):
    import importlib
    import sys

    monkeypatch.setenv("SECRET_KEY", "p" * 60)
    monkeypatch.delenv("API_ANONYMOUS_READ", raising=False)
    monkeypatch.delenv("DASHBOARD_ANONYMOUS_READ", raising=False)
    sys.modules.pop("config.settings.production", None)
    production = importlib.import_module("config.settings.production")
    assert production.API_ANONYMOUS_READ is False
    assert production.DASHBOARD_ANONYMOUS_READ is False
    sys.modules.pop("config.settings.production", None)
    assert reverse("login") == "/login/"
