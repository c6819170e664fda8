"""A generated ATLAS-like grid for `demo_grid --size small|medium|large`: nuclei and satellites in clouds,
queues with varied CRIC attributes and simulated slots, storages with space, a network matrix, software tags
with releases and GPUs, work queues, a global-share tree, and production and analysis tasks of many types and
users, newly registered so that the cycles carry them through refining, task brokerage, job generation and the
grid simulator to their end. Beside them: a few small tasks written to reach failed, throttled, broken,
exhausted, finished and done within minutes (demo_stories), downtimes that end, CMS WMCore's requests and sites,
and DIRAC's jobs waiting for the pilots the simulator plays (demo_dirac).

Everything is drawn from seeded random generators and written with bulk inserts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from brokerage import models
from brokerage.services.demo import DEMO_GPU, GLOBAL_SHARES, WORK_QUEUES, _demo_global_shares, _demo_work_queues
from brokerage.services.demo_dirac import demo_dirac_build
from brokerage.services.demo_stories import STORY_GROUP_JOB_CAP, demo_stories_build
from brokerage.services.gdpconfig import gdpconfig_save


@dataclass(frozen=True)
class GridSize:
    nuclei: int
    satellites: int
    tasks: int
    files: tuple[int, int]


SIZES = {
    "small": GridSize(nuclei=4, satellites=10, tasks=40, files=(10, 40)),
    "medium": GridSize(nuclei=10, satellites=60, tasks=300, files=(20, 120)),
    "large": GridSize(nuclei=25, satellites=210, tasks=2000, files=(20, 200)),
}
CLOUDS = [
    ("US", "United States"),
    ("DE", "Germany"),
    ("UK", "United Kingdom"),
    ("FR", "France"),
    ("CA", "Canada"),
    ("IT", "Italy"),
    ("ND", "Nordic countries"),
    ("ES", "Spain"),
    ("NL", "Netherlands"),
    ("CERN", "Switzerland"),
]
RELEASES = ["Athena-24.0.30", "Athena-24.0.41", "AthGeneration-23.6.12", "AthSimulation-23.0.19"]
ARCHITECTURE = "x86_64-el9-gcc13-opt"
# (processingType, gshare, cores, share of tasks)
TASK_KINDS = [
    ("evgen", "MC 16", 1, 15),
    ("simul", "MC 16", 8, 30),
    ("pile", "MC 16", 8, 15),
    ("reprocessing", "Reprocessing", 8, 10),
    ("merge", "MC 16", 1, 10),
    ("urgent", "Express", 8, 5),
    ("panda-client", "User Analysis", 1, 15),
]
USERS = ["prodsys", "prodsys", "prodsys", "GP_Higgs", "GP_Top", "alice", "bob", "chen", "dmitri", "eva"]
GB = 1024**3
GRID_MINUTE_SECONDS = 60

Progress = Callable[[str, int, int], None]
# what users call their analyses (a task name user.<nickname>.<what>.<version>, as panda-client users write them)
ANALYSES = ["ttbar_xsec", "hmumu_fit", "dijet_scan", "susy_1lep", "wz_polar", "jet_calib"]


def _task_name(index: int, processing_type: str, user: str, analysis: bool) -> str:
    """A production task is named after its dataset (mc23_13p6TeV.<DSID>.<step>…); an analysis task as users name
    theirs: user.<nickname>.<analysis>.<DSID>.v<n>."""
    if analysis:
        return f"user.{user}.{ANALYSES[index % len(ANALYSES)]}.{801000 + index}.v{index % 4 + 1}"
    return f"mc23_13p6TeV.{801000 + index}.{processing_type}.demo"


def _quiet(step: str, done: int, total: int) -> None:
    return None


# The demo's tasks are numbered like ATLAS's today: pbook takes an id below 10**7 for a request id
# (PBookCore.is_reqid, panda-client 2.2.0), so `pbook kill 12` would never reach task 12.
DEMO_FIRST_TASK_ID = 45_000_000


def task_ids_from(*, first: int) -> None:
    """The next task made gets an id of at least `first` (the database's own counter moved, so ids stay unique
    and increasing across processes)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('jedi_tasks', 'jediTaskID'), "
                'GREATEST(%s, (SELECT COALESCE(MAX("jediTaskID"), 0) + 1 FROM jedi_tasks)), false)',
                [first],
            )
        elif connection.vendor == "sqlite":  # AUTOINCREMENT keeps the last id in sqlite_sequence
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jedi_tasks'")
            row = cursor.fetchone()
            if row is None:
                cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('jedi_tasks', %s)", [first - 1])
            elif row[0] < first - 1:
                cursor.execute("UPDATE sqlite_sequence SET seq = %s WHERE name = 'jedi_tasks'", [first - 1])


