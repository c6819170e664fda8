"""The demo grid simulator: it plays the pilots, the data management, the sites and the people who submit work,
so that brokerage has a changing world.

One step (a periodic Celery task, on only in demo mode) does what the grid would have done since the last one:
assigned jobs become activated once their input has been transferred; pilots start activated jobs, highest
priority first, up to each queue's slots; running jobs end after their run time, finished or failed at the
queue's failure rate; their files follow (finished, or back to ready for another attempt until maxAttempt,
then failed), and so do their events; the pilot statistics the job brokerage reads are refreshed. Downtimes end
on time and full network links drain. WMCore's jobs in the pool start within their site's running slots and end
after their run time; DIRAC's pilots ask the Matcher for jobs, which run and end. With `inflow`, new tasks arrive
as the old ones end.

Times are "grid minutes" divided by `speed`, so `make run` shows hours of grid life in minutes. Every draw is a
hash of the job id: the same database and the same clock give the same world.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import CharField, Count, F, Value
from django.db.models.functions import Cast, Concat, Lower, LPad, Replace

from brokerage.adapters.shares import DEFAULT_HS06_PER_CORE, global_share_distribution
from brokerage.job_errors import PILOT
from brokerage.models import (
    DatasetFile,
    DiracJob,
    DiracTaskQueue,
    Event,
    Job,
    NetworkLink,
    PandaQueue,
    QueuePilotStats,
    StorageEndpoint,
    Task,
    WMBSJob,
    WMCoreSite,
)
from brokerage.models.jobs import job_archive_window
from brokerage.models.tasks import TASK_ENDED
from brokerage.services.bulk import bulk_update_values
from brokerage.services.demo_dirac import PILOTS as DIRAC_PILOTS
from brokerage.services.demo_dirac import dirac_demo_jobs
from brokerage.services.demo_grid import ARCHITECTURE, RELEASES, demo_tasks_register
from brokerage.services.demo_stories import (
    STORIES,
    demo_ddm_act,
    demo_es_kills_act,
    demo_shifter_act,
    demo_stories_build,
)
from brokerage.services.dirac import dirac_jobs_submit, dirac_match_request, resource_from
from brokerage.services.event_service import NOT_STARTED, es_jobs_end, es_jobs_split, es_merge_corrupted_mark
from brokerage.services.locks import exclusive_run
from brokerage.services.merging import premerged_split
from brokerage.services.retries import OUT_OF_MEMORY_CODES, job_inputs_after_end, job_tasks_lock
from brokerage.services.status import job_status_transition_many, status_transition_many
from brokerage.services.wmcore import wmbs_job_transition_many
from brokerage.shares import under_pledge_serve
from brokerage.states import CO_JUMBO_JOB, ES_JOB, ES_MERGE_JOB, JUMBO_JOB

ACTOR = "grid simulator"
# the jobs whose pilot takes event ranges (getEventRanges) and reports them (updateEventRanges)
EVENT_SERVICE_KINDS = (ES_JOB, JUMBO_JOB, CO_JUMBO_JOB)
TRANSFER_MINUTES = 5
DEFAULT_SLOTS = 20
DEFAULT_FAILURE_PERCENT = 8
# What fails in the demo, with PanDA's codes and words (brokerage/job_errors.py), in proportion; one failure in
# five becomes the payload running out of memory (_pilot_reports_apply), which the retry module reads.
FAILURES = (
    (
        5,
        {
            "pilotErrorCode": 1305,
            "pilotErrorDiag": PILOT[1305],
            "exeErrorCode": 65,
            "exeErrorDiag": "Non-zero return code from the transform (65)",
        },
    ),
    (3, {"pilotErrorCode": 1099, "pilotErrorDiag": f"{PILOT[1099]}: copy command failed, connection timed out"}),
    (2, {"pilotErrorCode": 1137, "pilotErrorDiag": f"{PILOT[1137]}: destination storage refused the upload"}),
    (2, {"pilotErrorCode": 1213, "pilotErrorDiag": PILOT[1213]}),
    (1, {"pilotErrorCode": 1150, "pilotErrorDiag": f"{PILOT[1150]}: no output file modified for 2 hours"}),
    (1, {"pilotErrorCode": 1201, "pilotErrorDiag": PILOT[1201]}),
    (1, {"pilotErrorCode": 1361, "pilotErrorDiag": PILOT[1361]}),
)
FAILURE_COLUMNS = ("pilotErrorCode", "pilotErrorDiag", "exeErrorCode", "exeErrorDiag")
CRASH = FAILURES[0][1]
# Files a network link's queue loses per grid minute as its transfers complete.
LINK_DRAIN_PER_MINUTE = 3
# DIRAC pilots: matching requests per site and step at most, and the waiting jobs the community keeps submitted.
PILOT_REQUESTS_PER_SITE = 4
DIRAC_BACKLOG = 100
# New work in the demo (demo_tasks_inflow): a batch when fewer tasks than this are still being worked on.
INFLOW_ACTIVE = 30
INFLOW_BATCH = 8


@dataclass(frozen=True)
class StepReport:
    activated: int
    started: int
    finished: int
    failed: int
    wmbs_started: int = 0
    wmbs_ended: int = 0
    dirac_matched: int = 0
    dirac_ended: int = 0
    tasks_registered: int = 0


def _draw(pk: int, salt: int) -> int:
    """A stable pseudo-random integer 0..9999 for a job."""
    return (pk * 2654435761 + salt * 40503) % 10007 % 10000


# One job in LOST_PILOT_ONE_IN loses its pilot while running (a node dies, the batch system kills it): no more
# heartbeats, no end; the watchdog's heartbeat rule closes it, so the demo shows a job timing out.
LOST_PILOT_ONE_IN = 40
# a pilot's heartbeat while its payload runs: pilot3's default of 30 minutes (heartbeat 1800 s)
HEARTBEAT_MINUTES = 30


def pilot_lost(pk: int) -> bool:
    return _draw(pk, 5) % LOST_PILOT_ONE_IN == 0


def job_run_minutes(pk: int) -> int:
    """A job's run time in grid minutes: 30 to 150."""
    return 30 + _draw(pk, 1) % 121


