"""A job goes acquire → starting → running → finished through our /api/v1/pilot/ with panda-server 1.0.4's own
HTTP client (issue 53; tools/peer/pilot_v1_driver.py), authenticated as pilots of panda-server 1.0 are: an OIDC ID
token of the VO's production role, which our server maps to the permission to change jobs."""

from __future__ import annotations

import json
import subprocess

import pytest
from django.contrib.auth.models import Group, Permission

from brokerage.models import WorkerNode
from monitor.api import oidc
from tests import factories
from tests.oidc_issuer import TestIssuer
from tools.peer.setup import HERE

pytestmark = [pytest.mark.peer, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("production_access")]


@pytest.fixture
def pilot_token(tmp_path, settings):
    issuer = TestIssuer(tmp_path)
    issuer.configure(settings)
    production = Group.objects.create(name="atlas/production")
    production.permissions.add(Permission.objects.get(codename="change_job"))
    yield issuer.token(preferred_username="pilot", name="atlas pilot", groups=["/atlas", "/atlas/production"])
    oidc._key_sets.clear()


def calls(real_panda, server: str, token: str | None, steps: list) -> list:
    env = {**real_panda.environment(), "PANDA_API_URL_SSL": f"{server}/api/v1", "PANDA_BEHIND_REAL_LB": "1"}
    if token:
        env.update({"PANDA_AUTH": "oidc", "PANDA_AUTH_VO": "atlas", "PANDA_AUTH_ID_TOKEN": token})
    ran = subprocess.run(
        [str(real_panda.python), str(HERE / "pilot_v1_driver.py"), json.dumps(steps)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def test_a_job_goes_acquire_update_finished_with_the_real_client(real_panda, live_server, pilot_token):
    queue = factories.pilot_driven_queue()
    job = factories.JobFactory(jobStatus="activated", computingSite=queue.name, prodSourceLabel="managed",
                               resource_type="SCORE", minRamCount=2000)  # fmt: skip
    acquired, *updates, states, worker = calls(real_panda, live_server.url, pilot_token, [
        ["POST", "acquire_jobs", {"site_name": queue.name, "memory": 4000, "resource_type": "SCORE",
                                  "prod_source_label": "managed", "node": "slot1@wn1.example.org", "n_jobs": 1}],
        ["POST", "update_job", {"job_id": job.pk, "job_status": "starting", "node": "wn1.example.org"}],
        ["POST", "update_job", {"job_id": job.pk, "job_status": "running", "core_count": 1}],
        ["POST", "update_job", {"job_id": job.pk, "job_status": "finished", "cpu_consumption_time": 1200,
                                "max_rss": 1500000, "pilot_error_code": 0}],
        ["GET", "get_job_status", {"job_ids": job.pk}],
        ["POST", "update_worker_node", {"site": queue.site.name, "host_name": "slot1@wn1.example.org",
                                        "cpu_model": "AMD EPYC 7B12", "panda_queue": queue.name, "n_logical_cpus": 64}],
    ])  # fmt: skip
    status, answer = acquired
    assert (status, answer["success"], answer["message"]) == (0, True, "")
    assert [described["PandaID"] for described in answer["data"]["jobs"]] == [job.pk]
    for status, answer in updates:
        assert (status, answer) == (0, {"success": True, "message": "", "data": {"StatusCode": 0, "command": "NULL"}})
    # a GET's one id comes as text, and the real conversion makes it a list of one integer
    assert states == [0, {"success": True, "message": "", "data": [
        {"job_id": job.pk, "status": "finished", "attempt_number": 1}
    ]}]  # fmt: skip
    assert worker == [0, {"success": True, "message": "Inserted new worker node.", "data": None}]
    job.refresh_from_db()
    assert (job.jobStatus, job.cpuConsumptionTime, job.maxRSS, job.modificationHost) == (
        "finished", 1200, 1500000, "wn1.example.org"
    )  # fmt: skip
    assert WorkerNode.objects.get().host_name == "wn1.example.org"


def test_without_a_token_the_real_client_is_refused(real_panda, live_server):
    [(status, answer)] = calls(
        real_panda, live_server.url, None, [["POST", "update_job", {"job_id": 1, "job_status": "running"}]]
    )
    # the client raises for the 403 and returns its text (http_client.py: 255 and the error)
    assert status == 255
    assert "403" in answer
