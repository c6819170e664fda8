"""Query filters of the API (django-filter): every filter is a named, typed query parameter in the schema, and a
bad value is a 400 naming the parameter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import django_filters as filters
from django import forms
from django.db.backends.base.operations import BaseDatabaseOperations
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema_field
from rest_framework.exceptions import ValidationError

from brokerage.job_errors import COMPONENTS
from brokerage.models import BrokerageCycle, Dataset, Decision, Job, PandaQueue, Task, WMCoreElement
from brokerage.plugins import decision_plugins

BIGINT = {"min_value": -(2**63), "max_value": 2**63 - 1}


class IntegerFilter(filters.NumberFilter):
    """A whole number (1.5 is refused, not rounded), within min_value and max_value."""

    field_class = forms.IntegerField


def _typed(filter_) -> bool:
    """Filters whose value has a type beyond text: given empty, they are refused rather than ignored."""
    plain_text = isinstance(filter_, filters.CharFilter) and not isinstance(filter_, filters.ChoiceFilter)
    return not plain_text or getattr(filter_, "typed", False)


class FilterSet(filters.FilterSet):
    """Strict query parameters: a whole-number filter takes a whole number within its column's range (a huge
    number is a 400, never a database error), a typed filter given empty or a flag that is not true/false is a 400
    naming the parameter, never silently ignored."""

    @classmethod
    def filter_for_lookup(cls, field, lookup_type):
        filter_class, params = super().filter_for_lookup(field, lookup_type)
        if issubclass(filter_class, filters.NumberFilter):
            low, high = BaseDatabaseOperations.integer_field_ranges.get(field.get_internal_type(), (None, None))
            if low is not None:
                filter_class = IntegerFilter
                params.setdefault("min_value", low)
                params.setdefault("max_value", high)
        return filter_class, params

    def is_valid(self):
        valid = super().is_valid()
        for name, filter_ in self.filters.items():
            if name in self.form.errors and isinstance(filter_, filters.ChoiceFilter):
                # Django's "Select a valid choice. x is not one of the available choices." without the choices
                known = ", ".join(str(value) for value, _ in filter_.extra.get("choices", ()) if value != "")
                if not known:
                    known = ", ".join(str(value) for value, _ in self.form.fields[name].choices if value != "")
                self.form.errors[name] = self.form.error_class([f"{self.data.get(name)!r} is not one of: {known}"])
            if name not in self.data:
                continue
            value = self.data.get(name)
            if value == "" and _typed(filter_):
                self.form.add_error(name, "a value is required when the parameter is given")
            elif isinstance(filter_, filters.BooleanFilter) and str(value).lower() not in ("true", "false"):
                self.form.add_error(name, f"expected true or false, got {value!r}")
        return valid and not self.form.errors


class UtcDateTimeFilter(filters.IsoDateTimeFilter):
    """An ISO 8601 time, compared in UTC: any offset Python accepts (up to ±23:59) works, not only the ±15:59
    PostgreSQL takes."""

    def filter(self, qs, value):
        if value is not None and value.tzinfo is not None:
            try:
                value = value.astimezone(UTC)
            except OverflowError:  # before year 1 or after 9999 in UTC: the ends of time
                value = (datetime.min if value.year == 1 else datetime.max).replace(tzinfo=UTC)
        return super().filter(qs, value)


class StrictFilterBackend(DjangoFilterBackend):
    """Filter sets built from `filterset_fields` get the same strictness as the declared ones."""

    filterset_base = FilterSet

    def filter_queryset(self, request, queryset, view):
        """As django-filter's, but the messages are read from the form as they stand: its translate_validation
        formats each message again with `%`, and a value holding "%_%" ended in a TypeError (a 500)."""
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        if not filterset.is_valid():
            raise ValidationError({field: list(messages) for field, messages in filterset.errors.items()})
        return filterset.qs


@extend_schema_field(
    {
        "type": "string",
        "pattern": "^(" + "|".join(name for name, _, _ in COMPONENTS) + "):-?[0-9]{1,9}$",
        "description": "A job's main error, component:code as the pages write it (pilot:1305, exe:65)",
    }
)
class ErrorCodeFilter(filters.CharFilter):
    """component:code, the way job_errors.error_label writes a job's main error."""

    typed = True  # given empty, refused: the schema's pattern does not take ""


def id_filter(field_name: str, **extra) -> IntegerFilter:
    return IntegerFilter(field_name=field_name, **BIGINT, **extra)


class TaskFilter(FilterSet):
    workQueue = filters.CharFilter(field_name="workQueue__queue_name")
    q = filters.CharFilter(method="search", label="Text in the name, user or errorDialog")
    modified_after = UtcDateTimeFilter(field_name="modificationTime", lookup_expr="gte")
    modified_before = UtcDateTimeFilter(field_name="modificationTime", lookup_expr="lt")
    parent = id_filter("parent_id", label="jediTaskID of the parent task")

    class Meta:
        model = Task
        fields = [
            "status",
            "prodSourceLabel",
            "taskType",
            "processingType",
            "userName",
            "workingGroup",
            "gshare",
            "nucleus",
            "vo",
        ]

    def search(self, queryset, name, value):
        from django.db.models import Q

        return queryset.filter(
            Q(taskName__icontains=value) | Q(userName__icontains=value) | Q(errorDialog__icontains=value)
        )


