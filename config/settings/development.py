"""Development settings: DEBUG on unless DJANGO_DEBUG says otherwise; everything else from the environment. Static
files come straight from the source tree (no collectstatic, edits seen at once)."""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")

from .base import *  # noqa: F403

STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405  (WhiteNoise warns of a missing one; nothing is collected)
DEV_ADMIN = DEBUG  # noqa: F405
