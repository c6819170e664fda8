"""The production path under load (issue 31): gunicorn with 4 workers on `config.settings.production`, a Celery
worker of concurrency 2 running the cycles over the demo grid with the simulator at 60×, and 16 clients asking for
the pages shifters open most (the overview, the task list, a task page, the decision list of the API and a decision
page) for a fixed time, each as fast as it is answered. Reports the latency percentiles, the throughput and the
errors, and the cycles that ran meanwhile.

PostgreSQL only (the database `bench` runs on; the grid is built into it when it holds no task and removed
afterwards), Redis from Debian's redis-server on a Unix socket. Everything listens on the loopback interface."""

from __future__ import annotations

import http.client
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from .runner import Row, benchmark, percentile
from .stack import ROOT, processes_stop, production_env, redis_start, sender, wait_until, worker_start

CLIENTS = 16


def periodic_tasks() -> list[str]:
    """Every task beat sends (settings.CELERY_BEAT_SCHEDULE) and the simulator's step, which beat sends only where
    GRID_SIMULATOR is on."""
    names = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    return list(dict.fromkeys([*names, "brokerage.tasks.grid_simulate_task"]))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _urls() -> list[str]:
    from brokerage.models import Decision, Task

    task = Task.objects.filter(status__in=("running", "scouting", "ready")).order_by("pk").values_list("pk", flat=True)
    decision = Decision.objects.order_by("-pk").values_list("pk", flat=True).first()
    return [
        "/",
        "/tasks/",
        f"/tasks/{task.first() or Task.objects.values_list('pk', flat=True).first()}/",
        "/api/v1/decisions/",
        f"/decisions/{decision}/" if decision else "/decisions/",
    ]


ROLES = (("web", "gunicorn"), ("workers", "celery"), ("database", "postgres"), ("broker and cache", "redis-server"))


def _cpu_seconds_by_role() -> dict[str, float]:
    """CPU seconds (user + system) each part of the stack has used so far, from /proc: gunicorn's processes, the
    Celery worker's, PostgreSQL's, Redis's, this process (the 16 clients and the beat thread), the whole machine and
    what the host took from this virtual machine.
    Over the clients' run the differences say where the time went on the shared cores."""
    tick = os.sysconf("SC_CLK_TCK")
    used = {role: 0.0 for role, _ in ROLES} | {"clients and beat": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        # utime, stime and the same of its ended children (proc(5): fields 14–17): PostgreSQL's ended backends and
        # Celery's replaced pool processes count for their parent
        seconds = sum(int(value) for value in fields[11:15]) / tick
        if int(entry.name) == os.getpid():
            used["clients and beat"] += seconds
            continue
        for role, marker in ROLES:
            if marker in command or name == marker:
                used[role] += seconds
                break
    with open("/proc/stat") as machine:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in machine.readline().split()[1:9])
    used["machine"] = (user + nice + system + irq + softirq) / tick
    used["stolen by the host"] = steal / tick  # a virtual machine's cores serving other guests
    return used


def _client(port: int, urls: list[str], until: float, samples: list[tuple[str, float, int]], lock) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Host": "localhost", "X-Forwarded-Proto": "https"}
    index = secrets.randbelow(len(urls))
    mine = []
    while time.monotonic() < until:
        url = urls[index % len(urls)]
        index += 1
        started = time.perf_counter()
        try:
            conn.request("GET", url, headers=headers)
            response = conn.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            status = 0
        mine.append((url, (time.perf_counter() - started) * 1000.0, status))
    conn.close()
    with lock:
        samples.extend(mine)


