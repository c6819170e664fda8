"""Worker heartbeats: how a lock's holder shows it is alive."""

from __future__ import annotations

from django.db import models


class WorkerHeartbeat(models.Model):
    """The last sign of life of a process that holds (or held) process locks or task claims, by its worker name
    (host:pid, the value of lockedBy). A holder whose beat is older than HEARTBEAT_STALE_SECONDS is gone: its
    locks and claims are released without waiting for the lock timeout."""

    name = models.CharField(max_length=128, unique=True)
    beat = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "brokerage_worker_heartbeats"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} at {self.beat:%Y-%m-%d %H:%M:%S}"
