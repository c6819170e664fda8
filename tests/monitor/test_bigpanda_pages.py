"""What a BigPanDA user looks for first (issue 50, finding 11), with worked numbers: the job list's facets and
filters, the errors page drilling down to queues and jobs, a user's page, and the job page's input files (kept
when the job failed), where it ran and what it used."""

from datetime import timedelta

import pytest
from django.utils import timezone

from brokerage import states
from brokerage.models import Job
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_grid(db):
    """Seven jobs changed within the hour at two queues of two sites: alice has 3 failed (2 pilot:1305 at Q_A, 1
    exe:65 at Q_B) and 1 running at Q_A; bob has 2 finished at Q_B and 1 failed (pilot:1305 at Q_B)."""
    now = timezone.now()
    site_a, site_b = factories.SiteFactory(name="SITE-A"), factories.SiteFactory(name="SITE-B")
    factories.PandaQueueFactory(name="Q_A", site=site_a)
    factories.PandaQueueFactory(name="Q_B", site=site_b)
    alice = factories.TaskFactory(userName="alice", status="running")
    bob = factories.TaskFactory(userName="bob", status="running")
    changed = now - timedelta(minutes=20)

    def job(task, status, queue, cloud, **errors):
        return factories.JobFactory(
            task=task, jobStatus=status, computingSite=queue, cloud=cloud, prodUserName=task.userName,
            stateChangeTime=changed, **errors,
        )  # fmt: skip

    jobs = {
        "a1": job(alice, "failed", "Q_A", "CERN", pilotErrorCode=1305),
        "a2": job(alice, "failed", "Q_A", "CERN", pilotErrorCode=1305),
        "a3": job(alice, "failed", "Q_B", "DE", exeErrorCode=65),
        "a4": job(alice, "running", "Q_A", "CERN"),
        "b1": job(bob, "finished", "Q_B", "DE"),
        "b2": job(bob, "finished", "Q_B", "DE"),
        "b3": job(bob, "failed", "Q_B", "DE", pilotErrorCode=1305),
    }
    return now, jobs


def facet(response, name):
    return {v["value"]: v["count"] for v in next(f for f in response.context["facets"] if f["name"] == name)["values"]}


def test_the_job_list_counts_each_facet_and_each_count_is_a_filter(client, small_grid):
    response = client.get("/jobs/", {"window": "1h"})
    assert response.status_code == 200
    assert facet(response, "status") == {"failed": 4, "finished": 2, "running": 1}
    assert facet(response, "queue") == {"Q_A": 3, "Q_B": 4}
    assert facet(response, "cloud") == {"CERN": 3, "DE": 4}
    assert facet(response, "user") == {"alice": 4, "bob": 3}
    assert facet(response, "error") == {"pilot:1305": 3, "exe:65": 1}
    # every facet adds up to the rows it counts
    assert sum(facet(response, "status").values()) == response.context["page"].paginator.count == 7
    html = response.content.decode()
    assert "window=1h&amp;error=pilot%3A1305" in html
    narrowed = client.get("/jobs/", {"window": "1h", "error": "pilot:1305", "site": "SITE-B"})
    assert [row["pk"] for row in narrowed.context["page"]] == [small_grid[1]["b3"].pk]
    assert facet(narrowed, "user") == {"bob": 1}
    bad = client.get("/jobs/", {"error": "1305"})
    assert bad.status_code == 400
    assert "component:code" in bad.context["problems"]["error"]


def test_the_errors_page_drills_down_from_a_code_to_its_queues_and_jobs(client, small_grid):
    response = client.get("/errors/", {"window": "1d", "user": "alice"})
    assert response.status_code == 200
    errors = {e["label"].split(" ")[0]: (e["count"], dict(e["queues"])) for e in response.context["summary"]["errors"]}
    assert errors == {"pilot:1305": (2, {"Q_A": 2}), "exe:65": (1, {"Q_B": 1})}
    html = response.content.decode()
    assert "/jobs/?error=pilot:1305&amp;queue=Q_A&amp;window=1d" in html
    everyone = client.get("/errors/", {"window": "1d", "cloud": "DE"}).context["summary"]
    assert (everyone["total"], {e["label"].split(" ")[0]: e["count"] for e in everyone["errors"]}) == (
        2,
        {"pilot:1305": 1, "exe:65": 1},
    )
    assert client.get("/errors/", {"window": "2d"}).status_code == 400


