"""The real PanDA pilot 3.7.0.36 (its source from the package index) against a live monitor (issue 36): at a
pilot-driven queue it gets the activated job, runs its payload and reports starting, running and finished, its
log left in the local storage folder; a pilot killed while its job runs leaves the job without heartbeats, and the
watchdog's heartbeat rule fails it and gives its input another attempt. Skipped, saying why, when the package index
cannot be reached."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from brokerage.models import DatasetFile, Decision, Job, JobStatusLog, PandaQueue
from brokerage.services.accounts import oidc_identity_link
from brokerage.services.dispatcher import pilot_job_update
from brokerage.services.jobs import job_generation_cycle_run
from brokerage.services.status import job_status_transition_many
from brokerage.services.watchdog import job_timeout_apply
from monitor.api import oidc
from tests import factories
from tests.jobs.conftest import make_one_queue_grid, make_ready_task
from tests.oidc_issuer import ISSUER, TestIssuer
from tools.peer.pilot_setup import pilot_ready
from tools.peer.setup import PeerUnavailable

pytestmark = [pytest.mark.peer, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("production_access")]

QUEUE, SITE = "SAT_Q", "SAT"


@pytest.fixture(scope="module")
def pilot():
    try:
        return pilot_ready()
    except PeerUnavailable as error:
        pytest.skip(f"pilot test skipped: the PanDA pilot could not be fetched ({error})")


@pytest.fixture
def pilot_token(tmp_path, settings):
    """A pilot's identity: an OIDC token of a user with the permission to change jobs, in a file without newline."""
    issuer = TestIssuer(tmp_path)
    issuer.configure(settings)
    user = User.objects.create_user("pilot", password="x")
    user.user_permissions.add(Permission.objects.get(codename="change_job"))
    # the pilot's identity at the issuer, linked to that account on purpose (a name in a token never is: issue 47)
    oidc_identity_link(issuer=ISSUER, subject="pilot-robot-1", user=user)
    token = issuer.token(sub="pilot-robot-1", preferred_username="pilot")
    path = tmp_path / "auth" / "token"
    path.parent.mkdir()
    path.write_text(token)
    yield path
    oidc._key_sets.clear()


@pytest.fixture
def activated_job():
    """A job our brokerage placed at a pilot-driven queue (the one-queue grid of the job tests: SAT_Q at site SAT),
    its input transferred: activated, waiting for a pilot."""
    queue = make_one_queue_grid()
    PandaQueue.objects.filter(pk=queue.pk).update(pilot_driven=True)
    work_queue = factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)
    task = make_ready_task(work_queue, files=1, nScoutJobs=0)
    now = timezone.now()
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=now)
    (job,) = Job.objects.filter(task=task)
    assert job.computingSite == QUEUE  # chosen by the job brokerage, its decision recorded
    assert Decision.objects.filter(task=task, chosen=QUEUE).exists()
    if job.jobStatus == "assigned":  # the simulator's transfer of its input (it leaves pilot-driven queues alone after)
        job_status_transition_many(from_status="assigned", to_status="activated", job_ids=[job.pk], now=now)
    job.refresh_from_db()
    assert job.jobStatus == "activated"
    return job


def start_pilot(pilot, live_server, tmp_path, token_file, settings) -> subprocess.Popen:
    work = tmp_path / "work"
    work.mkdir()
    config = pilot.configuration(server=live_server.url, path=tmp_path / "pilot.cfg")
    transforms = pilot.transform_dir(tmp_path / "transforms", settings.PILOT_PAYLOAD_TRANSFORMATION)
    storage = tmp_path / "storage"  # the local storage endpoint: the pilot's --output-dir
    command = pilot.command(server=live_server.url, queue=QUEUE, site=SITE, output_dir=storage, lifetime=300)
    return subprocess.Popen(
        command,
        cwd=work,
        env=pilot.environment(config=config, token_file=token_file, transforms=transforms, home=work),
        stdout=(tmp_path / "pilot.out").open("w"),
        stderr=subprocess.STDOUT,
        process_group=0,  # its own process group, ended whole (not a session: the pilot calls setpgrp itself)
    )


def moves(job_id: int) -> list[str]:
    return [log.new_status for log in JobStatusLog.objects.filter(job_id=job_id).order_by("pk")]


