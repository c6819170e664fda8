"""DIRAC's workload tables (seed 003): task queues grouping jobs with identical requirements, their multi-valued
requirements, the waiting jobs with their user priority, and a record of every matching request."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from brokerage import states

from .base import CompactJSONField, Stateful, StatusLogBase

REQUIREMENT_FIELDS = [
    ("sites", "Sites"),
    ("gridCEs", "GridCEs"),
    ("bannedSites", "BannedSites"),
    ("platforms", "Platforms"),
    ("pilotTypes", "PilotTypes"),
    ("jobTypes", "JobTypes"),
    ("tags", "Tags"),
    ("submitPools", "SubmitPools"),
    ("gridMiddlewares", "GridMiddlewares"),
]


# A DIRAC job's minor status after a move, by (old, new) status or ("*", new) — DIRAC's JobMinorStatus constants
# (dirac 9.1.22, WorkloadManagementSystem/Client/JobMinorStatus.py); a move not named keeps the minor status.
MINOR_STATUS_AFTER = {
    ("*", "Waiting"): "Pilot Agent Submission",
    ("*", "Matched"): "Assigned",
    ("*", "Running"): "Application",
    ("*", "Done"): "Execution Complete",
    ("Running", "Failed"): "Application Finished With Errors",
    ("*", "Stalled"): "Job stalled: pilot not running",
    ("*", "Rescheduled"): "Job Rescheduled",
    ("*", "Killed"): "Marked for termination",
}


class DiracTaskQueue(models.Model):
    """tq_TaskQueues: the single-valued requirements (owner, group, setup, CPU time rounded up to a segment) and
    the priority from the group shares. `requirementsKey` is a digest of every requirement, so jobs with the
    same requirements always land in the same task queue."""

    ownerDN = models.CharField(max_length=255)
    ownerGroup = models.CharField(max_length=64)
    setup = models.CharField(max_length=64)
    cpuTime = models.PositiveBigIntegerField(help_text="Seconds, a CPU segment.")
    priority = models.FloatField(default=1.0)
    minRAM = models.PositiveIntegerField(default=0, help_text="MB the jobs need at least; 0: no requirement.")
    maxRAM = models.PositiveIntegerField(default=0, help_text="MB the jobs use at most (informational); 0: none.")
    enabled = models.BooleanField(default=True)
    requirementsKey = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "DIRAC task queue"
        verbose_name_plural = "DIRAC task queues"
        db_table = "dirac_task_queues"
        constraints = [models.CheckConstraint(condition=Q(priority__gt=0), name="dirac_tq_priority_positive")]
        indexes = [models.Index(fields=["setup", "cpuTime"], name="dirac_tq_setup_cpu")]

    def __str__(self) -> str:
        return f"TQ{self.pk} {self.ownerGroup} {self.cpuTime:g}s"


class DiracTaskQueueValue(models.Model):
    """tq_TQTo<Field>: one value of a multi-valued requirement (sites, banned sites, platforms, tags …)."""

    task_queue = models.ForeignKey(DiracTaskQueue, on_delete=models.CASCADE, related_name="values")
    field = models.CharField(max_length=16, choices=REQUIREMENT_FIELDS)
    value = models.CharField(max_length=255)

    class Meta:
        verbose_name = "DIRAC task-queue requirement"
        verbose_name_plural = "DIRAC task-queue requirements"
        db_table = "dirac_task_queue_values"
        constraints = [models.UniqueConstraint(fields=["task_queue", "field", "value"], name="dirac_tq_value_unique")]
        indexes = [models.Index(fields=["field", "value"], name="dirac_value_lookup")]

    def __str__(self) -> str:
        return f"TQ{self.task_queue_id} {self.field}={self.value}"


class DiracJob(Stateful):
    """A DIRAC job: its task queue, user priority and status (the DIRAC job state machine)."""

    jobID = models.BigAutoField(primary_key=True)
    task_queue = models.ForeignKey(
        DiracTaskQueue, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    status = models.CharField(max_length=16, default="Received")
    minorStatus = models.CharField(max_length=128, blank=True, default="")
    userPriority = models.PositiveSmallIntegerField(default=1)
    owner = models.CharField(max_length=255, blank=True, default="")
    ownerGroup = models.CharField(max_length=64, blank=True, default="")
    site = models.CharField(max_length=64, blank=True, default="", help_text="Where it was matched.")
    submissionTime = models.DateTimeField(default=timezone.now)
    matchTime = models.DateTimeField(null=True, blank=True)
    lastUpdateTime = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "DIRAC job"
        verbose_name_plural = "DIRAC jobs"
        db_table = "dirac_jobs"
        constraints = [
            models.CheckConstraint(condition=Q(status__in=states.DIRAC_JOB.statuses), name="dirac_job_status_known")
        ]
        indexes = [models.Index(fields=["task_queue", "status", "userPriority", "jobID"], name="dirac_job_pick")]

    def __str__(self) -> str:
        return f"{self.jobID} ({self.status})"

    @property
    def state_machine(self) -> states.StateMachine:
        return states.DIRAC_JOB

    def transition_updates(self, old_status, new_status, now):
        """The minor status follows the major one, in DIRAC's words (JobMinorStatus, dirac 9.1.22): a Done job
        is never left "Assigned"."""
        minor = MINOR_STATUS_AFTER.get((old_status, new_status)) or MINOR_STATUS_AFTER.get(("*", new_status))
        return {"lastUpdateTime": now, **({"minorStatus": minor} if minor else {})}

    def status_log_entry(self, old_status, new_status, reason, actor, now):
        return DiracJobStatusLog(
            job=self, timestamp=now, old_status=old_status, new_status=new_status, reason=reason, actor=actor
        )


class DiracJobStatusLog(StatusLogBase):
    """A DIRAC job's status history."""

    job = models.ForeignKey(DiracJob, on_delete=models.CASCADE, related_name="status_log")

    class Meta(StatusLogBase.Meta):
        verbose_name = "DIRAC job status log"
        verbose_name_plural = "DIRAC job status logs"
        db_table = "dirac_job_status_log"


