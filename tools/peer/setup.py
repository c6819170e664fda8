"""The real panda-server 1.0.4 beside the project: its source archive from the package index, unpacked (its build
hook needs ATLAS system users, so it is never installed), and a virtual environment with what its brokers import.

`peer_ready()` prepares both once under PEER_DIR (default var/peer/) and returns where they are, or raises
PeerUnavailable saying why (no package index, no source archive). Nothing here imports Django.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PANDA_SERVER_VERSION = "1.0.4"
# What the brokers' import chain needs, pinned (panda-common brings the logger and the config parser).
PEER_REQUIREMENTS = (
    "panda-common==0.1.11",
    "packaging==26.3",
    "numpy==2.4.6",
    "oracledb==26.1.0",
    "requests==2.34.2",
)
HERE = Path(__file__).resolve().parent


class PeerUnavailable(RuntimeError):
    """The real code cannot be fetched or set up here; the message says why."""


@dataclass(frozen=True)
class Peer:
    """Where the real code is: its python, its source tree and the PANDA_HOME with its configuration."""

    root: Path
    python: Path
    source: Path
    home: Path

    def environment(self) -> dict[str, str]:
        shim = self.root / "shim"
        return {
            **os.environ,
            "PANDA_HOME": str(self.home),
            "PYTHONPATH": os.pathsep.join([str(self.source), str(shim), str(HERE)]),
        }


def peer_dir() -> Path:
    return Path(os.environ.get("PEER_DIR") or Path(__file__).resolve().parents[2] / "var" / "peer")


@contextmanager
def setup_lock(path: Path):
    """One process at a time sets up what lives at `path` (tests run in several processes, and two unpacking or
    installing the same tree at once leave it broken); the others wait, then find it ready. The lock is the kernel's
    (flock), so a killed process never leaves it held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(command: list[str], what: str, *, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise PeerUnavailable(f"{what} failed: {' / '.join(tail) or 'no output'}")


def venv_ready(
    venv: Path, *, who: str, installing: str, requirements: tuple[str, ...], no_deps: tuple[str, ...] = ()
) -> Path:
    """A virtual environment holding `no_deps` (installed without their dependencies) and `requirements`, built on
    first use and rebuilt when the list changes (a marker file keeps it). Returns its python."""
    with setup_lock(venv):
        return _venv_build(venv, who=who, installing=installing, requirements=requirements, no_deps=no_deps)


def _venv_build(
    venv: Path, *, who: str, installing: str, requirements: tuple[str, ...], no_deps: tuple[str, ...]
) -> Path:
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    wanted = "\n".join((*no_deps, *requirements))
    if marker.exists() and marker.read_text() == wanted:
        return python
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", str(venv)], f"creating {who}'s virtual environment")
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    if no_deps:
        _run([*pip, "--no-deps", *no_deps], f"installing {', '.join(no_deps)}")
    _run([*pip, *requirements], f"installing {installing}")
    marker.write_text(wanted)
    return python


def _fetch_source(root: Path) -> Path:
    """Downloads the sdist with pip's own index access (no build: `pip download` would run the build hook)."""
    source = root / f"panda_server-{PANDA_SERVER_VERSION}"
    if (source / "pandajedi").is_dir():
        return source
    archive = root / f"panda_server-{PANDA_SERVER_VERSION}.tar.gz"
    if not archive.exists():
        script = (
            "import sys\n"
            "from pip._internal.commands import create_command\n"
            "cmd = create_command('download')\n"
            f"opts, _ = cmd.parse_args(['--no-deps', 'panda-server=={PANDA_SERVER_VERSION}'])\n"
            "with cmd.main_context():\n"
            "    session = cmd.get_default_session(opts)\n"
            "    finder = cmd._build_package_finder(options=opts, session=session)\n"
            "    links = [c.link for c in finder.find_all_candidates('panda-server')\n"
            f"             if str(c.version) == '{PANDA_SERVER_VERSION}' and c.link.filename.endswith('.tar.gz')]\n"
            "    if not links:\n"
            "        sys.exit('no source archive of panda-server on the package index')\n"
            "    response = session.get(links[0].url)\n"
            "    response.raise_for_status()\n"
            "    open(sys.argv[1], 'wb').write(response.content)\n"
        )
        partial = archive.with_name(archive.name + ".part")  # a download cut short is never taken for the archive
        _run([sys.executable, "-c", script, str(partial)], f"fetching panda-server {PANDA_SERVER_VERSION}")
        partial.replace(archive)
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    if not (source / "pandajedi").is_dir():
        raise PeerUnavailable(f"{archive.name} holds no pandajedi package")
    return source


def _write_home(root: Path, source: Path, python: Path) -> Path:
    """PANDA_HOME/etc/panda/*.cfg: the few settings the imported modules read when they load."""
    home = root / "home"
    config = home / "etc" / "panda"
    config.mkdir(parents=True, exist_ok=True)
    (root / "log").mkdir(exist_ok=True)
    for template in (HERE / "panda_home").glob("*.cfg"):
        text = template.read_text().replace("@LOGDIR@", str(root / "log")).replace("@SOURCE@", str(source))
        (config / template.name).write_text(text.replace("@PYTHONBIN@", str(python.parent)))
    shim = root / "shim" / "liveconfigparser"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").write_text("")
    # panda-common ships the parser under pandacommon.liveconfigparser; panda-server 1.0.4 imports the old name
    (shim / "LiveConfigParser.py").write_text(
        "from pandacommon.liveconfigparser.LiveConfigParser import *  # noqa: F403\n"
        "from pandacommon.liveconfigparser.LiveConfigParser import LiveConfigParser, expand_values  # noqa: F401\n"
    )
    return home


def peer_ready() -> Peer:
    """The real code, fetched and set up on first use (a minute), then reused."""
    root = peer_dir()
    root.mkdir(parents=True, exist_ok=True)
    python = venv_ready(root / "venv", who="the peer", installing="the peer's packages", requirements=PEER_REQUIREMENTS)
    with setup_lock(root / "source"):
        source = _fetch_source(root)
        home = _write_home(root, source, python)
    return Peer(root=root, python=python, source=source, home=home)
