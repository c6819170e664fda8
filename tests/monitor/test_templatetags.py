"""The filters the pages share: durations a person reads, factor values with units."""

from datetime import timedelta

import pytest

from monitor.templatetags.monitor import duration, factor, number


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (timedelta(hours=1, minutes=58, seconds=20, microseconds=960964), "1 h 58 min"),  # never microseconds
        (timedelta(days=2, hours=3, minutes=4), "2 d 3 h"),
        (timedelta(minutes=4, seconds=12), "4 min 12 s"),
        (timedelta(minutes=12, seconds=12), "12 min"),
        (timedelta(seconds=25), "25 s"),
        (timedelta(milliseconds=240), "240 ms"),  # a cycle's run time, not "0 minutes"
        (0.0371, "37 ms"),
        (timedelta(seconds=-90), "−1 min 30 s"),
        (None, "—"),
    ],
)
def test_duration_reads_like_a_person_writes(value, shown):
    assert duration(value) == shown


def test_factor_and_number_carry_units_and_grouping():
    assert factor(4795286.5938, "spaceFreeGB") == "4,795,286.6 GB"
    assert number(17818092) == "17,818,092"


def test_a_value_that_is_not_set_reads_as_a_dash_not_none():
    assert factor(None, "maxCoreCount") == "—"
    assert factor("", "capability") == "—"
    assert factor(None, "spaceFreeGB") == "—"  # no unit after nothing


def test_long_names_may_wrap_after_their_separators_and_stay_escaped():
    from monitor.templatetags.monitor import wrappable

    assert wrappable("mc23_13p6TeV.801023.pile") == "mc23_<wbr>13p6TeV.<wbr>801023.<wbr>pile"
    assert wrappable("DISK_THRESHOLD_<gshare>") == "DISK_<wbr>THRESHOLD_<wbr>&lt;gshare&gt;"
    assert wrappable("a'b") == "a&#x27;b"  # the entity is not split


def test_a_grid_wait_reads_in_grid_time_labelled_when_the_grid_runs_faster(settings):
    from datetime import timedelta

    from monitor.templatetags.monitor import grid_clock_note, grid_duration, grid_label

    settings.GRID_SIMULATOR = False
    assert grid_duration(timedelta(minutes=82)) == "1 h 22 min"
    assert grid_label() == ""
    assert grid_clock_note() == ""
    settings.GRID_SIMULATOR, settings.GRID_SIMULATOR_SPEED = True, 60
    # 1 min 22 s of the wall clock is 82 minutes of the grid's: the unit a throttle's "120 min" is in
    assert grid_duration(timedelta(minutes=1, seconds=22)) == "1 h 22 min of grid time"
    assert grid_label() == " of grid time"
    assert "60× faster" in grid_clock_note()


def test_a_hex_element_id_is_cut_with_its_whole_in_a_title():
    from monitor.templatetags.monitor import short_id

    assert short_id("b014160b29ef4d30b5ba766937b2750b") == (
        '<span title="b014160b29ef4d30b5ba766937b2750b">b014160b29ef…</span>'
    )
    assert short_id("CERN/MCORE") == "CERN/<wbr>MCORE"