def test_a_users_page_has_their_tasks_jobs_and_errors(client, small_grid):
    response = client.get("/users/alice/")
    assert response.status_code == 200
    assert response.context["tasks_total"] == 1
    assert {r["status"]: r["count"] for r in response.context["job_statuses"]} == {"failed": 3, "running": 1}
    assert response.context["errors"]["total"] == 3
    assert client.get("/users/nobody/").status_code == 404


def test_a_failed_job_keeps_the_input_files_it_took_and_their_attempt(client, small_grid):
    _, jobs = small_grid
    failed, retry = jobs["a1"], jobs["a4"]
    dataset = factories.DatasetFactory(task=failed.task, datasetName="mc23.EVNT.keep")
    first = factories.DatasetFileFactory(dataset=dataset, lfn="EVNT.A._1.root", attemptNr=2, PandaID=retry.pk)
    second = factories.DatasetFileFactory(dataset=dataset, lfn="EVNT.A._2.root", attemptNr=1, status="ready")
    # the job took both at their first and second attempts; one went on to another job, one back to the dataset
    Job.objects.filter(pk=failed.pk).update(inputFiles=f"{first.pk}:1,{second.pk}:0")
    response = client.get(f"/jobs/{failed.pk}/")
    files = {f["lfn"]: (f["jobAttemptNr"], f["now_with"]) for f in response.context["files"]}
    assert files == {"EVNT.A._1.root": (1, retry.pk), "EVNT.A._2.root": (0, None)}
    html = response.content.decode()
    assert "Input files (2)" in html
    assert f'href="/jobs/{retry.pk}/"' in html


def test_the_job_page_says_where_it_ran_and_what_it_used(client, small_grid):
    now, jobs = small_grid
    Job.objects.filter(pk=jobs["b1"].pk).update(
        startTime=now - timedelta(hours=2),
        endTime=now - timedelta(hours=1),
        coreCount=8,
        actualCoreCount=None,
        cpuConsumptionTime=14_400,  # 4 h of CPU over 1 h × 8 cores: 50 %
        maxRSS=2 * 1024 * 1024,
        maxPSS=850 * 1024,
        computingElement="ce01.example",
        modificationHost="wn007.example",
        pilotID="abc|https://logs.example/pilot.out|PR|3.7.0.36",
        homepackage="Athena/24.0.50",
        transformation="Sim_tf.py",
    )
    response = client.get(f"/jobs/{jobs['b1'].pk}/")
    usage = response.context["usage"]
    assert (usage["wall_seconds"], usage["cpu_seconds"], usage["cpu_efficiency"]) == (3600.0, 14_400, 50.0)
    html = response.content.decode()
    assert "2.0 GB · 850 MB" in html
    assert 'href="https://logs.example/pilot.out"' in html
    for shown in ("ce01.example", "wn007.example", "Athena/24.0.50", "Sim_tf.py"):
        assert shown in html.replace("<wbr>", "")


def test_the_api_gives_a_failed_jobs_input_files_and_the_new_filters(client, small_grid):
    _, jobs = small_grid
    Job.objects.filter(pk=jobs["a1"].pk).update(inputFiles="11:0,12:2")
    record = client.get(f"/api/v1/jobs/{jobs['a1'].pk}/").json()
    assert record["inputFiles"] == [{"fileID": 11, "attemptNr": 0}, {"fileID": 12, "attemptNr": 2}]
    listed = client.get("/api/v1/jobs/", {"site": "SITE-B", "cloud": "DE", "status": "failed"}).json()["results"]
    assert [row["PandaID"] for row in listed] == [jobs["b3"].pk, jobs["a3"].pk]


