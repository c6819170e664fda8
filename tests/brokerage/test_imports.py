"""Imports of real configuration: typed, idempotent, every refused entry named with its reason, the rest kept."""

import io
import json
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from brokerage.models import PandaQueue, QueueStorage, Site, SoftwareTags, StorageEndpoint, Task
from brokerage.services.imports import (
    ImportFileError,
    cric_import,
    ddm_endpoints_import,
    sw_tags_import,
    tasks_import,
)
from tests import factories

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cric" / "queuedata_CERN.json"


def cern_record():
    if not FIXTURE.exists():
        pytest.skip("../shared/fixtures is not beside this checkout")
    return json.loads(FIXTURE.read_text())


class TestCric:
    def test_the_real_cern_record(self):
        report = cric_import(data=cern_record())
        assert (report.created, report.errors) == (["CERN"], [])
        queue = PandaQueue.objects.select_related("site").get(name="CERN")
        assert (queue.site.name, queue.status, queue.type, queue.capability) == (
            "CERN-PROD",
            "online",
            "unified",
            "ucore",
        )
        assert (queue.corecount, queue.maxrss, queue.maxwdir, queue.maxtime) == (8, 32000, 160000, 288000)
        assert (queue.releases, queue.wnconnectivity, queue.jobseed, queue.direct_access_lan) == (
            ["AUTO"],
            "full#IPv4",
            "eshigh",
            True,
        )
        assert queue.cric["harvester"] == "CERN_central_B"  # the whole record is kept
        assert queue.last_modified.isoformat() == "2022-09-14T15:55:19.332736+00:00"
        assert QueueStorage.objects.filter(queue=queue, role="read_lan").count() == 34
        assert StorageEndpoint.objects.get(name="CERN-PROD_DATADISK").type == "DATADISK"
        assert any("created site CERN-PROD" in note for note in report.notes)

    def test_importing_twice_changes_nothing_and_a_change_updates(self):
        record = cern_record()
        cric_import(data=record)
        again = cric_import(data=record)
        assert (again.unchanged, again.created, again.updated) == (["CERN"], [], [])
        record = {**record, "maxrss": 40000, "astorages": {"read_lan": ["CERN-PROD_DATADISK"]}}
        changed = cric_import(data={"CERN": record})
        assert changed.updated == ["CERN"]
        queue = PandaQueue.objects.get(name="CERN")
        assert queue.maxrss == 40000
        assert list(queue.storages.values_list("role", "endpoint__name")) == [("read_lan", "CERN-PROD_DATADISK")]

    def test_bad_entries_are_named_and_the_good_ones_kept(self):
        good = {"atlas_site": "MWT2", "status": "online", "maxrss": 16000, "corecount": 8}
        report = cric_import(
            data={
                "MWT2": good,
                "BAD_TYPE": {**good, "maxrss": "lots"},
                "BAD_RANGE": {**good, "minrss": 20000},
                "NO_SITE": {"status": "online"},
                "NOT_A_RECORD": [1, 2],
                "BAD_STATUS": {**good, "status": "up"},
            }
        )
        assert report.created == ["MWT2"]
        reasons = dict(report.errors)
        assert reasons["BAD_TYPE"] == "maxrss: expected a number, got 'lots'"
        assert reasons["BAD_RANGE"] == "minrss must not exceed maxrss (maxrss 0 means no limit)"
        assert reasons["NO_SITE"] == "atlas_site: the record names no site"
        assert reasons["NOT_A_RECORD"] == "expected a CRIC record (an object), got list"
        assert reasons["BAD_STATUS"].startswith("status: expected one of 'online'")
        assert set(PandaQueue.objects.values_list("name", flat=True)) == {"MWT2"}

    def test_not_an_object_at_all(self):
        with pytest.raises(ImportFileError):
            cric_import(data=[1, 2])


class TestSoftwareTags:
    def test_queues_and_the_all_entry(self):
        factories.PandaQueueFactory(name="AGLT2")
        report = sw_tags_import(
            data={
                "AGLT2": {
                    "cmtconfigs": ["x86_64-el9-gcc13-opt"],
                    "containers": ["any"],
                    "cvmfs": ["atlas"],
                    "tags": [],
                },
                "ALL": {"containers": {"atlas/athena:24": "/cvmfs/unpacked.cern.ch/atlas/athena:24"}},
                "NOWHERE": {"cmtconfigs": []},
                "BROKEN": {"cmtconfigs": "x86_64"},
            }
        )
        assert sorted(report.created) == ["AGLT2", "ALL"]
        assert dict(report.errors) == {
            "NOWHERE": "unknown queue: import it with import_cric first",
            "BROKEN": "cmtconfigs: expected a list",
        }
        assert SoftwareTags.objects.get(name="AGLT2").queue.name == "AGLT2"
        assert sw_tags_import(
            data={"ALL": {"containers": {"atlas/athena:24": "/cvmfs/unpacked.cern.ch/atlas/athena:24"}}}
        ).unchanged == ["ALL"]


