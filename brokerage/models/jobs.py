"""PanDA jobs, their status history and JEDI's retry history."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from brokerage import states

from . import choices
from .base import Stateful, StatusLogBase

JOB_ENDED = ("finished", "failed", "closed", "cancelled")


def job_archive_window(since: datetime) -> Q:
    """For a read of the jobs that changed, started or ended at or after `since`: the archived ones can only be
    filed under that day or later (archiveDay is the day a job ended, and it ends after it starts and no later
    than its last change). Added to such a read, it lets PostgreSQL skip the archive's older months."""
    return Q(archiveDay__isnull=True) | Q(archiveDay__gte=since.astimezone(UTC).date())


class Job(Stateful):
    """A PanDA job: one piece of a task brokered to a queue (computingSite) and run by a pilot.

    Column names are PanDA's. The counters at the end (maxRSS, maxPSS, cpuConsumptionTime, bytes) are what the
    scouts report and what seed 002 derives a task's ramCount, ioIntensity and cpuTime from.
    """

    STATUS_FIELD = "jobStatus"

    PandaID = models.BigAutoField(primary_key=True, verbose_name="PandaID")
    task = models.ForeignKey("brokerage.Task", on_delete=models.CASCADE, db_column="jediTaskID", related_name="jobs")
    jobsetID = models.BigIntegerField(null=True, blank=True)
    jobName = models.CharField(max_length=255, blank=True, default="")
    jobStatus = models.CharField(max_length=15, choices=choices.JOB_STATUS, default="defined")
    jobSubStatus = models.CharField(max_length=80, blank=True, default="")
    prodSourceLabel = models.CharField(max_length=20, choices=choices.ProdSourceLabel.choices, default="managed")
    processingType = models.CharField(max_length=64, blank=True, default="")
    currentPriority = models.IntegerField(default=0)
    assignedPriority = models.IntegerField(default=0)
    computingSite = models.CharField(max_length=128, blank=True, default="", help_text="The PanDA queue.")
    nucleus = models.CharField(max_length=52, blank=True, default="")
    cloud = models.CharField(max_length=50, blank=True, default="")
    gshare = models.CharField(max_length=32, blank=True, default="")
    workQueue = models.ForeignKey(
        "brokerage.WorkQueue",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_column="workQueue_ID",
        related_name="jobs",
    )
    resource_type = models.CharField(max_length=56, blank=True, default="")
    prodUserName = models.CharField(max_length=128, blank=True, default="")
    workingGroup = models.CharField(max_length=20, blank=True, default="")
    transformation = models.CharField(max_length=250, blank=True, default="")
    homepackage = models.CharField(max_length=80, blank=True, default="")
    cmtConfig = models.CharField(max_length=250, blank=True, default="")
    specialHandling = models.CharField(max_length=80, blank=True, default="")
    isScout = models.BooleanField(default=False)
    isMerge = models.BooleanField(default=False)
    mergeJob = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_constraint=False,  # jobs are partitioned on PostgreSQL (brokerage.partitions): no key to refer to
        related_name="merged_jobs",
        help_text="The merge job that took this job's pre-merged output (tasks with mergeOutput).",
    )
    eventService = models.PositiveSmallIntegerField(default=0)
    coreCount = models.PositiveIntegerField(default=1)
    actualCoreCount = models.PositiveIntegerField(null=True, blank=True)
    minRamCount = models.PositiveIntegerField(null=True, blank=True)
    minRamUnit = models.CharField(max_length=2, blank=True, default="MB")
    maxDiskCount = models.PositiveIntegerField(null=True, blank=True)
    maxDiskUnit = models.CharField(max_length=2, blank=True, default="MB")
    maxWalltime = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds.")
    attemptNr = models.PositiveSmallIntegerField(default=1)
    maxAttempt = models.PositiveSmallIntegerField(default=3)
    creationTime = models.DateTimeField(default=timezone.now)
    modificationTime = models.DateTimeField(default=timezone.now)
    stateChangeTime = models.DateTimeField(default=timezone.now)
    startTime = models.DateTimeField(null=True, blank=True)
    endTime = models.DateTimeField(null=True, blank=True)
    nEvents = models.PositiveIntegerField(null=True, blank=True)
    nInputFiles = models.PositiveIntegerField(null=True, blank=True)
    randomSeed = models.BigIntegerField(
        null=True, blank=True, help_text="The random seed of a task that asks for one (taskParams randomSeed)."
    )
    inputFileBytes = models.PositiveBigIntegerField(null=True, blank=True)
    outputFileBytes = models.PositiveBigIntegerField(null=True, blank=True)
    maxRSS = models.PositiveBigIntegerField(null=True, blank=True, help_text="kB.")
    maxPSS = models.PositiveBigIntegerField(null=True, blank=True, help_text="kB.")
    cpuConsumptionTime = models.PositiveBigIntegerField(null=True, blank=True, help_text="Seconds.")
    diskIO = models.FloatField(
        null=True,
        blank=True,
        help_text="Disk IO the pilot measured, kB/s (the queue's average per core feeds the diskIO check).",
    )
    hs06 = models.PositiveIntegerField(null=True, blank=True)
    # PanDA's error columns, one code and diagnostic per component (brokerage/job_errors.py names them)
    pilotErrorCode = models.IntegerField(null=True, blank=True)
    pilotErrorDiag = models.CharField(max_length=500, blank=True, default="")
    exeErrorCode = models.IntegerField(null=True, blank=True)
    exeErrorDiag = models.CharField(max_length=500, blank=True, default="")
    supErrorCode = models.IntegerField(null=True, blank=True)
    supErrorDiag = models.CharField(max_length=250, blank=True, default="")
    ddmErrorCode = models.IntegerField(null=True, blank=True)
    ddmErrorDiag = models.CharField(max_length=500, blank=True, default="")
    jobDispatcherErrorCode = models.IntegerField(null=True, blank=True)
    jobDispatcherErrorDiag = models.CharField(max_length=250, blank=True, default="")
    brokerageErrorCode = models.IntegerField(null=True, blank=True)
    brokerageErrorDiag = models.CharField(max_length=250, blank=True, default="")
    taskBufferErrorCode = models.IntegerField(null=True, blank=True)
    taskBufferErrorDiag = models.CharField(max_length=300, blank=True, default="")
    # Active or archived (issue 32): null while the job is active; the day (UTC) it ended once the housekeeping
    # has moved it to the archive, JOB_ARCHIVE_AFTER_DAYS after its end (PanDA's jobsArchived4 keeps three days).
    # Readers find an archived job as an active one: it is the same model; the archive is where it is stored.
    archiveDay = models.DateField(null=True, blank=True, help_text="Day of its end once archived; empty if active.")
    # Where it ran, as the pilot reports it (getJob's computingElement, updateJob's node, batchID and pilotID: the
    # pilot's id and its log's address, "id|stdout URL|…" as pilot 3 sends it); the job page shows them as BigPanDA does
    computingElement = models.CharField(max_length=128, blank=True, default="")
    modificationHost = models.CharField(max_length=128, blank=True, default="", help_text="The worker node.")
    batchID = models.CharField(max_length=80, blank=True, default="")
    pilotID = models.CharField(max_length=250, blank=True, default="")
    # The input files the job took, as PanDA's filesTable4 keeps them per job: a file goes back to its dataset (or to
    # another job) when this one fails, and a shifter still sees which file failed and at which attempt (issue 50).
    # "fileID:attemptNr" pairs, comma-separated: one text column both bulk-update paths write.
    inputFiles = models.TextField(
        blank=True, default="", help_text="fileID:attemptNr of each input file as the job took it, comma-separated."
    )

    class Meta:
        db_table = "panda_jobs"
        ordering = ["-PandaID"]
        constraints = [
            models.CheckConstraint(condition=Q(jobStatus__in=states.JOB.statuses), name="job_status_known"),
            models.CheckConstraint(condition=Q(attemptNr__gte=1), name="job_attempt_counts_from_one"),
            models.CheckConstraint(
                condition=Q(diskIO__isnull=True) | Q(diskIO__gte=0), name="job_disk_io_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(startTime__isnull=True) | Q(endTime__isnull=True) | Q(endTime__gte=F("startTime")),
                name="job_ends_after_start",
            ),
            models.CheckConstraint(
                condition=Q(archiveDay__isnull=True) | Q(jobStatus__in=JOB_ENDED), name="job_archived_only_ended"
            ),
        ]
        indexes = [
            models.Index(fields=["task", "jobStatus"], name="job_task_status"),
            models.Index(fields=["computingSite", "jobStatus"], name="job_site_status"),
            models.Index(fields=["jobStatus", "stateChangeTime"], name="job_status_changed"),
            models.Index(fields=["gshare", "jobStatus"], name="job_gshare_status"),
            models.Index(fields=["prodUserName", "jobStatus"], name="job_user_status"),
            models.Index(fields=["task", "jobsetID"], name="job_task_jobset"),
            models.Index(fields=["jobsetID"], name="job_jobset"),  # the search box (migration 0039)
            # the task page's oldest active jobs, and the last job start per queue (timeouts, job brokerage)
            models.Index(fields=["task", "stateChangeTime"], name="job_task_changed"),
            models.Index(fields=["computingSite", "startTime"], name="job_site_started"),
            # the error summaries: failed and closed jobs of a task or a queue
            models.Index(fields=["task", "jobStatus", "computingSite"], name="job_task_status_site"),
            # the job list, most recently changed first, a day (or a window) at a time
            models.Index(fields=["stateChangeTime", "PandaID"], name="job_changed"),
            # the housekeeping's next batch to archive: ended jobs still active, oldest first
            models.Index(
                fields=["jobStatus", "endTime"], condition=Q(archiveDay__isnull=True), name="job_active_ended"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.PandaID} ({self.jobStatus})"

    @property
    def state_machine(self) -> states.StateMachine:
        return states.JOB

    def transition_updates(self, old_status, new_status, now):
        updates = {"stateChangeTime": now, "modificationTime": now}
        if new_status == "running" and self.startTime is None:
            updates["startTime"] = now
        if new_status in JOB_ENDED:
            updates["endTime"] = now
        return updates

    def status_log_entry(self, old_status, new_status, reason, actor, now):
        return JobStatusLog(
            job=self,
            timestamp=now,
            old_status=old_status,
            new_status=new_status,
            reason=reason,
            actor=actor,
            computingSite=self.computingSite,
        )


class JobStatusLog(StatusLogBase):
    """Every status change of a job (PanDA's JOBS_STATUSLOG), with the queue it was at."""

    # no database constraint: both tables are partitioned on PostgreSQL (brokerage.partitions); Django cascades
    job = models.ForeignKey(
        Job, on_delete=models.CASCADE, db_column="PandaID", related_name="status_log", db_constraint=False
    )
    computingSite = models.CharField(max_length=128, blank=True, default="")
    # Seven rows a job, kept 90 days: the bytes of each index count (issue 32). A job's history is read through the
    # index on its PandaID (the foreign key's; PostgreSQL stores its seven entries as one posting list); reads by
    # time (the hourly rollup, retention on the default partition) use a BRIN index on PostgreSQL, where rows come
    # in time order, a B-tree on SQLite: migration 0028 makes it, outside the model's indexes because Django's
    # BrinIndex exists on PostgreSQL only.
    timestamp = models.DateTimeField()

    class Meta(StatusLogBase.Meta):
        db_table = "panda_job_status_log"


class JobRetryHistory(models.Model):
    """JEDI_Job_Retry_History: which job replaced which, and the first job of the chain.

    PandaIDs are plain numbers, not foreign keys: old jobs are archived long before their history is.
    """

    task = models.ForeignKey(
        "brokerage.Task", on_delete=models.CASCADE, db_column="jediTaskID", related_name="retry_history"
    )
    oldPandaID = models.BigIntegerField()
    newPandaID = models.BigIntegerField()
    relationType = models.CharField(max_length=16, choices=choices.RetryRelation.choices, default="retry")
    originPandaID = models.BigIntegerField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "jedi_job_retry_history"
        verbose_name_plural = "job retry history"
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(condition=~Q(oldPandaID=F("newPandaID")), name="retry_new_job_differs"),
            models.UniqueConstraint(fields=["oldPandaID", "newPandaID", "relationType"], name="retry_pair_unique"),
        ]
        indexes = [
            models.Index(fields=["task", "oldPandaID"], name="retry_task_old"),
            models.Index(fields=["newPandaID"], name="retry_new"),
        ]

    def __str__(self) -> str:
        return f"{self.oldPandaID} → {self.newPandaID} ({self.relationType})"


