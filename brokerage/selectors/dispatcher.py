"""What a real pilot reads from the monitor (issue 36): a job as JobDispatcher.getJob describes it (a flat dict of
comma-separated file lists, "NULL" for nothing), a queue's CRIC-shaped queuedata and the storage endpoints, as the
pilot 3.7.0.36 reads them (pilot/info/jobdata.py, queuedata.py, storagedata.py)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from brokerage.models import DatasetFile, Job, PandaQueue, QueueStorage, StorageEndpoint

NULL = "NULL"


def pilot_job_description(*, job: Job) -> dict[str, Any]:
    """getJob's answer for a job just sent. The pilot runs the job's transformation when it is a URL (the pilot
    downloads it), else PILOT_PAYLOAD_TRANSFORMATION with PILOT_PAYLOAD_PARAMETERS: the demo's jobs name ATLAS
    transforms no pilot here can run. Its inputs are not handed over (the files the monitor tracks are its own
    bookkeeping, stored nowhere a pilot can read); its log, named by its task's log template, goes to the queue's write
    endpoint: the placeholder payload makes none of the task's output files, so the log is the one output handed over
    (the output file is failed if the job fails, finished with it otherwise, as for the simulator's jobs)."""
    task = job.task
    transformation = job.transformation if job.transformation.startswith(("http://", "https://")) else ""
    # the job's log file from its task's log template (services.outputs); a job made without one (before outputs
    # were registered, or by hand) gets a name of its own
    log = (
        DatasetFile.objects.filter(outPandaID=job.pk, type="log").values("lfn", "GUID", "dataset__datasetName").first()
    )
    log_file = log["lfn"] if log else f"{job.jobName or task.taskName.rstrip('/')}.{job.pk}.log.tgz"
    log_dataset = log["dataset__datasetName"] if log else f"panda.{task.pk}.log"
    log_guid = (
        log["GUID"]
        if log and log["GUID"]
        else str(uuid.uuid5(uuid.NAMESPACE_URL, f"panda-log:{job.pk}:{job.attemptNr}"))
    )
    endpoint = (
        QueueStorage.objects.filter(queue__name=job.computingSite, role="write_lan")
        .values_list("endpoint__name", flat=True)
        .first()
    )
    return {
        "StatusCode": 0,
        "PandaID": job.pk,
        "jobsetID": job.jobsetID if job.jobsetID is not None else NULL,
        "taskID": task.pk,
        "jobDefinitionID": 0,
        "jobName": job.jobName or f"{task.taskName.rstrip('/')}.{job.pk}",
        "transformation": transformation or settings.PILOT_PAYLOAD_TRANSFORMATION,
        "jobPars": settings.PILOT_PAYLOAD_PARAMETERS if not transformation else "",
        "homepackage": job.homepackage or NULL,
        "swRelease": NULL,
        "cmtConfig": job.cmtConfig or NULL,
        "prodSourceLabel": job.prodSourceLabel,
        "processingType": job.processingType or NULL,
        "prodUserID": job.prodUserName or NULL,
        "currentPriority": job.currentPriority,
        "attemptNr": job.attemptNr,
        "maxAttempt": job.maxAttempt,
        "coreCount": job.coreCount,
        "minRamCount": job.minRamCount or 0,
        "maxDiskCount": job.maxDiskCount or 0,
        "maxCpuCount": 0,
        "maxWalltime": job.maxWalltime or NULL,
        "cloud": job.cloud or NULL,
        "nucleus": job.nucleus or NULL,
        "sourceSite": NULL,
        "destinationSE": job.computingSite,
        "transferType": NULL,
        "nSent": 0,
        # no input handed over (above)
        "inFiles": NULL,
        "GUID": NULL,
        "fsize": NULL,
        "checksum": NULL,
        "scopeIn": NULL,
        "realDatasetsIn": NULL,
        "prodDBlocks": NULL,
        "prodDBlockToken": NULL,
        "ddmEndPointIn": NULL,
        "dispatchDblock": NULL,
        "dispatchDBlockToken": NULL,
        # the log tarball is the job's one output
        "outFiles": log_file,
        "logFile": log_file,
        "logGUID": log_guid,
        "scopeOut": "panda",
        "scopeLog": "panda",
        "realDatasets": log_dataset,
        "destinationDblock": log_dataset,
        "destinationDBlockToken": NULL,
        "dispatchDBlockTokenForOut": NULL,
        "ddmEndPointOut": endpoint or NULL,
        "fileDestinationSE": job.computingSite,
    }


def pilot_queuedata(*, queue: str) -> dict[str, Any] | None:
    """A queue's record as CRIC's PanDA-queue cache gives it (the imported record, our columns over it): the pilot
    reads its limits, storages and copytools. A pilot-driven queue's copytool is `mv`, the one the pilot ships for
    a local filesystem: its outputs and log go to the pilot's --output-dir (README)."""
    row = PandaQueue.objects.select_related("site").filter(name=queue).first()
    if row is None:
        return None
    storages: dict[str, list[str]] = {}
    for role, endpoint in QueueStorage.objects.filter(queue=row).values_list("role", "endpoint__name").order_by("pk"):
        storages.setdefault(role, []).append(endpoint)
    record = dict(row.cric or {})
    record.update(
        name=row.name,
        siteid=row.name,
        panda_resource=row.name,
        nickname=row.name,
        atlas_site=row.site.name,
        status=row.status,
        state="ACTIVE",
        type=row.type,
        capability=row.capability,
        resource_type=row.resource_type,
        cloud=row.cloud,
        corecount=row.corecount,
        maxrss=row.maxrss,
        minrss=row.minrss,
        maxwdir=row.maxwdir,
        maxtime=row.maxtime,
        maxinputsize=row.maxinputsize,
        catchall=row.catchall,
        direct_access_lan=row.direct_access_lan,
        direct_access_wan=row.direct_access_wan,
        astorages=storages,
        pilot_version="3",
    )
    if row.pilot_driven:
        record.update(
            # mv_final_destination: the mv copytool moves the files into the pilot's --output-dir (else beside it)
            catchall=",".join(part for part in (row.catchall, "mv_final_destination") if part),
            copytools={"mv": {"setup": ""}},
            acopytools={activity: ["mv"] for activity in ("pr", "pw", "pl", "read_lan", "write_lan", "w")},
            container_type="",
            container_options="",
        )
    return record


def pilot_storages() -> dict[str, dict[str, Any]]:
    """The storage endpoints as CRIC's ddmendpoints cache gives them, with what the pilot reads (name, site, type,
    tape or disk, blacklisting)."""
    endpoints = {}
    for endpoint in StorageEndpoint.objects.select_related("site").order_by("name"):
        endpoints[endpoint.name] = {
            "name": endpoint.name,
            "site": endpoint.site.name if endpoint.site else "",
            "rc_site": endpoint.site.name if endpoint.site else "",
            "type": endpoint.type,
            "token": endpoint.type,
            "is_tape": endpoint.is_tape,
            "is_deterministic": True,
            "state": "ACTIVE",
            "blacklisted": {"read": endpoint.blacklisted, "write": endpoint.blacklisted},
            "arprotocols": {},
            "rprotocols": {},
        }
    return endpoints


# nSent counts the queue's production jobs sent in the last minute (panda-server 1.0.4 getJobs' sqlSent)
SENT_WINDOW = timedelta(seconds=60)


def pilot_jobs_sent_recently(*, queue: str, now: datetime) -> int:
    """nSent: the queue's production jobs sent in the last minute (getJobs tells a pilot asking for managed jobs)."""
    return Job.objects.filter(
        computingSite=queue, jobStatus="sent", prodSourceLabel__in=("managed", "test"),
        modificationTime__gt=now - SENT_WINDOW,
    ).count()  # fmt: skip


def pilot_job_states(*, job_ids: list[int]) -> list[dict[str, Any]]:
    """panda-server 1.0's get_job_status: each job's status and attempt, in the order asked; "not found" with attempt
    0 for an id that is no job."""
    found = {
        pk: (status, attempt)
        for pk, status, attempt in Job.objects.filter(pk__in=job_ids).values_list("pk", "jobStatus", "attemptNr")
    }
    states = []
    for job_id in job_ids:
        status, attempt = found.get(job_id, ("not found", 0))
        states.append({"job_id": job_id, "status": status, "attempt_number": attempt})
    return states
