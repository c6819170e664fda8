"""OIDC ID tokens as panda-client sends them (issue 36): verified against the issuer's key set (a file here, made
with our own key pair), mapped to a user made on first use, the VO's groups kept as the token lists them, and
every bad token refused with what is wrong (403, PanDA's "Token authentication failed.")."""

from __future__ import annotations

import jwt
import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from rest_framework.test import APIClient

from brokerage.models import OidcIdentity, Task
from monitor.api import oidc
from tests import factories
from tests.oidc_issuer import ISSUER, TestIssuer, key_pair, signed_token

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def issuer_key():
    return key_pair()


@pytest.fixture
def issuer(tmp_path, settings, issuer_key):
    """Our own issuer, trusted by the server."""
    made = TestIssuer(tmp_path, issuer_key)
    made.configure(settings)
    yield made
    oidc._key_sets.clear()


def id_token(key, *, kid="key-1", lifetime=3600, **claims) -> str:
    """eva's ID token, signed with `key`."""
    claims = {"sub": "9f3c-eva", "name": "eva LUND", "preferred_username": "elund", "groups": ["/atlas"], **claims}
    return signed_token(key, kid=kid, lifetime=lifetime, **claims)


def bearer(token: str, vo: str = "atlas") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ORIGIN=vo)
    return client


def test_a_token_stands_for_a_user_made_on_first_use(issuer, issuer_key):
    task = factories.TaskFactory(status="running", userName="Eva Lund", prodSourceLabel="user")
    factories.TaskFactory(status="running", userName="someone else", prodSourceLabel="user")
    answer = bearer(id_token(issuer_key)).get("/api/v1/task/get_tasks_detailed_info_since")
    assert answer.status_code == 200
    # the user's own tasks: the token's name, each word capitalised, is the name PanDA records as the owner
    assert [record["jediTaskID"] for record in answer.json()["data"]] == [task.pk]
    user = User.objects.get(username="elund")
    assert (user.first_name, user.last_name, user.has_usable_password()) == ("eva", "LUND", False)
    # our own API reads it too
    assert bearer(id_token(issuer_key)).get("/api/v1/tasks/").status_code == 200


def test_the_vos_production_group_gives_its_permissions_and_is_left_with_the_token(issuer, issuer_key):
    production = Group.objects.create(name="atlas/production")
    production.permissions.add(Permission.objects.get(codename="change_task"))
    unrelated = Group.objects.create(name="shifters")
    task = factories.TaskFactory(status="running")
    plain = id_token(issuer_key)
    refused = bearer(plain).post("/api/v1/task/kill", {"task_id": task.pk}, format="json").json()
    assert refused["message"] == "not the task owner or no production role"
    User.objects.get(username="elund").groups.add(unrelated)
    with_role = id_token(issuer_key, groups=["/atlas", "/atlas/production", "/cms/admin"])
    killed = bearer(with_role, "atlas:production").post("/api/v1/task/kill", {"task_id": task.pk}, format="json")
    assert killed.json()["success"] is True
    assert Task.objects.get(pk=task.pk).status == "aborted"
    user = User.objects.get(username="elund")
    assert sorted(user.groups.values_list("name", flat=True)) == ["atlas/production", "shifters"]
    # a later token without the role: the VO's group is left, the admin's own group kept
    bearer(plain).get("/api/v1/task/get_status", {"task_id": task.pk})
    assert list(user.groups.values_list("name", flat=True)) == ["shifters"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"key": "other"}, "Invalid token: Signature verification failed"),
        ({"lifetime": -120}, "Invalid token: Signature has expired"),
        ({"aud": "somebody-else"}, "Invalid token: Audience doesn't match"),
        ({"iss": "https://evil.example.org/"}, "Invalid token: Invalid issuer"),
        ({"kid": "key-9"}, "No key key-9 in the issuer's key set."),
        ({"vo": "cms"}, "Unknown vo : cms"),
    ],
)
def test_bad_tokens_are_refused_with_what_is_wrong(issuer, issuer_key, change, message):
    change = dict(change)
    key = key_pair() if change.pop("key", None) else issuer_key
    vo = change.pop("vo", "atlas")
    token = id_token(key, **change)
    answer = bearer(token, vo).get("/api/v1/task/get_status", {"task_id": 1})
    assert answer.status_code == 403
    body = answer.json()
    assert body["success"] is False
    assert body["message"].startswith("Token authentication failed.")
    assert message in body["message"]
    # our own API refuses it too, in its own error body
    ours = bearer(token, vo).get("/api/v1/tasks/")
    assert ours.status_code == 401
    assert message in ours.json()["error"]["message"]


