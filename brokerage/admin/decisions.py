"""Brokerage cycles and decisions in the admin: read-only, with the decoded trace on each decision's page."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from brokerage.models import BrokerageCycle, Decision
from brokerage.selectors.decisions import decision_trace


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(BrokerageCycle)
class BrokerageCycleAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "plugin",
        "status",
        "started",
        "finished",
        "n_decisions",
        "n_assigned",
        "n_pending",
        "n_throttled",
        "worker",
    ]
    list_filter = ["plugin", "status"]
    search_fields = ["worker", "error"]
    date_hierarchy = "started"


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "created",
        "plugin",
        "task",
        "outcome",
        "chosen",
        "n_candidates",
        "n_passed",
        "primary_reason",
        "message",
    ]
    list_filter = ["plugin", "outcome", "primary_reason"]
    search_fields = ["=task__jediTaskID", "chosen", "message"]
    raw_id_fields = ["task", "cycle"]
    date_hierarchy = "created"
    show_full_result_count = False
    readonly_fields = ["trace_view"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request).select_related("task", "cycle")
        # Lists never load the cycles' resolved gdpconfig (the traces live in their own table)
        on_change_page = bool(request.resolver_match) and request.resolver_match.url_name.endswith("_change")
        return queryset if on_change_page else queryset.defer("cycle__gdpconfig")

    @admin.display(description="trace")
    def trace_view(self, obj: Decision) -> str:
        trace = decision_trace(decision=obj)
        if trace["expired"]:
            counts = ", ".join(f"{group['count']} {group['code']}" for group in trace["by_reason"]) or "none"
            return format_html(
                "The full trace expired on {} (DECISION_TRACE_DAYS). Candidates removed per reason: {}.",
                f"{trace['expired_on']:%Y-%m-%d}",
                counts,
            )
        stages = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((s["filter"], s["before"], s["after"], s.get("note", "")) for s in trace["stages"]),
        )
        candidates = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            ((c["name"], f"{c['weight']:.6g}", c["factors"]) for c in trace["candidates"]),
        )
        skipped = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (m["name"], group["code"], m["filter"], m["sentence"])
                for group in trace["by_reason"]
                for m in group["skipped"]
            ),
        )
        return format_html(
            "<h4>Stages</h4><table><tr><th>filter</th><th>before</th><th>after</th><th>note</th></tr>{}</table>"
            "<h4>Candidates</h4><table><tr><th>name</th><th>weight</th><th>factors</th></tr>{}</table>"
            "<h4>Skipped</h4><table><tr><th>name</th><th>code</th><th>filter</th><th>why</th></tr>{}</table>",
            stages,
            candidates,
            skipped,
        )
