"""PanDA's own API for panda-client and pbook (issue 36): the reads in panda-server 1.0.4's field names with worked
values, the task and job commands with and without permission, and the real server's refusals (its messages, in
its envelope, never a 500)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from rest_framework.test import APIClient

from brokerage.models import Job, Task
from brokerage.selectors.panda_client import FILE_SPEC_ATTRIBUTES, JOB_SPEC_ATTRIBUTES, TASK_SPEC_ATTRIBUTES
from tests import factories

pytestmark = pytest.mark.django_db


def client_of(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {factories.api_token(user)}")
    return client


def user_with(name: str, *codenames: str, full_name: str = "") -> User:
    first, _, last = full_name.partition(" ")
    user = User.objects.create_user(name, password="x", first_name=first, last_name=last)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


@pytest.fixture
def analysis_task():
    """eva's running analysis task: 8 input files (3 to be used, 1 finished, 1 failed), one read by a running job,
    one by a finished job, one by an activated job; a secondary input, an output and a log container."""
    task = factories.TaskFactory(
        taskName="user.eva.test/",
        status="running",
        prodSourceLabel="user",
        userName="eva",
        taskParams={"cliParams": "prun --exec 'echo %IN' --outDS user.eva.out/", "maxAttempt": 3},
    )
    master = factories.DatasetFactory(
        task=task,
        datasetName="user.eva.in.sub01",
        containerName="user.eva.in/",
        nFiles=8,
        nFilesUsed=5,
        nFilesFinished=1,
        nFilesFailed=1,
    )
    factories.DatasetFactory(task=task, datasetName="user.eva.dbr", type="input", master=master, nFiles=1)
    factories.DatasetFactory(task=task, datasetName="user.eva.out.sub1", containerName="user.eva.out/", type="output")
    factories.DatasetFactory(task=task, datasetName="user.eva.log.sub1", containerName="user.eva.log/", type="log")
    jobs = {
        status: factories.JobFactory(task=task, jobStatus=status, prodSourceLabel="user", computingSite="ANALY_X")
        for status in ("running", "finished", "activated")
    }
    for number, job in enumerate(jobs.values()):
        factories.DatasetFileFactory(dataset=master, lfn=f"in.{number}.root", PandaID=job.pk, status="running")
    factories.DatasetFileFactory(dataset=master, lfn="in.unused.root")
    return task, jobs


def test_status_parameters_and_details_of_a_task(analysis_task):
    task, jobs = analysis_task
    reader = client_of(None)
    status = reader.get("/api/v1/task/get_status", {"task_id": task.pk}).json()
    assert status == {"success": True, "message": "", "data": "running"}
    # the real server casts a GET's numbers through float: "12.0" is task 12
    assert reader.get("/api/v1/task/get_status", {"task_id": f"{task.pk}.0"}).json()["data"] == "running"
    params = reader.get("/api/v1/task/get_task_parameters", {"task_id": task.pk}).json()
    assert params["data"] == {"cliParams": "prun --exec 'echo %IN' --outDS user.eva.out/", "maxAttempt": 3}
    details = reader.get(
        "/api/v1/task/get_details", {"task_id": task.pk, "include_parameters": "true", "include_status": "1"}
    ).json()["data"]
    assert details["inDS"] == "user.eva.in/"  # the secondary input is no primary input
    assert details["outDS"] == "user.eva.out/,user.eva.log/"
    assert details["PandaID"] == sorted(job.pk for job in jobs.values())
    # 8 files: 8 − 5 used = 3 to be done, 1 finished, 1 failed, 1 read by the running job, 1 by the activated one
    # (the finished job is in no active table); 8 − 3 − 1 − 1 − 1 − 1 = 1 picked
    assert details["statistics"] == "tobedone*3,finished*1,failed*1,running*1,activated*1,picked*1"
    assert details["status"] == "running"
    assert details["cliParams"] == "prun --exec 'echo %IN' --outDS user.eva.out/"
    assert (details["mergeStatus"], details["mergePandaID"]) == (None, [])
    plain = reader.get("/api/v1/task/get_details", {"task_id": task.pk}).json()["data"]
    assert "status" not in plain
    assert "cliParams" not in plain


def test_the_real_servers_refusals_in_its_envelope(analysis_task):
    task, _ = analysis_task
    reader = client_of(None)
    cases = [
        ({"task_id": "abc"}, "Type error: 'task_id' with value 'abc' could not be casted to type int from str."),
        ({}, "Argument error: missing a required argument: 'task_id'"),
        ({"task_id": task.pk, "colour": "red"}, "Argument error: got an unexpected keyword argument 'colour'"),
        ({"task_id": 0}, "jediTaskID must be an integer"),
        ({"task_id": task.pk + 1000}, "Task not found"),
    ]
    for params, message in cases:
        answer = reader.get("/api/v1/task/get_status", params)
        assert answer.status_code == 200, params
        assert answer.json() == {"success": False, "message": message, "data": None}, params
    wrong_method = reader.post("/api/v1/task/get_status", {"task_id": task.pk}, format="json")
    assert wrong_method.status_code == 405  # the GET methods answer nothing else
    unknown = reader.get("/api/v1/task/reassign_everything")
    assert unknown.status_code == 404
    assert unknown.json()["message"].startswith("task/reassign_everything is not served here (served: task/get_status")
    assert reader.get("/api/v1/task/get_status/", {"task_id": task.pk}).json()["data"] == "running"  # final slash
    not_json = reader.post("/api/v1/job/get_description", "{", content_type="application/json")
    assert not_json.status_code == 200
    assert not_json.json()["message"].startswith("failed to load JSON")
    # a number past a 64-bit integer is refused as the type error it is (it was a 500: SQLite cannot be asked)
    huge = reader.post("/api/v1/job/get_description", {"job_ids": 9.33e259}, format="json")
    assert huge.status_code == 200
    assert huge.json()["message"].startswith("Type error: 'job_ids' with value '9.33e+259' could not be casted")
    assert reader.get("/api/v1/task/get_status", {"task_id": str(2**63)}).json()["success"] is False


def test_job_descriptions_in_panda_server_field_names(analysis_task):
    task, jobs = analysis_task
    running = jobs["running"]
    Job.objects.filter(pk=running.pk).update(startTime=timezone.now().replace(microsecond=0), pilotErrorCode=1305)
    running.refresh_from_db()
    asked = [running.pk, 999_999_999, jobs["finished"].pk]
    answer = client_of(None).post("/api/v1/job/get_description", {"job_ids": asked}, format="json").json()
    assert answer["success"] is True
    first, missing, second = answer["data"]
    assert missing is None
    assert second["PandaID"] == jobs["finished"].pk
    assert set(first) == {*JOB_SPEC_ATTRIBUTES, "Files"}
    assert (first["jobStatus"], first["computingSite"], first["jediTaskID"], first["taskID"]) == (
        "running", "ANALY_X", task.pk, task.pk
    )  # fmt: skip
    assert (first["VO"], first["prodSourceLabel"], first["pilotErrorCode"]) == ("atlas", "user", 1305)
    # dates as panda-server's encoder writes them (naive UTC), which panda-client turns back into datetimes
    assert first["startTime"] == {"__datetime__": running.startTime.replace(tzinfo=None).isoformat()}
    (read,) = first["Files"]
    assert set(read) == set(FILE_SPEC_ATTRIBUTES)
    assert (read["lfn"], read["dataset"], read["prodDBlock"], read["type"], read["PandaID"]) == (
        "in.0.root", "user.eva.in.sub01", "user.eva.in.sub01", "input", running.pk
    )  # fmt: skip
    # a GET with repeated keys (the real server takes either), and the archive variant reads the same table
    by_get = client_of(None).get("/api/v1/job/get_description_incl_archive", {"job_ids": [running.pk]}).json()
    assert by_get["data"][0]["PandaID"] == running.pk


def test_tasks_changed_since_are_the_callers_own_with_pbooks_filters(analysis_task):
    task, _ = analysis_task
    now = timezone.now()
    other = factories.TaskFactory(taskName="user.olga.x/", status="done", prodSourceLabel="user", userName="olga")
    old = factories.TaskFactory(taskName="user.eva.old/", status="done", userName="eva")
    Task.objects.filter(pk=old.pk).update(modificationTime=now - timedelta(days=100))  # past the 90-day window
    eva = client_of(user_with("eva"))
    url = "/api/v1/task/get_tasks_detailed_info_since"
    since = (now - timedelta(days=14)).strftime("%Y-%m-%d %H:%M:%S")
    mine = eva.get(url, {"since": since, "n_tasks": 1000}).json()["data"]
    assert [record["jediTaskID"] for record in mine] == [task.pk]
    record = mine[0]
    assert set(TASK_SPEC_ATTRIBUTES) <= set(record)
    assert (record["userName"], record["status"], record["prodSourceLabel"]) == ("eva", "running", "user")
    # the master input's 8 files: 1 finished and 1 failed, 12.5 % each, rounded half to even as Python's round
    assert (record["nFiles"], record["nFilesFinished"], record["nFilesFailed"]) == (8, 1, 1)
    assert (record["pctFinished"], record["pctFailed"]) == (12, 12)
    assert record["task_creation_arguments"] == "prun --exec 'echo %IN' --outDS user.eva.out/"
    assert record["creationDate"]["__datetime__"]
    # equality and regular-expression filters, another user's tasks when named, no time cap without `since`
    assert eva.get(url, {"filters": '{"status": "done"}'}).json()["data"] == []
    theirs = eva.get(url, {"filters": '{"userName": "olga", "status": "done|finished"}'}).json()["data"]
    assert [r["jediTaskID"] for r in theirs] == [other.pk]
    assert eva.get(url, {"filters": '{"taskName": "user.eva.old/"}'}).json()["data"] == []  # 100 days back
    for filters, message in (
        ('{"colour": "red"}', "Failed to retrieve task IDs: unknown attribute colour is used in criteria"),
        ('["status"]', "filters must be a JSON object"),
        ("{", "filters is not valid JSON"),
    ):
        refused = eva.get(url, {"filters": filters}).json()
        assert (refused["success"], refused["message"]) == (False, message)
    # a user with a full name owns the tasks recorded under it, as PanDA writes it ("Eva Lund")
    factories.TaskFactory(taskName="user.elund.y/", userName="Eva Lund", prodSourceLabel="user")
    named = client_of(user_with("elund", full_name="eva LUND")).get(url).json()["data"]
    assert [r["taskName"] for r in named] == ["user.elund.y/"]


def test_task_commands_need_the_permission_of_the_task_pages_actions(analysis_task):
    task, jobs = analysis_task
    anonymous = client_of(None).post("/api/v1/task/kill", {"task_id": task.pk}, format="json")
    assert anonymous.status_code == 403
    assert anonymous.json()["message"].startswith("Token authentication failed.")
    viewer = client_of(user_with("viewer"))
    refused = viewer.post("/api/v1/task/kill", {"task_id": task.pk}, format="json").json()
    assert refused == {"success": False, "message": "not the task owner or no production role", "data": None}
    assert Task.objects.get(pk=task.pk).status == "running"
    shifter = client_of(user_with("shifter", "change_task"))
    killed = shifter.post("/api/v1/task/kill", {"task_id": task.pk}, format="json").json()
    assert killed["success"] is True
    assert killed["data"] == 0
    assert killed["message"] == f"Task {task.pk} aborted: 2 jobs killed."  # the running and the activated job
    assert Task.objects.get(pk=task.pk).status == "aborted"
    assert Job.objects.get(pk=jobs["running"].pk).jobStatus == "cancelled"
    again = shifter.post("/api/v1/task/kill", {"task_id": task.pk}, format="json").json()
    assert (again["success"], again["data"]) == (False, 4)  # irrelevant task status
    assert "aborted" in again["message"]
    assert shifter.post("/api/v1/task/kill", {"task_id": 987654321}, format="json").json() == {
        "success": False,
        "message": "jediTaskID=987654321 not found",
        "data": 2,
    }
    # a form post as well as JSON (the real server reads both)
    finished = factories.TaskFactory(status="finished")
    retried = shifter.post("/api/v1/task/retry", {"task_id": finished.pk}).json()
    assert (retried["success"], retried["data"]) == (True, 0)
    assert Task.objects.get(pk=finished.pk).status in ("ready", "running")
    # with new parameters a retry is a resubmission (JEDI's incexec), for a done, failed or finished task
    done = factories.TaskFactory(status="done")
    new_params = shifter.post(
        "/api/v1/task/retry", {"task_id": done.pk, "new_parameters": {"nFilesPerJob": 2}}, format="json"
    ).json()
    assert new_params == {
        "success": True,
        "message": f"Task {done.pk} resubmitted with new parameters: nFilesPerJob=2.",
        "data": 0,
    }
    assert Task.objects.get(pk=done.pk).status == "toincexec"
    refused = shifter.post(
        "/api/v1/task/retry", {"task_id": running_task_id(), "new_parameters": {"nFilesPerJob": 2}}, format="json"
    ).json()
    assert (refused["success"], refused["data"]) == (False, 4)
    running = factories.TaskFactory(status="running")
    finish = shifter.post("/api/v1/task/finish", {"task_id": running.pk, "soft": True}, format="json").json()
    assert (finish["success"], finish["data"]) == (True, 0)
    assert Task.objects.get(pk=running.pk).status == "finishing"
    # pbook pause and resume: a paused task back to what it was
    ready = factories.TaskFactory(status="ready")
    paused = shifter.post("/api/v1/task/pause", {"task_id": ready.pk}, format="json").json()
    assert (paused["success"], paused["data"]) == (True, 0)
    assert Task.objects.get(pk=ready.pk).status == "paused"
    again = shifter.post("/api/v1/task/pause", {"task_id": ready.pk}, format="json").json()
    assert (again["success"], again["data"]) == (False, 4)
    resumed = shifter.post("/api/v1/task/resume", {"task_id": ready.pk}, format="json").json()
    assert (resumed["success"], resumed["message"], resumed["data"]) == (
        True,
        f"Task {ready.pk} resumed: ready again.",
        0,
    )


def running_task_id() -> int:
    return factories.TaskFactory(status="running").pk


def test_killing_jobs_answers_per_job(analysis_task):
    _, jobs = analysis_task
    ids = [jobs["activated"].pk, jobs["finished"].pk, 999_999_999]
    refused = client_of(user_with("viewer")).post("/api/v1/job/kill", {"job_ids": ids}, format="json").json()
    assert refused["success"] is False
    assert "brokerage.change_job" in refused["message"]
    killer = client_of(user_with("operator", "change_job"))
    answer = killer.post("/api/v1/job/kill", {"job_ids": ids, "code": 9}, format="json").json()
    assert answer == {"success": True, "message": "", "data": [True, False, False]}
    killed = Job.objects.get(pk=jobs["activated"].pk)
    assert killed.jobStatus == "cancelled"
    assert "code 9" in killed.taskBufferErrorDiag


def test_reading_follows_the_anonymous_read_rule(analysis_task, settings):
    task, _ = analysis_task
    settings.API_ANONYMOUS_READ = False
    closed = client_of(None).get("/api/v1/task/get_status", {"task_id": task.pk})
    assert closed.status_code == 403
    assert closed.json()["success"] is False
    assert client_of(user_with("reader")).get("/api/v1/task/get_status", {"task_id": task.pk}).json()["success"]


def test_the_schema_lists_the_panda_methods_as_their_own_group(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    tags = {
        path: operation["tags"]
        for path, operations in schema["paths"].items()
        for operation in operations.values()
        if isinstance(operation, dict) and "tags" in operation
    }
    assert tags["/api/v1/task/get_status"] == ["PanDA client (panda-client 2.2.0, pbook)"]
    assert "post" in schema["paths"]["/api/v1/task/kill"]
    assert "get" not in schema["paths"]["/api/v1/task/kill"]
    assert "get" in schema["paths"]["/api/v1/job/get_description"]