class JobFilter(FilterSet):
    """The job list's filters, in the task list's words: `status` (jobStatus kept as its old name), `queue`
    (computingSite), `cloud`, `user` and `error` as the job page and the facets write them (issue 50)."""

    jediTaskID = id_filter("task_id")
    status = filters.ChoiceFilter(field_name="jobStatus", choices=Job._meta.get_field("jobStatus").choices)
    queue = filters.CharFilter(field_name="computingSite", label="The PanDA queue (computingSite)")
    site = filters.CharFilter(method="at_site", label="The site of the job's queue")
    user = filters.CharFilter(field_name="prodUserName", label="The user (prodUserName)")
    error = ErrorCodeFilter(method="with_error", label="Main error as component:code, e.g. pilot:1305")

    class Meta:
        model = Job
        fields = [
            "jobStatus",
            "computingSite",
            "cloud",
            "jobsetID",
            "prodSourceLabel",
            "gshare",
            "isScout",
            "resource_type",
        ]

    def at_site(self, queryset, name, value):
        return queryset.filter(computingSite__in=PandaQueue.objects.filter(site__name=value).values("name"))

    def with_error(self, queryset, name, value):
        from brokerage.selectors.jobs import job_error_filter

        condition = job_error_filter(value)
        if condition is None:
            raise ValidationError({"error": [f"{value!r} is not component:code (e.g. pilot:1305, exe:65)"]})
        return queryset.filter(condition)


class DatasetFilter(FilterSet):
    jediTaskID = id_filter("task_id")

    class Meta:
        model = Dataset
        fields = ["type", "status", "datasetName"]


class QueueFilter(FilterSet):
    site = filters.CharFilter(field_name="site__name")

    class Meta:
        model = PandaQueue
        fields = ["status", "type", "cloud"]


class PluginChoice(FilterSet):
    """A `plugin` filter that accepts only the plugins decisions and cycles are made by (a 400 names the others)."""

    # the installation's plugins (settings are read before the URLs, and so this module, are imported); a list,
    # so that the schema names them
    plugin = filters.ChoiceFilter(
        choices=[(name, name) for name in decision_plugins()], label="The plugin (or the job throttler)"
    )


class CycleFilter(PluginChoice):
    started_after = UtcDateTimeFilter(field_name="started", lookup_expr="gte")
    started_before = UtcDateTimeFilter(field_name="started", lookup_expr="lt")

    class Meta:
        model = BrokerageCycle
        fields = ["plugin", "status"]


# The most recent decisions a `queue_skipped` filter reads the traces of. A trace is compressed, so the filter
# decodes each one: about 2 ms a decision, so 5,000 cost 10 s of CPU a request and eight at once took the site down
# (issue 31). Skips are not indexed (a job-brokerage decision skips hundreds of queues; a table of them would be
# larger than the decisions), so the filter needs another that narrows to a task, a cycle or a window of at most a
# day, and reads at most SKIPPED_SCAN_LIMIT decisions of those.
SKIPPED_SCAN_LIMIT = 200
SKIPPED_WINDOW = timedelta(days=1)


class DecisionFilter(PluginChoice):
    jediTaskID = id_filter("task_id")
    reason = filters.CharFilter(field_name="primary_reason", label="Main reason code (PanDA's skip codes)")
    chosen = filters.CharFilter(field_name="chosen", label="The queue or nucleus chosen")
    queue_skipped = filters.CharFilter(
        method="skipped",
        label=f"A queue or nucleus the decision skipped (among the {SKIPPED_SCAN_LIMIT} latest decisions matching "
        "the other filters; needs jediTaskID, cycle or a created_after window of at most a day)",
    )
    created_after = UtcDateTimeFilter(field_name="created", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created", lookup_expr="lt")
    cycle = id_filter("cycle_id")

    class Meta:
        model = Decision
        fields = ["plugin", "outcome", "jobsetID"]

    def skipped(self, queryset, name, value):
        from brokerage.selectors.decisions import decision_trace

        narrowed = self.form.cleaned_data
        after, before = narrowed.get("created_after"), narrowed.get("created_before")
        windowed = after is not None and (before or datetime.now(UTC)) - after <= SKIPPED_WINDOW
        if narrowed.get("jediTaskID") is None and narrowed.get("cycle") is None and not windowed:
            raise ValidationError(
                {
                    "queue_skipped": [
                        "needs jediTaskID, cycle, or created_after within a day of created_before (or of now): it "
                        f"reads the traces of at most the {SKIPPED_SCAN_LIMIT} latest decisions so narrowed"
                    ]
                }
            )
        matching = [
            decision.pk
            for decision in queryset.select_related("cycle").order_by("-pk")[:SKIPPED_SCAN_LIMIT]
            if value in decision_trace(decision=decision)["skipped"]
        ]
        return queryset.filter(pk__in=matching)


class WMCoreElementFilter(FilterSet):
    queue = filters.CharFilter(field_name="queue__name")
    request = filters.CharFilter(field_name="request__RequestName")

    class Meta:
        model = WMCoreElement
        fields = ["database", "Status", "stuck_reason", "site"]
