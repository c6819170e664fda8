"""gdpconfig in the admin: typed validation against the registry, defaults beside effective values, history."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import escape, format_html, format_html_join

from brokerage.admin.decisions import ReadOnlyAdmin
from brokerage.costly import SlotsBusy, costly_client, costly_slot
from brokerage.gdpconfig import REGISTRY, GdpConfigError
from brokerage.gdpconfig.assignments import assignments_parse
from brokerage.gdpconfig.profiles import PROFILES
from brokerage.models import GdpConfig, GdpConfigChange, GdpConfigRevision
from brokerage.params import whole_number
from brokerage.selectors.gdpconfig import (
    gdpconfig_parameter_rows,
    gdpconfig_profile_effect,
    gdpconfig_revision_diff,
    gdpconfig_revision_previous,
    gdpconfig_view,
)
from brokerage.selectors.whatif import cycle_id_list, cycles_what_if
from brokerage.services.gdpconfig import (
    GdpConfigInputError,
    gdpconfig_delete,
    gdpconfig_profile_apply,
    gdpconfig_revision_restore,
    gdpconfig_save,
    gdpconfig_validate,
)

# the what-if of the change form looks back this far at most
MAX_WHAT_IF_HOURS = 24 * 7


class GdpConfigForm(forms.ModelForm):
    """Validates a row with the same function the service and the API use; errors land on the field at fault."""

    comment = forms.CharField(required=False, max_length=256, help_text="Why: kept in the change history.")

    class Meta:
        model = GdpConfig
        fields = ["key", "vo", "value", "type", "app", "component", "descr", "is_custom"]
        widgets = {"value": forms.Textarea(attrs={"rows": 3, "cols": 60})}
        help_texts = {
            "key": "A registered parameter (DISK_THRESHOLD) or its per-gshare / per-workflow variant "
            "(DISK_THRESHOLD_Express). Other keys need 'custom'.",
            "type": "Taken from the registry for registered parameters.",
            "app": "Taken from the registry for registered parameters.",
            "component": "Taken from the registry for registered parameters.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("type", "app", "component"):
            self.fields[name].required = False
        key = self.initial.get("key") or self.data.get("key") or getattr(self.instance, "key", "")
        found = REGISTRY.find(key) if key else None
        if found is not None and self.instance.pk:
            # a registered parameter's type, app and component are the registry's: shown, not editable (a change
            # was silently put back, issue 50)
            for name in ("type", "app", "component"):
                self.fields[name].disabled = True
                self.fields[name].help_text = "From the registry: the same for every row of this parameter."
        if found is not None:
            parameter = found[0]
            # the admin shows help text as HTML: descriptions hold KEY_<gshare>, so it is escaped here
            self.fields["value"].help_text = escape(
                f"{parameter.value_type}{f' in {parameter.unit}' if parameter.unit else ''}; "
                + (f"from {parameter.bounds_text}; " if parameter.bounds_text else "")
                + f"default {parameter.default_text}. {parameter.description}"
            )

    def clean(self):
        cleaned = super().clean()
        if self.errors.get("key"):
            return cleaned
        try:
            data = gdpconfig_validate(
                key=cleaned.get("key", ""),
                value=cleaned.get("value", ""),
                vo=cleaned.get("vo", ""),
                value_type=cleaned.get("type") or "",
                app=cleaned.get("app") or "",
                component=cleaned.get("component") or "",
                is_custom=bool(cleaned.get("is_custom")),
            )
        except GdpConfigInputError as error:
            self.add_error(error.field if error.field in self.fields else None, str(error))
            return cleaned
        # a registered parameter given another type, app or component (a new row: the fields are still open) is told
        # so on the field, not put back without a word
        for field in ("type", "app", "component"):
            given = cleaned.get(field) or ""
            if not data.is_custom and given and given != getattr(data, field) and not self.fields[field].disabled:
                self.add_error(field, f"{data.key} is registered with {field} '{getattr(data, field)}', not '{given}'")
        # Normalised values go into the instance, so the model's unique check sees the real row identity.
        for field in ("app", "component", "key", "vo", "value", "type", "is_custom"):
            cleaned[field] = getattr(data, field)
        return cleaned


class GdpConfigChangeInline(admin.TabularInline):
    model = GdpConfigChange
    fields = ["changed_at", "action", "old_value", "new_value", "username", "comment"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["-changed_at"]
    verbose_name_plural = "change history"

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(GdpConfig)
class GdpConfigAdmin(admin.ModelAdmin):
    form = GdpConfigForm
    list_display = [
        "key",
        "vo_display",
        "component",
        "value",
        "type",
        "default_display",
        "effective_display",
        "modified",
    ]
    list_filter = ["component", "app", "type", "vo", "is_custom"]
    search_fields = ["key", "value", "descr"]
    readonly_fields = ["created", "modified"]
    inlines = [GdpConfigChangeInline]
    change_list_template = "admin/brokerage/gdpconfig/change_list.html"
    fieldsets = [
        (None, {"fields": ["key", "vo", "value", "comment"]}),
        ("Identity and type", {"fields": ["type", "app", "component", "is_custom", "descr"]}),
        ("Times", {"fields": ["created", "modified"]}),
    ]

    @admin.display(description="VO", ordering="vo")
    def vo_display(self, obj: GdpConfig) -> str:
        return obj.vo or "all"

    @admin.display(description="default")
    def default_display(self, obj: GdpConfig) -> str:
        found = REGISTRY.find(obj.key)
        return found[0].default_text if found else "— (custom)"

    @admin.display(description="effective")
    def effective_display(self, obj: GdpConfig) -> str:
        """The value the brokerage uses for this row's key and VO: a VO row can hide a VO-less one."""
        found = REGISTRY.find(obj.key)
        try:
            stored = obj.typed_value
        except GdpConfigError as error:
            return format_html('<span class="errornote">invalid: {}</span>', str(error))
        if found is None:
            return str(stored)
        parameter, suffix = found
        value = gdpconfig_view(vo=obj.vo).get(parameter.key, gshare=suffix, workflow=suffix)
        return "unset" if value is None else str(value)

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        found = REGISTRY.find(initial.get("key", ""))
        if found is not None:
            parameter = found[0]
            initial.setdefault("component", parameter.component)
            initial.setdefault("app", parameter.app)
            initial.setdefault("type", parameter.value_type)
            if parameter.default is not None:
                initial.setdefault("value", parameter.default_text)
        return initial

    def save_model(self, request, obj, form, change):
        saved = gdpconfig_save(
            key=obj.key,
            value=obj.value,
            vo=obj.vo,
            value_type=obj.type,
            app=obj.app,
            component=obj.component,
            is_custom=obj.is_custom,
            descr=obj.descr,
            user=request.user,
            comment=form.cleaned_data.get("comment", ""),
            instance=obj if change else None,
        )
        obj.pk, obj.created, obj.modified, obj.descr = saved.pk, saved.created, saved.modified, saved.descr

    def delete_model(self, request, obj):
        gdpconfig_delete(instance=obj, user=request.user, comment="deleted in the admin")

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            gdpconfig_delete(instance=obj, user=request.user, comment="deleted in the admin")

    def get_urls(self):
        urls = super().get_urls()
        extra = [
            path(
                "parameters/",
                self.admin_site.admin_view(self.parameters_view),
                name="brokerage_gdpconfig_parameters",
            ),
            path(
                "what-if/",
                self.admin_site.admin_view(self.what_if_view),
                name="brokerage_gdpconfig_what_if",
            ),
            path(
                "profile/",
                self.admin_site.admin_view(self.profile_view),
                name="brokerage_gdpconfig_profile",
            ),
        ]
        return extra + urls

    def profile_view(self, request):
        """Apply a profile (seed, panda) to the live gdpconfig: first what would change, then, on confirmation
        by an admin who may change gdpconfig, the PROFILE row (with its history entry)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        source = request.POST if request.method == "POST" else request.GET
        vo = source.get("vo", "").strip()
        profile = source.get("profile", "")
        error = ""
        if profile and profile not in PROFILES:
            error, profile = f"Unknown profile '{profile}'.", ""
        if request.method == "POST" and profile:
            if not self.has_change_permission(request):
                raise PermissionDenied
            gdpconfig_profile_apply(profile=profile, vo=vo, user=request.user, comment=source.get("comment", ""))
            self.message_user(
                request, f"Profile {profile} applied" + (f" for VO {vo}." if vo else " for every VO."), messages.SUCCESS
            )
            return HttpResponseRedirect(reverse("admin:brokerage_gdpconfig_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Apply a gdpconfig profile",
            "profiles": PROFILES.values(),
            "profile": profile,
            "current": gdpconfig_view(vo=vo).profile,
            "vo": vo,
            "error": error,
            "effect": gdpconfig_profile_effect(profile=profile, vo=vo) if profile else [],
            "can_apply": self.has_change_permission(request),
        }
        return TemplateResponse(request, "admin/brokerage/gdpconfig/profile.html", context)

    def what_if_view(self, request):
        """Before saving: the key and value of the change form run over the decisions of the last hour's cycles
        (or more hours), each replayed on its stored inputs: how many would change in outcome, choice or
        candidates, which, and every decision that could not be replayed with why. A POST (the form's own token in
        its body, never in a URL), answered in a new tab or, from the change form's script, as a fragment shown
        under the form being edited. Reads only."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        key = request.POST.get("key", "").strip() if request.method == "POST" else ""
        value = request.POST.get("value", "") if request.method == "POST" else ""
        hours = whole_number(request.POST.get("what_if_hours", ""), maximum=MAX_WHAT_IF_HOURS) or 1
        effect, error = None, ""
        if key:
            try:
                overrides = assignments_parse([f"{key}={value}"])
            except GdpConfigError as problem:
                error = str(problem)
            else:
                now = timezone.now()
                cycles = cycle_id_list(since=now - timedelta(hours=hours), until=now)
                try:  # bounded as every what-if (brokerage.costly; issue 47)
                    with costly_slot(client=costly_client(request), what="what-if"):
                        effect = cycles_what_if(cycle_ids=cycles, overrides=overrides, seconds=settings.WHAT_IF_SECONDS)
                except SlotsBusy as busy:
                    error = f"{busy} Try again in {busy.retry_after} s."
                else:
                    effect["n_cycles"] = len(cycles)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "What if this value were saved?",
            "key": key,
            "value": value,
            "hours": hours,
            "effect": effect,
            "error": error,
        }
        fragment = request.headers.get("X-Requested-With") == "fetch"
        template = (
            "admin/brokerage/gdpconfig/_what_if_result.html" if fragment else "admin/brokerage/gdpconfig/what_if.html"
        )
        return TemplateResponse(request, template, context)

    def parameters_view(self, request):
        """Every registered parameter with its unit, default, effective value and the row it comes from."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        vo = request.GET.get("vo", "")
        component = request.GET.get("component", "")
        rows = [row for row in gdpconfig_parameter_rows(vo=vo) if not component or row["component"] == component]
        add_url = reverse("admin:brokerage_gdpconfig_add")
        for row in rows:
            row["override_url"] = f"{add_url}?key={row['key']}" + (f"&vo={vo}" if vo else "")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "gdpconfig parameters",
            "rows": rows,
            "vo": vo,
            "component": component,
            "components": REGISTRY.components(),
        }
        return TemplateResponse(request, "admin/brokerage/gdpconfig/parameters.html", context)


@admin.register(GdpConfigChange)
class GdpConfigChangeAdmin(admin.ModelAdmin):
    """The change history, deletions included; read-only."""

    list_display = ["changed_at", "__str__", "action", "username", "comment"]
    list_filter = ["action", "component", "vo"]
    search_fields = ["key", "username", "comment", "old_value", "new_value"]
    date_hierarchy = "changed_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(GdpConfigRevision)
class GdpConfigRevisionAdmin(ReadOnlyAdmin):
    """Revisions are made by the services, never edited: each shows its difference from the one before and can be
    restored (after its what-if on the monitor's revision page) by an admin who may change gdpconfig."""

    list_display = ["id", "created", "action", "summary", "username", "comment"]
    list_filter = ["action"]
    search_fields = ["summary", "comment", "username"]
    readonly_fields = ["created", "action", "summary", "comment", "username", "digest", "difference"]
    exclude = ["rows", "user"]
    actions = ["restore_revision"]

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="difference from the revision before")
    def difference(self, obj: GdpConfigRevision) -> str:
        previous = gdpconfig_revision_previous(revision=obj)
        if previous is None:
            return f"the first revision: {len(obj.rows)} rows"
        rows = gdpconfig_revision_diff(old=previous, new=obj)
        if not rows:
            return "no difference"
        return format_html(
            "<table><tr><th>key</th><th>VO</th><th>before</th><th>after</th></tr>{}</table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                (
                    (row["key"], row["vo"] or "all", "—" if row["before"] is None else row["before"],
                     "—" if row["after"] is None else row["after"])
                    for row in rows
                ),
            ),
        )  # fmt: skip

    @admin.action(description="Restore the selected revision", permissions=["restore"])
    def restore_revision(self, request, queryset):
        selected = list(queryset.values_list("pk", flat=True)[:2])
        if len(selected) != 1:
            self.message_user(request, "Select exactly one revision to restore.", messages.ERROR)
            return
        revision_id = selected[0]
        try:
            made = gdpconfig_revision_restore(
                revision_id=revision_id, user=request.user, comment="restored in the admin"
            )
        except GdpConfigInputError as error:
            self.message_user(request, str(error), messages.WARNING)
            return
        self.message_user(request, f"Revision {revision_id} restored as revision {made.pk}.", messages.SUCCESS)

    def has_restore_permission(self, request) -> bool:
        return request.user.has_perm("brokerage.change_gdpconfig")
