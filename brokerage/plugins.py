"""The plugin registry configured by settings.BROKERAGE_PLUGINS (loaded once per process)."""

from functools import cache

from django.conf import settings

from brokerage.engine import PluginRegistry


@cache
def plugin_registry() -> PluginRegistry:
    return PluginRegistry.from_paths(settings.BROKERAGE_PLUGINS)


# the job throttler's verdicts are stored as decisions too (services.jobs)
THROTTLER_PLUGIN = "prod_job_throttler"


def decision_plugins() -> list[str]:
    """Every value a decision's `plugin` can hold: the installation's brokerage plugins and the job throttler
    (what a filter on it accepts)."""
    return sorted({*plugin_registry().names(), THROTTLER_PLUGIN})
