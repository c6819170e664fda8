"""Celery tasks: thin wrappers that take ids and call one service each."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from brokerage.services.locks import process_lock_expire


@shared_task(name="brokerage.tasks.process_lock_expire_task")
def process_lock_expire_task() -> int:
    """Periodic (beat): frees the process locks of workers that died."""
    return process_lock_expire(now=timezone.now())
