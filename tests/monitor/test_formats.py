"""One way to write times and numbers (issue 35, finding 5): durations in words, thousands separators, ISO 24-hour
times with the zone, the admin included; English labels with PanDA's field names only beside them."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from tests import factories

pytestmark = pytest.mark.django_db


def test_the_queue_page_writes_its_limits_for_people(client):
    queue = factories.PandaQueueFactory(name="CERN-PROD_UCORE", maxtime=172800, maxrss=16000, corepower=12000)
    page = client.get(reverse("monitor:queue", args=[queue.name])).content.decode()
    assert "2 d 0 h (172,800 s)" in page  # maxtime
    assert "16,000 / " in page  # maxrss
    assert "12,000 HS06" in page


def test_the_job_page_writes_priority_and_events_with_separators(client):
    job = factories.JobFactory(currentPriority=110000, nEvents=9000)
    page = client.get(reverse("monitor:job", args=[job.pk])).content.decode()
    assert "110,000" in page
    assert "9,000 ·" in page


def test_the_task_list_labels_are_english(client):
    page = client.get(reverse("monitor:tasks")).content.decode()
    assert "Processing type <select" in page


def test_the_admin_writes_iso_24_hour_times_with_the_zone(admin_client_logged):
    task = factories.TaskFactory()
    factories.TaskStatusLogFactory(task=task, timestamp=datetime(2026, 11, 24, 15, 26, tzinfo=UTC))
    page = admin_client_logged.get(reverse("admin:brokerage_taskstatuslog_changelist")).content.decode()
    assert "2026-11-24 15:26:00 UTC" in page
    assert "p.m." not in page


def test_the_timeouts_page_writes_time_left_in_words(client):
    from django.utils import timezone

    queue = factories.PandaQueueFactory(name="UK-T1_UCORE")
    an_hour_ago = timezone.now() - timezone.timedelta(hours=1)
    factories.JobFactory(
        jobStatus="running", computingSite=queue.name, stateChangeTime=an_hour_ago, modificationTime=an_hour_ago
    )
    page = client.get(reverse("monitor:timeouts")).content.decode()
    assert "Closest to their deadline now" in page
    assert " UTC</td>" in page
    # the heartbeat's 2 h, one gone: "59 min" or "1 h 0 min" left, never Python's "0:59:59.999"
    assert "59 min" in page or "1 h 0 min" in page
    assert ":59." not in page
