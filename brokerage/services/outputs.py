"""Output and log datasets, their templates and files (brokerage/outputs.py says the rules): registered when a task
is refined, files made with each job, files following their jobs, datasets following their tasks.

Output files keep no status history (as input files: millions a day); their datasets' moves are logged. An output
dataset's nFiles, nFilesFinished and nFilesFailed are counted from its files when it is closed (prepared, done), and
from then on the integrity check holds them to the files (selectors.integrity); while the task runs the task page
and the API count the files themselves (selectors.tasks.task_datasets).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Exists, OuterRef, Q

from brokerage import outputs
from brokerage.models import Dataset, DatasetFile, Job, JobParamsTemplate, OutputTemplate, Task
from brokerage.selectors.counters import OUTPUT_COUNTER_FIELDS, output_dataset_counters_from_files
from brokerage.services.bulk import bulk_update_values
from brokerage.services.status import status_transition_many
from brokerage.states import OUTPUT_TYPES, PREPROCESS_HANDLING, WAITING_CO_JUMBO

ACTOR = "outputs"
# a task whose outputs are registered in DDM: it was activated (seed 002: "registers output datasets when tasks are
# activated"), ready for its first jobs or past it; one pending, paused or aborted is so once it started
ACTIVATED = Q(
    task__status__in=(
        "ready", "scouting", "scouted", "running", "throttled", "prepared", "finishing", "exhausted", "passed", "done",
        "finished", "failed", "toretry", "toincexec", "rerefine",
    )
) | Q(task__startTime__isnull=False)  # fmt: skip
POST_PROCESSING = ("prepared", "exhausted", "passed")
GENERATING = ("ready", "scouting", "scouted", "running")
TASK_ENDED = ("done", "finished", "failed", "aborted", "broken")


def _scope(dataset_name: str) -> str:
    """The DDM scope of a dataset: its project (mc23_13p6TeV), or user.<name> / group.<name>."""
    parts = dataset_name.split(".")
    return ".".join(parts[:2])[:30] if parts[0] in ("user", "group") else parts[0][:30]


def outputs_register(*, task_ids: list[int], now: datetime) -> int:
    """The output and log datasets, their templates and the job parameters template of tasks being refined that
    have none yet (defined, "inserted to the JEDI_Datasets table"). Returns how many datasets were made. A fixed
    number of statements for any number of tasks."""
    if not task_ids:
        return 0
    have = set(Dataset.objects.filter(task_id__in=task_ids, type__in=OUTPUT_TYPES).values_list("task_id", flat=True))
    tasks = list(
        Task.objects.filter(pk__in=task_ids)
        .exclude(pk__in=have)
        .values_list("pk", "taskName", "processingType", "taskParams")
    )
    if not tasks:
        return 0
    masters = dict(
        Dataset.objects.filter(task_id__in=[row[0] for row in tasks], type="input", master__isnull=True)
        .order_by("pk")
        .values_list("task_id", "pk")
    )
    specs = {
        pk: outputs.task_outputs(task_id=pk, task_name=name, processing_type=step, params=params or {})
        for pk, name, step, params in tasks
    }
    datasets = Dataset.objects.bulk_create(
        [
            Dataset(
                task_id=pk,
                datasetName=spec.dataset_name,
                containerName=spec.container_name,
                type=spec.file_type,
                status="defined",
                provenanceID=masters.get(pk),
                streamName=spec.stream,
                creationTime=now,
                modificationTime=now,
            )
            for pk, *_ in tasks
            for spec in specs[pk]
        ]
    )
    made = iter(datasets)
    OutputTemplate.objects.bulk_create(
        [
            OutputTemplate(
                task_id=pk,
                dataset=next(made),
                filenameTemplate=spec.template,
                sourceName=spec.source_name,
                streamName=spec.stream,
                outType=spec.file_type,
            )
            for pk, *_ in tasks
            for spec in specs[pk]
        ]
    )
    JobParamsTemplate.objects.bulk_create(
        [
            JobParamsTemplate(task_id=pk, jobParamsTemplate=outputs.job_params_template(params or {}))
            for pk, _, _, params in tasks
        ],
        ignore_conflicts=True,
    )
    return len(datasets)


def output_files_make(*, jobs: list[Job], now: datetime) -> int:
    """One file per output template of its task for each new job, named with the template's next serial numbers
    (seed 002, option B), defined, and the templates' serial numbers written back: two statements, no dataset row
    touched (job generation holds its input datasets' locks until it commits: the output datasets follow their
    files in output_datasets_follow instead). Jobs that make no files of their own are left: a preprocess job, a
    fake co-jumbo job (its events go to jumbo jobs). Returns the files made. The caller holds the tasks (job
    generation's claim), so serial numbers are given out by one writer."""
    makers = [
        job for job in jobs if job.specialHandling != PREPROCESS_HANDLING and job.computingSite != WAITING_CO_JUMBO
    ]
    if not makers:
        return 0
    templates: dict[int, list[dict]] = defaultdict(list)
    for row in (
        OutputTemplate.objects.filter(task_id__in={job.task_id for job in makers})
        .order_by("pk")
        .values("pk", "task_id", "dataset_id", "dataset__datasetName", "filenameTemplate", "serialNr", "outType")
    ):
        templates[row["task_id"]].append(row)
    files: list[DatasetFile] = []
    for job in makers:
        for template in templates.get(job.task_id, ()):
            template["serialNr"] += 1
            files.append(
                DatasetFile(
                    dataset_id=template["dataset_id"],
                    task_id=job.task_id,
                    lfn=outputs.file_name(template["filenameTemplate"], template["serialNr"]),
                    GUID=str(uuid.uuid5(uuid.NAMESPACE_URL, f"panda-out:{template['pk']}:{template['serialNr']}")),
                    scope=_scope(template["dataset__datasetName"]),
                    type=template["outType"],
                    status="defined",
                    creationDate=now,
                    outPandaID=job.pk,
                    jobsetID=job.jobsetID,
                    attemptNr=job.attemptNr,
                    keepTrack=1,
                )
            )
    if not files:
        return 0
    DatasetFile.objects.bulk_create(files, batch_size=2000)
    rows = [row for task_templates in templates.values() for row in task_templates]
    bulk_update_values(OutputTemplate, fields=("serialNr",), rows=[(row["pk"], row["serialNr"]) for row in rows])
    return len(files)


def output_files_merge_take(*, job_ids: list[int]) -> int:
    """Pre-merged files a merge job took: being merged (seed 002, output file merging)."""
    sources, target = outputs.MERGE_TAKES
    return DatasetFile.objects.filter(outPandaID__in=job_ids, status__in=sources).update(status=target)


def output_datasets_move(
    *, ids: Iterable[int], from_status: str, to_status: str, reason: str, now: datetime
) -> list[int]:
    return status_transition_many(
        model=Dataset, ids=ids, from_status=from_status, to_status=to_status, reason=reason, actor=ACTOR, now=now
    )


def output_dataset_counters_refresh(*, dataset_ids: Iterable[int], now: datetime) -> int:
    """nFiles, nFilesFinished and nFilesFailed of output datasets from their files (one query, one bulk update)."""
    wanted = output_dataset_counters_from_files(dataset_ids=dataset_ids)
    bulk_update_values(
        Dataset,
        fields=(*OUTPUT_COUNTER_FIELDS, "modificationTime"),
        rows=[(pk, *(counts[field] for field in OUTPUT_COUNTER_FIELDS), now) for pk, counts in wanted.items()],
    )
    return len(wanted)


def output_datasets_follow(*, now: datetime) -> dict[str, list[int]]:
    """Output datasets follow their tasks (module docstring of brokerage/outputs.py): registered (ready) once the
    task is activated, prepared while it is post-processed, done once it ended (counted first). A handful of
    queries over the datasets of tasks that are not over, whatever their number."""
    open_outputs = Dataset.objects.filter(type__in=OUTPUT_TYPES)
    moved: dict[str, list[int]] = {}
    moved["ready"] = output_datasets_move(
        ids=open_outputs.filter(ACTIVATED, status="defined").values_list("pk", flat=True),
        from_status="defined",
        to_status="ready",
        reason="registered in DDM: the task was activated",
        now=now,
    )
    # "files are being added to the dataset": a registered dataset with files, or a closed one whose task makes jobs
    # again (a retry, an open input dataset that grew)
    with_files = Exists(DatasetFile.objects.filter(dataset_id=OuterRef("pk"), status__in=("defined", "running")))
    moved["running"] = []
    for source, again, reason in (
        ("ready", Q(), "files being added"),
        ("prepared", Q(task__status__in=GENERATING), "files being added again: the task runs again"),
        ("done", Q(task__status__in=GENERATING), "files being added again: the task runs again"),
    ):
        moved["running"] += output_datasets_move(
            ids=open_outputs.filter(again, with_files, status=source).values_list("pk", flat=True),
            from_status=source,
            to_status="running",
            reason=reason,
            now=now,
        )
    closing = open_outputs.filter(
        status__in=("ready", "running"), task__status__in=(*POST_PROCESSING, *TASK_ENDED)
    ).values_list("pk", flat=True)
    closing = list(closing)
    output_dataset_counters_refresh(dataset_ids=closing, now=now)
    for source in ("ready", "running"):
        moved.setdefault("prepared", []).extend(
            output_datasets_move(
                ids=closing, from_status=source, to_status="prepared", reason="the task is post-processed", now=now
            )
        )
    ended = list(open_outputs.filter(status="prepared", task__status__in=TASK_ENDED).values_list("pk", "task__status"))
    output_dataset_counters_refresh(dataset_ids=[pk for pk, _ in ended], now=now)
    moved["done"] = []
    for status in TASK_ENDED:
        moved["done"] += output_datasets_move(
            ids=[pk for pk, task_status in ended if task_status == status],
            from_status="prepared",
            to_status="done",
            reason=f"the task is {status}",
            now=now,
        )
    return {key: ids for key, ids in moved.items() if ids}


def outputs_pending(*, task_ids: list[int]) -> set[int]:
    """Of the tasks, those with an output file not finished or failed yet: their outputs do not all exist, so the
    task is not over (issue 52: "a task done when its outputs are"). One query on (task, type, status)."""
    if not task_ids:
        return set()
    return set(
        DatasetFile.objects.filter(task_id__in=task_ids, type__in=OUTPUT_TYPES, status__in=outputs.OUTPUT_FILES_OPEN)
        .values_list("task_id", flat=True)
        .distinct()
    )