class JobTimeoutSummary(models.Model):
    """What the watchdog saw in one pass, per queue and timeout rule (seed 000 timeout rules): jobs watched by
    the rule, those within an hour of their deadline, and those it timed out. The monitor plots them."""

    taken_at = models.DateTimeField()
    computingSite = models.CharField(max_length=128)
    rule = models.CharField(max_length=32)
    watched = models.PositiveIntegerField(default=0)
    approaching = models.PositiveIntegerField(default=0, help_text="Less than an hour left.")
    timed_out = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "job_timeout_summary"
        verbose_name_plural = "job timeout summaries"
        ordering = ["-taken_at", "computingSite", "rule"]
        constraints = [
            models.UniqueConstraint(fields=["taken_at", "computingSite", "rule"], name="timeout_summary_unique"),
            models.CheckConstraint(
                condition=Q(approaching__lte=F("watched")) & Q(timed_out__lte=F("watched")),
                name="timeout_summary_within_watched",
            ),
        ]
        indexes = [models.Index(fields=["computingSite", "taken_at"], name="timeout_summary_queue_time")]

    def __str__(self) -> str:
        return f"{self.taken_at:%Y-%m-%d %H:%M} {self.computingSite} {self.rule}: {self.timed_out}/{self.watched}"


class MergePreassignment(models.Model):
    """The pre-assignment history of a task's merge jobs (seed 000 job brokerage): merge job sets go to the queue
    holding their pre-merged files; `skipped_since` is when brokerage first skipped that queue, and after 24 hours
    of skips the pre-assignment is ignored. The row goes when a merge job set is brokered there again."""

    task = models.ForeignKey("brokerage.Task", on_delete=models.CASCADE, related_name="merge_preassignments")
    computingSite = models.CharField(max_length=128, help_text="The queue holding the pre-merged files.")
    skipped_since = models.DateTimeField()

    class Meta:
        db_table = "merge_preassignment"
        ordering = ["task", "computingSite"]
        constraints = [
            models.UniqueConstraint(fields=["task", "computingSite"], name="merge_preassignment_unique"),
        ]

    def __str__(self) -> str:
        return f"task {self.task_id} merges at {self.computingSite}: skipped since {self.skipped_since:%Y-%m-%d %H:%M}"


