"""Imports of real configuration: CRIC PanDA queues, software tags, DDM endpoints and JEDI tasks.

Every import is idempotent (the same file twice changes nothing the second time), checks each entry on its own
and reports it by name with the reason when it is refused, keeps every good entry, and drops nothing silently.
Each entry is written in its own savepoint, so a refused one leaves no half-written rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.color import no_style
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import DatabaseError, connection, models, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from brokerage.engine import ScenarioError
from brokerage.engine.core.scenario import check_queue_record
from brokerage.jsonsafe import UnsafeJson, check_safe
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


class EntryRefused(ValueError):
    """One entry cannot be imported: `key` names the value, the message says what was expected."""

    def __init__(self, key: str, expected: str, value: Any = None, *, show_value: bool = True):
        shown = f", got {_shown(value)}" if show_value else ""
        super().__init__(f"{key}: {expected}{shown}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _integer_range(field: models.Field) -> tuple[int, int]:
    """The whole numbers a column holds: its validators within the portable range of its type (the same file is
    accepted alike on SQLite, which would store any 64-bit number, and on PostgreSQL)."""
    low, high = BaseDatabaseOperations.integer_field_ranges.get(field.get_internal_type(), (-(2**63), 2**63 - 1))
    for validator in field.validators:
        if isinstance(validator, MinValueValidator):
            low = max(low, validator.limit_value)
        elif isinstance(validator, MaxValueValidator):
            high = min(high, validator.limit_value)
    return low, high


def column_value(model: type[models.Model], column: str, value: Any, *, key: str | None = None) -> Any:
    """`value` checked strictly against the column's type, as the database will hold it. A string column takes a
    string, a number column a finite number within its range (a whole one for whole-number columns: 8.0 is 8), a
    flag true or false, a time an ISO-8601 string; null only where the column allows it. Anything else is refused
    with the key named."""
    key = key or column
    field = model._meta.get_field(column)
    if value is None:
        if field.null:
            return None
        raise EntryRefused(key, "expected a value, not null", show_value=False)
    if isinstance(field, models.JSONField):
        return value
    if isinstance(field, models.BooleanField):
        if not isinstance(value, bool):
            raise EntryRefused(key, "expected true or false", value)
        return value
    if isinstance(field, models.DateTimeField):
        return _moment(value, key)
    if isinstance(field, models.CharField | models.TextField):
        if not isinstance(value, str):
            raise EntryRefused(key, "expected a string", value)
        if "\x00" in value:
            raise EntryRefused(key, "contains a NUL character", show_value=False)
        return value
    if isinstance(field, models.IntegerField):
        low, high = _integer_range(field)
        whole = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
        if isinstance(value, bool) or not whole or not low <= value <= high:
            raise EntryRefused(key, f"expected a whole number from {low} to {high}", value)
        return int(value)
    if isinstance(field, models.FloatField):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise EntryRefused(key, "expected a finite number", value)
        if abs(value) > 1e300:
            raise EntryRefused(key, "expected a number within ±1e300", value)
        return float(value)
    raise EntryRefused(key, f"cannot be imported (a {type(field).__name__} column)", show_value=False)


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
    if isinstance(error, DatabaseError):
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"the database refused it: {first_line}"
    if isinstance(error, EntryRefused | UnsafeJson | ImportFileError):
        return str(error)
    if isinstance(error, ValueError | TypeError):
        return str(error) or type(error).__name__
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _run(
    report: ImportReport, entries: list[tuple[str, Any]], apply: Callable[[str, Any], str], progress: Progress | None
) -> ImportReport:
    """Applies each entry in its own savepoint; `apply` returns 'created', 'updated' or 'unchanged'.

    Any failure of one entry (a refused value, a database error, an overflow) rolls back that entry's savepoint and
    becomes its named refusal; the import goes on with the next entry."""
    for number, (name, entry) in enumerate(entries, start=1):
        try:
            if "\x00" in name:
                raise EntryRefused("name", "contains a NUL character", show_value=False)
            check_safe(entry)
            with transaction.atomic():
                outcome = apply(name, entry)
        except Exception as error:  # one entry's failure, whatever it is, must not cost the others
            report.errors.append((_printable(name), _message(error)))
        else:
            getattr(report, outcome).append(name)
        if progress is not None:
            progress(number, len(entries))
    return report


def _printable(name: str) -> str:
    return name if name.isprintable() else repr(name)


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
    # not CRIC's (its pilot_manager names who submits pilots, not where they ask for jobs): a record may say it
    "pilot_driven": ("pilot_driven", False),
    "siteClass": ("siteClass", ""),
    "transtimehi": ("transtimehi", None),
    "transtimelo": ("transtimelo", None),
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
    try:
        moment = parse_datetime(text) if isinstance(text, str) else None
    except ValueError:  # well formed but impossible, such as month 13
        moment = None
    if moment is None:
        raise ValueError(f"{key}: expected an ISO-8601 date-time, got {text!r}")
    return moment.replace(tzinfo=UTC) if timezone.is_naive(moment) else moment


def _site_columns(record: dict) -> dict[str, Any]:
    """A site's cloud, country and tier level from a CRIC record (a queue's or the site's own)."""
    return {
        "cloud": column_value(Site, "cloud", record.get("cloud") or ""),
        "country": column_value(Site, "country", record.get("country") or ""),
        # CRIC tier levels run 0-3; anything above is a tier-3 site here
        "tier_level": min(column_value(Site, "tier_level", record.get("tier_level", 2)), 3),
    }


