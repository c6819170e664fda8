"""Shared fixtures. Database access only where a test asks for it (pytest-django's `db` marks)."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _clear_cache():
    """Each test starts with an empty cache, so a cached gdpconfig never leaks between tests."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.org", "a-long-test-password")


@pytest.fixture
def admin_client_logged(client, superuser):
    client.force_login(superuser)
    return client