class JobErrorHour(models.Model):
    """Jobs that ended badly in one hour, per queue, status, main error and attempt (issue 32): what the overview's
    and the queue page's error summaries read for every whole hour, so they cost the same with a year of jobs
    behind them. Rolled up by the housekeeping (services.summaries) from the jobs; the hours after the last one
    rolled up are read from the jobs themselves."""

    hour = models.DateTimeField(help_text="The hour's start (UTC); jobs whose stateChangeTime falls in it.")
    computingSite = models.CharField(max_length=128, blank=True, default="")
    jobStatus = models.CharField(max_length=15)
    error_component = models.CharField(max_length=32, blank=True, default="")
    error_code = models.IntegerField(null=True, blank=True)
    attemptNr = models.PositiveSmallIntegerField(default=1)
    n = models.PositiveIntegerField()
    diag = models.CharField(max_length=500, blank=True, default="", help_text="One diagnostic message of them.")
    example = models.BigIntegerField(help_text="The lowest PandaID among them.")

    class Meta:
        db_table = "panda_job_error_hours"
        ordering = ["-hour"]
        constraints = [models.CheckConstraint(condition=Q(n__gt=0), name="job_error_hour_counts_jobs")]
        indexes = [
            models.Index(fields=["hour"], name="job_error_hour"),
            models.Index(fields=["computingSite", "hour"], name="job_error_hour_site"),
        ]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}h {self.computingSite} {self.error_component} {self.error_code}: {self.n}"


