"""The DIRAC Matcher over the database: jobs grouped into task queues, DIRAC's integration cases through SQL,
atomic claims, no-match explanations, the state machine, and several matching processes at once."""

import multiprocessing
import os
from datetime import UTC, datetime

import pytest
from django.db import connection

from brokerage.models import DiracJob, DiracJobStatusLog, DiracMatchRecord, DiracTaskQueue, DiracTaskQueueValue
from brokerage.services.dirac import dirac_jobs_submit, dirac_match_request, resource_from
from brokerage.services.status import status_transition
from brokerage.states import IllegalTransition

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
SETUP = "LHCb-Production"


def job(**fields):
    return {
        "owner": "/CN=alice",
        "ownerGroup": "lhcb_user",
        "setup": SETUP,
        "cpuTime": 100,
        "userPriority": 1,
        **fields,
    }


def submit(*jobs):
    return dirac_jobs_submit(jobs=list(jobs), now=NOW)


def offer(**fields):
    return resource_from({"setup": SETUP, "cpuTime": 100000, **fields})


def matched_queue(**fields):
    result = dirac_match_request(resource=offer(**fields), now=NOW, seed=1)
    return result["task_queue"] if result["matched"] else None


def test_jobs_with_identical_requirements_share_a_task_queue():
    ids = submit(job(cpuTime=10), job(cpuTime=400, userPriority=3), job(cpuTime=600), job(sites=["CERN"]))
    queues = {j.task_queue_id for j in DiracJob.objects.filter(pk__in=ids[:2])}
    assert len(queues) == 1  # 10 and 400 s both round up to the 500 s segment
    assert DiracTaskQueue.objects.count() == 3
    assert set(DiracTaskQueue.objects.values_list("cpuTime", flat=True)) == {500, 5000}
    assert list(DiracJobStatusLog.objects.filter(job_id=ids[0]).values_list("new_status", flat=True)) == [
        "Received",
        "Waiting",
    ]
    # priorities from the group share: one owner, its three queues by average job priority (1+3)/2=2, 1, 1
    priorities = sorted(DiracTaskQueue.objects.values_list("priority", flat=True))
    assert priorities == [250.0, 250.0, 500.0]


def test_sites_and_banned_sites_through_sql():
    submit(job(sites=["CERN"]), job(sites=["IN2P3"], owner="/CN=b"), job(bannedSites=["CERN"], owner="/CN=c"))
    tq = dict(DiracJob.objects.values_list("owner", "task_queue_id"))
    assert matched_queue(site="CERN") == tq["/CN=alice"]
    assert matched_queue(site="IN2P3") in (tq["/CN=b"], tq["/CN=c"])
    assert matched_queue(site="IN2P3") in (tq["/CN=b"], tq["/CN=c"])
    assert matched_queue(site="IN2P3") is None  # both IN2P3-able jobs taken, CERN-only one left


def test_platforms_and_tags_through_sql():
    submit(job(platforms=["centos7"]), job(tags=["MultiProcessor", "GPU"], owner="/CN=b"))
    tq = dict(DiracJob.objects.values_list("owner", "task_queue_id"))
    assert matched_queue(platform="slc5") is None
    assert matched_queue(platform="centos7", tags=["MultiProcessor"]) == tq["/CN=alice"]
    assert matched_queue(tags=["MultiProcessor", "GPU"]) == tq["/CN=b"]


def test_cpu_time_no_match_explains_the_nearest_queues():
    submit(job(cpuTime=4000))
    result = dirac_match_request(resource=offer(cpuTime=10), now=NOW, seed=2)
    assert result["matched"] is False
    (nearest,) = result["nearest"]
    assert nearest["failed"] == ["cpu_time"]
    assert nearest["reasons"][0]["sentence"] == "The task queue needs 5000 s of CPU; the resource offers 10 s."
    record = DiracMatchRecord.objects.get()
    assert (record.matched, record.reasons, record.seed) == (False, ["cpu_time"], 2)


