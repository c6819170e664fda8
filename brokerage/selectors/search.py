"""The search box: one query, every kind of thing it may name (a task, job, queue, site, dataset, decision, DIRAC
job, WMCore request), the exact matches first."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count
from django.db.models.functions import Length
from django.utils import timezone

from brokerage.job_errors import error_label
from brokerage.models import (
    Dataset,
    DiracJob,
    DiracMatchRecord,
    Job,
    PandaQueue,
    Site,
    StorageEndpoint,
    Task,
    WMCoreRequest,
    WMCoreSite,
)
from brokerage.params import whole_number
from brokerage.selectors.jobs import job_error_filter

SEARCH_LIMIT = 20


def _ranked(names: list[dict[str, Any]], field: str, query: str) -> list[dict[str, Any]]:
    """The closest first: the name itself, then names starting with the query, then the rest; shorter before
    longer (fewer characters besides the query), then alphabetical."""
    lowered = query.lower()

    def rank(row: dict[str, Any]) -> tuple:
        name = str(row[field]).lower()
        return (name != lowered, not name.startswith(lowered), len(name), name)

    return sorted(names, key=rank)[:SEARCH_LIMIT]


def _contains(queryset, field: str, query: str, *values: str) -> list[dict[str, Any]]:
    """Up to a few pages of rows whose `field` holds the query, shortest names first (one query), ranked."""
    rows = list(
        queryset.filter(**{f"{field}__icontains": query})
        .annotate(name_length=Length(field))
        .order_by("name_length", field)
        .values(field, *values)[: SEARCH_LIMIT * 5]
    )
    return _ranked(rows, field, query)


def _thing(*, kind: str, key: Any, label: str, detail: str = "", status: str = "", **more: Any) -> dict[str, Any]:
    """One thing the search found: what it is, its page's key, how it is named and what tells it apart."""
    return {"kind": kind, "key": key, "label": label, "detail": detail, "status": status, **more}


def _things_a_number_names(number: int) -> list[dict[str, Any]]:
    """Everything this ID is: a task, a PanDA job, a DIRAC job, a job set (of one or more tasks, among the jobs
    not yet archived: an archived job set is found through its task). Four indexed queries."""
    things: list[dict[str, Any]] = []
    task = Task.objects.filter(pk=number).values("taskName", "status").first()
    if task:
        things.append(
            _thing(kind="task", key=number, label=f"Task {number}", detail=task["taskName"], status=task["status"])
        )
    job = Job.objects.filter(pk=number).values("jobStatus", "computingSite", "task_id").first()
    if job:
        where = f"at {job['computingSite']}, " if job["computingSite"] else ""
        things.append(
            _thing(
                kind="job",
                key=number,
                label=f"PanDA job {number}",
                detail=f"{where}task {job['task_id']}",
                status=job["jobStatus"],
            )
        )
    dirac = DiracJob.objects.filter(pk=number).values("status", "owner").first()
    if dirac:
        things.append(
            _thing(
                kind="dirac-job",
                key=number,
                label=f"DIRAC job {number}",
                detail=f"owner {dirac['owner']}",
                status=dirac["status"],
            )
        )
    for row in (
        Job.objects.filter(jobsetID=number, archiveDay__isnull=True)
        .values("task_id")
        .annotate(n=Count("pk"))
        .order_by("task_id")[:SEARCH_LIMIT]
    ):
        things.append(
            _thing(
                kind="jobset",
                key=number,
                task=row["task_id"],
                label=f"Job set {number}",
                detail=f"task {row['task_id']}, {row['n']} job{'s' if row['n'] != 1 else ''}",
                status="",
            )
        )
    return things


