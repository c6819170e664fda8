"""JEDI_Process_Lock: one process at a time works on a (VO, source label, work queue, cloud, resource type)."""

from __future__ import annotations

from django.db import models


class ProcessLock(models.Model):
    """A lock held by a worker process on one slice of work (seed 002, JEDI_Process_Lock).

    A worker that dies keeps its lock until it expires (settings.PROCESS_LOCK_TIMEOUT_MINUTES).
    """

    prodSourceLabel = models.CharField(max_length=20)
    vo = models.CharField(max_length=16)
    workQueue = models.ForeignKey(
        "brokerage.WorkQueue", on_delete=models.CASCADE, db_column="workQueue_ID", related_name="process_locks"
    )
    cloud = models.CharField(max_length=10, blank=True, default="")
    resource_type = models.CharField(max_length=56, blank=True, default="")
    lockedBy = models.CharField(max_length=40)
    lockedTime = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "jedi_process_lock"
        ordering = ["lockedTime"]
        constraints = [
            models.UniqueConstraint(
                fields=["vo", "prodSourceLabel", "workQueue", "cloud", "resource_type"], name="process_lock_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.vo}/{self.prodSourceLabel}/{self.workQueue_id} by {self.lockedBy}"
