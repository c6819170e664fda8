"""Plugin registry: name → plugin class, filled from dotted paths so an organisation adds its own broker
without touching ours (seed 000: "a plugin structure so that organizations can provide their algorithms")."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module

from .plugin import Plugin

DEFAULT_PLUGINS = (
    "brokerage.engine.plugins.atlas_prod_task.AtlasProdTaskBroker",
    "brokerage.engine.plugins.atlas_prod_job.AtlasProdJobBroker",
    "brokerage.engine.plugins.atlas_anal_job.AtlasAnalJobBroker",
    "brokerage.engine.plugins.dirac_match.DiracMatcher",
    "brokerage.engine.plugins.wmcore_pull.WMCorePull",
)


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
        for path in paths:
            module_name, _, attribute = path.rpartition(".")
            try:
                plugin = getattr(import_module(module_name), attribute)
            except (ImportError, AttributeError, ValueError) as error:
                raise ImportError(f"cannot load brokerage plugin '{path}': {error}") from error
            registry.register(plugin)
        return registry


def default_registry() -> PluginRegistry:
    return PluginRegistry.from_paths(DEFAULT_PLUGINS)