def _site_for(name: str, record: dict, report: ImportReport) -> Site:
    site = Site.objects.filter(name=name).first()
    if site is None:
        site = Site(name=name, role="satellite", **_site_columns(record))
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
            raise EntryRefused("entry", "expected a CRIC record (an object)", record)
        check_queue_record(name, record, path="")
        site_key = "atlas_site" if record.get("atlas_site") is not None else "site"
        site_name = column_value(Site, "name", record.get(site_key) or "", key=site_key)
        if not site_name:
            raise EntryRefused("atlas_site", "the record names no site", show_value=False)
        values: dict[str, Any] = {}
        for key, (column, default) in QUEUE_COLUMNS.items():
            value = record.get(key)
            values[column] = column_value(PandaQueue, column, default if value is None else value, key=key)
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


# --- PanDA's CRIC-free files (panda-server 1.0.4 Configurator: CRIC_URL_SITES, _DDMENDPOINTS, _SCHEDCONFIG) ---

CRIC_FREE_FILES = {"sites": "sites.json", "endpoints": "ddm_endpoints.json", "queues": "panda_queues.json"}


def cric_site_import(*, data: Any, progress: Progress | None = None) -> ImportReport:
    """Creates or updates sites from CRIC's site dump as panda-server's Configurator reads it (get_site_info):
    nucleus when its datapolicies name Nucleus, else satellite; state, tier level, cloud and country. A site's
    bareNucleus is not in the dump (PanDA reads it from the queues' catchall): it is left as it is."""
    report = ImportReport("CRIC sites")
    if not isinstance(data, dict):
        raise ImportFileError("expected a JSON object: site name → CRIC site record")

    def apply(name: str, record: Any) -> str:
        if not isinstance(record, dict):
            raise EntryRefused("entry", "expected a CRIC site record (an object)", record)
        policies = record.get("datapolicies") or []
        if not isinstance(policies, list):
            raise EntryRefused("datapolicies", "expected a list of data policies", policies)
        values = {
            "role": "nucleus" if "Nucleus" in policies else "satellite",
            "state": column_value(Site, "state", record.get("state") or "ACTIVE"),
            **_site_columns(record),
        }
        site = Site.objects.filter(name=name).first()
        created = site is None
        if created:
            site = Site(name=column_value(Site, "name", name, key="name"))
        elif values["role"] != "nucleus" and site.bareNucleus:
            values["bareNucleus"] = ""  # a satellite has no bare-nucleus mode (site_bare_only_nucleus)
        return _save(site, values, created=created)

    return _run(report, sorted(data.items()), apply, progress)


