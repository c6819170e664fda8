"""OIDC ID tokens, as panda-client sends them (`PANDA_AUTH=oidc`: `Authorization: Bearer <ID token>` and the VO in
`Origin`), beside our own API tokens (issue 36).

A token is accepted when its RS256 signature verifies with a key of the configured issuer's key set (OIDC_JWKS_URL,
or OIDC_JWKS_FILE for a machine without the issuer in reach), its `iss` is OIDC_ISSUER, its `aud` one of
OIDC_AUDIENCE (the client ids, as panda-server's auth_config lists them) and it has not expired. It stands for the
user its identity (issuer and `sub`) is linked to (brokerage.models.OidcIdentity), never for a local account that
happens to have its `preferred_username` (issue 47): an identity seen first gets a new user of its own when
OIDC_CREATE_USERS is on, named after `preferred_username` where that name is free, with the token's `name` as the
user's full name (the name PanDA records as a task's userName); an admin links an identity to an existing account
(brokerage.services.accounts). The token's `groups` decide the user's membership of Django groups named after the
VO's groups ("atlas", "atlas/production"): a group of the VO the token no longer lists is left; groups the admin
made otherwise are untouched. The permissions are the groups' and the user's own, as for any user (panda-server's
production role is a group with the permission to change tasks). Off unless OIDC_ISSUER is set.

The key set is read at most every OIDC_JWKS_REFRESH_SECONDS (panda-server's TokenDecoder refreshes every 10 min),
and again at once for a key id it does not hold (the issuer rotated its keys).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import jwt
from django.conf import settings
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

from brokerage.services.accounts import IdentityRefused, oidc_identity_user

_lock = threading.Lock()
_key_sets: dict[str, tuple[float, dict[str, Any]]] = {}


def oidc_enabled() -> bool:
    return bool(getattr(settings, "OIDC_ISSUER", ""))


def _read_key_set(source: str) -> dict[str, Any]:
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=10) as response:  # the admin's configured URL
            return json.loads(response.read())
    return json.loads(Path(source).read_text())


def key_set(*, refresh: bool = False) -> dict[str, Any]:
    """The issuer's JSON Web Key Set, cached for OIDC_JWKS_REFRESH_SECONDS."""
    source = settings.OIDC_JWKS_URL or settings.OIDC_JWKS_FILE
    if not source:
        raise AuthenticationFailed("Token authentication failed. OIDC_JWKS_URL or OIDC_JWKS_FILE is not set.")
    with _lock:
        held = _key_sets.get(source)
        if refresh or held is None or time.monotonic() - held[0] > settings.OIDC_JWKS_REFRESH_SECONDS:
            try:
                held = _key_sets[source] = (time.monotonic(), _read_key_set(source))
            except (OSError, ValueError) as error:
                raise AuthenticationFailed(f"Token authentication failed. The issuer's keys: {error}") from error
        return held[1]


def _public_key(kid: str):
    for refresh in (False, True):  # a key id we do not hold: the issuer may have rotated its keys
        for jwk in key_set(refresh=refresh).get("keys", []):
            if jwk.get("kid") == kid:
                return jwt.PyJWK(jwk, algorithm="RS256").key
    raise AuthenticationFailed(f"Token authentication failed. No key {kid} in the issuer's key set.")


def token_claims(token: str) -> dict[str, Any]:
    """The verified claims of an ID token, or AuthenticationFailed saying what is wrong with it."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as error:
        raise AuthenticationFailed(f"Token authentication failed. Not a token: {error}") from error
    if header.get("alg") != "RS256":
        raise AuthenticationFailed(f"Token authentication failed. Signed with {header.get('alg')}, not RS256.")
    if "kid" not in header:
        raise AuthenticationFailed("Token authentication failed. The token names no key (kid).")
    audiences = [aud.strip() for aud in settings.OIDC_AUDIENCE.split(",") if aud.strip()]
    if not audiences:  # a token made for another client of the same issuer must not pass
        raise AuthenticationFailed("Token authentication failed. OIDC_AUDIENCE (the client ids) is not set.")
    try:
        return jwt.decode(
            token,
            _public_key(header["kid"]),
            algorithms=["RS256"],
            audience=audiences,
            issuer=settings.OIDC_ISSUER,
            options={"require": ["exp", "iss", "sub", "aud"]},
            leeway=30,
        )
    except jwt.InvalidTokenError as error:
        raise AuthenticationFailed(f"Token authentication failed. Invalid token: {error}") from error


class OidcAuthentication(BaseAuthentication):
    """`Authorization: Bearer <OIDC ID token>`; the VO from `Origin` (panda-client's PANDA_AUTH_VO), else OIDC_VO."""

    keyword = "Bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None
        if not oidc_enabled():
            raise AuthenticationFailed("Token authentication failed. OIDC tokens are not accepted here (OIDC_ISSUER).")
        if len(parts) != 2:
            raise AuthenticationFailed("Token authentication failed. Send one token after Bearer.")
        try:
            # the pilot quotes the token it read from a file for its curl command line ('…'): the quotes are not it
            token = parts[1].decode("ascii").strip("'\"")
        except UnicodeDecodeError as error:
            raise AuthenticationFailed("Token authentication failed. The token is not ASCII.") from error
        claims = token_claims(token)
        origin = request.headers.get("Origin") or ""
        # panda-client sends the VO ("atlas", "atlas:production"); a browser's Origin is a URL and names no VO
        vo = origin.replace(":", ".").split(".")[0] if origin and "://" not in origin else settings.OIDC_VO
        if vo != settings.OIDC_VO:
            raise AuthenticationFailed(f"Token authentication failed. Unknown vo : {vo}")
        try:
            user = oidc_identity_user(claims=claims, vo=vo, now=timezone.now())
        except IdentityRefused as refused:
            raise AuthenticationFailed(f"Token authentication failed. {refused}") from refused
        if user is None:
            raise AuthenticationFailed(f"Token authentication failed. No active user {claims.get('sub')} here.")
        return user, claims

    def authenticate_header(self, request):
        return self.keyword


class OidcScheme(OpenApiAuthenticationExtension):
    """The scheme in our OpenAPI schema: an OIDC ID token as a bearer token."""

    target_class = OidcAuthentication
    name = "oidcAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix="Bearer", bearer_format="JWT"
        )
