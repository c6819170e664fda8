"""Shared fixtures. Database access only where a test asks for it (pytest-django's `db` marks)."""

import os

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _clear_cache():
    """Each test starts with an empty cache, so a cached gdpconfig never leaks between tests; and with none of the
    process's own memories of stored rows (decoded traces and frames, parsed inputs, the pulls later ones are
    stored against): a test database starts again with the same ids and other contents, which a live one never
    does."""
    from brokerage.selectors.decisions import decoded_caches_clear
    from brokerage.selectors.inputs import inputs_caches_clear
    from brokerage.services.inputs import parts_known_forget
    from brokerage.services.wmcore.common import pull_bases_forget

    cache.clear()
    decoded_caches_clear()
    inputs_caches_clear()
    parts_known_forget()
    pull_bases_forget()
    yield
    cache.clear()


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.org", "a-long-test-password")


@pytest.fixture
def admin_client_logged(client, superuser):
    client.force_login(superuser)
    return client


# What gives a test a database: pytest-django's marks and fixtures, a live server, a module's fixture that sets up
# the database and unblocks it (every test lists django_db_blocker, through pytest-django's own autouse fixtures,
# so that one tells nothing)
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server",
     "django_db_setup"}
)  # fmt: skip


def pytest_collection_modifyitems(config, items):
    """With DATABASE_TESTS_ONLY set (make test's second pass, on PostgreSQL), only the tests that use a database:
    the others — the pure engine's, plain functions' — cannot reach one (pytest-django blocks it), ran in the first
    pass and do the same whatever the database."""
    if not os.environ.get("DATABASE_TESTS_ONLY"):
        return
    keep, drop = [], []
    for item in items:
        uses = item.get_closest_marker("django_db") is not None or DATABASE_FIXTURES & set(item.fixturenames)
        (keep if uses else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
