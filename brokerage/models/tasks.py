"""JEDI tasks and what hangs from them: status history, datasets, files (dataset contents) and event ranges.

Columns keep the JEDI names of seed 002 ("Table schemas") so real task dumps and the engine's scenario map onto
them one to one; foreign keys are named after the object (`task`) and stored in the JEDI column (jediTaskID).
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from brokerage import states

from . import choices
from .base import Stateful, StatusLogBase

# Statuses after which a task no longer runs anything (endTime is set when one is reached).
TASK_ENDED = ("done", "finished", "failed", "aborted", "broken")
TASK_STARTED = ("scouting", "running")


class Task(Stateful):
    """A JEDI task (JEDI_Tasks): the unit brokered to a nucleus and split into jobs.

    taskParams holds the task parameters JEDI keeps in JEDI_TaskParams (t1Weight, fullChain, ipConnectivity,
    includedSite, maxAttempt…); the typed columns are those the brokerage, the watchdog and the monitor read.
    """

    jediTaskID = models.BigAutoField(primary_key=True, verbose_name="jediTaskID")
    taskName = models.CharField(max_length=255)
    status = models.CharField(max_length=64, choices=choices.TASK_STATUS, default="registered")
    oldStatus = models.CharField(max_length=64, blank=True, default="")
    superStatus = models.CharField(max_length=64, blank=True, default="")
    creationDate = models.DateTimeField(default=timezone.now)
    modificationTime = models.DateTimeField(default=timezone.now)
    stateChangeTime = models.DateTimeField(null=True, blank=True)
    startTime = models.DateTimeField(null=True, blank=True)
    endTime = models.DateTimeField(null=True, blank=True)
    frozenTime = models.DateTimeField(null=True, blank=True)
    prodSourceLabel = models.CharField(max_length=20, choices=choices.ProdSourceLabel.choices, default="managed")
    userName = models.CharField(max_length=128, blank=True, default="")
    workingGroup = models.CharField(max_length=32, blank=True, default="")
    vo = models.CharField(max_length=16, default="atlas")
    taskType = models.CharField(max_length=64, blank=True, default="prod")
    processingType = models.CharField(max_length=64, blank=True, default="")
    campaign = models.CharField(max_length=72, blank=True, default="")
    requestType = models.CharField(max_length=32, blank=True, default="")
    reqID = models.BigIntegerField(null=True, blank=True)
    taskPriority = models.IntegerField(default=0)
    currentPriority = models.IntegerField(default=0)
    coreCount = models.PositiveIntegerField(default=1, help_text="Cores per job; 0 when it can vary.")
    architecture = models.CharField(max_length=256, blank=True, default="")
    transUses = models.CharField(max_length=64, blank=True, default="")
    transHome = models.CharField(max_length=128, blank=True, default="")
    transPath = models.CharField(max_length=128, blank=True, default="")
    splitRule = models.CharField(max_length=100, blank=True, default="")
    termCondition = models.CharField(
        max_length=100, blank=True, default="", help_text="Share of files finished that ends the task, e.g. 90%."
    )
    # Scout-measured job properties (seed 002, memory / IO / HS06sPerEvent sections).
    walltime = models.IntegerField(null=True, blank=True)
    walltimeUnit = models.CharField(max_length=32, blank=True, default="")
    baseWalltime = models.IntegerField(null=True, blank=True, help_text="Seconds not scaling with CPU power.")
    outDiskCount = models.IntegerField(null=True, blank=True)
    outDiskUnit = models.CharField(max_length=32, blank=True, default="")
    workDiskCount = models.IntegerField(null=True, blank=True)
    workDiskUnit = models.CharField(max_length=32, blank=True, default="")
    ramCount = models.IntegerField(null=True, blank=True)
    ramUnit = models.CharField(max_length=32, blank=True, default="", help_text="MBPerCore or MB.")
    baseRamCount = models.IntegerField(null=True, blank=True, help_text="Shared memory size in MB.")
    ioIntensity = models.IntegerField(null=True, blank=True)
    ioIntensityUnit = models.CharField(max_length=32, blank=True, default="")
    diskIO = models.IntegerField(null=True, blank=True)
    diskIOUnit = models.CharField(max_length=32, blank=True, default="")
    cpuTime = models.IntegerField(null=True, blank=True, help_text="HS06 seconds per event.")
    cpuTimeUnit = models.CharField(max_length=32, blank=True, default="")
    cpuEfficiency = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Percent; 0 disables scaling.")
    mergeRamCount = models.IntegerField(null=True, blank=True)
    mergeRamUnit = models.CharField(max_length=32, blank=True, default="")
    mergeWalltime = models.IntegerField(null=True, blank=True)
    mergeWalltimeUnit = models.CharField(max_length=32, blank=True, default="")
    mergeCoreCount = models.PositiveIntegerField(null=True, blank=True)
    # Where the task is: brokerage results and sharing.
    workQueue = models.ForeignKey(
        "brokerage.WorkQueue",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_column="workQueue_ID",
        related_name="tasks",
    )
    gshare = models.CharField(max_length=32, blank=True, default="", help_text="Name of the global share.")
    nucleus = models.CharField(max_length=52, blank=True, default="", help_text="Site name of the nucleus.")
    cloud = models.CharField(max_length=10, blank=True, default="")
    site = models.CharField(max_length=60, blank=True, default="", help_text="Forced site; empty = brokerage.")
    countryGroup = models.CharField(max_length=20, blank=True, default="")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, db_column="parent_tid", related_name="children"
    )
    progress = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Percent done.")
    failureRate = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Percent of jobs failed.")
    goal = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Completion goal in ‰.")
    errorDialog = models.CharField(max_length=255, blank=True, default="")
    eventService = models.PositiveSmallIntegerField(default=0)
    useJumbo = models.CharField(max_length=1, blank=True, default="", choices=choices.USE_JUMBO)
    ticketID = models.CharField(max_length=50, blank=True, default="")
    ticketSystemType = models.CharField(max_length=16, blank=True, default="")
    amiFlag = models.CharField(max_length=10, blank=True, default="")
    throttledTime = models.DateTimeField(null=True, blank=True)
    numThrottled = models.PositiveSmallIntegerField(default=0)
    assessmentTime = models.DateTimeField(null=True, blank=True)
    rescueTime = models.DateTimeField(null=True, blank=True)
    lockedBy = models.CharField(max_length=40, blank=True, default="")
    lockedTime = models.DateTimeField(null=True, blank=True)
    brokeragePendingSince = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Ours: when the brokerage first left the task pending without success since; cleared on success.",
    )
    taskParams = models.JSONField(default=dict, blank=True)
    taskClass = models.CharField(
        max_length=1,
        choices=choices.TaskClass.choices,
        blank=True,
        default="",
        help_text="Analysis task class S/A/B/C (seed 000, site & task classification).",
    )

    class Meta:
        db_table = "jedi_tasks"
        ordering = ["-jediTaskID"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=states.TASK.statuses), name="task_status_known"),
            models.CheckConstraint(condition=Q(useJumbo__in=list(states.USE_JUMBO)), name="task_use_jumbo_known"),
            models.CheckConstraint(
                condition=Q(progress__isnull=True) | Q(progress__lte=100), name="task_progress_percent"
            ),
            models.CheckConstraint(
                condition=Q(failureRate__isnull=True) | Q(failureRate__lte=100), name="task_failure_rate_percent"
            ),
            # TaskRefinerBase (1.0.4): a goal over 100 % is no goal
            models.CheckConstraint(condition=Q(goal__isnull=True) | Q(goal__lte=1000), name="task_goal_permille"),
            models.CheckConstraint(
                condition=Q(lockedBy="", lockedTime__isnull=True) | (~Q(lockedBy="") & Q(lockedTime__isnull=False)),
                name="task_lock_owner_and_time_together",
            ),
            models.CheckConstraint(condition=~Q(parent=F("jediTaskID")), name="task_not_own_parent"),
            models.CheckConstraint(
                condition=Q(startTime__isnull=True) | Q(endTime__isnull=True) | Q(endTime__gte=F("startTime")),
                name="task_ends_after_start",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "-modificationTime"], name="task_status_modified"),
            models.Index(fields=["status", "-currentPriority"], name="task_status_priority"),
            models.Index(fields=["-creationDate"], name="task_created"),
            models.Index(fields=["workQueue", "status"], name="task_workqueue_status"),
            models.Index(fields=["gshare", "status"], name="task_gshare_status"),
            models.Index(fields=["nucleus", "status"], name="task_nucleus_status"),
            models.Index(fields=["userName", "status"], name="task_user_status"),
            models.Index(fields=["lockedBy", "lockedTime"], name="task_lock"),
        ]

    def __str__(self) -> str:
        return f"{self.jediTaskID} {self.taskName}"

    @property
    def goal_percent(self) -> float | None:
        """The completion goal in percent (kept in ‰, as JEDI_Tasks.GOAL)."""
        return None if self.goal is None else self.goal / 10

    @property
    def state_machine(self) -> states.StateMachine:
        return states.TASK

    def transition_updates(self, old_status, new_status, now):
        # JEDI keeps the previous status so a paused or pending task can resume where it was.
        updates = {"oldStatus": old_status, "stateChangeTime": now, "modificationTime": now}
        if new_status in TASK_STARTED and self.startTime is None:
            updates["startTime"] = now
        if new_status in TASK_ENDED:
            updates["endTime"] = now
        return updates

    def status_log_entry(self, old_status, new_status, reason, actor, now):
        return TaskStatusLog(
            task=self, timestamp=now, old_status=old_status, new_status=new_status, reason=reason, actor=actor
        )


class TaskStatusLog(StatusLogBase):
    """Every status change of a task (JEDI's TASKS_STATUSLOG), the source of the monitor's status timeline."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, db_column="jediTaskID", related_name="status_log")

    class Meta(StatusLogBase.Meta):
        db_table = "jedi_task_status_log"
        indexes = [models.Index(fields=["task", "timestamp"], name="tasklog_task_time")]


class Dataset(Stateful):
    """One task–dataset pair (JEDI_Datasets): an input (master or secondary) or output of a task.

    Two statuses as seed 002 asks: `status` is how PanDA uses the dataset (the state machine); `state` is the
    dataset's state in DDM (open, closed, frozen…) as last checked.
    """

    datasetID = models.BigAutoField(primary_key=True, verbose_name="datasetID")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, db_column="jediTaskID", related_name="datasets")
    datasetName = models.CharField(max_length=255)
    containerName = models.CharField(max_length=132, blank=True, default="")
    type = models.CharField(max_length=20, choices=choices.DATASET_TYPE)
    master = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        db_column="masterID",
        related_name="secondaries",
        help_text="Set on a secondary input: the master dataset it is read with.",
    )
    provenanceID = models.BigIntegerField(null=True, blank=True)
    templateID = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=choices.DATASET_STATUS, default="defined")
    state = models.CharField(max_length=20, blank=True, default="", help_text="State in DDM.")
    stateCheckTime = models.DateTimeField(null=True, blank=True)
    stateCheckExpiration = models.DateTimeField(null=True, blank=True)
    nFiles = models.PositiveIntegerField(default=0)
    nFilesToBeUsed = models.PositiveIntegerField(default=0)
    nFilesUsed = models.PositiveIntegerField(default=0)
    nFilesFinished = models.PositiveIntegerField(default=0)
    nFilesFailed = models.PositiveIntegerField(default=0)
    nFilesOnHold = models.PositiveIntegerField(default=0)
    nFilesWaiting = models.PositiveIntegerField(default=0)
    nEvents = models.PositiveBigIntegerField(null=True, blank=True)
    nEventsToBeUsed = models.PositiveBigIntegerField(null=True, blank=True)
    nEventsUsed = models.PositiveBigIntegerField(null=True, blank=True)
    creationTime = models.DateTimeField(default=timezone.now)
    modificationTime = models.DateTimeField(default=timezone.now)
    frozenTime = models.DateTimeField(null=True, blank=True)
    vo = models.CharField(max_length=16, default="atlas")
    cloud = models.CharField(max_length=10, blank=True, default="")
    site = models.CharField(max_length=60, blank=True, default="")
    attributes = models.CharField(max_length=100, blank=True, default="")
    streamName = models.CharField(max_length=20, blank=True, default="")
    storageToken = models.CharField(max_length=100, blank=True, default="")
    destination = models.CharField(max_length=60, blank=True, default="")
    lockedBy = models.CharField(max_length=40, blank=True, default="")
    lockedTime = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "jedi_datasets"
        ordering = ["datasetID"]
        constraints = [
            models.CheckConstraint(
                condition=Q(type__in=states.INPUT_TYPES, status__in=states.INPUT_DATASET.statuses)
                | Q(type__in=states.OUTPUT_TYPES, status__in=states.OUTPUT_DATASET.statuses),
                name="dataset_status_fits_type",
            ),
            models.CheckConstraint(
                condition=Q(master__isnull=True) | Q(type__in=states.INPUT_TYPES),
                name="dataset_only_inputs_have_master",
            ),
            models.CheckConstraint(condition=~Q(master=F("datasetID")), name="dataset_not_own_master"),
            models.CheckConstraint(
                condition=Q(nFilesFinished__lte=F("nFiles")) & Q(nFilesFailed__lte=F("nFiles")),
                name="dataset_file_counters_within_total",
            ),
        ]
        indexes = [
            models.Index(fields=["task", "type"], name="dataset_task_type"),
            models.Index(fields=["datasetName"], name="dataset_name"),
            models.Index(fields=["status"], name="dataset_status"),
        ]

    def __str__(self) -> str:
        return self.datasetName

    @property
    def is_input(self) -> bool:
        return self.type in states.INPUT_TYPES

    @property
    def is_master(self) -> bool:
        """The primary input of a task (seed 000 taskBrokerOnMaster considers only these)."""
        return self.is_input and self.master_id is None

    MACHINE_FIELDS = ("type",)

    @property
    def state_machine(self) -> states.StateMachine:
        return states.dataset_machine(self.type)

    def transition_updates(self, old_status, new_status, now):
        return {"modificationTime": now}

    def status_log_entry(self, old_status, new_status, reason, actor, now):
        return DatasetStatusLog(
            dataset=self, timestamp=now, old_status=old_status, new_status=new_status, reason=reason, actor=actor
        )


