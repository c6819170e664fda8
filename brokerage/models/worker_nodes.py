"""Worker nodes as pilots describe them (panda-server 1.0's `update_worker_node`): the CPU of each host a pilot ran
on, by site, and the queues each host served."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class WorkerNode(models.Model):
    """A host at a site with one CPU model (panda-server 1.0.4 ATLAS_PANDA.worker_node): what the pilot measured there,
    `last_seen` when a pilot last said so. Site and host are names as the pilot sends them, not keys of ours: a pilot
    may run at a site CRIC has not told us of yet, and its report must not be lost for that."""

    site = models.CharField(max_length=128)
    host_name = models.CharField(max_length=256, help_text="Without the batch slot (slot1@host is host).")
    cpu_model = models.CharField(max_length=128)
    cpu_model_normalized = models.CharField(max_length=128, blank=True, default="")
    n_logical_cpus = models.PositiveIntegerField(null=True, blank=True)
    n_sockets = models.PositiveIntegerField(null=True, blank=True)
    cores_per_socket = models.PositiveIntegerField(null=True, blank=True)
    threads_per_core = models.PositiveIntegerField(null=True, blank=True)
    cpu_architecture = models.CharField(max_length=20, blank=True, default="")
    cpu_architecture_level = models.CharField(max_length=20, blank=True, default="")
    clock_speed = models.FloatField(null=True, blank=True, help_text="MHz.")
    total_memory = models.PositiveBigIntegerField(null=True, blank=True, help_text="MB.")
    total_local_disk = models.PositiveBigIntegerField(null=True, blank=True, help_text="GB.")
    last_seen = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "worker_node"
        ordering = ["site", "host_name"]
        constraints = [
            models.UniqueConstraint(fields=["site", "host_name", "cpu_model"], name="worker_node_site_host_cpu"),
            models.CheckConstraint(condition=~Q(host_name=""), name="worker_node_host_named"),
        ]

    def __str__(self) -> str:
        return f"{self.host_name} at {self.site} ({self.cpu_model})"


class WorkerNodeQueue(models.Model):
    """A host's PanDA queue (panda-server 1.0.4 ATLAS_PANDA.worker_node_queue): which queues' pilots ran there."""

    site = models.CharField(max_length=128)
    host_name = models.CharField(max_length=256)
    panda_queue = models.CharField(max_length=128, db_index=True)
    last_seen = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "worker_node_queue"
        ordering = ["panda_queue", "host_name"]
        constraints = [
            models.UniqueConstraint(fields=["site", "host_name", "panda_queue"], name="worker_node_queue_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.host_name} for {self.panda_queue}"
