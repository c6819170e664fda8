"""Hourly error summaries (issue 32): the overview's and the queue page's error counts read whole hours from the
summaries and only the edges from the jobs, and come out the same as a count of the jobs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import Job, JobErrorHour, SummaryMark
from brokerage.selectors.jobs import job_error_rows_recent, job_error_summary
from brokerage.services.summaries import job_error_hours_rollup
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2027, 3, 10, 12, 30, tzinfo=UTC)


def failed(at: datetime, *, site: str = "CERN", status: str = "failed", **errors) -> Job:
    return factories.JobFactory(
        jobStatus=status, computingSite=site, stateChangeTime=at, modificationTime=at, endTime=at, **errors
    )


@pytest.fixture
def day_of_errors():
    """Seven jobs that ended badly over the last four hours, and one from two days ago (outside the window)."""
    hour = datetime(2027, 3, 10, 9, 0, tzinfo=UTC)
    jobs = [
        failed(hour + timedelta(minutes=10), pilotErrorCode=1099, pilotErrorDiag="stage-in failed"),
        failed(hour + timedelta(minutes=20), pilotErrorCode=1099, pilotErrorDiag="stage-in failed"),
        failed(hour + timedelta(minutes=30), site="BNL", pilotErrorCode=1099, pilotErrorDiag="stage-in failed"),
        failed(hour + timedelta(minutes=50), status="closed", taskBufferErrorCode=102, taskBufferErrorDiag="expired"),
        failed(hour + timedelta(hours=1, minutes=20), site="BNL", exeErrorCode=65, exeErrorDiag="payload"),
        failed(hour + timedelta(hours=1, minutes=40), site="BNL", exeErrorCode=65, exeErrorDiag="payload"),
        failed(NOW - timedelta(minutes=2), pilotErrorCode=1099, pilotErrorDiag="stage-in failed"),
    ]
    failed(NOW - timedelta(days=2), pilotErrorCode=1099)
    return jobs


def by_error(summary) -> dict:
    return {(e["component"], e["code"]): (e["count"], dict(e["queues"])) for e in summary["errors"]}


def test_summaries_and_jobs_give_the_same_counts(day_of_errors):
    since = NOW - timedelta(days=1)
    live = job_error_summary(since=since)
    assert job_error_hours_rollup(now=NOW) == 48  # two days back to 11:00 (12:00 is not over)
    assert SummaryMark.objects.get().until == datetime(2027, 3, 10, 12, 0, tzinfo=UTC)
    summarised = job_error_summary(rows=job_error_rows_recent(since=since))
    assert (
        by_error(summarised)
        == by_error(live)
        == {
            ("pilot", 1099): (4, {"CERN": 3, "BNL": 1}),
            ("exe", 65): (2, {"BNL": 2}),
            ("taskbuffer", 102): (1, {"CERN": 1}),
        }
    )
    assert summarised["total"] == live["total"] == 7
    # per queue, as the queue page asks
    bnl = job_error_summary(rows=job_error_rows_recent(since=since, queue="BNL"))
    assert by_error(bnl) == {("exe", 65): (2, {"BNL": 2}), ("pilot", 1099): (1, {"BNL": 1})}


def test_whole_hours_come_from_the_summaries_not_the_jobs(day_of_errors):
    job_error_hours_rollup(now=NOW)
    Job.objects.filter(stateChangeTime__lt=datetime(2027, 3, 10, 12, 0, tzinfo=UTC)).delete()  # archived, dropped…
    summary = job_error_summary(rows=job_error_rows_recent(since=NOW - timedelta(days=1)))
    assert summary["total"] == 7  # six from the summaries, the last (12:28) from the jobs


def test_a_rollup_twice_counts_each_hour_once_and_waits_for_the_hour_to_be_over(day_of_errors):
    job_error_hours_rollup(now=NOW)
    rows = sorted(JobErrorHour.objects.values_list("hour", "computingSite", "n"))
    assert job_error_hours_rollup(now=NOW) == 0
    assert sorted(JobErrorHour.objects.values_list("hour", "computingSite", "n")) == rows
    assert job_error_hours_rollup(now=datetime(2027, 3, 10, 13, 5, tzinfo=UTC)) == 0  # 12:00-13:00: 5 min ago
    assert job_error_hours_rollup(now=datetime(2027, 3, 10, 13, 10, tzinfo=UTC)) == 1
    assert JobErrorHour.objects.get(hour=datetime(2027, 3, 10, 12, 0, tzinfo=UTC)).n == 1


def test_the_overview_reads_them(client, day_of_errors):
    job_error_hours_rollup(now=NOW)
    page = client.get("/").content.decode()
    assert "Errors of the last day" in page
    assert "1099" in page
