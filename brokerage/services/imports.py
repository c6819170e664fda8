"""Imports of real configuration: CRIC PanDA queues, software tags, DDM endpoints and JEDI tasks.

Every import is idempotent (the same file twice changes nothing the second time), checks each entry on its own
and reports it by name with the reason when it is refused, keeps every good entry, and drops nothing silently.
Each entry is written in its own savepoint, so a refused one leaves no half-written rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.color import no_style
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from brokerage.engine import ScenarioError
from brokerage.engine.scenario import check_queue_record
from brokerage.models import PandaQueue, QueueStorage, Site, SoftwareTags, StorageEndpoint, Task
from brokerage.models.choices import StorageRole

Progress = Callable[[int, int], None]


@dataclass
class ImportReport:
    """What an import did: names created, updated and unchanged, each refused entry with its reason, and notes
    (rows created on the way, such as a site a queue names)."""

    kind: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        return (
            f"{self.kind}: {len(self.created)} created, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.errors)} refused"
        )


class ImportFileError(ValueError):
    """The file as a whole cannot be imported (not the expected JSON shape)."""


def _message(error: Exception) -> str:
    if isinstance(error, ScenarioError):
        return str(error).removeprefix("$.")
    if isinstance(error, ValidationError):
        if hasattr(error, "message_dict"):
            return "; ".join(
                " ".join(messages) if key == "__all__" else f"{key}: {' '.join(messages)}"
                for key, messages in sorted(error.message_dict.items())
            )
        return " ".join(error.messages)
    return str(error)


def _run(
    report: ImportReport, entries: list[tuple[str, Any]], apply: Callable[[str, Any], str], progress: Progress | None
) -> ImportReport:
    """Applies each entry in its own savepoint; `apply` returns 'created', 'updated' or 'unchanged'."""
    for number, (name, entry) in enumerate(entries, start=1):
        try:
            with transaction.atomic():
                outcome = apply(name, entry)
        except (ValidationError, ScenarioError, ValueError, TypeError) as error:
            report.errors.append((name, _message(error)))
        else:
            getattr(report, outcome).append(name)
        if progress is not None:
            progress(number, len(entries))
    return report


def _save(instance, values: Mapping[str, Any], *, created: bool) -> str:
    """Sets values, validates the row as the admin would, saves it if anything changed."""
    changed = created
    for key, value in values.items():
        if created or getattr(instance, key) != value:
            setattr(instance, key, value)
            changed = True
    if not changed:
        return "unchanged"
    instance.full_clean(validate_unique=False)
    instance.save()
    return "created" if created else "updated"


# --- CRIC PanDA queues ---

QUEUE_COLUMNS = {
    # CRIC key → (model field, default when missing or null)
    "status": ("status", "online"),
    "type": ("type", "production"),
    "capability": ("capability", ""),
    "resource_type": ("resource_type", ""),
    "cloud": ("cloud", ""),
    "corecount": ("corecount", 1),
    "corepower": ("corepower", None),
    "maxrss": ("maxrss", 0),
    "minrss": ("minrss", 0),
    "maxwdir": ("maxwdir", 0),
    "maxinputsize": ("maxinputsize", 0),
    "maxtime": ("maxtime", 0),
    "mintime": ("mintime", 0),
    "releases": ("releases", []),
    "pledgedcpu": ("pledgedcpu", None),
    "fairsharepolicy": ("fairsharepolicy", ""),
    "catchall": ("catchall", ""),
    "direct_access_lan": ("direct_access_lan", False),
    "direct_access_wan": ("direct_access_wan", False),
    "transferringlimit": ("transferringlimit", None),
    "maxdiskio": ("maxdiskio", None),
    "wnconnectivity": ("wnconnectivity", ""),
    "jobseed": ("jobseed", "std"),
    "workflow": ("workflow", ""),
    "harvester": ("harvester", ""),
    "use_vp": ("use_vp", False),
    "siteClass": ("siteClass", ""),
    "transtimehi": ("transtimehi", None),
    "transtimelo": ("transtimelo", None),
}
INTEGER_FIELDS = {
    "corecount",
    "maxrss",
    "minrss",
    "maxwdir",
    "maxinputsize",
    "maxtime",
    "mintime",
    "pledgedcpu",
    "transferringlimit",
    "transtimehi",
    "transtimelo",
}


def _queue_entries(data: Any) -> list[tuple[str, Any]]:
    """A dump keyed by queue name, or one record (with its own `name`)."""
    if not isinstance(data, dict):
        raise ImportFileError("expected a JSON object: queue name → CRIC record, or one CRIC record")
    if isinstance(data.get("name"), str) and not isinstance(data.get(data["name"]), dict):
        return [(data["name"], data)]
    return sorted(data.items())


def _moment(text: object, key: str) -> datetime | None:
    """A CRIC time (ISO-8601, UTC when it names no zone)."""
    if text in (None, ""):
        return None
    moment = parse_datetime(text) if isinstance(text, str) else None
    if moment is None:
        raise ValueError(f"{key}: expected an ISO-8601 date-time, got {text!r}")
    return moment.replace(tzinfo=UTC) if timezone.is_naive(moment) else moment


def _site_for(name: str, record: dict, report: ImportReport) -> Site:
    site = Site.objects.filter(name=name).first()
    if site is None:
        site = Site(
            name=name,
            role="satellite",
            cloud=record.get("cloud") or "",
            country=record.get("country") or "",
            tier_level=min(int(record.get("tier_level") or 2), 3),
        )
        site.full_clean()
        site.save()
        report.notes.append(f"created site {name} (role satellite: set nuclei in the admin)")
    return site


def cric_import(*, data: Any, now: datetime | None = None, progress: Progress | None = None) -> ImportReport:
    """Creates or updates PanDA queues (typed columns, the whole record, storage roles) from CRIC JSON."""
    now = now or timezone.now()
    report = ImportReport("CRIC queues")

    def apply(name: str, record: Any) -> str:
        if not isinstance(record, dict):
            raise ValueError(f"expected a CRIC record (an object), got {type(record).__name__}")
        check_queue_record(name, record, path="")
        site_name = record.get("atlas_site") or record.get("site") or ""
        if not site_name:
            raise ValueError("atlas_site: the record names no site")
        values: dict[str, Any] = {}
        for key, (column, default) in QUEUE_COLUMNS.items():
            value = record.get(key)
            if value is None:
                value = default
            if column in INTEGER_FIELDS and isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(f"{key}: expected a whole number, got {value}")
                value = int(value)
            values[column] = value
        values["last_modified"] = _moment(record.get("last_modified"), "last_modified")
        values["cric"] = record
        values["site"] = _site_for(site_name, record, report)
        queue = PandaQueue.objects.filter(name=name).first()
        created = queue is None
        if created:
            queue = PandaQueue(name=name, updated=now)
        outcome = _save(queue, values, created=created)
        storage_changed = _link_storages(queue, record.get("astorages") or {}, report)
        if outcome == "unchanged" and storage_changed:
            outcome = "updated"
        if outcome != "unchanged":
            PandaQueue.objects.filter(pk=queue.pk).update(updated=now)
        return outcome

    return _run(report, _queue_entries(data), apply, progress)


def _link_storages(queue: PandaQueue, astorages: dict[str, list[str]], report: ImportReport) -> bool:
    """The queue's endpoint roles become exactly those of the record; roles we do not model are noted."""
    known_roles = set(StorageRole.values)
    wanted: set[tuple[str, str]] = set()
    for role, endpoints in astorages.items():
        if role not in known_roles:
            report.notes.append(f"{queue.name}: storage role {role!r} kept in the CRIC record only")
            continue
        for endpoint in endpoints:
            wanted.add((role, endpoint))
    current = set(QueueStorage.objects.filter(queue=queue).values_list("role", "endpoint__name"))
    if current == wanted:
        return False
    QueueStorage.objects.filter(queue=queue).delete()
    existing = {e.name: e for e in StorageEndpoint.objects.filter(name__in={name for _, name in wanted})}
    created = []
    for role, endpoint_name in sorted(wanted):
        endpoint = existing.get(endpoint_name)
        if endpoint is None:
            kind = endpoint_name.rsplit("_", 1)[-1] if "_" in endpoint_name else ""
            endpoint = existing[endpoint_name] = StorageEndpoint.objects.create(
                name=endpoint_name, site=queue.site, type=kind
            )
            created.append(endpoint_name)
        QueueStorage.objects.create(queue=queue, endpoint=endpoint, role=role)
    if created:
        shown = ", ".join(created[:5]) + (f" and {len(created) - 5} more" if len(created) > 5 else "")
        report.notes.append(
            f"{queue.name}: created {len(created)} endpoint(s) without space figures ({shown}); "
            "import_ddm_endpoints fills them"
        )
    return True


