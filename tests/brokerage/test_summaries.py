"""Hourly summaries (issue 32): the overview's and the queue page's error counts, the queue page's status moves per
hour and the decision explorer's counts read whole hours from the summaries and only the edges from the jobs, their
logs and the decisions, and come out the same as a count of the raw rows."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from brokerage.models import Decision, DecisionHour, Job, JobErrorHour, JobStateHour, JobStatusLog, SummaryMark
from brokerage.selectors.decisions import (
    DECISION_HOURS,
    decision_count_rows,
    decision_count_rows_recent,
    decision_explorer,
)
from brokerage.selectors.jobs import (
    JOB_STATE_HOURS,
    job_error_rows_recent,
    job_error_summary,
    job_state_rows,
    job_state_rows_recent,
)
from brokerage.selectors.queues import queue_detail
from brokerage.services.summaries import decision_hours_rollup, job_error_hours_rollup, job_state_hours_rollup
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


@pytest.fixture
def day_of_moves():
    """Status moves at CERN-PROD and BNL over the last four hours, and one at CERN-PROD two days ago."""
    factories.PandaQueueFactory(name="CERN-PROD")
    job = factories.JobFactory(computingSite="CERN-PROD")
    other = factories.JobFactory(computingSite="BNL")
    hour = datetime(2027, 3, 10, 9, 0, tzinfo=UTC)
    for at, status, on in [
        (hour + timedelta(minutes=5), "activated", job),
        (hour + timedelta(minutes=6), "starting", job),
        (hour + timedelta(minutes=7), "running", job),
        (hour + timedelta(minutes=8), "running", other),
        (hour + timedelta(hours=2, minutes=30), "finished", job),
        (NOW - timedelta(minutes=3), "activated", job),  # after the last whole hour (12:00)
        (NOW - timedelta(days=2), "running", job),  # outside the day
    ]:
        factories.JobStatusLogFactory(job=on, computingSite=on.computingSite, timestamp=at, new_status=status)


def moves(rows) -> dict:
    counts: dict = {}
    for row in rows:
        key = (row["hour"].hour, row["computingSite"], row["new_status"])
        counts[key] = counts.get(key, 0) + row["n"]
    return counts


def test_status_moves_per_hour_from_summaries_and_logs_agree(day_of_moves):
    since = NOW - timedelta(days=1)
    live = moves(job_state_rows_recent(since=since))
    assert job_state_hours_rollup(now=NOW) == 48
    assert SummaryMark.objects.get(name=JOB_STATE_HOURS).until == datetime(2027, 3, 10, 12, 0, tzinfo=UTC)
    assert JobStateHour.objects.get(hour=datetime(2027, 3, 10, 9, 0, tzinfo=UTC), computingSite="BNL").n == 1
    JobStatusLog.objects.filter(timestamp__lt=datetime(2027, 3, 10, 12, 0, tzinfo=UTC)).delete()  # dropped
    summarised = moves(job_state_rows_recent(since=since))
    assert (
        summarised
        == live
        == {
            (9, "CERN-PROD", "activated"): 1,
            (9, "CERN-PROD", "starting"): 1,
            (9, "CERN-PROD", "running"): 1,
            (9, "BNL", "running"): 1,
            (11, "CERN-PROD", "finished"): 1,
            (12, "CERN-PROD", "activated"): 1,
        }
    )
    assert moves(job_state_rows_recent(since=since, queue="BNL")) == {(9, "BNL", "running"): 1}


def test_a_short_range_is_counted_an_hour_at_a_time_with_the_same_result(day_of_moves, django_assert_num_queries):
    """Up to three hours are counted an hour at a time (each hour grouped without the hour: PostgreSQL then hashes
    instead of sorting); the rows are those of one query grouped by hour."""
    since = datetime(2027, 3, 10, 9, 6, 30, tzinfo=UTC)
    with django_assert_num_queries(1):  # 09:06:30 to 12:30 is more than three hours from 09:00: one query
        in_one_query = moves(job_state_rows(since=since, now=NOW))
    with django_assert_num_queries(4):  # 09:06:30–10:00, 10:00–11:00, 11:00–12:00 and 12:00 on
        by_hour = moves(job_state_rows(since=since, now=datetime(2027, 3, 10, 12, 0, tzinfo=UTC)))
    assert (
        by_hour
        == in_one_query
        == {
            (9, "CERN-PROD", "running"): 1,  # 09:07; 09:05 and 09:06 are before `since`
            (9, "BNL", "running"): 1,
            (11, "CERN-PROD", "finished"): 1,
            (12, "CERN-PROD", "activated"): 1,  # 12:27, after `now`: counted in the open last hour
        }
    )
    # a closed range inside an hour, as the roll-up and the window's first part hour ask
    with django_assert_num_queries(1):
        inside = moves(job_state_rows(since=since, until=datetime(2027, 3, 10, 10, 0, tzinfo=UTC)))
    assert inside == {(9, "CERN-PROD", "running"): 1, (9, "BNL", "running"): 1}


def test_the_queue_page_charts_the_summarised_hours(day_of_moves):
    job_state_hours_rollup(now=NOW)
    JobStatusLog.objects.filter(timestamp__lt=datetime(2027, 3, 10, 12, 0, tzinfo=UTC)).delete()
    detail = queue_detail(name="CERN-PROD", now=NOW)
    assert [(row["time"].hour, row["status"], row["count"]) for row in detail["over_time"]] == [
        (9, "activated", 1),
        (9, "running", 1),
        (9, "starting", 1),
        (11, "finished", 1),
        (12, "activated", 1),
    ]


def test_the_overview_counts_jobs_that_ended_in_the_last_day_from_the_moves(client, day_of_moves):
    from brokerage.selectors.overview import database_overview

    job_state_hours_rollup(now=NOW)
    JobStatusLog.objects.filter(timestamp__lt=datetime(2027, 3, 10, 12, 0, tzinfo=UTC)).delete()
    overview = database_overview(now=NOW)
    assert [(row.status, row.count) for row in overview["jobs_ended_last_day"]] == [("finished", 1)]
    # the active ones by status, counted from the jobs (both are "defined" in the fixture)
    assert [(row.status, row.count) for row in overview["jobs_by_status"]] == [("defined", 2)]
    assert "Ended in the last day" in client.get("/").content.decode()


@pytest.fixture
def day_of_decisions():
    """Decisions over the last day: whole hours, a part hour at the window's start, and some after the last hour
    rolled up; and two outside the window (yesterday 11:00 is before NOW - 1 day = 12:30)."""
    made = []
    for at, plugin, outcome, reason in [
        (datetime(2027, 3, 9, 12, 40, tzinfo=UTC), "atlas_prod_job", "pending", "nqueue_cap"),  # the part hour
        (datetime(2027, 3, 9, 12, 20, tzinfo=UTC), "atlas_prod_job", "pending", "nqueue_cap"),  # before the window
        (datetime(2027, 3, 9, 11, 0, tzinfo=UTC), "atlas_prod_job", "assigned", "status"),  # before the window
        (datetime(2027, 3, 10, 9, 5, tzinfo=UTC), "atlas_prod_job", "assigned", "status"),
        (datetime(2027, 3, 10, 9, 10, tzinfo=UTC), "atlas_prod_job", "assigned", "status"),
        (datetime(2027, 3, 10, 9, 15, tzinfo=UTC), "atlas_prod_job", "pending", "nqueue_cap"),
        (datetime(2027, 3, 10, 10, 30, tzinfo=UTC), "atlas_prod_task", "assigned", ""),
        (datetime(2027, 3, 10, 11, 59, tzinfo=UTC), "atlas_anal_job", "throttled", "user_cap"),
        (datetime(2027, 3, 10, 12, 10, tzinfo=UTC), "atlas_prod_job", "pending", "nqueue_cap"),  # after the mark
    ]:
        made.append(factories.DecisionFactory(created=at, plugin=plugin, outcome=outcome, primary_reason=reason))
    return made


def decision_counts(rows) -> dict:
    counts: dict = {}
    for row in rows:
        key = (row["plugin"], row["outcome"], row["primary_reason"])
        counts[key] = counts.get(key, 0) + row["n"]
    return counts


def test_decision_counts_from_summaries_and_decisions_agree(day_of_decisions):
    since = NOW - timedelta(days=1)
    live = decision_counts(decision_count_rows(since=since))
    assert decision_hours_rollup(now=NOW) == 8 * 24  # from 12:00 eight days back to 12:00 (12:00-13:00 is not over)
    mark = SummaryMark.objects.get(name=DECISION_HOURS)
    assert (mark.since, mark.until) == (datetime(2027, 3, 2, 12, 0, tzinfo=UTC), datetime(2027, 3, 10, 12, tzinfo=UTC))
    assert DecisionHour.objects.get(hour=datetime(2027, 3, 10, 9, 0, tzinfo=UTC), outcome="assigned").n == 2
    Decision.objects.filter(created__lt=datetime(2027, 3, 10, 12, 0, tzinfo=UTC), created__gte=since).exclude(
        created__lt=datetime(2027, 3, 9, 13, 0, tzinfo=UTC)
    ).delete()  # the whole hours are read from the summaries: gone from the table, still counted
    summarised = decision_counts(decision_count_rows_recent(since=since))
    assert (
        summarised
        == live
        == {
            ("atlas_prod_job", "pending", "nqueue_cap"): 3,  # 12:40 yesterday (part hour), 09:15, 12:10 (after)
            ("atlas_prod_job", "assigned", "status"): 2,
            ("atlas_prod_task", "assigned", ""): 1,
            ("atlas_anal_job", "throttled", "user_cap"): 1,
        }
    )
    assert decision_counts(decision_count_rows_recent(since=since, plugin="atlas_prod_job", outcome="pending")) == {
        ("atlas_prod_job", "pending", "nqueue_cap"): 3
    }
    assert decision_counts(decision_count_rows_recent(since=since, primary_reason="user_cap")) == {
        ("atlas_anal_job", "throttled", "user_cap"): 1
    }


def test_a_window_reaching_back_before_the_first_hour_rolled_up_counts_those_hours_from_the_decisions(
    day_of_decisions,
):
    SummaryMark.objects.create(
        name=DECISION_HOURS,
        since=datetime(2027, 3, 10, 9, 0, tzinfo=UTC),
        until=datetime(2027, 3, 10, 9, 0, tzinfo=UTC),
    )
    decision_hours_rollup(now=NOW)  # from the mark on: 09:00, 10:00 and 11:00
    assert sorted({hour.hour for hour in DecisionHour.objects.values_list("hour", flat=True)}) == [9, 10, 11]
    summarised = decision_counts(decision_count_rows_recent(since=NOW - timedelta(days=1)))
    assert sum(summarised.values()) == 7  # 12:40 yesterday is counted from the decisions, as any hour before 09:00
    assert sum(decision_counts(decision_count_rows_recent(since=NOW - timedelta(days=2))).values()) == 9


def test_an_hour_in_which_a_running_cycle_started_waits_for_it(day_of_decisions):
    factories.BrokerageCycleFactory(status="running", started=datetime(2027, 3, 10, 10, 45, tzinfo=UTC))
    factories.BrokerageCycleFactory(status="running", started=NOW - timedelta(days=3))  # abandoned: not waited for
    decision_hours_rollup(now=NOW)
    assert SummaryMark.objects.get(name=DECISION_HOURS).until == datetime(2027, 3, 10, 10, 0, tzinfo=UTC)


def test_the_decision_explorer_counts_the_day_from_the_summaries(client, day_of_decisions):
    decision_hours_rollup(now=NOW)
    # an hour's summary row that disagrees with the decisions shows which source the page read
    DecisionHour.objects.filter(hour=datetime(2027, 3, 10, 9, 0, tzinfo=UTC), outcome="assigned").update(n=5)
    explorer = decision_explorer(filters={}, now=NOW)
    assert dict(explorer["outcomes"]) == {"assigned": 6, "pending": 3, "throttled": 1}
    assert explorer["page"].paginator.count == 10
    assert [(r["code"], r["count"]) for r in explorer["reasons"]] == [("status", 5), ("nqueue_cap", 3), ("user_cap", 1)]
    # a queue's decisions are counted from the decisions themselves: the listed rows and the count agree
    by_queue = decision_explorer(filters={"queue": "CERN-PROD"}, now=NOW)
    assert dict(by_queue["outcomes"]) == {"assigned": 3}
    assert by_queue["page"].paginator.count == len(by_queue["page"].object_list) == 3


# The active jobs counted every minute (issue 50: the site page counted half a million jobs a visit)


@pytest.fixture
def active_jobs():
    for status, n in (("running", 3), ("activated", 1), ("failed", 2)):
        factories.JobFactory.create_batch(n, computingSite="CERN-PROD", jobStatus=status)
    factories.JobFactory(computingSite="BNL_PROD", jobStatus="defined")


def test_the_count_of_active_jobs_is_replaced_whole_and_stamped(active_jobs):
    from brokerage.models import JobCountNow
    from brokerage.selectors.queues import JOB_COUNTS
    from brokerage.services.summaries import job_counts_refresh

    assert job_counts_refresh(now=NOW) == 3  # the 2 failed jobs have ended: not counted
    rows = set(JobCountNow.objects.values_list("computingSite", "jobStatus", "n"))
    assert rows == {("CERN-PROD", "running", 3), ("CERN-PROD", "activated", 1), ("BNL_PROD", "defined", 1)}
    assert SummaryMark.objects.get(name=JOB_COUNTS).until == NOW
    Job.objects.filter(computingSite="BNL_PROD").update(jobStatus="finished")
    assert job_counts_refresh(now=NOW + timedelta(minutes=1)) == 2  # BNL_PROD's row goes: no job to count
    assert not JobCountNow.objects.filter(computingSite="BNL_PROD").exists()
    assert SummaryMark.objects.get(name=JOB_COUNTS).until == NOW + timedelta(minutes=1)


def test_pages_read_the_count_while_recent_and_count_the_jobs_after(active_jobs, settings):
    from brokerage.selectors.queues import jobs_by_queue
    from brokerage.services.summaries import job_counts_refresh

    settings.JOB_COUNTS_INTERVAL_SECONDS = 60  # recent: three beats, 180 s
    names = ["CERN-PROD", "BNL_PROD", "EMPTY"]
    counted, at = jobs_by_queue(names, now=NOW)
    assert at is None  # never counted: the jobs themselves
    assert counted == {"CERN-PROD": [("activated", 1), ("running", 3)], "BNL_PROD": [("defined", 1)], "EMPTY": []}
    job_counts_refresh(now=NOW)
    factories.JobFactory(computingSite="CERN-PROD", jobStatus="running")  # after the count
    counted, at = jobs_by_queue(names, now=NOW + timedelta(seconds=180))
    assert (at, counted["CERN-PROD"]) == (NOW, [("activated", 1), ("running", 3)])
    counted, at = jobs_by_queue(names, now=NOW + timedelta(seconds=181))  # the beat stopped: count them
    assert (at, counted["CERN-PROD"]) == (None, [("activated", 1), ("running", 4)])


def test_the_site_list_says_when_its_jobs_were_counted(client, active_jobs):
    from django.utils import timezone

    from brokerage.services.summaries import job_counts_refresh

    factories.PandaQueueFactory(name="CERN-PROD", site=factories.SiteFactory(name="CERN"))
    assert "Active jobs as counted" not in client.get("/sites/").content.decode()
    job_counts_refresh(now=timezone.now() - timedelta(seconds=40))
    for path in ("/sites/", "/queues/", "/sites/CERN/"):
        page = client.get(path).content.decode()
        # 40 s, or a little more on a slow machine
        assert re.search(r"Active jobs as counted 4\d s ago \(they are counted every 1 min\)\.", page), path
        assert "activated 1, running 3" in page, path
