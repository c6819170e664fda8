"""Startup checks of settings the engine reads (`manage.py check`): a bad DIRAC_GROUPS or DIRAC_CPU_SEGMENTS names
the setting and the entry instead of failing at the first match."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from brokerage.engine.plugins.dirac_match import cpu_segments_from, groups_from
from brokerage.engine.scenario import ScenarioError


@register()
def dirac_settings_check(app_configs=None, **kwargs) -> list[Error]:
    errors = []
    for name, read in (
        ("DIRAC_GROUPS", lambda value: groups_from(value, "DIRAC_GROUPS")),
        ("DIRAC_CPU_SEGMENTS", lambda value: cpu_segments_from(list(value), "DIRAC_CPU_SEGMENTS")),
    ):
        try:
            read(getattr(settings, name))
        except ScenarioError as error:
            errors.append(Error(str(error), hint=f"Fix the {name} environment variable.", id="brokerage.E101"))
    shares = getattr(settings, "DIRAC_GROUP_SHARES", {})
    if not isinstance(shares, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in shares.values()
    ):
        errors.append(Error("DIRAC_GROUP_SHARES: expected an object of group → share (0 or more)", id="brokerage.E102"))
    return errors
