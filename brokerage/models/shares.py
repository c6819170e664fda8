"""Work queues (JEDI_Work_Queue) and the global share tree: how CPU is divided among kinds of work."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from . import choices


class WorkQueue(models.Model):
    """A JEDI work queue: tasks map to the first queue (by queue_order) whose criteria they pass (seed 002).

    A partition (is_partition) has no criteria of its own; its sub-queues point at it through `partition` and
    their tasks belong to the partition as well. queue_share is the percentage of CPU given to the queue.
    """

    queue_id = models.AutoField(primary_key=True)
    queue_name = models.CharField(max_length=16)
    queue_type = models.CharField(max_length=16, choices=choices.WorkQueueType.choices, default="production")
    vo = models.CharField(max_length=16, default="atlas")
    queue_share = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Percent; empty = not throttled.")
    queue_order = models.PositiveSmallIntegerField(help_text="Lower orders are evaluated first.")
    criteria = models.CharField(max_length=256, blank=True, default="")
    variables = models.CharField(max_length=256, blank=True, default="")
    partition = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        db_column="partitionID",
        related_name="sub_queues",
        limit_choices_to={"is_partition": True},
    )
    is_partition = models.BooleanField(default=False)
    stretchable = models.BooleanField(default=False, help_text="Gets unused shares of idle queues first.")
    status = models.CharField(max_length=64, choices=choices.WorkQueueStatus.choices, default="active")

    class Meta:
        db_table = "jedi_work_queue"
        ordering = ["vo", "queue_type", "queue_order"]
        constraints = [
            models.UniqueConstraint(fields=["vo", "queue_name"], name="workqueue_name_unique"),
            models.UniqueConstraint(fields=["vo", "queue_type", "queue_order"], name="workqueue_order_unique"),
            models.CheckConstraint(
                condition=Q(queue_share__isnull=True) | Q(queue_share__lte=100), name="workqueue_share_percent"
            ),
            # seed 002: "partition queues themselves don't have selection criteria"
            models.CheckConstraint(
                condition=Q(is_partition=False) | Q(criteria="", partition__isnull=True),
                name="workqueue_partition_has_no_criteria_or_parent",
            ),
            models.CheckConstraint(condition=~Q(partition=F("queue_id")), name="workqueue_not_own_partition"),
        ]

    def __str__(self) -> str:
        return f"{self.queue_name} ({self.queue_type})"

    def clean(self) -> None:
        """Criteria and variables must parse (never run as SQL); a partition has no criteria of its own."""
        from django.core.exceptions import ValidationError

        from brokerage.shares import Criteria, CriteriaError, parse_variables

        try:
            variables = parse_variables(self.variables)
        except CriteriaError as error:
            raise ValidationError({"variables": str(error)}) from None
        try:
            Criteria.parse(self.criteria, variables)
        except CriteriaError as error:
            raise ValidationError({"criteria": str(error)}) from None
        if self.is_partition and self.criteria:
            raise ValidationError({"criteria": "a partition has no criteria: its sub-queues have them"})


class GlobalShare(models.Model):
    """A node of the global share tree. A child's normalised value = parent's × value / sum of siblings' values,
    the root being 100 (REFERENCE.md, global shares). Leaves select jobs by the attributes below."""

    name = models.CharField(max_length=32, unique=True)
    value = models.FloatField(help_text="Share relative to its siblings.")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    prodsourcelabel = models.CharField(max_length=100, blank=True, default="")
    workinggroup = models.CharField(max_length=100, blank=True, default="")
    campaign = models.CharField(max_length=100, blank=True, default="")
    processingtype = models.CharField(max_length=100, blank=True, default="")
    transpath = models.CharField(max_length=128, blank=True, default="")
    rtype = models.CharField(max_length=16, blank=True, default="")
    vo = models.CharField(max_length=32, default="atlas")
    queue = models.ForeignKey(
        WorkQueue, null=True, blank=True, on_delete=models.SET_NULL, db_column="queue_id", related_name="global_shares"
    )
    throttled = models.BooleanField(default=True)

    class Meta:
        db_table = "global_shares"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(value__gte=0), name="globalshare_value_not_negative"),
            models.CheckConstraint(condition=~Q(parent=F("id")), name="globalshare_not_own_parent"),
        ]

    def __str__(self) -> str:
        return self.name


class GlobalShareSnapshot(models.Model):
    """A global share's state at one moment (REFERENCE.md): its normalised value, the HS06 executing (sent and
    running jobs) and queued (activated), the target and the usage, taken periodically for the monitor's history."""

    taken_at = models.DateTimeField()
    share = models.ForeignKey(GlobalShare, on_delete=models.CASCADE, related_name="snapshots")
    normalised_value = models.FloatField()
    executing_hs06 = models.FloatField(default=0)
    queued_hs06 = models.FloatField(default=0)
    target_hs06 = models.FloatField(default=0)
    usage = models.FloatField(null=True, blank=True, help_text="executing / target; empty when the target is 0")

    class Meta:
        db_table = "global_share_snapshots"
        ordering = ["-taken_at", "share"]
        constraints = [
            models.UniqueConstraint(fields=["share", "taken_at"], name="share_snapshot_unique"),
            models.CheckConstraint(
                condition=Q(executing_hs06__gte=0, queued_hs06__gte=0, target_hs06__gte=0),
                name="share_snapshot_not_negative",
            ),
        ]
        indexes = [models.Index(fields=["share", "-taken_at"], name="share_snapshot_history")]

    def __str__(self) -> str:
        return f"{self.share} at {self.taken_at:%Y-%m-%d %H:%M}"
