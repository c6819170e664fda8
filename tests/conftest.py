"""Shared fixtures. Database access only where a test asks for it (pytest-django's `db` marks)."""

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
