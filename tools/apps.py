from django.apps import AppConfig


class ToolsConfig(AppConfig):
    """The benchmarks' management command; no models."""

    name = "tools"
    verbose_name = "Benchmarks and differential drivers"
