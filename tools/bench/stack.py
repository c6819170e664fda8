"""The production stack the multi-process benchmarks start (load, keepup): Redis on a Unix socket, Celery workers
and the environment of `config.settings.production` over the database `bench` runs on. Everything listens on
the loopback interface or a socket in a scratch directory, and is stopped whatever happened."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR)


def wait_until(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {seconds:.0f} s")
        time.sleep(0.2)


def database_url() -> str:
    """DATABASE_URL naming the database this process uses (a test's database too)."""
    from urllib.parse import urlsplit, urlunsplit

    url = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"]))


def production_env(work: Path, redis_socket: Path, **extra: str) -> dict[str, str]:
    """The environment of a production web or worker process; `extra` adds or overrides settings."""
    return {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"},
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "localhost",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": f"redis+socket://{redis_socket}",
        "CACHE_URL": f"unix://{redis_socket}?db=1",
        "VAR_DIR": str(work),
        **extra,
    }


def redis_start(work: Path) -> tuple[subprocess.Popen, Path]:
    """Debian's redis-server on a socket in `work`, without persistence."""
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("this benchmark needs redis-server (bash scripts/ensure_redis.sh)")
    socket_path = work / "redis.sock"
    process = subprocess.Popen(
        [server, "--port", "0", "--unixsocket", str(socket_path), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(socket_path.exists, 20, "redis-server")
    return process, socket_path


def worker_start(env: dict[str, str], *, name: str, log, concurrency: int = 1, events: bool = False):
    """One Celery worker process (`concurrency` prefork children); `events`: it sends task events."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config.celery", "worker", "--concurrency", str(concurrency),
         "--loglevel", "WARNING", "--hostname", f"{name}@%h", *(["-E"] if events else [])],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip


def processes_stop(processes: list[subprocess.Popen]) -> None:
    """SIGTERM to each (the newest first), then waits; what does not end in a minute is killed."""
    for process in reversed(processes):
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def sender(redis_socket: Path):
    """A Celery app that only sends tasks to the stack's broker."""
    from celery import Celery

    return Celery(broker=f"redis+socket://{redis_socket}")
