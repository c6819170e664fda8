"""The real PanDA pilot 3.7.0.36 (its source from the package index) against a live monitor (issue 36): at a
pilot-driven queue it gets the activated job, runs its payload and reports starting, running and finished, its
log left in the local storage folder; a pilot killed while its job runs leaves the job without heartbeats, and the
watchdog's heartbeat rule fails it and gives its input another attempt. Skipped, saying why, when the package index
cannot be reached."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from brokerage.models import DatasetFile, Decision, Job, JobStatusLog, PandaQueue
from brokerage.services.accounts import oidc_identity_link
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
