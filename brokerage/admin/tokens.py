"""Who clients are, in the admin (issue 47): API tokens and OIDC identities.

API tokens are made here (or with `manage.py api_token`), shown once, then only their owner, name, creation and
expiry: never the digest or the first characters knox keeps to find a token, on no page and in no address (our
token model has a number for a key). A new token expires after API_TOKEN_DAYS unless the admin chooses another
date (knox's own page would take an empty expiry as "never").

OIDC identities: the local user each identity (issuer and subject) acts as. An identity seen for the first time
gets a new user of its own; linking one to an existing account is done here, on purpose."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.utils import timezone
from knox.admin import AuthTokenCreateForm
from knox.models import AuthToken

from brokerage.models import ApiToken, OidcIdentity

if admin.site.is_registered(AuthToken):  # knox registers its own model, unused since ours took its place
    admin.site.unregister(AuthToken)


class ApiTokenCreateForm(AuthTokenCreateForm):
    class Meta(AuthTokenCreateForm.Meta):
        model = ApiToken
        fields = ["user", "name", "expiry"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "created", "expiry", "expired")
    list_filter = ("expiry",)
    search_fields = ("name", "user__username")
    raw_id_fields = ("user",)
    fields = ("user", "name", "created", "expiry")  # what anyone may see of a token; the add form has its own
    readonly_fields = ("created",)

    @admin.display(boolean=True)
    def expired(self, token: ApiToken) -> bool:
        return token.expiry is not None and token.expiry <= timezone.now()

    def get_fields(self, request, obj=None):
        return ApiTokenCreateForm.Meta.fields if obj is None else self.fields

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.fields

    def get_changeform_initial_data(self, request):
        return {
            "expiry": timezone.now() + settings.REST_KNOX["TOKEN_TTL"],
            **super().get_changeform_initial_data(request),
        }

    def has_change_permission(self, request, obj=None):
        return False  # a token is made or deleted, never edited

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        self.message_user(
            request,
            f"The new token for {obj.user}: {form.token} — copy it now: it is shown only this once (only its digest "
            f"is kept). Clients send it as the header 'Authorization: Token {form.token[:6]}…'.",
            messages.SUCCESS,
        )


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """An identity's link to a user: made on first use with a new user, or here by an admin on purpose."""

    list_display = ("subject", "issuer", "user", "username_claim", "created", "last_seen")
    list_filter = ("issuer",)
    search_fields = ("subject", "username_claim", "user__username")
    raw_id_fields = ("user",)
    readonly_fields = ("username_claim", "created", "last_seen")
