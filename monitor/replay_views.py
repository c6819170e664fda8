"""Pages of issue 34: a decision replayed, what-if over a cycle or a time window, gdpconfig revisions. A replay only
reads one decision, so its form is a GET form; a what-if replays thousands, so it runs on its form's POST, bounded in
time and in how many run at once (brokerage.costly; issue 47); restoring a revision is a POST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from brokerage.costly import SlotsBusy, costly_client, costly_slot
from brokerage.gdpconfig import GdpConfigError
from brokerage.gdpconfig.assignments import assignments_parse
from brokerage.gdpconfig.profiles import PROFILE_NAMES
from brokerage.models import BrokerageCycle, Decision, DiracMatchRecord
from brokerage.params import whole_number
from brokerage.selectors.dirac_replay import dirac_match_replay
from brokerage.selectors.gdpconfig import gdpconfig_revision_detail, gdpconfig_revision_list
from brokerage.selectors.inputs import REPLAYABLE, InputsUnavailable
from brokerage.selectors.replay import decision_replay
from brokerage.selectors.whatif import DEFAULT_LIMIT, MAX_LIMIT, cycle_id_list, cycles_what_if
from brokerage.services.gdpconfig import GdpConfigInputError, gdpconfig_revision_restore

from . import charts
from .middleware import busy_page

WINDOW_HOURS = 1
MAX_WINDOW_HOURS = 24 * 7


def _changes(request: HttpRequest) -> dict:
    """The what-if form's fields: KEY=VALUE lines, a profile, a bound on decisions; `error` names a bad one. A
    what-if runs on POST (its form), a replay on GET; a GET fills the what-if form from its address."""
    fields = request.POST if request.method == "POST" else request.GET
    text = fields.get("set", "")
    profile = fields.get("profile", "")
    limit = whole_number(fields.get("limit", ""), maximum=MAX_LIMIT) or DEFAULT_LIMIT
    form = {"set": text, "profile": profile, "limit": limit, "profiles": PROFILE_NAMES, "error": ""}
    if profile and profile not in PROFILE_NAMES:
        form["error"] = f"profile: unknown profile '{profile}' (known: {', '.join(PROFILE_NAMES)})"
    try:
        form["overrides"] = assignments_parse(text.splitlines())
    except GdpConfigError as error:
        form["overrides"], form["error"] = {}, f"changes: {error}"
    # `base`: KEY=VALUE lines the decisions are compared under instead of as stored (a restore's what-if: the
    # values in force now, which the last hour's cycles may not have run under)
    form["base"] = fields.get("base", "")
    form["baseline"] = None
    if form["base"].strip():
        try:
            form["baseline"] = assignments_parse(form["base"].splitlines())
        except GdpConfigError as error:
            form["error"] = f"compared with: {error}"
    return form


def _what_if_figure(result: dict, key: str) -> str:
    """One chart per kind of choice (nuclei, queues, task queues, elements), each with only what was chosen; how
    many decisions chose nothing, before and after, said in a sentence (about 300 of them dwarfed every bar)."""
    rows = [row for row in result["assignments"] if row["before"] or row["after"]]
    if not any(row["before"] != row["after"] for row in rows):
        return charts.empty_chart_html("Every queue and nucleus is chosen as often as before.")
    parts = []
    for kind in sorted({row["kind"] for row in rows}):
        chosen = [row for row in rows if row["kind"] == kind and row["target"]]
        nothing = next((row for row in rows if row["kind"] == kind and not row["target"]), None)
        if nothing and nothing["before"] != nothing["after"]:
            parts.append(
                format_html(
                    '<p class="muted">Decisions that chose no {}: {} stored, {} with the change.</p>',
                    kind,
                    nothing["before"],
                    nothing["after"],
                )
            )
        if any(row["before"] != row["after"] for row in chosen):
            element_id = f"assignments-{key}-{kind.replace(' ', '-')}"
            parts.append(charts.figure_html(charts.assignments_chart(chosen, kind=kind), element_id=element_id))
    return mark_safe("".join(parts))  # each part escaped: format_html and figure_html


@require_safe
def decision_replay_page(request: HttpRequest, decision_id: int) -> HttpResponse:
    """A decision run again on its stored inputs, as it was or with the form's changes, beside the stored one."""
    decision = Decision.objects.select_related("cycle").filter(pk=decision_id).first()
    if decision is None:
        raise Http404(f"No decision {decision_id}.")
    form = _changes(request)
    cycle = whole_number(request.GET.get("cycle", ""), maximum=10**18)
    result, unavailable = None, ""
    if not form["error"]:
        try:
            result = decision_replay(
                decision=decision, cycle_id=cycle, profile=form["profile"] or None, overrides=form["overrides"]
            )
        except InputsUnavailable as why:
            unavailable = str(why)
    return render(
        request,
        "monitor/replay.html",
        {
            "decision": decision,
            "form": form,
            "hidden": [("cycle", cycle)] if cycle else [],
            "result": result,
            "unavailable": unavailable,
        },
    )


