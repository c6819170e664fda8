"""API tokens in the admin: made here, shown once, then only their first characters, owner and expiry.

django-rest-knox keeps a digest (monitor.api.authentication); its own admin page would take an empty expiry as
"never", so here a new token expires after API_TOKEN_DAYS unless the admin chooses another date."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.utils import timezone
from knox.admin import AuthTokenAdmin
from knox.models import AuthToken

if admin.site.is_registered(AuthToken):
    admin.site.unregister(AuthToken)


@admin.register(AuthToken)
class ApiTokenAdmin(AuthTokenAdmin):
    list_display = ("token_key", "user", "created", "expiry")
    list_filter = ("expiry",)
    search_fields = ("token_key", "user__username")

    def get_changeform_initial_data(self, request):
        return {
            "expiry": timezone.now() + settings.REST_KNOX["TOKEN_TTL"],
            **super().get_changeform_initial_data(request),
        }

    def has_change_permission(self, request, obj=None):
        return False  # a token is made or deleted, never edited

    def save_model(self, request, obj, form, change):
        # knox's own message would say "TOKEN …"; ours says what to do with it
        super(AuthTokenAdmin, self).save_model(request, obj, form, change)
        self.message_user(
            request,
            f"The new token for {obj.user}: {form.token} — copy it now: it is shown only this once (only its digest "
            f"is kept). Clients send it as the header 'Authorization: Token {form.token[:6]}…'.",
            messages.SUCCESS,
        )
