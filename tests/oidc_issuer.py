"""A VO's OIDC issuer for tests: our own RSA key pair, its key set in a file the server is configured to trust, and
ID tokens signed with it (issue 36). Plain builder; the tests' fixtures make one per test."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from monitor.api import oidc

ISSUER = "https://auth.example.org/realms/atlas/"
CLIENT_ID = "panda-client-atlas"


def key_pair():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class TestIssuer:
    """Trusted by the server once `configure(settings)` ran; `token(...)` signs an ID token."""

    __test__ = False  # not a test class for pytest

    def __init__(self, folder: Path, key=None, kid: str = "key-1"):
        self.key, self.kid = key or key_pair(), kid
        self.jwks = folder / "jwks.json"
        self.publish(self.key, kid)

    def publish(self, key, kid: str) -> None:
        """Writes `key` as the issuer's only key (a rotation, when it is another)."""
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        self.jwks.write_text(json.dumps({"keys": [{**jwk, "kid": kid, "use": "sig", "alg": "RS256"}]}))

    def configure(self, settings) -> None:
        settings.OIDC_ISSUER, settings.OIDC_AUDIENCE = ISSUER, f"other-client, {CLIENT_ID}"
        settings.OIDC_JWKS_FILE, settings.OIDC_JWKS_URL = str(self.jwks), ""
        settings.OIDC_VO, settings.OIDC_CREATE_USERS = "atlas", True
        oidc._key_sets.clear()

    def token(self, *, key=None, kid: str | None = None, lifetime: int = 3600, **claims) -> str:
        return signed_token(key or self.key, kid=kid or self.kid, lifetime=lifetime, **claims)


def signed_token(key, *, kid: str = "key-1", lifetime: int = 3600, **claims) -> str:
    """An ID token from this issuer for its client, valid `lifetime` seconds from now, signed with `key`."""
    now = int(time.time())
    body = {"iss": ISSUER, "aud": CLIENT_ID, "sub": f"sub-{claims.get('preferred_username', 'x')}", "iat": now,
            "exp": now + lifetime, **claims}  # fmt: skip
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": kid})
