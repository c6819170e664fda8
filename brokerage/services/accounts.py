"""Who clients are (issue 47): the user an OIDC identity acts as, identities linked by an admin or an operator's
command, and API tokens made outside the admin.

An OIDC token is mapped through its identity (issuer and `sub`) only, never through a name it carries: a token
whose `preferred_username` is "admin" is not the local superuser. An identity seen first gets a new user of its own
(named after the token where that name is free), without any permission but its VO groups'.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from knox.models import get_digest_token
from knox.settings import CONSTANTS

from brokerage.models import ApiToken, OidcIdentity
from brokerage.params import refused_character

# an identity's last_seen is written at most this often (not on every request a pilot makes)
SEEN_EVERY = timedelta(minutes=5)


class IdentityRefused(Exception):
    """A verified token that cannot stand for anyone here; the message says why (the client is told it)."""


# claims we keep (as the user's names, the identity's key): text the database can store, of a bounded length
KEPT_CLAIMS = {"sub": 255, "preferred_username": 255, "name": 300, "email": 254}


def _claim_text(claims: dict[str, Any], name: str) -> str:
    """A claim we keep, as text; IdentityRefused naming it when it is not text or holds a character no
    database stores (issue 47: a NUL in preferred_username was a 500)."""
    value = claims.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise IdentityRefused(f"The claim {name} is not a string.")
    found = refused_character(value) or ("a control character" if any(ord(ch) < 32 for ch in value) else None)
    if found:
        raise IdentityRefused(f"The claim {name} holds {found}.")
    if len(value) > KEPT_CLAIMS[name]:
        raise IdentityRefused(f"The claim {name} is over {KEPT_CLAIMS[name]} long.")
    return value


def _free_username(wanted: str, *, issuer: str, subject: str) -> str | None:
    """A username no local account has: the token's own name when free, else that name with a digest of the
    identity (the same identity always asks for the same one). None when neither is free."""
    model = get_user_model()
    length = model._meta.get_field("username").max_length
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()[:10]
    for candidate in (wanted[:length], f"{wanted[: length - 11]}-{digest}"):
        if candidate and not model.objects.filter(username=candidate).exists():
            return candidate
    return None


@transaction.atomic
def oidc_identity_user(*, claims: dict[str, Any], vo: str, now: datetime):
    """The user a verified token stands for: the one its identity (issuer and subject) is linked to, never one
    found by a name the token carries (issue 47). An identity seen first gets a new user of its own, without any
    permission but its VO groups' (OIDC_CREATE_USERS); an existing account acts for a token only when an admin
    linked the identity to it (admin: OIDC identities). The VO groups follow the token. None when there is no
    user and none may be made."""
    subject = _claim_text(claims, "sub")
    wanted = _claim_text(claims, "preferred_username") or subject
    full_name, email = _claim_text(claims, "name"), _claim_text(claims, "email")
    if not subject:
        raise IdentityRefused("The claim sub is empty.")
    issuer = str(claims["iss"])
    identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if identity is None:
        if not settings.OIDC_CREATE_USERS:
            return None
        username = _free_username(wanted, issuer=issuer, subject=subject)
        if username is None:
            raise IdentityRefused(f"No free username for {wanted!r} here.")
        first, _, last = " ".join(full_name.split()).partition(" ")
        user = get_user_model()(username=username, first_name=first[:150], last_name=last[:150], email=email)
        user.set_unusable_password()
        try:
            with transaction.atomic():  # two first requests at once: the second finds what the first made
                user.save()
                identity = OidcIdentity.objects.create(
                    issuer=issuer, subject=subject, user=user, username_claim=wanted, last_seen=now
                )
        except IntegrityError:
            identity = OidcIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
            if identity is None:
                raise IdentityRefused(f"No free username for {wanted!r} here.") from None
    user = identity.user
    if not user.is_active:
        return None
    if identity.username_claim != wanted or identity.last_seen is None or now - identity.last_seen > SEEN_EVERY:
        OidcIdentity.objects.filter(pk=identity.pk).update(last_seen=now, username_claim=wanted)
    wanted_groups = _vo_groups(claims, vo)
    held = {group.name: group for group in user.groups.all() if group.name == vo or group.name.startswith(f"{vo}/")}
    stale = [group for name, group in held.items() if name not in wanted_groups]
    if stale:
        user.groups.remove(*stale)
    fresh = Group.objects.filter(name__in=wanted_groups - set(held))
    if fresh:
        user.groups.add(*fresh)
    return user


def _vo_groups(claims: dict[str, Any], vo: str) -> set[str]:
    """The token's groups of the VO, without a leading slash ("/atlas/production" → "atlas/production")."""
    listed = claims.get("groups") or claims.get("wlcg.groups") or []
    if isinstance(listed, str):
        listed = [listed]
    if not isinstance(listed, list):
        return set()
    names = {name.lstrip("/") for name in listed if isinstance(name, str) and not refused_character(name)}
    return {name for name in names if name == vo or name.startswith(f"{vo}/")}


@transaction.atomic
def oidc_identity_link(*, issuer: str, subject: str, user) -> OidcIdentity:
    """Links an identity to an existing user on purpose (an admin, or an operator's command such as demo_token):
    from then on its tokens act as that user."""
    identity, _ = OidcIdentity.objects.update_or_create(issuer=issuer, subject=subject, defaults={"user": user})
    return identity


def api_token_create(*, user, name: str, now: datetime, days: int) -> tuple[ApiToken, str]:
    """A new API token for `user`, valid `days` days: the row (its digest only) and the token, to be shown once."""
    digest, secret = get_digest_token()
    # built directly: knox's manager takes the expiry as a time from its own clock, not ours
    token = ApiToken(digest=digest, token_key=secret[: CONSTANTS.TOKEN_KEY_LENGTH], user=user, name=name,
                     expiry=now + timedelta(days=days))  # fmt: skip
    token.save()
    return token, secret
