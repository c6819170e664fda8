"""Time partitions on PostgreSQL (issue 32, brokerage.partitions): made ahead by the housekeeping, rows routed to
them (and moved out of the default partition when they came first), windowed reads that touch only their
partitions, expired partitions dropped whole."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection

from brokerage.models import Decision, Job, JobStatusLog
from brokerage.partitions import PARTITIONED, brin_ranges_summarize, partitions_list
from brokerage.services.housekeeping import housekeeping_run
from tests import factories

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="partitions: PostgreSQL pass only"
    ),
]


def where(table: str, pk_column: str, pk) -> str:
    """The partition that holds the row."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT tableoid::regclass::text FROM {table} WHERE "{pk_column}" = %s', [pk])
        return cursor.fetchone()[0]


def test_every_growing_table_is_partitioned_with_a_default_partition():
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid")
        assert {row[0] for row in cursor.fetchall()} == set(PARTITIONED)
        for table in PARTITIONED:
            cursor.execute("SELECT to_regclass(%s)", [f"{table}_default"])
            assert cursor.fetchone()[0] is not None, table


def test_partitions_are_made_before_the_day_and_month_they_hold():
    """Moving `now` past a boundary: the run before midnight makes the next days' and month's partitions, so
    the first writes after it land in them, not in the default partition."""
    before_midnight = datetime(2027, 5, 31, 23, 0, tzinfo=UTC)
    run = housekeeping_run(now=before_midnight)
    days = {start for _, start, _ in partitions_list("panda_job_status_log")}
    assert {date(2027, 5, 31), date(2027, 6, 1), date(2027, 6, 2), date(2027, 6, 3)} <= days
    months = {start for _, start, _ in partitions_list("brokerage_decisions")}
    assert {date(2027, 5, 1), date(2027, 6, 1)} <= months
    assert run.tables["panda_job_status_log"]["partitions_made"] >= 4
    job = factories.JobFactory(jobStatus="running")
    log = factories.JobStatusLogFactory(job=job, timestamp=datetime(2027, 6, 1, 0, 0, 1, tzinfo=UTC))
    assert where("panda_job_status_log", "id", log.pk) == "panda_job_status_log_p20270601"
    assert where("panda_jobs", "PandaID", job.pk) == "panda_jobs_default"  # active jobs: the default partition


def test_rows_that_came_before_their_partition_move_into_it():
    job = factories.JobFactory(jobStatus="running")
    early = factories.JobStatusLogFactory(job=job, timestamp=datetime(2028, 1, 2, 3, 0, tzinfo=UTC))
    assert where("panda_job_status_log", "id", early.pk) == "panda_job_status_log_default"
    housekeeping_run(now=datetime(2028, 1, 1, 12, 0, tzinfo=UTC))
    assert where("panda_job_status_log", "id", early.pk) == "panda_job_status_log_p20280102"
    assert JobStatusLog.objects.filter(pk=early.pk).exists()


def test_archived_jobs_go_to_the_month_they_ended_in_and_are_read_as_before():
    now = datetime(2027, 3, 10, 12, 0, tzinfo=UTC)
    end = datetime(2027, 2, 27, 8, 0, tzinfo=UTC)
    job = factories.JobFactory(jobStatus="finished", startTime=end - timedelta(hours=1), endTime=end)
    housekeeping_run(now=now)
    assert where("panda_jobs", "PandaID", job.pk) == "panda_jobs_p202702"
    assert Job.objects.get(pk=job.pk).archiveDay == date(2027, 2, 27)
    assert Job.objects.filter(task_id=job.task_id, jobStatus="finished").count() == 1


def test_a_windowed_read_touches_only_the_partitions_inside_the_window():
    housekeeping_run(now=datetime(2027, 3, 10, 12, 0, tzinfo=UTC))
    for month in (1, 2):  # earlier months of history
        housekeeping_run(now=datetime(2027, month, 15, tzinfo=UTC))
    queryset = Decision.objects.filter(created__gte=datetime(2027, 3, 2, tzinfo=UTC))
    plan = queryset.explain()
    assert "brokerage_decisions_p202703" in plan
    assert "brokerage_decisions_p202702" not in plan
    assert "brokerage_decisions_p202701" not in plan


def test_expired_partitions_are_dropped_whole_and_counted():
    now = datetime(2027, 3, 10, 12, 0, tzinfo=UTC)
    housekeeping_run(now=now - timedelta(days=95))  # makes the days around 2026-12-05
    job = factories.JobFactory(jobStatus="running")
    old = [factories.JobStatusLogFactory(job=job, timestamp=now - timedelta(days=95, hours=h)) for h in (1, 2)]
    assert where("panda_job_status_log", "id", old[0].pk).startswith("panda_job_status_log_p2026120")
    run = housekeeping_run(now=now)
    assert not JobStatusLog.objects.filter(pk__in=[log.pk for log in old]).exists()
    assert run.tables["panda_job_status_log"]["dropped"] == 2
    assert run.tables["panda_job_status_log"]["partitions_dropped"] >= 1
    names = {name for name, _, _ in partitions_list("panda_job_status_log")}
    assert "panda_job_status_log_p20261205" not in names


