"""The real panda-client 2.2.0 (its `Client` module and pbook) in a virtual environment of its own, from the package
index, for the tests that point it at a live monitor (issue 36). Nothing here imports Django.

`panda_client_ready()` builds it once under PEER_DIR (default var/peer/) and returns where its python and pbook
are, or raises PeerUnavailable saying why (no package index).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tools.peer.setup import peer_dir, venv_ready

PANDA_CLIENT_VERSION = "2.2.0"
# panda-client and what it installs, pinned to the versions the tests were written with
PANDA_CLIENT_REQUIREMENTS = (
    f"panda-client=={PANDA_CLIENT_VERSION}",
    "httpx==0.28.1",
    "httpcore==1.0.9",
    "h11==0.16.0",
    "anyio==4.16.0",
    "idna==3.20",
    "certifi==2026.10.19.post1",
    "rich==15.0.0",
    "typer==0.29.2",
)
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PandaClient:
    """The venv's python, its pbook and our driver of panda-client's Client functions."""

    python: Path
    pbook: Path
    driver: Path

    def environment(self, *, server: str, token: str | None = None, home: Path) -> dict[str, str]:
        """What panda-client reads to find a server (it keeps only the scheme and host of PANDA_URL_SSL and calls
        /api/v1/…) and, with a token, to send it as PANDA_AUTH=oidc does."""
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith(("PANDA_", "OIDC_", "X509_"))
        }
        environment.update(
            PANDA_URL=f"{server}/server/panda",
            PANDA_URL_SSL=f"{server}/server/panda",
            PANDACACHE_URL=f"{server}/server/panda",
            PANDA_BEHIND_REAL_LB="1",  # no DNS load-balancing lookups of the host
            PANDA_CONFIG_ROOT=str(home),
            HOME=str(home),
            PYTHONPATH="",
            NO_COLOR="1",
            COLUMNS="250",
            # pbook is a shell script sourcing $PANDA_SYS/etc/panda/share/functions.sh, which runs the venv's python
            PANDA_SYS=str(self.python.parent.parent),
            VIRTUAL_ENV=str(self.python.parent.parent),
        )
        if token is not None:
            environment.update(PANDA_AUTH="oidc", PANDA_AUTH_VO="atlas", PANDA_AUTH_ID_TOKEN=token)
        return environment


def panda_client_ready() -> PandaClient:
    """The venv with panda-client, built on first use (pure-Python wheels: a few seconds)."""
    python = venv_ready(
        peer_dir() / f"panda-client-{PANDA_CLIENT_VERSION}",
        who="panda-client",
        installing=f"panda-client {PANDA_CLIENT_VERSION}",
        requirements=PANDA_CLIENT_REQUIREMENTS,
    )
    return PandaClient(python, python.parent / "pbook", HERE / "panda_client_driver.py")
