from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    """The domain model, gdpconfig, the engine and its adapters, services and selectors, and the Celery tasks."""

    name = "brokerage"
    verbose_name = "Brokerage"

    def ready(self) -> None:
        # The Celery app must exist before any @shared_task is used, in the web server as in the workers.
        import config.celery  # noqa: F401

        from . import checks, db_session, signals  # noqa: F401
