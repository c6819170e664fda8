"""Admin pages for the domain model: list columns, filters and search that operators use to find rows fast.

Big tables (jobs, files, events, logs) use raw-id widgets and skip the full count so a page never loads
millions of rows into a select box or counts them twice.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone

from brokerage import models
from brokerage.models.choices import WorkQueueType
from brokerage.selectors.shares import share_change_effect
from brokerage.services.task_commands import TaskCommandRefused, task_abort, task_finish, task_retry

from .decisions import ReadOnlyAdmin
from .stateful import StatefulAdmin


class ReadOnlyLogInline(admin.TabularInline):
    fields = ["timestamp", "old_status", "new_status", "reason", "actor"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["-timestamp"]
    max_num = 0

    def has_add_permission(self, request, obj=None):
        return False


class TaskStatusLogInline(ReadOnlyLogInline):
    model = models.TaskStatusLog


class DatasetStatusLogInline(ReadOnlyLogInline):
    model = models.DatasetStatusLog


class JobStatusLogInline(ReadOnlyLogInline):
    model = models.JobStatusLog


@admin.register(models.Task)
class TaskAdmin(StatefulAdmin):
    list_display = [
        "jediTaskID",
        "taskName",
        "status",
        "prodSourceLabel",
        "processingType",
        "currentPriority",
        "workQueue",
        "gshare",
        "nucleus",
        "userName",
        "progress",
        "modificationTime",
    ]
    list_filter = ["status", "prodSourceLabel", "processingType", "gshare", "workQueue", "vo", "taskClass"]
    search_fields = ["=jediTaskID", "taskName", "userName", "workingGroup", "nucleus", "errorDialog"]
    list_select_related = ["workQueue"]
    raw_id_fields = ["parent"]
    date_hierarchy = "creationDate"
    readonly_fields = [
        "oldStatus",
        "creationDate",
        "modificationTime",
        "stateChangeTime",
        "startTime",
        "endTime",
        "lockedBy",
        "lockedTime",
    ]
    inlines = [TaskStatusLogInline]
    actions = ["retry_tasks", "abort_tasks", "finish_tasks"]

    def _command(self, request, queryset, service, done: str):
        """Runs a task command on each selected task; refused ones are reported with the reason."""
        now = timezone.now()
        actor = f"admin:{request.user.get_username()}"
        succeeded = 0
        for task_id in queryset.values_list("pk", flat=True):
            try:
                service(task_id=task_id, actor=actor, now=now)
                succeeded += 1
            except TaskCommandRefused as refused:
                self.message_user(request, str(refused), messages.WARNING)
        if succeeded:
            self.message_user(request, f"{succeeded} task(s) {done}.", messages.SUCCESS)

    @admin.action(description="Retry (finished or exhausted tasks, with their children)", permissions=["change"])
    def retry_tasks(self, request, queryset):
        self._command(request, queryset, task_retry, "retried")

    @admin.action(description="Abort (kill every job)", permissions=["change"])
    def abort_tasks(self, request, queryset):
        self._command(request, queryset, task_abort, "aborted")

    @admin.action(description="Finish (no new jobs; running ones may end)", permissions=["change"])
    def finish_tasks(self, request, queryset):
        self._command(request, queryset, task_finish, "finishing")

    fieldsets = [
        (None, {"fields": ["taskName", "status", "transition_to", "transition_reason", "oldStatus", "errorDialog"]}),
        (
            "Ownership",
            {
                "fields": [
                    "prodSourceLabel",
                    "vo",
                    "userName",
                    "workingGroup",
                    "taskType",
                    "processingType",
                    "campaign",
                    "reqID",
                    "parent",
                ]
            },
        ),
        (
            "Brokerage",
            {
                "fields": [
                    "taskPriority",
                    "currentPriority",
                    "workQueue",
                    "gshare",
                    "nucleus",
                    "cloud",
                    "site",
                    "coreCount",
                    "architecture",
                    "transUses",
                    "transHome",
                    "transPath",
                ]
            },
        ),
        (
            "Scout-measured",
            {
                "classes": ["collapse"],
                "fields": [
                    "ramCount",
                    "ramUnit",
                    "baseRamCount",
                    "outDiskCount",
                    "outDiskUnit",
                    "workDiskCount",
                    "workDiskUnit",
                    "ioIntensity",
                    "ioIntensityUnit",
                    "diskIO",
                    "diskIOUnit",
                    "cpuTime",
                    "cpuTimeUnit",
                    "cpuEfficiency",
                    "baseWalltime",
                    "walltime",
                    "walltimeUnit",
                ],
            },
        ),
        (
            "Progress",
            {
                "fields": [
                    "progress",
                    "failureRate",
                    "numThrottled",
                    "throttledTime",
                    "creationDate",
                    "modificationTime",
                    "stateChangeTime",
                    "startTime",
                    "endTime",
                    "lockedBy",
                    "lockedTime",
                ]
            },
        ),
        ("Task parameters", {"fields": ["taskParams", "splitRule", "eventService", "useJumbo", "taskClass"]}),
    ]


@admin.register(models.TaskStatusLog)
class TaskStatusLogAdmin(admin.ModelAdmin):
    list_display = ["timestamp", "task", "old_status", "new_status", "reason", "actor"]
    list_filter = ["new_status", "old_status"]
    search_fields = ["=task__jediTaskID", "reason", "actor"]
    raw_id_fields = ["task"]
    date_hierarchy = "timestamp"
    show_full_result_count = False


@admin.register(models.Dataset)
class DatasetAdmin(StatefulAdmin):
    list_display = [
        "datasetID",
        "datasetName",
        "task",
        "type",
        "status",
        "state",
        "nFiles",
        "nFilesFinished",
        "nFilesFailed",
        "modificationTime",
    ]
    list_filter = ["type", "status", "state"]
    search_fields = ["=datasetID", "datasetName", "containerName", "=task__jediTaskID"]
    raw_id_fields = ["task", "master"]
    inlines = [DatasetStatusLogInline]


@admin.register(models.DatasetFile)
class DatasetFileAdmin(StatefulAdmin):
    list_display = [
        "fileID", "lfn", "dataset", "type", "status", "attemptNr", "maxAttempt", "fsize", "PandaID", "outPandaID",
    ]  # fmt: skip
    list_filter = ["type", "status"]
    search_fields = ["=fileID", "lfn", "=PandaID", "=outPandaID"]
    raw_id_fields = ["dataset", "task"]
    show_full_result_count = False


@admin.register(models.OutputTemplate)
class OutputTemplateAdmin(admin.ModelAdmin):
    """Made by the task refiner (services.outputs); an admin may correct a template before the task's first job."""

    list_display = ["outTempID", "task", "dataset", "outType", "filenameTemplate", "serialNr", "maxSerialNr"]
    list_filter = ["outType"]
    search_fields = ["=task__jediTaskID", "filenameTemplate"]
    raw_id_fields = ["task", "dataset"]
    readonly_fields = ["serialNr"]  # given out by job generation only: a lower one would name two files alike


