"""CMS WMCore's queues (seed 004): ReqMgr2 requests, the global queue and the agents' local queues with their inbox
and queue databases of work-queue elements, the agents' sites with slot thresholds, the input blocks and where they
are, WMBS subscriptions and jobs, and the JobSubmitter cache. Tables mirroring WMCore documents keep WMCore's names
(RequestName, Status, Priority, Jobs, Inputs, SiteWhitelist …); our own columns are snake_case."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from brokerage import states

from .base import Stateful, StatusLogBase
from .choices import (
    WMBS_JOB_STATUS,
    WMCORE_ELEMENT_STATUS,
    WMCORE_JOB_TYPE,
    WMCORE_REQUEST_STATUS,
    WMCORE_SITE_STATE,
    BatchStatus,
    WMCoreQueueDatabase,
    WMCoreQueueKind,
)


class WMCoreRequest(Stateful):
    """A ReqMgr2 request: what to process (input dataset, its parents, pileup, or a number of jobs for work without
    input), where (site white/black lists, trust flags), at which priority, and its status — derived from its
    elements' statuses once the global queue has it."""

    STATUS_FIELD = "RequestStatus"

    RequestName = models.CharField(max_length=200, unique=True)
    RequestStatus = models.CharField(max_length=24, choices=WMCORE_REQUEST_STATUS, default="new")
    RequestType = models.CharField(max_length=32, default="ReReco")
    RequestPriority = models.PositiveIntegerField(default=100000)
    Team = models.CharField(max_length=64, blank=True, default="", help_text="Empty: the global queue leaves it.")
    TaskType = models.CharField(max_length=16, choices=WMCORE_JOB_TYPE, default="Processing")
    InputDataset = models.CharField(max_length=255, blank=True, default="")
    IncludeParents = models.BooleanField(default=False)
    MCPileup = models.CharField(max_length=255, blank=True, default="")
    FilesPerJob = models.PositiveIntegerField(default=1, help_text="Input files per job (block splitting).")
    TotalJobs = models.PositiveIntegerField(default=0, help_text="Jobs of a request without input (Monte Carlo).")
    JobsPerElement = models.PositiveIntegerField(default=500, help_text="Element size for work without input.")
    SiteWhitelist = models.JSONField(default=list, blank=True)
    SiteBlacklist = models.JSONField(default=list, blank=True)
    TrustSitelists = models.BooleanField(default=False, help_text="Ignore input and parent location (xrootd).")
    TrustPUSitelists = models.BooleanField(default=False, help_text="Ignore pileup location (xrootd).")
    created = models.DateTimeField(default=timezone.now)
    status_time = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "WMCore request"
        verbose_name_plural = "WMCore requests"
        db_table = "wmcore_requests"
        constraints = [
            models.CheckConstraint(
                condition=Q(RequestStatus__in=states.WMCORE_REQUEST.statuses), name="wmcore_request_status_known"
            ),
            models.CheckConstraint(condition=Q(FilesPerJob__gt=0), name="wmcore_request_files_per_job_positive"),
            models.CheckConstraint(condition=Q(JobsPerElement__gt=0), name="wmcore_request_slice_positive"),
        ]
        indexes = [models.Index(fields=["RequestStatus", "-RequestPriority"], name="wmcore_request_status")]

    def __str__(self) -> str:
        return f"{self.RequestName} ({self.RequestStatus})"

    @property
    def state_machine(self) -> states.StateMachine:
        return states.WMCORE_REQUEST

    def transition_updates(self, old_status, new_status, now):
        return {"status_time": now}

    def status_log_entry(self, old_status, new_status, reason, actor, now):
        return WMCoreRequestStatusLog(
            request=self, timestamp=now, old_status=old_status, new_status=new_status, reason=reason, actor=actor
        )


class WMCoreRequestStatusLog(StatusLogBase):
    """A request's status history."""

    request = models.ForeignKey(WMCoreRequest, on_delete=models.CASCADE, related_name="status_log")

    class Meta(StatusLogBase.Meta):
        verbose_name = "WMCore request status log"
        verbose_name_plural = "WMCore request status logs"
        db_table = "wmcore_request_status_log"