def test_a_match_moves_the_job_to_matched_once():
    (job_id,) = submit(job())
    first = dirac_match_request(resource=offer(site="CERN"), now=NOW, seed=3)
    assert (first["matched"], first["job"]) == (True, job_id)
    claimed = DiracJob.objects.get(pk=job_id)
    assert (claimed.status, claimed.site, claimed.matchTime) == ("Matched", "CERN", NOW)
    assert dirac_match_request(resource=offer(), now=NOW, seed=4)["matched"] is False
    assert DiracMatchRecord.objects.filter(matched=True, job=job_id).count() == 1


def test_highest_cpu_time_queue_is_served_first():
    short, long = submit(job(cpuTime=100), job(cpuTime=40000))
    assert dirac_match_request(resource=offer(), now=NOW, seed=5)["job"] == long
    assert dirac_match_request(resource=offer(), now=NOW, seed=5)["job"] == short


def test_each_match_is_one_of_the_first_ten_waiting_by_id():
    submit(*[job() for _ in range(25)])
    picked = []
    for seed in range(12):
        window = list(DiracJob.objects.filter(status="Waiting").order_by("jobID").values_list("jobID", flat=True)[:10])
        chosen = dirac_match_request(resource=offer(), now=NOW, seed=seed)["job"]
        assert chosen in window
        picked.append(chosen)
    assert len(set(picked)) == 12
    assert sorted(picked) != picked  # shuffled within the ten, not simply the lowest id each time


def test_the_dirac_state_machine_guards_jobs():
    (job_id,) = submit(job())
    row = DiracJob.objects.get(pk=job_id)
    with pytest.raises(IllegalTransition):
        status_transition(obj=row, new_status="Done", now=NOW)
    status_transition(obj=row, new_status="Matched", now=NOW)
    status_transition(obj=row, new_status="Running", now=NOW)
    status_transition(obj=row, new_status="Done", now=NOW)
    assert DiracJobStatusLog.objects.filter(job_id=job_id).count() == 5


def _matcher(count, queue):
    import django
    from django.db import connection as own

    own.close()
    django.setup()
    from django.utils import timezone

    taken = []
    for _ in range(count):
        result = dirac_match_request(resource=offer(site="CERN"), now=timezone.now())
        if result["matched"]:
            taken.append(result["job"])
    queue.put(taken)


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="concurrent matchers: PostgreSQL pass"
)
@pytest.mark.django_db(transaction=True)
def test_concurrent_matchers_never_get_the_same_job():
    # 4 processes, 60 requests each, for 200 jobs in 5 task queues: every job at most once, all 200 matched
    ids = submit(*[job(owner=f"/CN=user{i % 5}", userPriority=1 + i % 3) for i in range(200)])
    connection.close()
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    workers = [context.Process(target=_matcher, args=(60, results)) for _ in range(4)]
    for worker in workers:
        worker.start()
    taken = [job_id for _ in workers for job_id in results.get(timeout=120)]
    for worker in workers:
        worker.join(timeout=30)
    assert len(taken) == len(set(taken)) == 200
    assert set(taken) == set(ids)
    assert DiracJob.objects.filter(status="Matched").count() == 200


