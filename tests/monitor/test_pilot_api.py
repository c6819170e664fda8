"""panda-server 1.0's pilot API (issue 53, monitor/panda_api/pilot.py): a job goes acquire → update → finished
through `/api/v1/pilot/…` in the real envelope; acquire_jobs hands what fits the worker, many at once; the
production role, the real refusals; update_jobs_bulk; update_worker_node keeps the host's CPU."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from rest_framework.test import APIClient

from brokerage.models import Job, JobStatusLog, WorkerNode, WorkerNodeQueue
from brokerage.services.housekeeping import housekeeping_run
from brokerage.services.worker_nodes import cpu_model_normalize, host_name_clean
from tests import factories

pytestmark = pytest.mark.django_db

PILOT = "/api/v1/pilot"


@pytest.fixture
def queue():
    return factories.pilot_driven_queue()


def activated(priority=500, **fields):
    fields.setdefault("prodSourceLabel", "managed")
    return factories.JobFactory(jobStatus="activated", computingSite="LOCAL_PILOT", currentPriority=priority, **fields)


def client_with(*codenames, first_name="", last_name=""):
    user = User.objects.create_user("pilot-" + "-".join(codenames or ("none",)), password="x",
                                    first_name=first_name, last_name=last_name)  # fmt: skip
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {factories.api_token(user)}")
    return client


def post(client, method, body):
    return client.post(f"{PILOT}/{method}", body, format="json")


def test_a_job_goes_acquire_update_finished(queue):
    job = activated()
    pilot = client_with("change_job")
    answer = post(
        pilot, "acquire_jobs", {"site_name": "LOCAL_PILOT", "node": "slot1@wn7", "prod_source_label": "managed"}
    )
    body = answer.json()
    assert (answer.status_code, set(body)) == (200, {"success", "message", "data"})
    assert (body["success"], body["data"]["StatusCode"]) == (True, 0)
    [described] = body["data"]["jobs"]
    assert (described["PandaID"], described["taskID"], described["StatusCode"]) == (job.pk, job.task_id, 0)
    assert described["nSent"] == 1  # the queue's production job sent this minute: this one
    for status in ("starting", "running"):
        answer = post(pilot, "update_job", {"job_id": job.pk, "job_status": status, "node": "wn7", "core_count": 8})
        assert answer.json() == {"success": True, "message": "", "data": {"StatusCode": 0, "command": "NULL"}}
    final = {"job_id": job.pk, "job_status": "finished", "cpu_consumption_time": 3500, "max_rss": 2048000.0,
             "pilot_error_code": 0, "start_time": "2026-11-30 05:00:00"}  # fmt: skip
    assert post(pilot, "update_job", final).json()["data"] == {"StatusCode": 0, "command": "NULL"}
    job.refresh_from_db()
    assert (job.jobStatus, job.cpuConsumptionTime, job.maxRSS, job.actualCoreCount) == ("finished", 3500, 2048000, 8)
    assert [log.new_status for log in JobStatusLog.objects.filter(job_id=job.pk).order_by("pk")] == [
        "sent", "starting", "running", "finished"
    ]  # fmt: skip
    # get_job_status: a GET, ids repeated in the query; an id that is no job "not found"
    states = pilot.get(f"{PILOT}/get_job_status", {"job_ids": [job.pk, 12]}).json()
    assert states["data"] == [
        {"job_id": job.pk, "status": "finished", "attempt_number": 1},
        {"job_id": 12, "status": "not found", "attempt_number": 0},
    ]
    # the job that ended here answers a later word with kill, as the old protocol does
    assert post(pilot, "update_job", {"job_id": job.pk, "job_status": "running"}).json()["data"]["command"] == (
        "tobekilled"
    )


def test_acquire_hands_what_fits_the_worker_many_at_once(queue):
    # 4,000 MB asked: the 3,000 MB job and the one with no requirement fit, the 6,000 MB one does not
    small = activated(priority=900, minRamCount=3000)
    anything = activated(priority=800, minRamCount=0)
    large = activated(priority=1000, minRamCount=6000)
    # 2 h left: a job of at most 3 h does not fit, one without a limit does
    long = activated(priority=1000, maxWalltime=3 * 3600)
    user_job = activated(priority=1000, prodSourceLabel="user", prodUserName="Eva Lund")
    score = activated(priority=1000, resource_type="SCORE")
    pilot = client_with("change_job")
    ask = {"site_name": "LOCAL_PILOT", "memory": 4000, "remaining_time": 7200, "n_jobs": 5, "resource_type": ""}
    body = post(pilot, "acquire_jobs", ask).json()
    # resource type "" is the factory's; SCORE is another; managed is asked (by default): the user job is not
    assert [job["PandaID"] for job in body["data"]["jobs"]] == [small.pk, anything.pk]
    assert set(Job.objects.filter(jobStatus="activated").values_list("pk", flat=True)) == {
        large.pk, long.pk, user_job.pk, score.pk
    }  # fmt: skip
    assert post(pilot, "acquire_jobs", {**ask, "n_jobs": 1}).json() == {
        "success": False, "message": "No jobs in PanDA", "data": None
    }  # fmt: skip
    # a user's pilot without the production role: its own user jobs only, and only when it asks for user jobs
    own = client_with(first_name="eva", last_name="LUND")
    refused = post(own, "acquire_jobs", {"site_name": "LOCAL_PILOT"}).json()
    assert refused == {"success": False, "message": "no production/pilot role in VOMS FQANs or non pilot owner",
                       "data": None}  # fmt: skip
    other = activated(priority=1000, prodSourceLabel="user", prodUserName="Ola Nord")
    body = post(own, "acquire_jobs", {"site_name": "LOCAL_PILOT", "prod_source_label": "user", "n_jobs": 3}).json()
    assert [job["PandaID"] for job in body["data"]["jobs"]] == [user_job.pk]
    assert Job.objects.get(pk=other.pk).jobStatus == "activated"


def test_the_real_refusals(queue):
    job = activated()
    pilot = client_with("change_job")
    # no token: 403 as the real server's token check; a user without the role: the decorator's message
    assert post(APIClient(), "update_job", {"job_id": job.pk, "job_status": "running"}).status_code == 403
    no_role = post(client_with(), "update_job", {"job_id": job.pk, "job_status": "running"}).json()
    assert no_role == {"success": False, "message": "production or pilot role required", "data": None}
    invalid = post(pilot, "update_job", {"job_id": job.pk, "job_status": "closed"}).json()
    assert invalid == {"success": False, "message": "Invalid job status: closed", "data": {"StatusCode": 50}}
    typo = post(pilot, "update_job", {"job_id": job.pk, "job_status": "running", "jobSubStatus": "x"}).json()
    assert typo["message"] == "Argument error: got an unexpected keyword argument 'jobSubStatus'"
    missing = post(pilot, "update_job", {"job_status": "running"}).json()
    assert missing["message"] == "Argument error: missing a required argument: 'job_id'"
    typed = post(pilot, "update_job", {"job_id": "twelve", "job_status": "running"}).json()
    assert typed["message"] == "Type error: 'job_id' with value 'twelve' could not be casted to type int from str."
    # a job still activated (no pilot has it): nothing to update, in the envelope, never a 500
    not_sent = post(pilot, "update_job", {"job_id": job.pk, "job_status": "finished"}).json()
    assert (not_sent["success"], not_sent["data"]) == (True, {"StatusCode": 30})
    assert "it cannot become finished" in not_sent["message"]
    wrong_method = pilot.get(f"{PILOT}/update_job")
    assert (wrong_method.status_code, wrong_method.json()["message"]) == (405, 'Method "GET" not allowed.')
    unknown = post(pilot, "get_event_ranges", {}).json()
    assert unknown["message"].startswith("pilot/get_event_ranges is not served here (served: pilot/acquire_jobs")


def test_update_jobs_bulk_answers_each(queue):
    first, second = activated(priority=900), activated(priority=800)
    pilot = client_with("change_job")
    post(pilot, "acquire_jobs", {"site_name": "LOCAL_PILOT", "n_jobs": 2})
    body = post(pilot, "update_jobs_bulk", {"harvester_id": "harvester-1", "job_list": [
        {"job_id": first.pk, "job_status": "running", "meta_data": {"a": 1}},
        {"job_id": second.pk, "job_status": "lost"},
        {"job_id": second.pk, "job_status": "running", "node": 7},
    ]}).json()  # fmt: skip
    assert body["success"] is True
    assert [answer["data"] for answer in body["data"]] == [
        {"StatusCode": 0, "command": "NULL"}, {"StatusCode": 50}, {"StatusCode": 0, "command": "NULL"}
    ]  # fmt: skip
    assert body["data"][1]["message"] == "Invalid job status: lost"
    assert set(Job.objects.filter(pk__in=[first.pk, second.pk]).values_list("jobStatus", flat=True)) == {"running"}
    assert Job.objects.get(pk=second.pk).modificationHost == "7"
    keyless = post(pilot, "update_jobs_bulk", {"job_list": [{"job_status": "running"}]}).json()
    assert keyless == {"success": False, "message": "failed with KeyError 'job_id'", "data": []}
    not_dicts = post(pilot, "update_jobs_bulk", {"job_list": [1, 2]}).json()
    assert (not_dicts["success"], not_dicts["message"][:22]) == (False, "Type error: 'job_list'")


def test_update_worker_node_keeps_the_hosts_cpu(queue):
    pilot = client_with("change_job")
    node = {"site": "LOCAL-SITE", "host_name": "slot3@wn7.example.org", "cpu_model": "Intel(R) Xeon(R) Gold 6248 "
            "CPU @ 2.50GHz", "panda_queue": "LOCAL_PILOT", "n_logical_cpus": 80, "n_sockets": 2,
            "cores_per_socket": 20, "threads_per_core": 2, "clock_speed": 2500.0, "total_memory": 385000}  # fmt: skip
    assert post(pilot, "update_worker_node", node).json() == {
        "success": True, "message": "Inserted new worker node.", "data": None
    }  # fmt: skip
    again = post(pilot, "update_worker_node", {**node, "host_name": "slot5@wn7.example.org"}).json()
    assert again["message"] == "Updated the worker node's last_seen timestamp."
    [host] = WorkerNode.objects.all()
    assert (host.host_name, host.cpu_model_normalized, host.n_logical_cpus, host.total_memory) == (
        "wn7.example.org", "INTEL XEON GOLD 6248", 80, 385000
    )  # fmt: skip
    assert list(WorkerNodeQueue.objects.values_list("host_name", "panda_queue")) == [("wn7.example.org", "LOCAL_PILOT")]
    too_long = post(pilot, "update_worker_node", {**node, "cpu_architecture": "x" * 21}).json()
    assert too_long["message"] == "cpu_architecture: at most 20 characters"
    assert post(client_with(), "update_worker_node", node).json()["message"] == "production or pilot role required"
    # the housekeeping drops a host no pilot reported for WORKER_NODE_DAYS (90)
    WorkerNode.objects.update(last_seen=timezone.now() - timedelta(days=91))
    housekeeping_run(now=timezone.now())
    assert (WorkerNode.objects.count(), WorkerNodeQueue.objects.count()) == (0, 1)


def test_host_names_and_cpu_models_are_cleaned_as_panda_server_does():
    assert host_name_clean("slot1@wn1.example.org") == "wn1.example.org"
    assert host_name_clean("atlprd55-xyz-abc123.cern.ch") == "abc123.cern.ch"
    assert host_name_clean("wn1.example.org") == "wn1.example.org"
    assert cpu_model_normalize("AMD EPYC 7351 16-Core Processor") == "AMD EPYC 7351"
    assert cpu_model_normalize("Intel(R) Xeon(R) CPU E5-2630 v4 @ 2.20GHz") == "INTEL XEON E5-2630 V4"
