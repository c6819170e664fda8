"""Our tasks and jobs as PanDA's own clients read them (issue 36): panda-client 2.2.0's `Client` module and pbook
call panda-server's `/api/v1/task/…` and `/api/v1/job/…` and read the answers in panda-server 1.0.4's field names.

Each reader mirrors the panda-server 1.0.4 function that answers the same call (cited on each); a field we do not
keep is present and null, as the real server gives a column that is empty. Dates are what the real server's JSON
encoder writes for them, `{"__datetime__": "<ISO, UTC, naive>"}`, which panda-client turns back into datetimes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import F, Sum

from brokerage import states
from brokerage.models import Dataset, DatasetFile, Job, Task
from brokerage.selectors.jobs import job_input_files

# JediTaskSpec.attributes (panda-server 1.0.4, taskbuffer/JediTaskSpec.py): the keys of a task's full record
TASK_SPEC_ATTRIBUTES = (
    "jediTaskID", "taskName", "status", "userName", "creationDate", "modificationTime", "startTime", "endTime",
    "frozenTime", "prodSourceLabel", "workingGroup", "vo", "coreCount", "taskType", "processingType", "taskPriority",
    "currentPriority", "architecture", "transUses", "transHome", "transPath", "lockedBy", "lockedTime",
    "termCondition", "splitRule", "walltime", "walltimeUnit", "outDiskCount", "outDiskUnit", "workDiskCount",
    "workDiskUnit", "ramCount", "ramUnit", "ioIntensity", "ioIntensityUnit", "workQueue_ID", "progress",
    "failureRate", "errorDialog", "reqID", "oldStatus", "cloud", "site", "countryGroup", "parent_tid", "eventService",
    "ticketID", "ticketSystemType", "stateChangeTime", "superStatus", "campaign", "mergeRamCount", "mergeRamUnit",
    "mergeWalltime", "mergeWalltimeUnit", "throttledTime", "numThrottled", "mergeCoreCount", "goal", "assessmentTime",
    "cpuTime", "cpuTimeUnit", "cpuEfficiency", "baseWalltime", "nucleus", "baseRamCount", "ttcRequested",
    "ttcPredicted", "ttcPredictionDate", "rescueTime", "requestType", "gshare", "resource_type", "useJumbo", "diskIO",
    "diskIOUnit", "memory_leak_core", "memory_leak_x2", "attemptNr", "container_name", "framework", "activatedTime",
    "queuedTime", "actionTime",
)  # fmt: skip
# JobSpec._attributes (panda-server 1.0.4, taskbuffer/JobSpec.py): the keys of a job's description
JOB_SPEC_ATTRIBUTES = (
    "PandaID", "jobDefinitionID", "schedulerID", "pilotID", "creationTime", "creationHost", "modificationTime",
    "modificationHost", "AtlasRelease", "transformation", "homepackage", "prodSeriesLabel", "prodSourceLabel",
    "prodUserID", "assignedPriority", "currentPriority", "attemptNr", "maxAttempt", "jobStatus", "jobName",
    "maxCpuCount", "maxCpuUnit", "maxDiskCount", "maxDiskUnit", "ipConnectivity", "minRamCount", "minRamUnit",
    "startTime", "endTime", "cpuConsumptionTime", "cpuConsumptionUnit", "commandToPilot", "transExitCode",
    "pilotErrorCode", "pilotErrorDiag", "exeErrorCode", "exeErrorDiag", "supErrorCode", "supErrorDiag",
    "ddmErrorCode", "ddmErrorDiag", "brokerageErrorCode", "brokerageErrorDiag", "jobDispatcherErrorCode",
    "jobDispatcherErrorDiag", "taskBufferErrorCode", "taskBufferErrorDiag", "computingSite", "computingElement",
    "jobParameters", "metadata", "prodDBlock", "dispatchDBlock", "destinationDBlock", "destinationSE", "nEvents",
    "grid", "cloud", "cpuConversion", "sourceSite", "destinationSite", "transferType", "taskID", "cmtConfig",
    "stateChangeTime", "prodDBUpdateTime", "lockedby", "relocationFlag", "jobExecutionID", "VO", "pilotTiming",
    "workingGroup", "processingType", "prodUserName", "nInputFiles", "countryGroup", "batchID", "parentID",
    "specialHandling", "jobsetID", "coreCount", "nInputDataFiles", "inputFileType", "inputFileProject",
    "inputFileBytes", "nOutputDataFiles", "outputFileBytes", "jobMetrics", "workQueue_ID", "jediTaskID",
    "jobSubStatus", "actualCoreCount", "reqID", "maxRSS", "maxVMEM", "maxSWAP", "maxPSS", "avgRSS", "avgVMEM",
    "avgSWAP", "avgPSS", "maxWalltime", "nucleus", "eventService", "failedAttempt", "hs06sec", "gshare", "hs06",
    "totRCHAR", "totWCHAR", "totRBYTES", "totWBYTES", "rateRCHAR", "rateWCHAR", "rateRBYTES", "rateWBYTES",
    "resource_type", "diskIO", "memory_leak", "memory_leak_x2", "container_name", "job_label", "gco2_regional",
    "gco2_global", "cpu_architecture_level", "outputFileType",
)  # fmt: skip
# FileSpec._attributes (panda-server 1.0.4, taskbuffer/FileSpec.py): the keys of each of a job's Files
FILE_SPEC_ATTRIBUTES = (
    "row_ID", "PandaID", "GUID", "lfn", "type", "dataset", "status", "prodDBlock", "prodDBlockToken",
    "dispatchDBlock", "dispatchDBlockToken", "destinationDBlock", "destinationDBlockToken", "destinationSE", "fsize",
    "md5sum", "checksum", "scope", "jediTaskID", "datasetID", "fileID", "attemptNr",
)  # fmt: skip

# our column → PanDA's attribute where the names differ
_TASK_COLUMN = {"workQueue_ID": "workQueue_id", "parent_tid": "parent_id"}
_JOB_COLUMN = {"workQueue_ID": "workQueue_id", "jediTaskID": "task_id", "taskID": "task_id"}
_TASK_COLUMNS = {field.attname for field in Task._meta.concrete_fields}
_JOB_COLUMNS = {field.attname for field in Job._meta.concrete_fields}

# get_tasks_detailed_info_since looks back at most this far, as getTaskIDsWithCriteria_JEDI caps `since` (1.0.4)
TASKS_SINCE_MAX_DAYS = 90
# job/get_description reads at most this many jobs of one call (job_api.get_description, 1.0.4)
JOB_DESCRIPTIONS_MAX = 5500
# the statuses of PanDA's jobsActive4 table, whose jobs get_details counts per status (its query of jobsDefined4
# is overwritten before it runs, task_event_module.getJediTaskDetails, 1.0.4: defined and assigned jobs are not
# counted)
ACTIVE_TABLE_STATUSES = ("activated", "sent", "starting", "running", "holding", "transferring", "merging")


def panda_moment(value: datetime | None) -> dict[str, str] | None:
    """A date as panda-server's JSON encoder writes it (server/panda.py encode_special_cases): naive UTC."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return {"__datetime__": value.isoformat()}