def test_match_api_claims_with_permission_and_explains_without(client):
    from django.contrib.auth.models import Permission, User
    from django.test import Client

    from tests import factories

    submit(job(cpuTime=4000, sites=["CERN"]))
    body = {"setup": SETUP, "cpuTime": 100, "site": "CERN"}
    # anyone may ask why nothing matches, without claiming
    explained = client.post("/api/v1/dirac/match", {**body, "dry_run": True}, content_type="application/json").json()
    assert explained["matched"] is False
    assert explained["nearest"][0]["failed"] == ["cpu_time"]
    # claiming needs the permission
    assert client.post("/api/v1/dirac/match", body, content_type="application/json").status_code == 401
    pilot = User.objects.create_user("pilot", password="x")
    pilot.user_permissions.add(Permission.objects.get(codename="change_diracjob"))
    authorised = Client(HTTP_AUTHORIZATION=f"Token {factories.api_token(pilot)}")
    result = authorised.post("/api/v1/dirac/match", {**body, "cpuTime": 86400}, content_type="application/json").json()
    assert result["matched"] is True
    assert DiracJob.objects.get(pk=result["job"]).status == "Matched"
    # the keys DIRAC v9 matches: RAM, JobType and the resource's own bans are named in the explanation
    submit(job(cpuTime=4000, sites=["CERN"], minRAM=4000, jobTypes=["MCSimulation"]))
    strict = {**body, "cpuTime": 86400, "maxRAM": 10, "jobType": "User", "bannedSites": ["CERN"], "dry_run": True}
    explained = authorised.post("/api/v1/dirac/match", strict, content_type="application/json").json()
    assert explained["matched"] is False
    assert explained["nearest"][0]["failed"] == ["ram", "job_type", "resource_ban"]
    assert explained["nearest"][0]["reasons"][0]["detail"] == {"required": 4000, "offered": 10}
    bad = authorised.post("/api/v1/dirac/match", {**strict, "maxRAM": -5}, content_type="application/json")
    assert bad.status_code == 400
    assert "maxRAM" in bad.json()["error"]["fields"]
    bad = authorised.post("/api/v1/dirac/match", {"setup": SETUP, "cpuTime": -1}, content_type="application/json")
    assert bad.status_code == 400
    assert "cpuTime" in bad.json()["error"]["fields"]


def test_task_queue_api_lists_sizes_and_requirements(client):
    submit(job(sites=["CERN"]), job(sites=["CERN"]), job(owner="/CN=b", tags=["GPU"]))
    rows = client.get("/api/v1/dirac/task-queues").json()
    assert [row["waiting"] for row in rows] == [2, 1]
    assert rows[0]["requirements"] == {"sites": ["CERN"]}
    assert rows[1]["requirements"] == {"tags": ["GPU"]}


def test_dirac_match_plugin_runs_from_a_scenario_file(tmp_path):
    import json

    from django.core.management import CommandError, call_command

    scenario = {
        "plugin": "dirac_match",
        "seed": 3,
        "task_queues": [
            {"id": 1, "ownerDN": "/CN=a", "ownerGroup": "g", "setup": SETUP, "cpuTime": 5000, "sites": ["CERN"]},
            {"id": 2, "ownerDN": "/CN=b", "ownerGroup": "g", "setup": SETUP, "cpuTime": 500, "bannedSites": ["CERN"]},
        ],
        "jobs": [{"jobID": 11, "taskQueue": 1, "userPriority": 1}, {"jobID": 21, "taskQueue": 2, "userPriority": 1}],
        "resource": {"setup": SETUP, "cpuTime": 86400, "site": "CERN"},
    }
    path = tmp_path / "dirac.json"
    path.write_text(json.dumps(scenario))
    out = tmp_path / "out.json"
    with out.open("w") as stream:
        call_command("broker", str(path), "--json", stdout=stream)
    decision = json.loads(out.read_text())
    assert (decision["outcome"], decision["chosen"]) == ("matched", "11")
    assert decision["skipped"]["TQ2"]["code"] == "banned_site"
    scenario["resource"]["cpuTime"] = "lots"
    path.write_text(json.dumps(scenario))
    with pytest.raises(CommandError, match=r"\$\.resource\.cpuTime: expected a number") as refused:
        call_command("broker", str(path))
    assert refused.value.returncode == 2


def test_dirac_page_shows_queues_rate_and_reasons(client):
    submit(job(sites=["CERN"]), job(sites=["CERN"]), job(owner="/CN=b", cpuTime=200000))
    dirac_match_request(resource=offer(site="CERN", cpuTime=1000), now=datetime.now(UTC), seed=1)
    dirac_match_request(resource=offer(site="IN2P3", cpuTime=10), now=datetime.now(UTC), seed=2)
    response = client.get("/dirac/")
    assert response.status_code == 200
    context = response.context
    assert [tq["waiting"] for tq in context["task_queues"]] == [1, 1]
    assert context["matched_last_day"] == 1
    assert context["requests_last_day"] == 2
    assert {r["code"] for r in context["reasons"]} >= {"cpu_time"}
    html = response.content.decode()
    assert "dirac-rate" in html
    assert "dirac-reasons" in html