@admin.register(models.JobParamsTemplate)
class JobParamsTemplateAdmin(admin.ModelAdmin):
    list_display = ["task", "jobParamsTemplate"]
    search_fields = ["=task__jediTaskID"]
    raw_id_fields = ["task"]


@admin.register(models.Event)
class EventAdmin(StatefulAdmin):
    list_display = ["id", "task", "file", "def_min_eventID", "def_max_eventID", "status", "PandaID", "attemptNr"]
    list_filter = ["status", "is_jumbo"]
    search_fields = ["=PandaID", "=task__jediTaskID"]
    raw_id_fields = ["task", "dataset", "file"]
    show_full_result_count = False


@admin.register(models.Job)
class JobAdmin(StatefulAdmin):
    list_display = [
        "PandaID",
        "task",
        "jobStatus",
        "computingSite",
        "nucleus",
        "gshare",
        "currentPriority",
        "coreCount",
        "attemptNr",
        "isScout",
        "stateChangeTime",
    ]
    list_filter = ["jobStatus", "prodSourceLabel", "isScout", "gshare", "processingType"]
    search_fields = ["=PandaID", "=task__jediTaskID", "computingSite", "prodUserName", "jobName"]
    raw_id_fields = ["task", "workQueue"]
    readonly_fields = ["stateChangeTime"]
    date_hierarchy = "creationTime"
    show_full_result_count = False
    inlines = [JobStatusLogInline]