def _plain(value: Any) -> Any:
    return panda_moment(value) if isinstance(value, datetime) else value


def panda_task_status(*, task_id: int) -> str | None:
    """task/get_status: the task's status, or None when there is no such task (task_api.get_status)."""
    return Task.objects.filter(pk=task_id).values_list("status", flat=True).first()


def panda_task_parameters(*, task_id: int) -> dict[str, Any] | None:
    """task/get_task_parameters: the parameters the task was defined with (JEDI_TaskParams), None when there is no
    such task (task_api.get_task_parameters). A task without stored parameters has an empty map."""
    row = Task.objects.filter(pk=task_id).values_list("taskParams", flat=True)
    if not row.exists():
        return None
    return dict(row.first() or {})


def panda_task_details(*, task_id: int, include_parameters: bool, include_status: bool) -> dict[str, Any] | None:
    """task/get_details (DBProxy.getJediTaskDetails, 1.0.4): input and output containers, a statistics string of the
    input files (to be done, finished, failed, per status of the active jobs reading them, picked), the jobs that
    read the input, and with the flags the status and the command line. None when there is no such task."""
    task = Task.objects.filter(pk=task_id).values("status", "taskParams").first()
    if task is None:
        return None
    details: dict[str, Any] = {"inDS": "", "outDS": "", "statistics": "", "PandaID": [], "mergeStatus": None}
    details["mergePandaID"] = []
    if include_status:
        details["status"] = task["status"]
    datasets = list(
        Dataset.objects.filter(task_id=task_id)
        .order_by("pk")
        .values(
            "pk", "datasetName", "containerName", "type", "master_id", "nFiles", "nFilesFinished", "nFilesFailed",
            "nFilesUsed",
        )
    )  # fmt: skip
    in_names: list[str] = []
    out_names: list[str] = []
    masters = [d for d in datasets if d["type"] in states.INPUT_TYPES and d["master_id"] is None]
    totals = {"files": 0, "finished": 0, "failed": 0, "to_do": 0}
    for dataset in datasets:
        name = dataset["containerName"] or dataset["datasetName"]
        if dataset in masters:
            if dataset["type"] == "input" and name not in in_names:
                in_names.append(name)
            totals["files"] += dataset["nFiles"]
            totals["finished"] += dataset["nFilesFinished"]
            totals["failed"] += dataset["nFilesFailed"]
            totals["to_do"] += dataset["nFiles"] - dataset["nFilesUsed"]
        elif dataset["type"].endswith(("output", "log")) and name not in out_names:
            out_names.append(name)
    files_per_job: dict[int, int] = {}
    for panda_id in DatasetFile.objects.filter(
        dataset_id__in=[d["pk"] for d in masters], PandaID__isnull=False
    ).values_list("PandaID", flat=True):
        files_per_job[panda_id] = files_per_job.get(panda_id, 0) + 1
    details["PandaID"] = sorted(files_per_job)
    per_status: dict[str, int] = {}
    # the real query reads analysis jobs only (prodSourceLabel user) and leaves merge jobs out
    active = Job.objects.filter(
        pk__in=list(files_per_job), jobStatus__in=ACTIVE_TABLE_STATUSES, prodSourceLabel="user"
    ).exclude(processingType="pmerge")
    for panda_id, status in active.values_list("pk", "jobStatus").order_by("pk"):
        per_status[status] = per_status.get(status, 0) + files_per_job[panda_id]
    details["inDS"], details["outDS"] = ",".join(in_names), ",".join(out_names)
    details["statistics"] = _statistics(totals, per_status)
    if include_parameters:
        details["cliParams"] = (task["taskParams"] or {}).get("cliParams", "")
    return details


