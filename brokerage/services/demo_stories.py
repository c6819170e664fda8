"""Tasks of the demo grid written to show, within its first minutes, the states a shifter must learn to read.

The generated tasks of `demo_grid` take an hour of demo time to end; these few are small and carry a payload
the grid simulator plays (task parameters `demoFailurePercent`, `demoRunMinutes`: how often their jobs fail and
how many grid minutes they run; `demoFailingFiles`: the first so many input files always fail, so the story ends
the same way every run). Everything else is the real machinery: the cycles refine and broker them, job
generation makes their jobs, failed jobs give their files back for another attempt, the watchdog throttles at the
fifth attempt, the completion check and the scouting rules close them. At `make run`'s speed a newcomer sees:

- done after a minute or two (every job finishes);
- failed after about two (a release whose transform crashes; two attempts per file);
- throttled after about three minutes (the same crash, twelve attempts allowed: the fifth throttles it for
  120 grid minutes), released, throttled again at the tenth (480 grid minutes), and failed in the end;
- broken (its three scouts all crash: "no scout job succeeded");
- exhausted (an analysis task set to stop for manual intervention when it ends under its goal: half its inputs
  fail, its goal is 90 %), then passed when the demo's shifter finishes it, and finished;
- finished (half its inputs fail once, no second attempt; its goal of 40 % reached), then retried by the shifter
  (toretry);
- preprocessing (a preprocess job first, then its own jobs);
- resubmitted with new parameters once done (toincexec, rerefine: its input dataset updated, DDM's two more files
  fed);
- waiting for an open, empty input dataset (dataset and task pending) until DDM lists its files (toupdate);
- with input files missing at its nucleus (its open dataset grew elsewhere first) until they are replicated there,
  one of them lost when the nucleus's replica shrinks and found again, another marked broken by the shifter;
- broken at once: its input dataset is one DDM does not know (a misspelt name).

The demo's data management plays the replicas a story lists (task parameter `demoDDM`: [grid minutes after the
task was created, files DDM lists, files at the task's nucleus]).
- paused by the shifter and resumed, aborted by the shifter (its jobs cancelled), finished by the shifter while it
  runs (finishing);
- event ranges: one file cut in four ranges, partial between its scouts' ranges and the last one;
- pilots lost at dispatch (`demoLostAtDispatch`): its first jobs stay sent until the watchdog closes them (30 grid
  minutes), then their files' second attempts run and it is done;
- event service (`demoFailingRanges`, `demoEventFailurePercent`): a range failed and retried by a new consumer, ES
  jobs in merging until their job set's ES merge job; another whose ranges all fail until fatal, its ES job failed
  and the others aborted; a third whose ES jobs the shifter kills (`demoKillEsJobs`), in merging (its range
  discarded) and running (cancelled); a fourth whose ES merge finds an ES output corrupted (`demoCorruptedEsMerges`):
  its range corrupted and processed again;
- a jumbo job (`nJumboJobs`): its co-jumbo jobs wait at WAITING_CO_JUMBO while the jumbo job processes their events,
  then are finished by the co-jumbo check, their events done;
- outputs merged (`mergeOutput`): its jobs wait in merging, its merge job fails its three attempts
  (`demoMergeFailures`), its jobs are cancelled and their inputs retried, and the second round is merged and done.

The demo's shifter gives the commands a story lists (task parameter `demoCommands`: [grid minutes after the task was
created, command]) through the same services as the task page (brokerage.services.task_commands), as "demo
shifter"; a command its task's status refuses is tried again at the next step, for four grid hours at most.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from django.db import transaction

from brokerage import models
from brokerage.services.retries import job_tasks_lock
from brokerage.services.task_commands import (
    TaskCommandRefused,
    dataset_files_mark,
    job_kill,
    task_abort,
    task_finish,
    task_incexec,
    task_pause,
    task_resume,
    task_retry,
)
from brokerage.states import ES_JOB

logger = logging.getLogger(__name__)

GB = 1024**3


@dataclass(frozen=True)
class Story:
    ends_as: str  # the state it is written to reach
    name: str
    files: int
    max_attempt: int
    params: dict = field(default_factory=dict)
    analysis: bool = False
    ddm_files: int | None = None  # the files DDM lists at first, if more than the task takes (default: `files`)
    open_dataset: bool = False  # its input dataset is open in DDM: looked at again for new files
    ddm_state: str = ""  # its input dataset's state in DDM, when not open: "unknown" (DDM has no such dataset)
    at_nucleus: bool = False  # its nucleus preset (the first nucleus): no task brokerage
    user: str = ""  # who submits it (default: eva for analysis, prodsys for production)
    working_group: str = ""  # the working group it runs for (its jobs count against the CAP_RUNNING_GROUP_* caps)
    event_service: bool = False  # an event service task (JEDI's eventService 1)
    cores: int = 1
    ram_per_core: int = 2000  # MB
    # its global share (production: MC 16). The event service stories' 8-core jobs run in Express, so that they do not
    # push MC 16 over its target and hold the other stories' jobs back (services.jobs.share_holds)
    gshare: str = ""


CRASH = {"demoRunMinutes": 3, "demoFailurePercent": 100}
# the event service stories' payload: two grid minutes a job, no job failure of its own (their ranges fail as each
# story says), pilots that are not lost
ES_PAYLOAD = {"demoRunMinutes": 2, "demoFailurePercent": 0, "demoReliablePilots": True}


def _es_story(ends_as: str, name: str, files: int, params: dict) -> Story:
    """An event service story: 8-core jobs (an event service job is never a single-core one, job_rules_resources) in
    the Express share (Story.gshare says why)."""
    return Story(ends_as, name, files, 3, {**ES_PAYLOAD, **params}, event_service=True, gshare="Express", cores=8)


# the working group of the story whose jobs get throttled, and its cap (the demo's CAP_RUNNING_GROUP_JOBS: the
# demo's other analysis users run for no group, so no other story meets it)
STORY_WORKING_GROUP, STORY_GROUP_JOB_CAP = "AP_Exotics", 3
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
        {
            "demoRunMinutes": 8,
            "demoFailurePercent": 0,
            "demoFailingFiles": 3,
            "useExhausted": True,
            "goal": 90,
            # after the 2-hour heartbeat timeout of a job whose pilot is lost: it is exhausted by then
            "demoCommands": [[240, "finish"]],
        },
        analysis=True,
    ),
    Story(
        "finished",
        "mc23_13p6TeV.802006.partial_input.deriv",
        4,
        1,
        {
            "demoRunMinutes": 10,
            "demoFailurePercent": 0,
            "demoFailingFiles": 2,
            "goal": 40,
            "demoCommands": [[90, "retry"]],
        },
    ),
    Story(
        "preprocessing",
        "user.eva.preprocessed_ntuples.v1",
        3,
        3,
        {"demoRunMinutes": 6, "demoFailurePercent": 0, "preproSpec": {"transPath": "prepro.py"}},
        analysis=True,
    ),
    Story(
        "rerefine",
        "user.eva.more_ntuples.v1",
        4,
        3,
        {"demoRunMinutes": 5, "demoFailurePercent": 0, "demoCommands": [[60, "incexec"]]},
        analysis=True,
        ddm_files=6,
    ),
    Story(
        "pending",
        "user.eva.fresh_ntuples.v1",
        0,
        3,
        {"demoRunMinutes": 5, "demoFailurePercent": 0, "demoDDM": [[10, 4, 4]]},
        analysis=True,
        open_dataset=True,
    ),
    Story(
        "running",
        "mc23_13p6TeV.802010.partly_replicated.simul",
        4,
        3,
        {
            "demoRunMinutes": 60,
            "demoFailurePercent": 0,
            # two scouts run an hour: the other files wait ready meanwhile, for DDM to lose one and find it again
            "nScoutJobs": 2,
            "demoDDM": [[10, 6, 4], [20, 6, 3], [40, 6, 6]],
            "demoCommands": [[50, "break_file"]],
        },
        open_dataset=True,
        at_nucleus=True,
    ),
    Story(
        "broken",
        "mc23_13p6TeV.802011.misspelt_input.simul",
        2,
        3,
        {"demoRunMinutes": 5, "demoFailurePercent": 0},
        ddm_state="unknown",
    ),
    Story(
        "paused",
        "mc23_13p6TeV.802007.paused_by_shifter.simul",
        6,
        3,
        {"demoRunMinutes": 30, "demoFailurePercent": 0, "demoCommands": [[15, "pause"], [45, "resume"]]},
    ),
    Story(
        "aborted",
        "mc23_13p6TeV.802008.wrong_campaign.evgen",
        8,
        3,
        {"demoRunMinutes": 40, "demoFailurePercent": 0, "demoCommands": [[20, "abort"]]},
    ),
    Story(
        "finishing",
        "mc23_13p6TeV.802009.enough_events.recon",
        12,
        3,
        {"demoRunMinutes": 40, "demoFailurePercent": 0, "nScoutJobs": 2, "demoCommands": [[30, "finish"]]},
    ),
    Story(
        "done",
        "mc23_13p6TeV.802013.lost_pilots.evgen",
        2,
        3,
        # the pilots of its first jobs die after taking them: sent for TIMEOUT_SENT, closed by the watchdog, and
        # the files' second attempts run
        {"demoRunMinutes": 10, "demoFailurePercent": 0, "nScoutJobs": 0, "demoLostAtDispatch": True},
    ),
    Story(
        "scouted",
        "mc23_13p6TeV.802012.event_ranges.simul",
        1,
        3,
        # one file of 1,000 events in ranges of 250: three scouts run the first three; the file is partial between
        # the scouts' end and the last range's job (three scouts: a lost pilot leaves the others to succeed)
        {"demoRunMinutes": 20, "demoFailurePercent": 0, "nScoutJobs": 3, "nEventsPerJob": 250},
    ),
    Story(
        "done",
        "mc23_13p6TeV.802014.merged_outputs.deriv",
        4,
        3,
        # its outputs are merged (seed 002, "Output merging"): its jobs wait in merging for their queue's merge job
        # (priority 5000), whose three attempts fail: the jobs are cancelled, their inputs retried, and the second
        # round's merge succeeds
        {
            "demoRunMinutes": 8,
            "demoFailurePercent": 0,
            "nScoutJobs": 0,
            "mergeOutput": True,
            "nFilesPerMergeJob": 4,
            "demoMergeFailures": 3,
            # five rounds of jobs one after another: no pilot of it is lost (simulator._jobs_ending)
            "demoReliablePilots": True,
        },
    ),
    Story(
        "done",
        "mc23_13p6TeV.802015.jumbo_events.simul",
        2,
        3,
        # an event service task with a jumbo job (seed 002, "Jumbo jobs and co-jumbo jobs"): only the demo's jumbo
        # queue has its memory, and job brokerage keeps it for the jumbo job, so its co-jumbo jobs are fake ones
        # waiting at WAITING_CO_JUMBO; the jumbo job processes their events, the co-jumbo check finishes them
        # and their events are done; the jumbo watchdog then disables jumbo jobs (fewer than 100 events left)
        {
            "demoRunMinutes": 6,
            "demoFailurePercent": 0,
            "nEventsPerJob": 500,
            "nJumboJobs": 1,
            "demoReliablePilots": True,
        },
        event_service=True,
        gshare="Express",
        # 8 cores of 7,000 MB: only the demo's jumbo queue has the memory (demo_grid, JUMBO_QUEUE_MAXRSS)
        cores=8,
        ram_per_core=7000,
    ),
    _es_story(
        "done",
        "mc23_13p6TeV.802016.event_service.simul",
        3,
        # an event service task (seed 002, "Final status of Event Service jobs"): two ES jobs of 1,500 events, each
        # over two files (two ranges); the first job's first range fails, so it waits in merging while a new
        # consumer takes the range (es_retry), the second waits for that one (es_wait), the consumer is the last
        # (es_merge), and the ES merge job merges every range
        {
            "demoFailingRanges": [[0, 0]],  # the first job's first range, once: es_retry
            "nEventsPerJob": 1500,
            "nFilesPerJob": None,
            "maxAttemptEsJob": 4,
        },
    ),
    _es_story(
        "done",
        "mc23_13p6TeV.802018.event_service_killed.simul",
        1,
        # an event service task whose ES jobs the demo's shifter kills twice (`demoKillEsJobs`): the first as it waits
        # in merging for its ES merge job (its done range discarded), the next while its range runs (cancelled); both
        # ranges are cut again and the third job's is merged (seed 002, "Transition of event status")
        {
            "nEventsPerJob": 1000,
            "nFilesPerJob": None,
            "demoKillEsJobs": ["merging", "running"],
        },
    ),
    _es_story(
        "done",
        "mc23_13p6TeV.802019.event_service_corrupted.simul",
        1,
        # an event service task whose ES merge job's first attempt finds its first ES job's output corrupted (pilot
        # error 1171, `demoCorruptedEsMerges`): that job's done range is corrupted and processed again by a consumer,
        # the second attempt merges the other's, and the consumer's range is merged by an ES merge job of its own
        {
            "nEventsPerJob": 500,
            "nFilesPerJob": None,
            "demoMergeFailures": 1,
            "demoCorruptedEsMerges": 1,
        },
    ),
    _es_story(
        "failed",
        "mc23_13p6TeV.802017.event_service_crashing.simul",
        1,
        # an event service task whose payload fails every range: its jobs are retried without a range processed
        # (es_inaction), until a range reaches maxAttemptEsJob 2: fatal, its ES job failed (114) and the others of
        # its job set closed (es_aborted)
        {
            "demoEventFailurePercent": 100,
            "nEventsPerJob": 250,
            "maxAttemptEsJob": 2,
        },
    ),
    Story(
        "done",
        "group.AP_Exotics.capped_ntuples.v1",
        16,
        3,
        # its pilots come one a turn, so its jobs wait activated while those started run: once the group runs more
        # than the demo's CAP_RUNNING_GROUP_JOBS, the watchdog throttles the waiting ones and releases them when the
        # running have ended (seed 002, "Throttled jobs and tasks")
        {"demoRunMinutes": 30, "demoFailurePercent": 0, "demoPilotsEachTurn": 1},
        analysis=True,
        user="frank",
        working_group=STORY_WORKING_GROUP,
    ),
)
DEMO_SHIFTER = "demo shifter"
# how long a command its task refuses is tried again (grid minutes past its time)
# four hours: a story task one of whose jobs lost its pilot waits the 2-hour heartbeat timeout before it can end
COMMAND_PATIENCE_MINUTES = 240


def _file_break(*, task_id: int, actor: str, now: datetime, reason: str) -> int:
    """A shifter marks the task's last input file that no job took yet broken (seed 002: "the file is corrupted")."""
    last = (
        models.DatasetFile.objects.filter(task_id=task_id, type="input", status="ready")
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    )
    if last is None:
        raise TaskCommandRefused(f"task {task_id} has no input file left to mark")
    return dataset_files_mark(file_ids=[last], status="broken", actor=actor, now=now)


