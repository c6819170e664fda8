"""Scenario parsing: every bad input names its JSON path and what was expected."""

import dataclasses
from datetime import UTC, datetime

import pytest

from brokerage.engine import ScenarioError, parse_scenario
from brokerage.engine.core.scenario import (
    EndpointInfo,
    JobSet,
    NetworkLink,
    Scenario,
    SiteInfo,
    TaskSpec,
    _endpoint_plain,
    _read_endpoint,
)
from tests.engine.builders import nucleus, task_scenario
from tools.peer.scenarios import anal_scenario, job_scenario


def error_of(data) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data)
    return str(caught.value)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"plugin": ""}, "$.plugin: expected the name of a brokerage plugin, got ''"),
        ({"seed": "7"}, "$.seed: expected a whole number, got '7'"),
        ({"now": "yesterday"}, "$.now: expected an ISO-8601 UTC time such as 2026-11-01T12:00:00Z, got 'yesterday'"),
        ({"task": []}, "$.task: expected an object, got a list"),
        ({"task": {"taskPriority": 1.5}}, "$.task.taskPriority: expected a whole number, got 1.5"),
        ({"task": {"ioIntensity": -1}}, "$.task.ioIntensity: expected a number ≥ 0, got -1"),
        (
            {"task": {"fullChain": "always"}},
            "$.task.fullChain: expected one of '', 'only', 'require', 'capable', got 'always'",
        ),
        ({"task": {"taskBrokerOnMaster": "yes"}}, "$.task.taskBrokerOnMaster: expected true or false, got 'yes'"),
        ({"datasets": {}}, "$.datasets: expected a list, got an object"),
        ({"datasets": [{"name": "d", "sizeGB": "big"}]}, "$.datasets[0].sizeGB: expected a number, got 'big'"),
        (
            {"datasets": [{"name": "d", "replicas": {"X_DATADISK": {"nFiles": -2}}}]},
            "$.datasets[0].replicas.X_DATADISK.nFiles: expected a whole number ≥ 0, got -2",
        ),
        ({"sites": {"A": {"role": "hub"}}}, "$.sites.A.role: expected one of 'nucleus', 'satellite', got 'hub'"),
        (
            {"ddm_endpoints": {"A_DATADISK": {"space_free": None, "detailed_status": {"read_wan": "maybe"}}}},
            "$.ddm_endpoints.A_DATADISK.detailed_status.read_wan: expected 'ON', 'OFF' or 'TEST', got 'maybe'",
        ),
        (
            {"network": [{"src": "A", "dst": "B", "closeness": 12}]},
            "$.network[0].closeness: expected a closeness from -1 (blocked) to 11, got 12.0",
        ),
        ({"queues": {"CERN": {"maxrss": "lots"}}}, "$.queues.CERN.maxrss: expected a number, got 'lots'"),
        (
            {"queues": {"CERN": {"status": "up"}}},
            "$.queues.CERN.status: expected one of 'online', 'offline', 'test', 'brokeroff', 'paused', 'standby', "
            "got 'up'",
        ),
        (
            {"queues": {"CERN": {"releases": "ANY"}}},
            '$.queues.CERN.releases: expected a list of releases (["ANY"], ["AUTO"] or names), got \'ANY\'',
        ),
        (
            {"queues": {"ANALY CERN": {"corecount": "8"}}},
            "$.queues['ANALY CERN'].corecount: expected a number, got '8'",
        ),
        ({"nucleus_stats": {"A": {"rw": "a lot"}}}, "$.nucleus_stats.A.rw: expected a number, got 'a lot'"),
    ],
)
def test_bad_input_names_the_path(patch, message):
    assert error_of({**task_scenario(nucleus("A")), **patch}) == message


def test_unknown_gdpconfig_key_names_it():
    message = error_of(task_scenario(gdpconfig={"NQUEUED_SAT_CAPP": 1}))
    assert message.startswith("$.gdpconfig.NQUEUED_SAT_CAPP: expected unknown gdpconfig parameter 'NQUEUED_SAT_CAPP'")


def test_bad_gdpconfig_value_names_key_and_type():
    message = error_of(task_scenario(gdpconfig={"NQUEUED_SAT_CAP": "abc"}))
    assert "$.gdpconfig.NQUEUED_SAT_CAP" in message
    assert "is not a valid int" in message


def test_not_an_object_at_all():
    assert error_of([1, 2]) == "$: expected an object, got a list"


def test_defaults_and_forms():
    scenario = parse_scenario(
        {
            "plugin": "atlas_prod_task",
            "now": "2026-11-01T12:00:00",
            "task": {"includedSite": "CERN, BNL", "excludedSite": ["X"]},
            "ddm_endpoints": {"CERN-PROD_DATATAPE": {"site": "CERN-PROD"}},
            "my_plugin_section": {"anything": 1},
        }
    )
    assert scenario.now == datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert scenario.seed == 0
    assert scenario.task.includedSite == ("CERN", "BNL")
    assert scenario.task.excludedSite == ("X",)
    endpoint = scenario.ddm_endpoints["CERN-PROD_DATATAPE"]
    assert (endpoint.type, endpoint.is_tape, endpoint.activity("read_wan")) == ("DATATAPE", True, "ON")
    assert scenario.extra == {"my_plugin_section": {"anything": 1}}


