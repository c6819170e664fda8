"""The real WMCore beside the project: the `wmagent` 2.4.5.9 wheel from the package index, installed without its
25 dependencies (CouchDB, Oracle, HTCondor and web-service clients the matching and submitting functions never
call) plus what the imported modules need, in a venv of its own; node runs the CouchDB list function the wheel
ships (data/couchapps/WorkQueue/lists/workRestrictions.js).

`wmcore_peer_ready()` prepares the environment once under PEER_DIR (default var/peer/) and returns it, or raises
PeerUnavailable saying why (no node, no package index). Nothing here imports Django.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tools.peer.setup import PeerUnavailable, peer_dir, venv_ready

WMAGENT_VERSION = "2.4.5.9"
# Installed without their dependencies: the wheel and its database schemas (the DAOs' package)
WMCORE_PACKAGES = (f"wmagent=={WMAGENT_VERSION}", "wmcoredb==0.9.3")
# What WorkQueueBackend, WMBSHelper and JobSubmitterPoller import, pinned to the versions the test was written with
WMCORE_REQUIREMENTS = ("future==1.0.0", "psutil==7.2.2", "python-ptrace==0.9.9", "SQLAlchemy==1.4.54")
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class WMCorePeer:
    """Where the real WMCore is: the venv's python, our driver, the real list function and its node runner."""

    python: Path
    driver: Path
    list_function: Path
    list_runner: Path


def wmcore_peer_ready() -> WMCorePeer:
    """The venv with the real WMCore, built on first use (pure-Python wheels: a few seconds)."""
    if shutil.which("node") is None:
        raise PeerUnavailable("node is not installed (it runs WMCore's CouchDB list function)")
    venv = peer_dir() / "wmcore-venv"
    python = venv_ready(
        venv,
        who="WMCore",
        installing="what WMCore's matching and submitting code imports",
        no_deps=WMCORE_PACKAGES,
        requirements=WMCORE_REQUIREMENTS,
    )
    list_function = venv / "data" / "couchapps" / "WorkQueue" / "lists" / "workRestrictions.js"
    if not list_function.exists():
        raise PeerUnavailable(f"{list_function} is missing from the wmagent wheel")
    return WMCorePeer(python, HERE / "wmcore_driver.py", list_function, HERE / "wmcore_list.js")