@transaction.atomic
def demo_grid_build(*, size: str, now: datetime, seed: int = 2026, progress: Progress = _quiet) -> dict[str, int]:
    """Builds the grid; `progress(step, done, total)` is called as it goes. Returns rows per entity."""
    spec = SIZES[size]
    rng = random.Random(seed)
    steps = 7
    progress("sites", 0, steps)
    sites = _sites(spec, rng)
    progress("storages", 1, steps)
    endpoints = _storages(sites, now, rng)
    progress("queues", 2, steps)
    queues = _queues(sites, endpoints, now, rng)
    progress("network", 3, steps)
    _network(sites, now, rng)
    progress("software", 4, steps)
    _software(queues, now, rng)
    progress("shares", 5, steps)
    work_queues = _demo_work_queues()
    _demo_global_shares(work_queues)
    progress("tasks", 6, steps)
    task_ids_from(first=DEMO_FIRST_TASK_ID)
    _tasks(spec, endpoints, now, rng)
    gdpconfig_save(key="DISK_THRESHOLD_Express", value="50", comment="demo: Express tasks need less room")
    gdpconfig_save(
        key="CAP_RUNNING_GROUP_JOBS", value=str(STORY_GROUP_JOB_CAP), comment="demo: a group story's jobs throttled"
    )
    # the jumbo story's task has a few thousand events, not the millions of a real one: it keeps its jumbo jobs
    # until fewer than 100 are left (JUMBO_MIN_EVENTS_ENABLE then 1,000, JUMBO_MAX_EVENTS 500)
    gdpconfig_save(key="JUMBO_MIN_EVENTS_DISABLE", value="100", comment="demo: tasks of thousands of events")
    _wmcore(now, rng)
    # what keeps the demo moving draws from its own generator, so the grid above stays what it was for a seed
    life = random.Random(seed + 1)
    nuclei = [endpoint for endpoint in endpoints.values() if endpoint.site.role == "nucleus"]
    demo_stories_build(nuclei=nuclei, architecture=ARCHITECTURE, release=RELEASES[1], now=now)
    _downtimes(queues, now, life)
    demo_dirac_build(now=now, rng=life)
    progress("done", steps, steps)
    return {
        "sites": models.Site.objects.count(),
        "queues": models.PandaQueue.objects.count(),
        "endpoints": models.StorageEndpoint.objects.count(),
        "network links": models.NetworkLink.objects.count(),
        "work queues": models.WorkQueue.objects.count(),
        "global shares": models.GlobalShare.objects.count(),
        "tasks": models.Task.objects.count(),
        "files": models.DatasetFile.objects.count(),
        "WMCore requests": models.WMCoreRequest.objects.count(),
        "DIRAC jobs": models.DiracJob.objects.count(),
    }