def grid_simulate_turn(*, now: datetime, speed: float = 1.0, inflow: bool = False) -> StepReport | None:
    """The beat's turn of the simulator: a step, unless another worker's step is still running (None). A step
    does what the grid did since the last one, so a turn left out loses nothing: the next step catches up."""
    with exclusive_run("grid simulator") as mine:
        return grid_simulate_step(now=now, speed=speed, inflow=inflow) if mine else None


def grid_simulate_step(*, now: datetime, speed: float = 1.0, inflow: bool = False) -> StepReport:
    """One simulator step at `now` (module docstring); `inflow`: new tasks arrive as the old ones end."""
    minute = timedelta(minutes=1) / max(speed, 1e-9)
    registered = demo_tasks_inflow(now=now) if inflow else []
    queues = {
        row["name"]: row
        for row in PandaQueue.objects.values("pk", "name", "status", "cric", "pilot_driven", "site__name")
    }
    # a pilot-driven queue's jobs start, beat and end as its real pilots say (services/dispatcher.py)
    real_pilots = {name for name, row in queues.items() if row["pilot_driven"]}
    # 1. input transferred: assigned → activated
    transferred = list(
        Job.objects.filter(jobStatus="assigned", stateChangeTime__lte=now - TRANSFER_MINUTES * minute).values_list(
            "pk", flat=True
        )
    )
    move = partial(job_status_transition_many, actor=ACTOR, now=now)
    activated = move(from_status="assigned", to_status="activated", job_ids=transferred, reason="input transferred")
    # the pilots of event service jobs started at an earlier step report their ranges running (updateEventRanges):
    # a range is sent with its job's start (getEventRanges) and seen sent until then
    Event.objects.filter(
        status="sent",
        PandaID__in=Job.objects.filter(jobStatus="running", eventService__in=EVENT_SERVICE_KINDS)
        .exclude(computingSite__in=real_pilots)
        .values("pk"),
    ).update(status="running")
    # 2. pilots start jobs up to each queue's slots
    started = _jobs_start(queues, real_pilots, move=move)
    # 3. running jobs end after their run time, failing at their queue's rate or their task's demo payload's
    running = list(
        Job.objects.filter(jobStatus="running", startTime__isnull=False).values_list(
            "pk", "computingSite", "startTime", "task_id"
        )
    )
    running = [row for row in running if row[1] not in real_pilots]
    failed_ids, done_ids, crashed = _jobs_ending(running, queues, now=now, minute=minute)
    # an event service job's end is its ranges' (services.event_service): merging, failed or closed at once
    es_done, done_ids = es_jobs_split(job_ids=done_ids)
    es_failed, failed_ids = es_jobs_split(job_ids=failed_ids)
    # 4. a finished payload's job holds while its outputs are added, then transfers them to the nucleus (a job
    # elsewhere) and ends finished: the files it used are finished then
    stored, finished_ids, premerged = _jobs_stage_out(queues, now=now, minute=minute, move=move)
    with transaction.atomic():
        free = job_tasks_lock(job_ids=finished_ids + failed_ids + es_done + es_failed)
        finished_ids = [pk for pk in finished_ids if pk in free]
        failed_ids = [pk for pk in failed_ids if pk in free]
        es_jobs_end(
            succeeded=[pk for pk in es_done if pk in free], failed=[pk for pk in es_failed if pk in free], now=now
        )
        # a pre-merged job waits in merging for its merge job, its outputs at its queue (services.merging)
        premerged = {pk for pk in finished_ids if pk in premerged}
        move(
            from_status="holding",
            to_status="merging",
            job_ids=sorted(premerged),
            reason="pre-merged outputs stored at its queue: waiting for the merge",
        )
        finished_ids = [pk for pk in finished_ids if pk not in premerged]
        for source in ("holding", "transferring"):
            move(
                from_status=source,
                to_status="finished",
                job_ids=[pk for pk in finished_ids if stored[pk] == source],
                reason="outputs stored",
            )
        move(
            from_status="running",
            to_status="failed",
            job_ids=failed_ids,
            reason="payload failed",
        )
        _pilot_reports_apply(finished=done_ids, failed=failed_ids, now=now, crashed=crashed)
        _demo_corrupted_merges(failed_ids, now=now)
        job_inputs_after_end(finished=finished_ids, failed=failed_ids, now=now)
    _jumbo_events_process(done_ids)
    move(from_status="running", to_status="holding", job_ids=done_ids, reason="payload finished: adding its outputs")
    demo_shifter_act(now=now, minute=minute)
    demo_es_kills_act(now=now)
    demo_ddm_act(now=now, minute=minute)
    _heartbeats_send(running=[pk for pk, *_ in running], now=now, minute=minute)
    _pilots_report(queues, now=now, minute=minute)
    _downtimes_end(queues, now=now)
    _links_drain(now=now, minute=minute)
    wmbs_started, wmbs_ended = wmcore_pool_simulate(now=now, minute=minute)
    dirac_matched, dirac_ended = dirac_pilots_simulate(now=now, minute=minute)
    return StepReport(
        len(activated),
        len(started),
        len(finished_ids),
        len(failed_ids),
        len(wmbs_started),
        len(wmbs_ended),
        dirac_matched,
        dirac_ended,
        len(registered),
    )