@benchmark("load")
def run(*, quick: bool = False) -> list[Row]:
    if connection.vendor != "postgresql":
        raise RuntimeError("bench load runs the production path: PostgreSQL only (scripts/with_postgres.sh)")
    from brokerage.models import BrokerageCycle, Decision, Task

    built = not Task.objects.exists()
    if built:
        call_command("demo_grid", size="small" if quick else "medium", no_progress=True, stdout=open(os.devnull, "w"))  # noqa: SIM115
    seconds = 8 if quick else 120
    work = Path(tempfile.mkdtemp(prefix="bench-load-"))
    port = _free_port()
    processes: list[subprocess.Popen] = []
    try:
        redis, redis_socket = redis_start(work)
        processes.append(redis)
        env = production_env(
            work,
            redis_socket,
            API_ANONYMOUS_READ="true",
            # the 16 clients share one address: the throttles (DRF's user throttle counts anonymous clients by
            # address too) would answer many API requests with a cheap 429
            API_ANON_RATE="1000000/minute",
            API_USER_RATE="1000000/minute",
            DASHBOARD_ANON_RATE="1000000/minute",  # the pages' throttle likewise (monitor.access)
            GRID_SIMULATOR="on",
            GRID_SIMULATOR_SPEED="60",
        )
        log = (work / "stack.log").open("w")
        processes.append(worker_start(env, name="bench", log=log, concurrency=2))
        # as a deployment does: the pages name the collected, hashed files (config/settings/base.py STORAGES)
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=300,
        )  # fmt: skip
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "4",
                 "--timeout", "30"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
        wait_until(lambda: _answers(port), 60, "gunicorn")
        beat_sender = sender(redis_socket)
        stop = threading.Event()
        beat = threading.Thread(target=_beat, args=(beat_sender, stop), daemon=True)
        beat.start()
        # the grid lives until its first job sets are brokered, so the pages show decisions
        wait_until(Decision.objects.filter(plugin="atlas_prod_job").exists, 180, "the first job brokerage")
        urls = _urls()
        started_at = timezone.now()
        samples: list[tuple[str, float, int]] = []
        lock = threading.Lock()
        cpu_before = _cpu_seconds_by_role()
        until = time.monotonic() + seconds
        clients = [threading.Thread(target=_client, args=(port, urls, until, samples, lock)) for _ in range(CLIENTS)]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        cpu_after = _cpu_seconds_by_role()
        stop.set()
        beat.join(10)
        beat_sender.close()
        cycles = BrokerageCycle.objects.filter(started__gte=started_at)
        cycle_counts = {"cycles_succeeded": cycles.filter(status="succeeded").count(),
                        "cycles_failed": cycles.filter(status="failed").count()}  # fmt: skip
        spent = {role: round(cpu_after[role] - cpu_before[role], 1) for role in cpu_before}
        apart = ("machine", "stolen by the host")
        spent["other"] = round(spent["machine"] - sum(v for role, v in spent.items() if role not in apart), 1)
        cycle_counts["cpu_seconds"] = spent  # of os.cpu_count() × the run's seconds
        cycle_counts["cpu_capacity_seconds"] = round((os.cpu_count() or 1) * seconds, 1)
    finally:
        processes_stop(processes)
        shutil.rmtree(work, ignore_errors=True)
        if built:
            call_command("flush", interactive=False, verbosity=0)
    return _rows(samples, seconds=seconds, extra=cycle_counts)


def _rows(samples, *, seconds: float, extra: dict) -> list[Row]:
    latencies = [ms for _, ms, _ in samples]
    errors = sum(1 for _, _, status in samples if status != 200)
    statuses: dict[str, int] = {}
    for _, _, status in samples:
        if status != 200:
            statuses[str(status)] = statuses.get(str(status), 0) + 1
    rows = [
        {
            "bench": "load",
            "params": {"page": "all", "clients": CLIENTS, "database": "postgresql"},
            "median_ms": round(statistics.median(latencies), 1),
            "p95_ms": round(percentile(latencies, 0.95), 1),
            "p99_ms": round(percentile(latencies, 0.99), 1),
            "n": len(latencies),
            "requests_per_second": round(len(latencies) / seconds, 1),
            "errors": errors,
            "error_statuses": statuses,
            **extra,
        }
    ]
    for url in sorted({url for url, _, _ in samples}):
        mine = [ms for u, ms, _ in samples if u == url]
        rows.append(
            {
                "bench": "load",
                "params": {"page": url, "clients": CLIENTS, "database": "postgresql"},
                "median_ms": round(statistics.median(mine), 1),
                "p95_ms": round(percentile(mine, 0.95), 1),
                "n": len(mine),
            }
        )
    return rows


def _answers(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/api/v1/", headers={"Host": "localhost", "X-Forwarded-Proto": "https"})
        conn.getresponse().read()
        conn.close()
        return True
    except OSError:
        return False


def _beat(sender, stop: threading.Event) -> None:
    """Beat at a demo's pace: every periodic cycle every 5 s."""
    while not stop.is_set():
        for name in periodic_tasks():
            sender.send_task(name)
        stop.wait(5)
