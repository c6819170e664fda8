"""The active jobs' counts per queue that every cycle reads, shared through the cache for
JOB_STATISTICS_MAX_AGE_SECONDS (brokerage.adapters.grid._job_counts; issue 32)."""

from datetime import UTC, datetime

import pytest
from django.core.cache import cache

from brokerage.adapters.grid import queue_records, queue_statistics
from tests import factories
from tests.jobs.conftest import make_one_queue_grid

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def activated_at_sat_q(count):
    task = factories.TaskFactory()
    for _ in range(count):
        factories.JobFactory(task=task, jobStatus="activated", computingSite="SAT_Q")


def test_without_a_maximum_age_every_cycle_reads_its_own_counts(settings):
    settings.JOB_STATISTICS_MAX_AGE_SECONDS = 0
    make_one_queue_grid()
    activated_at_sat_q(2)
    queues = queue_records()
    assert queue_statistics(now=NOW, queues=queues)["SAT_Q"]["activated"] == 2
    activated_at_sat_q(3)
    assert queue_statistics(now=NOW, queues=queues)["SAT_Q"]["activated"] == 5


def test_with_a_maximum_age_the_cycles_of_a_round_share_one_read(settings, django_assert_max_num_queries):
    settings.JOB_STATISTICS_MAX_AGE_SECONDS = 60
    make_one_queue_grid()
    activated_at_sat_q(2)
    queues = queue_records()
    assert queue_statistics(now=NOW, queues=queues)["SAT_Q"]["activated"] == 2
    activated_at_sat_q(3)
    # the next cycle within the minute reads the counts kept (one query: the pilots), not the jobs again
    with django_assert_max_num_queries(1):
        assert queue_statistics(now=NOW, queues=queues)["SAT_Q"]["activated"] == 2
    cache.clear()  # the age passed
    assert queue_statistics(now=NOW, queues=queues)["SAT_Q"]["activated"] == 5