class JobStateHour(models.Model):
    """Job status moves in one hour, per queue and new status (issue 32): what the queue page's "jobs by state
    over the last day" reads for every whole hour, instead of a day of status-log rows (seven a job). Rolled up
    by the housekeeping (services.summaries) from the job status logs; the hours after the last one rolled up are
    read from the logs themselves."""

    hour = models.DateTimeField(help_text="The hour's start (UTC); status moves whose timestamp falls in it.")
    computingSite = models.CharField(max_length=128, blank=True, default="")
    new_status = models.CharField(max_length=64)
    n = models.PositiveIntegerField()

    class Meta:
        db_table = "panda_job_state_hours"
        ordering = ["-hour"]
        constraints = [models.CheckConstraint(condition=Q(n__gt=0), name="job_state_hour_counts_moves")]
        indexes = [
            models.Index(fields=["hour"], name="job_state_hour"),
            models.Index(fields=["computingSite", "hour"], name="job_state_hour_site"),
        ]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}h {self.computingSite} → {self.new_status}: {self.n}"


class JobCountNow(models.Model):
    """The jobs not yet ended, per queue and status, as counted at one moment (issue 50): what the site list, the
    queue list and the site page read instead of counting half a million active jobs on every visit (120 ms at one
    site in `bench pages`). Replaced whole by a periodic refresh (services.summaries.job_counts_refresh), as PanDA
    refreshes its jobs statistics view (MV_JOBSACTIVE4_STATS) every few minutes; its SummaryMark JOB_COUNTS says
    when. A page reads it only while that is recent, and counts the jobs themselves otherwise. Not history: one set
    of rows, at most queues × statuses."""

    computingSite = models.CharField(max_length=128, blank=True, default="")
    jobStatus = models.CharField(max_length=64)
    n = models.PositiveIntegerField()

    class Meta:
        db_table = "panda_job_counts_now"
        ordering = ["computingSite", "jobStatus"]
        constraints = [
            models.CheckConstraint(condition=Q(n__gt=0), name="job_count_now_counts_jobs"),
            models.UniqueConstraint(fields=["computingSite", "jobStatus"], name="job_count_now_one_per_queue_status"),
        ]

    def __str__(self) -> str:
        return f"{self.computingSite} {self.jobStatus}: {self.n}"


def input_files_text(pairs: list[tuple[int, int]]) -> str:
    """Job.inputFiles from (fileID, attemptNr) pairs."""
    return ",".join(f"{file_id}:{attempt}" for file_id, attempt in pairs)


def input_files_parse(text: str) -> list[tuple[int, int]]:
    """(fileID, attemptNr) pairs of Job.inputFiles; [] for a job made before it was kept."""
    pairs = []
    for item in text.split(","):
        file_id, _, attempt = item.partition(":")
        if file_id.strip().isdigit():
            pairs.append((int(file_id), int(attempt) if attempt.strip().isdigit() else 0))
    return pairs
