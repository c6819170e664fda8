"""Plugin registry: name → plugin class, filled from dotted paths so an organisation adds its own broker
without touching ours (seed 000: "a plugin structure so that organizations can provide their algorithms")."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from importlib import import_module

from brokerage.engine.core.plugin import Plugin

DEFAULT_PLUGINS = (
    "brokerage.engine.panda.task_broker.AtlasProdTaskBroker",
    "brokerage.engine.panda.job_broker.AtlasProdJobBroker",
    "brokerage.engine.panda.analysis_broker.AtlasAnalJobBroker",
    "brokerage.engine.dirac.plugin.DiracMatcher",
    "brokerage.engine.wmcore.plugin.WMCorePull",
)

# Where our plugins lived before the engine was split by grid system (issue 48). A deployment whose
# BROKERAGE_PLUGINS still names an old path keeps working for one release, with a warning naming the new one.
MOVED_PLUGIN_PATHS = {
    "brokerage.engine.plugins.atlas_prod_task.AtlasProdTaskBroker": DEFAULT_PLUGINS[0],
    "brokerage.engine.plugins.atlas_prod_job.AtlasProdJobBroker": DEFAULT_PLUGINS[1],
    "brokerage.engine.plugins.atlas_anal_job.AtlasAnalJobBroker": DEFAULT_PLUGINS[2],
    "brokerage.engine.plugins.dirac_match.DiracMatcher": DEFAULT_PLUGINS[3],
    "brokerage.engine.plugins.wmcore_pull.WMCorePull": DEFAULT_PLUGINS[4],
}


def current_path(path: str) -> str:
    """The plugin's dotted path today: an old one is translated, with a FutureWarning saying what to write."""
    moved = MOVED_PLUGIN_PATHS.get(path)
    if moved is None:
        return path
    warnings.warn(
        f"brokerage plugin path '{path}' is now '{moved}'; the old path goes in the next release",
        FutureWarning,
        stacklevel=3,
    )
    return moved


class UnknownPlugin(LookupError):
    def __init__(self, name: str, known: Iterable[str]):
        self.name = name
        super().__init__(f"unknown brokerage plugin '{name}' (known: {', '.join(sorted(known)) or 'none'})")


class PluginRegistry:
    def __init__(self) -> None:
        self._plugins: dict[str, type[Plugin]] = {}

    def register(self, plugin: type[Plugin]) -> type[Plugin]:
        if not (isinstance(plugin, type) and issubclass(plugin, Plugin)) or not plugin.name:
            raise TypeError(f"{plugin!r} is not a Plugin subclass with a name")
        existing = self._plugins.get(plugin.name)
        if existing is not None and existing is not plugin:
            raise ValueError(f"plugin name '{plugin.name}' is taken by {existing.__module__}.{existing.__qualname__}")
        self._plugins[plugin.name] = plugin
        return plugin

    def get(self, name: str) -> type[Plugin]:
        try:
            return self._plugins[name]
        except KeyError:
            raise UnknownPlugin(name, self._plugins) from None

    def names(self) -> list[str]:
        return sorted(self._plugins)

    @classmethod
    def from_paths(cls, paths: Iterable[str]) -> PluginRegistry:
        registry = cls()
        for path in map(current_path, paths):
            module_name, _, attribute = path.rpartition(".")
            try:
                plugin = getattr(import_module(module_name), attribute)
            except (ImportError, AttributeError, ValueError) as error:
                raise ImportError(f"cannot load brokerage plugin '{path}': {error}") from error
            registry.register(plugin)
        return registry


def default_registry() -> PluginRegistry:
    return PluginRegistry.from_paths(DEFAULT_PLUGINS)