# --- software tags ---

SW_TAG_LISTS = ("cmtconfigs", "cvmfs", "architectures", "tags")


def sw_tags_import(*, data: Any, now: datetime | None = None, progress: Progress | None = None) -> ImportReport:
    """Creates or updates the per-queue software documents and the "ALL" entry (seed 000 format)."""
    now = now or timezone.now()
    report = ImportReport("software tags")
    if not isinstance(data, dict):
        raise ImportFileError("expected a JSON object: queue name (or ALL) → software document")

    def apply(name: str, document: Any) -> str:
        if not isinstance(document, dict):
            raise ValueError(f"expected an object, got {type(document).__name__}")
        for key in SW_TAG_LISTS:
            if key in document and not isinstance(document[key], list):
                raise ValueError(f"{key}: expected a list")
        if "containers" in document and not isinstance(document["containers"], list | dict):
            raise ValueError("containers: expected a list (or, for ALL, an object name → source)")
        queue = None
        if name != SoftwareTags.ALL:
            queue = PandaQueue.objects.filter(name=name).first()
            if queue is None:
                raise ValueError("unknown queue: import it with import_cric first")
        tags = SoftwareTags.objects.filter(name=name).first()
        created = tags is None
        if created:
            tags = SoftwareTags(name=name)
        outcome = _save(tags, {"queue": queue, "data": document}, created=created)
        if outcome != "unchanged":
            SoftwareTags.objects.filter(pk=tags.pk).update(updated=now)
        return outcome

    return _run(report, sorted(data.items()), apply, progress)


