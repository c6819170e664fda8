"""/metrics (issue 53, monitor.metrics): the grid's state equals the database's counts, series folded past the limit
keep the total, what the processes count (decisions, candidates removed, job moves, housekeeping, Celery tasks)
is summed from the multiprocess files, and who may read it."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from prometheus_client.parser import text_string_to_metric_families

from brokerage import metrics as process_metrics
from brokerage.selectors.metrics import metrics_celery_queues, metrics_jobs
from brokerage.services.status import job_status_transition_many
from monitor.metrics import CACHE_KEY
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_state():
    cache.delete(CACHE_KEY)
    yield
    cache.delete(CACHE_KEY)


def scrape(client, **headers) -> dict[str, dict[tuple, float]]:
    """name → {labels as sorted (key, value) pairs: value} of every sample of /metrics."""
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def labelled(samples: dict[tuple, float], **wanted) -> float:
    return sum(value for labels, value in samples.items() if wanted.items() <= dict(labels).items())


@pytest.fixture
def grid():
    nucleus = factories.SiteFactory(name="CERN-PROD", cloud="CERN", role="nucleus")
    satellite = factories.SiteFactory(name="BNL-ATLAS", cloud="US")
    factories.PandaQueueFactory(name="CERN-PROD_UCORE", site=nucleus)
    factories.PandaQueueFactory(name="BNL_PROD", site=satellite)
    return nucleus, satellite


def jobs(n, **fields):
    return [factories.JobFactory(**fields) for _ in range(n)]


def test_jobs_by_atlas_dimensions_equal_the_database(client, grid):
    # 3 running MC 16 SCORE jobs at CERN for nucleus CERN-PROD, 2 activated Express MCORE at BNL for the same
    # nucleus, 1 finished (ended: not a gauge's)
    jobs(3, jobStatus="running", computingSite="CERN-PROD_UCORE", gshare="MC 16", nucleus="CERN-PROD",
         resource_type="SCORE")  # fmt: skip
    jobs(2, jobStatus="activated", computingSite="BNL_PROD", gshare="Express", nucleus="CERN-PROD",
         resource_type="MCORE")  # fmt: skip
    jobs(1, jobStatus="finished", computingSite="BNL_PROD", gshare="Express", nucleus="CERN-PROD")
    samples = scrape(client)["panda_jobs"]
    assert samples == {
        (("cloud", "CERN"), ("computingsite", "CERN-PROD_UCORE"), ("gshare", "MC 16"), ("nucleus", "CERN-PROD"),
         ("resource_type", "SCORE"), ("status", "running")): 3.0,
        (("cloud", "US"), ("computingsite", "BNL_PROD"), ("gshare", "Express"), ("nucleus", "CERN-PROD"),
         ("resource_type", "MCORE"), ("status", "activated")): 2.0,
    }  # fmt: skip
    # the answer is kept METRICS_CACHE_SECONDS: a job made now shows at the next period
    jobs(1, jobStatus="running", computingSite="BNL_PROD")
    assert labelled(scrape(client)["panda_jobs"], status="running") == 3.0
    cache.delete(CACHE_KEY)
    assert labelled(scrape(client)["panda_jobs"], status="running") == 4.0


def test_past_the_limit_the_smallest_queues_fold_and_the_total_stays(grid, settings):
    # four queues: A 10 jobs in 2 series, B 6 in 2, C 2 in 2, D 1 in 1: 7 series
    for site, statuses in (("A", {"running": 6, "activated": 4}), ("B", {"running": 3, "activated": 3}),
                           ("C", {"running": 1, "activated": 1}), ("D", {"running": 1})):  # fmt: skip
        for status, n in statuses.items():
            jobs(n, jobStatus=status, computingSite=site)
    assert metrics_jobs(series_max=7).sites_folded == 0
    # at most 5: keeping A and B (4 series) leaves C and D as "other" (running 2, activated 1): 6 > 5; keeping A
    # alone: 2 + other's 2 = 4 series
    series = metrics_jobs(series_max=5)
    assert series.sites_folded == 3
    assert {(labels[0], labels[2]): n for labels, n in series.rows} == {
        ("running", "A"): 6, ("activated", "A"): 4, ("running", "other"): 5, ("activated", "other"): 4
    }  # fmt: skip
    assert sum(n for _, n in series.rows) == 19
    # fewer than a status's series: every queue folds, the total still 19
    assert sum(n for _, n in metrics_jobs(series_max=1).rows) == 19


def test_tasks_by_status_and_work_queue(client):
    queue = factories.WorkQueueFactory(queue_name="MC_SIM")
    for status, n in (("running", 2), ("ready", 1)):
        for _ in range(n):
            factories.TaskFactory(status=status, workQueue=queue)
    factories.TaskFactory(status="running", workQueue=None)
    samples = scrape(client)["panda_tasks"]
    assert samples == {
        (("status", "ready"), ("workqueue", "MC_SIM")): 1.0,
        (("status", "running"), ("workqueue", "")): 1.0,
        (("status", "running"), ("workqueue", "MC_SIM")): 2.0,
    }


def test_shares_hs06_against_their_targets(client):
    for name, value in (("MC 16", 75), ("Express", 25)):
        factories.GlobalShareFactory(name=name, value=value)
    # 9,000 + 1,000 HS06 executing: MC 16's target 75 % of 10,000, Express' 2,500; 400 queued for Express
    factories.JobFactory(jobStatus="running", gshare="MC 16", hs06=9000)
    factories.JobFactory(jobStatus="running", gshare="Express", hs06=1000)
    factories.JobFactory(jobStatus="activated", gshare="Express", hs06=400)
    samples = scrape(client)
    assert samples["panda_share_executing_hs06"] == {(("gshare", "Express"),): 1000.0, (("gshare", "MC 16"),): 9000.0}
    assert samples["panda_share_target_hs06"] == {(("gshare", "Express"),): 2500.0, (("gshare", "MC 16"),): 7500.0}
    assert samples["panda_share_queued_hs06"][(("gshare", "Express"),)] == 400.0


def test_the_processes_counts_are_summed_from_their_files(client, django_capture_on_commit_callbacks):
    before = scrape(client)
    job = factories.JobFactory(jobStatus="activated")
    with django_capture_on_commit_callbacks(execute=True):
        job_status_transition_many(from_status="activated", to_status="sent", job_ids=[job.pk])
    rows = [
        type("Row", (), {"plugin": "panda_job", "outcome": "chosen", "reason_counts": {"1003": 4, "1010": 1}}),
        type("Row", (), {"plugin": "panda_job", "outcome": "no_candidates", "reason_counts": {"1003": 7}}),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        process_metrics.decisions_count(rows)
    process_metrics.housekeeping_count({"job_status_log": {"dropped": 120}, "jobs": {"moved": 5, "dropped": 0}})
    after = scrape(client)

    def grew(name, **labels):
        return labelled(after.get(name, {}), **labels) - labelled(before.get(name, {}), **labels)

    assert grew("brokerage_job_moves_total", status="sent") == 1
    assert grew("brokerage_decisions_total", plugin="panda_job", outcome="chosen") == 1
    assert grew("brokerage_decisions_total", plugin="panda_job", outcome="no_candidates") == 1
    assert grew("brokerage_candidates_removed_total", plugin="panda_job", code="1003") == 11
    assert grew("brokerage_housekeeping_rows_total", table="job_status_log", action="dropped") == 120
    assert grew("brokerage_housekeeping_rows_total", table="jobs", action="moved") == 5
    assert grew("brokerage_housekeeping_rows_total", table="jobs", action="dropped") == 0
    # django-prometheus counted the first scrape
    assert labelled(after["django_http_requests_total_by_view_transport_method_total"], view="metrics") >= 1


def test_a_celery_tasks_wait_and_run_time(client):
    class Task:
        name = "brokerage.tasks.watchdog_task"
        request = type("Request", (), {})()

    headers: dict = {}
    process_metrics.on_task_sent(headers=headers)
    setattr(Task.request, process_metrics.SENT_AT, headers[process_metrics.SENT_AT] - 3.0)  # sent 3 s ago
    process_metrics.on_task_started(task_id="t1", task=Task)
    process_metrics.on_task_ended(task_id="t1", task=Task)
    samples = scrape(client)
    waits = samples["brokerage_celery_task_wait_seconds_bucket"]
    task = ("task", "brokerage.tasks.watchdog_task")
    assert (waits[(("le", "2.0"), task)], waits[(("le", "5.0"), task)]) == (0, 1)  # 3 s: between 2 and 5
    assert samples["brokerage_celery_task_run_seconds_count"][(task,)] >= 1


def test_who_may_read(client, settings):
    settings.API_ANONYMOUS_READ = False
    assert client.get("/metrics").status_code == 403
    settings.METRICS_BEARER_TOKEN = "s3cret-scrape-token"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert "brokerage_metrics_broker_up" in scrape(client, HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    settings.API_ANONYMOUS_READ = True  # with a token set, the token is the rule
    assert client.get("/metrics").status_code == 403
    assert client.post("/metrics").status_code == 405


def test_celerys_queue_length_and_a_broker_that_does_not_answer(client):
    # the suite's broker is the filesystem transport: its queue is counted (a task sent, not taken: one more)
    from config.celery import app

    before = metrics_celery_queues(timeout=2)
    app.send_task("brokerage.tasks.no_such_task_for_metrics")
    assert metrics_celery_queues(timeout=2) == {"celery": before["celery"] + 1}
    samples = scrape(client)
    assert samples["brokerage_metrics_broker_up"] == {(): 1.0}
    assert samples["brokerage_celery_queue_length"] == {(("queue", "celery"),): before["celery"] + 1}
    # nothing listens on port 1: None within the timeout, which the scrape reports as broker_up 0
    assert metrics_celery_queues(timeout=0.5, url="redis://127.0.0.1:1/0") is None
