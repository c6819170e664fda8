"""`make run`'s settings: the product as a shifter meets it, on this machine. DEBUG is off, so a missing page is the
site's own 404 (templates/404.html) and a failure its own 500, never Django's debug pages; static files are served
collected, compressed and cached as in production (scripts/run.sh runs collectstatic). Over plain http on loopback.

The secret key comes from SECRET_KEY, else from VAR_DIR/secret-key, made on the first start (owner-readable only),
so nothing secret is in the repository and sessions outlive a restart. A developer who wants Django's debug pages
runs `DJANGO_SETTINGS_MODULE=config.settings.development make run`.
"""

import os
import secrets
from pathlib import Path

os.environ["DJANGO_DEBUG"] = "false"


def _secret_key(var_dir: Path) -> str:
    path = var_dir / "secret-key"
    if not path.exists():
        var_dir.mkdir(parents=True, exist_ok=True)
        # created with owner-only permissions, never readable by others even for an instant
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(50) + "\n")
    return path.read_text().strip()


if not os.environ.get("SECRET_KEY"):
    os.environ["SECRET_KEY"] = _secret_key(Path(os.environ.get("VAR_DIR", Path(__file__).resolve().parents[2] / "var")))

from .base import *  # noqa: E402, F403
from .base import env_list  # noqa: E402

DEBUG = False
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
# the demo's admin login (manage.py dev_admin, password in VAR_DIR/admin-password): never in production
DEV_ADMIN = True
# panda-client and pbook with PANDA_AUTH=oidc: the demo is its own token issuer (manage.py demo_token signs an ID
# token for a local user with a key made in VAR_DIR/oidc on first use); never in production
DEMO_OIDC_ISSUER = True
OIDC_ISSUER = os.environ.get("OIDC_ISSUER") or "http://localhost/demo-issuer"
OIDC_AUDIENCE = os.environ.get("OIDC_AUDIENCE") or "panda-client-demo"
OIDC_JWKS_FILE = os.environ.get("OIDC_JWKS_FILE") or str(VAR_DIR / "oidc" / "jwks.json")  # noqa: F405
