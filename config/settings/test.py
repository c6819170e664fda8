"""Settings for the test suite: the database comes from DATABASE_URL (SQLite when unset), fast hashing."""

import os
import tempfile

os.environ.setdefault("DJANGO_DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "test-only-key-" + "x" * 50)
os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="brokerage-test-var-"))

from .base import *  # noqa: F403

ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
# Pages are rendered without a collectstatic; WhiteNoise finds the files in the source tree (tests of the compressed,
# hashed files collect them into a directory of their own: tests/monitor/test_staticfiles.py)
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405  (WhiteNoise warns of a missing one; nothing is collected)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests"}}
CELERY_TASK_ALWAYS_EAGER = False
# Tests change the jobs between two cycles of one test: each cycle reads its own counts (one test sets a maximum age)
JOB_STATISTICS_MAX_AGE_SECONDS = 0
# The schema fuzzing sends many requests in a row; the throttle itself is tested with its own rate.
REST_FRAMEWORK = {
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_THROTTLE_RATES": {
        scope: "100000/minute" for scope in ("anon", "user", "dashboard_anon", "dashboard_user", "pilot")
    },
}
# The suite's own process beats when it takes a lock or a claim; its background beats would write outside the
# tests' transactions, so they are an hour apart here (worker processes in the production-path tests beat fast).
HEARTBEAT_SECONDS = 3600.0