def test_a_real_cric_record_pastes_in_unchanged():
    import json
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "cric" / "queuedata_CERN.json"
    if not fixture.exists():
        pytest.skip("../shared/fixtures is not beside this checkout")
    record = json.loads(fixture.read_text())
    scenario = parse_scenario({"plugin": "atlas_prod_job", "queues": {record["name"]: record}})
    assert scenario.queues["CERN"]["maxrss"] == 32000


@pytest.mark.parametrize("seed", range(0, 200, 7))
def test_a_parsed_task_and_scenario_are_what_their_constructors_make(seed):
    """parse_scenario makes TaskSpec, EndpointInfo and Scenario without their generated __init__ (scenario._frozen):
    every field is set, and the objects equal, hash and print as the constructors' own."""
    parsed = parse_scenario({**anal_scenario(seed), "plugin": "atlas_anal_job", "profile": "panda"})
    job = parse_scenario({**job_scenario(seed), "plugin": "atlas_prod_job", "profile": "panda"})
    made_without_init = [(parsed.task, TaskSpec), (parsed, Scenario), (job.jobs, JobSet)]
    made_without_init += [(endpoint, EndpointInfo) for endpoint in parsed.ddm_endpoints.values()]
    made_without_init += [(site, SiteInfo) for site in job.sites.values()]
    made_without_init += [(link, NetworkLink) for link in job.network]
    assert len(made_without_init) > 5
    for made, cls in made_without_init:
        values = {f.name: getattr(made, f.name) for f in dataclasses.fields(cls)}
        assert set(vars(made)) == set(values)
        rebuilt = cls(**values)
        assert made == rebuilt
        assert repr(made) == repr(rebuilt)
    assert hash(parsed.task) == hash(TaskSpec(**vars(parsed.task)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.task.nucleus = "elsewhere"


@pytest.mark.parametrize(
    ("user_stats", "message"),
    [
        ({"user": {"running": -1}}, "$.user_stats.user.running: expected a number ≥ 0, got -1"),
        ({"user": {"running": "3"}}, "$.user_stats.user.running: expected a number, got '3'"),
        ({"user": {"queued": True}}, "$.user_stats.user.queued: expected a number, got true"),
        ({"group": {"diskQuotaExceeded": 1}}, "$.user_stats.group.diskQuotaExceeded: expected true or false, got 1"),
        ({"queues": {"Q1": {"userQueued": -2}}}, "$.user_stats.queues.Q1.userQueued: expected a number ≥ 0, got -2"),
    ],
)
def test_bad_user_statistics_name_their_path(user_stats, message):
    assert error_of({"plugin": "atlas_anal_job", "user_stats": user_stats}) == message


def test_plain_user_statistics_are_accepted_as_they_are():
    user_stats = {"user": {"running": 3, "queued": 2.5, "diskQuotaExceeded": False}, "group": {"running": 0}}
    parsed = parse_scenario({"plugin": "atlas_anal_job", "user_stats": user_stats})
    assert parsed.user_stats == user_stats


ENDPOINT_CASES = [
    {},
    {"site": "CERN", "space_total": 10, "space_free": 4.5, "space_expired": 0},
    {"site": None, "type": None, "space_used": None, "is_tape": None, "blacklisted": None, "detailed_status": None},
    {
        "type": "MCTAPE",
        "is_tape": False,
        "blacklisted": True,
        "detailed_status": {"read_wan": "off", "write_lan": "Test"},
    },
    {"detailed_status": {}},
]


@pytest.mark.parametrize("item", ENDPOINT_CASES)
@pytest.mark.parametrize("name", ["CERN-PROD_DATATAPE", "NODASH"])
def test_an_endpoint_read_at_once_is_what_the_reader_makes(name, item):
    assert _endpoint_plain(name, item) == _read_endpoint(name, item)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"space_free": -1}, "$.ddm_endpoints.E_DATADISK.space_free: expected a number ≥ 0, got -1"),
        ({"space_free": True}, "$.ddm_endpoints.E_DATADISK.space_free: expected a number, got true"),
        ({"is_tape": 1}, "$.ddm_endpoints.E_DATADISK.is_tape: expected true or false, got 1"),
        ({"site": 3}, "$.ddm_endpoints.E_DATADISK.site: expected text, got 3"),
        ({"detailed_status": []}, "$.ddm_endpoints.E_DATADISK.detailed_status: expected an object, got a list"),
        (
            {"detailed_status": {"read_wan": "DOWN"}},
            "$.ddm_endpoints.E_DATADISK.detailed_status.read_wan: expected 'ON', 'OFF' or 'TEST', got 'DOWN'",
        ),
    ],
)
def test_a_bad_endpoint_names_its_path(item, message):
    assert error_of({"plugin": "atlas_prod_job", "ddm_endpoints": {"E_DATADISK": item}}) == message
