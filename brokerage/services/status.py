"""The one way a task, dataset, file, event or job changes status."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from brokerage.models.base import Stateful
from brokerage.states import IllegalTransition

__all__ = ["IllegalTransition", "status_transition"]


def status_transition(
    *, obj: Stateful, new_status: str, reason: str = "", actor: str = "", now: datetime | None = None
) -> Stateful:
    """Moves `obj` to `new_status` if its state machine allows it, and records the move in its status log.

    The current status is re-read under a row lock, so a stale object in memory cannot slip an illegal move
    through; an illegal move raises IllegalTransition (an unknown status UnknownStatus) and changes nothing.
    On success the columns the move implies (oldStatus, stateChangeTime, startTime, endTime…) are updated
    with the status, in the same transaction as the log row, and `obj` is refreshed in memory.
    """
    now = now or timezone.now()
    model = type(obj)
    status_field = obj.STATUS_FIELD
    machine = obj.state_machine
    machine.require_known(new_status)
    with transaction.atomic():
        current = model.objects.select_for_update().values_list(status_field, flat=True).get(pk=obj.pk)
        machine.check(current, new_status, identifier=obj.pk)
        updates = {status_field: new_status, **obj.transition_updates(current, new_status, now)}
        model.objects.filter(pk=obj.pk).update(**updates)
        entry = obj.status_log_entry(current, new_status, reason, actor, now)
        if entry is not None:
            entry.save()
    for field, value in updates.items():
        setattr(obj, field, value)
    return obj
