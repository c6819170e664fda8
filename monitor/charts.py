"""Plotly charts of the dashboard: each function takes plain rows and returns a figure; `figure_html` turns a
figure into an empty box and its JSON, which static/js/monitor.js draws once the page is laid out, at the width
of its box, and redraws when the box changes size (Plotly's own inline script drew at full page width while the
page was still loading, so a funnel in a narrow column covered its neighbours).

A figure is plain data in Plotly's schema (`Figure`), not plotly.graph_objects: the browser's plotly.js validates
it, and building it through graph_objects cost 20–25 ms a chart (validation and a deep copy of the template) —
half the task page's server time (`manage.py bench pages`).

Every chart says what its axes are, with units; counts get whole-number ticks from zero; times read as
hours and dates; an empty chart is never drawn (`empty_chart_html` says "nothing yet" instead)."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from plotly.utils import PlotlyJSONEncoder

from monitor.status_colours import STATUS_COLOURS, status_colour

HEIGHT = 320
# The look of Plotly's "plotly_white" template, the few keys our charts use.
_AXIS_LOOK = {
    "gridcolor": "#EBF0F8",
    "linecolor": "#EBF0F8",
    "zerolinecolor": "#EBF0F8",
    "zerolinewidth": 2,
    "ticks": "",
    "automargin": True,
    "title": {"standoff": 15},
}
LAYOUT = {
    "margin": {"l": 10, "r": 10, "t": 36, "b": 10},
    "height": HEIGHT,
    "autosize": True,
    # beside the plot, never over an axis title (a horizontal legend below collided with the x-axis title)
    "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"},
    "paper_bgcolor": "white",
    "plot_bgcolor": "white",
    "font": {"color": "#2a3f5f"},
    "hovermode": "closest",
    "hoverlabel": {"align": "left"},
    "colorway": ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880"],
    "xaxis": _AXIS_LOOK,
    "yaxis": _AXIS_LOOK,
}
CONFIG = {"displaylogo": False, "responsive": True}
TIME_AXIS = {
    "type": "date",
    "tickformat": "%H:%M\n%b %d",
    # seconds when ticks are closer than a minute (never "17:59, 17:59"), dates alone beyond a day
    "tickformatstops": [
        {"dtickrange": [None, 60_000], "value": "%H:%M:%S"},
        {"dtickrange": [60_000, 86_400_000], "value": "%H:%M\n%b %d"},
        {"dtickrange": [86_400_000, None], "value": "%b %d"},
    ],
    "hoverformat": "%Y-%m-%d %H:%M:%S",
    "nticks": 8,
    # a little lower than Plotly puts them: the first time under the y-axis's "0" overlapped it
    "ticklabelstandoff": 8,
}
TIME_TITLE = "time (UTC)"
# Colours of what is not a status (the chosen candidate, before and after); statuses have one each, the badges'
# too: monitor/status_colours.py.
GOOD, BAD, WARN, NEUTRAL, ACCENT = "#1e7b34", "#b3261e", "#9a6700", "#8391a7", "#1f5fa8"


def _merge(into: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Deep update, as Plotly's update_layout: nested dicts merge, anything else replaces."""
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value) if isinstance(value, Mapping | list) else value
    return into


class Figure:
    """A Plotly figure as plain data: traces (dicts with their `type`) and a layout."""

    def __init__(self, **layout: Any) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout: dict[str, Any] = _merge({}, {**LAYOUT, **layout})

    def add_trace(self, trace_type: str, **trace: Any) -> None:
        self.data.append({"type": trace_type, **trace})

    def update_layout(self, **layout: Any) -> None:
        _merge(self.layout, layout)

    def update_xaxes(self, axis: Mapping[str, Any] | None = None, **more: Any) -> None:
        _merge(self.layout.setdefault("xaxis", {}), {**(axis or {}), **more})

    def update_yaxes(self, axis: Mapping[str, Any] | None = None, **more: Any) -> None:
        _merge(self.layout.setdefault("yaxis", {}), {**(axis or {}), **more})

    def to_json(self) -> str:
        # PlotlyJSONEncoder writes datetimes, dates, decimals and numpy values as plotly.js reads them
        return json.dumps({"data": self.data, "layout": self.layout}, cls=PlotlyJSONEncoder)