def test_a_windowed_read_of_jobs_skips_the_archive_months_before_it():
    from brokerage.models.jobs import job_archive_window

    for month in (1, 2, 3):  # three months of archive
        end = datetime(2027, month, 5, tzinfo=UTC)
        factories.JobFactory(jobStatus="failed", startTime=end - timedelta(hours=1), endTime=end, stateChangeTime=end)
    housekeeping_run(now=datetime(2027, 4, 1, tzinfo=UTC))
    since = datetime(2027, 3, 1, tzinfo=UTC)
    plan = Job.objects.filter(job_archive_window(since), stateChangeTime__gte=since).explain()
    assert "panda_jobs_p202703" in plan
    assert "panda_jobs_default" in plan  # the active jobs
    assert "panda_jobs_p202702" not in plan
    assert "panda_jobs_p202701" not in plan
    assert Job.objects.filter(job_archive_window(since), stateChangeTime__gte=since).count() == 1


def test_the_archive_keeps_a_slim_set_of_indexes_and_reads_of_active_jobs_skip_it():
    end = datetime(2027, 2, 27, 8, 0, tzinfo=UTC)
    factories.JobFactory(jobStatus="finished", startTime=end - timedelta(hours=1), endTime=end, stateChangeTime=end)
    housekeeping_run(now=datetime(2027, 3, 10, tzinfo=UTC))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE tablename = %s", ["panda_jobs_p202702"])
        archived = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE tablename = %s", ["panda_jobs_default"])
        active = cursor.fetchone()[0]
    assert archived == 5  # PandaID, (task, status, queue), (task, time), (time, PandaID), merge links
    assert active >= 12  # the model's indexes, the job list's and PandaID's
    plan = Job.objects.filter(jobStatus__in=("running", "activated")).explain()
    assert "panda_jobs_p202702" not in plan  # the archive's CHECK excludes it
    assert "panda_jobs_default" in plan


def test_a_day_of_job_status_logs_keeps_two_btrees_and_a_brin():
    """Seven rows a job kept 90 days: no primary key (nothing reads a row by its id), the PandaID index a job's
    history is read by, a BRIN on the time, and stray rows of the default partition still dropped by time."""
    job = factories.JobFactory(jobStatus="running")
    now = datetime(2027, 3, 10, tzinfo=UTC)
    housekeeping_run(now=now)  # makes the days ahead
    factories.JobStatusLogFactory(job=job, timestamp=now + timedelta(hours=1))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s ORDER BY indexdef", ["panda_job_status_log_p20270310"]
        )
        indexes = [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT count(*) FROM pg_constraint WHERE conrelid = 'panda_job_status_log'::regclass")
        constraints = cursor.fetchone()[0]
    assert len(indexes) == 2
    assert any('USING brin ("timestamp")' in d for d in indexes)
    assert any('USING btree ("PandaID")' in d for d in indexes)
    assert constraints == 0
    assert [log.new_status for log in JobStatusLog.objects.filter(job=job)] == ["assigned"]
    # a row older than its partitions (a backfill) waits in the default partition: retention still finds it
    factories.JobStatusLogFactory(job=job, timestamp=now - timedelta(days=400))
    run = housekeeping_run(now=now)
    assert run.tables["panda_job_status_log"]["dropped"] == 1
    assert JobStatusLog.objects.filter(job=job).count() == 1


def test_the_job_logs_time_index_summarises_new_ranges_as_it_goes_and_the_housekeeping_summarises_the_rest():
    """A BRIN range not summarised is read whole by every read by time: the index asks autovacuum to summarise
    each range once the next is begun, and the housekeeping summarises what is left before it rolls up hours."""
    now = datetime(2031, 7, 15, 12, 0, tzinfo=UTC)  # a day no other test writes to: its partition is new
    housekeeping_run(now=now)  # makes the day's partition
    partition = "panda_job_status_log_p20310715"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.reloptions FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'joblog_time'::regclass AND c.relname LIKE %s",
            [f"{partition}%"],
        )
        assert cursor.fetchone()[0] == ["autosummarize=on"]
        job = factories.JobFactory(jobStatus="running")
        cursor.execute(  # 30,000 moves of the last hour: a few hundred pages, 128 to a BRIN range
            'INSERT INTO panda_job_status_log ("PandaID", "computingSite", timestamp, old_status, new_status, reason, '
            "actor) SELECT %s, 'CERN-PROD', %s + n * interval '100 ms', 'starting', 'running', '', 'pilot' "
            "FROM generate_series(1, 30000) n",
            [job.pk, now - timedelta(hours=1)],
        )
        cursor.execute("SELECT pg_relation_size(%s) / 8192", [partition])
        pages = cursor.fetchone()[0]
    assert pages > 128
    run = housekeeping_run(now=now)
    # every range but the first, which the index summarised when it was made and has kept up to date since
    assert run.tables["panda_job_status_log"]["brin_ranges_summarised"] == (pages + 127) // 128 - 1
    assert brin_ranges_summarize("panda_job_status_log", since=date(2031, 7, 14)) == 0  # nothing new since