def _offline_matches(tmp_path, *, tq_cpu: float, offered: float, **extra) -> bool:
    """`manage.py broker` on a dirac_match scenario of one task queue written with `tq_cpu` and one job."""
    import json

    from django.core.management import call_command

    scenario = {
        "plugin": "dirac_match",
        "seed": 1,
        "task_queues": [
            {"id": 1, "ownerDN": "/CN=alice", "ownerGroup": "lhcb_user", "setup": SETUP, "cpuTime": tq_cpu}
        ],
        "jobs": [{"jobID": 7, "taskQueue": 1, "userPriority": 1}],
        "resource": {"setup": SETUP, "cpuTime": offered},
        **extra,
    }
    path = tmp_path / "dirac.json"
    path.write_text(json.dumps(scenario))
    out = tmp_path / "decision.json"
    with out.open("w") as stream:
        call_command("broker", str(path), "--json", stdout=stream)
    return json.loads(out.read_text())["outcome"] == "matched"


@pytest.mark.parametrize(
    ("job_cpu", "offered", "matched"),
    [
        (10, 400, False),  # the queue needs the 500 s segment: a 400 s resource is too short
        (10, 500, True),
        (400_000, 350_000, True),  # beyond the last segment: 300,000 s, which 350,000 s covers
        (50_001, 299_999, False),  # the 300,000 s segment
        (5_000, 5_000, True),
    ],
)
def test_a_scenario_file_and_the_database_round_cpu_time_alike(tmp_path, job_cpu, offered, matched):
    """Issue 19: the offline command rounded nothing, so cpuTime 10 matched a 400 s resource offline and not live,
    and 400,000 matched live against 350,000 s and not offline. Both now round with dirac_match.cpu_segment."""
    submit(job(cpuTime=job_cpu))
    live = dirac_match_request(resource=offer(cpuTime=offered), now=NOW, seed=1, dry_run=True)["matched"]
    assert live is matched
    assert _offline_matches(tmp_path, tq_cpu=job_cpu, offered=offered) is matched


def test_the_offline_command_rounds_to_this_installations_segments(tmp_path, settings):
    settings.DIRAC_CPU_SEGMENTS = (1_000.0, 100_000.0)
    assert _offline_matches(tmp_path, tq_cpu=10, offered=900) is False  # 10 s rounds up to 1,000 s here
    assert _offline_matches(tmp_path, tq_cpu=10, offered=1_000) is True
    # a scenario that names its own segments keeps them
    assert _offline_matches(tmp_path, tq_cpu=10, offered=900, cpu_segments=[500, 5_000]) is True


def test_bad_segments_in_a_scenario_are_named_with_their_path(tmp_path):
    from django.core.management import CommandError

    for segments, message in (
        ([500, 400], r"\$\.cpu_segments\[1\]: expected a CPU time above the one before \(500\)"),
        ([0], r"\$\.cpu_segments\[0\]: expected a positive number of seconds"),
        ("500", r"\$\.cpu_segments: expected a non-empty list"),
    ):
        with pytest.raises(CommandError, match=message) as refused:
            _offline_matches(tmp_path, tq_cpu=10, offered=900, cpu_segments=segments)
        assert refused.value.returncode == 2


def test_grid_middlewares_make_task_queues_of_their_own_and_leave_older_keys_alone():
    # seed 003 lists GridMiddlewares among the task-queue requirements (pilot submission only, no match): jobs
    # naming different ones wait in different task queues; a job naming none keeps the key it had before
    ids = submit(job(), job(gridMiddlewares=["ARC"]), job(gridMiddlewares=["HTCondorCE"]), job())
    queues = [DiracJob.objects.get(pk=i).task_queue_id for i in ids]
    assert queues[0] == queues[3]
    assert len({queues[0], queues[1], queues[2]}) == 3
    assert DiracTaskQueueValue.objects.filter(field="gridMiddlewares").count() == 2
    # the middleware does not decide a match: a resource matches either queue
    assert matched_queue() is not None