def figure_html(figure: Figure, *, element_id: str) -> SafeString:
    """An empty box with a stable id and the figure as JSON beside it (no Plotly library, no inline code)."""
    payload = figure.to_json().replace("</", "<\\/")  # a name holding "</script>" cannot end the block
    height = int(figure.layout.get("height") or HEIGHT)
    return mark_safe(  # the id is ours, the JSON is escaped above
        f'<div class="chart" id="{escape(element_id)}" data-figure="{escape(element_id)}-figure" '
        f'style="min-height:{height}px"></div>'
        f'<script type="application/json" id="{escape(element_id)}-figure">{payload}</script>'
    )


def empty_chart_html(message: str) -> SafeString:
    """What stands where a chart would be drawn when there is nothing to draw."""
    return mark_safe(f'<p class="empty chart-empty">{escape(message)}</p>')


def _figure(title: str, **layout: Any) -> Figure:
    return Figure(title={"text": title, "font": {"size": 14}, "x": 0.05}, **layout)


def count_axis(title: str, values: Sequence[float] = ()) -> dict[str, Any]:
    """An axis of counts: from zero, whole numbers only (no 0.5 job), thousands separated."""
    high = max((float(v) for v in values if v is not None), default=0.0)
    # at most six ticks: in a third of a 1024-px page more crushed "1,000" into "2,000"
    axis: dict[str, Any] = {"title": {"text": title}, "rangemode": "tozero", "tickformat": ",d", "nticks": 6}
    if high <= 10:  # Plotly would put ticks at halves
        axis.update({"dtick": 1 if high <= 5 else 2, "range": [0, max(high, 1) * 1.05]})
    return axis


LABEL_LINE = 22  # characters of a category name per line on a chart's vertical axis