# grid minutes a job holds while its outputs are added to their datasets
HOLDING_MINUTES = 1


def _jobs_stage_out(queues: dict[str, dict], *, now: datetime, minute: timedelta, move) -> tuple[dict, list[int]]:
    """Holding jobs after HOLDING_MINUTES: those at their task's nucleus (or with none) are done, and pre-merged
    ones (their outputs stay at their queue for the merge), the others transfer their outputs there (holding →
    transferring); transferring ones are done after TRANSFER_MINUTES. Returns (job → the status it is done from,
    the jobs done, the pre-merged ones among them), for the caller to finish with their files."""
    site_of = {row["name"]: row["site__name"] for row in queues.values()}
    done: dict[int, str] = {}
    to_transfer = []
    holding = list(
        Job.objects.filter(jobStatus="holding", stateChangeTime__lte=now - HOLDING_MINUTES * minute).values_list(
            "pk", "computingSite", "nucleus"
        )
    )
    premerged = set(premerged_split(job_ids=[pk for pk, *_ in holding])[0])
    for pk, site, nucleus in holding:
        if nucleus and site_of.get(site) not in (None, nucleus) and pk not in premerged:
            to_transfer.append(pk)
        else:
            done[pk] = "holding"
    for pk in Job.objects.filter(
        jobStatus="transferring", stateChangeTime__lte=now - TRANSFER_MINUTES * minute
    ).values_list("pk", flat=True):
        done[pk] = "transferring"
    move(from_status="holding", to_status="transferring", job_ids=to_transfer, reason="outputs going to the nucleus")
    return done, list(done), premerged


def _where_it_runs() -> dict[str, Any]:
    """The CE, worker node and batch id a pilot reports with getJob, as columns of the move that sends the jobs: two
    CEs per queue, a few dozen nodes behind them, drawn from the job's id so that a replayed step writes the same
    (job 12 at SAT_Q: ce01.sat-q.example, wn012.sat-q.example, batch 7000012). SQL expressions, so the move's own
    UPDATE writes them: a statement of its own was the simulator's costliest (bench keepup, 12.9 s in ten minutes)."""
    host = Lower(Replace(Replace(F("computingSite"), Value("_"), Value("-")), Value("/"), Value("-")))
    text = partial(Cast, output_field=CharField())

    def remainder(divisor: int):  # integer arithmetic: SQLite's MOD answers 1.0
        return F("pk") - F("pk") / divisor * divisor

    return {
        "computingElement": Concat(Value("ce0"), text(remainder(2) + 1), Value("."), host, Value(".example")),
        "modificationHost": Concat(
            Value("wn"), LPad(text(remainder(37)), 3, Value("0")), Value("."), host, Value(".example")
        ),
        "batchID": text(F("pk") + 7_000_000),
    }


