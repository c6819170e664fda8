"""The Celery application: configuration from Django settings (CELERY_*), tasks discovered in installed apps."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brokerage.settings.development")

app = Celery("brokerage")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
