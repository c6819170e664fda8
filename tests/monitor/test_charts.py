"""Charts a shifter reads at a glance (issue 35, finding 3): worked figures of the chart functions — status
colours, dots on a log scale, a single point with its time, few count ticks, legends beside the plot."""

from datetime import UTC, datetime

from monitor import charts


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
    assert figure["data"][0]["marker"]["color"] == [charts.GOOD, charts.BAD, charts.NEUTRAL]
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
    assert dots["data"][0]["marker"]["color"] == [charts.GOOD, charts.ACCENT]
    assert dots["data"][0]["y"] == ["★ A", "B"]
    assert dots["layout"]["xaxis"]["title"]["text"] == "weight"  # short enough never to be cut
    bars = charts.figure_json(charts.weights_chart([*rows, {"name": "C", "weight": 0.0}], chosen=None))
    assert bars["data"][0]["type"] == "bar"
    assert bars["layout"]["xaxis"]["type"] == "linear"


def test_a_series_of_one_point_is_a_dot_with_its_time():
    at = datetime(2026, 11, 27, 14, 0, tzinfo=UTC)
    figure = charts.figure_json(
        charts.timeline_chart(
            [{"time": at, "status": "failed", "count": 4}],
            title="Job state changes per hour",
        )
    )
    trace = figure["data"][0]
    assert trace["mode"] == "markers+text"
    assert trace["text"] == ["14:00"]
    assert trace["marker"]["color"] == charts.BAD
    assert figure["layout"]["xaxis"]["range"] == ["2026-11-27T13:00:00+00:00", "2026-11-27T15:00:00+00:00"]


def test_count_axes_have_few_whole_ticks():
    assert charts.count_axis("jobs", [3])["dtick"] == 1
    assert charts.count_axis("jobs", [9])["dtick"] == 2  # 0, 2, 4, … never eleven crowded ticks
    wide = charts.count_axis("jobs", [120_000])
    assert wide["nticks"] == 6
    assert "dtick" not in wide


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
