"""Admin support for rows with a life cycle: the status is never edited directly, it moves through the
state machine with a reason, exactly as the services move it."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction

from brokerage.services.status import status_transition
from brokerage.states import IllegalTransition, UnknownStatus


class StatusTransitionForm(forms.ModelForm):
    """Adds 'move to' (the statuses allowed from the current one) and a reason to a stateful row's form."""

    transition_to = forms.ChoiceField(
        required=False, label="Move status to", help_text="Only the moves the state machine allows are offered."
    )
    transition_reason = forms.CharField(
        required=False, label="Reason", max_length=500, help_text="Recorded in the status log."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        instance = self.instance
        if instance.pk is None:
            # A new row starts in one of the machine's initial statuses; the type decides which machine.
            self.fields.pop("transition_to")
            self.fields.pop("transition_reason")
            return
        machine = instance.state_machine
        allowed = sorted(machine.transitions.get(instance.current_status, ()))
        self.fields["transition_to"].choices = [("", "— keep —")] + [(status, status) for status in allowed]
        if not allowed:
            self.fields["transition_to"].help_text = f"'{instance.current_status}' is a final status."

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk is None:
            status_field = self.instance.STATUS_FIELD
            status = cleaned.get(status_field)
            if status:
                # The machine depends on the row's type (input/output) for datasets and files.
                for field, value in cleaned.items():
                    if hasattr(self.instance, field) and field != status_field:
                        setattr(self.instance, field, value)
                machine = self.instance.state_machine
                if status not in machine.initial:
                    self.add_error(
                        status_field,
                        f"a new {machine.entity} starts in {', '.join(sorted(machine.initial))}, not '{status}'",
                    )
            return cleaned
        target = cleaned.get("transition_to")
        if target:
            try:
                self.instance.state_machine.check(self.instance.current_status, target, identifier=self.instance.pk)
            except (IllegalTransition, UnknownStatus) as error:
                self.add_error("transition_to", str(error))
        elif cleaned.get("transition_reason"):
            self.add_error("transition_to", "choose the status to move to, or leave the reason empty")
        return cleaned


class StatefulAdmin(admin.ModelAdmin):
    """ModelAdmin for Stateful models: status read-only once created, moves through status_transition."""

    form = StatusTransitionForm
    transition_fields = ("transition_to", "transition_reason")

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None:
            return fieldsets
        # A row being created has no status to move from yet.
        return [
            (name, {**options, "fields": [f for f in options["fields"] if f not in self.transition_fields]})
            for name, options in fieldsets
        ]

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            readonly.append(self.model.STATUS_FIELD)
        return readonly

    def save_model(self, request, obj, form, change):
        target = form.cleaned_data.get("transition_to") if change else None
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if target:
                try:
                    status_transition(
                        obj=obj,
                        new_status=target,
                        reason=form.cleaned_data.get("transition_reason") or "changed in the admin",
                        actor=f"admin:{request.user.get_username()}",
                    )
                except IllegalTransition as error:  # someone else moved it between form and save
                    messages.error(request, str(error))
