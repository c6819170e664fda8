from django.apps import AppConfig


class BrokerageConfig(AppConfig):
    """The domain model, gdpconfig, the engine and its adapters, services and selectors, and the Celery tasks."""

    name = "brokerage"
    verbose_name = "Brokerage"

    def ready(self) -> None:
        # The Celery app must exist before any @shared_task is used, in the web server as in the workers.
        # each Celery task's wait and run time for /metrics, in whichever process sends or runs it
        from celery.signals import before_task_publish, task_postrun, task_prerun

        import config.celery  # noqa: F401

        from . import checks, db_session, metrics, signals  # noqa: F401

        before_task_publish.connect(metrics.on_task_sent, weak=False)
        task_prerun.connect(metrics.on_task_started, weak=False)
        task_postrun.connect(metrics.on_task_ended, weak=False)
