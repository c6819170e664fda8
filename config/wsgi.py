"""WSGI entry point; production settings unless DJANGO_SETTINGS_MODULE says otherwise."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = get_wsgi_application()

from brokerage.db_session import database_role_set  # noqa: E402  (needs the apps loaded above)

database_role_set("web")