# CMS sites of the WMCore demo: (name, pending slots, running slots); CERN drains.
CMS_SITES = [
    ("T1_US_FNAL", 400, 1200),
    ("T1_DE_KIT", 200, 600),
    ("T1_IT_CNAF", 200, 600),
    ("T1_FR_CCIN2P3", 150, 450),
    ("T1_UK_RAL", 150, 450),
    ("T2_CH_CERN", 200, 600),
    ("T2_DE_DESY", 100, 300),
    ("T2_US_Wisconsin", 100, 300),
    ("T2_US_Nebraska", 100, 300),
    ("T2_IT_Pisa", 50, 150),
    ("T2_ES_CIEMAT", 50, 150),
]
CMS_REQUESTS = [
    # name, priority, input dataset (None: Monte Carlo), whitelist, blacklist, pileup, trust lists
    (
        "pdmvserv_Run2024C_JetHT_ReReco",
        200000,
        "/JetHT/Run2024C-v1/RAW",
        ["T1_US_FNAL", "T1_DE_KIT", "T2_DE_DESY"],
        [],
        "",
        False,
    ),
    (
        "pdmvserv_Run2024D_Muon_ReReco",
        250000,
        "/Muon/Run2024D-v1/RAW",
        ["T1_US_FNAL", "T1_IT_CNAF", "T2_IT_Pisa"],
        [],
        "",
        False,
    ),
    ("pdmvserv_Run2024C_ZeroBias_ReReco", 150000, "/ZeroBias/Run2024C-v1/RAW", ["T2_CH_CERN"], [], "", False),
    (
        "cmsunified_Run3Summer24_DYto2L_MC",
        110000,
        None,
        ["T1_FR_CCIN2P3", "T1_UK_RAL", "T2_US_Wisconsin", "T2_US_Nebraska"],
        [],
        "/Neutrino_E-10_gun/Run3Summer24PrePremix/PREMIX",
        False,
    ),
    (
        "cmsunified_Run3Summer24_TTto2L_MC",
        120000,
        None,
        ["T2_US_Wisconsin", "T2_US_Nebraska", "T2_ES_CIEMAT"],
        [],
        "/MinBias_TuneCP5/Run3Summer24GS/GEN-SIM",
        False,
    ),
    (
        "pdmvserv_Run2024B_EGamma_ReReco",
        180000,
        "/EGamma/Run2024B-v1/RAW",
        ["T1_DE_KIT", "T1_IT_CNAF"],
        ["T1_DE_KIT"],
        "",
        False,
    ),
    (
        "pdmvserv_Run2024E_Tau_xrootd",
        160000,
        "/Tau/Run2024E-v1/RAW",
        ["T2_US_Wisconsin", "T2_US_Nebraska"],
        [],
        "",
        True,
    ),
]


