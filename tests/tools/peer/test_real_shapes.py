"""Our brokers under the `panda` profile against the real panda-server 1.0.4 on scenarios shaped like the real grid
(tools/peer/real_shapes.py, issue 49): CRIC records with nulls, catchall keys and `params`, corepower 0 or null,
empty clouds, per-core attributes, grids of up to 300 queues with diskless sites writing to a nucleus, values
exactly at the limits, tasks without ramCount, of coreCount 0, with output per MB of input, event service. The same
decision on each, but where the real code raises on one of its two known failures (test_panda_task_broker.py)."""

import pytest

from tests.tools.peer.conftest import disagreements, real_skip_codes
from tools.peer.compare import compare
from tools.peer.real_shapes import REAL_SHAPED

from .test_panda_task_broker import NO_OUTPUT_ENDPOINT, PARENT_NUCLEUS_UNKNOWN

pytestmark = pytest.mark.peer
SEEDS = list(range(150))


@pytest.fixture(scope="module", params=["job", "task", "anal"])
def side_by_side(request, real_panda):
    kind = request.param
    return kind, compare(real_panda, kind, SEEDS, scenarios=[REAL_SHAPED[kind](seed) for seed in SEEDS])


def test_every_real_shaped_scenario_agrees(side_by_side):
    kind, (report, _) = side_by_side
    differing = disagreements(report, real_code_failures_aside=kind == "task")
    assert not differing, report.summary() + "\n" + "\n".join(differing)


def test_the_real_code_raises_only_where_a_known_failure_applies(side_by_side):
    kind, (report, _) = side_by_side
    raised = [c.peer_error for c in report.comparisons if c.peer_error]
    known = (NO_OUTPUT_ENDPOINT, PARENT_NUCLEUS_UNKNOWN)
    assert all(any(k in error for k in known) for error in raised), [e[-300:] for e in raised[:3]]
    assert len(raised) <= len(SEEDS) // 10 if kind == "task" else raised == []


def test_the_shapes_reach_the_rules_that_read_them(side_by_side):
    # the CRIC fields the shapes add decide in the real code too: their skip codes are written somewhere
    kind, (_, theirs) = side_by_side
    codes = real_skip_codes(theirs)
    wanted = {
        "job": {"-jumbo", "-max_io_intensity", "-non_local", "-shortwalltime", "-disk", "-lowmemory", "-cpucore"},
        "task": {"-job", "-space"},  # the real task broker names the nuclei it skips, not the queues
        "anal": {"-fileunavailable", "-disk"},
    }[kind]
    assert wanted <= codes, sorted(wanted - codes)


def test_no_real_shaped_scenario_is_refused_by_the_driver(side_by_side):
    _, (report, _) = side_by_side
    assert [c.refused for c in report.comparisons if c.refused] == []