def _statistics(totals: dict[str, int], per_status: dict[str, int]) -> str:
    """getJediTaskDetails' "tobedone*N,finished*N,failed*N,<job status>*N,picked*N" (zero counts left out; files
    of failed active jobs are counted among failed already)."""
    parts = []
    picked = totals["files"]
    for label, count in (("tobedone", totals["to_do"]), ("finished", totals["finished"]), ("failed", totals["failed"])):
        if count > 0:
            parts.append(f"{label}*{count}")
            picked -= count
    for status, count in per_status.items():
        if status == "failed":
            continue
        parts.append(f"{status}*{count}")
        picked -= count
    if picked > 0:
        parts.append(f"picked*{picked}")
    return ",".join(parts)


class TaskFilterError(ValueError):
    """A filter of get_tasks_detailed_info_since the real server refuses too; the message is its words."""


# the regular-expression characters that make a filter value a pattern (task_api.get_tasks_detailed_info_since)
_REGEX_META = r"^$*+?\|()"


def panda_task_filters(filters: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The caller's filters split as the real server splits them: plain values are equality conditions on a task
    attribute, values with a regular expression's characters are matched against the task's record afterwards.
    An attribute JediTaskSpec does not have is refused (getTaskIDsWithCriteria_JEDI returns nothing for it)."""
    equal: dict[str, Any] = {}
    patterns: dict[str, str] = {}
    for field, value in filters.items():
        text = str(value)
        if any(character in text for character in _REGEX_META):
            try:
                re.compile(text)
            except re.error as error:
                raise TaskFilterError(f"filter {field}: not a regular expression ({error})") from error
            patterns[field] = text
            continue
        if field not in TASK_SPEC_ATTRIBUTES:
            raise TaskFilterError(f"unknown attribute {field} is used in criteria")
        equal[field] = value
    return equal, patterns


def panda_tasks_since(
    *,
    user_name: str | None,
    since: datetime | None,
    filters: dict[str, Any],
    n_tasks: int,
    now: datetime,
) -> list[dict[str, Any]]:
    """task/get_tasks_detailed_info_since (1.0.4): the full records of at most `n_tasks` tasks changed since
    `since` (never more than 90 days back), the user's own unless the filters name another userName, by task id.
    Raises TaskFilterError for a filter the real server refuses."""
    equal, patterns = panda_task_filters(filters)
    if user_name is not None:
        equal = {"userName": user_name, **equal}
    oldest = now - timedelta(days=TASKS_SINCE_MAX_DAYS)
    query = Task.objects.filter(modificationTime__gte=max(since, oldest) if since is not None else oldest)
    for field, value in equal.items():
        column = _TASK_COLUMN.get(field, field)
        if column not in _TASK_COLUMNS:
            return []  # an attribute we do not keep is empty: no task equals a value there
        query = query.filter(**{f"{column}__isnull": True} if value in (None, "NULL") else {column: value})
    # the real query takes the first n_tasks rows Oracle finds, then sorts them by id; ours the lowest ids
    task_ids = list(query.order_by("pk").values_list("pk", flat=True)[:n_tasks])
    records = panda_task_records(task_ids=task_ids)
    found = []
    for record in records:
        if all(
            field not in record or re.search(pattern, str(record[field])) is not None
            for field, pattern in patterns.items()
        ):
            found.append(record)
    return found


def panda_task_records(*, task_ids: list[int]) -> list[dict[str, Any]]:
    """Each task's full record as get_task_details_json (1.0.4) makes it: every JediTaskSpec attribute, the job
    parameters template, the task's parameters and the input files' progress over its master input datasets. Two
    queries whatever the number of tasks."""
    rows = {row["jediTaskID"]: row for row in Task.objects.filter(pk__in=task_ids).values()}
    progress = {
        row["task_id"]: row
        for row in Dataset.objects.filter(task_id__in=task_ids, type__in=states.INPUT_TYPES, master__isnull=True)
        .values("task_id")
        .annotate(files=Sum("nFiles"), finished=Sum("nFilesFinished"), failed=Sum("nFilesFailed"))
        .order_by()
    }
    records = []
    for task_id in task_ids:
        row = rows.get(task_id)
        if row is None:
            continue
        record = {name: _plain(row.get(_TASK_COLUMN.get(name, name))) for name in TASK_SPEC_ATTRIBUTES}
        params = row.get("taskParams") or {}
        record["job_execution_params"] = None  # we keep no job parameters template
        record["task_creation_arguments"] = params.get("cliParams")
        record["raw_task_params"] = params
        counts = progress.get(task_id) or {}
        files, finished, failed = counts.get("files") or 0, counts.get("finished") or 0, counts.get("failed") or 0
        record.update(nFiles=files, nFilesFinished=finished, nFilesFailed=failed, nFilesMissing=0)
        record["pctFinished"] = round(100 * finished / files) if files else 0
        record["pctFailed"] = round(100 * failed / files) if files else 0
        records.append(record)
    return records


def panda_job_descriptions(*, job_ids: list[int]) -> list[dict[str, Any] | None]:
    """job/get_description (JobSpec.to_dict_advanced, 1.0.4): each job's record with its Files, in the order asked,
    None for an id that is no job. At most JOB_DESCRIPTIONS_MAX ids are read (the real server cuts the list too).
    Four queries: the jobs with their task's VO and request, the input files they took, their outputs and logs."""
    job_ids = job_ids[:JOB_DESCRIPTIONS_MAX]
    jobs = {
        row["PandaID"]: row
        for row in Job.objects.filter(pk__in=job_ids).values(*_JOB_COLUMNS, "task__vo", "task__reqID")
    }
    files: dict[int, list[dict[str, Any]]] = {}
    # the input files each job took, at the attempt it took them, kept when it failed (Job.inputFiles: a failed job's
    # Files came back empty once they went back to their dataset, issue 50); its outputs and logs by PandaID
    for job_id, taken in job_input_files(job_ids=list(jobs)).items():
        for row in taken:
            record = {**row, "PandaID": job_id, "attemptNr": row["jobAttemptNr"],
                      "dataset_name": row["dataset__datasetName"], "dataset_pk": row["dataset_id"]}  # fmt: skip
            files.setdefault(job_id, []).append(_file_record(record))
    for row in (
        DatasetFile.objects.filter(outPandaID__in=list(jobs), type__in=states.OUTPUT_TYPES)
        .order_by("pk")
        .values("pk", "GUID", "lfn", "type", "status", "fsize", "checksum", "scope", "task_id", "attemptNr")
        .annotate(PandaID=F("outPandaID"), dataset_name=F("dataset__datasetName"), dataset_pk=F("dataset_id"))
    ):
        files.setdefault(row["PandaID"], []).append(_file_record(row))
    described: list[dict[str, Any] | None] = []
    for job_id in job_ids:
        row = jobs.get(job_id)
        if row is None:
            described.append(None)
            continue
        record = {name: _plain(row.get(_JOB_COLUMN.get(name, name))) for name in JOB_SPEC_ATTRIBUTES}
        record["VO"], record["reqID"] = row["task__vo"], row["task__reqID"]
        record["Files"] = files.get(job_id, [])
        described.append(record)
    return described


def _file_record(row: dict[str, Any]) -> dict[str, Any]:
    """A file as FileSpec.to_dict gives it: an input file's dataset is also its prodDBlock."""
    record = dict.fromkeys(FILE_SPEC_ATTRIBUTES)
    record.update(
        PandaID=row["PandaID"],
        GUID=row["GUID"] or None,
        lfn=row["lfn"],
        type=row["type"],
        dataset=row["dataset_name"],
        status=row["status"],
        fsize=row["fsize"],
        checksum=row["checksum"] or None,
        scope=row["scope"] or None,
        jediTaskID=row["task_id"],
        datasetID=row["dataset_pk"],
        fileID=row["pk"],
        attemptNr=row["attemptNr"],
    )
    if row["type"] in states.INPUT_TYPES:
        record["prodDBlock"] = row["dataset_name"]
    return record