def test_the_task_page_has_its_parameters_distributions_and_retry_chains(client, small_grid):
    from brokerage.models import JobRetryHistory, Task

    now, jobs = small_grid
    task = jobs["a1"].task
    Task.objects.filter(pk=task.pk).update(taskParams={"nEventsPerJob": 1000, "ramCount": 2000})
    # two ended jobs of alice's task: 1 h and 3 h, 2 GB and 4 GB
    for key, hours, rss in (("a1", 1, 2), ("a3", 3, 4)):
        Job.objects.filter(pk=jobs[key].pk).update(
            startTime=now - timedelta(hours=hours + 1), endTime=now - timedelta(hours=1), maxRSS=rss * 1024 * 1024
        )
    # a1 → a2 → a4: one chain of two retries
    for old, new in (("a1", "a2"), ("a2", "a4")):
        JobRetryHistory.objects.create(
            task=task, oldPandaID=jobs[old].pk, newPandaID=jobs[new].pk, relationType="retry"
        )
    response = client.get(f"/tasks/{task.pk}/")
    distributions = response.context["distributions"]
    assert sorted(row["value"] for row in distributions["duration"]) == [1.0, 3.0]
    assert sorted(row["value"] for row in distributions["memory"]) == [2048.0, 4096.0]
    (chain,) = response.context["retry_chains"]
    assert (chain["jobs"], chain["length"], chain["last_status"]) == (
        [jobs["a1"].pk, jobs["a2"].pk, jobs["a4"].pk],
        2,
        "running",
    )
    html = response.content.decode()
    assert 'id="task-duration-chart"' in html
    assert "nEventsPerJob" in html


def test_the_site_page_has_its_endpoints_downtimes_errors_and_time_series(client, small_grid):
    from brokerage.models import JobStatusLog, PandaQueue, Site

    now, jobs = small_grid
    site = Site.objects.get(name="SITE-B")
    factories.StorageEndpointFactory(name="SITE-B_DATADISK", site=site, space_total=1000, space_free=250)
    factories.PandaQueueFactory(name="Q_B_DOWN", site=site, status="offline")
    for job in (jobs["b1"], jobs["b2"]):
        JobStatusLog.objects.create(
            job=job, old_status="running", new_status="finished", timestamp=now - timedelta(minutes=10),
            computingSite="Q_B",
        )  # fmt: skip
    response = client.get("/sites/SITE-B/")
    assert response.status_code == 200
    assert [e["name"] for e in response.context["endpoints"]] == ["SITE-B_DATADISK"]
    assert [(d["name"], d["status"]) for d in response.context["downtimes"]] == [("Q_B_DOWN", "offline")]
    # Q_B's failed jobs: b3 (pilot:1305) and a3 (exe:65)
    assert {e["label"].split(" ")[0]: e["count"] for e in response.context["errors"]["errors"]} == {
        "pilot:1305": 1,
        "exe:65": 1,
    }
    assert sum(row["count"] for row in response.context["over_time"] if row["status"] == "finished") == 2
    assert PandaQueue.objects.filter(site=site).count() == 2
    assert 'id="site-over-time"' in response.content.decode()


def test_the_overview_looks_back_7_and_30_days(client, small_grid):
    from brokerage.models import JobStatusLog

    now, jobs = small_grid
    for job, ago in (
        (jobs["b1"], timedelta(minutes=10)),
        (jobs["b2"], timedelta(days=3)),
        (jobs["a4"], timedelta(days=20)),
    ):
        JobStatusLog.objects.create(
            job=job, old_status="running", new_status="finished", timestamp=now - ago, computingSite="Q_B"
        )

    def finished(span):
        response = client.get("/", {"span": span})
        assert response.status_code == 200
        overview = response.context["overview"]
        return sum(row["count"] for row in overview["job_trend"] if row["status"] == "finished"), overview["bucket"]

    assert finished("1d") == (1, "hour")
    assert finished("7d") == (2, "day")
    assert finished("30d") == (3, "day")
    assert client.get("/", {"span": "1y"}).status_code == 400


