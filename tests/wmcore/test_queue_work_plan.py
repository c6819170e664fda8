"""queue_work_plan: queueWork's split of the assigned requests, made without a query (services/wmcore/queue_work.py,
issue 48: read → plan → write). Worked numbers: 250 jobs in elements of 100 make 100, 100 and 50, each with the
request's pileup sites; a request whose input has no known block fails and names the dataset."""

from datetime import UTC, datetime

from brokerage.models import WMCoreQueue
from brokerage.services.wmcore.queue_work import queue_work_plan

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def request(pk, **values):
    row = {
        "pk": pk, "RequestName": f"req{pk}", "RequestPriority": 90000, "Team": "production", "InputDataset": "",
        "IncludeParents": False, "MCPileup": "", "FilesPerJob": 1, "TotalJobs": 250, "JobsPerElement": 100,
        "SiteWhitelist": ["T1_US_FNAL"], "SiteBlacklist": [], "TrustSitelists": False, "TrustPUSitelists": False,
        "created": NOW,
    }  # fmt: skip
    return {**row, **values}


def test_a_monte_carlo_request_is_sliced_and_a_request_without_blocks_fails():
    blocks_of = {"/MinBias/PU/GEN-SIM": [{"name": "/MinBias/PU/GEN-SIM#1", "sites": ["T2_CH_CERN", "T1_US_FNAL"]}]}
    plan = queue_work_plan(
        requests=[
            request(1, MCPileup="/MinBias/PU/GEN-SIM"),
            request(2, InputDataset="/Zmm/RAW", TotalJobs=0),
        ],
        blocks_of=blocks_of,
        queue=WMCoreQueue(pk=3, name="global", kind="global"),
        now=NOW,
    )
    assert [row.Jobs for row in plan.queue_rows] == [100, 100, 50]
    assert {str(row.PileupData) for row in plan.queue_rows} == {
        str({"/MinBias/PU/GEN-SIM": ["T1_US_FNAL", "T2_CH_CERN"]})
    }
    (inbox,) = plan.inbox_rows
    assert (inbox.Status, inbox.database, inbox.Jobs, inbox.request_id) == ("Negotiating", "inbox", 250, 1)
    assert {(row.Status, row.database, row.Priority) for row in plan.queue_rows} == {("Available", "queue", 90000)}
    assert plan.acquired == [1]
    assert plan.failed == {2: "no block of /Zmm/RAW is known"}
