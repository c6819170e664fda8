"""Dashboard pages. Views stay thin: read the query string, call one selector, draw the charts, render."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from brokerage.engine import ScenarioError
from brokerage.gdpconfig import REGISTRY, GdpConfigError
from brokerage.selectors.monitor import (
    decision_explorer,
    dirac_overview,
    gdpconfig_overview,
    queue_detail,
    shares_overview,
    task_detail,
    task_filter_choices,
    task_list,
    timeouts_overview,
)
from brokerage.selectors.overview import database_overview
from brokerage.selectors.preview import PreviewUnavailable, broker_preview_task
from brokerage.selectors.wmcore import wmcore_overview

from . import charts

# Pages showing live state reload themselves this often (seconds); ?refresh=0 turns it off.
REFRESH_SECONDS = 60


def _page_number(request: HttpRequest) -> int:
    value = request.GET.get("page", "1")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def _refresh(request: HttpRequest) -> int:
    return 0 if request.GET.get("refresh") == "0" else REFRESH_SECONDS


def _chart(rows, make, element_id: str) -> str:
    """The figure `make()` draws, as HTML, when there are rows to draw; nothing otherwise."""
    return charts.figure_html(make(), element_id=element_id) if rows else ""


def _query_without(request: HttpRequest, *keys: str) -> str:
    """The current query string minus `keys` (for sort and page links that keep the filters)."""
    query = request.GET.copy()
    for key in keys:
        query.pop(key, None)
    return query.urlencode()


@require_safe
def overview(request: HttpRequest) -> HttpResponse:
    """The home page: what is in the database, by entity and by status."""
    return render(request, "monitor/overview.html", {"overview": database_overview(), "refresh": _refresh(request)})


@require_safe
def tasks(request: HttpRequest) -> HttpResponse:
    listing = task_list(
        filters=request.GET.dict(),
        sort=request.GET.get("sort", "-modified"),
        page=_page_number(request),
        now=timezone.now(),
    )
    chart = charts.status_bar_chart(
        [{"status": status, "count": count} for status, count in listing.counts_by_status], title="Tasks by status"
    )
    return render(
        request,
        "monitor/tasks.html",
        {
            "listing": listing,
            "choices": task_filter_choices(),
            "status_chart": charts.figure_html(chart, element_id="tasks-by-status") if listing.total else "",
            "keep_filters": _query_without(request, "page", "sort"),
            "keep_sort": _query_without(request, "page"),
            "refresh": _refresh(request),
        },
    )


@require_safe
def task(request: HttpRequest, task_id: int) -> HttpResponse:
    decision = request.GET.get("decision", "")
    detail = task_detail(task_id=task_id, now=timezone.now(), decision_id=int(decision) if decision.isdigit() else None)
    if detail is None:
        raise Http404(f"No task {task_id}.")
    panels = []
    for panel in [detail["selected"]] if detail["selected"] else detail["panels"]:
        decision_row, trace = panel["decision"], panel["trace"]
        key = f"{decision_row.plugin}-{decision_row.pk}"
        panels.append(
            {
                **panel,
                "funnel": charts.figure_html(
                    charts.funnel_chart(trace["stages"], initial=decision_row.n_candidates), element_id=f"funnel-{key}"
                ),
                "weights": charts.figure_html(
                    charts.weights_chart(trace["candidates"], chosen=decision_row.chosen), element_id=f"weights-{key}"
                )
                if trace["candidates"]
                else "",
                "reasons": charts.figure_html(charts.reasons_chart(trace["by_reason"]), element_id=f"reasons-{key}")
                if trace["by_reason"]
                else "",
            }
        )
    jobs_chart = _chart(
        detail["jobs_by_status"],
        lambda: charts.status_bar_chart(detail["jobs_by_status"], title="Jobs by status"),
        "jobs",
    )
    preview = _preview(request, task_id)
    return render(
        request,
        "monitor/task.html",
        {
            **detail,
            "decision_panels": panels,
            "jobs_chart": jobs_chart,
            "preview": preview,
            "gdpconfig_keys": [parameter.key for parameter in REGISTRY],
            # a page showing a what-if result does not reload itself
            "refresh": 0 if preview else _refresh(request),
        },
    )


def _preview(request: HttpRequest, task_id: int) -> dict | None:
    """The what-if of the query string (preview_key, preview_value, optional preview_plugin) for the task, or
    None; an invalid key or value comes back as the error to show."""
    key = request.GET.get("preview_key", "").strip()
    if not key:
        return None
    value = request.GET.get("preview_value", "")
    plugin = request.GET.get("preview_plugin") or None
    if plugin not in (None, "atlas_prod_task", "atlas_prod_job", "atlas_anal_job"):
        plugin = None
    try:
        result = broker_preview_task(task_id=task_id, now=timezone.now(), overrides={key: value}, plugin=plugin)
    except (GdpConfigError, PreviewUnavailable, ScenarioError) as error:
        return {"key": key, "value": value, "error": str(error)}
    return {"key": key, "value": value, **result}


@require_safe
def queue(request: HttpRequest, name: str) -> HttpResponse:
    detail = queue_detail(name=name, now=timezone.now())
    if detail is None:
        raise Http404(f"No queue {name}.")
    figures = {
        "over_time": _chart(
            detail["over_time"],
            lambda: charts.timeline_chart(detail["over_time"], title="Job state changes per hour, last day"),
            "queue-over-time",
        ),
        "weights": _chart(
            detail["weights"], lambda: charts.weight_history_chart(detail["weights"], queue=name), "queue-weights"
        ),
        "skipped": _chart(
            detail["skipped"],
            lambda: charts.reasons_chart(detail["skipped"], title="Why it was skipped, recent decisions"),
            "queue-skipped",
        ),
        "timeouts": _chart(detail["timeouts"], lambda: charts.timeouts_chart(detail["timeouts"]), "queue-timeouts"),
    }
    return render(request, "monitor/queue.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def shares(request: HttpRequest) -> HttpResponse:
    detail = shares_overview(now=timezone.now())
    figures = {
        "tree": _chart(detail["tree"], lambda: charts.share_sunburst(detail["tree"]), "share-tree"),
        "history": _chart(
            detail["history"],
            lambda: charts.timeline_chart(detail["history"], title="Usage of the leaf shares, last 7 days"),
            "share-history",
        ),
        "work_queues": _chart(
            detail["work_queues"], lambda: charts.work_queue_shares_chart(detail["work_queues"]), "work-queues"
        ),
    }
    return render(request, "monitor/shares.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def timeouts(request: HttpRequest) -> HttpResponse:
    detail = timeouts_overview(now=timezone.now())
    figures = {
        "by_rule": _chart(detail["by_rule"], lambda: charts.timeouts_chart(detail["by_rule"]), "timeouts-by-rule"),
        "history": _chart(
            detail["history"],
            lambda: charts.timeline_chart(detail["history"], title="Timed out per pass and rule, last day"),
            "timeouts-history",
        ),
    }
    return render(request, "monitor/timeouts.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def decisions(request: HttpRequest) -> HttpResponse:
    detail = decision_explorer(filters=request.GET.dict(), now=timezone.now(), page=_page_number(request))
    reasons = _chart(
        detail["reasons"], lambda: charts.reasons_chart(detail["reasons"], title="Main reasons"), "decision-reasons"
    )
    return render(
        request,
        "monitor/decisions.html",
        {
            **detail,
            "reasons_chart": reasons,
            "keep_filters": _query_without(request, "page"),
            "refresh": _refresh(request),
        },
    )


@require_safe
def dirac(request: HttpRequest) -> HttpResponse:
    detail = dirac_overview(now=timezone.now())
    figures = {
        "rate": _chart(
            detail["rate"],
            lambda: charts.timeline_chart(detail["rate"], title="Matching requests per hour"),
            "dirac-rate",
        ),
        "reasons": _chart(
            detail["reasons"],
            lambda: charts.reasons_chart(detail["reasons"], title="Why requests found no job"),
            "dirac-reasons",
        ),
    }
    return render(request, "monitor/dirac.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def wmcore(request: HttpRequest) -> HttpResponse:
    detail = wmcore_overview(now=timezone.now())
    stuck = detail["stuck"]["reasons"]
    figures = {
        "requests": _chart(
            detail["request_statuses"],
            lambda: charts.status_bar_chart(detail["request_statuses"], title="Requests by status"),
            "wmcore-requests",
        ),
        "slots": _chart(detail["slots"], lambda: charts.slot_use_chart(detail["slots"]), "wmcore-slots"),
        "stuck": _chart(stuck, lambda: charts.reasons_chart(stuck, title="Why elements wait"), "wmcore-stuck"),
    }
    return render(request, "monitor/wmcore.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def gdpconfig(request: HttpRequest) -> HttpResponse:
    task_id = request.GET.get("task", "")
    if task_id.isdigit() and request.GET.get("preview_key"):
        # the preview form: the what-if is shown on the task's page
        query = {key: request.GET.get(key, "") for key in ("preview_key", "preview_value")}
        return redirect(f"{reverse('monitor:task', args=[int(task_id)])}?{urlencode(query)}#preview")
    return render(request, "monitor/gdpconfig.html", gdpconfig_overview())