def test_without_an_issuer_or_an_audience_no_token_passes(issuer, issuer_key, settings):
    settings.OIDC_AUDIENCE = ""
    refused = bearer(id_token(issuer_key)).get("/api/v1/task/get_status", {"task_id": 1}).json()
    assert "OIDC_AUDIENCE" in refused["message"]
    settings.OIDC_ISSUER = ""
    refused = bearer(id_token(issuer_key)).get("/api/v1/task/get_status", {"task_id": 1}).json()
    assert "OIDC_ISSUER" in refused["message"]


def test_unknown_users_are_not_made_when_the_setting_is_off(issuer, issuer_key, settings):
    settings.OIDC_CREATE_USERS = False
    answer = bearer(id_token(issuer_key)).get("/api/v1/task/get_status", {"task_id": 1})
    assert answer.status_code == 403
    assert "No active user" in answer.json()["message"]
    assert not User.objects.filter(username="elund").exists()


def test_a_rotated_key_is_read_again_at_once(issuer, issuer_key):
    assert bearer(id_token(issuer_key)).get("/api/v1/task/get_status", {"task_id": 1}).status_code == 200
    rotated = key_pair()
    issuer.publish(rotated, "key-2")  # the cache still holds key-1 only
    assert bearer(id_token(rotated, kid="key-2")).get("/api/v1/task/get_status", {"task_id": 1}).status_code == 200


def test_the_demo_signs_tokens_for_its_own_users(tmp_path, settings):
    from io import StringIO

    from django.core.management import CommandError, call_command

    settings.DEMO_OIDC_ISSUER = True
    settings.OIDC_ISSUER, settings.OIDC_AUDIENCE = "http://localhost/demo-issuer", "panda-client-demo"
    settings.OIDC_JWKS_FILE, settings.OIDC_JWKS_URL = str(tmp_path / "oidc" / "jwks.json"), ""
    oidc._key_sets.clear()
    User.objects.create_user("admin", password="x", is_superuser=True)
    out = StringIO()
    call_command("demo_token", "admin", "--groups", "atlas,atlas/production", stdout=out)
    token = out.getvalue().strip()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert (claims["preferred_username"], claims["groups"]) == ("admin", ["/atlas", "/atlas/production"])
    assert oct((tmp_path / "oidc" / "issuer-key.pem").stat().st_mode & 0o777) == "0o600"
    task = factories.TaskFactory(status="running")
    killed = bearer(token).post("/api/v1/task/kill", {"task_id": task.pk}, format="json").json()
    assert killed["success"] is True  # the superuser may
    with pytest.raises(CommandError, match="username: no user 'nobody'"):
        call_command("demo_token", "nobody")
    settings.DEMO_OIDC_ISSUER = False
    with pytest.raises(CommandError, match="only under the demo settings"):
        call_command("demo_token", "admin")
    oidc._key_sets.clear()


def test_the_key_set_is_read_from_the_issuers_url(issuer, issuer_key, settings):
    """OIDC_JWKS_URL: the issuer's jwks_uri, fetched over HTTP (a local server here) and cached."""
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    fetched = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            fetched.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(issuer.jwks.parent)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings.OIDC_JWKS_FILE, settings.OIDC_JWKS_URL = "", f"http://127.0.0.1:{server.server_port}/jwks.json"
        oidc._key_sets.clear()
        for _ in range(3):
            assert bearer(id_token(issuer_key)).get("/api/v1/task/get_status", {"task_id": 1}).status_code == 200
        assert fetched == ["/jwks.json"]  # once, then from the cache
        settings.OIDC_JWKS_URL = f"http://127.0.0.1:{server.server_port}/missing.json"
        refused = bearer(id_token(issuer_key)).get("/api/v1/task/get_status", {"task_id": 1})
        assert refused.status_code == 403
        assert "The issuer's keys: HTTP Error 404" in refused.json()["message"]
    finally:
        server.shutdown()


# --- issue 47: an identity is never borrowed ---


def gdpconfig_write(client: APIClient):
    return client.post(
        "/api/v1/gdpconfig/",
        {"key": "NQUEUED_SAT_CAP", "value": 300, "vo": "atlas", "component": "jobbroker"},
        format="json",
    )