def cric_free_import(
    *, sites: Any, endpoints: Any, queues: Any, now: datetime | None = None, progress: Progress | None = None
) -> list[ImportReport]:
    """PanDA's CRIC-free mode: the three dumps its Configurator loads from files, imported in the order they refer
    to one another (sites, their storage endpoints, the queues). Inactive endpoints are left out, as the
    Configurator leaves them out (parse_endpoints: state ACTIVE only). One report per file."""
    reports = [cric_site_import(data=sites, progress=progress)]
    if not isinstance(endpoints, dict):
        raise ImportFileError("ddm_endpoints.json: expected a JSON object: endpoint name → CRIC endpoint record")
    active = {
        name: entry
        for name, entry in endpoints.items()
        if not isinstance(entry, dict) or entry.get("state", "ACTIVE") == "ACTIVE"
    }
    endpoint_report = ddm_endpoints_import(data=active, now=now, progress=progress)
    endpoint_report.notes += [
        f"left out {name}: state {endpoints[name].get('state')}" for name in sorted(set(endpoints) - set(active))
    ]
    reports.append(endpoint_report)
    reports.append(cric_import(data=queues, now=now, progress=progress))
    return reports


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
            endpoint = StorageEndpoint(name=endpoint_name, site=queue.site, type=kind)
            endpoint.full_clean()  # a name too long for its column is a refusal naming it, not a database error
            endpoint.save()
            existing[endpoint_name] = endpoint
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
            raise EntryRefused("entry", "expected a software document (an object)", document)
        for key in SW_TAG_LISTS:
            if key in document and not isinstance(document[key], list):
                raise EntryRefused(key, "expected a list", document[key])
        if "containers" in document and not isinstance(document["containers"], list | dict):
            raise EntryRefused(
                "containers", "expected a list (or, for ALL, an object name → source)", document["containers"]
            )
        queue = None
        if name != SoftwareTags.ALL:
            queue = PandaQueue.objects.filter(name=name).first()
            if queue is None:
                raise EntryRefused("name", "unknown queue: import it with import_cric first", show_value=False)
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
            raise EntryRefused("entry", "expected an endpoint (an object)", entry)
        values: dict[str, Any] = {}
        for key in ENDPOINT_NUMBERS:
            raw = entry.get(key) or 0
            value = column_value(StorageEndpoint, key, raw)
            if value < 0:
                raise EntryRefused(key, "expected a size in GB ≥ 0", raw)
            values[key] = value
        status = entry.get("detailed_status") or {}
        if not isinstance(status, dict):
            raise EntryRefused("detailed_status", "expected an object activity → ON/OFF/TEST", status)
        for activity, state in status.items():
            if not isinstance(state, str) or state.upper() not in ACTIVITY_VALUES:
                raise EntryRefused(f"detailed_status.{activity}", "expected ON, OFF or TEST", state)
        values["detailed_status"] = {activity: state.upper() for activity, state in status.items()}
        kind = column_value(
            StorageEndpoint, "type", entry.get("type") or (name.rsplit("_", 1)[-1] if "_" in name else "")
        )
        values["type"] = kind
        values["is_tape"] = column_value(StorageEndpoint, "is_tape", entry.get("is_tape", kind.endswith("TAPE")))
        values["blacklisted"] = column_value(StorageEndpoint, "blacklisted", entry.get("blacklisted", False))
        site_key = "site" if entry.get("site") is not None else "rc_site"
        site_name = column_value(Site, "name", entry.get(site_key) or "", key=site_key)
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
        name = f"entry {index}"
        if isinstance(item, dict):
            task_id, task_name = item.get("jediTaskID"), item.get("taskName")
            if isinstance(task_id, int) and not isinstance(task_id, bool):
                name = str(task_id)
            elif isinstance(task_name, str) and task_name:
                name = task_name
        yield name, item


# JEDI's own duplicate check (insertTaskParams_JEDI, panda-server 1.0.4 task_event_module.py): a task is the same
# task when vo, userName, taskName and prodSourceLabel agree. Entries without jediTaskID are matched by it.
TASK_NATURAL_KEY = ("vo", "userName", "taskName", "prodSourceLabel")


def _task_by_natural_key(columns: dict[str, Any]) -> Task | None:
    key = {name: columns.get(name, Task._meta.get_field(name).get_default()) for name in TASK_NATURAL_KEY}
    matches = list(Task.objects.filter(**key).order_by("jediTaskID")[:2])
    if len(matches) > 1:
        raise EntryRefused(
            "jediTaskID",
            f"required here: several tasks have this vo, userName, taskName and prodSourceLabel "
            f"({', '.join(str(task.pk) for task in matches)}, …)",
            show_value=False,
        )
    return matches[0] if matches else None


def tasks_import(*, data: Any, progress: Progress | None = None) -> ImportReport:
    """Creates or updates tasks from JEDI task parameters: known JEDI columns go to their columns, everything
    else to taskParams. A new task starts as 'registered'; an existing task's status is never changed here.
    An entry names its task by jediTaskID, or else by JEDI's natural key (TASK_NATURAL_KEY)."""
    report = ImportReport("tasks")

    def apply(name: str, params: Any) -> str:
        if not isinstance(params, dict):
            raise EntryRefused("entry", "expected an object of task parameters", params)
        if not params.get("taskName"):
            raise EntryRefused("taskName", "required", show_value=False)
        task_id = params.get("jediTaskID")
        if task_id is not None:
            task_id = column_value(Task, "reqID", task_id, key="jediTaskID")
            if task_id <= 0:
                raise EntryRefused("jediTaskID", "expected a positive whole number", task_id)
        columns = {
            key: column_value(Task, key, value)
            for key, value in params.items()
            if key in TASK_COLUMNS and key not in TASK_READ_ONLY | {"jediTaskID"}
        }
        extra = {k: v for k, v in params.items() if k not in TASK_COLUMNS}
        task = Task.objects.filter(pk=task_id).first() if task_id else _task_by_natural_key(columns)
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
