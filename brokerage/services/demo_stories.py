"""Tasks of the demo grid written to show, within its first minutes, the states a shifter must learn to read.

The generated tasks of `demo_grid` take an hour of demo time to end; these few are small and carry a payload
the grid simulator plays (task parameters `demoFailurePercent`, `demoRunMinutes`: how often their jobs fail and
how many grid minutes they run). Everything else is the real machinery: the cycles refine and broker them, job
generation makes their jobs, failed jobs give their files back for another attempt, the watchdog throttles at the
fifth attempt, the completion check and the scouting rules close them. At `make run`'s speed a newcomer sees:

- done after a minute or two (every job finishes);
- failed after about two (a release whose transform crashes; two attempts per file);
- throttled after about three minutes (the same crash, twelve attempts allowed: the fifth throttles it for
  120 grid minutes), released, throttled again at the tenth (480 grid minutes), and failed in the end;
- broken (its three scouts all crash: "no scout job succeeded");
- exhausted (an analysis task set to stop for manual intervention when inputs fail);
- finished (half its inputs fail once, no second attempt).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from brokerage import models

GB = 1024**3


@dataclass(frozen=True)
class Story:
    ends_as: str  # the state it is written to reach
    name: str
    files: int
    max_attempt: int
    params: dict = field(default_factory=dict)
    analysis: bool = False


CRASH = {"demoRunMinutes": 3, "demoFailurePercent": 100}
STORIES = (
    Story("done", "mc23_13p6TeV.802001.quick_validation.evgen", 4, 3, {"demoRunMinutes": 12, "demoFailurePercent": 0}),
    Story("failed", "mc23_13p6TeV.802002.bad_release.simul", 3, 2, CRASH),
    Story("throttled", "mc23_13p6TeV.802003.crashing_transform.recon", 2, 12, CRASH),
    Story(
        "broken",
        "mc23_13p6TeV.802004.broken_configuration.simul",
        10,
        3,
        {**CRASH, "nScoutJobs": 3},
    ),
    Story(
        "exhausted",
        "user.eva.flaky_ntuples.v1",
        6,
        1,
        {"demoRunMinutes": 8, "demoFailurePercent": 60, "exhaustedOnFailure": True},
        analysis=True,
    ),
    Story(
        "finished", "mc23_13p6TeV.802006.partial_input.deriv", 4, 1, {"demoRunMinutes": 10, "demoFailurePercent": 50}
    ),
)


def demo_stories_build(
    *, nuclei: list, architecture: str, release: str, now: datetime, stories=STORIES, round_number: int = 0
) -> list[models.Task]:
    """Registers the story tasks with their input replicated at every one of the `nuclei` (storage endpoints),
    so brokerage places them at once. A later round (the simulator's inflow) tells its tasks apart by name."""
    tasks = models.Task.objects.bulk_create(
        models.Task(
            taskName=story.name if not round_number else f"{story.name}.r{round_number}",
            status="registered",
            processingType="panda-client" if story.analysis else story.name.split(".")[-1],
            prodSourceLabel="user" if story.analysis else "managed",
            gshare="User Analysis" if story.analysis else "MC 16",
            userName="eva" if story.analysis else "prodsys",
            taskPriority=900 if story.analysis else 800,
            currentPriority=900 if story.analysis else 800,
            coreCount=1,
            ramCount=2000,
            ramUnit="MBPerCore",
            baseRamCount=1000,
            cpuTime=120,
            cpuEfficiency=90,
            baseWalltime=600,
            ioIntensity=50,
            transUses=release,
            architecture=architecture,
            creationDate=now,
            modificationTime=now,
            taskParams={
                "maxAttempt": story.max_attempt,
                "ipConnectivity": "full#IPv4",
                "nScoutJobs": 0,
                "nFilesPerJob": 1,
                **story.params,
            },
        )
        for story in stories
    )
    datasets = models.Dataset.objects.bulk_create(
        models.Dataset(
            task=task,
            datasetName=f"{task.taskName}.input.{task.pk}",
            type="input",
            status="defined",
            nFiles=story.files,
            nEvents=1000 * story.files,
            nEventsUsed=0,
        )
        for task, story in zip(tasks, stories, strict=True)
    )
    models.DatasetFile.objects.bulk_create(
        models.DatasetFile(
            dataset=dataset,
            task_id=dataset.task_id,
            type="input",
            status="ready",
            lfn=f"{dataset.datasetName}._{number:06d}.pool.root.1",
            fsize=GB,
            nEvents=1000,
            maxAttempt=story.max_attempt,
        )
        for dataset, story in zip(datasets, stories, strict=True)
        for number in range(story.files)
    )
    models.DatasetReplica.objects.bulk_create(
        models.DatasetReplica(datasetName=dataset.datasetName, endpoint=endpoint, nFiles=dataset.nFiles, sizeGB=1.0)
        for dataset in datasets
        for endpoint in nuclei
    )
    return tasks
