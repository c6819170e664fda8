"""The home page lists what is in the database."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from brokerage.services.demo import demo_load
from tests import factories

pytestmark = pytest.mark.django_db


def test_empty_database_says_so(client):
    response = client.get(reverse("monitor:overview"))
    assert response.status_code == 200
    assert "No tasks yet" in response.content.decode()


def test_counts_and_status_breakdowns(client):
    factories.TaskFactory(status="running", taskName="task.alpha")
    factories.TaskFactory(status="running")
    factories.TaskFactory(status="pending")
    factories.JobFactory.create_batch(3, jobStatus="activated")
    factories.PandaQueueFactory(status="offline")
    response = client.get(reverse("monitor:overview"))
    overview = response.context["overview"]
    counts = {item["label"]: item["count"] for item in overview["counts"]}
    assert counts["Tasks"] == 6  # three here, three made for the jobs
    assert counts["Active jobs"] == 3
    assert [(row.status, row.count) for row in overview["tasks_by_status"]] == [
        ("registered", 3),
        ("pending", 1),
        ("running", 2),
    ]
    assert [(row.status, row.count) for row in overview["queues_by_status"]] == [("offline", 1)]
    assert "task.alpha" in response.content.decode().replace("<wbr>", "")  # names may wrap after their dots


def test_overview_costs_a_fixed_number_of_queries(client, django_assert_max_num_queries):
    demo_load(now=datetime(2026, 11, 1, tzinfo=UTC))
    # the counts, the status breakdowns, the day's errors and ended jobs (their summaries' marks and the edges),
    # on PostgreSQL one more for the row estimates: the same number whatever the history
    with django_assert_max_num_queries(23):
        assert client.get(reverse("monitor:overview")).status_code == 200


@pytest.mark.skipif(
    not __import__("os").environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="PostgreSQL's row estimates: PostgreSQL pass",
)
def test_big_tables_show_postgresqls_estimate_not_a_count(client, monkeypatch):
    from django.db import connection

    from brokerage.selectors import overview

    factories.DatasetFileFactory.create_batch(4)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jedi_dataset_contents")
    monkeypatch.setattr(overview, "ESTIMATE_FROM", 3)
    response = client.get(reverse("monitor:overview"))
    cards = {item["label"]: item for item in response.context["overview"]["counts"]}
    assert (cards["Files"]["count"], cards["Files"]["estimated"]) == (4, True)  # ANALYZE saw all four
    # never analysed: no estimate, so counted
    assert (cards["Datasets"]["count"], cards["Datasets"]["estimated"]) == (4, False)
    assert "≈ 4" in response.content.decode()


def test_overview_refuses_writes(client):
    assert client.post(reverse("monitor:overview")).status_code == 405


def test_the_last_24_hours_show_job_states_per_hour_and_the_queues_failing_most(client):
    # issue 35, finding 8: trends, not only counts. Worked numbers: at RAL 6 failed and 2 finished (75 %), at BNL 3
    # failed or closed and 9 finished (25 %), at CERN 1 failed and nothing else (100 %); moves an hour apart
    from django.utils import timezone

    now = timezone.now()
    task = factories.TaskFactory()
    moves = (
        ("RAL_MCORE", "failed", 6, 1),
        ("RAL_MCORE", "finished", 2, 1),
        ("BNL_PROD", "failed", 2, 2),
        ("BNL_PROD", "closed", 1, 2),
        ("BNL_PROD", "finished", 9, 2),
        ("CERN-PROD_UCORE", "failed", 1, 3),
        ("BNL_PROD", "running", 4, 3),
    )
    for queue, status, count, hours_ago in moves:
        for _ in range(count):
            job = factories.JobFactory(task=task, computingSite=queue, jobStatus=status)
            factories.JobStatusLogFactory(
                job=job,
                computingSite=queue,
                old_status="running",
                new_status=status,
                timestamp=now - timezone.timedelta(hours=hours_ago, minutes=-5),
            )
    response = client.get(reverse("monitor:overview"))
    overview = response.context["overview"]
    assert [(r["queue"], r["failed"], r["finished"], r["rate"]) for r in overview["failing_queues"]] == [
        ("RAL_MCORE", 6, 2, 75),
        ("BNL_PROD", 3, 9, 25),
        ("CERN-PROD_UCORE", 1, 0, 100),
    ]
    trend = {(row["status"], row["count"]) for row in overview["job_trend"]}
    assert trend == {("failed", 6), ("finished", 2), ("failed", 2), ("closed", 1), ("finished", 9), ("failed", 1),
                     ("running", 4)}  # fmt: skip
    assert len({row["time"] for row in overview["job_trend"]}) == 3  # three hours
    html = response.content.decode()
    assert 'id="overview-job-trend"' in html
    assert "Queues failing most" in html
