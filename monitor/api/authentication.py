"""API tokens that cannot be read back (issue 31: a viewer opened the admin's token list and used the admin's key).

django-rest-knox keeps only a SHA-512 digest of each token, with an expiry: the token itself is shown once, in the
admin, when it is made (brokerage.admin.tokens), and never again. Clients send it as before,
`Authorization: Token <token>`. A header that is not UTF-8 is a 401, not a server error."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from knox.auth import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed


class ApiTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, token: bytes):
        try:
            token.decode("utf-8")
        except UnicodeDecodeError as error:
            raise AuthenticationFailed("Invalid token.") from error
        return super().authenticate_credentials(token)


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The scheme in our OpenAPI schema: an Authorization header starting with "Token "."""

    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Token")