@require_safe
def dirac_match_replay_page(request: HttpRequest, record_id: int) -> HttpResponse:
    """A DIRAC matching request run again from what it drew from, as it was or with the form's changes."""
    record = DiracMatchRecord.objects.filter(pk=record_id).first()
    if record is None:
        raise Http404(f"No DIRAC matching request {record_id}.")
    form = _changes(request)
    result, unavailable = None, ""
    if not form["error"]:
        try:
            result = dirac_match_replay(record=record, profile=form["profile"] or None, overrides=form["overrides"])
        except InputsUnavailable as why:
            unavailable = str(why)
        except GdpConfigError as error:
            form["error"] = f"changes: {error}"
    return render(
        request,
        "monitor/dirac_match_replay.html",
        {"record": record, "form": form, "hidden": [], "result": result, "unavailable": unavailable},
    )


def _what_if_page(request: HttpRequest, *, cycle_ids: list[int], context: dict, key: str) -> HttpResponse:
    """The form on GET; on POST the what-if itself, within WHAT_IF_SECONDS and a costly-request slot (issue 47:
    `?run=1` on a GET let any viewer start 15 s of work, eight at once stalled the site)."""
    form = _changes(request)
    result = figure = None
    if request.method == "POST" and not form["error"]:
        try:
            with costly_slot(client=costly_client(request), what="what-if"):
                result = cycles_what_if(
                    cycle_ids=cycle_ids,
                    profile=form["profile"] or None,
                    overrides=form["overrides"],
                    limit=form["limit"],
                    seconds=settings.WHAT_IF_SECONDS,
                    baseline=form["baseline"],
                )
        except SlotsBusy as busy:
            return busy_page(
                status=429,
                title="Not now",
                message=f"{busy} Try again in {busy.retry_after} s.",
                back=request.get_full_path(),
                retry_after=busy.retry_after,
            )
        except GdpConfigError as error:
            form["error"] = f"changes: {error}"
        else:
            figure = _what_if_figure(result, key)
    replay_query = urlencode({k: form[k] for k in ("set", "profile") if form[k]})
    return render(
        request,
        "monitor/what_if.html",
        {
            **context,
            "form": form,
            "result": result,
            "figure": figure,
            "replay_query": replay_query,
            "budget": settings.WHAT_IF_SECONDS,
        },
    )


@require_http_methods(["GET", "HEAD", "POST"])
def cycle_what_if(request: HttpRequest, cycle_id: int) -> HttpResponse:
    """One cycle's decisions run again with the form's changes."""
    cycle = BrokerageCycle.objects.filter(pk=cycle_id).first()
    if cycle is None:
        raise Http404(f"No cycle {cycle_id}.")
    return _what_if_page(request, cycle_ids=[cycle.pk], context={"cycle": cycle}, key=f"cycle-{cycle.pk}")


class BadMoment(ValueError):
    pass


