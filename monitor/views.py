"""Dashboard pages. Views stay thin: read the query string, call one selector, draw the charts, render."""

from __future__ import annotations

import sys
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from brokerage.engine import ScenarioError
from brokerage.gdpconfig import REGISTRY, GdpConfigError
from brokerage.models import Task
from brokerage.params import whole_number
from brokerage.selectors.decisions import decision_explorer
from brokerage.selectors.dirac import (
    dirac_job_detail,
    dirac_job_exists,
    dirac_match_detail,
    dirac_overview,
    dirac_task_queue_detail,
)
from brokerage.selectors.gdpconfig import gdpconfig_overview
from brokerage.selectors.jobs import error_overview, job_detail, job_error_summary, job_list
from brokerage.selectors.nuclei import nucleus_names
from brokerage.selectors.overview import OVERVIEW_SPANS, database_overview
from brokerage.selectors.preview import PreviewUnavailable, broker_preview_task
from brokerage.selectors.queues import queue_detail, queue_list
from brokerage.selectors.replay import decision_detail
from brokerage.selectors.search import search_everything
from brokerage.selectors.shares import shares_overview
from brokerage.selectors.sites import site_detail, site_list
from brokerage.selectors.tasks import PLUGIN_NAMES, task_detail, task_filter_choices, task_list
from brokerage.selectors.timeouts import timeouts_overview
from brokerage.selectors.users import user_detail
from brokerage.selectors.wmcore import wmcore_overview
from brokerage.selectors.wmcore_request import wmcore_request_detail
from brokerage.services.task_commands import TaskCommandRefused, task_action_run
from brokerage.task_actions import DESTRUCTIVE_ACTIONS, TASK_ACTIONS, task_actions_available

from . import charts
from .middleware import failure_response

# Pages showing live state reload themselves this often (seconds); ?refresh=0 turns it off.
REFRESH_SECONDS = 60


def _page_number(request: HttpRequest) -> int:
    return whole_number(request.GET.get("page", "1"), maximum=10**9) or 1


def _refresh(request: HttpRequest) -> int:
    return 0 if request.GET.get("refresh") == "0" else REFRESH_SECONDS


def _chart(rows, make, element_id: str, empty: str) -> str:
    """The figure `make()` draws, as HTML, when there are rows to draw; a short sentence otherwise (an empty
    chart's axes from −1 to 1 say nothing), which names what is missing: a chart's title is in its figure, so a
    bare "Nothing to draw yet." stood under no heading (issue 50, finding 4)."""
    return charts.figure_html(make(), element_id=element_id) if rows else charts.empty_chart_html(empty)


def _decision_figures(decision, trace: dict, *, key: str) -> dict[str, str]:
    """A decision's three charts (funnel, weights, reasons), or a sentence where one would be empty."""
    return {
        "funnel": charts.figure_html(
            charts.funnel_chart(trace["stages"], initial=decision.n_candidates), element_id=f"funnel-{key}"
        )
        if any(stage["before"] != stage["after"] for stage in trace["stages"])
        else charts.empty_chart_html("No filter removed a candidate."),
        "weights": charts.figure_html(
            charts.weights_chart(trace["candidates"], chosen=decision.chosen), element_id=f"weights-{key}"
        )
        if trace["candidates"]
        else charts.empty_chart_html("No candidate passed every filter."),
        "reasons": charts.figure_html(charts.reasons_chart(trace["by_reason"]), element_id=f"reasons-{key}")
        if trace["by_reason"]
        else charts.empty_chart_html("Nothing was skipped."),
    }


def _query_without(request: HttpRequest, *keys: str) -> str:
    """The current query string minus `keys` (for sort and page links that keep the filters)."""
    query = request.GET.copy()
    for key in keys:
        query.pop(key, None)
    return query.urlencode()


