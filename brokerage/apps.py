from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    """The domain model, gdpconfig and (later) the engine adapters and Celery cycles."""

    name = "brokerage"
    verbose_name = "Brokerage"

    def ready(self) -> None:
        # The Celery app must exist before any @shared_task is used, in the web server as in the workers.
        from . import celery, checks, db_session, signals  # noqa: F401