class DatasetStatusLog(StatusLogBase):
    """Every status change of a dataset (a handful per task, so cheap to keep)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, db_column="datasetID", related_name="status_log")

    class Meta(StatusLogBase.Meta):
        db_table = "jedi_dataset_status_log"
        indexes = [models.Index(fields=["dataset", "timestamp"], name="datasetlog_dataset_time")]


class DatasetFile(Stateful):
    """A file of a task's dataset (JEDI_Dataset_Contents) with its attempt counters.

    Files keep no status history: a task has up to millions of them and JEDI keeps none either; attemptNr
    and failedAttempt carry what the retries need.
    """

    fileID = models.BigAutoField(primary_key=True, verbose_name="fileID")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, db_column="datasetID", related_name="files")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, db_column="jediTaskID", related_name="files")
    lfn = models.CharField(max_length=256)
    GUID = models.CharField(max_length=64, blank=True, default="")
    scope = models.CharField(max_length=30, blank=True, default="")
    type = models.CharField(max_length=20, choices=choices.DATASET_TYPE)
    fsize = models.PositiveBigIntegerField(null=True, blank=True, help_text="Bytes.")
    checksum = models.CharField(max_length=36, blank=True, default="")
    status = models.CharField(max_length=64, choices=choices.FILE_STATUS, default="ready")
    proc_status = models.CharField(max_length=64, blank=True, default="")
    creationDate = models.DateTimeField(default=timezone.now)
    lastAttemptTime = models.DateTimeField(null=True, blank=True)
    attemptNr = models.PositiveSmallIntegerField(default=0)
    maxAttempt = models.PositiveSmallIntegerField(null=True, blank=True)
    failedAttempt = models.PositiveSmallIntegerField(default=0)
    maxFailure = models.PositiveSmallIntegerField(null=True, blank=True)
    nEvents = models.PositiveIntegerField(null=True, blank=True)
    startEvent = models.PositiveIntegerField(null=True, blank=True)
    endEvent = models.PositiveIntegerField(null=True, blank=True)
    firstEvent = models.PositiveIntegerField(null=True, blank=True)
    keepTrack = models.PositiveSmallIntegerField(default=0)
    boundaryID = models.BigIntegerField(null=True, blank=True)
    lumiBlockNr = models.PositiveIntegerField(null=True, blank=True)
    PandaID = models.BigIntegerField(null=True, blank=True, help_text="The job that uses the file.")
    outPandaID = models.BigIntegerField(null=True, blank=True, help_text="The job that produced the file.")
    jobsetID = models.BigIntegerField(null=True, blank=True)
    is_waiting = models.CharField(max_length=1, blank=True, default="")
    ramCount = models.PositiveIntegerField(
        null=True, blank=True, help_text="Memory for the next job using the file (raised after out-of-memory failures)."
    )

    class Meta:
        db_table = "jedi_dataset_contents"
        ordering = ["fileID"]
        constraints = [
            models.CheckConstraint(
                condition=Q(type__in=states.INPUT_TYPES, status__in=states.INPUT_FILE.statuses)
                | Q(type__in=states.OUTPUT_TYPES, status__in=states.OUTPUT_FILE.statuses),
                name="file_status_fits_type",
            ),
            # seed 002, job rebrokerage: a file gives up when attemptNr reaches maxAttempt
            models.CheckConstraint(
                condition=Q(maxAttempt__isnull=True) | Q(attemptNr__lte=F("maxAttempt")),
                name="file_attempts_within_max",
            ),
            models.CheckConstraint(
                condition=Q(startEvent__isnull=True) | Q(endEvent__isnull=True) | Q(startEvent__lte=F("endEvent")),
                name="file_event_range_ordered",
            ),
        ]
        indexes = [
            models.Index(fields=["dataset", "status"], name="file_dataset_status"),
            models.Index(fields=["task", "type", "status"], name="file_task_type_status"),
            models.Index(fields=["PandaID"], name="file_pandaid"),
            # a job's outputs and logs (seed 002: an output file records the job that produced it); inputs have none
            models.Index(fields=["outPandaID"], name="file_outpandaid", condition=Q(outPandaID__isnull=False)),
            models.Index(fields=["lfn"], name="file_lfn"),
        ]

    def __str__(self) -> str:
        return self.lfn

    MACHINE_FIELDS = ("type",)

    @property
    def state_machine(self) -> states.StateMachine:
        return states.file_machine(self.type)


class OutputTemplate(models.Model):
    """How the files of one output or log dataset of a task are named (JEDI_Output_Template, seed 002): the template
    with its serial-number placeholder, and the last serial number given out. "Option B has been adopted": every new
    job takes the next serial number, a retry included, so a dataset's serial numbers need not be continuous."""

    outTempID = models.BigAutoField(primary_key=True, verbose_name="outTempID")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, db_column="jediTaskID", related_name="output_templates")
    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, db_column="datasetID", related_name="output_templates"
    )
    filenameTemplate = models.CharField(max_length=256, help_text="With ${SN} for the serial number.")
    sourceName = models.CharField(
        max_length=256, blank=True, default="", help_text="The payload's own name of the file, renamed by the pilot."
    )
    serialNr = models.PositiveIntegerField(default=0, help_text="The last serial number given out.")
    maxSerialNr = models.PositiveIntegerField(null=True, blank=True)
    streamName = models.CharField(max_length=20, help_text="The placeholder of the job parameters template.")
    outType = models.CharField(max_length=20, choices=choices.DATASET_TYPE)

    class Meta:
        db_table = "jedi_output_template"
        ordering = ["outTempID"]
        constraints = [
            models.CheckConstraint(condition=Q(outType__in=states.OUTPUT_TYPES), name="output_template_type"),
            models.CheckConstraint(
                condition=Q(maxSerialNr__isnull=True) | Q(serialNr__lte=F("maxSerialNr")),
                name="output_template_serial_within_max",
            ),
            models.CheckConstraint(
                condition=Q(filenameTemplate__contains="${SN"), name="output_template_has_serial_number"
            ),
            models.UniqueConstraint(fields=["task", "streamName"], name="output_template_stream_unique"),
        ]

    def __str__(self) -> str:
        return self.filenameTemplate