@require_safe
def overview(request: HttpRequest) -> HttpResponse:
    """The home page: the last 24 h of jobs (states per hour, the queues failing most) and what is in the database,
    by entity and by status."""
    span = request.GET.get("span", "1d")
    problems = {}
    if span not in OVERVIEW_SPANS:
        problems["span"] = f"{span!r} is not a span; one of {', '.join(OVERVIEW_SPANS)}"
        span = "1d"
    overview = database_overview(now=timezone.now(), span=span)
    label = overview["span_label"]
    trend = _chart(
        overview["job_trend"],
        lambda: charts.timeline_chart(
            overview["job_trend"], title=f"Jobs entering each state, per {overview['bucket']} (last {label})",
            y_title="jobs",
        ),
        "overview-job-trend",
        empty=f"No job changed state in the last {label}.",
    )  # fmt: skip
    return render(
        request,
        "monitor/overview.html",
        {"overview": overview, "trend": trend, "refresh": _refresh(request), "problems": problems},
        status=400 if problems else 200,
    )


@require_safe
def tasks(request: HttpRequest) -> HttpResponse:
    listing = task_list(
        filters=request.GET.dict(),
        sort=request.GET.get("sort", "-modified"),
        page=_page_number(request),
        now=timezone.now(),
    )
    chart = charts.status_bar_chart(
        [{"status": status, "count": count} for status, count in listing.counts_by_status],
        title="Tasks by status",
        unit="tasks",
    )
    return render(
        request,
        "monitor/tasks.html",
        {
            "listing": listing,
            "choices": task_filter_choices(),
            "status_chart": charts.figure_html(chart, element_id="tasks-by-status")
            if listing.total
            else charts.empty_chart_html("No task matches."),
            "keep_filters": _query_without(request, "page", "sort"),
            "keep_sort": _query_without(request, "page"),
            "refresh": _refresh(request),
            "problems": listing.problems,
        },
        status=400 if listing.problems else 200,
    )


# The headline's question and verb by the task's status: a status that is an event ("failed", "aborted") is asked
# about as one, and an ended task is in its status from a time, not "since" it (issue 50: "Why is this task
# failed?", "Finished since")
TASK_QUESTIONS = {
    "failed": "Why did this task fail?",
    "aborted": "Why was this task aborted?",
    "finished": "Why did this task finish with failures?",
    "done": "How did this task end?",
    "toretry": "Why is this task to be retried?",
    "toabort": "Why is this task being aborted?",
}
TASK_ENDED = frozenset({"done", "finished", "failed", "broken", "aborted"})


