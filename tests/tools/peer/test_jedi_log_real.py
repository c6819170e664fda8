"""Our brokerage log in JEDI's grammar against the real brokers' (panda-server 1.0.4), on the same 500 generated
scenarios as the decisions' differential tests (issue 53): line by line after the normalisation
tools/peer/jedi_log_compare.py documents, no scenario differs. The task broker's log holds its job check's own job
brokerage lines; where the real task broker raises (the two real-code failures tests/tools/peer/
test_panda_task_broker.py names), it writes no log to compare."""

import pytest

from tests.tools.peer.test_panda_task_broker import NO_OUTPUT_ENDPOINT, PARENT_NUCLEUS_UNKNOWN
from tools.peer.jedi_log_compare import compare_logs

pytestmark = pytest.mark.peer
SCENARIOS = list(range(500))


@pytest.fixture(scope="module")
def job_logs(real_panda):
    return compare_logs(real_panda, "job", SCENARIOS)


@pytest.fixture(scope="module")
def task_logs(real_panda):
    return compare_logs(real_panda, "task", SCENARIOS)


def differing(logs):
    return [f"scenario {r['seed']}:\n  " + "\n  ".join(r["differences"]) for r in logs if r["differences"]]


def test_every_job_brokerage_log_agrees_with_the_real_brokers(job_logs):
    assert not differing(job_logs), "\n".join(differing(job_logs)[:10])


def test_the_job_logs_compared_are_not_empty(job_logs):
    # a comparison of empty logs proves little: the real broker wrote its summary for most scenarios, skip lines
    # with many criteria and use lines for many, and refused some tasks before its checks
    logs = job_logs
    assert [r["error"] for r in logs if r["error"]] == []
    summaries = sum(1 for r in logs if any("===== Job brokerage summary =====" in line for line in r["theirs"]))
    assert summaries >= 400
    criteria = {line.rsplit("criteria=", 1)[1] for r in logs for line in r["theirs"] if " skip site=" in line}
    assert len(criteria) >= 20, sorted(criteria)
    assert sum(1 for r in logs if any("criteria=+use" in line for line in r["theirs"])) >= 100
    assert sum(1 for r in logs if any("criteria=+usejumbo" in line for line in r["theirs"])) >= 1
    assert any("unknown nucleus" in line for r in logs for line in r["theirs"])


def test_every_task_brokerage_log_agrees_unless_the_real_code_raised(task_logs):
    raised = [r for r in task_logs if r["error"]]
    assert all(NO_OUTPUT_ENDPOINT in r["error"] or PARENT_NUCLEUS_UNKNOWN in r["error"] for r in raised)
    compared = [r for r in task_logs if not r["error"]]
    assert len(compared) >= 400
    assert not differing(compared), "\n".join(differing(compared)[:10])


def test_the_task_logs_compared_reach_every_ending(task_logs):
    # the real task broker's logs hold each way it ends: a nucleus set, no candidates after its summary, its job
    # check keeping no queue (the job broker's own summary, then "no sites can run jobs"), and an input with no
    # complete copy readable over WAN before any check; nucleus skips of every criteria the generator reaches (not
    # -status: the real code marks every site ACTIVE, tools/peer/panda_fields.py) and the job check's site skips
    theirs = [r["theirs"] for r in task_logs if not r["error"]]

    def reaching(text):
        return sum(1 for log in theirs if any(text in line for line in log))

    assert reaching("criteria=+set") >= 100
    assert reaching("===== Task brokerage summary =====") >= 200
    assert reaching("no sites can run jobs") >= 10
    assert reaching("===== Job brokerage summary =====") >= 10
    assert reaching("is incomplete/missing at online endpoints with read_wan=ON") >= 10
    criteria = {line.rsplit("criteria=", 1)[1] for log in theirs for line in log if " skip nucleus=" in line}
    assert criteria >= {
        "-transfer_backlog", "-space", "-source_blacklist", "-destination_blacklist", "-job", "-insize", "-innum",
        "-full_chain",
    }  # fmt: skip
    assert reaching(" skip site=") >= 100
