"""A small, realistic demo grid for `make run`: nuclei and satellites, queues with varied CRIC attributes,
storages, network, software tags, work queues, global shares and tasks at different points of their life.

Statuses are reached through status_transition, so every demo task and job has a true status history.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from django.db import transaction

from brokerage import models
from brokerage.services.gdpconfig import gdpconfig_save
from brokerage.services.status import status_transition

ACTOR = "demo"

# (site, role, tier, cloud, country, bareNucleus)
SITES = [
    ("CERN-PROD", "nucleus", 0, "CERN", "Switzerland", "allow"),
    ("BNL-ATLAS", "nucleus", 1, "US", "United States", ""),
    ("FZK-LCG2", "nucleus", 1, "DE", "Germany", ""),
    ("TRIUMF-LCG2", "nucleus", 1, "CA", "Canada", ""),
    ("MWT2", "satellite", 2, "US", "United States", ""),
    ("AGLT2", "satellite", 2, "US", "United States", ""),
    ("DESY-HH", "satellite", 2, "DE", "Germany", ""),
    ("UKI-LT2-QMUL", "satellite", 2, "UK", "United Kingdom", ""),
    ("praguelcg2", "satellite", 2, "CZ", "Czech Republic", ""),
]

# (queue, site, status, type, corecount, maxrss MB, maxtime s, pledgedcpu, extra CRIC fields)
QUEUES = [
    (
        "CERN",
        "CERN-PROD",
        "online",
        "unified",
        8,
        32000,
        288000,
        None,
        {"jobseed": "eshigh", "catchall": "jobseed=all", "direct_access_lan": True},
    ),
    ("CERN-T0", "CERN-PROD", "brokeroff", "production", 8, 16000, 172800, None, {}),
    ("BNL", "BNL-ATLAS", "online", "unified", 8, 24000, 259200, None, {"direct_access_lan": True}),
    ("BNL_GPU", "BNL-ATLAS", "online", "analysis", 1, 16000, 86400, None, {}),
    ("FZK-LCG2", "FZK-LCG2", "online", "unified", 8, 20000, 259200, None, {}),
    ("TRIUMF", "TRIUMF-LCG2", "online", "production", 1, 2000, 172800, None, {}),
    ("MWT2", "MWT2", "online", "unified", 8, 16000, 172800, None, {"transferringlimit": 3000}),
    ("AGLT2", "AGLT2", "online", "unified", 8, 16000, 172800, None, {"maxdiskio": 4000}),
    ("AGLT2_TEST", "AGLT2", "test", "production", 8, 16000, 172800, None, {}),
    ("DESY-HH", "DESY-HH", "online", "production", 8, 16000, 172800, -1, {}),
    ("UKI-LT2-QMUL", "UKI-LT2-QMUL", "offline", "unified", 8, 16000, 172800, None, {}),
    ("praguelcg2", "praguelcg2", "paused", "production", 1, 2000, 86400, None, {"catchall": "disableReassign"}),
]

# What the pilots of the demo GPU queues report (an A100 node).
DEMO_GPU = {
    "vendor": "nvidia",
    "model": "NVIDIA A100-SXM4-40GB",
    "vram": 40960,
    "microarchitecture": "Ampere",
    "version": "12.2",
    "driver_version": "575.57.08",
}

WORK_QUEUES = [
    # (name, type, order, share, criteria, variables, stretchable)
    ("evgensimul", "production", 10, 40, "processingType IN (:p1,:p2)", "p1:evgen,p2:simul", True),
    ("reprocessing", "production", 20, 20, "processingType IN (:p1)", "p1:reprocessing", False),
    ("group", "production", 30, 10, "workingGroup LIKE :p1", "p1:GP_%", False),
    ("mcore", "production", 40, 20, "coreCount > :p1", "p1:1", False),
    ("others", "production", 90, 10, "", "", False),
    ("user", "analysis", 10, 100, "", "", False),
]

# (name, value, parent, processingtype, prodsourcelabel)
GLOBAL_SHARES = [
    ("WLCG Production", 80, None, "", "managed"),
    ("Analysis", 20, None, "", "user"),
    ("MC 16", 60, "WLCG Production", "simul", "managed"),
    ("Reprocessing", 25, "WLCG Production", "reprocessing", "managed"),
    ("Express", 15, "WLCG Production", "urgent", "managed"),
    ("User Analysis", 80, "Analysis", "", "user"),
    ("Group Analysis", 20, "Analysis", "", "user"),
]

# (name, processingType, gshare, work queue, status path, nucleus, priority, user, source label, cores)
TASKS = [
    (
        "mc23_13p6TeV.801165.Py8EG_jetjet.evgen",
        "evgen",
        "MC 16",
        "evgensimul",
        ["defined", "assigning", "ready", "scouting", "running"],
        "BNL-ATLAS",
        500,
        "prodsys",
        "managed",
        1,
    ),
    (
        "mc23_13p6TeV.801165.Py8EG_jetjet.simul",
        "simul",
        "MC 16",
        "evgensimul",
        ["defined", "assigning", "pending"],
        "",
        500,
        "prodsys",
        "managed",
        8,
    ),
    (
        "data22_13p6TeV.00431812.physics_Main.reprocessing",
        "reprocessing",
        "Reprocessing",
        "reprocessing",
        ["defined", "assigning", "ready", "scouting", "scouted", "running", "prepared", "done"],
        "FZK-LCG2",
        700,
        "prodsys",
        "managed",
        8,
    ),
    (
        "mc23_13p6TeV.700320.Sh_Zee.recon",
        "reco",
        "MC 16",
        "mcore",
        ["defined", "assigning", "ready", "running", "throttled"],
        "CERN-PROD",
        450,
        "prodsys",
        "managed",
        8,
    ),
    (
        "mc23_13p6TeV.700321.Sh_Zmumu.urgent",
        "urgent",
        "Express",
        "others",
        ["defined", "assigning", "ready", "running"],
        "CERN-PROD",
        1000,
        "prodsys",
        "managed",
        8,
    ),
    (
        "group.phys-higgs.hzz4l.deriv",
        "deriv",
        "Group Analysis",
        "group",
        ["defined", "assigning", "ready", "running", "prepared", "finished"],
        "TRIUMF-LCG2",
        550,
        "GP_Higgs",
        "managed",
        1,
    ),
    (
        "mc23_13p6TeV.broken_definition",
        "simul",
        "MC 16",
        "evgensimul",
        ["tobroken", "broken"],
        "",
        300,
        "prodsys",
        "managed",
        1,
    ),
    (
        "user.jdoe.ttbar_analysis",
        "panda-client",
        "User Analysis",
        "user",
        ["defined", "ready", "running"],
        "",
        1000,
        "jdoe",
        "user",
        1,
    ),
    (
        "user.asmith.dijet_scan",
        "panda-client",
        "User Analysis",
        "user",
        ["defined", "ready", "running", "prepared", "exhausted"],
        "",
        900,
        "asmith",
        "user",
        1,
    ),
    (
        "mc23_13p6TeV.aborted_by_shifter",
        "simul",
        "MC 16",
        "evgensimul",
        ["defined", "assigning", "ready", "aborting", "aborted"],
        "BNL-ATLAS",
        400,
        "prodsys",
        "managed",
        8,
    ),
    ("mc23_13p6TeV.new_request", "evgen", "MC 16", "evgensimul", [], "", 500, "prodsys", "managed", 1),
    # waiting for a nucleus: the task-brokerage cycle of `make run` picks these up within a minute
    (
        "mc23_13p6TeV.801170.Py8EG_dijet.simul",
        "simul",
        "MC 16",
        "evgensimul",
        ["defined", "assigning"],
        "",
        600,
        "prodsys",
        "managed",
        8,
    ),
    (
        "data23_13p6TeV.00456789.physics_Main.reprocessing",
        "reprocessing",
        "Reprocessing",
        "reprocessing",
        ["defined", "assigning"],
        "",
        700,
        "prodsys",
        "managed",
        8,
    ),
]

JOB_PATHS = {
    "finished": ["assigned", "activated", "sent", "starting", "running", "transferring", "finished"],
    "running": ["assigned", "activated", "sent", "starting", "running"],
    "activated": ["assigned", "activated"],
    "failed": ["assigned", "activated", "starting", "running", "failed"],
    "closed": ["assigned", "activated", "closed"],
}


def demo_is_needed() -> bool:
    """True when the database holds no domain data yet (users and sessions do not count)."""
    return not (models.Site.objects.exists() or models.Task.objects.exists())


@transaction.atomic
def demo_load(*, now: datetime, seed: int = 2026) -> dict[str, int]:
    """Creates the demo grid with times before `now`; returns the number of rows created per entity."""
    rng = random.Random(seed)
    sites = {
        name: models.Site.objects.create(
            name=name, role=role, tier_level=tier, cloud=cloud, country=country, bareNucleus=bare
        )
        for name, role, tier, cloud, country, bare in SITES
    }
    endpoints = _demo_storage(sites, now)
    queues = _demo_queues(sites, endpoints, now)
    _demo_network(sites, rng, now)
    _demo_software(queues, now)
    work_queues = _demo_work_queues()
    _demo_global_shares(work_queues)
    _demo_tasks(work_queues, queues, rng, now)
    gdpconfig_save(key="DISK_THRESHOLD_Express", value="50", comment="demo: Express tasks need less room")
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="200", vo="atlas", comment="demo: a VO-specific override")
    return {label: model.objects.count() for label, model in _COUNTED.items()}


_COUNTED = {
    "sites": models.Site,
    "queues": models.PandaQueue,
    "endpoints": models.StorageEndpoint,
    "network links": models.NetworkLink,
    "work queues": models.WorkQueue,
    "global shares": models.GlobalShare,
    "tasks": models.Task,
    "datasets": models.Dataset,
    "files": models.DatasetFile,
    "jobs": models.Job,
}


def _demo_storage(sites, now):
    endpoints = {}
    for name, site in sites.items():
        total = 9000.0 if site.role == "nucleus" else 2500.0
        endpoints[name] = models.StorageEndpoint.objects.create(
            name=f"{name}_DATADISK",
            site=site,
            type="DATADISK",
            space_total=total * 1024,
            space_used=total * 1024 * 0.7,
            space_free=total * 1024 * 0.3,
            space_expired=total * 1024 * 0.05,
            detailed_status={
                "read_lan": "ON",
                "write_lan": "ON",
                "read_wan": "ON",
                "write_wan": "OFF" if name == "praguelcg2" else "ON",
            },
            updated=now,
        )
        if site.role == "nucleus":
            models.StorageEndpoint.objects.create(
                name=f"{name}_DATATAPE",
                site=site,
                type="DATATAPE",
                is_tape=True,
                space_total=50000 * 1024,
                space_free=20000 * 1024,
                space_used=30000 * 1024,
                updated=now,
            )
    return endpoints


def _demo_queues(sites, endpoints, now):
    queues = {}
    for name, site_name, status, queue_type, cores, maxrss, maxtime, pledged, extra in QUEUES:
        site = sites[site_name]
        record = {
            "name": name,
            "atlas_site": site_name,
            "status": status,
            "type": queue_type,
            "corecount": cores,
            "maxrss": maxrss,
            "minrss": 0,
            "maxtime": maxtime,
            "mintime": 0,
            "maxwdir": 20000 * max(cores, 1),
            "releases": ["AUTO"],
            "pledgedcpu": pledged,
            "wnconnectivity": "full#IPv4",
            "corepower": 10.0,
            "cloud": site.cloud,
            "astorages": {"read_lan": [endpoints[site_name].name], "write_lan": [endpoints[site_name].name]},
            **extra,
        }
        queues[name] = models.PandaQueue.objects.create(
            name=name,
            site=site,
            status=status,
            type=queue_type,
            corecount=cores,
            maxrss=maxrss,
            maxtime=maxtime,
            maxwdir=record["maxwdir"],
            releases=record["releases"],
            pledgedcpu=pledged,
            wnconnectivity=record["wnconnectivity"],
            corepower=10.0,
            cloud=site.cloud,
            catchall=extra.get("catchall", ""),
            jobseed=extra.get("jobseed", "std"),
            direct_access_lan=extra.get("direct_access_lan", False),
            transferringlimit=extra.get("transferringlimit"),
            maxdiskio=extra.get("maxdiskio"),
            cric=record,
            updated=now,
            transtimehi=2,
            transtimelo=3,
        )
        for role in ("read_lan", "write_lan"):
            models.QueueStorage.objects.create(queue=queues[name], endpoint=endpoints[site_name], role=role)
    models.GpuSummary.objects.create(queue=queues["BNL_GPU"], **DEMO_GPU, n_workers=12, updated=now)
    return queues


def _demo_network(sites, rng, now):
    nuclei = [site for site in sites.values() if site.role == "nucleus"]
    for source in sites.values():
        for nucleus in nuclei:
            if source == nucleus:
                continue
            models.NetworkLink.objects.create(
                src=source,
                dst=nucleus,
                closeness=rng.randint(1, 11),
                mbps_1h=rng.choice([None, round(rng.uniform(5, 400), 1)]),
                mbps_1d=round(rng.uniform(5, 300), 1),
                queued=rng.randint(0, 250),
                updated=now,
            )


def _demo_software(queues, now):
    tags = [
        {
            "cmtconfig": "x86_64-el9-gcc13-opt",
            "container_name": "",
            "project": "Athena",
            "release": "24.0.30",
            "sources": [],
            "tag": "VO-atlas-Athena-24.0.30-x86_64-el9-gcc13-opt",
        },
        {
            "cmtconfig": "x86_64-centos7-gcc11-opt",
            "container_name": "",
            "project": "AthGeneration",
            "release": "23.6.12",
            "sources": [],
            "tag": "VO-atlas-AthGeneration-23.6.12-x86_64-centos7-gcc11-opt",
        },
    ]
    for name, queue in queues.items():
        architectures = [{"arch": ["x86_64"], "instr": ["avx2"], "type": "cpu", "vendor": ["intel", "amd"]}]
        if name == "BNL_GPU":
            architectures.append({"type": "gpu", "vendor": ["nvidia", "excl"], "model": ["A100"]})
        models.SoftwareTags.objects.create(
            name=name,
            queue=queue,
            updated=now,
            data={
                "cmtconfigs": ["x86_64-el9-gcc13-opt", "x86_64-centos7-gcc11-opt"],
                "containers": ["any", "/cvmfs"],
                "cvmfs": ["atlas", "nightlies"],
                "architectures": architectures,
                "tags": tags,
            },
        )
    models.SoftwareTags.objects.create(
        name=models.SoftwareTags.ALL,
        updated=now,
        data={"containers": {"atlas/athena:24.0.30": "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/atlas/athena"}},
    )


def _demo_work_queues():
    work_queues = {}
    for name, queue_type, order, share, criteria, variables, stretchable in WORK_QUEUES:
        work_queues[name] = models.WorkQueue.objects.create(
            queue_name=name,
            queue_type=queue_type,
            queue_order=order,
            queue_share=share,
            criteria=criteria,
            variables=variables,
            stretchable=stretchable,
        )
    return work_queues


def _demo_global_shares(work_queues):
    created = {}
    for name, value, parent, processing_type, label in GLOBAL_SHARES:
        created[name] = models.GlobalShare.objects.create(
            name=name, value=value, parent=created.get(parent), processingtype=processing_type, prodsourcelabel=label
        )


def _demo_tasks(work_queues, queues, rng, now):
    online = [queue for queue in queues.values() if queue.status == "online" and queue.type != "analysis"]
    for index, (name, processing_type, gshare, queue_name, path, nucleus, priority, user, label, cores) in enumerate(
        TASKS
    ):
        created = now - timedelta(days=6, hours=index * 7)
        task = models.Task.objects.create(
            taskName=name,
            processingType=processing_type,
            gshare=gshare,
            workQueue=work_queues[queue_name],
            taskPriority=priority,
            currentPriority=priority,
            userName=user,
            prodSourceLabel=label,
            coreCount=cores,
            creationDate=created,
            modificationTime=created,
            ramCount=2000,
            ramUnit="MBPerCore",
            baseRamCount=1000,
            cpuTime=300,
            cpuEfficiency=90,
            baseWalltime=600,
            ioIntensity=rng.choice([50, 150, 600]),
            workingGroup="GP_Higgs" if user.startswith("GP_") else "",
            transUses="Athena-24.0.30",
            architecture="x86_64-el9-gcc13-opt",
            taskParams={"maxAttempt": 3, "t1Weight": 0, "ipConnectivity": "full#IPv4"},
        )
        moment = created
        for step in path:
            moment += timedelta(hours=rng.uniform(0.5, 6))
            if step in ("ready", "scouting") and nucleus and not task.nucleus:
                models.Task.objects.filter(pk=task.pk).update(nucleus=nucleus)
                task.nucleus = nucleus
            reason = _task_reason(step, nucleus)
            status_transition(obj=task, new_status=step, reason=reason, actor=ACTOR, now=min(moment, now))
        if step_reached(path, "pending"):
            models.Task.objects.filter(pk=task.pk).update(
                errorDialog="no nucleus passed the filters: all skipped for space or transfer backlog"
            )
        _demo_datasets_and_jobs(task, path, online, rng, moment, now)


def step_reached(path: list[str], status: str) -> bool:
    return bool(path) and path[-1] == status


def _task_reason(step: str, nucleus: str) -> str:
    return {
        "defined": "task parameters refined",
        "assigning": "waiting for task brokerage",
        "ready": f"nucleus {nucleus} chosen" if nucleus else "analysis task: no nucleus needed",
        "pending": "task brokerage: every nucleus skipped",
        "throttled": "max attemptNr reached a multiple of 5",
        "aborting": "abort command from a shifter",
        "tobroken": "input dataset unknown",
        "exhausted": "all reattempts done, some inputs unsuccessful",
    }.get(step, "")


def _demo_datasets_and_jobs(task, path, online_queues, rng, moment, now):
    n_files = rng.randint(8, 20)
    input_dataset = models.Dataset.objects.create(
        task=task,
        datasetName=f"{task.taskName}.input",
        type="input",
        nFiles=n_files,
        nFilesToBeUsed=n_files,
        nEvents=n_files * 1000,
        state="closed",
        creationTime=task.creationDate,
        modificationTime=task.creationDate,
    )
    output_dataset = models.Dataset.objects.create(
        task=task,
        datasetName=f"{task.taskName}.output",
        type="output",
        provenanceID=input_dataset.pk,
        creationTime=task.creationDate,
        modificationTime=task.creationDate,
    )
    # where DDM holds the input: at the task's nucleus, or at two random nuclei for tasks not yet brokered
    holders = [task.nucleus] if task.nucleus else rng.sample(["CERN-PROD", "BNL-ATLAS", "FZK-LCG2", "TRIUMF-LCG2"], 2)
    for holder in holders:
        models.DatasetReplica.objects.create(
            datasetName=input_dataset.datasetName,
            endpoint=models.StorageEndpoint.objects.get(name=f"{holder}_DATADISK"),
            nFiles=n_files,
            sizeGB=float(n_files * 3),
        )
    models.DatasetFile.objects.bulk_create(
        models.DatasetFile(
            dataset=input_dataset,
            task=task,
            lfn=f"{task.taskName}._{number:06d}.pool.root",
            type="input",
            fsize=rng.randint(1, 5) * 1024**3,
            nEvents=1000,
            maxAttempt=3,
            scope="mc23_13p6TeV",
        )
        for number in range(1, n_files + 1)
    )
    if not path or path[-1] in ("broken", "pending") or "ready" not in path:
        return
    status_transition(obj=input_dataset, new_status="ready", reason="files loaded from DDM", actor=ACTOR, now=moment)
    status_transition(obj=output_dataset, new_status="ready", reason="registered in DDM", actor=ACTOR, now=moment)
    outcomes = _job_outcomes(path[-1], rng)
    files = list(models.DatasetFile.objects.filter(dataset=input_dataset).order_by("fileID"))
    finished = failed = 0
    for number, outcome in enumerate(outcomes):
        queue = rng.choice(online_queues) if not task.nucleus else _queue_near(task.nucleus, online_queues, rng)
        start = moment - timedelta(hours=rng.uniform(1, 20))
        job = models.Job.objects.create(
            task=task,
            jobsetID=number // 4 + 1,
            jobName=f"{task.taskName}.job{number}",
            computingSite=queue.name,
            nucleus=task.nucleus,
            gshare=task.gshare,
            workQueue=task.workQueue,
            prodSourceLabel=task.prodSourceLabel,
            processingType=task.processingType,
            currentPriority=task.currentPriority,
            coreCount=queue.corecount,
            minRamCount=2000 * queue.corecount,
            isScout=number < 2,
            creationTime=start,
            stateChangeTime=start,
            nEvents=1000,
            nInputFiles=1,
            prodUserName=task.userName,
        )
        when = start
        for step in JOB_PATHS[outcome]:
            when += timedelta(minutes=rng.uniform(5, 90))
            status_transition(obj=job, new_status=step, reason=_job_reason(step), actor=ACTOR, now=min(when, now))
        if number < len(files):
            file = files[number]
            models.DatasetFile.objects.filter(pk=file.pk).update(PandaID=job.pk, attemptNr=1)
            file.refresh_from_db()
            status_transition(obj=file, new_status="picked", actor=ACTOR, now=start)
            if outcome in ("finished", "failed", "running"):
                status_transition(obj=file, new_status="running", actor=ACTOR, now=start)
            if outcome == "finished":
                status_transition(obj=file, new_status="finished", actor=ACTOR, now=when)
                finished += 1
            elif outcome == "failed":
                status_transition(obj=file, new_status="failed", actor=ACTOR, now=when)
                failed += 1
    models.Dataset.objects.filter(pk=input_dataset.pk).update(
        nFilesUsed=len(outcomes), nFilesFinished=finished, nFilesFailed=failed
    )
    if path[-1] in ("done", "finished", "exhausted"):
        status_transition(obj=input_dataset, new_status="done", reason="all files processed", actor=ACTOR, now=now)
        status_transition(obj=output_dataset, new_status="done", reason="task ended", actor=ACTOR, now=now)
    progress = int(100 * finished / max(n_files, 1))
    models.Task.objects.filter(pk=task.pk).update(progress=progress)


def _job_outcomes(task_status: str, rng) -> list[str]:
    if task_status == "done":
        return ["finished"] * 8
    if task_status in ("finished", "exhausted"):
        return ["finished"] * 5 + ["failed"] * 3
    if task_status == "aborted":
        return ["closed"] * 3
    return [rng.choice(["finished", "running", "running", "activated", "failed"]) for _ in range(rng.randint(5, 9))]


def _queue_near(nucleus, queues, rng):
    local = [queue for queue in queues if queue.site.name == nucleus]
    return rng.choice(local or queues)


def _job_reason(step: str) -> str:
    return {
        "assigned": "job brokerage chose the queue",
        "activated": "input files available",
        "failed": "pilot reported an error",
        "closed": "task aborted",
    }.get(step, "")
