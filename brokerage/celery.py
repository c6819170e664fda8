"""Alias of config.celery for one release (issue 48): `celery -A brokerage.celery worker` in an existing unit file
keeps working. New installations use `celery -A config.celery`."""

from config.celery import app  # noqa: F401