def _jobs_start(queues: dict[str, dict], real_pilots: set[str], *, move) -> list[int]:
    """The activated jobs pilots take, as getJob hands them out (the global share furthest below its pledge first,
    then the highest priority: services.dispatcher), up to each online queue's free demo slots (queues with real
    pilots left to them): activated → starting → running, their events and whole files running too."""
    busy = _jobs_per_queue(Job.objects.filter(jobStatus__in=("starting", "running")))
    waiting = defaultdict(list)
    slow = _demo_slow_pilots()
    for pk, site, gshare, hs06, cores, task_id in (
        Job.objects.filter(jobStatus="activated")
        .order_by("-currentPriority", "pk")
        .values_list("pk", "computingSite", "gshare", "hs06", "coreCount", "task_id")
    ):
        if task_id in slow:
            if slow[task_id] <= 0:
                continue  # this turn's pilots for the task are taken
            slow[task_id] -= 1
        waiting[site].append((pk, gshare, float(hs06 if hs06 is not None else (cores or 1) * DEFAULT_HS06_PER_CORE)))
    nodes, distribution = global_share_distribution()
    to_start = []
    for site, jobs in waiting.items():
        queue = queues.get(site)
        if queue is None or queue["status"] != "online" or site in real_pilots:
            continue
        slots = int((queue["cric"] or {}).get("demo_slots", DEFAULT_SLOTS))
        # the next queue's pilots see the jobs this one's started as running
        taken, distribution = under_pledge_serve(
            nodes=nodes, distribution=distribution, waiting=jobs, slots=max(slots - busy.get(site, 0), 0)
        )
        to_start += taken
    move(
        from_status="activated",
        to_status="sent",
        job_ids=to_start,
        reason="dispatched to a pilot (getJob)",
        columns=_where_it_runs(),
    )
    # a story's pilots that die between getJob and the start: their jobs stay sent until the watchdog closes them
    lost = _demo_lost_at_dispatch(to_start)
    to_start = [pk for pk in to_start if pk not in lost]
    move(from_status="sent", to_status="starting", job_ids=to_start, reason="pilot got the job")
    started = move(from_status="starting", to_status="running", job_ids=to_start, reason="payload started")
    # an event service job's pilot takes its ranges (getEventRanges): sent, running from the next step
    # (grid_simulate_step); another job's ranges (event-level splitting) run with it
    Event.objects.filter(PandaID__in=started, status="ready").update(status="sent")
    Event.objects.filter(PandaID__in=started, status="sent").exclude(
        PandaID__in=Job.objects.filter(pk__in=started, eventService__in=EVENT_SERVICE_KINDS).values("pk")
    ).update(status="running")
    # an event-level file runs while one of its ranges does
    DatasetFile.objects.filter(events__PandaID__in=started, status__in=("picked", "partial")).update(status="running")
    # whole files (event-level files follow their Event rows instead)
    DatasetFile.objects.filter(PandaID__in=started, status="picked").exclude(
        pk__in=Event.objects.filter(PandaID__in=started).values("file_id")
    ).update(status="running")
    return started


def _jumbo_events_process(payload_done: list[int]) -> int:
    """The jumbo jobs among payloads just done processed, on demand, every event of their task whose co-jumbo job
    has not started (seed 002: a jumbo job "can process any events in the task across all jobsets"): those events
    are finished, marked as a jumbo job's (JEDI_Events.is_jumbo); they become done when their co-jumbo job finishes.
    Returns the events processed."""
    tasks = list(Job.objects.filter(pk__in=payload_done, eventService=JUMBO_JOB).values_list("task_id", flat=True))
    if not tasks:
        return 0
    waiting = Job.objects.filter(task_id__in=tasks, eventService=CO_JUMBO_JOB, jobStatus__in=NOT_STARTED)
    return Event.objects.filter(task_id__in=tasks, status="ready", PandaID__in=waiting.values("pk")).update(
        status="finished", is_jumbo=True
    )


