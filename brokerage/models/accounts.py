"""Who a client is: OIDC identities linked to local users, and our own API tokens (issue 47)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from knox.models import AbstractAuthToken
from knox.settings import CONSTANTS


class OidcIdentity(models.Model):
    """One OIDC identity, its issuer (`iss`) and subject (`sub`), and the local user its tokens act as. A token is
    mapped through this row only, never through a name it carries: a `preferred_username` of "admin" does not make
    a token the local superuser (issue 47). The row is made with a new, unprivileged user on first use
    (OIDC_CREATE_USERS), or by an admin who links an identity to an existing account on purpose."""

    issuer = models.CharField(max_length=255, help_text="the token's iss: the identity provider's issuer URL")
    subject = models.CharField(max_length=255, help_text="the token's sub: the provider's id of the person")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities", help_text="acts as"
    )
    username_claim = models.CharField(
        max_length=255, blank=True, help_text="the token's preferred_username when last seen (shown, never used)"
    )
    created = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "brokerage_oidc_identities"
        verbose_name = "OIDC identity"
        verbose_name_plural = "OIDC identities"
        ordering = ["issuer", "subject"]
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique"),
            models.CheckConstraint(
                condition=~models.Q(issuer="") & ~models.Q(subject=""), name="oidc_identity_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class ApiToken(AbstractAuthToken):
    """An API token (`Authorization: Token …`), django-rest-knox's token model with a number for a key and a name.
    Only the token's SHA-512 digest and its first characters (the look-up key knox needs) are kept; the token is
    shown once when made. Neither is ever shown again (issue 47: a viewer read every digest and key prefix in
    the admin, whose addresses also named each token by its digest, knox's primary key)."""

    id = models.BigAutoField(primary_key=True)
    digest = models.CharField(max_length=CONSTANTS.DIGEST_LENGTH, unique=True)
    name = models.CharField(max_length=100, blank=True, help_text="what the token is for: a pilot factory, a script")

    class Meta:
        db_table = "brokerage_api_tokens"
        verbose_name = "API token"
        verbose_name_plural = "API tokens"
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name or 'token'} of {self.user} (made {self.created:%Y-%m-%d %H:%M})"
