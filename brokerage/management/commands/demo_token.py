"""An OIDC ID token for a local user, signed by the demo's own issuer, for panda-client and pbook against make run
(PANDA_AUTH=oidc, PANDA_AUTH_ID_TOKEN). The issuer's RSA key is made in VAR_DIR/oidc on first use, its public half
written as the key set the server trusts (OIDC_JWKS_FILE). Only where DEMO_OIDC_ISSUER is on (make run's
demo settings): a real deployment trusts its VO's issuer instead (README, "panda-client and pbook")."""

import json
import os
import time
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from brokerage.services.accounts import oidc_identity_link

KEY_ID = "demo-issuer-1"


def issuer_key(folder: Path):
    """The demo issuer's private key, made on first use (owner-readable only), its key set written beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "issuer-key.pem"
    if not path.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    Path(settings.OIDC_JWKS_FILE).write_text(json.dumps({"keys": [{**jwk, "kid": KEY_ID, "alg": "RS256"}]}))
    return key


class Command(BaseCommand):
    help = "Print an OIDC ID token for a local user, signed by the demo's issuer (for panda-client and pbook)."

    def add_arguments(self, parser):
        parser.add_argument("username", help="an existing user (make run makes 'admin')")
        parser.add_argument("--groups", default=settings.OIDC_VO, help="the VO groups, comma-separated")
        parser.add_argument("--hours", type=float, default=12.0, help="how long the token is valid")
        parser.add_argument(
            "--output", help="write the token to this file (owner-readable, no newline: a pilot's PANDA_AUTH_TOKEN)"
        )

    def handle(self, *args, **options):
        if not getattr(settings, "DEMO_OIDC_ISSUER", False):
            raise CommandError(
                "demo_token runs only under the demo settings (make run); a deployment trusts its VO's issuer",
                returncode=2,
            )
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"username: no user {options['username']!r}", returncode=2)
        if not 0 < options["hours"] <= 24 * 30:
            raise CommandError("--hours: more than 0 and at most 720", returncode=2)
        key = issuer_key(Path(settings.OIDC_JWKS_FILE).parent)
        now = int(time.time())
        # the demo issuer's identity of this user, linked to the account on purpose (a token is never mapped by
        # the name it carries: issue 47)
        subject = f"demo-{user.pk}"
        oidc_identity_link(issuer=settings.OIDC_ISSUER, subject=subject, user=user)
        claims = {
            "iss": settings.OIDC_ISSUER,
            "aud": settings.OIDC_AUDIENCE.split(",")[0].strip(),
            "sub": subject,
            "iat": now,
            "exp": now + int(options["hours"] * 3600),
            "name": user.get_full_name() or user.get_username(),
            "preferred_username": user.get_username(),
            "groups": [f"/{group.strip()}" for group in options["groups"].split(",") if group.strip()],
        }
        token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": KEY_ID})
        if not options["output"]:
            self.stdout.write(token)
            return
        path = Path(options["output"])
        try:
            path.unlink(missing_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as error:
            raise CommandError(f"--output: {path}: {error.strerror}", returncode=2) from error
        with os.fdopen(descriptor, "w") as handle:
            handle.write(token)  # the pilot puts the file's content in a header as it is: no newline
        self.stdout.write(f"token written to {path}")
