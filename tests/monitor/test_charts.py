"""Charts a shifter reads at a glance (issue 35, finding 3): worked figures of the chart functions — status
colours, dots on a log scale, a single point with its time, few count ticks, legends beside the plot."""

from datetime import UTC, datetime

import pytest

from monitor import charts
from monitor.status_colours import GROUPS, NEUTRAL, STATUS_COLOURS, status_colour, status_css


def test_status_bars_take_the_pages_status_colours():
    figure = charts.figure_json(
        charts.status_bar_chart(
            [
                {"status": "running", "count": 8549},
                {"status": "failed", "count": 6298},
                {"status": "defined", "count": 3},
            ],
            title="Jobs",
        )
    )
    assert figure["data"][0]["marker"]["color"] == ["#0d9488", "#b91c1c", "#475569"]
    assert figure["data"][0]["marker"]["color"] == [status_colour(s) for s in ("running", "failed", "defined")]
    assert figure["layout"]["yaxis"]["rangemode"] == "tozero"  # bars from zero: 6,298 is three quarters of 8,549


def test_weights_on_a_log_scale_are_dots_and_bars_only_from_zero():
    rows = [
        {"name": "A", "weight": 8549.0, "factors": {"nRunning": 10}},
        {"name": "B", "weight": 6298.0, "factors": {}},
    ]
    dots = charts.figure_json(charts.weights_chart(rows, chosen="A"))
    assert dots["data"][0]["type"] == "scatter"
    assert dots["data"][0]["mode"] == "markers"
    # 8,549 and 6,298 are within a decade: a linear axis (a log one would label 7000, 8000 … over each other)
    assert dots["layout"]["xaxis"]["type"] == "linear"
    wide = charts.figure_json(charts.weights_chart([*rows, {"name": "W", "weight": 12.0}], chosen="A"))
    assert wide["layout"]["xaxis"]["type"] == "log"  # 12 to 8,549: the log scale shows the ratios
    # one label a decade, never Plotly's 2s and 5s between ("5 10 2 5 100 2", issue 50)
    assert (wide["layout"]["xaxis"]["dtick"], wide["layout"]["xaxis"]["tickformat"]) == (1, "~g")
    assert dots["data"][0]["marker"]["color"] == [charts.GOOD, charts.ACCENT]
    assert dots["data"][0]["y"] == ["★ A", "B"]
    assert dots["layout"]["xaxis"]["title"]["text"] == "weight"  # short enough never to be cut
    bars = charts.figure_json(charts.weights_chart([*rows, {"name": "C", "weight": 0.0}], chosen=None))
    assert bars["data"][0]["type"] == "bar"
    assert bars["layout"]["xaxis"]["type"] == "linear"


def test_a_series_of_one_point_is_a_dot_its_time_on_the_axis():
    at = datetime(2026, 11, 27, 14, 0, tzinfo=UTC)
    figure = charts.figure_json(
        charts.timeline_chart(
            [{"time": at, "status": "failed", "count": 4}],
            title="Job state changes per hour",
        )
    )
    trace = figure["data"][0]
    # no "14:00" written beside the dot: with a dot per status they overprinted each other (issue 50)
    assert trace["mode"] == "markers"
    assert "text" not in trace
    assert trace["marker"]["color"] == status_colour("failed")
    assert figure["layout"]["xaxis"]["range"] == ["2026-11-27T13:00:00+00:00", "2026-11-27T15:00:00+00:00"]


def test_count_axes_have_few_whole_ticks():
    assert charts.count_axis("jobs", [3])["dtick"] == 1
    assert charts.count_axis("jobs", [9])["dtick"] == 2  # 0, 2, 4, … never eleven crowded ticks
    wide = charts.count_axis("jobs", [120_000])
    assert wide["nticks"] == 6
    assert "dtick" not in wide


def test_a_distribution_of_durations_never_shows_negative_hours():
    rows = [{"status": "finished", "value": 0.0}, {"status": "finished", "value": 0.0}]
    figure = charts.figure_json(charts.distribution_chart(rows, title="How long its jobs ran", unit="hours"))
    assert figure["layout"]["xaxis"]["rangemode"] == "nonnegative"
    # its value labels stand below the axis, clear of the count axis's 0 (tests/monitor/test_browser.py draws it)
    assert figure["layout"]["xaxis"]["ticklabelstandoff"] == charts.DISTRIBUTION_TICK_STANDOFF_PX


def test_a_distribution_s_count_axis_holds_its_tallest_bar():
    # 1,400 to 2,000 MB over about 30 bins: 20 MB bins from 1,400; three finished jobs at 1,400 MB are one bar of 3,
    # which the count axis (0 to 3.15, a tick a job) holds whole — sized blind it stopped at 1.05
    rows = [{"status": "finished", "value": v} for v in (1400, 1400, 1400, 2000)]
    rows.append({"status": "failed", "value": 1400})
    figure = charts.figure_json(charts.distribution_chart(rows, title="Memory its jobs used", unit="MB"))
    assert [trace["xbins"] for trace in figure["data"]] == [{"start": 1400, "end": 2020, "size": 20}] * 2
    assert figure["layout"]["yaxis"]["range"] == [0, pytest.approx(3.15)]
    assert figure["layout"]["yaxis"]["dtick"] == 1
    assert charts.histogram_bins([0.0, 0.3]) == (0.0, 0.01)
    assert charts.histogram_bins([5.0, 5.0]) == (5.0, 1.0)  # one value: one bar of a round width


def test_legends_stand_beside_the_plot():
    figure = charts.figure_json(charts.timeouts_chart([{"rule": "r", "watched": 1, "approaching": 0, "timed_out": 0}]))
    assert figure["layout"]["legend"]["orientation"] == "v"
    assert figure["layout"]["legend"]["x"] > 1


def test_long_names_on_a_vertical_axis_wrap_at_spaces():
    # a reason's title and code on one line left a third-of-a-page chart a few pixels of plot (make run, 1440 px)
    assert charts.wrapped_label("memory too small (lowmemory)") == "memory too small<br>(lowmemory)"
    assert charts.wrapped_label("io") == "io"
    figure = charts.figure_json(charts.reasons_chart([{"code": "lowmemory", "title": "memory too small", "count": 5}]))
    assert figure["data"][0]["y"] == ["memory too small<br>(lowmemory)"]
    figure = charts.figure_json(charts.error_chart([{"label": "pilot:1305 Failed to execute payload", "count": 2}]))
    assert figure["data"][0]["y"] == ["pilot:1305 Failed to<br>execute payload"]


def test_every_status_has_its_own_colour_within_what_a_chart_shows_together():
    # issue 50: finished and running both green; assigned, finished, running one green; activated, starting one blue
    for group, statuses in GROUPS.items():
        colours = [status_colour(status) for status in statuses]
        assert len(set(colours)) == len(colours), group
        assert NEUTRAL not in colours, group  # every status of every machine has a colour of its own
    assert status_colour("finished") != status_colour("running")
    assert status_colour("Running") == status_colour("running")  # DIRAC's and WMCore's namesakes: PanDA's colour
    assert status_colour("no such status") == NEUTRAL


def test_the_badges_stylesheet_is_written_from_the_table():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "static" / "css" / "status-colours.css"
    assert path.read_text() == status_css(), "run monitor.status_colours.status_css() into the file"
    assert f".status-finished {{ border-left-color: {STATUS_COLOURS['finished']};" in status_css()