def _jobs_ending(running, queues: dict[str, dict], *, now: datetime, minute: timedelta):
    """The running jobs whose run time is over, each drawn finished or failed at its task's demo payload's failure
    rate (a crash) or its queue's: (failed, finished, crashed). A job whose pilot is lost never ends by itself."""
    payloads = _demo_payloads({task_id for *_, task_id in running})
    # a story whose chain of rounds must fit the demo's first hours keeps its pilots (`demoReliablePilots`): one
    # lost pilot costs the 2-hour heartbeat timeout, and its twelve jobs in five rounds met one a quarter of runs
    reliable = set(_story_setting("demoReliablePilots", pk__in={task_id for *_, task_id in running}))
    ending, crashed = [], set()
    for pk, site, start, task_id in running:
        if pilot_lost(pk) and task_id not in reliable:
            continue  # never ends by itself: its heartbeat stops (below) and the watchdog times it out
        run_minutes, failure_percent = payloads.get(task_id, (None, None))
        if start + (job_run_minutes(pk) if run_minutes is None else run_minutes) * minute <= now:
            if failure_percent is None:
                cric = (queues.get(site) or {}).get("cric") or {}
                failure_percent = int(cric.get("demo_failure_percent", DEFAULT_FAILURE_PERCENT))
            else:
                crashed.add(pk)
            ending.append((pk, failure_percent))
    ended_ids, task_ids = [pk for pk, _ in ending], {task_id for *_, task_id in running}
    doomed = _demo_doomed_jobs(ended_ids, task_ids=task_ids) | _demo_failing_merges(ended_ids, task_ids=task_ids)
    failed_ids, finished_ids = [], []
    for pk, rate in ending:
        (failed_ids if pk in doomed or _draw(pk, 2) % 100 < rate else finished_ids).append(pk)
    return failed_ids, finished_ids, crashed


def _demo_slow_pilots() -> dict[int, int]:
    """The running story tasks setting `demoPilotsEachTurn`: N: pilots come for at most N of their activated jobs a
    turn, so the others wait activated meanwhile (one query)."""
    return {pk: int(n) for pk, n in _story_setting("demoPilotsEachTurn", status__in=("running", "scouting")).items()}


def _story_setting(key: str, **tasks) -> dict[int, Any]:
    """The story tasks (filtered by `tasks`) setting task parameter `key`, with its value (one query)."""
    return {
        pk: params[key]
        for pk, params in Task.objects.filter(taskParams__has_key=key, **tasks).values_list("pk", "taskParams")
    }


def _demo_lost_at_dispatch(job_ids: list[int]) -> set[int]:
    """The first attempts of a story task setting `demoLostAtDispatch`: their pilots take them and die before
    starting them (one query)."""
    if not job_ids:
        return set()
    return set(
        Job.objects.filter(pk__in=job_ids, attemptNr=1, task__taskParams__has_key="demoLostAtDispatch").values_list(
            "pk", flat=True
        )
    )


def _demo_doomed_jobs(job_ids: list[int], *, task_ids: set[int]) -> set[int]:
    """The jobs that read one of the first N input files of a story task setting `demoFailingFiles`: N: they
    always fail, so the story ends the same way every run (a failure percent is drawn per job). Two queries, and
    none when no task sets it."""
    wanted = {pk: int(n) for pk, n in _story_setting("demoFailingFiles", pk__in=task_ids).items()}
    if not wanted or not job_ids:
        return set()
    doomed_files = set()
    for task_id, count in wanted.items():
        doomed_files |= set(
            DatasetFile.objects.filter(task_id=task_id, type="input")
            .order_by("pk")
            .values_list("pk", flat=True)[:count]
        )
    return set(DatasetFile.objects.filter(pk__in=doomed_files, PandaID__in=job_ids).values_list("PandaID", flat=True))


def _demo_failing_merges(job_ids: list[int], *, task_ids: set[int]) -> set[int]:
    """The merge jobs of a story task setting `demoMergeFailures`: N that end while fewer than N of its merge jobs
    have failed: they fail, so its first N merge attempts fail every run (services.merging: three attempts, then its
    jobs are cancelled and their inputs retried). Two queries, and none when no task sets it."""
    wanted = {pk: int(n) for pk, n in _story_setting("demoMergeFailures", pk__in=task_ids).items()}
    if not wanted or not job_ids:
        return set()
    failed = Counter(
        Job.objects.filter(task_id__in=wanted, isMerge=True, jobStatus="failed").values_list("task_id", flat=True)
    )
    doomed = set()
    for pk, task_id in (
        Job.objects.filter(pk__in=job_ids, isMerge=True, task_id__in=wanted).order_by("pk").values_list("pk", "task_id")
    ):
        if failed[task_id] < wanted[task_id]:
            doomed.add(pk)
            failed[task_id] += 1
    return doomed


# the pilot error of a demo ES merge job that finds an ES output corrupted (an adler32 mismatch on input)
CORRUPTED_INPUT_ERROR = 1171


