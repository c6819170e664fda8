from django.apps import AppConfig


class MonitorConfig(AppConfig):
    """The shifters' dashboard and the REST API; reads through brokerage selectors, writes through services."""

    name = "monitor"
    verbose_name = "Monitor"
