"""Output and log datasets, templates and files (brokerage/outputs.py, brokerage/services/outputs.py; seed 002
"Output dataset registration", "Naming of output file", JEDI_Output_Template, the output dataset and file statuses):
registered at refining, one file per template for each job with the next serial number, files following their
jobs and merges, datasets following their tasks, a task done only once its outputs are."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage import outputs
from brokerage.models import Dataset, DatasetFile, DatasetStatusLog, Job, JobParamsTemplate, OutputTemplate, Task
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.outputs import output_datasets_follow, outputs_pending, outputs_register
from brokerage.services.progress import task_completion_check, task_refine
from brokerage.services.retries import job_inputs_after_end
from brokerage.services.status import job_status_transition_many
from tests import factories

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


# --- the rules (no database) ---


def test_default_outputs_are_named_after_the_task_and_its_step():
    specs = outputs.task_outputs(task_id=1234, task_name="mc23_13p6TeV.801234.Py8.simul/", processing_type="simul",
                                 params={})  # fmt: skip
    assert [(s.file_type, s.dataset_name, s.container_name, s.template, s.stream) for s in specs] == [
        ("output", "mc23_13p6TeV.801234.Py8.simul.HITS_tid00001234_00", "mc23_13p6TeV.801234.Py8.simul.HITS",
         "HITS.00001234._${SN}.pool.root", "OUTPUT0"),
        ("log", "mc23_13p6TeV.801234.Py8.simul.log_tid00001234_00", "mc23_13p6TeV.801234.Py8.simul.log",
         "log.00001234._${SN}.job.log.tgz", "LOG"),
    ]  # fmt: skip
    # a step the table does not name makes DAOD
    assert outputs.task_outputs(task_id=5, task_name="t", processing_type="", params={})[0].template.startswith(
        "DAOD.00000005."
    )


def test_outputs_in_jedi_task_parameters_are_taken_as_given():
    params = {
        "jobParameters": [
            {"type": "constant", "value": "--maxEvents=1000"},
            {"type": "template", "param_type": "input", "value": "inputEVNTFile=${IN}", "dataset": "mc23.EVNT"},
            {"type": "template", "param_type": "output", "value": "outputHITSFile=HITS.$JEDITASKID._${SN/P}.pool.root",
             "dataset": "mc23.HITS_tid00000077_00/", "container": "mc23.HITS/"},
            {"type": "template", "param_type": "output", "value": "user.x.$JEDITASKID._${SN}.hist.root",
             "dataset": "user.x.hist/"},
        ],
        "log": {"type": "template", "param_type": "log", "value": "log.$JEDITASKID._${SN}.job.log.tgz.1",
                "dataset": "mc23.log_tid00000077_00"},
    }  # fmt: skip
    specs = outputs.task_outputs(task_id=77, task_name="mc23", processing_type="simul", params=params)
    assert [(s.dataset_name, s.container_name, s.template, s.stream) for s in specs] == [
        ("mc23.HITS_tid00000077_00", "mc23.HITS", "HITS.77._${SN/P}.pool.root", "OUTPUT0"),
        ("user.x.hist", "", "user.x.77._${SN}.hist.root", "OUTPUT1"),
        ("mc23.log_tid00000077_00", "mc23.log", "log.77._${SN}.job.log.tgz.1", "LOG"),
    ]
    assert outputs.job_params_template(params) == (
        "--maxEvents=1000 inputEVNTFile=${IN} outputHITSFile=${OUTPUT0} ${OUTPUT1}"
    )
    # JediDBProxy (1.0.4): ${SN} and ${SN/P} are six digits
    assert outputs.file_name("HITS.77._${SN/P}.pool.root", 12) == "HITS.77._000012.pool.root"
    assert outputs.file_name("log.77._${SN}.job.log.tgz.1", 1_234_567) == "log.77._1234567.job.log.tgz.1"
    # a placeholder the job has no value for stays, for the shifter to see
    assert outputs.job_parameters("--in=${IN} --seed=${RNDMSEED}", {"IN": "a,b"}) == "--in=a,b --seed=${RNDMSEED}"


def test_every_file_move_a_job_makes_is_one_the_output_file_machine_allows():
    from brokerage.states import JOB, OUTPUT_FILE

    for job_status, (sources, target) in outputs.FILE_FOLLOWS_JOB.items():
        assert job_status in JOB.statuses
        for source in sources:
            assert OUTPUT_FILE.is_allowed(source, target), (job_status, source, target)
    assert OUTPUT_FILE.is_allowed(*outputs.MERGE_TAKES[0], outputs.MERGE_TAKES[1])


# --- over the database ---

pytestmark_db = pytest.mark.django_db


def generate(work_queue, now=NOW):
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=now)
    return list(Job.objects.filter(isMerge=False).order_by("pk"))


def files_of(job):
    return list(
        DatasetFile.objects.filter(outPandaID=job.pk).order_by("type", "pk").values_list("type", "lfn", "status")
    )


@pytestmark_db
def test_a_refined_task_registers_its_outputs_and_each_job_takes_the_next_serial_numbers(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=3, nFilesPerJob=1, nScoutJobs=0)
    Task.objects.filter(pk=task.pk).update(taskName="mc23.801.simul", processingType="simul")
    assert outputs_register(task_ids=[task.pk], now=NOW) == 2
    assert outputs_register(task_ids=[task.pk], now=NOW) == 0  # once
    datasets = {d.type: d for d in Dataset.objects.filter(task=task, type__in=("output", "log"))}
    assert {t: (d.status, d.datasetName) for t, d in datasets.items()} == {
        "output": ("defined", f"mc23.801.simul.HITS_tid{task.pk:08d}_00"),
        "log": ("defined", f"mc23.801.simul.log_tid{task.pk:08d}_00"),
    }
    assert datasets["output"].provenanceID == Dataset.objects.get(task=task, type="input").pk
    assert JobParamsTemplate.objects.get(task=task).jobParamsTemplate == outputs.DEFAULT_JOB_PARAMS

    jobs = generate(work_queue)
    assert len(jobs) == 3
    # three jobs, two templates: six files, serial numbers 1..3 each, defined
    tid = f"{task.pk:08d}"
    assert [files_of(job) for job in jobs] == [
        [
            ("log", f"log.{tid}._00000{n}.job.log.tgz", "defined"),
            ("output", f"HITS.{tid}._00000{n}.pool.root", "defined"),
        ]
        for n in (1, 2, 3)
    ]  # fmt: skip
    # the first job's parameters: its task's template filled in (no random seed: the task has no seed dataset)
    from brokerage.selectors.jobs import job_input_files, job_output_files, job_parameters

    first = jobs[0]
    inputs, made = job_input_files(job_ids=[first.pk])[first.pk], job_output_files(job_id=first.pk)
    assert job_parameters(job=first, inputs=inputs, outputs=made) == (
        f"--inputFile={inputs[0]['lfn']} --outputFile=HITS.{tid}._000001.pool.root --randomSeed=${{RNDMSEED}} "
        "--skipEvents=0 --maxEvents=500"
    )
    assert sorted(OutputTemplate.objects.filter(task=task).values_list("outType", "serialNr")) == [
        ("log", 3),
        ("output", 3),
    ]
    # registered and running since files are added, both logged, by the datasets' own round (job generation
    # touches no dataset row of its outputs); their counters are written when they close
    assert {d.status for d in Dataset.objects.filter(pk__in=[d.pk for d in datasets.values()])} == {"defined"}
    output_datasets_follow(now=NOW)
    for dataset in datasets.values():
        dataset.refresh_from_db()
        assert (dataset.status, dataset.nFiles) == ("running", 0)
        assert list(
            DatasetStatusLog.objects.filter(dataset=dataset).order_by("pk").values_list("old_status", "new_status")
        ) == [("defined", "ready"), ("ready", "running")]


@pytestmark_db
def test_output_files_follow_their_jobs(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=3, nFilesPerJob=1, nScoutJobs=0)
    outputs_register(task_ids=[task.pk], now=NOW)
    good, bad, killed = generate(work_queue)
    ids = [good.pk, bad.pk, killed.pk]
    Job.objects.filter(pk__in=ids).update(jobStatus="starting")
    job_status_transition_many(from_status="starting", to_status="running", job_ids=[good.pk, bad.pk], now=NOW)
    assert {status for _, _, status in files_of(good)} == {"running"}
    assert {status for _, _, status in files_of(killed)} == {"defined"}
    job_status_transition_many(from_status="running", to_status="transferring", job_ids=[good.pk], now=NOW)
    # produced: prepared
    assert set(DatasetFile.objects.filter(outPandaID=good.pk).values_list("status", flat=True)) == {"prepared"}
    job_status_transition_many(from_status="transferring", to_status="finished", job_ids=[good.pk], now=NOW)
    job_status_transition_many(from_status="running", to_status="failed", job_ids=[bad.pk], now=NOW)
    job_status_transition_many(from_status="starting", to_status="closed", job_ids=[killed.pk], now=NOW)
    assert [{status for *_, status in files_of(job)} for job in (good, bad, killed)] == [
        {"finished"},
        {"failed"},
        {"failed"},
    ]


@pytestmark_db
def test_a_task_is_done_only_once_its_outputs_are_and_its_datasets_close_with_counts(grid, work_queue, ready_task):
    task = ready_task(work_queue, files=2, nFilesPerJob=1, nScoutJobs=0)
    outputs_register(task_ids=[task.pk], now=NOW)
    first, second = generate(work_queue)
    Task.objects.filter(pk=task.pk).update(status="running")
    output_datasets_follow(now=NOW)  # registered, files being added
    Job.objects.filter(pk__in=[first.pk, second.pk]).update(jobStatus="running")
    job_status_transition_many(from_status="running", to_status="finished", job_ids=[first.pk], now=NOW)
    job_status_transition_many(from_status="running", to_status="failed", job_ids=[second.pk], now=NOW)
    job_inputs_after_end(finished=[first.pk], failed=[second.pk], now=NOW)
    # the second job's input goes back for another attempt; say a third job's output is still open
    third_output = DatasetFile.objects.filter(outPandaID=second.pk, type="output").get()
    DatasetFile.objects.filter(task=task, type="input").update(status="finished")
    DatasetFile.objects.filter(pk=third_output.pk).update(status="prepared")
    assert outputs_pending(task_ids=[task.pk]) == {task.pk}
    task_completion_check(now=NOW)
    assert Task.objects.get(pk=task.pk).status == "running"
    # produced and finished: the task closes, and its datasets with it, counted from their files
    DatasetFile.objects.filter(pk=third_output.pk).update(status="finished")
    task_completion_check(now=NOW + timedelta(minutes=1))
    assert Task.objects.get(pk=task.pk).status == "done"
    closed = {
        d.type: (d.status, d.nFiles, d.nFilesFinished, d.nFilesFailed)
        for d in Dataset.objects.filter(task=task, type__in=("output", "log"))
    }
    assert closed == {"output": ("done", 2, 2, 0), "log": ("done", 2, 1, 1)}
    log = DatasetStatusLog.objects.filter(dataset__task=task, dataset__type="output").order_by("pk")
    assert list(log.values_list("new_status", "reason")) == [
        ("ready", "registered in DDM: the task was activated"),
        ("running", "files being added"),
        ("prepared", "the task is post-processed"),
        ("done", "the task is done"),
    ]


@pytestmark_db
def test_outputs_of_an_activated_task_are_registered_before_its_first_job_and_closed_when_it_is_aborted():
    task = factories.TaskFactory(status="defined", taskName="mc23.1.evgen", processingType="evgen")
    outputs_register(task_ids=[task.pk], now=NOW)
    output_datasets_follow(now=NOW)
    assert set(Dataset.objects.filter(task=task).values_list("status", flat=True)) == {"defined"}
    Task.objects.filter(pk=task.pk).update(status="ready")
    output_datasets_follow(now=NOW)
    assert set(Dataset.objects.filter(task=task).values_list("status", flat=True)) == {"ready"}
    Task.objects.filter(pk=task.pk).update(status="aborted")
    assert output_datasets_follow(now=NOW) == {
        "prepared": sorted(Dataset.objects.filter(task=task).values_list("pk", flat=True)),
        "done": sorted(Dataset.objects.filter(task=task).values_list("pk", flat=True)),
    }
    assert (
        list(DatasetStatusLog.objects.filter(dataset__task=task, new_status="done").values_list("reason", flat=True))
        == ["the task is aborted"] * 2
    )


@pytestmark_db
def test_task_refine_registers_outputs_of_registered_tasks(work_queue):
    task = factories.TaskFactory(status="registered", taskName="mc23.2.reco", processingType="reco")
    task_refine(now=NOW)
    assert sorted(Dataset.objects.filter(task=task).values_list("type", "datasetName")) == [
        ("log", f"mc23.2.reco.log_tid{task.pk:08d}_00"),
        ("output", f"mc23.2.reco.AOD_tid{task.pk:08d}_00"),
    ]
