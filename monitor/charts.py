"""Plotly charts of the dashboard: each function takes plain rows and returns a figure; `figure_html` turns a
figure into a <div> for a template (Plotly's JavaScript comes once per page from our static files)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

LAYOUT = {"margin": {"l": 10, "r": 10, "t": 36, "b": 10}, "height": 320, "template": "plotly_white"}
CONFIG = {"displaylogo": False, "responsive": True}


def figure_html(figure: go.Figure, *, element_id: str) -> str:
    """The figure as an HTML fragment with a stable id, without the Plotly library itself."""
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id=element_id, config=CONFIG)


def _figure(title: str, **layout: Any) -> go.Figure:
    figure = go.Figure()
    figure.update_layout(title={"text": title, "font": {"size": 14}}, **{**LAYOUT, **layout})
    return figure


def funnel_chart(stages: Sequence[Mapping[str, Any]], *, initial: int, title: str = "Candidates through the filters"):
    """Candidates left after each filter that cut some (a decision's stages)."""
    names = ["considered"] + [stage["filter"] for stage in stages]
    values = [initial] + [stage["after"] for stage in stages]
    figure = _figure(title, height=max(220, 40 * len(names) + 60))
    figure.add_trace(go.Funnel(y=names, x=values, textinfo="value"))
    return figure


def weights_chart(candidates: Sequence[Mapping[str, Any]], *, chosen: str | None, limit: int = 15):
    """The best candidates' weights as stacked bars of their factors (each factor's share of the log weight
    when weights multiply factors; the bar's total is the weight)."""
    rows = list(candidates)[:limit]
    figure = _figure("Candidates' weights by factor", barmode="stack", height=max(240, 26 * len(rows) + 90))
    names = [("★ " if row["name"] == chosen else "") + row["name"] for row in rows]
    factors = sorted({factor for row in rows for factor in (row.get("factors") or {})})
    numeric = [f for f in factors if all(isinstance((r.get("factors") or {}).get(f, 0), int | float) for r in rows)]
    if not numeric:
        figure.add_trace(go.Bar(y=names, x=[row["weight"] for row in rows], orientation="h", name="weight"))
        return figure
    for factor in numeric:
        values = []
        for row in rows:
            row_factors = row.get("factors") or {}
            total = sum(abs(float(row_factors.get(f) or 0)) for f in numeric) or 1.0
            values.append(float(row["weight"]) * abs(float(row_factors.get(factor) or 0)) / total)
        figure.add_trace(go.Bar(y=names, x=values, orientation="h", name=factor))
    figure.update_yaxes(autorange="reversed")
    return figure


def reasons_chart(rows: Sequence[Mapping[str, Any]], *, title: str = "Skipped, by reason"):
    """How many candidates each reason removed (rows: code, title, count)."""
    rows = list(rows)
    figure = _figure(title, height=max(220, 28 * len(rows) + 80))
    figure.add_trace(
        go.Bar(y=[f"{r['title']} ({r['code']})" for r in rows], x=[r["count"] for r in rows], orientation="h")
    )
    figure.update_yaxes(autorange="reversed")
    return figure


def status_bar_chart(rows: Sequence[Mapping[str, Any]], *, title: str):
    """Counts by status (rows: status, count)."""
    rows = list(rows)
    figure = _figure(title)
    figure.add_trace(go.Bar(x=[r["status"] for r in rows], y=[r["count"] for r in rows]))
    return figure


def timeline_chart(rows: Sequence[Mapping[str, Any]], *, title: str, y: str = "count", series: str = "status"):
    """Lines over time (rows: time, series, y)."""
    figure = _figure(title)
    by_series: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_series.setdefault(str(row[series]), []).append(row)
    for name, points in sorted(by_series.items()):
        figure.add_trace(
            go.Scatter(x=[p["time"] for p in points], y=[p[y] for p in points], mode="lines+markers", name=name)
        )
    return figure


def share_sunburst(rows: Sequence[Mapping[str, Any]]):
    """The global share tree: sectors sized by normalised target, coloured by usage (executing / target)."""
    rows = list(rows)
    figure = _figure("Global shares: target (size) and usage (colour)", height=420)
    figure.add_trace(
        go.Sunburst(
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
                "colorbar": {"title": "usage"},
            },
            hovertemplate="%{label}<br>target %{value:.1f} %<br>usage %{color:.2f}<extra></extra>",
        )
    )
    return figure


def work_queue_shares_chart(rows: Sequence[Mapping[str, Any]]):
    """Each work queue's nominal share beside its effective share after the stretchable redistribution."""
    rows = list(rows)
    figure = _figure("Work-queue shares: nominal and effective", barmode="group")
    names = [r["name"] for r in rows]
    figure.add_trace(go.Bar(x=names, y=[r["share"] for r in rows], name="nominal %"))
    figure.add_trace(go.Bar(x=names, y=[r["effective"] for r in rows], name="effective %"))
    return figure


def timeouts_chart(rows: Sequence[Mapping[str, Any]]):
    """Jobs watched, approaching and timed out per rule (rows: rule, watched, approaching, timed_out)."""
    rows = list(rows)
    figure = _figure("Timeouts by rule", barmode="group")
    rules = [r["rule"] for r in rows]
    for key, label in (("watched", "watched"), ("approaching", "< 1 h left"), ("timed_out", "timed out")):
        figure.add_trace(go.Bar(x=rules, y=[r[key] for r in rows], name=label))
    return figure


def weight_history_chart(rows: Sequence[Mapping[str, Any]], *, queue: str):
    """A queue's weight and rank in recent decisions where it was a candidate (rows: time, weight)."""
    figure = _figure(f"{queue}: weight in recent decisions")
    figure.add_trace(
        go.Scatter(x=[r["time"] for r in rows], y=[r["weight"] for r in rows], mode="markers", name="weight")
    )
    return figure


def slot_use_chart(rows: Sequence[Mapping[str, Any]]):
    """Jobs counted at each agent's sites, stacked by priority, beside the site's threshold (rows: queue, site,
    threshold, by_priority [(priority, jobs)]): a bar above its marker is a site full for that priority and below."""
    rows = list(rows)
    labels = [f"{r['site']} · {r['queue']}" for r in rows]
    figure = _figure("Slot use per site, by priority", barmode="stack", height=max(260, 24 * len(rows) + 100))
    priorities = sorted({p for r in rows for p, _ in r["by_priority"]}, reverse=True)
    for priority in priorities:
        figure.add_trace(
            go.Bar(
                y=labels,
                x=[dict(r["by_priority"]).get(priority, 0) for r in rows],
                orientation="h",
                name=f"priority {priority:g}",
            )
        )
    figure.add_trace(
        go.Scatter(
            y=labels,
            x=[r["threshold"] for r in rows],
            mode="markers",
            marker={"symbol": "line-ns-open", "size": 18, "color": "black"},
            name="threshold",
        )
    )
    figure.update_yaxes(autorange="reversed")
    return figure
