"""Replaying under another profile (issue 34): a cycle records every resolved value; the values its profile gave
by itself go to the new profile, the values an admin set stay."""

from brokerage.gdpconfig import ConfigView
from brokerage.selectors.inputs import gdpconfig_with


def test_another_profile_takes_the_profile_values_and_keeps_the_admin_ones():
    # a seed cycle's record: TASK_INPUT_COPY_REQUIRED false is the seed's own value; NQUEUED_SAT_CAP 500 was set
    # by an admin (the default is 150)
    recorded = {"TASK_INPUT_COPY_REQUIRED": False, "NQUEUED_SAT_CAP": 500, "PROFILE": "seed"}
    under_panda = gdpconfig_with(recorded, profile="panda", overrides={})
    assert under_panda == {"NQUEUED_SAT_CAP": 500, "PROFILE": "panda"}
    view = ConfigView.from_flat(under_panda)
    assert view.get("TASK_INPUT_COPY_REQUIRED") is True  # panda-server 1.0.4's rule
    assert view.get("NQUEUED_SAT_CAP") == 500


def test_overrides_go_over_the_record_and_the_same_profile_changes_nothing():
    recorded = {"TASK_INPUT_COPY_REQUIRED": False, "NQUEUED_SAT_CAP": 500, "PROFILE": "seed"}
    assert gdpconfig_with(recorded, profile="seed", overrides={"NQUEUED_SAT_CAP": 100}) == {
        "TASK_INPUT_COPY_REQUIRED": False,
        "NQUEUED_SAT_CAP": 100,
        "PROFILE": "seed",
    }
    assert gdpconfig_with(recorded, profile=None, overrides={}) == recorded
