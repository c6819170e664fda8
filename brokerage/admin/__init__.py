"""Django admin for the domain model and gdpconfig."""

from . import domain, gdpconfig  # noqa: F401  (registers the ModelAdmins)
