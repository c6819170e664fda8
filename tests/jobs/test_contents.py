"""What DDM holds of a task's input, fed into its files (brokerage/services/contents.py): open and empty datasets
pending, grown datasets updated, files missing at the task's nucleus, resubmission with new parameters (incexec).
Worked numbers on the one-queue grid (tests/jobs/conftest.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import (
    Dataset,
    DatasetFile,
    DatasetReplica,
    DatasetStatusLog,
    StorageEndpoint,
    Task,
    TaskStatusLog,
)
from brokerage.services.progress import task_refine
from brokerage.services.task_commands import TaskCommandRefused, task_incexec
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def replicas(dataset, **files_at):
    """The dataset's replicas: endpoint name → files it holds."""
    for name, files in files_at.items():
        DatasetReplica.objects.update_or_create(
            datasetName=dataset.datasetName,
            endpoint=StorageEndpoint.objects.get(name=name),
            defaults={"nFiles": files, "sizeGB": 2.0 * files},
        )


def test_an_open_empty_input_holds_its_task_pending_until_ddm_lists_files(grid):
    task = factories.TaskFactory(status="defined", nucleus="NUC", prodSourceLabel="managed")
    dataset = factories.DatasetFactory(task=task, type="input", status="defined", state="open", nFiles=0, nEvents=0)
    moved = task_refine(now=NOW)
    assert moved["pending"] == [task.pk]
    task.refresh_from_db()
    dataset.refresh_from_db()
    assert (task.status, dataset.status) == ("pending", "pending")
    assert task.errorDialog == f"input dataset {dataset.datasetName} is open and still empty: waiting for its files"
    assert task_refine(now=NOW + timedelta(minutes=1)).get("toupdate") is None  # still nothing in DDM
    # DDM lists 3 files, all at the nucleus: pending → toupdate → ready with 3 files; the task back to defined,
    # then ready in the same round (its nucleus is preset)
    replicas(dataset, NUC_DATADISK=3)
    moved = task_refine(now=NOW + timedelta(minutes=2))
    assert (moved["toupdate"], moved["fed"]) == ([dataset.pk], [dataset.pk])
    dataset.refresh_from_db()
    task.refresh_from_db()
    assert (dataset.status, dataset.nFiles, task.status, task.errorDialog) == ("ready", 3, "ready", "")
    assert sorted(DatasetFile.objects.filter(dataset=dataset).values_list("lfn", "status")) == [
        (f"{dataset.datasetName}._{n:06d}.pool.root.1", "ready") for n in range(3)
    ]
    assert list(DatasetStatusLog.objects.filter(dataset=dataset).values_list("new_status", flat=True)) == [
        "pending", "toupdate", "ready"
    ]  # fmt: skip


def test_files_listed_by_ddm_but_not_at_the_nucleus_are_missing_until_replicated_there(grid, work_queue, ready_task):
    # a running task at nucleus NUC whose open input grows from 4 to 6 files, at SAT only at first
    task = ready_task(work_queue, files=4, status="running")
    dataset = Dataset.objects.get(task=task)
    Dataset.objects.filter(pk=dataset.pk).update(state="open")
    replicas(dataset, NUC_DATADISK=4, SAT_DATADISK=6)
    moved = task_refine(now=NOW)
    assert moved["fed"] == [dataset.pk]
    files = list(DatasetFile.objects.filter(dataset=dataset).order_by("pk").values_list("status", flat=True))
    assert files == ["ready"] * 4 + ["missing"] * 2  # "missing in the cloud/site where the task is assigned"
    dataset.refresh_from_db()
    assert (dataset.status, dataset.nFiles) == ("ready", 6)
    assert task_refine(now=NOW + timedelta(minutes=1)).get("missing → ready") is None
    replicas(dataset, NUC_DATADISK=5)  # one more at the nucleus: the fifth file is found, the sixth still missing
    assert len(task_refine(now=NOW + timedelta(minutes=2))["missing → ready"]) == 1
    files = list(DatasetFile.objects.filter(dataset=dataset).order_by("pk").values_list("status", flat=True))
    assert files == ["ready"] * 5 + ["missing"]
    # the nucleus's replica shrinks to 3: the fourth and fifth files, ready before, are lost; back at 6, every file
    # is ready again (lost-file recovery)
    replicas(dataset, NUC_DATADISK=3)
    assert len(task_refine(now=NOW + timedelta(minutes=3))["ready → lost"]) == 2
    files = list(DatasetFile.objects.filter(dataset=dataset).order_by("pk").values_list("status", flat=True))
    assert files == ["ready"] * 3 + ["lost"] * 2 + ["missing"]
    # a lost file counts as failed in its dataset's counters, at once (the integrity check found them drift)
    assert Dataset.objects.get(pk=dataset.pk).nFilesFailed == 2
    replicas(dataset, NUC_DATADISK=6)
    moved = task_refine(now=NOW + timedelta(minutes=4))
    assert (len(moved["lost → ready"]), len(moved["missing → ready"])) == (2, 1)
    assert set(DatasetFile.objects.filter(dataset=dataset).values_list("status", flat=True)) == {"ready"}
    assert Dataset.objects.get(pk=dataset.pk).nFilesFailed == 0


