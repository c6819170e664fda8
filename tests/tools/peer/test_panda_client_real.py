"""The real panda-client 2.2.0 and its pbook, installed from the package index into their own environment, against a
live monitor (issue 36): a task's status, details and parameters and a job's description read exactly as our own
API reports them; pbook lists the user's tasks, and kills one only with the permission to. Skipped, saying why,
when the package index cannot be reached."""

from __future__ import annotations

import json
import subprocess

import pytest
from django.contrib.auth.models import Group, Permission, User
from rest_framework.test import APIClient

from brokerage.models import Job, Task
from monitor.api import oidc
from tests import factories
from tests.oidc_issuer import TestIssuer
from tools.peer.panda_client_setup import panda_client_ready
from tools.peer.setup import PeerUnavailable

pytestmark = [pytest.mark.peer, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("production_access")]

# a jediTaskID as large as the real ones: pbook takes an id below 10**7 for a request id (PBookCore.is_reqid)
TASK_ID = 45_000_123


@pytest.fixture(scope="module")
def panda_client():
    try:
        return panda_client_ready()
    except PeerUnavailable as error:
        pytest.skip(f"panda-client test skipped: panda-client could not be installed ({error})")


@pytest.fixture
def issuer(tmp_path, settings):
    """Our own key pair as the VO's issuer: the live server trusts its key set, the test signs ID tokens with it."""
    made = TestIssuer(tmp_path)
    made.configure(settings)

    def token(username: str, name: str, groups: list[str]) -> str:
        return made.token(preferred_username=username, name=name, groups=groups)

    yield token
    oidc._key_sets.clear()


@pytest.fixture
def user_task():
    task = factories.TaskFactory(
        jediTaskID=TASK_ID,
        taskName="user.elund.panda-client-test/",
        status="running",
        superStatus="running",
        prodSourceLabel="user",
        userName="Eva Lund",
        taskParams={"cliParams": "prun --exec 'echo hi' --outDS user.elund.out/", "nMaxFilesPerJob": 10},
    )
    dataset = factories.DatasetFactory(
        task=task, datasetName="user.elund.in.sub1", containerName="user.elund.in/", nFiles=2, nFilesUsed=1
    )
    job = factories.JobFactory(task=task, jobStatus="running", prodSourceLabel="user", computingSite="ANALY_X")
    factories.DatasetFileFactory(dataset=dataset, lfn="in.1.root", PandaID=job.pk, status="running")
    return task, job


def client_calls(panda_client, server: str, home, calls: list, token: str | None = None) -> list:
    result = subprocess.run(
        [str(panda_client.python), str(panda_client.driver), json.dumps(calls)],
        env=panda_client.environment(server=server, token=token, home=home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def pbook(panda_client, server: str, home, token: str, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(panda_client.pbook), *arguments],
        env=panda_client.environment(server=server, token=token, home=home),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_panda_client_reads_what_our_api_reports(panda_client, live_server, user_task, issuer, tmp_path):
    task, job = user_task
    token = issuer("elund", "eva lund", ["/atlas"])
    status, details, params, jobs = client_calls(
        panda_client,
        live_server.url,
        tmp_path,
        [
            ["getTaskStatus", [TASK_ID]],
            ["getJediTaskDetails", [{"jediTaskID": TASK_ID}, True, True]],
            ["getTaskParamsMap", [TASK_ID]],
            ["getJobStatus", [[job.pk, 999_999_999]]],
        ],
        token=token,
    )
    (anonymous,) = client_calls(panda_client, live_server.url, tmp_path, [["getTaskStatus", [TASK_ID]]])
    assert anonymous[0] != 0, anonymous  # without its token the client is refused, and says so
    ours = APIClient()
    ours.force_authenticate(User.objects.get(username="elund"))
    assert status == [0, "running"] == [0, ours.get(f"/api/v1/tasks/{TASK_ID}/").json()["status"]]
    code, merged = details
    assert code == 0
    assert merged["jediTaskID"] == TASK_ID  # the caller's dict, merged with the details
    assert (merged["inDS"], merged["statistics"], merged["PandaID"]) == ("user.elund.in/", "tobedone*1,running*1", [
        job.pk
    ])  # fmt: skip
    assert merged["cliParams"] == "prun --exec 'echo hi' --outDS user.elund.out/"
    assert params == [0, task.taskParams]
    code, (described, missing) = jobs
    assert (code, missing) == (0, None)
    api_job = ours.get(f"/api/v1/jobs/{job.pk}/").json()
    assert (described["PandaID"], described["jobStatus"], described["computingSite"]) == (
        api_job["PandaID"], api_job["jobStatus"], api_job["computingSite"]
    )  # fmt: skip
    assert described["jediTaskID"] == TASK_ID
    assert [f["lfn"] for f in described["Files"]] == ["in.1.root"]
    # panda-client turned the server's dates back into datetimes (printed here as ISO text)
    assert described["creationTime"].startswith(str(Job.objects.get(pk=job.pk).creationTime.year))


def test_pbook_lists_the_users_tasks_pauses_resumes_and_kills_only_with_permission(
    panda_client, live_server, user_task, issuer, tmp_path
):
    factories.TaskFactory(taskName="user.olga.not-mine/", status="running", prodSourceLabel="user", userName="Olga")
    plain = issuer("elund", "eva lund", ["/atlas"])
    shown = pbook(panda_client, live_server.url, tmp_path, plain, "show", "--format", "plain")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "PBook user: Eva Lund" in shown.stdout
    assert str(TASK_ID) in shown.stdout
    assert "user.elund.panda-client-test/" in shown.stdout
    assert "user.olga.not-mine/" not in shown.stdout  # the authenticated user's own tasks
    refused = pbook(panda_client, live_server.url, tmp_path, plain, "kill", str(TASK_ID))
    assert "not the task owner or no production role" in refused.stdout + refused.stderr
    assert Task.objects.get(pk=TASK_ID).status == "running"
    production = Group.objects.create(name="atlas/production")
    production.permissions.add(Permission.objects.get(codename="change_task"))
    with_role = issuer("elund", "eva lund", ["/atlas", "/atlas/production"])
    # pbook has no pause or resume command: its PBookCore calls Client.pauseTask and resumeTask, as here. The
    # answer is the real server's envelope (success, data 0), which 2.2.0's "extended" mode turns into (True, 0)
    (paused,) = client_calls(panda_client, live_server.url, tmp_path, [["pauseTask", [TASK_ID]]], token=with_role)
    assert paused == [0, [True, 0]]
    assert Task.objects.get(pk=TASK_ID).status == "paused"
    (resumed,) = client_calls(panda_client, live_server.url, tmp_path, [["resumeTask", [TASK_ID]]], token=with_role)
    assert resumed == [0, [True, 0]]
    assert Task.objects.get(pk=TASK_ID).status == "running"
    killed = pbook(panda_client, live_server.url, tmp_path, with_role, "kill", str(TASK_ID))
    assert f"Done, jediTaskID={TASK_ID} will be killed" in killed.stdout + killed.stderr, killed.stderr[-2000:]
    assert Task.objects.get(pk=TASK_ID).status == "aborted"
