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

    def test_a_record_may_make_its_queue_pilot_driven(self):
        """CRIC has no such key (its pilot_manager names who submits pilots): a record that says it is taken."""
        record = cern_record()
        cric_import(data=record)
        assert PandaQueue.objects.get(name="CERN").pilot_driven is False
        assert cric_import(data={"CERN": {**record, "pilot_driven": True}}).updated == ["CERN"]
        assert PandaQueue.objects.get(name="CERN").pilot_driven is True

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
        assert reasons["NOT_A_RECORD"] == "entry: expected a CRIC record (an object), got [1, 2]"
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
            "NOWHERE": "name: unknown queue: import it with import_cric first",
            "BROKEN": "cmtconfigs: expected a list, got 'x86_64'",
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
        assert reasons["entry 4"] == "entry: expected an object of task parameters, got 'not an object'"
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


class TestJunkIsRefusedByName:
    """Each entry the issue found crashing an import, or stored as junk, is now refused by name with its key, and
    the good entry after it is kept (the same on SQLite and PostgreSQL)."""

    def test_non_finite_numbers_and_nul_in_tasks(self):
        report = tasks_import(
            data=[
                {"taskName": "a"},
                {"taskName": "b", "x": float("nan")},
                {"taskName": "p", "currentPriority": float("inf")},
                {"taskName": "n\x00ul"},
                {"taskName": ["a", "b"]},
                {"taskName": "big", "reqID": 2**70},
                {"taskName": "c"},
            ]
        )
        assert sorted(report.created) == ["a", "c"]
        assert dict(report.errors) == {
            "b": "x: expected a finite number, got nan",
            "p": "currentPriority: expected a finite number, got inf",
            "'n\\x00ul'": "name: contains a NUL character",
            "entry 4": "taskName: expected a string, got ['a', 'b']",
            "big": "reqID: expected a whole number from -9223372036854775808 to 9223372036854775807, "
            "got 1180591620717411303424",
        }
        assert sorted(Task.objects.values_list("taskName", flat=True)) == ["a", "c"]

    def test_cric_numbers_out_of_range_name_their_key(self):
        report = cric_import(
            data={
                "Q1": {"atlas_site": "NEWSITE", "tier_level": float("inf")},
                "Q3": {"atlas_site": "S3", "corecount": 1e30},
                "Q4": {"atlas_site": "S4", "tier_level": "x"},
                "Q5": {"site": ["x"]},
                "Q6": {"atlas_site": "S6", "corecount": 8.0, "tier_level": 1},
            }
        )
        assert report.created == ["Q6"]
        assert dict(report.errors) == {
            "Q1": "tier_level: expected a finite number, got inf",
            "Q3": "corecount: expected a whole number from 0 to 2147483647, got 1e+30",
            "Q4": "tier_level: expected a whole number from 0 to 32767, got 'x'",
            "Q5": "site: expected a string, got ['x']",
        }
        assert PandaQueue.objects.get(name="Q6").corecount == 8
        assert list(Site.objects.values_list("name", "tier_level")) == [("S6", 1)]

    def test_ddm_space_must_be_a_finite_size(self):
        report = ddm_endpoints_import(
            data={
                "E1": {"site": "S1", "space_total": float("nan")},
                "E2": {"site": "S1", "space_free": float("inf")},
                "E3": {"site": ["x"]},
                "E5": {"site": "S1", "is_tape": "yes"},
                "E4": {"site": "S1", "space_total": 12.5},
            }
        )
        assert report.created == ["E4"]
        assert dict(report.errors) == {
            "E1": "space_total: expected a finite number, got nan",
            "E2": "space_free: expected a finite number, got inf",
            "E3": "site: expected a string, got ['x']",
            "E5": "is_tape: expected true or false, got 'yes'",
        }
        assert list(StorageEndpoint.objects.values_list("name", "space_total")) == [("E4", 12.5)]

    def test_a_database_error_in_one_entry_is_its_refusal_and_rolls_back_only_it(self):
        from brokerage.services.imports import ImportReport, _run

        def apply(name, entry):
            Site.objects.create(name=f"half-{name}")  # written, then rolled back with the entry's savepoint
            Site.objects.create(name=entry)  # None: NOT NULL refused by the database itself
            return "created"

        report = _run(ImportReport("sites"), [("bad", None), ("good", "GOOD")], apply, None)
        assert report.created == ["good"]
        ((name, reason),) = report.errors
        assert name == "bad"
        assert reason.startswith("the database refused it: ")
        assert sorted(Site.objects.values_list("name", flat=True)) == ["GOOD", "half-good"]


