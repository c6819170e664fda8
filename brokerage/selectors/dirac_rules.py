"""The DIRAC matching rules in force: the stored gdpconfig profile and rows read as the engine's MatchRules."""

from __future__ import annotations

from brokerage.engine.dirac.rules import MatchRules
from brokerage.selectors.gdpconfig import gdpconfig_view


def dirac_rules() -> MatchRules:
    """The matching rules of the stored gdpconfig profile and rows (seed 003 or DIRAC v9)."""
    return MatchRules.from_config(gdpconfig_view())