# --- DDM endpoints ---

ENDPOINT_NUMBERS = ("space_total", "space_free", "space_used", "space_expired")
ACTIVITY_VALUES = ("ON", "OFF", "TEST")


def ddm_endpoints_import(*, data: Any, now: datetime | None = None, progress: Progress | None = None) -> ImportReport:
    """Creates or updates storage endpoints: site, type, space in GB, tape, blacklisting, activity states."""
    now = now or timezone.now()
    report = ImportReport("DDM endpoints")
    if not isinstance(data, dict):
        raise ImportFileError("expected a JSON object: endpoint name → {site, space_total, …}")

    def apply(name: str, entry: Any) -> str:
        if not isinstance(entry, dict):
            raise ValueError(f"expected an object, got {type(entry).__name__}")
        values: dict[str, Any] = {}
        for key in ENDPOINT_NUMBERS:
            value = entry.get(key, 0) or 0
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{key}: expected a size in GB ≥ 0, got {value!r}")
            values[key] = float(value)
        status = entry.get("detailed_status") or {}
        if not isinstance(status, dict):
            raise ValueError("detailed_status: expected an object activity → ON/OFF/TEST")
        for activity, state in status.items():
            if str(state).upper() not in ACTIVITY_VALUES:
                raise ValueError(f"detailed_status.{activity}: expected ON, OFF or TEST, got {state!r}")
        values["detailed_status"] = {activity: str(state).upper() for activity, state in status.items()}
        kind = entry.get("type") or (name.rsplit("_", 1)[-1] if "_" in name else "")
        values["type"] = kind
        values["is_tape"] = bool(entry.get("is_tape", kind.endswith("TAPE")))
        values["blacklisted"] = bool(entry.get("blacklisted", False))
        site_name = entry.get("site") or entry.get("rc_site") or ""
        values["site"] = _site_for(site_name, entry, report) if site_name else None
        endpoint = StorageEndpoint.objects.filter(name=name).first()
        created = endpoint is None
        if created:
            endpoint = StorageEndpoint(name=name)
        outcome = _save(endpoint, values, created=created)
        if outcome != "unchanged":
            StorageEndpoint.objects.filter(pk=endpoint.pk).update(updated=now)
        return outcome

    return _run(report, sorted(data.items()), apply, progress)


# --- JEDI tasks ---

TASK_COLUMNS = {f.name for f in Task._meta.get_fields() if getattr(f, "concrete", False) and not f.is_relation}
TASK_READ_ONLY = {"status", "oldStatus", "lockedBy", "lockedTime"}


def _task_entries(data: Any) -> Iterable[tuple[str, Any]]:
    items = data if isinstance(data, list) else [data] if isinstance(data, dict) else None
    if items is None:
        raise ImportFileError("expected a JEDI task parameter object or a list of them")
    for index, item in enumerate(items):
        name = (
            str(item.get("jediTaskID") or item.get("taskName") or f"entry {index}")
            if isinstance(item, dict)
            else f"entry {index}"
        )
        yield name, item


def tasks_import(*, data: Any, progress: Progress | None = None) -> ImportReport:
    """Creates or updates tasks from JEDI task parameters: known JEDI columns go to their columns, everything
    else to taskParams. A new task starts as 'registered'; an existing task's status is never changed here."""
    report = ImportReport("tasks")

    def apply(name: str, params: Any) -> str:
        if not isinstance(params, dict):
            raise ValueError(f"expected an object of task parameters, got {type(params).__name__}")
        if not params.get("taskName"):
            raise ValueError("taskName: required")
        task_id = params.get("jediTaskID")
        if task_id is not None and (isinstance(task_id, bool) or not isinstance(task_id, int) or task_id <= 0):
            raise ValueError(f"jediTaskID: expected a positive whole number, got {task_id!r}")
        columns = {k: v for k, v in params.items() if k in TASK_COLUMNS and k not in TASK_READ_ONLY | {"jediTaskID"}}
        extra = {k: v for k, v in params.items() if k not in TASK_COLUMNS}
        task = Task.objects.filter(pk=task_id).first() if task_id else None
        created = task is None
        if created:
            task = Task(jediTaskID=task_id) if task_id else Task()
        return _save(task, {**columns, "taskParams": {**(task.taskParams or {}), **extra}}, created=created)

    report = _run(report, list(_task_entries(data)), apply, progress)
    _reset_task_sequence()
    return report


def _reset_task_sequence() -> None:
    """Explicit jediTaskIDs do not advance PostgreSQL's sequence: move it past the largest id."""
    statements = connection.ops.sequence_reset_sql(no_style(), [Task])
    if statements:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
