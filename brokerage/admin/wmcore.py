"""Admin pages for CMS WMCore's tables (seed 004): requests, queues, elements (with the explicit reset), sites and
their thresholds, blocks, WMBS and the JobSubmitter cache."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone

from brokerage import models
from brokerage.services.wmcore import AbortRefused, ResetRefused, element_reset, request_abort

from .domain import ReadOnlyLogInline
from .stateful import StatefulAdmin


def _each(model_admin, request, queryset, service, refused_type, done: str) -> None:
    """Runs an operator's command on each selected row as `admin:<user>`; refusals are reported with the reason."""
    actor = f"admin:{request.user.get_username()}"
    succeeded = 0
    for pk in queryset.values_list("pk", flat=True):
        try:
            service(pk, actor)
            succeeded += 1
        except refused_type as refused:
            model_admin.message_user(request, f"{queryset.model._meta.verbose_name} {pk}: {refused}", messages.WARNING)
    if succeeded:
        model_admin.message_user(request, f"{succeeded} {done}.", messages.SUCCESS)


class WMCoreRequestStatusLogInline(ReadOnlyLogInline):
    model = models.WMCoreRequestStatusLog


@admin.register(models.WMCoreRequest)
class WMCoreRequestAdmin(StatefulAdmin):
    list_display = ["RequestName", "RequestStatus", "RequestType", "RequestPriority", "Team", "InputDataset"]
    list_filter = ["RequestStatus", "RequestType", "Team", "TaskType"]
    search_fields = ["RequestName", "InputDataset"]
    readonly_fields = ["status_time"]
    inlines = [WMCoreRequestStatusLogInline]
    actions = ["abort_requests"]

    @admin.action(description="Abort (cancel its elements, kill its jobs)", permissions=["change"])
    def abort_requests(self, request, queryset):
        def abort(pk, actor):
            request_abort(request_id=pk, actor=actor, reason="aborted from the admin", now=timezone.now())

        _each(self, request, queryset, abort, AbortRefused, "request(s) aborted")


@admin.register(models.WMCoreRequestStatusLog)
class WMCoreRequestStatusLogAdmin(admin.ModelAdmin):
    list_display = ["request", "timestamp", "old_status", "new_status", "actor"]
    raw_id_fields = ["request"]


@admin.register(models.WMCoreQueue)
class WMCoreQueueAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "parent", "team", "enabled", "cache_refreshed", "locations_updated"]
    list_filter = ["kind", "enabled"]
    search_fields = ["name"]


class WMCoreElementStatusLogInline(ReadOnlyLogInline):
    model = models.WMCoreElementStatusLog


@admin.register(models.WMCoreElement)
class WMCoreElementAdmin(StatefulAdmin):
    list_display = [
        "element_id",
        "queue",
        "database",
        "Status",
        "request",
        "Priority",
        "Jobs",
        "ChildQueue",
        "site",
        "stuck_reason",
    ]
    list_filter = ["queue", "database", "Status", "stuck_reason"]
    search_fields = ["=element_id", "request__RequestName"]
    raw_id_fields = ["request", "queue", "ChildQueue"]
    list_select_related = ["queue", "request", "ChildQueue"]
    readonly_fields = ["UpdateTime", "stuck_reason", "stuck_detail", "stuck_digest", "stuck_since"]
    show_full_result_count = False
    inlines = [WMCoreElementStatusLogInline]
    actions = ["reset_elements"]

    @admin.action(description="Reset to Available (Negotiating or Acquired global elements)", permissions=["change"])
    def reset_elements(self, request, queryset):
        def reset(pk, actor):
            element_reset(element_pk=pk, actor=actor, reason="reset from the admin", now=timezone.now())

        _each(self, request, queryset, reset, ResetRefused, "element(s) back to Available")


@admin.register(models.WMCoreElementStatusLog)
class WMCoreElementStatusLogAdmin(admin.ModelAdmin):
    list_display = ["element", "timestamp", "old_status", "new_status", "actor"]
    raw_id_fields = ["element"]


@admin.register(models.WMCoreBlock)
class WMCoreBlockAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "files", "sites", "updated"]
    search_fields = ["name", "dataset"]


class WMCoreSiteThresholdInline(admin.TabularInline):
    model = models.WMCoreSiteThreshold
    extra = 0


@admin.register(models.WMCoreSite)
class WMCoreSiteAdmin(admin.ModelAdmin):
    list_display = ["name", "queue", "state", "state_time", "pending_slots", "running_slots"]
    list_filter = ["queue", "state"]
    search_fields = ["name"]
    readonly_fields = ["state_time"]
    inlines = [WMCoreSiteThresholdInline]

    def save_model(self, request, obj, form, change):
        # the JobSubmitter's drain grace period counts from the moment the state changed
        if not change or "state" in form.changed_data:
            obj.state_time = timezone.now()
        super().save_model(request, obj, form, change)


@admin.register(models.WMCoreSiteThreshold)
class WMCoreSiteThresholdAdmin(admin.ModelAdmin):
    list_display = ["site", "task_type", "pending_slots", "max_slots"]
    list_filter = ["task_type"]
    raw_id_fields = ["site"]


@admin.register(models.WMBSSubscription)
class WMBSSubscriptionAdmin(admin.ModelAdmin):
    list_display = ["pk", "queue", "request", "task_type", "site", "created", "finished"]
    list_filter = ["queue", "task_type"]
    raw_id_fields = ["element", "request", "queue"]


@admin.register(models.WMBSJob)
class WMBSJobAdmin(StatefulAdmin):
    list_display = ["pk", "state", "priority", "task_type", "location", "batch_status", "state_time"]
    list_filter = ["state", "task_type", "batch_status"]
    search_fields = ["=pk", "location"]
    raw_id_fields = ["subscription"]
    readonly_fields = ["state_time"]
    show_full_result_count = False


@admin.register(models.JobSubmitterCacheEntry)
class JobSubmitterCacheEntryAdmin(admin.ModelAdmin):
    list_display = ["job", "queue", "priority", "task_type", "waiting_reason", "cached"]
    list_filter = ["queue", "task_type", "waiting_reason"]
    raw_id_fields = ["job", "queue"]
    show_full_result_count = False


@admin.register(models.JobSubmitterReport)
class JobSubmitterReportAdmin(admin.ModelAdmin):
    list_display = ["at", "queue", "site", "task_type", "condition", "count"]
    list_filter = ["queue", "condition", "task_type"]
    date_hierarchy = "at"
