"""import_cric given the directory of PanDA's CRIC-free files (issue 49): sites.json, ddm_endpoints.json and
panda_queues.json as panda-server 1.0.4's Configurator loads them, every queue field the brokers read kept as it is,
so the scenario the brokers get from the imported grid holds what the files hold."""

import copy
import json

import pytest
from django.core.management import CommandError, call_command

from brokerage.adapters.grid import queue_records
from brokerage.models import PandaQueue, Site, StorageEndpoint
from tests.brokerage.test_imports import cern_record
from tools.peer.panda_fields import QUEUE_KEYS

pytestmark = pytest.mark.django_db

SITES = {
    "CERN-PROD": {
        "state": "ACTIVE",
        "tier_level": 0,
        "datapolicies": ["Nucleus", "Tier0"],
        "cloud": "CERN",
        "country": "Switzerland",
        "ddmendpoints": ["CERN-PROD_DATADISK", "CERN-PROD_DATATAPE"],
        "presources": {},
    },
    "PRAGUELCG2": {"state": "ACTIVE", "tier_level": 2, "datapolicies": ["Tier2"], "cloud": "DE", "country": "Czechia"},
}
ENDPOINTS = {
    "CERN-PROD_DATADISK": {"state": "ACTIVE", "token": "ATLASDATADISK", "site": "CERN-PROD", "type": "DATADISK",
                           "is_tape": False},
    "CERN-PROD_DATATAPE": {"state": "ACTIVE", "token": "ATLASDATATAPE", "site": "CERN-PROD", "type": "DATATAPE",
                           "is_tape": True},
    "PRAGUELCG2_DATADISK": {"state": "ACTIVE", "token": "ATLASDATADISK", "site": "PRAGUELCG2", "type": "DATADISK",
                            "is_tape": False},
    "PRAGUELCG2_OLDDISK": {"state": "DISABLED", "token": "ATLASOLD", "site": "PRAGUELCG2", "type": "DATADISK",
                           "is_tape": False},
}  # fmt: skip


def praguelcg2(cern: dict) -> dict:
    """A queue shaped as CRIC writes the untidy ones: corepower null, per-core attributes, a jumbo-only catchall
    among keys no broker reads, params with an IO-intensity cap, an empty cloud."""
    record = copy.deepcopy(cern)
    record.update(
        name="praguelcg2",
        nickname="praguelcg2",
        atlas_site="PRAGUELCG2",
        type="production",
        capability="",
        corepower=None,
        maxrss=2000,
        catchall="per_core_attr,useJumboJobs,zip_time_gap=7200",
        params={"max_io_intensity": 300, "pilot_manager": "Harvester"},
        cloud="",
        pledgedcpu=None,
        astorages={"read_lan": ["PRAGUELCG2_DATADISK"], "write_lan": ["PRAGUELCG2_DATADISK"]},
    )
    return record


@pytest.fixture
def cric_free(tmp_path):
    cern = cern_record()
    queues = {"CERN": cern, "praguelcg2": praguelcg2(cern)}
    for name, data in (("sites.json", SITES), ("ddm_endpoints.json", ENDPOINTS), ("panda_queues.json", queues)):
        (tmp_path / name).write_text(json.dumps(data))
    return tmp_path, queues


def test_the_three_files_make_sites_endpoints_and_queues(cric_free, capsys):
    directory, _ = cric_free
    call_command("import_cric", str(directory), "--no-progress")
    out = capsys.readouterr().out
    assert "CRIC sites: 2 created" in out
    assert "CRIC queues: 2 created" in out
    assert "note: left out PRAGUELCG2_OLDDISK: state DISABLED" in out  # as the Configurator leaves it out
    assert dict(Site.objects.values_list("name", "role")) == {"CERN-PROD": "nucleus", "PRAGUELCG2": "satellite"}
    assert Site.objects.get(name="CERN-PROD").tier_level == 0
    endpoints = set(StorageEndpoint.objects.values_list("name", flat=True))
    assert {"CERN-PROD_DATADISK", "CERN-PROD_DATATAPE", "PRAGUELCG2_DATADISK"} <= endpoints
    assert "PRAGUELCG2_OLDDISK" not in endpoints
    assert StorageEndpoint.objects.get(name="CERN-PROD_DATATAPE").is_tape
    assert PandaQueue.objects.get(name="praguelcg2").site.name == "PRAGUELCG2"
    # idempotent: the same directory twice changes nothing
    call_command("import_cric", str(directory), "--no-progress")
    assert "CRIC queues: 0 created, 0 updated, 2 unchanged" in capsys.readouterr().out


def test_every_queue_field_the_brokers_read_reaches_their_scenario_as_the_file_has_it(cric_free):
    directory, queues = cric_free
    call_command("import_cric", str(directory), "--no-progress")
    records = queue_records()
    for name, original in queues.items():
        for key in QUEUE_KEYS:
            if key in ("atlas_site", "astorages") or key not in original:
                continue
            assert records[name].get(key) == original[key], (name, key)
    # the untidy values themselves: what CRIC_QUEUE_RULE panda reads
    assert records["praguelcg2"]["corepower"] is None
    assert records["praguelcg2"]["cloud"] == ""
    assert records["praguelcg2"]["params"]["max_io_intensity"] == 300
    assert records["praguelcg2"]["astorages"] == {
        "read_lan": ["PRAGUELCG2_DATADISK"],
        "write_lan": ["PRAGUELCG2_DATADISK"],
    }


def test_a_missing_file_is_exit_2_naming_it(tmp_path):
    (tmp_path / "sites.json").write_text("{}")
    with pytest.raises(CommandError, match=r"ddm_endpoints\.json: missing") as raised:
        call_command("import_cric", str(tmp_path), "--no-progress")
    assert raised.value.returncode == 2


def test_a_bad_site_is_named_and_the_rest_imported(cric_free, capsys):
    directory, _ = cric_free
    sites = {**SITES, "BROKEN": {"state": "ACTIVE", "tier_level": "two", "datapolicies": []}}
    (directory / "sites.json").write_text(json.dumps(sites))
    with pytest.raises(CommandError) as raised:
        call_command("import_cric", str(directory), "--no-progress")
    assert raised.value.returncode == 1
    assert "sites.json: BROKEN: tier_level" in capsys.readouterr().err
    assert PandaQueue.objects.count() == 2
