"""The admin's index in sections a grid operator recognises (grid, tasks and jobs, brokerage, DIRAC, WMCore) with
proper names, instead of one flat list of 45 models in alphabetical order ("Job submitter cache entrys")."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig

# (section, [(model name, the name shown)]), in the order shown; models not listed go to "Other".
SECTIONS = (
    (
        "Grid",
        [
            ("Site", "Sites"),
            ("PandaQueue", "PanDA queues"),
            ("StorageEndpoint", "Storage endpoints"),
            ("QueueStorage", "Queue storages"),
            ("NetworkLink", "Network links"),
            ("SoftwareTags", "Software tags"),
            ("GpuSummary", "GPU summaries"),
            ("DatasetReplica", "Dataset replicas"),
            ("QueuePilotStats", "Queue pilot statistics"),
        ],
    ),
    (
        "Tasks and jobs",
        [
            ("Task", "Tasks"),
            ("TaskStatusLog", "Task status logs"),
            ("Dataset", "Datasets"),
            ("DatasetStatusLog", "Dataset status logs"),
            ("DatasetFile", "Dataset files"),
            ("Event", "Event ranges"),
            ("Job", "Jobs"),
            ("JobStatusLog", "Job status logs"),
            ("JobRetryHistory", "Job retry history"),
            ("JobTimeoutSummary", "Job timeout summaries"),
            ("MergePreassignment", "Merge preassignments"),
        ],
    ),
    (
        "Brokerage",
        [
            ("GdpConfig", "gdpconfig parameters"),
            ("GdpConfigChange", "gdpconfig changes"),
            ("WorkQueue", "Work queues"),
            ("GlobalShare", "Global shares"),
            ("GlobalShareSnapshot", "Global share snapshots"),
            ("BrokerageCycle", "Brokerage cycles"),
            ("Decision", "Decisions"),
        ],
    ),
    (
        "DIRAC",
        [
            ("DiracTaskQueue", "Task queues"),
            ("DiracTaskQueueValue", "Task queue requirements"),
            ("DiracJob", "DIRAC jobs"),
            ("DiracJobStatusLog", "DIRAC job status logs"),
            ("DiracMatchRecord", "Matching requests"),
        ],
    ),
    (
        "WMCore",
        [
            ("WMCoreRequest", "Requests"),
            ("WMCoreRequestStatusLog", "Request status logs"),
            ("WMCoreQueue", "Work queues (global and local)"),
            ("WMCoreElement", "Work-queue elements"),
            ("WMCoreElementStatusLog", "Element status logs"),
            ("WMCoreBlock", "Blocks"),
            ("WMCoreSite", "Sites (resource control)"),
            ("WMCoreSiteThreshold", "Site thresholds"),
            ("WMBSSubscription", "WMBS subscriptions"),
            ("WMBSJob", "WMBS jobs"),
            ("JobSubmitterCacheEntry", "JobSubmitter cache entries"),
            ("JobSubmitterReport", "JobSubmitter reports"),
        ],
    ),
    (
        "Operations",
        [
            ("ProcessLock", "Process locks"),
            ("WorkerHeartbeat", "Worker heartbeats"),
            ("IntegrityCheck", "Integrity checks"),
        ],
    ),
)


class BrokerageAdminSite(admin.AdminSite):
    site_header = "Brokerage monitor administration"
    site_title = "Brokerage monitor admin"
    index_title = "Domain data and gdpconfig"

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        ours = next((app for app in apps if app["app_label"] == "brokerage"), None)
        if ours is None:
            return apps
        by_name = {model["object_name"]: model for model in ours["models"]}
        sections = []
        for title, members in SECTIONS:
            models = []
            for object_name, shown in members:
                model = by_name.pop(object_name, None)
                if model is not None:
                    models.append({**model, "name": shown})
            if models:
                sections.append({**ours, "name": title, "models": models})
        if by_name:
            sections.append({**ours, "name": "Other", "models": sorted(by_name.values(), key=lambda m: m["name"])})
        return [app for app in apps if app["app_label"] != "brokerage"] + sections


class BrokerageAdminConfig(AdminConfig):
    default_site = "brokerage.admin_site.BrokerageAdminSite"