def wrapped_label(text: str, line: int = LABEL_LINE) -> str:
    """A long name on a vertical axis in lines of about `line` characters, broken at spaces: in a third of a page
    one long reason on one line left the plot a few pixels, its count ticks on top of each other."""
    words, lines = str(text).split(" "), [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > line:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return "<br>".join(lines)


def _bars_height(labels: Sequence[str]) -> int:
    """Room for each horizontal bar's label, however many lines it wraps to: 18 px a line and 12 between bars."""
    return max(220, sum(18 * (label.count("<br>") + 1) + 12 for label in labels) + 110)


def _category_axis(title: str) -> dict[str, Any]:
    return {"title": {"text": title}, "automargin": True, "type": "category"}


def funnel_chart(stages: Sequence[Mapping[str, Any]], *, initial: int, title: str = "Candidates through the filters"):
    """Candidates left after each filter that removed some (a decision's stages); filters that removed nobody
    are left out, they say nothing about this decision."""
    cutting = [stage for stage in stages if stage["before"] != stage["after"]]
    names = ["considered"] + [stage["filter"] for stage in cutting]
    values = [initial] + [stage["after"] for stage in cutting]
    figure = _figure(title, height=max(220, 36 * len(names) + 90))
    figure.add_trace("funnel", y=names, x=values, textinfo="value", hovertemplate="%{y}: %{x:,d} left<extra></extra>")
    figure.update_yaxes(title={"text": "filter"}, automargin=True)
    figure.update_xaxes(title={"text": "candidates left"})
    return figure


def weights_chart(candidates: Sequence[Mapping[str, Any]], *, chosen: str | None, limit: int = 15):
    """The best candidates' weights. When every weight is positive, dots on a log scale (weights are products of
    factors, so their ratios are what matter; bars on a log axis start nowhere and make 6,298 look a tenth of
    8,549); otherwise bars from zero. The factors, with units, are in each point's hover and the table beside."""
    rows = [row for row in list(candidates)[:limit] if isinstance(row.get("weight"), int | float)]
    positive = [float(row["weight"]) for row in rows if float(row["weight"]) > 0]
    # a log axis over less than a decade labels its minor ticks (3000, 3200 …) until they overprint: dots on a
    # linear axis then, which show such ratios as well
    log = bool(positive) and len(positive) == len(rows) and max(positive) >= 10 * min(positive)
    dots = bool(positive) and len(positive) == len(rows)
    figure = _figure("Candidates' weights" + (" (log scale)" if log else ""), height=max(240, 26 * len(rows) + 110))
    names = [("★ " if row["name"] == chosen else "") + row["name"] for row in rows]
    colours = [GOOD if row["name"] == chosen else ACCENT for row in rows]
    common = {
        "y": names,
        "x": [float(row["weight"]) for row in rows],
        "customdata": [factors_text(row.get("factors") or {}) for row in rows],
        "hovertemplate": "%{y}<br>weight %{x:.4g}<br>%{customdata}<extra></extra>",
        "showlegend": False,
    }
    if dots:
        figure.add_trace("scatter", mode="markers", marker={"color": colours, "size": 11}, **common)
    else:
        figure.add_trace("bar", orientation="h", marker={"color": colours}, **common)
    figure.update_yaxes(_category_axis("candidate"), autorange="reversed")
    if log:
        # one label per decade (1, 10, 100 …): Plotly's default labels the 2s and 5s between, "5 10 2 5 100 2"
        figure.update_xaxes(title={"text": "weight"}, type="log", dtick=1, tickformat="~g")
    else:
        figure.update_xaxes(title={"text": "weight"}, type="linear", nticks=6)
    return figure


# Units of the factors the plugins put in their traces, by the end of their names (longest first).
FACTOR_UNITS = (
    ("GB", "GB"),
    ("MB", "MB"),
    ("Hours", "h"),
    ("Percent", "%"),
)


def format_number(value: Any) -> str:
    """A factor's value the way a person reads it: 4,795,286.6 not 4795286.5938; 0.00123 not 0.0012300000."""
    if value is None or value == "":
        return "—"  # not set (an empty CRIC field, a limit the queue does not have)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.1f}"
    if magnitude >= 1:
        return f"{value:,.3g}" if magnitude < 100 else f"{value:,.1f}"
    return f"{value:.3g}"


def factor_unit(name: str) -> str:
    for suffix, unit in FACTOR_UNITS:
        if name.endswith(suffix):
            return unit
    return ""


def format_factor(name: str, value: Any) -> str:
    if value is None or value == "":
        return "—"
    unit = factor_unit(name)
    return f"{format_number(value)} {unit}".rstrip() if unit else format_number(value)


def factors_text(factors: Mapping[str, Any]) -> str:
    return "<br>".join(f"{escape(name)} = {escape(format_factor(name, value))}" for name, value in factors.items())


def reasons_chart(rows: Sequence[Mapping[str, Any]], *, title: str = "Skipped, by reason", unit: str = "candidates"):
    """How many candidates each reason removed (rows: code, title, count)."""
    rows = list(rows)
    counts = [r["count"] for r in rows]
    labels = [wrapped_label(f"{r['title']} ({r['code']})") for r in rows]
    figure = _figure(title, height=_bars_height(labels))
    figure.add_trace(
        "bar",
        y=labels,
        x=counts,
        orientation="h",
        hovertemplate="%{y}: %{x:,d}<extra></extra>",
    )
    figure.update_yaxes(_category_axis("reason"), autorange="reversed")
    figure.update_xaxes(count_axis(unit, counts))
    return figure


def status_bar_chart(rows: Sequence[Mapping[str, Any]], *, title: str, unit: str = "count"):
    """Counts by status (rows: status, count)."""
    rows = list(rows)
    counts = [r["count"] for r in rows]
    figure = _figure(title)
    figure.add_trace(
        "bar",
        x=[r["status"] for r in rows],
        y=counts,
        marker={"color": [status_colour(r["status"]) for r in rows]},
        hovertemplate="%{x}: %{y:,d}<extra></extra>",
    )
    figure.update_xaxes(_category_axis("status"))
    figure.update_yaxes(count_axis(unit, counts))
    return figure


def short_name(name: str, length: int = 24) -> str:
    """A long identifier (a WMCore element's 32-hex id) cut for an axis; the whole of it stays in the hover."""
    return name if len(name) <= length else name[: length - 1] + "…"


def assignments_chart(rows: Sequence[Mapping[str, Any]], *, kind: str = "queue or nucleus", limit: int = 25):
    """Decisions per target of one kind chosen before and after a what-if (rows: target, before, after), the
    targets that moved most first. Horizontal: names on the vertical axis never overlap, however many."""
    rows = sorted(rows, key=lambda r: (-abs(r["after"] - r["before"]), -max(r["before"], r["after"]), r["target"]))
    rows = rows[:limit]
    figure = _figure(
        f"Each {kind} chosen, before and after the change", barmode="group", height=max(240, 34 * len(rows) + 110)
    )
    names = [short_name(r["target"]) for r in rows]
    for label, key, colour in (("stored", "before", NEUTRAL), ("with the change", "after", ACCENT)):
        figure.add_trace(
            "bar",
            name=label,
            y=names,
            x=[r[key] for r in rows],
            orientation="h",
            marker={"color": colour},
            customdata=[r["target"] for r in rows],
            hovertemplate="%{customdata}: %{x:,d}<extra>" + label + "</extra>",
        )
    figure.update_yaxes(_category_axis(f"{kind} chosen"), autorange="reversed")
    figure.update_xaxes(count_axis("decisions", [max(r["before"], r["after"]) for r in rows]))
    return figure


def timeline_chart(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    y: str = "count",
    series: str = "status",
    y_title: str = "count",
    counts: bool = True,
):
    """Lines over time (rows: time, series, y); `counts` gives whole-number ticks from zero."""
    figure = _figure(title)
    by_series: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_series.setdefault(str(row[series]), []).append(row)
    for name, points in sorted(by_series.items()):
        trace: dict[str, Any] = {"x": [p["time"] for p in points], "y": [p[y] for p in points], "name": name}
        if series == "status" and name in STATUS_COLOURS:  # a share's or a rule's name takes Plotly's colourway
            trace["marker"] = {"color": status_colour(name)}
            trace["line"] = {"color": status_colour(name)}
        if len(points) == 1 and isinstance(points[0]["time"], datetime):
            # one point (the first hour of data): a dot, not a line to nowhere; its time is on the axis (a label
            # beside each series' dot wrote "11:00" over itself once per status, issue 50)
            trace["mode"] = "markers"
        else:
            trace["mode"] = "lines+markers"
        figure.add_trace("scatter", **trace)
    figure.update_xaxes(title={"text": TIME_TITLE}, **TIME_AXIS)
    times = {row["time"] for row in rows if isinstance(row["time"], datetime)}
    if len(times) == 1:  # one point in time (the first hour of data): an hour either side, not ±1 minute
        (only,) = times
        figure.update_xaxes(range=[only - timedelta(hours=1), only + timedelta(hours=1)])
    if counts:
        figure.update_yaxes(count_axis(y_title, [row[y] for row in rows]))
    else:
        figure.update_yaxes(title={"text": y_title}, rangemode="tozero")
    return figure


def share_sunburst(rows: Sequence[Mapping[str, Any]]):
    """The global share tree: sectors sized by normalised target, coloured by usage (executing / target)."""
    rows = list(rows)
    figure = _figure("Global shares: target (size) and usage (colour)", height=420)
    figure.add_trace(
        "sunburst",
        ids=[r["name"] for r in rows],
        labels=[r["name"] for r in rows],
        parents=[r["parent"] or "" for r in rows],
        values=[r["normalised"] for r in rows],
        branchvalues="total",
        marker={
            "colors": [r["usage"] if r["usage"] is not None else 0 for r in rows],
            "colorscale": "RdYlGn_r",
            "cmin": 0,
            "cmax": 2,
            "colorbar": {"title": {"text": "usage (executing ÷ target)"}},
        },
        hovertemplate="%{label}<br>target %{value:.1f} %<br>usage %{color:.2f}<extra></extra>",
    )
    return figure


def work_queue_shares_chart(rows: Sequence[Mapping[str, Any]]):
    """Each work queue's nominal share beside its effective share after the stretchable redistribution
    (horizontal: work-queue names never overlap)."""
    rows = list(rows)
    figure = _figure("Work-queue shares: nominal and effective", barmode="group", height=max(240, 30 * len(rows) + 110))
    names = [r["name"] for r in rows]
    for label, key, colour in (("nominal", "share", NEUTRAL), ("effective", "effective", ACCENT)):
        figure.add_trace(
            "bar", y=names, x=[r[key] for r in rows], name=label, orientation="h", marker={"color": colour}
        )
    figure.update_yaxes(_category_axis("work queue"), autorange="reversed")
    figure.update_xaxes(title={"text": "share (%)"}, rangemode="tozero", nticks=6)
    return figure


def timeouts_chart(rows: Sequence[Mapping[str, Any]]):
    """Jobs watched, approaching and timed out per rule (rows: rule, watched, approaching, timed_out)."""
    rows = list(rows)
    # the rules down the side, as many as there are statuses watched: side by side their names overlapped once a
    # queue held jobs in holding and transferring too
    rules = [wrapped_label(r["rule"].replace("_", " ")) for r in rows]
    figure = _figure("Timeouts by rule", barmode="group", height=max(220, 3 * _bars_height(rules) // 2 - 110))
    values = []
    for key, label in (("watched", "watched"), ("approaching", "< 1 h left"), ("timed_out", "timed out")):
        values += [r[key] for r in rows]
        figure.add_trace("bar", orientation="h", y=rules, x=[r[key] for r in rows], name=label)
    figure.update_yaxes(_category_axis("timeout rule"), autorange="reversed")
    figure.update_xaxes(count_axis("jobs", values))
    return figure


DISTRIBUTION_TICK_STANDOFF_PX = 8


DISTRIBUTION_BINS = 30  # about as many bars as a third of a page shows apart


def histogram_bins(values: Sequence[float], *, target: int = DISTRIBUTION_BINS) -> tuple[float, float]:
    """(start, size) of about `target` bins over the values, the size a round 1, 2 or 5 × 10^k as Plotly picks its
    own: a round start and size keep the value labels round."""
    low, high = min(values), max(values)
    step = (high - low) / target if high > low else max(abs(low) / 10, 1.0)
    magnitude = 10 ** math.floor(math.log10(step))
    size = next(m * magnitude for m in (1, 2, 5, 10) if step <= m * magnitude * (1 + 1e-9))
    return math.floor(low / size) * size, size


def distribution_chart(rows: Sequence[Mapping[str, Any]], *, title: str, unit: str):
    """How values spread (rows: status, value), one overlaid histogram per status in its colour (a task's job
    durations or memory, BigPanDA's task page). The bins are ours, the same for every status, so the count axis is
    sized to the tallest bar: sized blind, a few jobs of one duration drew a bar of 3 cut at 1.05."""
    figure = _figure(title, barmode="overlay")
    by_status: dict[str, list[float]] = {}
    for row in rows:
        by_status.setdefault(str(row["status"]), []).append(float(row["value"]))
    tallest, bins = 0, None
    if by_status:
        start, size = histogram_bins([value for values in by_status.values() for value in values])
        tallest = max(
            # a hair over the edge: 0.3 / 0.1 is 2.999…, in the bar that starts at 0.3 as Plotly draws it
            max(Counter(math.floor((value - start) / size + 1e-9) for value in values).values())
            for values in by_status.values()
        )
        top = max(value for values in by_status.values() for value in values)
        bins = {"start": start, "end": start + (math.floor((top - start) / size + 1e-9) + 1) * size, "size": size}
    for status, values in sorted(by_status.items()):
        figure.add_trace(
            "histogram",
            x=values,
            name=status,
            opacity=0.7,
            xbins=bins,
            marker={"color": status_colour(status)},
            hovertemplate="%{x}: %{y:,d} jobs<extra>" + status + "</extra>",
        )
    # durations and memory are never below zero: jobs that all took the same (a minute, rounded) drew one bar
    # centred on 0 with half the axis negative
    figure.update_xaxes(title={"text": unit}, rangemode="nonnegative")
    # the value labels a little below the axis: a range starting at a round value (the first bar at 1,400 MB, or
    # 0.015 hours) put its label in the corner, over the count axis's 0
    figure.update_xaxes(ticklabelstandoff=DISTRIBUTION_TICK_STANDOFF_PX)
    figure.update_yaxes(count_axis("jobs", [tallest]))
    return figure


def weight_history_chart(rows: Sequence[Mapping[str, Any]], *, queue: str):
    """A queue's weight in recent decisions where it was a candidate (rows: time, weight)."""
    figure = _figure(f"{queue}: weight in recent decisions")
    figure.add_trace(
        "scatter", x=[r["time"] for r in rows], y=[r["weight"] for r in rows], mode="markers", name="weight"
    )
    figure.update_xaxes(title={"text": TIME_TITLE}, **TIME_AXIS)
    figure.update_yaxes(title={"text": "weight"}, rangemode="tozero")
    return figure


def slot_use_chart(rows: Sequence[Mapping[str, Any]]):
    """Jobs counted at each agent's sites, stacked by priority, beside the site's threshold (rows: queue, site,
    threshold, by_priority [(priority, jobs)]): a bar above its marker is a site full for that priority and below."""
    rows = list(rows)
    labels = [f"{r['site']} · {r['queue']}" for r in rows]
    figure = _figure("Slot use per site, by priority", barmode="stack", height=max(260, 24 * len(rows) + 130))
    priorities = sorted({p for r in rows for p, _ in r["by_priority"]}, reverse=True)
    for priority in priorities:
        figure.add_trace(
            "bar",
            y=labels,
            x=[dict(r["by_priority"]).get(priority, 0) for r in rows],
            orientation="h",
            name=f"priority {priority:g}",
        )
    figure.add_trace(
        "scatter",
        y=labels,
        x=[r["threshold"] for r in rows],
        mode="markers",
        marker={"symbol": "line-ns-open", "size": 18, "color": "black"},
        name="threshold",
    )
    figure.update_yaxes(_category_axis("site · agent"), autorange="reversed")
    figure.update_xaxes(count_axis("jobs", [r["threshold"] for r in rows] + [r.get("jobs", 0) for r in rows]))
    return figure


def error_chart(rows: Sequence[Mapping[str, Any]], *, title: str = "Failed and closed jobs by error"):
    """Failed jobs per error (rows: label, count), most frequent first."""
    rows = list(rows)
    counts = [r["count"] for r in rows]
    labels = [wrapped_label(r["label"]) for r in rows]
    figure = _figure(title, height=_bars_height(labels))
    figure.add_trace("bar", y=labels, x=counts, orientation="h")
    figure.update_yaxes(_category_axis("error"), autorange="reversed")
    figure.update_xaxes(count_axis("jobs", counts))
    return figure


def figure_json(figure: Figure) -> dict[str, Any]:
    """The figure as plain data (for tests and the API)."""
    return json.loads(figure.to_json())
