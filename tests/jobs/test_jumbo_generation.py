"""Jumbo and co-jumbo jobs at job generation (services/jobs.py job_generation_plan and _write; seed 002, "Jumbo jobs
and co-jumbo jobs"; JobGenerator.makeJumboJobs, 1.0.4), and the simulator's jumbo jobs processing events on demand.
Worked numbers: a task asking for 2 jumbo jobs, one per queue, with one active at J1, gets one more at J2; a job set
with no queue of its own but a jumbo queue lacking its job makes fake co-jumbo jobs at WAITING_CO_JUMBO; a task
lacking jumbo jobs (L) gets jumbo jobs only."""

from datetime import UTC, datetime
from types import SimpleNamespace

from brokerage import states
from brokerage.services.jobs import job_generation_plan, jumbo_placements
from brokerage.splitter import JobChunk

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
JUMBO = SimpleNamespace(filter="jumbo jobs", code="jumbo")
OTHER = SimpleNamespace(filter="memory", code="memory")


def task(task_id=1, use_jumbo="P", **params):
    return {
        "jediTaskID": task_id, "taskName": f"mc.task{task_id}", "status": "running", "useJumbo": use_jumbo,
        "taskParams": {"maxAttempt": 5, "nJumboJobs": 2, **params}, "coreCount": 8, "ramCount": 2000,
        "prodSourceLabel": "managed", "processingType": "simul", "currentPriority": 450, "nucleus": "CERN",
        "gshare": "MC", "resource_type": "MCORE", "userName": "prod", "workingGroup": "", "transUses": "Athena",
        "transHome": "", "architecture": "", "site": "", "eventService": 1,
    }  # fmt: skip


def decision(chosen, skipped):
    return SimpleNamespace(chosen=chosen, outcome="assigned" if chosen else "pending", message="m", skipped=skipped)


def plan(tasks_decisions, *, files=None, active=None):
    return job_generation_plan(
        plans=tasks_decisions,
        queues={"Q": {"corecount": 8}},
        work_queue=SimpleNamespace(pk=4),
        files=files or {},
        now=NOW,
        active_jumbo=active or {},
    )


def test_jumbo_jobs_fill_what_the_task_asks_one_per_queue_in_name_order():
    skipped = {"J2": JUMBO, "J1": JUMBO, "J3": JUMBO, "SMALL": OTHER}
    # 2 asked, one active at J1 (maxJumboPerSite 1 unset): one more, at J2, the next queue by name
    assert jumbo_placements(task=task(), decision=decision("Q", skipped), active={1: {"J1": 1}}) == ["J2"]
    # none active: J1 and J2; maxJumboPerSite 2: both at J1
    assert jumbo_placements(task=task(), decision=decision("Q", skipped), active={}) == ["J1", "J2"]
    assert jumbo_placements(task=task(maxJumboPerSite=2), decision=decision("Q", skipped), active={}) == ["J1", "J1"]
    # enough active (2 of 2), or the flag off (D), or a site named: none
    assert jumbo_placements(task=task(), decision=decision("Q", skipped), active={1: {"X": 2}}) == []
    assert jumbo_placements(task=task(use_jumbo="D"), decision=decision("Q", skipped), active={}) == []
    assert jumbo_placements(task={**task(), "site": "Q"}, decision=decision("Q", skipped), active={}) == []


def test_co_jumbo_jobs_go_where_brokerage_chose_and_jumbo_jobs_to_the_jumbo_queues():
    files = {11: {"attemptNr": 0, "ramCount": None, "status": "ready", "PandaID": None, "task_id": 1},
             12: {"attemptNr": 0, "ramCount": None, "status": "ready", "PandaID": None, "task_id": 1}}  # fmt: skip
    writes = plan(
        [(task(), [JobChunk((11,), 1024**2, 500)], 7, decision("Q", {"J1": JUMBO}), None)],
        files=files,
        active={1: {"J1": 0}},
    )
    jumbo, co_jumbo = writes.jobs
    assert (jumbo.eventService, jumbo.computingSite, jumbo.jobName, jumbo.nInputFiles) == (
        states.JUMBO_JOB, "J1", "mc.task1.7.jumbo0", 0
    )  # fmt: skip
    assert (co_jumbo.eventService, co_jumbo.computingSite, co_jumbo.nEvents) == (states.CO_JUMBO_JOB, "Q", 500)
    assert [chunk.files for chunk in writes.job_chunks] == [(), (11,)]
    # file 12 is left to give out: useJumbo P (setUseJumboFlag_JEDI)
    assert writes.jumbo_flags == {1: "P"}


def test_no_queue_for_the_job_set_but_a_jumbo_queue_lacking_its_job_makes_fake_co_jumbo_jobs():
    files = {11: {"attemptNr": 0, "ramCount": None, "status": "ready", "PandaID": None, "task_id": 1}}
    writes = plan([(task(), [JobChunk((11,), 1024**2, 500)], 7, decision(None, {"J1": JUMBO}), None)], files=files)
    jumbo, fake = writes.jobs
    assert (jumbo.computingSite, fake.computingSite, fake.eventService) == (
        "J1", states.WAITING_CO_JUMBO, states.CO_JUMBO_JOB
    )  # fmt: skip
    assert dict(writes.task_moves) == {}  # running already
    assert writes.jumbo_flags == {1: "R"}  # every file given out
    assert (writes.pending, writes.assigned) == ([1], [])  # the job set's own decision found no queue
    # without a jumbo queue lacking its job, the task waits pending as any other
    writes = plan([(task(), [JobChunk((11,), 1024**2, 500)], 7, decision(None, {"J1": JUMBO}), None)],
                  files=files, active={1: {"J1": 2}})  # fmt: skip
    assert writes.jobs == []
    assert writes.task_moves == {"running": {1: ("pending", "m")}}


def test_a_task_lacking_jumbo_jobs_gets_jumbo_jobs_only():
    writes = plan([(task(use_jumbo="L"), [JobChunk((11,), 1024**2, 500)], 7, decision("Q", {"J1": JUMBO}), None)])
    assert [(job.eventService, job.computingSite) for job in writes.jobs] == [(states.JUMBO_JOB, "J1")]
    assert writes.jumbo_flags == {1: "R"}


def test_scouts_make_no_jumbo_jobs():
    scouting = {**task(nScoutJobs=2), "status": "ready"}
    writes = plan([(scouting, [JobChunk((11,), 1024**2, 500)], 7, decision("Q", {"J1": JUMBO}), None)])
    assert [job.computingSite for job in writes.jobs] == ["Q"]