def test_a_real_pilot_runs_a_job_to_finished(pilot, live_server, activated_job, pilot_token, tmp_path, settings):
    (tmp_path / "storage").mkdir()
    started = time.monotonic()
    process = start_pilot(pilot, live_server, tmp_path, pilot_token, settings)
    try:
        process.wait(timeout=240)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    seconds = time.monotonic() - started
    log = (tmp_path / "pilot.out").read_text()
    job = Job.objects.get(pk=activated_job.pk)
    assert job.jobStatus == "finished", log[-3000:]
    assert moves(job.pk)[-4:] == ["sent", "starting", "running", "finished"]
    assert "payload: sleep 5" in log  # the payload ran
    assert job.startTime is not None
    assert job.endTime >= job.startTime
    # the pilot's log, moved by the mv copytool into the local storage folder at its Rucio path (scope/hash/name)
    (stored,) = (tmp_path / "storage").glob(f"panda/*/*/*.{job.pk}.log.tgz")
    assert stored.stat().st_size > 0
    # the input file is done, as at any job's end
    assert DatasetFile.objects.get(PandaID=job.pk).status == "finished"
    # the job page tells the pilot's story (to a signed-in reader: the dashboard is closed to others here)
    shifter = Client()
    shifter.force_login(User.objects.create_user("shifter"))
    page = shifter.get(f"/jobs/{job.pk}/").content.decode()
    assert "getJob by a pilot on" in page
    assert "pilot reported finished" in page
    assert "run by a real pilot" in page
    print(f"pilot: getJob to finished in {seconds:.1f} s")


def test_a_killed_pilots_job_times_out_and_its_input_is_tried_again(
    pilot, live_server, activated_job, pilot_token, tmp_path, settings
):
    settings.PILOT_PAYLOAD_PARAMETERS = "sleep 607"  # longer than the test: the pilot is killed while it runs
    (tmp_path / "storage").mkdir()
    process = start_pilot(pilot, live_server, tmp_path, pilot_token, settings)
    try:
        deadline = time.monotonic() + 120
        while Job.objects.get(pk=activated_job.pk).jobStatus != "running" and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        subprocess.run(["pkill", "-KILL", "-f", "sleep 607"], check=False)  # the payload, if in another group
    job = Job.objects.get(pk=activated_job.pk)
    assert job.jobStatus == "running", (tmp_path / "pilot.out").read_text()[-3000:]
    # no heartbeat for longer than HEARTBEAT_TIMEOUT (2 h): the watchdog fails it, its input goes back
    later = job.modificationTime + timedelta(hours=2, minutes=1)
    assert later > timezone.now()
    timed_out = job_timeout_apply(now=later)
    assert timed_out.failed == [job.pk]
    job.refresh_from_db()
    assert job.jobStatus == "failed"
    assert "no heartbeat for 2" in JobStatusLog.objects.filter(job_id=job.pk).order_by("pk").last().reason
    read = DatasetFile.objects.get(task_id=job.task_id, type="input")
    assert (read.status, read.attemptNr, read.failedAttempt) == ("ready", 1, 1)  # another attempt, as the rule says


def test_a_real_pilots_event_range_calls_move_the_ranges(pilot, live_server, pilot_token, tmp_path, settings):
    """Pilot 3.7's own PandaCommunicator (tools/peer/pilot_events_driver.py) asks our getEventRanges for two ranges of
    a running ES job, reports the first failed and the second finished (its two message versions); the job's final
    updateJob then ends it from those reports: es_retry, its failed and untaken ranges to a new consumer."""
    import json

    from brokerage.models import Event
    from brokerage.states import ES_JOB

    task = factories.TaskFactory(status="running", eventService=1, taskParams={"maxAttemptEsJob": 3})
    job = factories.JobFactory(
        task=task, jobStatus="running", eventService=ES_JOB, computingSite=QUEUE, jobsetID=5, attemptNr=1,
        maxAttempt=3,
    )  # fmt: skip
    file = factories.DatasetFileFactory(
        dataset=factories.DatasetFactory(task=task), status="running", nEvents=750, lfn="EVNT.05._1.root"
    )
    for number in range(3):
        factories.EventFactory(
            file=file, PandaID=job.pk, status="ready", job_processID=number, def_min_eventID=250 * number,
            def_max_eventID=250 * number + 249,
        )  # fmt: skip
    config = pilot.configuration(server=live_server.url, path=tmp_path / "pilot.cfg")
    environment = pilot.environment(
        config=config, token_file=pilot_token, transforms=tmp_path / "transforms", home=tmp_path
    )
    driver = Path(__file__).resolve().parents[3] / "tools" / "peer" / "pilot_events_driver.py"
    done = subprocess.run(
        [sys.executable, str(driver), str(pilot.source), live_server.url, str(job.pk), "5", str(task.pk)],
        env=environment, capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["status"] == 0, (result, done.stderr[-3000:])
    assert [r["eventRangeID"] for r in result["got"]] == [f"{task.pk}-{job.pk}-{file.pk}-{n}-0" for n in (0, 1)]
    assert [answer["Returns"] for answer in result["updated"]] == [[True], [True]]
    assert list(Event.objects.filter(PandaID=job.pk).order_by("pk").values_list("status", flat=True)) == [
        "failed", "finished", "ready"
    ]  # fmt: skip
    # its final update (over HTTP in tests/brokerage/test_dispatcher_events.py)
    assert pilot_job_update(job_id=job.pk, state="finished", report={}, now=timezone.now()) == "NULL"
    job.refresh_from_db()
    assert (job.jobStatus, job.jobSubStatus) == ("merging", "es_retry")
