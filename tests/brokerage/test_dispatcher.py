"""The job dispatcher for real pilots (issue 36): getJob hands the pilot-driven queue's best activated job once,
updateJob moves it along the job machine with its heartbeats, errors and end, getStatus answers; the pilot's HTTP
protocol and the caches it reads; the simulator leaves pilot-driven queues to their pilots."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from rest_framework.test import APIClient

from brokerage.models import DatasetFile, Job, JobStatusLog, PandaQueue
from brokerage.selectors.dispatcher import pilot_queuedata
from brokerage.services.dispatcher import (
    DispatcherRefused,
    pilot_job_acquire,
    pilot_job_statuses,
    pilot_job_update,
    steps_to,
)
from brokerage.services.simulator import grid_simulate_step
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue():
    return factories.pilot_driven_queue()


def activated(queue_name="LOCAL_PILOT", priority=500, **fields):
    return factories.JobFactory(jobStatus="activated", computingSite=queue_name, currentPriority=priority, **fields)


def moves(job_id):
    return [(log.old_status, log.new_status) for log in JobStatusLog.objects.filter(job_id=job_id).order_by("pk")]


def test_get_job_serves_the_share_furthest_below_its_pledge_first(queue):
    # MC 16 (pledge 75 %) runs 9,000 of the grid's 10,000 HS06: 9,000 / 7,500 = 1.2; Express (25 %) runs 1,000 of
    # its 2,500 (0.4): an Express job goes first although its priority is lower; Test goes with the first share
    for name, value in (("MC 16", 75), ("Express", 25), ("Test", 0)):
        factories.GlobalShareFactory(name=name, value=value)
    factories.JobFactory(jobStatus="running", computingSite="ELSEWHERE", gshare="MC 16", hs06=9000)
    factories.JobFactory(jobStatus="running", computingSite="ELSEWHERE", gshare="Express", hs06=1000)
    mc = activated(priority=900, gshare="MC 16")
    express = activated(priority=300, gshare="Express")
    test = activated(priority=100, gshare="Test")
    unknown = activated(priority=1000, gshare="retired share")
    now = timezone.now()
    picked = [pilot_job_acquire(queue="LOCAL_PILOT", node=f"wn{n}", now=now).pk for n in range(4)]
    # Express (rank 0) and Test (rank 0 too) by priority, then MC 16 (rank 1), then the gshare in no tree (last)
    assert picked == [express.pk, test.pk, mc.pk, unknown.pk]


def test_get_job_hands_the_best_activated_job_once(queue):
    now = timezone.now()
    low, high, other_high = activated(priority=500), activated(priority=900), activated(priority=900)
    elsewhere = activated(queue_name="SIMULATED_Q", priority=1000)
    # priority first, then the oldest (lowest PandaID); each job once
    assert pilot_job_acquire(queue="LOCAL_PILOT", node="wn1", now=now).pk == high.pk
    assert pilot_job_acquire(queue="LOCAL_PILOT", node="wn2", now=now).pk == other_high.pk
    assert pilot_job_acquire(queue="LOCAL_PILOT", node="wn3", now=now).pk == low.pk
    assert pilot_job_acquire(queue="LOCAL_PILOT", node="wn4", now=now) is None
    assert Job.objects.get(pk=high.pk).jobStatus == "sent"
    assert JobStatusLog.objects.get(job_id=high.pk).reason == "getJob by a pilot on wn1"
    assert Job.objects.get(pk=elsewhere.pk).jobStatus == "activated"
    # a queue that is not pilot-driven, or not online, hands nothing
    factories.PandaQueueFactory(name="SIMULATED_Q", site=queue.site)
    assert pilot_job_acquire(queue="SIMULATED_Q", node="wn", now=now) is None
    PandaQueue.objects.filter(pk=queue.pk).update(status="offline")
    activated()
    assert pilot_job_acquire(queue="LOCAL_PILOT", node="wn", now=now) is None


def test_update_job_follows_the_pilot_through_the_job_machine(queue):
    now = timezone.now()
    job = activated()
    task_file = factories.DatasetFileFactory(
        dataset=factories.DatasetFactory(task=job.task), PandaID=job.pk, status="picked"
    )
    pilot_job_acquire(queue="LOCAL_PILOT", node="wn1", now=now)
    # the pilot says running first: the job starts on the way
    assert pilot_job_update(job_id=job.pk, state="running", report={"coreCount": "8"}, now=now) == "NULL"
    assert moves(job.pk) == [("activated", "sent"), ("sent", "running")]
    beat = now + timedelta(minutes=30)
    assert pilot_job_update(job_id=job.pk, state="running", report={"maxRSS": "2048000"}, now=beat) == "NULL"
    job.refresh_from_db()
    assert (job.modificationTime, job.actualCoreCount, job.maxRSS) == (beat, 8, 2048000)  # a heartbeat
    end = now + timedelta(hours=1)
    report = {"pilotErrorCode": "1305", "pilotErrorDiag": "Failed to execute payload", "cpuConsumptionTime": "3500.7"}
    assert pilot_job_update(job_id=job.pk, state="failed", report=report, now=end) == "NULL"
    job.refresh_from_db()
    assert (job.jobStatus, job.pilotErrorCode, job.pilotErrorDiag, job.cpuConsumptionTime) == (
        "failed", 1305, "Failed to execute payload", 3500
    )  # fmt: skip
    assert job.endTime == end
    task_file.refresh_from_db()
    assert (task_file.status, task_file.attemptNr, task_file.failedAttempt) == ("ready", 1, 1)  # tried again
    # the pilot repeating its last word changes nothing; another word is answered with kill
    assert pilot_job_update(job_id=job.pk, state="failed", report={}, now=end) == "NULL"
    assert pilot_job_update(job_id=job.pk, state="running", report={}, now=end) == "tobekilled"


def test_a_finished_job_ends_like_any_and_a_killed_one_is_told(queue):
    now = timezone.now()
    job, killed = activated(priority=900), activated(priority=100)
    pilot_job_acquire(queue="LOCAL_PILOT", node="wn1", now=now)
    for state in ("starting", "running", "transferring", "finished"):
        pilot_job_update(job_id=job.pk, state=state, report={}, now=now)
    assert [new for _, new in moves(job.pk)] == ["sent", "starting", "running", "transferring", "finished"]
    pilot_job_acquire(queue="LOCAL_PILOT", node="wn2", now=now)
    Job.objects.filter(pk=killed.pk).update(jobStatus="cancelled")  # killed by a shifter meanwhile
    assert pilot_job_update(job_id=killed.pk, state="running", report={}, now=now) == "tobekilled"
    assert pilot_job_statuses(job_ids=[job.pk, killed.pk, 999_999]) == [
        ("finished", "NULL"),
        ("cancelled", "tobekilled"),
        ("notfound", "NULL"),
    ]


def test_update_job_refuses_what_the_pilot_cannot_say(queue):
    job = activated()
    now = timezone.now()
    with pytest.raises(DispatcherRefused, match="state: one of starting"):
        pilot_job_update(job_id=job.pk, state="dancing", report={}, now=now)
    with pytest.raises(DispatcherRefused, match="jobId: no job 999999999"):
        pilot_job_update(job_id=999_999_999, state="running", report={}, now=now)
    with pytest.raises(DispatcherRefused, match="is activated, it cannot become running"):
        pilot_job_update(job_id=job.pk, state="running", report={}, now=now)  # no getJob yet
    assert Job.objects.get(pk=job.pk).jobStatus == "activated"


def pilot_client(*codenames):
    user = User.objects.create_user("pilot-" + "-".join(codenames or ("none",)), password="x")
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {factories.api_token(user)}")
    return client


def test_the_pilot_protocol_over_http(queue):
    job = activated()
    form = {"siteName": "LOCAL_PILOT", "computingElement": "LOCAL_PILOT", "node": "wn7", "prodSourceLabel": "user"}
    assert APIClient().post("/server/panda/getJob", form).json()["StatusCode"] == 60  # no token
    assert pilot_client().post("/server/panda/getJob", form).json()["StatusCode"] == 60  # no permission
    pilot = pilot_client("change_job")
    described = pilot.post("/server/panda/getJob", form).json()
    assert (described["StatusCode"], described["PandaID"], described["taskID"]) == (0, job.pk, job.task_id)
    assert described["logFile"] == described["outFiles"]
    assert described["logFile"].endswith(f".{job.pk}.log.tgz")
    assert (described["ddmEndPointOut"], described["inFiles"]) == ("LOCAL-SITE_DATADISK", "NULL")
    assert described["transformation"].startswith("http")  # the demo's transform names no URL: the payload's
    assert pilot.post("/server/panda/getJob", form).json() == {"StatusCode": 20}  # no job left
    update = {"jobId": job.pk, "state": "starting", "node": "wn7", "timestamp": "2026-11-28T03:00:00"}
    assert pilot.post("/server/panda/updateJob", update).json() == {"StatusCode": 0, "command": "NULL"}
    bad = pilot.post("/server/panda/updateJob", {"jobId": "x", "state": "running"}).json()
    assert (bad["StatusCode"], bad["errorDialog"]) == (50, "jobId: a PandaID, not 'x'")
    status = APIClient().post("/server/panda/getStatus", {"ids": f"{job.pk},12"}).json()
    assert status == {"StatusCode": 0, "status": "starting,notfound", "command": "NULL,NULL"}
    wrong = APIClient().get("/server/panda/getJob").json()  # the protocol answers in its own words
    assert (wrong["StatusCode"], wrong["errorDialog"]) == (50, 'Method "GET" not allowed.')


def test_the_queue_and_storages_the_pilot_reads(queue, client):
    whole = client.get("/cache/schedconfig/LOCAL_PILOT.all.json").json()
    assert (whole["name"], whole["atlas_site"], whole["astorages"]) == (
        "LOCAL_PILOT", "LOCAL-SITE", {"write_lan": ["LOCAL-SITE_DATADISK"]}
    )  # fmt: skip
    # the mv copytool for every activity, moving files to their final place (the pilot's --output-dir)
    assert whole["acopytools"]["pw"] == ["mv"]
    assert "mv_final_destination" in whole["catchall"]
    assert client.get("/cache/schedconfig/LOCAL_PILOT.json").json() == {"LOCAL_PILOT": whole}
    assert client.get("/cache/schedconfig/NOWHERE.all.json").status_code == 404
    storages = client.get("/cache/ddmendpoints.json").json()
    assert storages["LOCAL-SITE_DATADISK"]["site"] == "LOCAL-SITE"
    # a queue the simulator serves keeps its own copytools
    factories.PandaQueueFactory(name="SIMULATED_Q", site=queue.site, cric={"copytools": {"rucio": {"setup": ""}}})
    assert pilot_queuedata(queue="SIMULATED_Q")["copytools"] == {"rucio": {"setup": ""}}


def test_the_simulator_leaves_pilot_driven_queues_to_their_pilots(queue):
    factories.PandaQueueFactory(name="SIMULATED_Q", site=queue.site, status="online")
    mine, simulated = activated(), activated(queue_name="SIMULATED_Q")
    running = factories.JobFactory(jobStatus="running", computingSite="LOCAL_PILOT", startTime=timezone.now())
    Job.objects.filter(pk=running.pk).update(modificationTime=timezone.now() - timedelta(days=1))
    grid_simulate_step(now=timezone.now() + timedelta(days=2), speed=60)
    assert Job.objects.get(pk=simulated.pk).jobStatus in ("running", "finished", "failed")
    assert Job.objects.get(pk=mine.pk).jobStatus == "activated"  # waits for a real pilot
    stale = Job.objects.get(pk=running.pk)
    assert stale.jobStatus == "running"  # neither ended nor beaten for by the simulator
    assert stale.modificationTime < timezone.now() - timedelta(hours=23)
    assert not DatasetFile.objects.filter(PandaID=mine.pk).exists()


def test_the_job_page_shows_the_pilots_states_and_heartbeats(queue, client):
    job = activated()
    now = timezone.now()
    pilot_job_acquire(queue="LOCAL_PILOT", node="wn42.example.org", now=now)
    pilot_job_update(job_id=job.pk, state="starting", report={}, now=now)
    pilot_job_update(job_id=job.pk, state="running", report={}, now=now + timedelta(seconds=5))
    beat = now + timedelta(minutes=30)
    pilot_job_update(job_id=job.pk, state="running", report={}, now=beat)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "getJob by a pilot on wn42.example.org" in page
    assert page.count("pilot reported it") == 2  # starting, running
    assert f"{timezone.localtime(beat):%Y-%m-%d %H:%M:%S} · run by a real pilot" in page
    assert "real pilots ask for its jobs here" in client.get("/queues/LOCAL_PILOT/").content.decode()


def test_the_ways_through_the_job_machine_are_its_shortest():
    assert steps_to("sent", "finished") == ("running", "finished")  # starting skipped when the pilot skips it
    assert steps_to("starting", "holding") == ("running", "holding")
    assert steps_to("running", "transferring") == ("transferring",)
    assert steps_to("transferring", "holding") is None  # the machine has no way back
    assert steps_to("running", "running") is None  # there already: a heartbeat, not a move


def test_a_job_with_a_log_template_hands_the_pilot_its_log_file(queue):
    from brokerage.selectors.dispatcher import pilot_job_description

    job = activated()
    log = factories.DatasetFactory(task=job.task, type="log", datasetName="mc23.x.log_tid00000042_00", status="running")
    factories.DatasetFileFactory(task=job.task, dataset=log, type="log", status="defined", outPandaID=job.pk,
                                 lfn="log.00000042._000007.job.log.tgz", GUID="5e7c1f")  # fmt: skip
    described = pilot_job_description(job=job)
    assert (described["logFile"], described["outFiles"], described["logGUID"], described["realDatasets"]) == (
        "log.00000042._000007.job.log.tgz", "log.00000042._000007.job.log.tgz", "5e7c1f", "mc23.x.log_tid00000042_00"
    )  # fmt: skip


def test_acquire_criteria_are_getjobs_labels_and_limits(queue):
    # one activated job of each label (and a gangarobot test job), the pilot asks with each label in turn
    from brokerage.services.dispatcher import AcquireCriteria, pilot_jobs_acquire

    labels = ("managed", "test", "prod_test", "install", "user", "panda", "ptest")
    jobs = {label: activated(prodSourceLabel=label) for label in labels}
    robot = activated(prodSourceLabel="rc_test", processingType="gangarobot")
    now = timezone.now()

    def taken(**criteria) -> set[str]:
        got = pilot_jobs_acquire(queue="LOCAL_PILOT", node="wn", now=now, n_jobs=50,
                                 criteria=AcquireCriteria(**criteria))  # fmt: skip
        Job.objects.filter(pk__in=[job.pk for job in got]).update(jobStatus="activated")  # back for the next ask
        return {job.prodSourceLabel if job.pk != robot.pk else "gangarobot" for job in got}

    assert taken() == {"managed", "test", "prod_test", "install"}  # no label: production's (getJobs: None, managed)
    assert taken(prod_source_label="managed") == {"managed", "test", "prod_test", "install"}
    assert taken(prod_source_label="user") == {"user", "panda", "install"}
    assert taken(prod_source_label="unified") == {"managed", "test", "prod_test", "install", "user", "panda"}
    assert taken(prod_source_label="test", computing_element="CE") == {"test", "prod_test", "install", "gangarobot"}
    assert taken(prod_source_label="ptest") == {"ptest"}  # any other label: itself
    # memory 4,000 MB: a job of 3,000 or of 0 (any) fits, one of 6,000 does not; walltime 2 h against 3 h
    Job.objects.filter(pk=jobs["managed"].pk).update(minRamCount=6000)
    Job.objects.filter(pk=jobs["test"].pk).update(minRamCount=3000, maxWalltime=3 * 3600)
    Job.objects.filter(pk=jobs["prod_test"].pk).update(minRamCount=0, maxDiskCount=50_000)
    assert taken(memory=4000) == {"test", "prod_test", "install"}
    assert taken(memory=4000, remaining_time=7200) == {"prod_test", "install"}
    assert taken(memory=4000, remaining_time=7200, disk_space=10_000) == {"install"}
    # one user's jobs; one task's
    assert taken(prod_source_label="user", prod_user="Eva Lund") == set()
    Job.objects.filter(pk=jobs["user"].pk).update(prodUserName="Eva Lund")
    assert taken(prod_source_label="user", prod_user="Eva Lund") == {"user"}
    assert taken(task_id=jobs["install"].task_id) == {"install"}
