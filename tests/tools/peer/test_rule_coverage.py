"""The differential generator covers every rule both ways (issue 33): over the scenarios the comparisons with
panda-server 1.0.4 run, every filter of the three ATLAS brokers skips a candidate somewhere and lets one pass
somewhere, every weight factor tells kept candidates apart somewhere, every switch of the `panda` profile changes
some decision, and every situation of tools/peer/situations.py ends with candidates in some scenarios and
without in others. The report (per rule, how many scenarios it decided each way) is written to
var/peer/coverage.txt and shown when the test fails. Engine only: the comparisons themselves are the other peer
tests."""

from pathlib import Path

import pytest

from brokerage.gdpconfig.profiles import PROFILES
from tools.peer.coverage import rule_coverage
from tools.peer.setup import peer_dir

pytestmark = pytest.mark.peer
SCENARIOS = range(500)  # as many as the comparisons run (tests/tools/peer/test_panda_*_broker.py)
REAL_SHAPED = range(150)  # ... and the real-shaped ones (tests/tools/peer/test_real_shapes.py)


@pytest.fixture(scope="module")
def coverage():
    found = {kind: rule_coverage(kind, SCENARIOS, real_shaped_seeds=REAL_SHAPED)[0] for kind in ("job", "task", "anal")}
    report = "\n\n".join(found[kind].report() for kind in found)
    path = Path(peer_dir()) / "coverage.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report + "\n")
    return found, report


@pytest.mark.parametrize("kind", ["job", "task", "anal"])
def test_every_filter_factor_and_situation_is_exercised_both_ways(coverage, kind):
    found, report = coverage
    one_way = {what: names for what, names in found[kind].one_way().items() if what != "switches" and names}
    assert one_way == {}, f"{kind}: {one_way}\n{report}"


# Switches the live adapters and services read, not the engine's brokers: their effect is tested against the database
READ_BY_ADAPTERS = {
    "DATA_CHECK_TIMEOUT_FROM": "the analysis adapter's clock (tests/brokerage/test_live_parity.py)",
    "USER_JOB_CAP_RULE": "the watchdog's users' job caps (tests/watchdog/test_user_caps.py, both profiles)",
    "SHARE_ALLOCATION_RULE": "job generation's share holds (tests/jobs/test_job_generation.py, both profiles)",
    "PRESTAGE_RULE": "the watchdog's data-motion throttle (tests/watchdog/test_data_motion.py, both profiles)",
    "TIMEOUT_WAITING": "the watchdog's waiting jobs (tests/watchdog/test_timeout_rules.py, both profiles)",
    "JUMBO_DOG_RULE": "the jumbo watchdog (tests/brokerage/test_jumbo.py, tests/watchdog/test_jumbo_watchdog.py, both "
    "profiles; tests/tools/peer/test_jumbo_watchdog.py against the real one)",
}


def test_every_switch_of_the_panda_profile_decides_somewhere(coverage):
    found, report = coverage
    deciding = {key for cov in found.values() for key, changed in cov.switches.items() if changed}
    assert set(PROFILES["panda"].values) - deciding - set(READ_BY_ADAPTERS) == set(), report


def test_the_generated_scenarios_keep_candidates_often_enough(coverage):
    # a comparison of empty results proves little: a third of each broker's decisions keep candidates
    found, _ = coverage
    for kind, cov in found.items():
        kept = sum(keep for _, keep in (cov.filters.get(name, (0, 0)) for name in cov.filters))
        assert kept > 0, kind
        last = max(cov.filters.values(), key=lambda counts: counts[1])
        assert last[1] >= (len(SCENARIOS) + len(REAL_SHAPED)) // 3, kind