def test_panda_clients_job_description_keeps_a_failed_jobs_files(small_grid):
    # issue 50: getJobStatus / get_description returned no Files for a failed job once they went back
    from brokerage.selectors.panda_client import panda_job_descriptions

    _, jobs = small_grid
    dataset = factories.DatasetFactory(task=jobs["a1"].task, datasetName="mc23.EVNT.desc")
    taken = factories.DatasetFileFactory(dataset=dataset, lfn="EVNT.D._1.root", attemptNr=2, status="ready")
    Job.objects.filter(pk=jobs["a1"].pk).update(inputFiles=f"{taken.pk}:1")
    (described,) = panda_job_descriptions(job_ids=[jobs["a1"].pk])
    assert [(f["lfn"], f["attemptNr"], f["PandaID"], f["dataset"]) for f in described["Files"]] == [
        ("EVNT.D._1.root", 1, jobs["a1"].pk, "mc23.EVNT.desc")
    ]


def test_the_job_pages_say_where_a_merge_stands(client, small_grid):
    # a pre-merged job of a task whose outputs are merged, waiting in merging; then its merge job (attempt 2 of 3)
    task = factories.TaskFactory(status="running", taskParams={"mergeOutput": True})
    premerged = factories.JobFactory(task=task, jobStatus="merging", computingSite="Q_A")
    html = client.get(f"/jobs/{premerged.pk}/").content.decode()
    assert "its pre-merged outputs wait at Q_A until the task&#x27;s other jobs there are done" in html
    merge = factories.JobFactory(task=task, jobStatus="running", isMerge=True, attemptNr=2, computingSite="Q_A")
    Job.objects.filter(pk=premerged.pk).update(mergeJob=merge)
    html = client.get(f"/jobs/{premerged.pk}/").content.decode()
    assert f"Its outputs are being merged by merge job {merge.pk} (attempt 2 of 3, running)" in html
    html = client.get(f"/jobs/{merge.pk}/").content.decode()
    assert "Merge job, attempt 2 of 3, of 1 pre-merged jobs at Q_A" in html
    assert f'href="/jobs/{premerged.pk}/"' in html
    # the API says the same links
    row = client.get("/api/v1/jobs/", {"status": "merging"}).json()["results"][0]
    assert (row["jobStatus"], row["mergeJob"], row["isMerge"]) == ("merging", merge.pk, False)
    # the merge's last attempt failed: the pre-merged job cancelled, merge_failed, task-buffer 113
    Job.objects.filter(pk=premerged.pk).update(
        jobStatus="cancelled", jobSubStatus="merge_failed", taskBufferErrorCode=113
    )
    html = client.get(f"/jobs/{premerged.pk}/").content.decode()
    assert "The merge of its outputs failed three times: it was cancelled and its input files run again." in html
    assert "merge failed" in html  # the main error's label


def test_the_job_pages_say_what_a_jumbo_or_co_jumbo_job_is(client, small_grid):
    # a fake co-jumbo job waiting with 1 of its 2 ranges processed by the task's running jumbo job
    task = factories.TaskFactory(status="running", eventService=1, useJumbo="R", taskParams={"nJumboJobs": 1})
    jumbo = factories.JobFactory(task=task, jobStatus="running", eventService=states.JUMBO_JOB, computingSite="Q_J")
    fake = factories.JobFactory(
        task=task, jobStatus="waiting", eventService=states.CO_JUMBO_JOB, computingSite=states.WAITING_CO_JUMBO
    )
    file = factories.DatasetFileFactory(dataset=factories.DatasetFactory(task=task), status="running")
    factories.EventFactory(file=file, PandaID=fake.pk, status="finished", is_jumbo=True, job_processID=0)
    factories.EventFactory(file=file, PandaID=fake.pk, status="ready", job_processID=1)
    html = client.get(f"/jobs/{fake.pk}/").content.decode()
    assert "Fake co-jumbo job: no queue running event service took its job set, so it waits at WAITING_CO_JUMBO" in html
    assert "(1 of its 2 event ranges processed)" in html
    assert f'Active jumbo jobs of the task: <a href="/jobs/{jumbo.pk}/">{jumbo.pk}</a>' in html
    html = client.get(f"/jobs/{jumbo.pk}/").content.decode()
    assert "Jumbo job: it takes any events of its task on demand, across every job set, at Q_J" in html
    assert "Event ranges of the task processed by jumbo jobs so far: 1." in html
    # the API gives the flags: eventService 4 (jumbo), 5 (co-jumbo), the task's useJumbo
    rows = client.get("/api/v1/jobs/", {"jediTaskID": task.pk}).json()["results"]
    assert sorted((row["PandaID"], row["eventService"]) for row in rows) == [(jumbo.pk, 4), (fake.pk, 5)]
    assert client.get(f"/api/v1/tasks/{task.pk}/").json()["useJumbo"] == "R"