def _wmcore(now: datetime, rng: random.Random) -> None:
    """CMS WMCore's side of the demo (seed 004): a global queue, two agents with thresholds over eleven sites
    (CERN draining), input blocks and pileup with their replicas, seven assigned requests — some flow, some wait
    (data only at draining CERN, pileup nowhere in the whitelist, data at a blacklisted site)."""
    global_queue = models.WMCoreQueue.objects.create(name="cmsweb.cern.ch/workqueue", kind="global")
    for agent in ("vocms0253.cern.ch", "cmsgwms-submit6.fnal.gov"):
        local = models.WMCoreQueue.objects.create(name=agent, kind="local", parent=global_queue)
        for name, pending, running in CMS_SITES:
            site = models.WMCoreSite.objects.create(
                queue=local,
                name=name,
                state="Draining" if name == "T2_CH_CERN" else "Normal",
                pending_slots=pending // 2,
                running_slots=running // 2,
            )
            models.WMCoreSiteThreshold.objects.bulk_create(
                models.WMCoreSiteThreshold(
                    site=site,
                    task_type=task_type,
                    pending_slots=pending // share,
                    max_slots=running // share,
                )
                for task_type, share in (
                    ("Processing", 2),
                    ("Production", 2),
                    ("Merge", 8),
                    ("Cleanup", 20),
                    ("LogCollect", 20),
                )
            )
    blocks = []
    for _, _, dataset, whitelist, _, pileup, _ in CMS_REQUESTS:
        if dataset:
            for index in range(rng.randint(6, 12)):
                holders = rng.sample(whitelist, min(len(whitelist), rng.randint(1, 2)))
                if dataset.startswith("/EGamma"):
                    holders = ["T1_DE_KIT"]  # blacklisted by its request: the elements wait
                if dataset.startswith("/Tau"):
                    holders = ["T1_UK_RAL"]  # outside the whitelist, read over xrootd
                blocks.append(
                    models.WMCoreBlock(
                        name=f"{dataset}#{index:04x}{rng.randrange(16**8):08x}",
                        dataset=dataset,
                        files=rng.randint(20, 200),
                        sites=holders,
                        updated=now,
                    )
                )
        if pileup:
            sites = ["T2_IT_Pisa"] if "MinBias" in pileup else ["T1_FR_CCIN2P3", "T2_US_Wisconsin"]
            blocks.append(
                models.WMCoreBlock(name=f"{pileup}#0001", dataset=pileup, files=1000, sites=sites, updated=now)
            )
    models.WMCoreBlock.objects.bulk_create(blocks)
    models.WMCoreRequest.objects.bulk_create(
        models.WMCoreRequest(
            RequestName=name,
            RequestStatus="assigned",
            RequestType="ReReco" if dataset else "MonteCarlo",
            RequestPriority=priority,
            Team="production",
            TaskType="Processing" if dataset else "Production",
            InputDataset=dataset or "",
            MCPileup=pileup,
            FilesPerJob=5,
            TotalJobs=0 if dataset else rng.randint(1500, 4000),
            JobsPerElement=400,
            SiteWhitelist=whitelist,
            SiteBlacklist=blacklist,
            TrustSitelists=trust,
            created=now,
            status_time=now,
        )
        for name, priority, dataset, whitelist, blacklist, pileup, trust in CMS_REQUESTS
    )


def _sites(spec: GridSize, rng: random.Random) -> list[models.Site]:
    rows = []
    # CERN-PROD, the Tier-0, is in Switzerland in cloud CERN; the Tier-1s follow the other clouds
    others = [item for item in CLOUDS if item[0] != "CERN"]
    for index in range(spec.nuclei):
        cloud, country = ("CERN", "Switzerland") if index == 0 else others[(index - 1) % len(others)]
        rows.append(
            models.Site(
                name=f"{cloud}-T1-{index:02d}" if index else "CERN-PROD",
                role="nucleus",
                tier_level=0 if index == 0 else 1,
                cloud=cloud,
                country=country,
                bareNucleus="allow" if index == 0 else "",
            )
        )
    for index in range(spec.satellites):
        cloud, country = CLOUDS[rng.randrange(len(CLOUDS))]
        rows.append(
            models.Site(name=f"{cloud}-T2-{index:03d}", role="satellite", tier_level=2, cloud=cloud, country=country)
        )
    return models.Site.objects.bulk_create(rows)


def _storages(sites, now, rng) -> dict[str, models.StorageEndpoint]:
    rows = []
    for site in sites:
        total_tb = rng.uniform(8000, 20000) if site.role == "nucleus" else rng.uniform(800, 4000)
        free = rng.uniform(0.05, 0.45)
        full_wan_off = rng.random() < 0.05
        rows.append(
            models.StorageEndpoint(
                name=f"{site.name}_DATADISK",
                site=site,
                type="DATADISK",
                space_total=total_tb * 1024,
                space_free=total_tb * 1024 * free,
                space_used=total_tb * 1024 * (1 - free),
                space_expired=total_tb * 1024 * rng.uniform(0, 0.05),
                detailed_status={
                    "read_lan": "ON",
                    "write_lan": "ON",
                    "read_wan": "ON",
                    "write_wan": "OFF" if full_wan_off else "ON",
                },
                updated=now,
            )
        )
    created = models.StorageEndpoint.objects.bulk_create(rows)
    return {endpoint.site.name: endpoint for endpoint in created}


