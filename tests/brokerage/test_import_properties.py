"""Property-based: random junk fed into every importer and the `broker` command. Whatever comes in, there is no
traceback, every refused entry is named with its key, every good entry beside the junk is kept, and the counts
add up (each entry is created, updated, unchanged or refused: exactly one of them)."""

from __future__ import annotations

import io
import json
import sys

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerage.models import PandaQueue, SoftwareTags, StorageEndpoint, Task
from brokerage.services.imports import (
    ImportFileError,
    cric_import,
    ddm_endpoints_import,
    sw_tags_import,
    tasks_import,
)

pytestmark = pytest.mark.django_db(transaction=False)

PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# scalars that break naive code: non-finite and huge numbers, NUL and odd text, booleans posing as numbers
junk_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e30, 2**63, -1, 0, "", "\x00", "a\x00b", "é"]),
    st.text(max_size=12),
)
junk_json = st.recursive(
    junk_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


class Rollback(Exception):
    """Ends one example's transaction, so that each example starts from the same empty tables."""


def in_rollback(check):
    try:
        with transaction.atomic():
            check()
            raise Rollback
    except Rollback:
        pass


def assert_accounted(report, names):
    done = report.created + report.updated + report.unchanged + [name for name, _ in report.errors]
    assert len(done) == len(names)
    for name, reason in report.errors:
        assert reason.strip(), name
        assert ": " in reason, reason  # the key (or "name"/"entry") comes first, then what was expected


CRIC_KEYS = ["status", "corecount", "maxrss", "maxtime", "tier_level", "releases", "direct_access_lan", "site"]
TASK_KEYS = ["taskName", "currentPriority", "coreCount", "ramCount", "userName", "jediTaskID", "splitRule", "x"]
DDM_KEYS = ["site", "space_total", "space_free", "is_tape", "type", "detailed_status", "blacklisted"]


@PROPERTY_SETTINGS
@given(junk=st.dictionaries(st.sampled_from(CRIC_KEYS), junk_json, max_size=4))
def test_cric_junk_beside_a_good_queue(junk):
    def check():
        entries = {"GOOD_A": {"atlas_site": "S", "corecount": 8}, "JUNK": {"atlas_site": "S", **junk}, "GOOD_Z": {}}
        entries["GOOD_Z"] = {"atlas_site": "S2", "maxrss": 2000}
        report = cric_import(data=entries)
        assert_accounted(report, entries)
        assert {"GOOD_A", "GOOD_Z"} <= set(PandaQueue.objects.values_list("name", flat=True))
        assert [name for name, _ in report.errors] in ([], ["JUNK"])

    in_rollback(check)


@PROPERTY_SETTINGS
@given(junk=st.dictionaries(st.sampled_from(TASK_KEYS), junk_json, max_size=4), first=junk_json)
def test_task_junk_beside_good_tasks(junk, first):
    def check():
        entries = [{"taskName": "good.first"}, {"taskName": "junk", **junk}, first, {"taskName": "good.last"}]
        report = tasks_import(data=entries)
        assert_accounted(report, entries)
        assert {"good.first", "good.last"} <= set(Task.objects.values_list("taskName", flat=True))
        for task in Task.objects.all():  # nothing stored that a column or JSON cannot hold
            assert isinstance(task.taskName, str)
            assert "\x00" not in task.taskName
            json.dumps(task.taskParams, allow_nan=False)

    in_rollback(check)


@PROPERTY_SETTINGS
@given(junk=st.dictionaries(st.sampled_from(DDM_KEYS), junk_json, max_size=4))
def test_ddm_junk_beside_a_good_endpoint(junk):
    def check():
        entries = {"A_DATADISK": {"site": "S", "space_total": 10}, "JUNK_DATADISK": junk, "Z_DATATAPE": {}}
        report = ddm_endpoints_import(data=entries)
        assert_accounted(report, entries)
        assert {"A_DATADISK", "Z_DATATAPE"} <= set(StorageEndpoint.objects.values_list("name", flat=True))
        for space in StorageEndpoint.objects.values_list("space_total", "space_free", "space_used"):
            assert all(0 <= value < float("inf") for value in space)

    in_rollback(check)


@PROPERTY_SETTINGS
@given(junk=junk_json)
def test_software_tag_junk_beside_a_good_document(junk):
    def check():
        entries = {"ALL": {"cmtconfigs": ["x86_64-el9-gcc13-opt"]}, "JUNK": junk}
        report = sw_tags_import(data=entries)
        assert_accounted(report, entries)
        assert SoftwareTags.objects.filter(name="ALL").exists()

    in_rollback(check)


@PROPERTY_SETTINGS
@given(data=junk_json)
def test_any_json_document_is_imported_or_refused_as_a_whole(data):
    def check():
        for importer in (cric_import, ddm_endpoints_import, sw_tags_import, tasks_import):
            try:
                outcome = importer(data=data).summary()
            except ImportFileError as error:
                outcome = str(error)
            assert outcome.startswith(("expected", "CRIC queues: ", "DDM endpoints: ", "software tags: ", "tasks: "))

    in_rollback(check)


def call_on_stdin(name: str, payload: bytes, *options: str) -> tuple[int, str]:
    """(exit status, error message) of a command reading `payload` from standard input; any other exception than
    CommandError is a traceback and fails the test."""
    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(payload), encoding="utf-8")
    try:
        call_command(name, "-", *options, stdout=io.StringIO(), stderr=io.StringIO())
    except CommandError as error:
        return error.returncode, str(error)
    finally:
        sys.stdin = old
    return 0, ""


payloads = st.one_of(
    st.binary(max_size=40),
    junk_json.map(lambda value: json.dumps(value, allow_nan=True).encode()),
    st.integers(min_value=60, max_value=3000).map(lambda depth: ("[" * depth + "]" * depth).encode()),
)


@PROPERTY_SETTINGS
@given(payload=payloads)
def test_import_commands_exit_0_1_or_2_on_any_bytes(payload):
    def check():
        for command in ("import_cric", "import_tasks", "import_ddm_endpoints", "import_sw_tags"):
            status, message = call_on_stdin(command, payload, "--no-progress")
            assert status in (0, 1, 2)
            assert status == 0 or message.startswith("stdin") or "of stdin's entries refused" in message

    in_rollback(check)


scenario_junk = st.fixed_dictionaries(
    {"plugin": st.sampled_from(["atlas_prod_task", "atlas_prod_job", "atlas_anal_job", "dirac_match", "wmcore_pull"])},
    optional={
        "task": st.dictionaries(st.sampled_from(["taskPriority", "ramCount", "coreCount", "taskName"]), junk_json),
        "queues": st.dictionaries(st.text(max_size=4), junk_json, max_size=2),
        "nuclei": junk_json,
        "jobs": junk_json,
        "now": junk_json,
        "profile": st.sampled_from(["seed", "panda", "nope"]),
    },
)


@PROPERTY_SETTINGS
@given(payload=st.one_of(payloads, scenario_junk.map(lambda value: json.dumps(value, allow_nan=True).encode())))
def test_broker_command_decides_or_exits_2_on_any_bytes(payload):
    status, message = call_on_stdin("broker", payload)
    assert status in (0, 2)
    assert status == 0 or message.startswith(("stdin: ", "--without"))
    assert "\n" not in message
