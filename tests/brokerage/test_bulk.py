"""The bulk writers of brokerage.services.bulk on either database (the lock order has its own tests in
test_lock_order.py)."""

from datetime import UTC, datetime

import pytest

from brokerage.models import JobStatusLog
from brokerage.services.bulk import bulk_update_values, rows_insert
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def test_rows_insert_writes_the_given_columns_and_the_model_defaults_for_the_others():
    jobs = factories.JobFactory.create_batch(2)
    fields = ("job_id", "timestamp", "old_status", "new_status", "computingSite")
    rows = [(job.pk, NOW, "defined", "assigned", f"SITE-{index}") for index, job in enumerate(jobs)]
    rows.append((jobs[0].pk, NOW, "assigned", "activated", "SITE-0"))
    assert rows_insert(JobStatusLog, fields=fields, rows=iter(rows)) == 3
    stored = JobStatusLog.objects.order_by("job_id", "old_status").values_list(*fields, "reason", "actor")
    assert [tuple(row) for row in stored] == sorted([(*row, "", "") for row in rows], key=lambda row: (row[0], row[2]))
    assert rows_insert(JobStatusLog, fields=fields, rows=[]) == 0


def test_bulk_update_values_sets_each_row_its_own_values_and_leaves_missing_keys_alone():
    jobs = factories.JobFactory.create_batch(3)
    rows = [(jobs[0].pk, 11, "a"), (jobs[1].pk, 22, "b"), (10**12, 33, "c")]
    assert bulk_update_values(type(jobs[0]), fields=("maxPSS", "pilotErrorDiag"), rows=rows) == 2
    values = dict(type(jobs[0]).objects.values_list("pk", "maxPSS"))
    assert values == {jobs[0].pk: 11, jobs[1].pk: 22, jobs[2].pk: None}
