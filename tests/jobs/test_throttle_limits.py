"""The throttler's limits looked up at three levels as JobThrottlerBase 1.0.4 does (brokerage.services.jobs
throttle_limits), and the MCORE/SCORE family key with its trailing * accepted where it means something."""

from __future__ import annotations

import pytest

from brokerage.gdpconfig.registry import ConfigView
from brokerage.services.gdpconfig import GdpConfigInputError, gdpconfig_validate
from brokerage.services.jobs import throttle_limits
from brokerage.throttle import LimitLevel


def limits(rows: dict, resource_type: str):
    view = ConfigView({(key, ""): value for key, value in rows.items()})
    return throttle_limits(config=view, work_queue="MC_16", resource_type=resource_type, threshold=2.0)


def test_the_most_specific_key_wins_and_says_its_level():
    rows = {"NQUEUELIMIT_MC_16": 9000, "NQUEUELIMIT_MC_16_MCORE*": 4000, "NQUEUELIMIT_MC_16_MCORE_HIMEM": 300}
    himem = limits(rows, "MCORE_HIMEM")
    assert (himem.queue_limit, himem.queue_limit_level) == (300, LimitLevel.RESOURCE_TYPE)
    mcore = limits(rows, "MCORE")  # no MCORE key of its own: the family's
    assert (mcore.queue_limit, mcore.queue_limit_level) == (4000, LimitLevel.FAMILY)
    assert mcore.keys == {"NQUEUELIMIT": "NQUEUELIMIT_MC_16_MCORE*"}
    score = limits(rows, "SCORE")  # the MCORE family's key is not SCORE's: the work queue's
    assert (score.queue_limit, score.queue_limit_level) == (9000, LimitLevel.WORK_QUEUE)


def test_a_zero_is_passed_over_as_unset():
    # JobThrottlerBase reads `if value:`: NRUNNINGCAP_MC_16_SCORE = 0 leaves the work queue's 5,000
    capped = limits({"NRUNNINGCAP_MC_16_SCORE": 0, "NRUNNINGCAP_MC_16": 5000}, "SCORE")
    assert (capped.running_cap, capped.running_cap_level) == (5000, LimitLevel.WORK_QUEUE)
    unset = limits({"NQUEUECAP_MC_16": 0}, "SCORE")
    assert unset.queue_cap is None
    assert unset.keys == {}


def test_a_trailing_star_only_on_a_work_queues_limit():
    assert gdpconfig_validate(key="NQUEUELIMIT_MC_16_SCORE*", value="2000").value == "2000"
    for key in ("DISK_THRESHOLD_Express*", "NQUEUELIMIT*", "NW_THRESHOLD*"):
        with pytest.raises(GdpConfigInputError, match="only a work queue's MCORE/SCORE limit ends in") as caught:
            gdpconfig_validate(key=key, value="1")
        assert caught.value.field == "key"
    with pytest.raises(GdpConfigInputError, match="not a valid parameter name"):
        gdpconfig_validate(key="NQUEUELIMIT_MC_16_SCORE**", value="1")
