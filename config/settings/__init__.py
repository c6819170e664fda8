"""Settings modules: `development` (manage.py default), `production` (wsgi/asgi default), `test` (pytest)."""
