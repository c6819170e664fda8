"""Django admin for the domain model and gdpconfig."""

from . import decisions, domain, gdpconfig, tokens, wmcore  # noqa: F401  (registers the ModelAdmins)