def test_a_token_naming_a_local_account_gets_a_new_user_not_that_account(issuer, issuer_key):
    """Finding 1: a correctly signed token whose preferred_username is "admin" (another sub) acted as the local
    superuser and wrote gdpconfig."""
    admin = User.objects.create_superuser("admin", password="x" * 20)
    token = id_token(issuer_key, sub="idp-user-4711", preferred_username="admin", name="Mallory Admin")
    answer = gdpconfig_write(bearer(token))
    assert answer.status_code == 403  # authenticated as someone, without the permission
    assert "permission" in answer.json()["error"]["message"].lower()
    user = OidcIdentity.objects.get(issuer=ISSUER, subject="idp-user-4711").user
    assert user != admin
    assert user.username.startswith("admin-")
    assert len(user.username) == len("admin-") + 10
    assert (user.is_superuser, user.is_staff, user.has_usable_password()) == (False, False, False)
    assert user.get_all_permissions() == set()
    # the same identity comes back to the same new user, whatever name its next token carries
    renamed = id_token(issuer_key, sub="idp-user-4711", preferred_username="root")
    assert bearer(renamed).get("/api/v1/task/get_status", {"task_id": 1}).status_code == 200
    assert User.objects.filter(is_superuser=False).count() == 1
    assert OidcIdentity.objects.get(subject="idp-user-4711").username_claim == "root"
    # admin's own account is untouched and has no identity
    assert not admin.oidc_identities.exists()


def test_an_identity_acts_as_an_existing_account_only_once_an_admin_links_it(issuer, issuer_key):
    boss = User.objects.create_superuser("boss", password="x" * 20)
    token = id_token(issuer_key, sub="boss-at-idp", preferred_username="someone-else")
    browser = Client()
    browser.force_login(boss)
    linked = browser.post(
        "/admin/brokerage/oidcidentity/add/", {"issuer": ISSUER, "subject": "boss-at-idp", "user": boss.pk}
    )
    assert linked.status_code == 302
    assert gdpconfig_write(bearer(token)).status_code == 201  # now it is boss, on purpose
    assert not User.objects.filter(username="someone-else").exists()


def test_the_same_subject_of_another_issuer_is_another_identity(issuer, issuer_key, settings):
    first = bearer(id_token(issuer_key, sub="42", preferred_username="kim"))
    assert first.get("/api/v1/task/get_status", {"task_id": 1}).status_code == 200
    settings.OIDC_ISSUER = "https://other-idp.example.org/"
    other = bearer(id_token(issuer_key, sub="42", preferred_username="kim", iss="https://other-idp.example.org/"))
    assert other.get("/api/v1/task/get_status", {"task_id": 1}).status_code == 200
    owners = {identity.issuer: identity.user.username for identity in OidcIdentity.objects.all()}
    assert owners[ISSUER] == "kim"
    assert owners["https://other-idp.example.org/"].startswith("kim-")


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"preferred_username": "adm\x00in"}, "The claim preferred_username holds a NUL character"),
        ({"sub": "x\x00y"}, "The claim sub holds a NUL character"),
        ({"name": "Eva\x00Lund"}, "The claim name holds a NUL character"),
        ({"email": "eva@\x00example.org"}, "The claim email holds a NUL character"),
        ({"preferred_username": "line\nbreak"}, "The claim preferred_username holds a control character"),
        ({"preferred_username": ["admin"]}, "The claim preferred_username is not a string"),
        ({"sub": 12345}, "Subject must be a string"),  # PyJWT checks it first
        ({"sub": ""}, "The claim sub is empty"),
        ({"preferred_username": "x" * 300}, "The claim preferred_username is over 255 long"),
    ],
)
def test_claims_no_database_can_store_are_refused_not_a_server_error(issuer, issuer_key, claims, message):
    """Finding 9: a signed token with a NUL in preferred_username was a 500."""
    token = id_token(issuer_key, **claims)
    panda = bearer(token).get("/api/v1/task/get_status", {"task_id": 1})
    assert panda.status_code == 403
    assert message in panda.json()["message"]
    ours = bearer(token).get("/api/v1/tasks/")
    assert ours.status_code == 401
    assert message in ours.json()["error"]["message"]
    assert not OidcIdentity.objects.exists()


def test_groups_that_are_not_a_list_of_text_give_no_group(issuer, issuer_key):
    Group.objects.create(name="atlas/production")
    for groups in ("/atlas/production\x00", {"a": 1}, [1, None, "/atlas/production\x00"]):
        answer = bearer(id_token(issuer_key, groups=groups)).get("/api/v1/task/get_status", {"task_id": 1})
        assert answer.status_code == 200
        assert not User.objects.get(username="elund").groups.exists()