# the name of the demo's queue taking jumbo jobs (its nucleus's name and this), and its memory: more than any other
# demo queue's, so the jumbo story's task fits there only
JUMBO_QUEUE_SUFFIX = "_JUMBO"
JUMBO_QUEUE_MAXRSS = 64000


def _queues(sites, endpoints, now, rng) -> list[models.PandaQueue]:
    rows = []
    for site in sites:
        kinds = [("", "unified", 8)]
        if site.role == "nucleus" or rng.random() < 0.5:
            kinds.append(("_SCORE", "production", 1))
        if rng.random() < 0.6:
            kinds.append(("_ANALY", "analysis", 1))
        if rng.random() < 0.1:
            kinds.append(("_GPU", "analysis", 1))
        for suffix, queue_type, cores in kinds:
            status = rng.choices(["online", "brokeroff", "test", "offline"], weights=[88, 4, 4, 4])[0]
            maxrss = cores * rng.choice([2000, 2500, 3000, 4000])
            maxtime = rng.choice([86400, 172800, 259200])
            pledged = -1 if rng.random() < 0.08 else None
            record = {
                "name": site.name + suffix,
                "atlas_site": site.name,
                "status": status,
                "type": queue_type,
                "corecount": cores,
                "maxrss": maxrss,
                "maxtime": maxtime,
                "maxwdir": 20000 * cores,
                "releases": ["ANY"],
                "pledgedcpu": pledged,
                "wnconnectivity": "full#IPv4",
                "corepower": round(rng.uniform(8, 14), 1),
                "cloud": site.cloud,
                # CRIC's shapes (../shared/fixtures/cric/queuedata_CERN.json, issue 49): catchall keys no broker
                # reads, params, and the nulls CRIC writes
                "catchall": rng.choice(["", "", "zip_time_gap=7200", "jobseed=all,es_to_zip"]),
                "params": {"pilot_manager": "Harvester"} if rng.random() < 0.5 else {},
                "transferringlimit": None,
                "maxdiskio": None,
                "demo_slots": rng.choice([10, 20, 40, 80]) * (2 if site.role == "nucleus" else 1),
                "demo_failure_percent": rng.choice([3, 5, 8, 12, 25]),
            }
            rows.append(
                models.PandaQueue(
                    name=record["name"],
                    site=site,
                    status=status,
                    type=queue_type,
                    corecount=cores,
                    maxrss=maxrss,
                    maxtime=maxtime,
                    maxwdir=record["maxwdir"],
                    releases=["ANY"],
                    pledgedcpu=pledged,
                    wnconnectivity="full#IPv4",
                    corepower=record["corepower"],
                    cloud=site.cloud,
                    catchall=record["catchall"],
                    cric=record,
                    updated=now,
                    transtimehi=2,
                    transtimelo=3,
                )
            )
    # one queue taking jumbo jobs (CRIC catchall useJumboJobs) at the first nucleus, running event service
    # (jobseed all): the jumbo-job story's (demo_stories); made without drawing, so the grid stays its seed's
    nucleus = next(site for site in sites if site.role == "nucleus")
    record = {
        **next(row.cric for row in rows if row.name == nucleus.name),
        "name": nucleus.name + JUMBO_QUEUE_SUFFIX,
        "status": "online",
        "type": "production",
        "catchall": "useJumboJobs",
        "jobseed": "all",
        "corecount": 8,
        "maxrss": JUMBO_QUEUE_MAXRSS,
        "demo_slots": 160,  # room for the stories' 8-core jobs at once: waiting, they would hold other shares back
        "demo_failure_percent": 0,
    }
    rows.append(
        models.PandaQueue(
            name=record["name"], site=nucleus, status="online", type="production", corecount=record["corecount"],
            maxrss=record["maxrss"], maxtime=record["maxtime"], maxwdir=record["maxwdir"], releases=["ANY"],
            pledgedcpu=None, wnconnectivity="full#IPv4", corepower=record["corepower"], cloud=nucleus.cloud,
            catchall="useJumboJobs", jobseed="all", cric=record, updated=now, transtimehi=2, transtimelo=3,
        )
    )  # fmt: skip
    queues = models.PandaQueue.objects.bulk_create(rows)
    models.QueueStorage.objects.bulk_create(
        models.QueueStorage(queue=queue, endpoint=endpoints[queue.site.name], role=role)
        for queue in queues
        for role in ("read_lan", "write_lan")
    )
    models.GpuSummary.objects.bulk_create(
        models.GpuSummary(queue=queue, **DEMO_GPU, n_workers=8, updated=now)
        for queue in queues
        if queue.name.endswith("_GPU")
    )
    return queues


