"""Invariants held by the database itself (Meta.constraints): a bad row never gets in, whatever wrote it."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction

from brokerage import models
from tests import factories

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def refused(build):
    with pytest.raises(IntegrityError), transaction.atomic():
        build()


def test_task_invariants():
    refused(lambda: factories.TaskFactory(status="runing"))
    refused(lambda: factories.TaskFactory(progress=101))
    refused(lambda: factories.TaskFactory(lockedBy="worker-1", lockedTime=None))
    refused(lambda: factories.TaskFactory(lockedBy="", lockedTime=T0))
    refused(lambda: factories.TaskFactory(startTime=T0, endTime=T0 - timedelta(seconds=1)))
    task = factories.TaskFactory()
    refused(lambda: models.Task.objects.filter(pk=task.pk).update(parent=task.pk))


def test_dataset_status_must_fit_its_type():
    refused(lambda: factories.DatasetFactory(type="input", status="running"))  # an output-only status
    refused(lambda: factories.DatasetFactory(type="output", status="toupdate"))  # an input-only status
    factories.DatasetFactory(type="output", status="running")


def test_only_inputs_have_a_master_and_counters_stay_within_total():
    master = factories.DatasetFactory(type="input")
    refused(lambda: factories.DatasetFactory(type="output", master=master, task=master.task))
    refused(lambda: factories.DatasetFactory(nFiles=5, nFilesFinished=6))
    secondary = factories.DatasetFactory(type="input", master=master, task=master.task)
    assert master.is_master
    assert not secondary.is_master


def test_file_attempts_and_event_ranges():
    refused(lambda: factories.DatasetFileFactory(attemptNr=4, maxAttempt=3))
    refused(lambda: factories.DatasetFileFactory(startEvent=10, endEvent=5))
    refused(lambda: factories.EventFactory(def_min_eventID=100, def_max_eventID=99))
    event = factories.EventFactory()
    refused(
        lambda: factories.EventFactory(
            file=event.file, PandaID=event.PandaID, job_processID=event.job_processID, attemptNr=event.attemptNr
        )
    )


def test_job_invariants():
    refused(lambda: factories.JobFactory(jobStatus="done"))  # a task status, not a job status
    refused(lambda: factories.JobFactory(attemptNr=0))
    refused(lambda: factories.JobRetryHistoryFactory(oldPandaID=7, newPandaID=7))


def test_queue_invariants():
    refused(lambda: factories.PandaQueueFactory(maxrss=2000, minrss=4000))
    refused(lambda: factories.PandaQueueFactory(maxtime=3600, mintime=7200))
    refused(lambda: factories.PandaQueueFactory(pledgedcpu=-2))
    refused(lambda: factories.PandaQueueFactory(status="up"))
    factories.PandaQueueFactory(maxrss=0, minrss=4000)  # maxrss 0 = no upper limit


def test_site_storage_network_invariants():
    refused(lambda: factories.SiteFactory(role="satellite", bareNucleus="only"))
    refused(lambda: factories.SiteFactory(tier_level=4))
    refused(lambda: factories.StorageEndpointFactory(space_free=-1))
    refused(lambda: factories.NetworkLinkFactory(closeness=12))
    refused(lambda: factories.NetworkLinkFactory(mbps_1h=-5))
    link = factories.NetworkLinkFactory(closeness=-1)  # -1 = blocked, allowed
    refused(lambda: factories.NetworkLinkFactory(src=link.src, dst=link.dst))


def test_software_tags_all_entry_has_no_queue():
    queue = factories.PandaQueueFactory()
    refused(lambda: models.SoftwareTags.objects.create(name="ALL", queue=queue))
    refused(lambda: models.SoftwareTags.objects.create(name="SOMEQUEUE", queue=None))
    models.SoftwareTags.objects.create(name="ALL", data={})


def test_work_queue_invariants():
    factories.WorkQueueFactory(queue_name="evgensimul", queue_order=10)
    refused(lambda: factories.WorkQueueFactory(queue_name="evgensimul", queue_order=11))
    refused(lambda: factories.WorkQueueFactory(queue_order=10))
    refused(lambda: factories.WorkQueueFactory(queue_share=101))
    refused(lambda: factories.WorkQueueFactory(is_partition=True, criteria="processingType IN (:p1)"))
    partition = factories.WorkQueueFactory(is_partition=True)
    refused(lambda: factories.WorkQueueFactory(is_partition=True, partition=partition))
    factories.WorkQueueFactory(partition=partition, criteria="workingGroup LIKE :p1")


def test_global_share_and_gdpconfig_and_lock_invariants():
    refused(lambda: factories.GlobalShareFactory(value=-1))
    factories.GdpConfigFactory(key="NQUEUED_SAT_CAP", vo="")
    refused(lambda: factories.GdpConfigFactory(key="NQUEUED_SAT_CAP", vo=""))
    refused(lambda: factories.GdpConfigFactory(key="X", type="float64"))
    lock = factories.ProcessLockFactory()
    refused(lambda: factories.ProcessLockFactory(workQueue=lock.workQueue, lockedBy="worker-2"))


def test_catchall_options_parse():
    queue = factories.PandaQueueFactory(catchall="bareNucleus=only, disableReassign,jobseed=all")
    assert queue.catchall_options == {"bareNucleus": "only", "disableReassign": "", "jobseed": "all"}


def test_endpoint_activity_defaults_to_on():
    endpoint = factories.StorageEndpointFactory(detailed_status={"write_wan": "off"})
    assert (endpoint.activity("write_wan"), endpoint.activity("read_wan")) == ("OFF", "ON")


def test_every_model_explains_itself():
    from django.apps import apps

    for model in apps.get_app_config("brokerage").get_models():
        # Django writes "Name(field, field, …)" into models that have no docstring of their own.
        assert not (model.__doc__ or "").startswith(f"{model.__name__}("), f"{model.__name__} has no docstring"
