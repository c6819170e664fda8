"""The plugin registry configured by settings.BROKERAGE_PLUGINS (loaded once per process)."""

from functools import cache

from django.conf import settings

from brokerage.engine import PluginRegistry


@cache
def plugin_registry() -> PluginRegistry:
    return PluginRegistry.from_paths(settings.BROKERAGE_PLUGINS)
