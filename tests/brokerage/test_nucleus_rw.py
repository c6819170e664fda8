"""Remaining work (RW) per nucleus from the database, with worked numbers (REFERENCE.md, production task
brokerage)."""

import pytest

from brokerage.selectors.nuclei import nucleus_remaining_work
from tests import factories

pytestmark = pytest.mark.django_db


def task(nucleus, *, status="running", priority=500, gshare="MC 16", cpu_time=300, events=(10_000, 4_000)):
    row = factories.TaskFactory(
        nucleus=nucleus, status=status, currentPriority=priority, gshare=gshare, cpuTime=cpu_time
    )
    total, used = events
    factories.DatasetFactory(task=row, type="input", nEvents=total, nEventsUsed=used)
    return row


def test_rw_sums_remaining_events_times_cpu_time_of_equal_or_higher_priority():
    task("CERN-PROD")  # (10,000 − 4,000) × 300 = 1,800,000
    task("CERN-PROD", priority=900, cpu_time=100, events=(5_000, 0))  # 500,000
    task("CERN-PROD", priority=499)  # lower priority: not counted
    task("CERN-PROD", status="done")  # not an active status: not counted
    task("CERN-PROD", gshare="Express")  # another share: not counted
    task("BNL-ATLAS", status="pending", events=(1_000, 1_000))  # nothing left: 0
    task("", status="ready")  # no nucleus yet
    assert nucleus_remaining_work(priority=500, gshare="MC 16") == {"CERN-PROD": 2_300_000.0, "BNL-ATLAS": 0.0}


def test_secondary_inputs_and_outputs_do_not_count():
    row = task("FZK-LCG2", events=(1_000, 0))  # 300,000
    master = row.datasets.get()
    factories.DatasetFactory(task=row, type="input", master=master, nEvents=99_999)
    factories.DatasetFactory(task=row, type="output", nEvents=99_999)
    assert nucleus_remaining_work(priority=0, gshare="MC 16") == {"FZK-LCG2": 300_000.0}


def test_a_dataset_used_beyond_its_known_events_counts_as_nothing_left_not_as_negative_work():
    # nEvents unknown (0) while its files' events are counted as used: max(0, 0 − 1,500) = 0, so the other
    # dataset's (10,000 − 4,000) × 300 = 1,800,000 still counts in full. Before: −450,000 + 1,800,000, and the
    # engine refused a task preview with "$.nucleus_stats.NUC.rw: expected a number ≥ 0".
    row = task("NUC", events=(0, 1_500))
    factories.DatasetFactory(task=row, type="input", nEvents=10_000, nEventsUsed=4_000)
    assert nucleus_remaining_work(priority=0, gshare="MC 16") == {"NUC": 1_800_000.0}
    task("NUC2", events=(0, 1_500))
    assert nucleus_remaining_work(priority=0, gshare="MC 16")["NUC2"] == 0.0


def test_one_query_whatever_the_number_of_tasks(django_assert_num_queries):
    for index in range(20):
        task(f"NUC-{index % 4}")
    with django_assert_num_queries(1):
        assert len(nucleus_remaining_work(priority=0, gshare="MC 16")) == 4
