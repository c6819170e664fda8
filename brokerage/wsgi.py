"""Alias of config.wsgi for one release (issue 48): `gunicorn brokerage.wsgi` in an existing unit file keeps working.
New installations use `gunicorn config.wsgi`."""

from config.wsgi import application  # noqa: F401