def _downtimes(queues, now, rng) -> None:
    """Half the queues that start out of service are in a downtime that ends a few minutes into the demo (the
    simulator brings them back, as CRIC would): tasks left pending for them come back and find them."""
    ending = []
    for queue in queues:
        if queue.status in ("brokeroff", "offline") and rng.random() < 0.5:
            queue.cric = {**queue.cric, "demo_back_at": (now + timedelta(minutes=rng.choice([2, 4, 6]))).isoformat()}
            ending.append(queue)
    models.PandaQueue.objects.bulk_update(ending, ["cric"])


def _network(sites, now, rng) -> None:
    nuclei = [site for site in sites if site.role == "nucleus"]
    models.NetworkLink.objects.bulk_create(
        (
            models.NetworkLink(
                src=source,
                dst=nucleus,
                closeness=1 if source.cloud == nucleus.cloud else rng.randint(2, 11),
                mbps_1h=rng.choice([None, round(rng.uniform(5, 500), 1)]),
                mbps_1d=round(rng.uniform(5, 400), 1),
                mbps_1w=round(rng.uniform(5, 300), 1),
                queued=rng.choice([rng.randint(0, 60), rng.randint(0, 60), rng.randint(0, 60), rng.randint(100, 400)]),
                updated=now,
            )
            for source in sites
            for nucleus in nuclei
            if source != nucleus
        ),
        batch_size=2000,
    )


def _software(queues, now, rng) -> None:
    tags = [
        {
            "cmtconfig": ARCHITECTURE,
            "container_name": "",
            "project": release.split("-")[0],
            "release": release.split("-")[1],
            "sources": [],
            "tag": f"VO-atlas-{release}-{ARCHITECTURE}",
        }
        for release in RELEASES
    ]
    rows = []
    for queue in queues:
        architectures = [{"arch": ["x86_64"], "instr": ["avx2"], "type": "cpu", "vendor": ["intel", "amd"]}]
        if queue.name.endswith("_GPU"):
            architectures.append({"type": "gpu", "vendor": ["nvidia", "excl"], "model": ["A100"]})
        rows.append(
            models.SoftwareTags(
                name=queue.name,
                queue=queue,
                updated=now,
                data={
                    "cmtconfigs": [ARCHITECTURE],
                    "containers": ["any", "/cvmfs"],
                    "cvmfs": ["atlas"],
                    "architectures": architectures,
                    "tags": rng.sample(tags, k=rng.randint(2, len(tags))),
                },
            )
        )
    rows.append(models.SoftwareTags(name=models.SoftwareTags.ALL, updated=now, data={"containers": {}}))
    models.SoftwareTags.objects.bulk_create(rows)


def _tasks(spec: GridSize, endpoints, now, rng) -> None:
    nuclei = [endpoint for endpoint in endpoints.values() if endpoint.site.role == "nucleus"]
    demo_tasks_register(count=spec.tasks, files=spec.files, nuclei=nuclei, now=now, rng=rng)