def _demo_corrupted_merges(failed: list[int], *, now: datetime) -> list[int]:
    """The ES merge jobs among `failed` of a story task setting `demoCorruptedEsMerges`: N (its first N failing
    merges, `demoMergeFailures`): each reports its first ES job's output corrupted, as a pilot reports
    corruptedFiles with an adler32 mismatch (services.event_service.es_merge_corrupted_mark). Returns the ranges
    marked. One query when no task sets it."""
    if not failed:
        return []
    wanted = {pk: int(n) for pk, n in _story_setting("demoCorruptedEsMerges").items()}
    if not wanted:
        return []
    marked: list[int] = []
    merges = Job.objects.filter(pk__in=failed, task_id__in=wanted, eventService=ES_MERGE_JOB).order_by("pk")
    for merge_id, task_id, attempt in merges.values_list("pk", "task_id", "attemptNr"):
        if (attempt or 1) > wanted[task_id]:
            continue
        first = Job.objects.filter(mergeJob_id=merge_id).order_by("pk").values_list("pk", flat=True).first()
        lfns = list(DatasetFile.objects.filter(outPandaID=first, type="output").values_list("lfn", flat=True))
        Job.objects.filter(pk=merge_id).update(
            pilotErrorCode=CORRUPTED_INPUT_ERROR,
            pilotErrorDiag=f"adler32 mismatch on input file {','.join(lfns)}"[:500],
        )
        marked += es_merge_corrupted_mark(
            merge_job_id=merge_id, lfns=lfns, pilot_error_code=CORRUPTED_INPUT_ERROR, now=now
        )
    return marked


def demo_tasks_inflow(*, now: datetime) -> list[int]:
    """The people who submit work: whenever fewer than INFLOW_ACTIVE tasks are being worked on (neither ended nor
    pending; the watchdog exhausts those pending too long, on the grid's clock), a batch of INFLOW_BATCH new tasks
    of the demo's kinds arrives with one of the stories (demo_stories), in turn, so a newcomer at any hour sees
    tasks start, fail, get throttled and end. Returns the tasks registered."""
    if Task.objects.exclude(status__in=(*TASK_ENDED, "exhausted", "pending")).count() >= INFLOW_ACTIVE:
        return []
    nuclei = list(StorageEndpoint.objects.filter(site__role="nucleus").select_related("site").order_by("pk"))
    if not nuclei:
        return []
    number = Task.objects.count()
    rng = random.Random(number)
    tasks = demo_tasks_register(count=INFLOW_BATCH, files=(10, 40), nuclei=nuclei, now=now, rng=rng, first=number)
    tasks += demo_stories_build(
        nuclei=nuclei,
        architecture=ARCHITECTURE,
        release=RELEASES[1],
        now=now,
        stories=[STORIES[number % len(STORIES)]],
        round_number=number,
    )
    return [task.pk for task in tasks]


def _demo_payloads(task_ids: set[int]) -> dict[int, tuple[int | None, int | None]]:
    """The demo stories' payloads (brokerage.services.demo_stories): task → (run grid minutes, failure percent)."""
    payloads = {}
    for pk, params in Task.objects.filter(pk__in=task_ids).values_list("pk", "taskParams"):
        params = params or {}
        if "demoRunMinutes" in params or "demoFailurePercent" in params:
            run = params.get("demoRunMinutes")
            rate = params.get("demoFailurePercent")
            payloads[pk] = (None if run is None else int(run), None if rate is None else int(rate))
    return payloads


def _downtimes_end(queues: dict[str, dict], *, now: datetime) -> list[int]:
    """Downtimes of the demo end at their time (cric `demo_back_at`): the queue is online again, as CRIC would
    publish it. One statement for all of them. Returns the ids of the queues back."""
    back = [
        PandaQueue(
            pk=queue["pk"],
            status="online",
            cric={**queue["cric"], "status": "online", "demo_back_at": None},
            updated=now,
        )
        for queue in queues.values()
        if queue["status"] != "online"
        and (queue["cric"] or {}).get("demo_back_at")
        and datetime.fromisoformat(queue["cric"]["demo_back_at"]) <= now
    ]
    PandaQueue.objects.bulk_update(back, ["status", "cric", "updated"])
    return [queue.pk for queue in back]


def _links_drain(*, now: datetime, minute: timedelta) -> int:
    """Transfers in the network's queues complete, LINK_DRAIN_PER_MINUTE files per grid minute per link, so a
    link that is full at the start clears (the advice says "wait: it clears by itself" — here it does)."""
    rows = []
    for pk, queued, updated in NetworkLink.objects.filter(queued__gt=0).values_list("pk", "queued", "updated"):
        drained = int((now - updated) / minute * LINK_DRAIN_PER_MINUTE)
        if drained > 0:
            rows.append((pk, max(queued - drained, 0), now))
    bulk_update_values(NetworkLink, fields=("queued", "updated"), rows=rows)
    return len(rows)


