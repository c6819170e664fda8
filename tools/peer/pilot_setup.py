"""The real PanDA pilot 3.7.0.36 beside the project (issue 36): its source archive from the package index, unpacked
under PEER_DIR (default var/peer/); it needs nothing beyond Python and the system's curl, tar and ps. Nothing here
imports Django.

`pilot_ready()` returns where it is, or raises PeerUnavailable saying why. `Pilot` writes the configuration file
that points the pilot at a monitor (HARVESTER_PILOT_CONFIG: the server and the queue and storage caches) and
builds the command line and environment of a pilot serving one pilot-driven queue (README, "The PanDA pilot").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from tools.peer.setup import PeerUnavailable, peer_dir, setup_lock

PILOT_VERSION = "3.7.0.36"
# the generic pilot runs a transformation only from its known hosts (pilot/user/generic/setup.py), or copies it
# from $HARVESTER_WORKDIR: the monitor's PILOT_PAYLOAD_TRANSFORMATION names one of them, this script stands for it
TRANSFORM_SCRIPT = '#!/bin/sh\necho "payload: $*"\nexec "$@"\n'


@dataclass(frozen=True)
class Pilot:
    """The unpacked pilot (pilot.py and its package)."""

    source: Path

    def configuration(self, *, server: str, path: Path) -> Path:
        """The pilot's default.cfg with the monitor as its server and queue, queuedata and storage sources."""
        text = (self.source / "pilot" / "util" / "default.cfg").read_text()
        for key, value in (
            ("pandaserver", server),
            ("queuedata_url", f"{server}/cache/schedconfig/{{pandaqueue}}.all.json"),
            ("queues_url", f"{server}/cache/schedconfig/{{pandaqueue}}.json"),
            ("storages_url", f"{server}/cache/ddmendpoints.json"),
        ):
            text, found = re.subn(rf"(?m)^{key}:.*$", f"{key}: {value}", text)
            if found != 1:
                raise PeerUnavailable(f"the pilot's default.cfg has no single {key} line")
        path.write_text(text)
        return path

    def transform_dir(self, path: Path, transformation: str) -> Path:
        """A folder holding the script the pilot copies for `transformation` (its last path part)."""
        path.mkdir(parents=True, exist_ok=True)
        script = path / transformation.rstrip("/").split("/")[-1]
        script.write_text(TRANSFORM_SCRIPT)
        script.chmod(0o755)
        return path

    def environment(self, *, config: Path, token_file: Path, transforms: Path, home: Path) -> dict[str, str]:
        """A clean environment: the configuration, the token (a file, sent as a bearer token with the VO) and,
        always, PILOT_NOKILL: without it the pilot kills every process of its user whose parent is init when it
        ends (pilot/util/processes.py kill_orphans), the test runner's and the shell's included."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "HARVESTER_PILOT_CONFIG": str(config),
            "HARVESTER_WORKDIR": str(transforms),
            "PANDA_AUTH_TOKEN": token_file.name,
            "PANDA_AUTH_DIR": str(token_file.parent) + "/",
            "PANDA_AUTH_ORIGIN": "atlas",
            "PILOT_NOKILL": "1",
        }

    def command(self, *, server: str, queue: str, site: str, output_dir: Path, lifetime: int) -> list[str]:
        """One pilot for `queue`, running one job (the generic workflow and user) and leaving its log in
        `output_dir` (the mv copytool the monitor's queuedata names)."""
        scheme_host, _, port = server.rpartition(":")
        return [
            sys.executable,
            str(self.source / "pilot.py"),
            "-q", queue, "-r", queue, "-s", site,
            "-j", "user", "-w", "generic", "--pilot-user", "generic",
            "--url", scheme_host, "-p", port,
            "--output-dir", str(output_dir),
            "-l", str(lifetime),
            "--getjobrequests", "1",
            "-d",
        ]  # fmt: skip


def pilot_ready() -> Pilot:
    """The pilot's source, fetched and unpacked on first use."""
    root = peer_dir()
    source = root / f"panda-pilot-{PILOT_VERSION}"
    with setup_lock(source):
        if (source / "pilot.py").is_file():
            return Pilot(source)
        archive = root / f"panda-pilot-{PILOT_VERSION}.tar.gz"
        if not archive.exists():
            download = root / ".pilot-download"
            result = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                 "--dest", str(download), f"panda-pilot=={PILOT_VERSION}"],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            fetched = sorted(download.glob("panda*pilot-*.tar.gz")) if download.is_dir() else []
            if result.returncode != 0 or not fetched:
                tail = (result.stderr or result.stdout).strip().splitlines()[-2:]
                raise PeerUnavailable(
                    f"fetching panda-pilot {PILOT_VERSION} failed: {' / '.join(tail) or 'no archive'}"
                )
            fetched[0].replace(archive)
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
        if not (source / "pilot.py").is_file():
            raise PeerUnavailable(f"{archive.name} holds no pilot.py")
        return Pilot(source)