class WMCoreQueue(models.Model):
    """A work queue: the global queue, or the local queue of one agent (which pulls from its parent, the global
    queue). A local queue's agent owns the site thresholds, the WMBS and the JobSubmitter cache."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=8, choices=WMCoreQueueKind.choices)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children", help_text="Local: its GQ."
    )
    team = models.CharField(max_length=64, blank=True, default="", help_text="The team whose requests it takes.")
    enabled = models.BooleanField(default=True, help_text="A drained agent pulls nothing.")
    cache_refreshed = models.DateTimeField(null=True, blank=True, help_text="Last JobSubmitter cache refresh.")
    locations_updated = models.DateTimeField(null=True, blank=True, help_text="Last location update of elements.")

    class Meta:
        verbose_name = "WMCore work queue"
        verbose_name_plural = "WMCore work queues"
        db_table = "wmcore_queues"
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="global", parent__isnull=True) | Q(kind="local", parent__isnull=False),
                name="wmcore_local_queue_has_parent",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class WMCoreElement(Stateful):
    """A work-queue element in one queue's inbox or queue database. Block-level: `Jobs` possible jobs over its
    input blocks (`Inputs` {block: [sites]}), with parent and pileup locations, site lists, trust flags and the
    child queue that acquired it. A global-queue element and its replica in the local queue's inbox share
    `element_id` (seed 004, GQ to LQ step 4). The last pull that left it records why (`stuck_reason`)."""

    STATUS_FIELD = "Status"

    queue = models.ForeignKey(WMCoreQueue, on_delete=models.CASCADE, related_name="elements")
    database = models.CharField(max_length=8, choices=WMCoreQueueDatabase.choices)
    element_id = models.CharField(max_length=64)
    request = models.ForeignKey(WMCoreRequest, on_delete=models.CASCADE, related_name="elements")
    Status = models.CharField(max_length=16, choices=WMCORE_ELEMENT_STATUS, default="Available")
    Priority = models.FloatField()
    Jobs = models.PositiveIntegerField(default=0)
    Inputs = models.JSONField(default=dict, blank=True, help_text="{block: [sites]}")
    ParentData = models.JSONField(default=dict, blank=True, help_text="{block: [sites]}")
    PileupData = models.JSONField(default=dict, blank=True, help_text="{dataset: [sites]}")
    SiteWhitelist = models.JSONField(default=list, blank=True)
    SiteBlacklist = models.JSONField(default=list, blank=True)
    NoInputUpdate = models.BooleanField(default=False, help_text="TrustSitelists: input location not checked.")
    NoPileupUpdate = models.BooleanField(default=False, help_text="TrustPUSitelists: pileup location not checked.")
    ParentFlag = models.BooleanField(
        null=True, blank=True, help_text="The element reads its parents; empty: not said (the seed checks listed ones)."
    )
    blowupFactor = models.FloatField(default=1.0, help_text="Each job counts this many times at its site.")
    ChildQueue = models.ForeignKey(
        WMCoreQueue, null=True, blank=True, on_delete=models.SET_NULL, related_name="acquired_elements"
    )
    site = models.CharField(max_length=64, blank=True, default="", help_text="The site the last match chose.")
    CreationTime = models.DateTimeField(default=timezone.now)
    UpdateTime = models.DateTimeField(default=timezone.now)
    stuck_reason = models.CharField(max_length=32, blank=True, default="")
    stuck_detail = models.JSONField(default=dict, blank=True)
    stuck_digest = models.CharField(max_length=16, blank=True, default="", help_text="Digest of stuck_detail.")
    stuck_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "WMCore work-queue element"
        verbose_name_plural = "WMCore work-queue elements"
        db_table = "wmcore_elements"
        constraints = [
            models.UniqueConstraint(fields=["queue", "database", "element_id"], name="wmcore_element_unique"),
            models.CheckConstraint(condition=Q(Status__in=states.WMCORE_ELEMENT.statuses), name="wmcore_status_known"),
            models.CheckConstraint(condition=Q(database__in=WMCoreQueueDatabase.values), name="wmcore_database_known"),
            models.CheckConstraint(condition=Q(blowupFactor__gte=0), name="wmcore_blowup_not_negative"),
        ]
        indexes = [
            models.Index(
                fields=["queue", "database", "Status", "-Priority", "CreationTime"], name="wmcore_element_pull"
            ),
            models.Index(fields=["request", "Status"], name="wmcore_element_request"),
            models.Index(fields=["element_id"], name="wmcore_element_id"),
            models.Index(fields=["stuck_reason"], name="wmcore_element_stuck"),
            # the monitor's highest-priority waiting elements
            models.Index(fields=["Status", "-Priority", "CreationTime"], name="wmcore_element_waiting"),
        ]

    def __str__(self) -> str:
        return f"{self.element_id[:12]} in {self.queue_id}/{self.database} ({self.Status})"

    @property
    def state_machine(self) -> states.StateMachine:
        return states.WMCORE_ELEMENT

    def transition_updates(self, old_status, new_status, now):
        return {"UpdateTime": now}

    def status_log_entry(self, old_status, new_status, reason, actor, now):
        return WMCoreElementStatusLog(
            element=self, timestamp=now, old_status=old_status, new_status=new_status, reason=reason, actor=actor
        )


class WMCoreElementStatusLog(StatusLogBase):
    """An element's status history (resets included, with who asked)."""

    element = models.ForeignKey(WMCoreElement, on_delete=models.CASCADE, related_name="status_log")

    class Meta(StatusLogBase.Meta):
        verbose_name = "WMCore element status log"
        verbose_name_plural = "WMCore element status logs"
        db_table = "wmcore_element_status_log"