def test_the_job_pages_say_what_an_es_job_substatus_means(client, small_grid):
    task = factories.TaskFactory(status="running", eventService=1)
    job = factories.JobFactory(
        task=task, jobStatus="merging", jobSubStatus="es_wait", eventService=states.ES_JOB, taskBufferErrorCode=115
    )
    file = factories.DatasetFileFactory(dataset=factories.DatasetFactory(task=task), status="running")
    factories.EventFactory(file=file, PandaID=job.pk, status="done", job_processID=0)
    factories.EventFactory(file=file, PandaID=job.pk, status="done", job_processID=1)
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert (
        "Event service job (es_wait): its event ranges are done; it waits in merging while other ES jobs of its job "
        "set still run, then one ES merge job merges the set. Its ranges: 2 done." in html
    )
    assert 'role="alert"' not in html  # 115 is its outcome, not an error: no red box
    merge = factories.JobFactory(task=task, jobStatus="running", isMerge=True, eventService=states.ES_MERGE_JOB)
    Job.objects.filter(pk=job.pk).update(mergeJob=merge)
    html = client.get(f"/jobs/{merge.pk}/").content.decode()
    assert "ES merge job: it merges the event ranges of its job set&#x27;s ES jobs (ranges: 2 done)." in html
    # the task page counts its event ranges by status and its event service jobs by kind
    html = client.get(f"/tasks/{task.pk}/").content.decode()
    assert "Event ranges (2)</h3>" in html
    assert '<span class="status status-done">done</span> 2' in html
    assert "ES jobs: 1 · ES merge jobs: 1" in html


def test_the_task_page_counts_output_files_by_status_and_the_job_page_lists_them(client, small_grid):
    task = factories.TaskFactory(status="running")
    output = factories.DatasetFactory(task=task, type="output", status="running", datasetName="mc23.1.HITS_tid1_00")
    factories.DatasetFactory(task=task, type="input", status="ready", nFilesUsed=4)
    job = factories.JobFactory(task=task, jobStatus="merging")
    for number, status in enumerate(("prepared", "merging", "merging", "finished", "failed")):
        factories.DatasetFileFactory(
            task=task,
            dataset=output,
            type="output",
            status=status,
            outPandaID=job.pk if number == 0 else None,
            lfn=f"HITS.1._00000{number}.pool.root",
        )
    html = client.get(f"/tasks/{task.pk}/").content.decode()
    # five files counted from the rows (the stored counters are written when the dataset closes)
    (row,) = [row for row in html.split("</tr>") if "<td>output</td>" in row]
    assert '<td class="num">5</td><td class="num">—</td><td class="num">1</td><td class="num">1</td>' in row
    assert (
        '<span class="status status-prepared">prepared</span> 1 · <span class="status status-merging">merging</span> 2'
        ' · <span class="status status-finished">finished</span> 1 · <span class="status status-failed">failed</span> 1'
    ) in row
    # the job page lists the files it produced
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Output and log files (1)" in html
    assert "HITS.<wbr>1.<wbr>_<wbr>000000.<wbr>pool.<wbr>root" in html  # (wrappable after its separators)


def test_the_job_page_explains_a_lost_heartbeat_of_an_es_job(client, small_grid):
    task = factories.TaskFactory(status="running", eventService=1)
    job = factories.JobFactory(task=task, jobStatus="failed", jobSubStatus="es_heartbeat", eventService=states.ES_JOB)
    file = factories.DatasetFileFactory(dataset=factories.DatasetFactory(task=task), status="running")
    factories.EventFactory(file=file, PandaID=job.pk, status="failed", job_processID=0)
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert (
        "Event service job (es_heartbeat): its pilot went silent before it processed any event range (heartbeat "
        "lost); its ranges went to a new consumer. If the queue loses many, look at its pilots and worker nodes. "
        "Its ranges: 1 failed." in html
    )