@admin.register(models.JobStatusLog)
class JobStatusLogAdmin(admin.ModelAdmin):
    list_display = ["timestamp", "job", "old_status", "new_status", "computingSite", "reason", "actor"]
    list_filter = ["new_status"]
    search_fields = ["=job__PandaID", "computingSite", "reason"]
    raw_id_fields = ["job"]
    show_full_result_count = False


@admin.register(models.JobRetryHistory)
class JobRetryHistoryAdmin(admin.ModelAdmin):
    list_display = ["task", "oldPandaID", "newPandaID", "relationType", "originPandaID", "created"]
    list_filter = ["relationType"]
    search_fields = ["=oldPandaID", "=newPandaID", "=originPandaID", "=task__jediTaskID"]
    raw_id_fields = ["task"]


@admin.register(models.WorkQueue)
class WorkQueueAdmin(admin.ModelAdmin):
    list_display = [
        "queue_id",
        "queue_name",
        "queue_type",
        "vo",
        "queue_order",
        "queue_share",
        "criteria",
        "partition",
        "is_partition",
        "stretchable",
        "status",
    ]
    list_filter = ["queue_type", "vo", "status", "is_partition", "stretchable"]
    search_fields = ["queue_name", "criteria"]
    list_select_related = ["partition"]
    change_form_template = "admin/brokerage/shares/change_form.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.what_if_view)
        return [path("what-if/", view, name="brokerage_workqueue_what_if"), *super().get_urls()]

    def what_if_view(self, request):
        """Before saving: the work queue's share and stretchable flag as typed in the change form, against the jobs
        running and queued now (selectors.shares.share_change_effect). Reads only."""
        return _share_what_if(self, request, level="work queue")


@admin.register(models.GlobalShare)
class GlobalShareAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "value",
        "parent",
        "prodsourcelabel",
        "workinggroup",
        "processingtype",
        "campaign",
        "throttled",
    ]
    list_filter = ["vo", "throttled"]
    search_fields = ["name", "processingtype", "workinggroup"]
    list_select_related = ["parent"]
    change_form_template = "admin/brokerage/shares/change_form.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.what_if_view)
        return [path("what-if/", view, name="brokerage_globalshare_what_if"), *super().get_urls()]

    def what_if_view(self, request):
        """Before saving: the global share's value as typed in the change form, against the jobs running and queued
        now (selectors.shares.share_change_effect). Reads only."""
        return _share_what_if(self, request, level="global share")


