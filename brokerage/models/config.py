"""gdpconfig: stored overrides of the brokerage parameters, and the history of every change to them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from brokerage.gdpconfig import REGISTRY, VALUE_TYPES, parse_value

from . import choices


class GdpConfig(models.Model):
    """One stored gdpconfig row (the real table: APP, COMPONENT, KEY, VO → VALUE, TYPE, DESCR).

    vo is empty for a row that applies to every VO; a VO row wins over it. The value is stored as text and
    read through `typed_value`. Rows for keys the registry does not know need `is_custom`.
    Write through brokerage.services.gdpconfig so that each change is validated and recorded.
    """

    app = models.CharField(max_length=64, default="jedi")
    component = models.CharField(max_length=64)
    key = models.CharField(max_length=64)
    vo = models.CharField(max_length=16, blank=True, default="", help_text="Empty: every VO.")
    value = models.TextField(blank=True)
    type = models.CharField(max_length=8, choices=choices.GDPCONFIG_TYPE, default="str")
    descr = models.CharField(max_length=256, blank=True, default="")
    is_custom = models.BooleanField(
        default=False, help_text="A key the registry does not know; nothing in the brokerage reads it by itself."
    )
    created = models.DateTimeField(default=timezone.now)
    modified = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "gdpconfig parameter"
        verbose_name_plural = "gdpconfig parameters"
        db_table = "gdpconfig"
        ordering = ["component", "key", "vo"]
        constraints = [
            models.UniqueConstraint(fields=["app", "component", "key", "vo"], name="gdpconfig_unique"),
            models.CheckConstraint(condition=Q(type__in=VALUE_TYPES), name="gdpconfig_type_known"),
        ]
        indexes = [models.Index(fields=["key", "vo"], name="gdpconfig_key_vo")]

    def __str__(self) -> str:
        return f"{self.key}{f' [{self.vo}]' if self.vo else ''} = {self.value}"

    @property
    def typed_value(self) -> Any:
        found = REGISTRY.find(self.key)
        if found is not None:
            return found[0].parse(self.value, self.key)
        return parse_value(self.key, self.type, self.value)


class GdpConfigChange(models.Model):
    """Who changed which gdpconfig row, when, from what to what. Kept when the row itself is deleted."""

    parameter = models.ForeignKey(GdpConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes")
    app = models.CharField(max_length=64)
    component = models.CharField(max_length=64)
    key = models.CharField(max_length=64)
    vo = models.CharField(max_length=16, blank=True, default="")
    action = models.CharField(max_length=8, choices=choices.GdpConfigAction.choices)
    old_value = models.TextField(blank=True, default="")
    new_value = models.TextField(blank=True, default="")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="gdpconfig_changes"
    )
    username = models.CharField(max_length=150, blank=True, default="", help_text="Kept if the user is deleted.")
    comment = models.CharField(max_length=256, blank=True, default="")
    changed_at = models.DateTimeField(default=timezone.now, db_index=True)
    revision = models.ForeignKey(
        "brokerage.GdpConfigRevision",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="changes",
        help_text="The revision this change made (none for changes made before revisions were kept).",
    )

    class Meta:
        verbose_name = "gdpconfig change"
        verbose_name_plural = "gdpconfig changes"
        db_table = "gdpconfig_changes"
        ordering = ["-changed_at", "-id"]
        indexes = [models.Index(fields=["key", "-changed_at"], name="gdpconfig_change_key")]

    def __str__(self) -> str:
        # a sentence, not raw text ("create DISK_THRESHOLD_Express: '' → '50' by ?", issue 50)
        who = self.username or "a process (no signed-in user)"
        vo = f" ({self.vo})" if self.vo else ""
        if self.action == "create":
            return f"{self.key}{vo} set to {self.new_value} by {who}"
        if self.action == "delete":
            return f"{self.key}{vo} removed (was {self.old_value}) by {who}"
        return f"{self.key}{vo} changed from {self.old_value} to {self.new_value} by {who}"


class GdpConfigRevision(models.Model):
    """The whole stored gdpconfig as it stood after one change (NetBox's ConfigRevision): every save, delete or
    applied profile makes one, with who, when and why. A cycle points at the revision it ran under; any two can be
    compared and any one restored (services.gdpconfig). `rows` holds every stored row as
    [app, component, key, vo, value, type, is_custom], sorted."""

    created = models.DateTimeField(default=timezone.now, db_index=True)
    action = models.CharField(max_length=16, choices=choices.GdpConfigRevisionAction.choices)
    summary = models.CharField(max_length=256, blank=True, default="", help_text="What changed, in a line.")
    comment = models.CharField(max_length=256, blank=True, default="")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="gdpconfig_revisions"
    )
    username = models.CharField(max_length=150, blank=True, default="", help_text="Kept if the user is deleted.")
    rows = models.JSONField(default=list, help_text="Every stored row after the change.")
    digest = models.CharField(max_length=32, help_text="BLAKE2b-128 of the rows: equal configurations, equal digests.")

    class Meta:
        verbose_name = "gdpconfig revision"
        verbose_name_plural = "gdpconfig revisions"
        db_table = "gdpconfig_revisions"
        ordering = ["-created", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(action__in=choices.GdpConfigRevisionAction.values), name="gdpconfig_revision_action_known"
            )
        ]

    def __str__(self) -> str:
        return f"revision {self.pk} ({self.action}, {self.username or '?'}, {self.created:%Y-%m-%d %H:%M})"
