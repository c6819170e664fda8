"""job_generation_plan: the writes a cycle's decisions ask for, made without a query (services/jobs.py, issue 48:
read → plan → write). Worked numbers: a retried file brings its attempt and its memory; a pseudo-queue's SCORE
resource gives one core; a pending decision moves the task to pending with the message; a throttled one only
writes the dialog."""

from datetime import UTC, datetime
from types import SimpleNamespace

from brokerage.services.jobs import job_generation_plan
from brokerage.splitter import JobChunk

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def task(task_id, **values):
    row = {
        "jediTaskID": task_id, "taskName": f"mc.task{task_id}", "status": "running", "taskParams": {"maxAttempt": 5},
        "coreCount": 0, "ramCount": 2000, "prodSourceLabel": "managed", "processingType": "simul",
        "currentPriority": 500, "nucleus": "CERN", "gshare": "MC", "resource_type": "SCORE", "userName": "prod",
        "workingGroup": "", "transUses": "Athena-24.0.30", "transHome": "", "architecture": "",
    }  # fmt: skip
    return {**row, **values}


def decision(chosen, outcome="assigned", message=""):
    return SimpleNamespace(chosen=chosen, outcome=outcome, message=message)


def test_jobs_tasks_and_dialogs_from_three_decisions():
    files = {
        11: {"attemptNr": 2, "ramCount": 3500, "status": "ready", "PandaID": 900},  # retried after job 900 failed
        12: {"attemptNr": 0, "ramCount": None, "status": "ready", "PandaID": None},
    }
    plans = [
        (task(1), [JobChunk((11, 12), 4 * 1024**2, 200)], 7, decision("CERN-UCORE/SCORE"), None),
        (task(2, status="ready"), [JobChunk((13,), 1024**2, None)], 8, decision(None, "pending", "no queue"), None),
        (task(3), [JobChunk((14,), 1024**2, None)], 9, decision(None, "throttled", "user over cap"), None),
    ]
    writes = job_generation_plan(
        plans=plans, queues={"CERN-UCORE": {"corecount": 8}}, work_queue=SimpleNamespace(pk=4), files=files, now=NOW
    )
    (job,) = writes.jobs
    assert (job.computingSite, job.coreCount, job.attemptNr, job.minRamCount, job.maxAttempt) == (
        "CERN-UCORE",  # the pseudo-queue's unified queue
        1,  # coreCount 0 takes the queue's cores: one at a SCORE pseudo-queue
        3,  # the retried file's attempt 2, plus one
        3500,  # the memory its last failure asked for, above the task's 2000
        5,
    )
    assert (job.jobStatus, job.jobsetID, job.jobName, job.nInputFiles, job.nEvents) == (
        "pending", 7, "mc.task1.7.0", 2, 200
    )  # fmt: skip
    assert writes.previous_jobs == [[900]]
    assert job.inputFiles == "11:2,12:0"  # the files it takes and the attempt each is at, written with the job
    assert writes.task_moves == {"ready": {2: ("pending", "no queue")}}
    assert writes.task_extra == {2: {"errorDialog": "no queue"}}
    assert writes.throttled_dialogs == [(3, "user over cap")]
    assert (writes.pending, writes.assigned) == ([2], [1])