def test_a_done_task_resubmitted_with_new_parameters_takes_the_files_ddm_added(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=4, status="done", nFilesPerJob=1)
    dataset = Dataset.objects.get(task=task)
    Dataset.objects.filter(pk=dataset.pk).update(status="done", nFilesFinished=4, nFilesUsed=4)
    DatasetFile.objects.filter(dataset=dataset).update(status="finished")
    replicas(dataset, NUC_DATADISK=6)  # DDM holds two files more than the task was given
    said = task_incexec(task_id=task.pk, params={"nFilesPerJob": 2, "transUses": "Athena-99"}, actor="eva", now=NOW)
    assert said == "resubmitted with new parameters: nFilesPerJob=2, transUses=Athena-99"
    task.refresh_from_db()
    assert task.status == "toincexec"
    moved = task_refine(now=NOW + timedelta(minutes=1))
    # toincexec → rerefine puts the dataset to update itself: the feeder feeds it in the same round
    assert (moved["rerefine"], moved["fed"], moved["resumed"]) == ([task.pk], [dataset.pk], [task.pk])
    task.refresh_from_db()
    dataset.refresh_from_db()
    # seed 002: nFilesPerJob may change on resubmission, the release may not
    assert (task.taskParams["nFilesPerJob"], "transUses" in task.taskParams, "incexecParams" in task.taskParams) == (
        2, False, False
    )  # fmt: skip
    assert (task.status, dataset.status, dataset.nFiles) == ("running", "ready", 6)  # four finished before
    assert DatasetFile.objects.filter(dataset=dataset, status="ready").count() == 2
    reasons = dict(TaskStatusLog.objects.filter(task=task).values_list("new_status", "reason"))
    assert reasons["rerefine"] == "nFilesPerJob=2; not changed on resubmission: transUses"
    with pytest.raises(TaskCommandRefused, match="is running: only done, failed or finished tasks are resubmitted"):
        task_incexec(task_id=task.pk, params={"nFilesPerJob": 3}, actor="eva", now=NOW)
    assert Task.objects.get(pk=task.pk).status == "running"


def test_a_resubmission_gives_failed_files_new_attempts_and_keeps_the_counters_true(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=3, status="failed")
    dataset = Dataset.objects.get(task=task)
    DatasetFile.objects.filter(dataset=dataset).update(status="failed", attemptNr=3)
    Dataset.objects.filter(pk=dataset.pk).update(status="done", nFilesFailed=3, nFilesUsed=3)
    task_incexec(task_id=task.pk, params={"nFilesPerJob": 3}, actor="eva", now=NOW)
    task_refine(now=NOW + timedelta(minutes=1))
    dataset.refresh_from_db()
    # three new attempts each (maxAttempt 3 + 3), none failed any more
    assert set(DatasetFile.objects.filter(dataset=dataset).values_list("status", "maxAttempt")) == {("ready", 6)}
    assert (dataset.nFilesFailed, dataset.nFilesUsed) == (0, 0)