class DiracMatchRecord(models.Model):
    """One matching request: what the resource offered (whole, so a job page can tell which rules its task queue
    fails for the sites and CEs that asked lately), whether it got a job, the seed of the draws, and for a no-match
    the reasons of the nearest task queues (the monitor counts them)."""

    at = models.DateTimeField(db_index=True)
    site = models.CharField(max_length=64, blank=True, default="")
    gridCE = models.CharField(max_length=255, blank=True, default="", help_text="The CE the pilot came from.")
    setup = models.CharField(max_length=64, blank=True, default="")
    cpuTime = models.PositiveBigIntegerField(default=0)
    # A year of requests at a grid's rate (issue 32): the resource is stored without what the columns above hold,
    # as compact text; `sent()` puts it back together.
    resource = CompactJSONField(
        null=True,
        blank=True,
        default=dict,
        help_text="What the resource sent besides site, CE, setup and whole seconds of CPU time, so any task queue "
        "can be tested against it (`sent()`); null for requests stored before it was kept.",
    )
    matched = models.BooleanField()
    job = models.BigIntegerField(null=True, blank=True)
    task_queue = models.BigIntegerField(null=True, blank=True)
    seed = models.BigIntegerField()
    reasons = models.JSONField(default=list, blank=True, help_text="Codes that kept the nearest task queues out.")

    class Meta:
        verbose_name = "DIRAC matching request"
        verbose_name_plural = "DIRAC matching requests"
        db_table = "dirac_match_records"
        ordering = ["-at", "-id"]
        # `at` (its own index) is what every page reads them by: the last day per site and CE is a scan of that
        # day, grouped; a (site, gridCE, at) index no query used cost a year of requests 2 GB (issue 32)

    def __str__(self) -> str:
        return f"{self.at:%H:%M:%S} {self.site}: {'job ' + str(self.job) if self.matched else 'no match'}"

    def sent(self) -> dict | None:
        """Everything the resource sent (None for a request stored before the resource was kept)."""
        return match_resource_sent(
            {"resource": self.resource, "site": self.site, "gridCE": self.gridCE, "setup": self.setup,
             "cpuTime": self.cpuTime}
        )  # fmt: skip


# What a match record's columns hold of the resource's data (brokerage.engine.dirac.scenario.resource_data).
MATCH_RECORD_TEXTS = ("site", "gridCE", "setup")


def match_resource_stored(data: dict) -> dict:
    """The part of a resource's data a match record keeps beside its columns: all but the site, CE and setup, and
    the CPU time unless it has a fraction (the column holds whole seconds)."""
    stored = {key: value for key, value in data.items() if key not in MATCH_RECORD_TEXTS}
    if float(stored.get("cpuTime", 0)) == int(stored.get("cpuTime", 0)):
        stored.pop("cpuTime", None)
    return stored


def match_resource_sent(record: dict) -> dict | None:
    """A match record's resource data put back together from its columns and its stored part (a row as
    `values()` gives it, with resource, site, gridCE, setup and cpuTime); None when it was never kept."""
    if record["resource"] is None:
        return None
    texts = {key: record[key] for key in MATCH_RECORD_TEXTS if record[key]}
    return {"cpuTime": float(record["cpuTime"]), **texts, **record["resource"]}