class TestTaskNaturalKey:
    """Without jediTaskID a task is found by JEDI's duplicate check: vo, userName, taskName, prodSourceLabel."""

    def test_the_same_file_twice_makes_one_task(self):
        entries = [
            {"taskName": "user.jdoe.ana", "userName": "jdoe", "prodSourceLabel": "user", "vo": "atlas"},
            {"taskName": "mc23.evgen"},
        ]
        first = tasks_import(data=entries)
        again = tasks_import(data=entries)
        assert (sorted(first.created), sorted(again.unchanged)) == (
            ["mc23.evgen", "user.jdoe.ana"],
            ["mc23.evgen", "user.jdoe.ana"],
        )
        assert Task.objects.count() == 2
        changed = tasks_import(data={**entries[0], "taskPriority": 700})
        assert changed.updated == ["user.jdoe.ana"]
        assert Task.objects.get(taskName="user.jdoe.ana").taskPriority == 700

    def test_another_user_or_label_is_another_task(self):
        tasks_import(data={"taskName": "ana", "userName": "jdoe", "prodSourceLabel": "user"})
        report = tasks_import(
            data=[
                {"taskName": "ana", "userName": "asmith", "prodSourceLabel": "user"},
                {"taskName": "ana", "userName": "jdoe", "prodSourceLabel": "managed"},
            ]
        )
        assert report.created == ["ana", "ana"]
        assert Task.objects.filter(taskName="ana").count() == 3

    def test_two_matching_tasks_need_the_id(self):
        factories.TaskFactory(taskName="twice", userName="jdoe", prodSourceLabel="user", vo="atlas")
        factories.TaskFactory(taskName="twice", userName="jdoe", prodSourceLabel="user", vo="atlas")
        report = tasks_import(data={"taskName": "twice", "userName": "jdoe", "prodSourceLabel": "user"})
        ((name, reason),) = report.errors
        assert name == "twice"
        assert reason.startswith("jediTaskID: required here: several tasks have this vo, userName")


class TestUnreadableFiles:
    """Every file a command cannot use is exit 2 with its path, never a traceback."""

    @pytest.mark.parametrize("command", ["import_cric", "import_tasks", "import_ddm_endpoints", "import_sw_tags"])
    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("[" * 5000 + "]" * 5000, "$: nested deeper than 64 levels"),
            # the 65th level is the first too deep: its path is named
            ("[" * 70 + "]" * 70, "$" + "[0]" * 64 + ": nested deeper than 64 levels"),
            ('{"é": 1}'.encode("latin-1"), "not UTF-8 text: byte 0xe9 at offset 2 (save the file as UTF-8)"),
        ],
    )
    def test_deep_nesting_and_latin_1(self, tmp_path, command, content, message):
        path = tmp_path / "bad.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(CommandError) as raised:
            call_command(command, str(path), stdout=io.StringIO(), stderr=io.StringIO())
        assert raised.value.returncode == 2
        assert str(raised.value) == f"{path}: {message}"

    def test_a_directory_and_a_missing_file(self, tmp_path):
        for target, reason in ((tmp_path, "Is a directory"), (tmp_path / "missing.json", "No such file")):
            with pytest.raises(CommandError) as raised:
                call_command("import_tasks", str(target), stdout=io.StringIO(), stderr=io.StringIO())
            assert raised.value.returncode == 2
            assert str(raised.value).startswith(f"{target}: cannot read: {reason}")