def _moment(text: str, field: str) -> datetime | None:
    """An ISO time (UTC unless it says otherwise); None when empty; BadMoment naming the field otherwise."""
    if not text or not text.strip():
        return None
    try:
        moment = parse_datetime(text.strip())
    except ValueError:
        moment = None
    if moment is None:
        raise BadMoment(f"{field}: {text!r} is not a time such as 2026-11-27T14:00")
    return timezone.make_aware(moment, UTC) if timezone.is_naive(moment) else moment


@require_http_methods(["GET", "HEAD", "POST"])
def window_what_if(request: HttpRequest) -> HttpResponse:
    """The decisions of the cycles of a time window (the last hour by default) run again with the form's changes."""
    problem = ""
    try:
        until = _moment(request.GET.get("until", ""), "until") or timezone.now()
        hours = whole_number(request.GET.get("hours", ""), maximum=MAX_WINDOW_HOURS) or WINDOW_HOURS
        since = _moment(request.GET.get("since", ""), "since") or until - timedelta(hours=hours)
    except BadMoment as error:
        problem, until = str(error), timezone.now()
        since = until - timedelta(hours=WINDOW_HOURS)
    plugin = request.GET.get("plugin", "")
    plugin = plugin if plugin in REPLAYABLE else ""
    cycles = cycle_id_list(since=since, until=until, plugin=plugin or None)
    context = {
        "window": {"since": since, "until": until, "plugin": plugin, "plugins": REPLAYABLE, "problem": problem},
        "n_cycles": len(cycles),
    }
    return _what_if_page(request, cycle_ids=cycles, context=context, key="window")


@require_safe
def gdpconfig_revisions(request: HttpRequest) -> HttpResponse:
    """Every gdpconfig revision, newest first, with its changes and the cycles that ran under it."""
    return render(
        request,
        "monitor/gdpconfig_revisions.html",
        {"revisions": gdpconfig_revision_list(limit=200, with_cycle_counts=True)},
    )


@require_safe
def gdpconfig_revision(request: HttpRequest, revision_id: int) -> HttpResponse:
    """One revision: its difference from another (the one before by default), what restoring it would change, the
    what-if of that over the last hour, and (for those who may change gdpconfig) the restore button."""
    against = whole_number(request.GET.get("against", ""), maximum=10**18)
    detail = gdpconfig_revision_detail(revision_id=revision_id, against_id=against)
    if detail is None:
        raise Http404(f"No gdpconfig revision {revision_id}.")
    what_if = ""
    if detail["restore_overrides"]:
        # the revision's values against those in force now, each decision run under both (issue 50: compared with
        # the stored decisions, which ran under older values, a restore reported "0 would change")
        lines = "\n".join(f"{key}={value}" for key, value in detail["restore_overrides"].items())
        base = "\n".join(f"{key}={value}" for key, value in detail["in_force"].items())
        what_if = reverse("monitor:what-if") + "?" + urlencode({"set": lines, "base": base})
    can_restore = request.user.is_authenticated and request.user.has_perm("brokerage.change_gdpconfig")
    return render(
        request, "monitor/gdpconfig_revision.html", {**detail, "what_if": what_if, "can_restore": can_restore}
    )


@require_POST
def gdpconfig_revision_restore_page(request: HttpRequest, revision_id: int) -> HttpResponse:
    """Restores a revision (signed in, with the permission to change gdpconfig); the result shows on its page."""
    if not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?next={reverse('monitor:gdpconfig-revision', args=[revision_id])}")
    if not request.user.has_perm("brokerage.change_gdpconfig"):
        raise PermissionDenied("restoring gdpconfig needs the permission brokerage.change_gdpconfig")
    try:
        made = gdpconfig_revision_restore(
            revision_id=revision_id, user=request.user, comment=request.POST.get("comment", "")[:256]
        )
    except GdpConfigInputError as error:
        messages.error(request, str(error))
        return redirect(reverse("monitor:gdpconfig-revision", args=[revision_id]))
    messages.success(request, f"Revision {revision_id} restored: the stored gdpconfig is now revision {made.pk}.")
    return redirect(reverse("monitor:gdpconfig-revision", args=[made.pk]))