class WMCoreBlock(models.Model):
    """An input block and the sites holding a replica (PhEDEx/Rucio block replicas): the global queue splits
    requests by it and the location update refreshes Available elements from it."""

    name = models.CharField(max_length=255, unique=True)
    dataset = models.CharField(max_length=255, db_index=True)
    parent_dataset = models.CharField(max_length=255, blank=True, default="")
    files = models.PositiveIntegerField(default=1)
    sites = models.JSONField(default=list, blank=True)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "WMCore block"
        verbose_name_plural = "WMCore blocks"
        db_table = "wmcore_blocks"

    def __str__(self) -> str:
        return self.name


class WMCoreSite(models.Model):
    """A site in one agent's resource control: state, pending and running slots (the thresholds)."""

    queue = models.ForeignKey(WMCoreQueue, on_delete=models.CASCADE, related_name="sites")
    name = models.CharField(max_length=64)
    state = models.CharField(max_length=8, choices=WMCORE_SITE_STATE, default="Normal")
    pending_slots = models.PositiveIntegerField(default=0)
    running_slots = models.PositiveIntegerField(default=0)
    state_time = models.DateTimeField(
        null=True, blank=True, help_text="When the site entered its state (a draining site's grace period)."
    )

    class Meta:
        verbose_name = "WMCore site"
        verbose_name_plural = "WMCore sites"
        db_table = "wmcore_sites"
        constraints = [models.UniqueConstraint(fields=["queue", "name"], name="wmcore_site_unique")]

    def __str__(self) -> str:
        return f"{self.name} ({self.state}, {self.pending_slots}+{self.running_slots})"


class WMCoreSiteThreshold(models.Model):
    """A site's thresholds for one job type: pending slots and running slots (WMCore's max_slots)."""

    site = models.ForeignKey(WMCoreSite, on_delete=models.CASCADE, related_name="thresholds")
    task_type = models.CharField(max_length=16, choices=WMCORE_JOB_TYPE)
    pending_slots = models.PositiveIntegerField(default=0)
    max_slots = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "WMCore site threshold"
        verbose_name_plural = "WMCore site thresholds"
        db_table = "wmcore_site_thresholds"
        constraints = [models.UniqueConstraint(fields=["site", "task_type"], name="wmcore_threshold_unique")]

    def __str__(self) -> str:
        return f"{self.site_id} {self.task_type}: {self.pending_slots}/{self.max_slots}"


class WMBSSubscription(models.Model):
    """The WMBS subscription getWork creates for a local-queue element: its jobs are made from it."""

    queue = models.ForeignKey(WMCoreQueue, on_delete=models.CASCADE, related_name="subscriptions")
    element = models.OneToOneField(WMCoreElement, on_delete=models.CASCADE, related_name="subscription")
    request = models.ForeignKey(WMCoreRequest, on_delete=models.CASCADE, related_name="subscriptions")
    task_type = models.CharField(max_length=16, choices=WMCORE_JOB_TYPE)
    site = models.CharField(max_length=64, help_text="The site getWork matched.")
    created = models.DateTimeField(default=timezone.now)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "WMBS subscription"
        verbose_name_plural = "WMBS subscriptions"
        db_table = "wmbs_subscriptions"

    def __str__(self) -> str:
        return f"subscription {self.pk} ({self.request_id})"