def dirac_pilots_simulate(*, now: datetime, minute: timedelta) -> tuple[int, int]:
    """DIRAC's pilots at the demo's sites (brokerage.services.demo_dirac): matched jobs start after a grid minute
    and end after their run time (one in twenty fails); each site's pilots then ask the Matcher for jobs while
    it has free slots, up to PILOT_REQUESTS_PER_SITE per step, and stop at the first request that finds
    nothing (recorded with its reasons); the community submits more work when fewer than DIRAC_BACKLOG wait.
    Nothing happens without DIRAC task queues. Returns the jobs matched and the jobs ended."""
    if not DiracTaskQueue.objects.exists():
        return 0, 0
    dirac_move = partial(status_transition_many, model=DiracJob, actor=ACTOR, now=now)
    started = DiracJob.objects.filter(status="Matched", matchTime__lte=now - minute).values_list("pk", flat=True)
    dirac_move(ids=list(started), from_status="Matched", to_status="Running", reason="pilot started the payload")
    ending = [
        pk
        for pk, since in DiracJob.objects.filter(status="Running").values_list("pk", "lastUpdateTime")
        if since + job_run_minutes(pk) * minute <= now
    ]
    failed = [pk for pk in ending if _draw(pk, 7) % 20 == 0]
    dirac_move(ids=[pk for pk in ending if pk not in failed], from_status="Running", to_status="Done", reason="done")
    dirac_move(ids=failed, from_status="Running", to_status="Failed", reason="application finished with errors")
    busy = dict(
        DiracJob.objects.filter(status__in=("Matched", "Running"))
        .values("site")
        .annotate(n=Count("pk"))
        .values_list("site", "n")
    )
    rng = random.Random(int(now.timestamp()))
    matched = 0
    for pilot in DIRAC_PILOTS:
        resource = resource_from(pilot.resource())
        for _ in range(min(pilot.slots - busy.get(pilot.site, 0), PILOT_REQUESTS_PER_SITE)):
            if not dirac_match_request(resource=resource, now=now, seed=rng.randrange(2**31))["matched"]:
                break
            matched += 1
    if DiracJob.objects.filter(status="Waiting").count() < DIRAC_BACKLOG:
        dirac_jobs_submit(jobs=dirac_demo_jobs(rng, DIRAC_BACKLOG), now=now)
    return matched, len(ending)


def wmcore_pool_simulate(*, now: datetime, minute: timedelta) -> tuple[list[int], list[int]]:
    """The CMS pool for WMCore's jobs: executing jobs idle for two grid minutes start, highest priority first,
    up to their site's running slots; running ones end after their run time, one in twenty failing (exhausted).
    Returns the jobs started and the jobs ended."""
    running = Counter(
        WMBSJob.objects.filter(state="executing", batch_status="Running").values_list(
            "subscription__queue_id", "location"
        )
    )
    slots = {(q, name): n for q, name, n in WMCoreSite.objects.values_list("queue_id", "name", "running_slots")}
    to_start = []
    idle = WMBSJob.objects.filter(state="executing", batch_status="Idle", state_time__lte=now - 2 * minute)
    for pk, queue_id, site in idle.order_by("-priority", "pk").values_list("pk", "subscription__queue_id", "location"):
        if running[(queue_id, site)] < slots.get((queue_id, site), 0):
            running[(queue_id, site)] += 1
            to_start.append(pk)
    WMBSJob.objects.filter(pk__in=to_start).update(batch_status="Running", state_time=now)
    ending = [
        pk
        for pk, start in WMBSJob.objects.filter(state="executing", batch_status="Running").values_list(
            "pk", "state_time"
        )
        if start + job_run_minutes(pk) * minute <= now
    ]
    move = partial(wmbs_job_transition_many, actor=ACTOR, now=now)
    with transaction.atomic():
        move(job_ids=ending, from_status="executing", to_status="complete", columns={"batch_status": ""})
        failed = {pk for pk in ending if _draw(pk, 3) % 20 == 0}
        move(job_ids=[pk for pk in ending if pk not in failed], from_status="complete", to_status="success")
        failed = sorted(failed)
        move(job_ids=failed, from_status="complete", to_status="jobfailed")
        move(job_ids=failed, from_status="jobfailed", to_status="exhausted")
    return to_start, ending