class TestDdmEndpoints:
    def test_space_states_and_sites(self):
        report = ddm_endpoints_import(
            data={
                "CERN-PROD_DATADISK": {
                    "site": "CERN-PROD",
                    "space_total": 9000,
                    "space_free": 2500,
                    "space_expired": 100,
                    "detailed_status": {"read_wan": "on", "write_wan": "OFF"},
                },
                "CERN-PROD_DATATAPE": {"site": "CERN-PROD", "space_total": 50000, "space_free": 20000},
                "NEGATIVE_DATADISK": {"site": "X", "space_free": -1},
                "ODD_DATADISK": {"site": "X", "detailed_status": {"read_lan": "maybe"}},
            }
        )
        assert sorted(report.created) == ["CERN-PROD_DATADISK", "CERN-PROD_DATATAPE"]
        reasons = dict(report.errors)
        assert reasons["NEGATIVE_DATADISK"] == "space_free: expected a size in GB ≥ 0, got -1"
        assert reasons["ODD_DATADISK"] == "detailed_status.read_lan: expected ON, OFF or TEST, got 'maybe'"
        disk = StorageEndpoint.objects.get(name="CERN-PROD_DATADISK")
        assert (disk.space_free, disk.activity("read_wan"), disk.activity("write_wan"), disk.is_tape) == (
            2500,
            "ON",
            "OFF",
            False,
        )
        assert StorageEndpoint.objects.get(name="CERN-PROD_DATATAPE").is_tape
        assert Site.objects.filter(name="CERN-PROD").exists()
        assert not Site.objects.filter(name="X").exists()  # a refused entry leaves nothing behind


class TestTasks:
    def test_columns_parameters_and_refusals(self):
        report = tasks_import(
            data=[
                {
                    "jediTaskID": 5000,
                    "taskName": "mc23.simul",
                    "processingType": "simul",
                    "taskPriority": 500,
                    "coreCount": 8,
                    "t1Weight": -1,
                    "fullChain": "capable",
                    "status": "done",
                },
                {"taskName": "user.jdoe.ana", "prodSourceLabel": "user", "includedSite": ["ANALY_X"]},
                {"jediTaskID": 5001, "taskName": "bad.priority", "taskPriority": "high"},
                {"jediTaskID": 5002},
                "not an object",
            ]
        )
        assert sorted(report.created) == ["5000", "user.jdoe.ana"]
        reasons = dict(report.errors)
        assert reasons["5001"].startswith("taskPriority:")
        assert reasons["5002"] == "taskName: required"
        assert reasons["entry 4"] == "expected an object of task parameters, got str"
        task = Task.objects.get(pk=5000)
        assert (task.status, task.coreCount, task.taskParams) == (
            "registered",
            8,
            {"t1Weight": -1, "fullChain": "capable"},
        )
        assert Task.objects.create(taskName="next").pk > 5000  # the id sequence moved past imported ids
        again = tasks_import(
            data={
                "jediTaskID": 5000,
                "taskName": "mc23.simul",
                "processingType": "simul",
                "taskPriority": 500,
                "coreCount": 8,
                "t1Weight": -1,
                "fullChain": "capable",
            }
        )
        assert again.unchanged == ["5000"]


class TestCommands:
    def run(self, command, payload, *options):
        out, err = io.StringIO(), io.StringIO()
        old = sys.stdin
        sys.stdin = io.StringIO(payload if isinstance(payload, str) else json.dumps(payload))
        try:
            call_command(command, "-", *options, stdout=out, stderr=err)
            return 0, out.getvalue(), err.getvalue()
        except CommandError as error:
            return error.returncode, out.getvalue(), err.getvalue() + str(error)
        finally:
            sys.stdin = old

    def test_exit_codes_and_reports(self):
        good = {"atlas_site": "MWT2", "status": "online"}
        status, out, _ = self.run("import_cric", {"MWT2": good})
        assert (status, out.splitlines()[0]) == (0, "CRIC queues: 1 created, 0 updated, 0 unchanged, 0 refused")
        status, out, err = self.run("import_cric", {"MWT2": good, "BAD": {**good, "maxtime": "long"}})
        assert status == 1
        assert "stdin: BAD: maxtime: expected a number, got 'long'" in err
        assert "1 of stdin's entries refused" in err
        status, _, err = self.run("import_cric", "{oops")
        assert status == 2
        assert err.startswith("stdin: $: expected JSON")
        status, _, err = self.run("import_tasks", 42)
        assert status == 2
        assert "expected a JEDI task parameter object or a list of them" in err

    def test_progress_bar_on_long_imports(self):
        dump = {f"Q{i:04d}": {"atlas_site": "SITE", "status": "online"} for i in range(250)}
        status, _out, err = self.run("import_cric", dump)
        assert status == 0
        assert "250/250" in err
        assert PandaQueue.objects.count() == 250