class WMBSJob(Stateful):
    """A WMBS job: created (in the JobSubmitter cache), executing (in the pool, Idle or Running there), then done.
    `possible_sites` are the element's possible sites; `location` is where the JobSubmitter sent it."""

    subscription = models.ForeignKey(WMBSSubscription, on_delete=models.CASCADE, related_name="jobs")
    state = models.CharField(max_length=16, choices=WMBS_JOB_STATUS, default="created")
    priority = models.FloatField()
    task_type = models.CharField(max_length=16, choices=WMCORE_JOB_TYPE)
    possible_sites = models.JSONField(default=list, blank=True)
    location = models.CharField(max_length=64, blank=True, default="")
    batch_status = models.CharField(max_length=8, choices=BatchStatus.choices, blank=True, default="")
    retry_count = models.PositiveSmallIntegerField(default=0)
    state_time = models.DateTimeField(default=timezone.now)
    exit_code = models.PositiveIntegerField(
        null=True, blank=True, help_text="The exit code of its last failure (71101–71103: the JobSubmitter's)."
    )

    STATUS_FIELD = "state"

    class Meta:
        verbose_name = "WMBS job"
        verbose_name_plural = "WMBS jobs"
        db_table = "wmbs_jobs"
        constraints = [
            models.CheckConstraint(condition=Q(state__in=states.WMBS_JOB.statuses), name="wmbs_job_state_known"),
        ]
        indexes = [
            models.Index(fields=["state", "location", "batch_status"], name="wmbs_job_site_load"),
            models.Index(fields=["subscription", "state"], name="wmbs_job_subscription"),
        ]

    def __str__(self) -> str:
        return f"WMBS job {self.pk} ({self.state})"

    @property
    def state_machine(self) -> states.StateMachine:
        return states.WMBS_JOB

    def transition_updates(self, old_status, new_status, now):
        return {"state_time": now}


class JobSubmitterCacheEntry(models.Model):
    """A job held in an agent's JobSubmitter cache (seed 004: up to 30,000 jobs, refreshed about every 20 minutes;
    kept in a table so every worker of the agent sees the same cache). Leaves when the job is submitted."""

    queue = models.ForeignKey(WMCoreQueue, on_delete=models.CASCADE, related_name="cache_entries")
    job = models.OneToOneField(WMBSJob, on_delete=models.CASCADE, related_name="cache_entry")
    priority = models.FloatField()
    task_type = models.CharField(max_length=16, choices=WMCORE_JOB_TYPE)
    possible_sites = models.JSONField(default=list, blank=True)
    cached = models.DateTimeField(default=timezone.now)
    waiting_reason = models.CharField(max_length=32, blank=True, default="", help_text="Why the last pass left it.")

    class Meta:
        verbose_name = "JobSubmitter cache entry"
        verbose_name_plural = "JobSubmitter cache entries"
        db_table = "wmcore_jobsubmitter_cache"
        indexes = [models.Index(fields=["queue", "-priority", "job"], name="wmcore_cache_order")]

    def __str__(self) -> str:
        return f"cached job {self.job_id}"


class JobSubmitterReport(models.Model):
    """One submitter pass's counts per site, job type and condition (submitted, no_pending_slot …): why jobs
    wait in the cache, as WMCore logs its "site submission report"."""

    queue = models.ForeignKey(WMCoreQueue, on_delete=models.CASCADE, related_name="submit_reports")
    at = models.DateTimeField(db_index=True)
    site = models.CharField(max_length=64)
    task_type = models.CharField(max_length=16)
    condition = models.CharField(max_length=32)
    count = models.PositiveIntegerField()

    class Meta:
        verbose_name = "JobSubmitter report"
        verbose_name_plural = "JobSubmitter reports"
        db_table = "wmcore_jobsubmitter_reports"
        constraints = [models.CheckConstraint(condition=Q(count__gt=0), name="wmcore_report_count_positive")]
        ordering = ["-at", "site"]

    def __str__(self) -> str:
        return f"{self.at:%H:%M} {self.site} {self.task_type} {self.condition}: {self.count}"