def _share_what_if(model_admin, request, *, level: str):
    """The what-if of a share change posted from a change form (its token in the body): every share's effective
    part, target and hold now and with the typed value, as a fragment under the form (or a page without script)."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    source = request.POST if request.method == "POST" else {}
    name = str(source.get("queue_name" if level == "work queue" else "name", "")).strip()
    error, rows = "", []
    raw = str(source.get("queue_share" if level == "work queue" else "value", "")).strip()
    try:
        value = float(raw) if raw else None
        if value is not None and (value < 0 or value != value or value in (float("inf"), float("-inf"))):
            raise ValueError
    except ValueError:
        error = f"The {'share' if level == 'work queue' else 'value'} must be a number of 0 or more: {raw[:40]!r}."
    else:
        if not name:
            error = "Give the share a name first."
        elif level == "work queue":
            share = None if value is None else int(value)
            queue_type = str(source.get("queue_type", "production"))
            queue_type = queue_type if queue_type in WorkQueueType.values else "production"
            rows = share_change_effect(
                now=timezone.now(),
                queue_type=queue_type,
                queue_values={name: (share, source.get("stretchable") in ("on", "true", "1"))},
            )
        elif value is None:
            error = "The value is required."
        else:
            rows = share_change_effect(now=timezone.now(), global_values={name: value})
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "What if this share were saved?",
        "name": name,
        "rows": rows,
        "error": error,
    }
    fragment = request.headers.get("X-Requested-With") == "fetch"
    template = "admin/brokerage/shares/_what_if_result.html" if fragment else "admin/brokerage/shares/what_if.html"
    return TemplateResponse(request, template, context)


@admin.register(models.GlobalShareSnapshot)
class GlobalShareSnapshotAdmin(admin.ModelAdmin):
    list_display = ["taken_at", "share", "normalised_value", "executing_hs06", "queued_hs06", "target_hs06", "usage"]
    list_filter = ["share"]
    date_hierarchy = "taken_at"
    list_select_related = ["share"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["name", "role", "state", "tier_level", "bareNucleus", "cloud", "country"]
    list_filter = ["role", "state", "tier_level", "bareNucleus", "cloud"]
    search_fields = ["name", "country"]


class QueueStorageInline(admin.TabularInline):
    model = models.QueueStorage
    raw_id_fields = ["endpoint"]
    extra = 0


@admin.register(models.PandaQueue)
class PandaQueueAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "site",
        "status",
        "type",
        "corecount",
        "maxrss",
        "minrss",
        "maxtime",
        "pledgedcpu",
        "jobseed",
        "pilot_driven",
        "updated",
    ]
    list_filter = ["status", "type", "corecount", "jobseed", "cloud", "site__role", "siteClass", "pilot_driven"]
    search_fields = ["name", "site__name", "catchall", "fairsharepolicy"]
    list_select_related = ["site"]
    inlines = [QueueStorageInline]


@admin.register(models.StorageEndpoint)
class StorageEndpointAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "site",
        "type",
        "space_total",
        "space_free",
        "space_expired",
        "is_tape",
        "blacklisted",
        "updated",
    ]
    list_filter = ["type", "is_tape", "blacklisted"]
    search_fields = ["name", "site__name"]
    list_select_related = ["site"]


@admin.register(models.DatasetReplica)
class DatasetReplicaAdmin(admin.ModelAdmin):
    list_display = ["datasetName", "endpoint", "nFiles", "sizeGB", "updated"]
    search_fields = ["datasetName", "endpoint__name"]
    list_select_related = ["endpoint"]
    raw_id_fields = ["endpoint"]


@admin.register(models.QueueStorage)
class QueueStorageAdmin(admin.ModelAdmin):
    list_display = ["queue", "role", "endpoint"]
    list_filter = ["role"]
    search_fields = ["queue__name", "endpoint__name"]
    list_select_related = ["queue", "endpoint"]
    raw_id_fields = ["queue", "endpoint"]


@admin.register(models.NetworkLink)
class NetworkLinkAdmin(admin.ModelAdmin):
    list_display = ["src", "dst", "closeness", "mbps_1h", "mbps_1d", "mbps_1w", "queued", "updated"]
    list_filter = ["closeness"]
    search_fields = ["src__name", "dst__name"]
    list_select_related = ["src", "dst"]


@admin.register(models.SoftwareTags)
class SoftwareTagsAdmin(admin.ModelAdmin):
    list_display = ["name", "queue", "updated"]
    search_fields = ["name"]
    raw_id_fields = ["queue"]


@admin.register(models.GpuSummary)
class GpuSummaryAdmin(admin.ModelAdmin):
    list_display = [
        "queue",
        "vendor",
        "model",
        "vram",
        "microarchitecture",
        "version",
        "driver_version",
        "n_workers",
        "updated",
    ]
    list_filter = ["vendor", "microarchitecture"]
    search_fields = ["queue__name", "model"]
    list_select_related = ["queue"]
    raw_id_fields = ["queue"]


@admin.register(models.ProcessLock)
class ProcessLockAdmin(admin.ModelAdmin):
    list_display = ["vo", "prodSourceLabel", "workQueue", "cloud", "resource_type", "lockedBy", "lockedTime"]
    list_filter = ["vo", "prodSourceLabel"]
    search_fields = ["lockedBy"]
    list_select_related = ["workQueue"]


@admin.register(models.QueuePilotStats)
class QueuePilotStatsAdmin(admin.ModelAdmin):
    list_display = ["queue", "pilotsLast3h", "nBatchJob", "numSlots", "updated"]
    search_fields = ["queue__name"]
    list_select_related = ["queue"]
    raw_id_fields = ["queue"]


@admin.register(models.JobTimeoutSummary)
class JobTimeoutSummaryAdmin(admin.ModelAdmin):
    list_display = ["taken_at", "computingSite", "rule", "watched", "approaching", "timed_out"]
    list_filter = ["rule"]
    search_fields = ["computingSite"]
    date_hierarchy = "taken_at"


@admin.register(models.MergePreassignment)
class MergePreassignmentAdmin(admin.ModelAdmin):
    """Merge pre-assignments being skipped; after 24 hours brokerage ignores them (seed 000)."""

    list_display = ["task", "computingSite", "skipped_since"]
    search_fields = ["computingSite", "task__taskName"]
    raw_id_fields = ["task"]
    date_hierarchy = "skipped_since"


class DiracTaskQueueValueInline(admin.TabularInline):
    model = models.DiracTaskQueueValue
    extra = 0


@admin.register(models.DiracTaskQueue)
class DiracTaskQueueAdmin(admin.ModelAdmin):
    list_display = ["id", "ownerDN", "ownerGroup", "setup", "cpuTime", "priority", "enabled"]
    list_filter = ["setup", "ownerGroup", "enabled", "cpuTime"]
    search_fields = ["ownerDN", "ownerGroup"]
    inlines = [DiracTaskQueueValueInline]


@admin.register(models.DiracTaskQueueValue)
class DiracTaskQueueValueAdmin(admin.ModelAdmin):
    list_display = ["task_queue", "field", "value"]
    list_filter = ["field"]
    search_fields = ["value"]
    raw_id_fields = ["task_queue"]


class DiracJobStatusLogInline(ReadOnlyLogInline):
    model = models.DiracJobStatusLog


@admin.register(models.DiracJob)
class DiracJobAdmin(StatefulAdmin):
    list_display = ["jobID", "status", "task_queue", "userPriority", "owner", "ownerGroup", "site", "matchTime"]
    list_filter = ["status", "ownerGroup"]
    search_fields = ["=jobID", "owner", "site"]
    raw_id_fields = ["task_queue"]
    show_full_result_count = False
    inlines = [DiracJobStatusLogInline]


@admin.register(models.DiracJobStatusLog)
class DiracJobStatusLogAdmin(admin.ModelAdmin):
    list_display = ["job", "timestamp", "old_status", "new_status", "actor"]
    raw_id_fields = ["job"]


@admin.register(models.DiracMatchRecord)
class DiracMatchRecordAdmin(admin.ModelAdmin):
    list_display = ["at", "site", "setup", "cpuTime", "matched", "job", "task_queue", "seed"]
    list_filter = ["matched", "setup"]
    search_fields = ["site"]
    date_hierarchy = "at"


@admin.register(models.IntegrityCheck)
class IntegrityCheckAdmin(admin.ModelAdmin):
    """Read-only: each run of the integrity check and what it found."""

    list_display = ["started", "n_findings", "worker"]
    list_filter = ["started"]
    readonly_fields = ["started", "finished", "worker", "n_findings", "findings"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    """Read-only: the last beat of each process that held locks or claims (stale beats free what they held)."""

    list_display = ["name", "beat"]
    search_fields = ["name"]
    readonly_fields = ["name", "beat"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.HousekeepingRun)
class HousekeepingRunAdmin(ReadOnlyAdmin):
    """Read-only: each housekeeping run (the beat task, `manage.py housekeeping`): what it moved to the archive
    and dropped past its retention, table by table, and the steps that failed."""

    list_display = ["started", "status", "dry_run", "rows_moved", "rows_dropped", "duration", "worker"]
    list_filter = ["status", "dry_run"]
    date_hierarchy = "started"
    readonly_fields = [
        "started",
        "finished",
        "now",
        "status",
        "dry_run",
        "worker",
        "rows_moved",
        "rows_dropped",
        "tables",
        "errors",
    ]

    @admin.display(description="seconds")
    def duration(self, obj: models.HousekeepingRun) -> str:
        return "" if obj.duration_seconds is None else f"{obj.duration_seconds:.1f}"


@admin.register(models.JobErrorHour)
class JobErrorHourAdmin(ReadOnlyAdmin):
    """Read-only: the hourly error summaries the housekeeping rolls up (the overview and queue pages read them)."""

    list_display = ["hour", "computingSite", "jobStatus", "error_component", "error_code", "attemptNr", "n"]
    list_filter = ["jobStatus", "error_component"]
    search_fields = ["computingSite"]
    date_hierarchy = "hour"
    show_full_result_count = False


@admin.register(models.JobStateHour)
class JobStateHourAdmin(ReadOnlyAdmin):
    """Read-only: the hourly job status moves the housekeeping rolls up (the queue page charts them)."""

    list_display = ["hour", "computingSite", "new_status", "n"]
    list_filter = ["new_status"]
    search_fields = ["computingSite"]
    date_hierarchy = "hour"
    show_full_result_count = False


@admin.register(models.JobCountNow)
class JobCountNowAdmin(ReadOnlyAdmin):
    """Read-only: the active jobs per queue and status as last counted (the site and queue lists read them)."""

    list_display = ["computingSite", "jobStatus", "n"]
    list_filter = ["jobStatus"]
    search_fields = ["computingSite"]
    show_full_result_count = False


@admin.register(models.DecisionHour)
class DecisionHourAdmin(ReadOnlyAdmin):
    """Read-only: the hourly decision counts the housekeeping rolls up (the decision explorer reads them)."""

    list_display = ["hour", "plugin", "outcome", "primary_reason", "n"]
    list_filter = ["plugin", "outcome"]
    search_fields = ["primary_reason"]
    date_hierarchy = "hour"
    show_full_result_count = False


@admin.register(models.SummaryMark)
class SummaryMarkAdmin(ReadOnlyAdmin):
    """Read-only: how far each summary has been rolled up."""

    list_display = ["name", "since", "until"]


@admin.register(models.WorkerNode)
class WorkerNodeAdmin(ReadOnlyAdmin):
    """Read-only: the hosts pilots described (panda-server 1.0's update_worker_node), by site and CPU model."""

    list_display = ["host_name", "site", "cpu_model_normalized", "n_logical_cpus", "total_memory", "last_seen"]
    list_filter = ["cpu_architecture_level"]
    search_fields = ["host_name", "site", "cpu_model"]
    date_hierarchy = "last_seen"
    show_full_result_count = False


@admin.register(models.WorkerNodeQueue)
class WorkerNodeQueueAdmin(ReadOnlyAdmin):
    """Read-only: which PanDA queues' pilots ran on each host."""

    list_display = ["host_name", "panda_queue", "site", "last_seen"]
    search_fields = ["host_name", "panda_queue", "site"]
    show_full_result_count = False