def _heartbeats_send(*, running: list[int], now: datetime, minute: timedelta) -> int:
    """The pilots' heartbeats: a running job's modificationTime moves to now every HEARTBEAT_MINUTES, except
    for the jobs whose pilot was lost. One UPDATE."""
    alive = [pk for pk in running if not pilot_lost(pk)]
    return Job.objects.filter(
        pk__in=alive, jobStatus="running", modificationTime__lte=now - HEARTBEAT_MINUTES * minute
    ).update(modificationTime=now)


def _jobs_per_queue(jobs) -> dict[str, int]:
    return dict(jobs.values("computingSite").annotate(n=Count("pk")).values_list("computingSite", "n"))


def failure_cause(pk: int) -> dict:
    """The error columns of a failed job, drawn from FAILURES by their weights (the same job, the same cause)."""
    draw = _draw(pk, 4) % sum(weight for weight, _ in FAILURES)
    for weight, columns in FAILURES:
        if draw < weight:
            return columns
        draw -= weight
    return FAILURES[-1][1]


MEASURED_COLUMNS = ("cpuConsumptionTime", "maxPSS", "maxRSS", "outputFileBytes")


def _pilot_reports_apply(
    *, finished: list[int], failed: list[int], now: datetime, crashed: set[int] = frozenset()
) -> None:
    """What the pilot reports at a job's end, written in one statement per kind of end:
    - for every job, its CPU time and memory (read by the scout rules of the watchdog) and output bytes;
    - for a failed job, its error columns drawn from FAILURES (`failure_cause`); a demo story's jobs (`crashed`)
      all fail the same way, their transform crashing, as a bad release or configuration does;
    - one other failure in five is the payload running out of memory, above what the job asked for."""
    if not finished and not failed:
        return
    failed_set = set(failed)
    measured, errors = [], []
    rows = Job.objects.filter(pk__in=[*finished, *failed]).values_list(
        "pk", "coreCount", "minRamCount", "startTime", "endTime", "inputFileBytes"
    )
    for pk, cores, ram_per_core, start, end, input_bytes in rows:
        seconds = int(((end or now) - start).total_seconds()) if start else 0  # a holding job has no end yet
        ram = (ram_per_core or 2000) * (cores or 1)
        values = (
            seconds * (cores or 1) * 85 // 100,
            ram * 1024 * (60 + _draw(pk, 3) % 35) // 100,
            ram * 1024 * (70 + _draw(pk, 4) % 35) // 100,
            (input_bytes or 0) * (10 + _draw(pk, 6) % 30) // 100,
        )
        if pk not in failed_set:
            measured.append((pk, *values))
            continue
        cause = CRASH if pk in crashed else failure_cause(pk)
        error = [cause.get(column, None if column.endswith("Code") else "") for column in FAILURE_COLUMNS]
        if pk not in crashed and _draw(pk, 5) % 5 == 0:
            error[:2] = OUT_OF_MEMORY_CODES[0], PILOT[OUT_OF_MEMORY_CODES[0]]
            values = (values[0], int(ram * 1024 * 1.2), *values[2:])
        errors.append((pk, *values, *error))
    bulk_update_values(Job, fields=MEASURED_COLUMNS, rows=measured)
    bulk_update_values(Job, fields=(*MEASURED_COLUMNS, *FAILURE_COLUMNS), rows=errors)


def _pilots_report(queues: dict[str, dict], *, now: datetime, minute: timedelta) -> None:
    """Pilots seen in the last 3 grid hours (those that started a job plus the idle ones that asked) and the
    batch jobs present, per queue."""
    recent = _jobs_per_queue(
        Job.objects.filter(job_archive_window(now - 180 * minute), startTime__gte=now - 180 * minute)
    )
    present = _jobs_per_queue(Job.objects.filter(jobStatus__in=("starting", "running")))
    existing = dict(QueuePilotStats.objects.values_list("queue_id", "pk"))
    rows = []
    for name, queue in queues.items():
        online = queue["status"] in ("online", "brokeroff")
        slots = int((queue["cric"] or {}).get("demo_slots", DEFAULT_SLOTS))
        idle = slots // 10 + 1 if online else 0
        rows.append(
            QueuePilotStats(
                pk=existing.get(queue["pk"]),
                queue_id=queue["pk"],
                pilotsLast3h=recent.get(name, 0) + idle,
                nBatchJob=present.get(name, 0),
                updated=now,
            )
        )
    QueuePilotStats.objects.bulk_create([row for row in rows if row.pk is None], batch_size=1000)
    bulk_update_values(
        QueuePilotStats,
        fields=("pilotsLast3h", "nBatchJob", "updated"),
        rows=[(row.pk, row.pilotsLast3h, row.nBatchJob, row.updated) for row in rows if row.pk is not None],
    )
