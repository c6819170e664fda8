"""Development settings: DEBUG on unless DJANGO_DEBUG says otherwise; everything else from the environment."""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")

from .base import *  # noqa: F403