class JobParamsTemplate(models.Model):
    """How the parameters of a task's jobs are made (JEDI_JobParams_Template, seed 002): the transformation's
    arguments with JEDI's placeholders (${IN}, ${OUTPUT0}, ${SN}, ${RNDMSEED}, ${SKIPEVENTS}, ${MAXEVENTS}),
    filled in for each job from its files (brokerage/outputs.py)."""

    task = models.OneToOneField(
        Task, on_delete=models.CASCADE, primary_key=True, db_column="jediTaskID", related_name="job_params_template"
    )
    jobParamsTemplate = models.TextField()

    class Meta:
        db_table = "jedi_jobparams_template"

    def __str__(self) -> str:
        return f"job parameters of task {self.task_id}"


class Event(Stateful):
    """An event range of a file processed by one job (JEDI_Events), used by event-level splitting and ES.

    The status is stored as its name rather than JEDI's number so that it reads the same everywhere.
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, db_column="jediTaskID", related_name="events")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, db_column="datasetID", related_name="events")
    file = models.ForeignKey(DatasetFile, on_delete=models.CASCADE, db_column="fileID", related_name="events")
    status = models.CharField(max_length=16, choices=choices.EVENT_STATUS, default="ready")
    PandaID = models.BigIntegerField(null=True, blank=True)
    job_processID = models.PositiveIntegerField(default=0)
    def_min_eventID = models.PositiveIntegerField()
    def_max_eventID = models.PositiveIntegerField()
    processed_upto_eventID = models.PositiveIntegerField(null=True, blank=True)
    attemptNr = models.PositiveSmallIntegerField(default=0)
    objStore_ID = models.PositiveIntegerField(null=True, blank=True)
    event_offset = models.BigIntegerField(null=True, blank=True)
    is_jumbo = models.BooleanField(default=False)
    zipRow_ID = models.BigIntegerField(null=True, blank=True)
    file_not_deleted = models.CharField(max_length=1, blank=True, default="")
    error_code = models.IntegerField(null=True, blank=True)
    path_convention = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        verbose_name = "event range"
        verbose_name_plural = "event ranges"
        db_table = "jedi_events"
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=states.EVENT.statuses), name="event_status_known"),
            models.CheckConstraint(condition=Q(def_min_eventID__lte=F("def_max_eventID")), name="event_range_ordered"),
            models.UniqueConstraint(
                fields=["task", "PandaID", "file", "job_processID", "attemptNr"], name="event_range_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["task", "status"], name="event_task_status"),
            models.Index(fields=["PandaID"], name="event_pandaid"),
        ]

    def __str__(self) -> str:
        return f"{self.file_id}:{self.def_min_eventID}-{self.def_max_eventID}"

    @property
    def state_machine(self) -> states.StateMachine:
        return states.EVENT
