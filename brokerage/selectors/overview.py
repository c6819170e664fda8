"""The home page's numbers: row counts per entity and status breakdowns, each one aggregate query."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from brokerage import models, states

# What the overview counts, in the order it is shown: (label, model, admin changelist name).
COUNTED = (
    ("Tasks", models.Task, "task"),
    ("Datasets", models.Dataset, "dataset"),
    ("Files", models.DatasetFile, "datasetfile"),
    ("Event ranges", models.Event, "event"),
    ("Jobs", models.Job, "job"),
    ("Work queues", models.WorkQueue, "workqueue"),
    ("Global shares", models.GlobalShare, "globalshare"),
    ("Sites", models.Site, "site"),
    ("PanDA queues", models.PandaQueue, "pandaqueue"),
    ("Storage endpoints", models.StorageEndpoint, "storageendpoint"),
    ("Network links", models.NetworkLink, "networklink"),
    ("Software tags", models.SoftwareTags, "softwaretags"),
    ("GPU summaries", models.GpuSummary, "gpusummary"),
    ("gdpconfig overrides", models.GdpConfig, "gdpconfig"),
)


@dataclass(frozen=True)
class StatusCount:
    status: str
    count: int


def _by_status(queryset, field: str, order: tuple[str, ...]) -> list[StatusCount]:
    counts = dict(queryset.values_list(field).annotate(n=Count("pk")).values_list(field, "n"))
    ordered = [StatusCount(status, counts[status]) for status in order if status in counts]
    ordered += [StatusCount(status, n) for status, n in sorted(counts.items()) if status not in order]
    return ordered


def _integrity_alert() -> models.IntegrityCheck | None:
    latest = models.IntegrityCheck.objects.order_by("-started", "-id").first()
    return latest if latest is not None and latest.n_findings else None


def database_overview() -> dict[str, Any]:
    """Counts per entity, tasks/jobs/queues by status, the most recently modified tasks, and the latest integrity
    check when it found something (None when the latest found nothing)."""
    return {
        "counts": [
            {"label": label, "count": model.objects.count(), "admin": f"admin:brokerage_{name}_changelist"}
            for label, model, name in COUNTED
        ],
        "tasks_by_status": _by_status(models.Task.objects.all(), "status", states.TASK.statuses),
        "jobs_by_status": _by_status(models.Job.objects.all(), "jobStatus", states.JOB.statuses),
        "queues_by_status": _by_status(
            models.PandaQueue.objects.all(), "status", tuple(models.choices.QueueStatus.values)
        ),
        "integrity": _integrity_alert(),
        "recent_tasks": list(
            models.Task.objects.order_by("-modificationTime").values(
                "jediTaskID", "taskName", "status", "currentPriority", "nucleus", "gshare", "modificationTime"
            )[:15]
        ),
    }
