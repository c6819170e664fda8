"""An agent's world in the database: the global queue, one local queue with three sites and per-type thresholds,
input blocks with their replicas, and an assigned request reading them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests import factories

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
DATASET = "/JetHT/Run2024C-v1/RAW"


def make_site(
    queue, name, *, state="Normal", pending=10, running=20, types=("Processing",), task_pending=10, task_running=20
):
    site = factories.WMCoreSiteFactory(
        queue=queue, name=name, state=state, pending_slots=pending, running_slots=running
    )
    for task_type in types:
        factories.WMCoreSiteThresholdFactory(
            site=site, task_type=task_type, pending_slots=task_pending, max_slots=task_running
        )
    return site


@pytest.fixture
def agent(db):
    """A local queue under the global queue with FNAL and DESY normal and CERN draining."""
    global_queue = factories.WMCoreGlobalQueueFactory()
    local = factories.WMCoreQueueFactory(name="vocms0001.cern.ch", parent=global_queue)
    make_site(local, "T1_US_FNAL")
    make_site(local, "T2_DE_DESY")
    make_site(local, "T2_CH_CERN", state="Draining")
    return local


@pytest.fixture
def blocks(db):
    """Three blocks of 20 files: two at FNAL, one at DESY and CERN."""
    return [
        factories.WMCoreBlockFactory(dataset=DATASET, name=f"{DATASET}#a", files=20, sites=["T1_US_FNAL"]),
        factories.WMCoreBlockFactory(dataset=DATASET, name=f"{DATASET}#b", files=20, sites=["T1_US_FNAL"]),
        factories.WMCoreBlockFactory(
            dataset=DATASET, name=f"{DATASET}#c", files=20, sites=["T2_DE_DESY", "T2_CH_CERN"]
        ),
    ]


@pytest.fixture
def request_assigned(blocks):
    return factories.WMCoreRequestFactory(
        RequestName="pdmvserv_ReReco_JetHT_2024C",
        RequestStatus="assigned",
        InputDataset=DATASET,
        FilesPerJob=5,
        RequestPriority=200000,
        SiteWhitelist=["T1_US_FNAL", "T2_DE_DESY", "T2_CH_CERN"],
    )
