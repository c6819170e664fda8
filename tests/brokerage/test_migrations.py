"""Migrations: complete for the models, and reversible on the database under test (SQLite or PostgreSQL)."""

import pytest
from django.core.management import call_command
from django.db import connection


@pytest.mark.django_db
def test_models_and_migrations_agree():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_migrations_unapply_and_apply_again():
    call_command("migrate", "brokerage", "zero", verbosity=0)
    assert "jedi_tasks" not in connection.introspection.table_names()
    call_command("migrate", verbosity=0)
    tables = set(connection.introspection.table_names())
    assert {"jedi_tasks", "panda_jobs", "gdpconfig", "gdpconfig_changes", "jedi_process_lock"} <= tables


@pytest.mark.django_db(transaction=True)
def test_traces_and_frames_move_to_their_own_tables_and_back():
    """Issue 32: a decision stored before the traces had a table of their own keeps its trace, its base and its
    cycle's frame through the migration, and gets them back when it is unapplied."""
    call_command("migrate", "brokerage", "0020", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO brokerage_cycles (plugin, started, finished, status, error, worker, gdpconfig, frame, "
            "n_decisions, n_assigned, n_pending, n_throttled) VALUES ('atlas_prod_task', '2026-01-02 03:04:05', "
            "'2026-01-02 03:04:06', 'succeeded', '', 'w:1', '{}', %s, 2, 0, 2, 0)",
            [b"frame-bytes"],
        )
        cursor.execute("SELECT max(id) FROM brokerage_cycles")
        cycle = cursor.fetchone()[0]
        insert = (
            "INSERT INTO brokerage_decisions (cycle_id, plugin, created, outcome, chosen, n_candidates, n_passed, "
            "primary_reason, message, seed, trace, trace_base_id) VALUES (%s, 'atlas_prod_task', "
            "'2026-01-02 03:04:05', 'pending', '', 3, 0, 'cpu', 'none', 7, %s, %s)"
        )
        cursor.execute(insert, [cycle, b"base-trace", None])
        cursor.execute("SELECT max(id) FROM brokerage_decisions")
        base = cursor.fetchone()[0]
        cursor.execute(insert, [cycle, b"delta-trace", base])
    call_command("migrate", "brokerage", verbosity=0)
    from brokerage.models import CycleFrame, DecisionTrace

    traces = {row.trace.tobytes() if hasattr(row.trace, "tobytes") else bytes(row.trace): row.base_id
              for row in DecisionTrace.objects.all()}  # fmt: skip
    assert traces == {b"base-trace": None, b"delta-trace": base}
    assert bytes(CycleFrame.objects.get(cycle_id=cycle).frame) == b"frame-bytes"
    call_command("migrate", "brokerage", "0020", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT trace, trace_base_id FROM brokerage_decisions ORDER BY id")
        assert [(bytes(trace), base_id) for trace, base_id in cursor.fetchall()] == [
            (b"base-trace", None),
            (b"delta-trace", base),
        ]
        cursor.execute("SELECT frame FROM brokerage_cycles WHERE id = %s", [cycle])
        assert bytes(cursor.fetchone()[0]) == b"frame-bytes"
    call_command("migrate", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_tokens_made_before_our_token_model_are_moved_with_their_digest():
    """Issue 47: migration 0041 moves knox's rows into our token model (a number for a key, so no address names a
    digest) and empties knox's table; the token still authenticates."""
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.utils import timezone
    from knox.crypto import hash_token
    from rest_framework.test import APIClient

    from brokerage.models import ApiToken

    call_command("migrate", "brokerage", "0040", verbosity=0)
    user = User.objects.create_user("old-client", password="x" * 20)
    secret = "bm_" + "a" * 64
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO knox_authtoken (digest, token_key, user_id, created, expiry) VALUES (%s, %s, %s, %s, %s)",
            [hash_token(secret), secret[:15], user.pk, timezone.now(), timezone.now() + timedelta(days=1)],
        )
    call_command("migrate", "brokerage", verbosity=0)
    moved = ApiToken.objects.get()
    assert (moved.user_id, moved.digest, moved.token_key) == (user.pk, hash_token(secret), secret[:15])
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM knox_authtoken")
        assert cursor.fetchone()[0] == 0
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert client.get("/api/v1/tasks/").status_code == 200
