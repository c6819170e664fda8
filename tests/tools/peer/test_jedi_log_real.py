"""Our brokerage log in JEDI's grammar against the real AtlasProdJobBroker's (panda-server 1.0.4), on the same 500
generated scenarios as the decisions' differential test (issue 53): line by line after the normalisation
tools/peer/jedi_log_compare.py documents, no scenario differs."""

import pytest

from tools.peer.jedi_log_compare import compare_logs

pytestmark = pytest.mark.peer
SCENARIOS = list(range(500))


@pytest.fixture(scope="module")
def logs(real_panda):
    return compare_logs(real_panda, "job", SCENARIOS)


def test_every_scenarios_log_agrees_with_the_real_brokers(logs):
    differing = [f"scenario {r['seed']}:\n  " + "\n  ".join(r["differences"]) for r in logs if r["differences"]]
    assert not differing, "\n".join(differing[:10])


def test_the_logs_compared_are_not_empty(logs):
    # a comparison of empty logs proves little: the real broker wrote its summary for most scenarios, skip lines
    # with many criteria and use lines for many, and refused some tasks before its checks
    assert [r["error"] for r in logs if r["error"]] == []
    summaries = sum(1 for r in logs if any("===== Job brokerage summary =====" in line for line in r["theirs"]))
    assert summaries >= 400
    criteria = {line.rsplit("criteria=", 1)[1] for r in logs for line in r["theirs"] if " skip site=" in line}
    assert len(criteria) >= 20, sorted(criteria)
    assert sum(1 for r in logs if any("criteria=+use" in line for line in r["theirs"])) >= 100
    assert sum(1 for r in logs if any("criteria=+usejumbo" in line for line in r["theirs"])) >= 1
    assert any("unknown nucleus" in line for r in logs for line in r["theirs"])