def _things_a_name_names(name: str) -> list[dict[str, Any]]:
    """Everything called exactly this: a queue, a site, a CMS site, a WMCore request, an error code (pilot:1305), a
    DIRAC site or CE (LCG.CERN.cern), a storage endpoint (DE-T1-02_DATADISK), a user, a task, a dataset (of each
    task that reads or writes it). A fixed number of indexed queries."""
    things: list[dict[str, Any]] = []
    queue = PandaQueue.objects.filter(name=name).values("status", "site__name").first()
    if queue:
        things.append(
            _thing(
                kind="queue",
                key=name,
                label=f"PanDA queue {name}",
                detail=f"at site {queue['site__name']}",
                status=queue["status"],
            )
        )
    site = Site.objects.filter(name=name).values("role", "cloud", "country").first()
    if site:
        where = ", ".join(part for part in (site["cloud"] and f"cloud {site['cloud']}", site["country"]) if part)
        things.append(
            _thing(
                kind="site",
                key=name,
                label=f"Site {name}",
                detail=f"{site['role']}{', ' + where if where else ''}",
                status="",
            )
        )
    agents = list(WMCoreSite.objects.filter(name=name).values_list("queue__name", flat=True).order_by("queue__name"))
    if agents:
        things.append(
            _thing(
                kind="cms-site",
                key=name,
                label=f"CMS site {name}",
                detail=f"in the resource control of {', '.join(agents)}",
                status="",
            )
        )
    request = WMCoreRequest.objects.filter(RequestName=name).values("RequestStatus").first()
    if request:
        things.append(
            _thing(
                kind="wmcore-request",
                key=name,
                label=f"WMCore request {name}",
                detail="",
                status=request["RequestStatus"],
            )
        )
    condition = job_error_filter(name)
    if condition is not None:  # pilot:1305, as the pages write a job's main error
        component, _, code = name.partition(":")
        things.append(
            _thing(
                kind="error",
                key=f"{component}:{int(code)}",
                label=f"Error {error_label(component, int(code))}",
                detail="the jobs that ended with it",
                status="",
            )
        )
    # a DIRAC site (LCG.CERN.cern) or CE names itself with dots; its requests of the last day are a scan of that
    # day by the records' time index, as the DIRAC page reads them (no index by site: issue 32)
    recent = DiracMatchRecord.objects.filter(at__gte=timezone.now() - timedelta(days=1))
    for field, what in (("site", "DIRAC site"), ("gridCE", "DIRAC CE")) if "." in name else ():
        record = recent.filter(**{field: name}).order_by("-at").values("pk", "at", "matched").first()
        if record:
            things.append(
                _thing(
                    kind="dirac-match",
                    key=record["pk"],
                    label=f"{what} {name}",
                    detail=f"its latest matching request, {record['at']:%Y-%m-%d %H:%M} UTC",
                    status="matched" if record["matched"] else "no match",
                )
            )
    endpoint = StorageEndpoint.objects.filter(name=name).values("site__name").first()
    if endpoint and endpoint["site__name"]:
        things.append(
            _thing(kind="site", key=endpoint["site__name"], label=f"Storage endpoint {name}",
                   detail=f"at site {endpoint['site__name']}", status="")
        )  # fmt: skip
    if Task.objects.filter(userName=name).exists() or Job.objects.filter(prodUserName=name).exists():
        things.append(_thing(kind="user", key=name, label=f"User {name}", detail="their tasks, jobs and errors"))
    tasks = Task.objects.filter(taskName=name).values("jediTaskID", "status").order_by("-jediTaskID")
    for task in tasks[:SEARCH_LIMIT]:
        things.append(
            _thing(
                kind="task",
                key=task["jediTaskID"],
                label=f"Task {task['jediTaskID']}",
                detail=name,
                status=task["status"],
            )
        )
    for dataset in (
        Dataset.objects.filter(datasetName=name).values("task_id", "type", "status").order_by("-task_id")[:SEARCH_LIMIT]
    ):
        things.append(
            _thing(
                kind="dataset",
                key=dataset["task_id"],
                label=f"Dataset ({dataset['type']})",
                detail=f"of task {dataset['task_id']}",
                status=dataset["status"],
            )
        )
    return things


def search_everything(*, query: str) -> dict[str, Any]:
    """What the search box finds. `exact`: the thing (kind and key) when the query names exactly one, so the box
    opens it; `choices`: every thing it names when it names several (547 as a task, a PanDA job, a DIRAC job and a
    job set; CERN-PROD as a queue and a site); otherwise the things of each kind whose name holds the query, closest
    first (`_ranked`). A fixed number of queries."""
    result: dict[str, Any] = {
        "exact": None,
        "choices": [],
        "query": query,
        **{kind: [] for kind, *_ in SEARCH_KINDS},
    }
    if not query:
        return result
    number = whole_number(query)
    things = _things_a_number_names(number) if number is not None else _things_a_name_names(query)
    if len(things) == 1:
        result["exact"] = things[0]
        return result
    if things:
        result["choices"] = things
        return result
    for kind, queryset, field, values in SEARCH_KINDS:
        result[kind] = _contains(queryset(), field, query, *values)
    return result


# what a name is looked for in when it is no exact name: the result's key, the rows, the name field, what else shows
SEARCH_KINDS = (
    ("tasks", lambda: Task.objects.all(), "taskName", ("jediTaskID", "status", "userName")),
    ("queues", lambda: PandaQueue.objects.all(), "name", ("status", "site__name")),
    ("sites", lambda: Site.objects.all(), "name", ("role", "cloud")),
    ("cms_sites", lambda: WMCoreSite.objects.values("name").distinct(), "name", ()),
    ("datasets", lambda: Dataset.objects.all(), "datasetName", ("task_id", "type")),
    ("requests", lambda: WMCoreRequest.objects.all(), "RequestName", ("RequestStatus",)),
)
