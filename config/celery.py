"""The Celery application: configuration from Django settings (CELERY_*), tasks discovered in installed apps.

Two promises of the worker processes live here, beside the app:
- their database connections carry the cycles' lock and statement timeouts (brokerage.db_session);
- gossip and mingle are off in every worker, whatever its command line says: the workers never talk to each
  other (each claims its work in the database, brokerage/services/locks.py), and after a reconnection to Redis
  gossip's restart failed (`Error on restarting Gossip: AttributeError(…)`, kombu 5.7) and reported missed
  heartbeats of the other workers (issue 47, finding 10);
- a task never leaves behind what it held. A worker process runs one task at a time (prefork or solo pool), so
  when a task returns or raises, any cycle this process still has running ended without closing, and any task
  claim or process lock it still holds is stale: `worker_leftovers_release` closes and frees them at once,
  instead of waiting for the process to die (issue 31: a deadlock in a claim's release left a cycle running and
  13 tasks claimed by a live worker for the 30-minute lock timeout).
"""

import logging
import os
import warnings

from celery import Celery
from celery.exceptions import CPendingDeprecationWarning
from celery.signals import celeryd_after_setup, task_postrun, worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.development")

# make run's filesystem broker, its messages written whole (brokerage/kombu_filesystem.py)
from brokerage.kombu_filesystem import filesystem_transport_install

filesystem_transport_install()

app = Celery("brokerage")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _worker_options(sender=None, **kwargs) -> None:
    # `sender.options` are the options the consumer's bootsteps are built from (celery/worker/worker.py 5.7:
    # `self.options = kwargs` just before this signal), so this is `--without-gossip --without-mingle`.
    if sender is not None and hasattr(sender, "options"):
        sender.options.update(without_gossip=True, without_mingle=True)


@celeryd_after_setup.connect
def _worker_warnings(**kwargs) -> None:
    # CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS is set on purpose (config/settings/base.py), yet
    # Celery 5.7 prints this notice of Celery 6's default at every reconnection whatever the setting. Filtered here,
    # after the worker's logging set-up put "always" in front of the filters (celery/app/log.py).
    warnings.filterwarnings("ignore", message=r"(?s).*worker_cancel_long_running_tasks_on_connection_loss",
                            category=CPendingDeprecationWarning)  # fmt: skip


@worker_init.connect
@worker_process_init.connect
def _worker_database_role(**kwargs) -> None:
    from brokerage.db_session import database_role_set

    database_role_set("cycle")


@task_postrun.connect
def _worker_leftovers(task=None, retval=None, state=None, **kwargs) -> None:
    from brokerage.services.locks import worker_leftovers_release

    error = f"{type(retval).__name__}: {retval}" if isinstance(retval, BaseException) else ""
    try:
        worker_leftovers_release(task_name=getattr(task, "name", "") or "", error=error)
    except Exception:  # the database is away: the heartbeat sweep frees them once this process is judged gone
        logging.getLogger(__name__).exception("what %s left could not be released", getattr(task, "name", task))
