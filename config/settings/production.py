"""Production settings: DEBUG off, HTTPS only, secure cookies. Passes `manage.py check --deploy`.

Needs SECRET_KEY, ALLOWED_HOSTS and DATABASE_URL (PostgreSQL) in the environment, and a broker URL
(Redis or RabbitMQ) in CELERY_BROKER_URL when workers run on more than one machine.
"""

import os

os.environ["DJANGO_DEBUG"] = "false"

from .base import *  # noqa: F403
from .base import env_bool, env_list

DEBUG = False
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
X_FRAME_OPTIONS = "DENY"

# A production API answers anonymous clients only when told so (a public monitor sets API_ANONYMOUS_READ=true).
API_ANONYMOUS_READ = env_bool("API_ANONYMOUS_READ", False)
DASHBOARD_ANONYMOUS_READ = env_bool("DASHBOARD_ANONYMOUS_READ", API_ANONYMOUS_READ)
