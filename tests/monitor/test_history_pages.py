"""Lists that stay cheap with a year behind them (issue 32): without a task, the job list and the decision
explorer show the last day unless asked for more; a task's own list shows all of it."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from brokerage.models import Decision
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_job_list_shows_the_last_day_unless_asked(client):
    now = timezone.now()
    old = factories.JobFactory(
        jobStatus="finished", stateChangeTime=now - timedelta(days=2), endTime=now - timedelta(days=2)
    )
    new = factories.JobFactory(jobStatus="running", stateChangeTime=now - timedelta(hours=2))
    page = client.get("/jobs/").content.decode()
    assert f"/jobs/{new.pk}/" in page
    assert f"/jobs/{old.pk}/" not in page
    assert '<option value="1d" selected>' in page
    everything = client.get("/jobs/", {"window": "all"}).content.decode()
    assert f"/jobs/{old.pk}/" in everything
    assert f"/jobs/{old.pk}/" in client.get("/jobs/", {"task": old.task_id}).content.decode()
    assert f"/jobs/{old.pk}/" in client.get("/jobs/", {"window": "7d"}).content.decode()
    refused = client.get("/jobs/", {"window": "forever"})
    assert refused.status_code == 400
    assert "forever&#x27; is not a time window" in refused.content.decode()


def test_the_job_list_counts_no_further_than_its_cap(client, monkeypatch):
    from brokerage.selectors.paging import CappedPaginator

    monkeypatch.setattr(CappedPaginator, "cap", 120)
    now = timezone.now()
    factories.JobFactory.create_batch(130, jobStatus="running", stateChangeTime=now - timedelta(minutes=5))
    page = client.get("/jobs/").content.decode()
    # 120 of 130 counted: 3 pages of 50, and a word that there are more
    assert "page 1 of 3+ (the first 120 jobs: narrow the filters for the others)" in page
    last = client.get("/jobs/", {"page": 3}).content.decode()
    assert "older →" not in last
    assert len(re.findall(r'href="/jobs/[0-9]+/"', last)) == 20  # the 101st to the 120th
    few = client.get("/jobs/", {"status": "finished"}).content.decode()
    assert "narrow the filters" not in few


def test_the_decision_explorer_shows_the_last_day_unless_asked(client):
    old = factories.stored_decision()
    Decision.objects.filter(pk=old.pk).update(created=timezone.now() - timedelta(days=3))
    new = factories.stored_decision()
    Decision.objects.filter(pk=new.pk).update(created=timezone.now() - timedelta(hours=1))
    page = client.get("/decisions/").content.decode()
    assert f"/decisions/{new.pk}/" in page
    assert f"/decisions/{old.pk}/" not in page
    assert f"/decisions/{old.pk}/" in client.get("/decisions/", {"window": "all"}).content.decode()
    assert f"/decisions/{old.pk}/" in client.get("/decisions/", {"task": old.task_id}).content.decode()