COMMANDS = {
    "break_file": _file_break,
    # a resubmission asks for two files per job (seed 002: nFilesPerJob is one a resubmission may change)
    "incexec": partial(task_incexec, params={"nFilesPerJob": 2}),
    "pause": task_pause,
    "resume": task_resume,
    "finish": task_finish,
    "abort": task_abort,
    "retry": task_retry,
}


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
            gshare=story.gshare or ("User Analysis" if story.analysis else "MC 16"),
            userName=story.user or ("eva" if story.analysis else "prodsys"),
            workingGroup=story.working_group,
            taskPriority=900 if story.analysis else 800,
            currentPriority=900 if story.analysis else 800,
            coreCount=story.cores,
            ramCount=story.ram_per_core,
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
            nucleus=nuclei[0].site.name if story.at_nucleus and nuclei else "",
            eventService=1 if story.event_service else 0,
            taskParams=_story_params(story),
        )
        for story in stories
    )
    datasets = models.Dataset.objects.bulk_create(
        models.Dataset(
            task=task,
            datasetName=f"{task.taskName}.input.{task.pk}",
            type="input",
            status="defined",
            state="open" if story.open_dataset else story.ddm_state,
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
        models.DatasetReplica(
            datasetName=dataset.datasetName,
            endpoint=endpoint,
            nFiles=story.ddm_files if story.ddm_files is not None else story.files,
            sizeGB=1.0,
        )
        for dataset, story in zip(datasets, stories, strict=True)
        for endpoint in nuclei
    )
    return tasks


def _story_params(story: Story) -> dict:
    """A story task's parameters."""
    return {"maxAttempt": story.max_attempt, "ipConnectivity": "full#IPv4", "nScoutJobs": 0, "nFilesPerJob": 1,
            **story.params}  # fmt: skip


def demo_shifter_act(*, now: datetime, minute: timedelta) -> list[tuple[int, str]]:
    """Gives the commands the stories list whose time has come (`minute`: one grid minute at the demo's speed), in
    order, each through its service; a refused one is tried again at the next step until COMMAND_PATIENCE_MINUTES
    past its time, then given up (logged). Returns (task, command) of those given."""
    given = []
    # a task whose commands were all given keeps them as demoCommandsGiven: the filter then passes it over
    tasks = models.Task.objects.filter(taskParams__has_key="demoCommands")
    for task_id, created, params in tasks.values_list("pk", "creationDate", "taskParams"):
        commands, done = params.get("demoCommands") or [], int(params.get("demoCommandsDone", 0))
        while done < len(commands) and created + commands[done][0] * minute <= now:
            at, name = commands[done]
            try:
                COMMANDS[name](task_id=task_id, actor=DEMO_SHIFTER, now=now, reason=f"{name} by the demo's shifter")
            except TaskCommandRefused as refused:
                if created + (at + COMMAND_PATIENCE_MINUTES) * minute > now:
                    break  # again at the next step
                logger.info("demo shifter gives up %s of task %s: %s", name, task_id, refused)
            else:
                given.append((task_id, name))
            done += 1
        if done != int(params.get("demoCommandsDone", 0)):
            params = {**params, "demoCommandsDone": done}
            if done >= len(commands):
                params["demoCommandsGiven"] = params.pop("demoCommands")
            models.Task.objects.filter(pk=task_id).update(taskParams=params)
    return given


def demo_es_kills_act(*, now: datetime) -> list[int]:
    """The stories' kills of their own ES jobs (`demoKillEsJobs`: job statuses, in order): the demo's shifter kills
    the task's first ES job found in the next status (one in running with a range sent or running; one in merging
    before any merge job took it) through the kill command's service, its task locked first (the one lock order).
    Found by the job's state, not by a time: a timed kill missed its moment as often as not. Returns the jobs
    killed."""
    killed: list[int] = []
    for task_id, params in models.Task.objects.filter(taskParams__has_key="demoKillEsJobs").values_list(
        "pk", "taskParams"
    ):
        plan, done = params["demoKillEsJobs"], int(params.get("demoKillEsJobsDone", 0))
        jobs = models.Job.objects.filter(
            task_id=task_id, eventService=ES_JOB, jobStatus=plan[done], mergeJob__isnull=True
        )
        if plan[done] == "running":
            jobs = jobs.filter(pk__in=models.Event.objects.filter(status__in=("sent", "running")).values("PandaID"))
        job_id = jobs.order_by("pk").values_list("pk", flat=True).first()
        if job_id is None:
            continue
        with transaction.atomic():
            if job_id not in job_tasks_lock(job_ids=[job_id]):
                continue  # its task is busy: the next step
            if job_kill(job_ids=[job_id], actor=DEMO_SHIFTER, now=now, reason=f"kill of an ES job {plan[done]}")[0]:
                killed.append(job_id)
            params = {**params, "demoKillEsJobsDone": done + 1}
            if done + 1 >= len(plan):
                params["demoKillEsJobsGiven"] = params.pop("demoKillEsJobs")
            models.Task.objects.filter(pk=task_id).update(taskParams=params)
    return killed


def demo_ddm_act(*, now: datetime, minute: timedelta) -> list[int]:
    """The demo's data management: the replicas the stories list (`demoDDM`) set when their time comes, those at
    the task's nucleus to the files there, the others to the files DDM lists. Returns the tasks whose input
    changed."""
    changed = []
    for task_id, created, nucleus, params in models.Task.objects.filter(taskParams__has_key="demoDDM").values_list(
        "pk", "creationDate", "nucleus", "taskParams"
    ):
        plan, done = params.get("demoDDM") or [], int(params.get("demoDDMDone", 0))
        names = models.Dataset.objects.filter(task_id=task_id, type="input").values_list("datasetName", flat=True)
        start = done
        while done < len(plan) and created + plan[done][0] * minute <= now:
            _, listed, at_nucleus = plan[done]
            replicas = models.DatasetReplica.objects.filter(datasetName__in=list(names))
            replicas.exclude(endpoint__site__name=nucleus).update(nFiles=listed, updated=now)
            replicas.filter(endpoint__site__name=nucleus).update(nFiles=at_nucleus if nucleus else listed, updated=now)
            done += 1
        if done != start:
            params = {**params, "demoDDMDone": done}
            if done >= len(plan):
                params["demoDDMGiven"] = params.pop("demoDDM")
            models.Task.objects.filter(pk=task_id).update(taskParams=params)
            changed.append(task_id)
    return changed
