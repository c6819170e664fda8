"""Fixtures of the job tests: a one-queue grid, a work queue, and ready tasks with files and replicas."""

import pytest

from brokerage.models import DatasetFile, StorageEndpoint
from tests import factories

GB = 1024**3


@pytest.fixture
def work_queue():
    return factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)


def make_one_queue_grid():
    """Nucleus NUC and satellite SAT, one online 8-core queue at SAT reading and writing SAT_DATADISK."""
    nucleus = factories.NucleusFactory(name="NUC")
    satellite = factories.SiteFactory(name="SAT")
    factories.StorageEndpointFactory(name="NUC_DATADISK", site=nucleus, space_total=1e6, space_free=5e5)
    disk = factories.StorageEndpointFactory(name="SAT_DATADISK", site=satellite, space_total=1e6, space_free=5e5)
    queue = factories.PandaQueueFactory(name="SAT_Q", site=satellite, corecount=8, maxrss=64000, releases=["ANY"])
    for role in ("read_lan", "write_lan"):
        factories.QueueStorageFactory(queue=queue, endpoint=disk, role=role)
    factories.NetworkLinkFactory(src=satellite, dst=nucleus, closeness=2, mbps_1h=150, queued=10)
    return queue


@pytest.fixture
def grid():
    return make_one_queue_grid()


def make_ready_task(work_queue, *, files=30, events_per_file=500, status="ready", priority=500, **params):
    task = factories.TaskFactory(
        status=status,
        workQueue=work_queue,
        nucleus="NUC",
        coreCount=8,
        ramCount=2000,
        ramUnit="MBPerCore",
        cpuTime=300,
        cpuEfficiency=90,
        baseWalltime=600,
        ioIntensity=100,
        currentPriority=priority,
        taskPriority=priority,
        taskParams=params,
    )
    dataset = factories.DatasetFactory(task=task, type="input", status="ready", nFiles=files)
    DatasetFile.objects.bulk_create(
        DatasetFile(
            dataset=dataset,
            task=task,
            lfn=f"EVNT.{task.pk}.{i:05d}",
            type="input",
            fsize=2 * GB,
            nEvents=events_per_file,
            maxAttempt=3,
        )
        for i in range(files)
    )
    factories.DatasetReplicaFactory(
        datasetName=dataset.datasetName,
        endpoint=StorageEndpoint.objects.get(name="NUC_DATADISK"),
        nFiles=files,
        sizeGB=2.0 * files,
    )
    return task


@pytest.fixture
def ready_task():
    """Makes tasks with a master input dataset of files replicated at NUC_DATADISK (needs `grid`)."""
    return make_ready_task


def report_like_pilots(job_ids, *, end, hours, pss_mb=12000, events=1000):
    """What pilots report for jobs that ended at `end`: `hours` of 8 cores on 2 GB of input (512 MB out),
    `pss_mb` of PSS, `events` events."""
    from datetime import timedelta

    from brokerage.models import Job

    Job.objects.filter(pk__in=job_ids).update(
        startTime=end - timedelta(hours=hours),
        endTime=end,
        maxPSS=pss_mb * 1024,
        nEvents=events,
        inputFileBytes=2 * 1024**3,
        outputFileBytes=512 * 1024**2,
    )
