"""The real DIRAC 9.1.22 TaskQueueDB beside the project: a virtual environment with the `dirac` wheel installed
without its dependencies (a plain `pip install dirac` fails on gfal2-python and M2Crypto wheels that need C
libraries TaskQueueDB never uses) plus what its import chain needs, and a private MariaDB server from Debian's
packages, started like the PostgreSQL of scripts/with_postgres.sh (own data directory, socket and port,
`--skip-grant-tables`, stopped by its PID).

`dirac_peer_ready()` prepares the environment once under PEER_DIR (default var/peer/) and returns it, or raises
PeerUnavailable saying why (no MariaDB, no package index, a build that fails). Nothing here imports Django.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tools.peer.setup import PeerUnavailable, _run, peer_dir, venv_ready

DIRAC_VERSION = "9.1.22"
# What TaskQueueDB's import chain needs (DIRAC/__init__, Core.Base.DB, ConfigurationSystem, Registry, diracx's
# client importer hook), pinned to the versions the differential test was written against.
DIRAC_REQUIREMENTS = (
    "diraccfg==1.0.1",
    f"DIRACCommon=={DIRAC_VERSION}",
    "mysqlclient==2.3.1",
    "importlib_metadata==10.2.0",
    "importlib_resources==7.1.0",
    "cachetools==8.0.1",
    "diracx==0.7.0",
    "M2Crypto==0.51.0",
    "pyasn1==0.6.5",
    "pyasn1-modules==0.4.2",
    "psutil==7.2.2",
)
HERE = Path(__file__).resolve().parent
SYSTEM_PATHS = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")


@dataclass(frozen=True)
class DiracPeer:
    """Where the real DIRAC is: the venv's python and the driver script it runs."""

    python: Path
    driver: Path


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SYSTEM_PATHS))


def dirac_peer_ready() -> DiracPeer:
    """The venv with the real DIRAC, built on first use (a few minutes: mysqlclient and M2Crypto compile)."""
    for program in ("mariadbd", "mariadb-install-db", "mariadb_config", "swig"):
        if _which(program) is None:
            raise PeerUnavailable(f"{program} is not installed (scripts/ensure_mariadb.sh installs Debian's packages)")
    python = venv_ready(
        peer_dir() / "dirac-venv",
        who="DIRAC",
        installing="what TaskQueueDB imports (mysqlclient and M2Crypto compile)",
        no_deps=(f"dirac=={DIRAC_VERSION}",),
        requirements=DIRAC_REQUIREMENTS,
    )
    return DiracPeer(python=python, driver=HERE / "dirac_driver.py")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class MariaDB:
    """A running private server: where to reach it."""

    port: int
    socket: Path


@contextmanager
def mariadb_server():
    """A private MariaDB for one run: a fresh data directory, `--skip-grant-tables` on loopback, the database
    TaskQueueDB; stopped and removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="brokerage-mariadb-"))
    data, sock, pid = root / "data", root / "sock", root / "pid"
    user = ["--user=root"] if os.geteuid() == 0 else []
    # its own temporary directory: the bootstrap's temporary tables in the shared /tmp were once found gone
    # ("Could not remove temporary table … error: 2"), failing the set-up; nothing else writes in this one
    (root / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(root / "tmp")}
    _run(
        [_which("mariadb-install-db"), "--no-defaults", f"--datadir={data}", "--skip-test-db", *user],
        "initialising MariaDB's data directory",
        env=env,
    )
    port = _free_port()
    log = (root / "server.log").open("w")
    server = subprocess.Popen(
        [
            _which("mariadbd"),
            "--no-defaults",
            f"--datadir={data}",
            f"--socket={sock}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={pid}",
            "--skip-grant-tables",
            "--innodb-buffer-pool-size=256M",
            "--innodb-flush-log-at-trx-commit=2",
            f"--tmpdir={root / 'tmp'}",
            *user,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        client = _which("mariadb")
        for _ in range(120):
            if sock.exists() and client:
                ready = subprocess.run(
                    [client, "--no-defaults", "-S", str(sock), "-e", "CREATE DATABASE IF NOT EXISTS TaskQueueDB"],
                    capture_output=True,
                )
                if ready.returncode == 0:
                    break
            if server.poll() is not None:
                raise PeerUnavailable(f"MariaDB stopped at start: {(root / 'server.log').read_text()[-300:]}")
            time.sleep(0.25)
        else:
            raise PeerUnavailable("MariaDB did not come up in 30 s")
        yield MariaDB(port=port, socket=sock)
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)
