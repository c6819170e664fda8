"""`manage.py broker`: decisions from scenario files offline, errors as one line with the JSON path, exit 2."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.engine.builders import nucleus, task_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "task_brokerage.json"


def broker(*args, stdin: str | None = None) -> str:
    out = io.StringIO()
    if stdin is not None:
        old = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            call_command("broker", *args, stdout=out)
        finally:
            sys.stdin = old
    else:
        call_command("broker", *args, stdout=out)
    return out.getvalue()


def test_documented_example_as_text():
    # no database marker: the command must not touch the database at all
    text = broker(str(EXAMPLE))
    assert text.startswith("nucleus CERN-PROD chosen from 1 candidate (of 5 considered)")
    assert "4 -> 3 candidates, 25% cut : transfer backlog" in text
    assert "BNL-ATLAS: 2500 output files are queued to it; the cap is 2000 (NQUEUED_NUC_CAP)." in text
    assert "FZK-LCG2: 40 GB of 800 GB input is local (5 %); more than 10 % is needed" in text


def test_documented_example_as_json_follows_the_output_contract():
    decision = json.loads(broker(str(EXAMPLE), "--json"))
    assert set(decision) >= {
        "plugin",
        "outcome",
        "retry_after_minutes",
        "chosen",
        "candidates",
        "skipped",
        "stages",
        "message",
    }
    assert decision["skipped"]["RAL-LCG2"] == {
        "code": "status",
        "filter": "nucleus status",
        "detail": {"state": "DISABLED", "required": "ACTIVE"},
    }
    assert [s["filter"] for s in decision["stages"]][:4] == [
        "input copy",
        "nucleus status",
        "full chain",
        "transfer backlog",
    ]


def test_stdin_and_switching_a_filter_off():
    scenario = json.dumps(task_scenario(nucleus("A", state="DISABLED")))
    assert json.loads(broker("-", "--json", stdin=scenario))["outcome"] == "pending"
    assert json.loads(broker("-", "--json", "--without", "nucleus status", stdin=scenario))["chosen"] == "A"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{bad", "stdin: $: expected JSON: Expecting property name enclosed in double quotes: line 1 column 2"),
        (
            '{"plugin": "atlas_prod_task", "task": {"taskPriority": "high"}}',
            "stdin: $.task.taskPriority: expected a whole number, got 'high'",
        ),
        (
            '{"plugin": "nope"}',
            "stdin: $.plugin: unknown brokerage plugin 'nope' "
            "(known: atlas_anal_job, atlas_prod_job, atlas_prod_task, dirac_match, wmcore_pull)",
        ),
    ],
)
def test_bad_input_is_one_line_with_the_path_and_exit_2(content, message):
    with pytest.raises(CommandError) as caught:
        broker("-", stdin=content)
    assert caught.value.returncode == 2
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_exit_status_and_stderr_from_the_shell(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"plugin": "atlas_prod_task", "queues": {"CERN": {"maxrss": "lots"}}}))
    result = subprocess.run(
        [sys.executable, "manage.py", "broker", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"CommandError: {bad}: $.queues.CERN.maxrss: expected a number, got 'lots'"
    )
    missing = subprocess.run(
        [sys.executable, "manage.py", "broker", str(tmp_path / "none.json")], cwd=ROOT, capture_output=True, text=True
    )
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr


def test_documented_job_brokerage_example():
    text = broker(str(ROOT / "docs" / "examples" / "job_brokerage.json"))
    # CERN is a unified queue: brokered as its pseudo-queues, the 8-core task takes CERN/MCORE (seed 000)
    assert text.startswith("queue CERN/MCORE chosen from 1 candidate (of 11 considered)")
    assert "BNL: The job needs 14,400 MB; its maxrss is 12,000 MB." in text
    assert "MWT2: 210 activated + starting jobs are over the limit 200" in text
    decision = json.loads(broker(str(ROOT / "docs" / "examples" / "job_brokerage.json"), "--json"))
    assert decision["retry_after_minutes"] is None
    assert decision["candidates"][0]["factors"]["networkWeight"] == 2.5


def test_documented_busy_user_example_names_the_stabilizer_number():
    text = broker(str(ROOT / "docs" / "examples" / "analysis_busy_user.json"))
    assert text.startswith("queue ANALY_QUIET chosen from 1 candidate (of 3 considered)")
    assert "ANALY_CROWDED: The user has 80 jobs queued there, more than max_q_len 60 (nQ_max 600" in text
    assert "ANALY_BAD: 5 of the task's jobs failed or were closed there in 6 h" in text


def test_profile_option_decides_under_that_profile():
    seed = broker(str(ROOT / "docs" / "examples" / "job_brokerage.json"), "--json")
    panda = broker(str(ROOT / "docs" / "examples" / "job_brokerage.json"), "--json", "--profile", "panda")
    assert json.loads(seed)["profile"] == "seed"
    assert json.loads(panda)["profile"] == "panda"
    text = broker(str(ROOT / "docs" / "examples" / "job_brokerage.json"), "--profile", "panda")
    assert text.splitlines()[1] == "profile: panda"


def test_an_unknown_profile_exits_2():
    result = subprocess.run(
        [sys.executable, "manage.py", "broker", str(EXAMPLE), "--profile", "pandas"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "invalid choice: 'pandas'" in result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[" * 5000 + "]" * 5000, "$: nested deeper than 64 levels"),
        ('{"plugin": "atlas_prod_task", "task": {"taskPriority": 1}}'.encode("latin-1") + b"\xe9", "not UTF-8 text"),
        ('{"plugin": "atlas_prod_task", "task": {"ramCount": NaN}}', "$.task.ramCount: expected a finite number"),
        ('{"plugin": "atlas_prod_task", "task": {"taskName": "a\\u0000"}}', "$.task.taskName: contains a NUL"),
    ],
)
def test_unusable_files_exit_2_with_the_path(tmp_path, content, message):
    path = tmp_path / "scenario.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CommandError) as caught:
        broker(str(path))
    assert caught.value.returncode == 2
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