def demo_tasks_register(
    *, count: int, files: tuple[int, int], nuclei: list, now: datetime, rng: random.Random, first: int = 0
) -> list[models.Task]:
    """Registers `count` production and analysis tasks of the demo's kinds, numbered from `first`, with their
    input datasets, files and replicas at one or two of the `nuclei` (storage endpoints)."""
    kinds = [kind for kind in TASK_KINDS for _ in range(kind[3])]
    tasks = []
    for index in range(first, first + count):
        processing_type, gshare, cores, _ = rng.choice(kinds)
        analysis = processing_type == "panda-client"
        user = rng.choice(USERS[5:]) if analysis else rng.choice(USERS[:5])
        params = {"maxAttempt": 3, "ipConnectivity": "full#IPv4", "nScoutJobs": rng.choice([0, 5, 10])}
        splitting = rng.random()
        if splitting < 0.15 and processing_type in ("simul", "evgen"):
            params["nEventsPerJob"] = rng.choice([200, 500, 1000])
        elif splitting < 0.35:
            params["nGBPerJob"] = rng.choice([10, 20])
        else:
            params["nFilesPerJob"] = rng.choice([1, 1, 2, 5])
        priority = 1000 if processing_type == "urgent" else rng.choice([300, 450, 500, 600, 700, 900])
        tasks.append(
            models.Task(
                taskName=_task_name(index, processing_type, user, analysis),
                status="registered",
                processingType=processing_type,
                prodSourceLabel="user" if analysis else "managed",
                gshare=gshare,
                userName=user,
                workingGroup=user if user.startswith("GP_") else "",
                taskPriority=priority,
                currentPriority=priority,
                coreCount=cores,
                ramCount=rng.choice([1500, 2000, 2000, 2400]),
                ramUnit="MBPerCore",
                baseRamCount=1000,
                cpuTime=rng.choice([60, 120, 300, 600]),
                cpuEfficiency=90,
                baseWalltime=600,
                ioIntensity=rng.choice([50, 150, 600]),
                transUses=rng.choice(RELEASES),
                architecture=ARCHITECTURE,
                creationDate=now,
                modificationTime=now,
                taskParams=params,
            )
        )
    tasks = models.Task.objects.bulk_create(tasks)
    datasets = models.Dataset.objects.bulk_create(
        models.Dataset(
            task=task,
            datasetName=f"mc23_13p6TeV.{task.taskName.split('.')[1]}.EVNT.{task.pk}",
            type="input",
            status="defined",
            nFiles=rng.randint(*files),
        )
        for task in tasks
    )
    files, replicas, total_events = [], [], {}
    for dataset in datasets:
        events = rng.choice([1000, 2000, 5000])
        total_events[dataset.pk] = events * dataset.nFiles
        for number in range(dataset.nFiles):
            files.append(
                models.DatasetFile(
                    dataset=dataset,
                    task_id=dataset.task_id,
                    type="input",
                    status="ready",
                    lfn=f"EVNT.{dataset.pk}._{number:06d}.pool.root.1",
                    fsize=rng.randint(1, 4) * GB,
                    nEvents=events,
                    maxAttempt=3,
                )
            )
        for endpoint in rng.sample(nuclei, k=min(len(nuclei), rng.choice([1, 1, 2]))):
            replicas.append(
                models.DatasetReplica(
                    datasetName=dataset.datasetName,
                    endpoint=endpoint,
                    nFiles=dataset.nFiles,
                    sizeGB=2.5 * dataset.nFiles,
                )
            )
    models.DatasetFile.objects.bulk_create(files, batch_size=2000)
    models.DatasetReplica.objects.bulk_create(replicas, batch_size=2000)
    models.Dataset.objects.bulk_update(
        [models.Dataset(pk=d.pk, nEvents=total_events[d.pk], nEventsUsed=0) for d in datasets],
        ["nEvents", "nEventsUsed"],
    )
    return tasks


__all__ = ["GLOBAL_SHARES", "SIZES", "WORK_QUEUES", "demo_grid_build", "demo_tasks_register"]
