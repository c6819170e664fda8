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
