"""manage.py api_token (issue 47): a token for a user under any settings, shown once, kept as a digest."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from brokerage.models import ApiToken

pytestmark = pytest.mark.django_db


def test_a_token_is_printed_once_and_works():
    User.objects.create_user("pilot-factory", password="x" * 20)
    out = StringIO()
    call_command("api_token", "pilot-factory", "--name", "CERN harvester", "--days", "30", stdout=out)
    secret = out.getvalue().strip()
    stored = ApiToken.objects.get()
    assert secret.startswith("bm_")
    assert secret not in (stored.digest, stored.token_key)
    assert stored.name == "CERN harvester"
    assert timedelta(days=29, hours=23) < stored.expiry - timezone.now() <= timedelta(days=30)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert client.get("/api/v1/tasks/").status_code == 200


def test_output_writes_an_owner_only_file_without_a_newline(tmp_path):
    User.objects.create_user("pilot", password="x" * 20)
    target = tmp_path / "token"
    target.write_text("old")
    out = StringIO()
    call_command("api_token", "pilot", "--output", str(target), stdout=out)
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    secret = target.read_text()
    assert secret.startswith("bm_")
    assert "\n" not in secret
    assert secret not in out.getvalue()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["nobody"], "username: no active user 'nobody'"),
        (["inactive"], "username: no active user 'inactive'"),
        (["kim", "--days", "0"], "--days: from 1 to 3660"),
        (["kim", "--name", "n" * 101], "--name: at most 100 characters"),
        (["kim", "--output", "/nonexistent-folder/token"], "--output: /nonexistent-folder/token: No such file"),
    ],
)
def test_bad_arguments_exit_2_naming_the_problem(arguments, message):
    User.objects.create_user("kim", password="x" * 20)
    User.objects.create_user("inactive", password="x" * 20, is_active=False)
    with pytest.raises(CommandError, match=message) as raised:
        call_command("api_token", *arguments, stdout=StringIO())
    assert raised.value.returncode == 2
    assert not ApiToken.objects.exists()