@require_safe
def task(request: HttpRequest, task_id: int) -> HttpResponse:
    decision = request.GET.get("decision", "")
    detail = task_detail(task_id=task_id, now=timezone.now(), decision_id=whole_number(decision))
    if detail is None:
        raise Http404(f"No task {task_id}.")
    panels = []
    for panel in [detail["selected"]] if detail["selected"] else detail["panels"]:
        decision_row, trace = panel["decision"], panel["trace"]
        panels.append(
            {
                **panel,
                "plugin_name": PLUGIN_NAMES.get(decision_row.plugin, decision_row.plugin),
                **_decision_figures(decision_row, trace, key=f"{decision_row.plugin}-{decision_row.pk}"),
            }
        )
    jobs_chart = _chart(
        detail["jobs_by_status"],
        lambda: charts.status_bar_chart(detail["jobs_by_status"], title="Jobs by status", unit="jobs"),
        "task-jobs-chart",
        "No jobs yet.",
    )
    errors = detail["errors"]
    errors_chart = _chart(
        errors["errors"] if errors else [],
        lambda: charts.error_chart(errors["errors"]),
        "task-errors-chart",
        "No failed job.",
    )
    distributions = detail["distributions"]
    duration_chart = _chart(
        distributions["duration"],
        lambda: charts.distribution_chart(distributions["duration"], title="How long its jobs ran", unit="hours"),
        "task-duration-chart",
        "Duration: no job of this task has ended yet.",
    )
    memory_chart = _chart(
        distributions["memory"],
        lambda: charts.distribution_chart(distributions["memory"], title="Memory its jobs used (maxRSS)", unit="MB"),
        "task-memory-chart",
        "Memory: no ended job of this task reported its maxRSS.",
    )
    preview = _preview(request, task_id)
    return render(
        request,
        "monitor/task.html",
        {
            **detail,
            "decision_panels": panels,
            "jobs_chart": jobs_chart,
            "errors_chart": errors_chart,
            "duration_chart": duration_chart,
            "memory_chart": memory_chart,
            "preview": preview,
            "gdpconfig_keys": [parameter.key for parameter in REGISTRY],
            "actions": [
                {"name": name, "label": TASK_ACTIONS[name], "destructive": name in DESTRUCTIVE_ACTIONS}
                for name in task_actions_available(detail["task"])
            ],
            "nuclei": nucleus_names(),
            "question": TASK_QUESTIONS.get(detail["task"].status, f"Why is this task {detail['task'].status}?"),
            "ended": detail["task"].status in TASK_ENDED,
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
            lambda: charts.timeline_chart(
                detail["over_time"], title="Job state changes per hour, last day", y_title="jobs per hour"
            ),
            "queue-over-time",
            "No job changed state here in the last day.",
        ),
        "weights": _chart(
            detail["weights"],
            lambda: charts.weight_history_chart(detail["weights"], queue=name),
            "queue-weights",
            "Not a candidate in the latest job-brokerage decisions.",
        ),
        "skipped": _chart(
            detail["skipped"],
            lambda: charts.reasons_chart(
                detail["skipped"], title="Why it was skipped, recent decisions", unit="decisions"
            ),
            "queue-skipped",
            "Not skipped in the latest job-brokerage decisions.",
        ),
        "timeouts": _chart(
            detail["timeouts"],
            lambda: charts.timeouts_chart(detail["timeouts"]),
            "queue-timeouts",
            "Timeouts: no job watched here in the latest watchdog pass.",
        ),
    }
    return render(request, "monitor/queue.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def shares(request: HttpRequest) -> HttpResponse:
    detail = shares_overview(now=timezone.now())
    figures = {
        "tree": _chart(
            detail["tree"], lambda: charts.share_sunburst(detail["tree"]), "share-tree", "No global share is defined."
        ),
        "history": _chart(
            detail["history"],
            lambda: charts.timeline_chart(
                detail["history"],
                title="Usage of the leaf shares, last 7 days",
                y_title="usage (executing ÷ target)",
                counts=False,
            ),
            "share-history",
            "Usage of the shares: no snapshot in the last 7 days.",
        ),
        "work_queues": _chart(
            detail["work_queues"],
            lambda: charts.work_queue_shares_chart(detail["work_queues"]),
            "work-queues",
            "No work queue has a share.",
        ),
    }
    return render(request, "monitor/shares.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def timeouts(request: HttpRequest) -> HttpResponse:
    detail = timeouts_overview(now=timezone.now())
    figures = {
        "by_rule": _chart(
            detail["by_rule"],
            lambda: charts.timeouts_chart(detail["by_rule"]),
            "timeouts-by-rule",
            "Timeouts by rule: no watchdog pass yet.",
        ),
        "history": _chart(
            detail["history"],
            lambda: charts.timeline_chart(
                detail["history"], title="Timed out per pass and rule, last day", y_title="jobs timed out"
            ),
            "timeouts-history",
            "No job timed out in the last day.",
        ),
    }
    return render(request, "monitor/timeouts.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def decisions(request: HttpRequest) -> HttpResponse:
    detail = decision_explorer(filters=request.GET.dict(), now=timezone.now(), page=_page_number(request))
    reasons = _chart(
        detail["reasons"],
        lambda: charts.reasons_chart(detail["reasons"], title="Main reasons", unit="decisions"),
        "decision-reasons",
        "Main reasons: no decision here left a task without a choice.",
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
        status=400 if detail["problems"] else 200,
    )


@require_safe
def dirac(request: HttpRequest) -> HttpResponse:
    """The DIRAC page; its job box (?job=N) opens the job's page, or says why it cannot."""
    lookup = request.GET.get("job", "").strip()
    job_id = whole_number(lookup)
    if job_id is not None and dirac_job_exists(job_id=job_id):
        return redirect(reverse("monitor:dirac-job", args=[job_id]))
    detail = dirac_overview(now=timezone.now())
    by_site = detail["by_site"]["timeline"]
    figures = {
        "no_matches": _chart(
            by_site,
            lambda: charts.timeline_chart(
                by_site, title="No-matches per hour, by site and CE", series="where", y_title="requests per hour"
            ),
            "dirac-no-matches",
            "No request went without a job in the last day.",
        ),
        "rate": _chart(
            detail["rate"],
            lambda: charts.timeline_chart(
                detail["rate"], title="Matching requests per hour", y_title="requests per hour"
            ),
            "dirac-rate",
            "No matching request in the last day.",
        ),
        "reasons": _chart(
            detail["reasons"],
            lambda: charts.reasons_chart(detail["reasons"], title="Why requests found no job", unit="requests"),
            "dirac-reasons",
            "Every matching request found a job in the last day.",
        ),
    }
    lookup_problem = (
        f"No DIRAC job {lookup}." if job_id is not None else "A DIRAC job ID is a number." if lookup else ""
    )
    return render(
        request,
        "monitor/dirac.html",
        {
            **detail,
            "figures": figures,
            "refresh": _refresh(request),
            "lookup": lookup,
            "lookup_problem": lookup_problem,
        },
        status=404 if lookup_problem.startswith("No ") else 400 if lookup_problem else 200,
    )


@require_safe
def dirac_job(request: HttpRequest, job_id: int) -> HttpResponse:
    """Why a DIRAC job is (not) matched: its task queue, that queue's priority explained, the rules it fails for
    the sites and CEs that asked lately."""
    detail = dirac_job_detail(job_id=job_id, now=timezone.now())
    if detail is None:
        raise Http404(f"No DIRAC job {job_id}.")
    return render(request, "monitor/dirac_job.html", {**detail, "refresh": _refresh(request)})


@require_safe
def dirac_task_queue(request: HttpRequest, task_queue_id: int) -> HttpResponse:
    """One task queue: requirements, priority explained, waiting jobs, the rules it fails per site and CE."""
    detail = dirac_task_queue_detail(task_queue_id=task_queue_id, now=timezone.now())
    if detail is None:
        raise Http404(f"No DIRAC task queue {task_queue_id}.")
    return render(request, "monitor/dirac_task_queue.html", {**detail, "refresh": _refresh(request)})


@require_safe
def wmcore(request: HttpRequest) -> HttpResponse:
    detail = wmcore_overview(
        now=timezone.now(),
        request_query=request.GET.get("request", "").strip()[:200],
        site=request.GET.get("site", "").strip()[:64],
    )
    stuck = detail["stuck"]["reasons"]
    figures = {
        "requests": _chart(
            detail["request_statuses"],
            lambda: charts.status_bar_chart(detail["request_statuses"], title="Requests by status", unit="requests"),
            "wmcore-requests",
            "No WMCore request yet.",
        ),
        "slots": _chart(
            detail["slots"],
            lambda: charts.slot_use_chart(detail["slots"]),
            "wmcore-slots-chart",
            "Slot use: no agent has a site in its resource-control table.",
        ),
        "stuck": _chart(
            stuck,
            lambda: charts.reasons_chart(stuck, title="Why elements wait", unit="elements"),
            "wmcore-stuck-chart",
            "No element waits in the global queue.",
        ),
    }
    return render(request, "monitor/wmcore.html", {**detail, "figures": figures, "refresh": _refresh(request)})


@require_safe
def gdpconfig(request: HttpRequest) -> HttpResponse:
    task_id = whole_number(request.GET.get("task", ""))
    if task_id is not None and request.GET.get("preview_key"):
        # the preview form: the what-if is shown on the task's page
        query = {key: request.GET.get(key, "") for key in ("preview_key", "preview_value")}
        return redirect(f"{reverse('monitor:task', args=[task_id])}?{urlencode(query)}#preview")
    return render(request, "monitor/gdpconfig.html", gdpconfig_overview())


@require_POST
def task_action(request: HttpRequest, task_id: int) -> HttpResponse:
    """One action from the task page, for a signed-in user with the permission to change tasks; the result (or
    why it was refused) is shown on the task page."""
    if not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?next={reverse('monitor:task', args=[task_id])}")
    if not request.user.has_perm("brokerage.change_task"):
        raise PermissionDenied("changing tasks needs the permission brokerage.change_task")
    try:
        done = task_action_run(
            task_id=task_id,
            action=request.POST.get("action", ""),
            user=request.user,
            params=request.POST.dict(),
            now=timezone.now(),
        )
    except TaskCommandRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(request, done)
    return redirect(reverse("monitor:task", args=[task_id]) + "#actions")


@require_safe
def job(request: HttpRequest, job_id: int) -> HttpResponse:
    detail = job_detail(job_id=job_id, now=timezone.now())
    if detail is None:
        raise Http404(f"No job {job_id}.")
    return render(request, "monitor/job.html", {**detail, "refresh": _refresh(request)})


@require_safe
def task_errors(request: HttpRequest, task_id: int) -> HttpResponse:
    """The task's error summary on its own page, every error (the task page shows the ten commonest)."""
    task = Task.objects.filter(pk=task_id).values("jediTaskID", "taskName", "status").first()
    if task is None:
        raise Http404(f"No task {task_id}.")
    summary = job_error_summary(task_id=task_id, limit=200)
    chart = _chart(
        summary["errors"], lambda: charts.error_chart(summary["errors"][:25]), "errors-chart", "No failed job."
    )
    return render(
        request,
        "monitor/errors.html",
        {"task": task, "summary": summary, "chart": chart, "refresh": _refresh(request)},
    )


@require_safe
def errors(request: HttpRequest) -> HttpResponse:
    """Errors across tasks (BigPanDA's error summary): a window, filters by task, queue, site, cloud and user, each
    error drilling down to its queues and to the jobs."""
    detail = error_overview(filters=request.GET.dict(), now=timezone.now())
    summary = detail["summary"]
    chart = _chart(
        summary["errors"],
        lambda: charts.error_chart(summary["errors"][:25]),
        "errors-chart",
        "No job failed, was closed or cancelled in this window.",
    )
    return render(
        request,
        "monitor/error_overview.html",
        {**detail, "chart": chart, "refresh": _refresh(request)},
        status=400 if detail["problems"] else 200,
    )


@require_safe
def user(request: HttpRequest, name: str) -> HttpResponse:
    detail = user_detail(name=name, now=timezone.now())
    if detail is None:
        raise Http404(f"No task or recent job of user {name}.")
    figures = {
        "tasks": _chart(
            detail["task_statuses"],
            lambda: charts.status_bar_chart(detail["task_statuses"], title="Tasks by status", unit="tasks"),
            "user-tasks-chart",
            "No task.",
        ),
        "jobs": _chart(
            detail["job_statuses"],
            lambda: charts.status_bar_chart(detail["job_statuses"], title="Jobs by status, last 7 days", unit="jobs"),
            "user-jobs-chart",
            "No job changed state in the last 7 days.",
        ),
    }
    return render(request, "monitor/user.html", {**detail, "figures": figures, "refresh": _refresh(request)})


def _search_url(thing: dict) -> str:
    """The page of one thing the search found (brokerage.selectors.search)."""
    kind, key = thing["kind"], thing["key"]
    if kind == "jobset":
        return reverse("monitor:jobs") + "?" + urlencode({"task": thing["task"], "jobset": key, "window": "all"})
    if kind == "cms-site":
        return reverse("monitor:wmcore") + "?" + urlencode({"site": key}) + "#slots"
    if kind == "error":
        return reverse("monitor:jobs") + "?" + urlencode({"error": key, "window": "1d"})
    return reverse(f"monitor:{'task' if kind == 'dataset' else kind}", args=[key])


@require_safe
def search(request: HttpRequest) -> HttpResponse:
    """The search box: straight to the one thing an ID or exact name names; a choice when it names several; else
    what holds it, closest first."""
    query = request.GET.get("q", "").strip()[:255]
    found = search_everything(query=query)
    if found["exact"] is not None:
        return redirect(_search_url(found["exact"]))
    for thing in found["choices"]:
        thing["url"] = _search_url(thing)
    return render(request, "monitor/search.html", {**found, "search_query": query})


@require_safe
def decision(request: HttpRequest, decision_id: int) -> HttpResponse:
    """One decision of any plugin (task, job, WMCore pull) with its whole trace."""
    detail = decision_detail(decision_id=decision_id)
    if detail is None:
        raise Http404(f"No decision {decision_id}.")
    figures = _decision_figures(detail["decision"], detail["trace"], key=f"decision-{decision_id}")
    return render(request, "monitor/decision.html", {**detail, "figures": figures})


@require_safe
def dirac_match(request: HttpRequest, record_id: int) -> HttpResponse:
    """One DIRAC matching request: what the resource offered, the task queue drawn or why none matched."""
    detail = dirac_match_detail(record_id=record_id)
    if detail is None:
        raise Http404(f"No DIRAC matching request {record_id}.")
    return render(request, "monitor/dirac_match.html", detail)


def page_not_found(request: HttpRequest, exception=None) -> HttpResponse:
    """404 in the site's layout, saying what was not found and where to look instead."""
    message = str(exception) if exception and str(exception) and not settings.DEBUG else ""
    first = exception.args[0] if exception is not None and exception.args else None
    if isinstance(first, dict):  # Django's resolver details: not for users
        message = ""
    return render(request, "404.html", {"message": message, "path": request.path}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """500 in the site's layout, without touching the database (it may be what failed). An exception raised
    before any view ran (the session or the user read while the database is away) is still answered for what it
    is: a 503 with Retry-After, in the client's shape (monitor.middleware)."""
    failure = sys.exc_info()[1]  # Django calls this while handling the exception
    answer = failure_response(request, failure) if failure is not None else None
    return answer if answer is not None else render(request, "500.html", status=500)


@require_safe
def site(request: HttpRequest, name: str) -> HttpResponse:
    detail = site_detail(name=name, now=timezone.now())
    if detail is None:
        raise Http404(f"No site {name}.")
    over_time = _chart(
        detail["over_time"],
        lambda: charts.timeline_chart(
            detail["over_time"], title="Job state changes per hour at its queues, last day", y_title="jobs per hour"
        ),
        "site-over-time",
        "No job changed state at its queues in the last day.",
    )
    return render(request, "monitor/site.html", {**detail, "over_time_chart": over_time, "refresh": _refresh(request)})


@require_safe
def wmcore_request(request: HttpRequest, name: str) -> HttpResponse:
    detail = wmcore_request_detail(name=name)
    if detail is None:
        raise Http404(f"No WMCore request {name}.")
    return render(request, "monitor/wmcore_request.html", {**detail, "refresh": _refresh(request)})


@require_safe
def jobs(request: HttpRequest) -> HttpResponse:
    listing = job_list(filters=request.GET.dict(), page=_page_number(request), now=timezone.now())
    return render(
        request,
        "monitor/jobs.html",
        {**listing, "keep_filters": _query_without(request, "page"), "refresh": _refresh(request)},
        status=400 if listing["problems"] else 200,
    )


@require_safe
def queues(request: HttpRequest) -> HttpResponse:
    listing = queue_list(status=request.GET.get("status", "").strip())
    return render(
        request,
        "monitor/queues.html",
        {**listing, "refresh": _refresh(request)},
        status=400 if listing["problems"] else 200,
    )


@require_safe
def sites(request: HttpRequest) -> HttpResponse:
    listing = site_list(role=request.GET.get("role", "").strip())
    return render(
        request,
        "monitor/sites.html",
        {**listing, "refresh": _refresh(request)},
        status=400 if listing["problems"] else 200,
    )
