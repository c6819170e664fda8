"""`make run`'s stack for real: migrate, demo data, web server, Celery worker and beat with the embedded
defaults (SQLite + filesystem broker). Beat schedules the lock-expiry task, the worker runs it against the
shared SQLite file, and SIGTERM (or Ctrl-C) to the process group stops everything within 10 s, as does SIGTERM to
`make run`'s make alone (what `kill PID`, `timeout` or a supervisor does; issue 50, finding 2)."""

import os
import re
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(os.environ.get("DATABASE_URL")), reason="the embedded-defaults stack is exercised in the SQLite pass"
    ),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, timeout: float, what: str, process=None, log_path=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(
                f"the stack exited ({process.returncode}) before {what}:\n{log_path.read_text()[-3000:]}"
            )
        result = check()
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except OSError:
        return None


def descendants(pid: int) -> set[int]:
    """Every process below `pid`, whatever its process group (the Celery worker has one of its own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def running(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def stack_env(tmp_path, port: int) -> dict:
    # make run's own settings (scripts/run.sh: config.settings.demo), nothing from the test process
    skipped = ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "STATIC_ROOT")
    env = {k: v for k, v in os.environ.items() if k not in skipped}
    env.update(
        {
            "VAR_DIR": str(tmp_path),
            "PORT": str(port),
            "PROCESS_LOCK_EXPIRY_INTERVAL_SECONDS": "1",
            "PROCESS_LOCK_TIMEOUT_MINUTES": "1",
        }
    )
    # the test settings set them for this process only (the stack's metrics folder is its own: run.sh empties it)
    for inherited in ("SECRET_KEY", "DJANGO_DEBUG", "PROMETHEUS_MULTIPROC_DIR"):
        env.pop(inherited, None)
    return env


def all_gone_within(pids: set[int], seconds: float, log_path: Path) -> None:
    deadline = time.monotonic() + seconds
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = running(pids)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"still running {seconds:.0f} s after the stop: {sorted(left)}\n{log_path.read_text()[-3000:]}"


def test_make_run_stops_everything_when_only_make_is_signalled(tmp_path):
    port = free_port()
    log_path = tmp_path / "stack.log"
    with log_path.open("w") as log:
        make = subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=ROOT,
            env=stack_env(tmp_path, port),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_for(
                lambda: http_status(f"http://127.0.0.1:{port}/health/ready") == 200,
                120,
                "the readiness probe",
                make,
                log_path,
            )
            processes = descendants(make.pid)
            assert len(processes) >= 4, processes  # run.sh, gunicorn, the worker, beat (and their children)
            # GNU make passes a TERM on to its recipe's process (run.sh, by `exec`; before, a shell that died and left
            # run.sh serving); were make killed outright, run.sh sees itself re-parented and stops the rest
            stopping = time.monotonic()
            make.send_signal(signal.SIGTERM)
            make.wait(timeout=10)
            all_gone_within(processes, 10 - (time.monotonic() - stopping), log_path)
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
    text = log_path.read_text()
    assert "development server" not in text  # gunicorn, as production runs it
    assert " ERROR/" not in text, text[-3000:]
    assert "[ERROR]" not in text, text[-3000:]


def test_web_worker_and_beat_run_together_and_stop_within_10_s(tmp_path):
    port = free_port()
    env = stack_env(tmp_path, port)
    log = (tmp_path / "stack.log").open("w")
    stack = subprocess.Popen(
        ["bash", "scripts/run.sh"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    processes: set[int] = set()
    try:
        log_path = tmp_path / "stack.log"
        wait_for(
            lambda: http_status(f"http://127.0.0.1:{port}/health/ready") == 200,
            120,
            "the readiness probe",
            stack,
            log_path,
        )
        assert http_status(f"http://127.0.0.1:{port}/admin/login/") == 200
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode().replace("<wbr>", "")
        assert "PanDA queues" in page
        assert "mc23_13p6TeV" in page
        # DEBUG off as in production (issue 35, finding 8): the site's own 404, never Django's debug page; the
        # secret key made on first start, readable by its owner only
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/no-such-page/", timeout=5)
        body = missing.value.read().decode()
        assert missing.value.code == 404
        assert "Brokerage monitor" in body
        assert "URLconf" not in body  # Django's debug 404 lists the URL patterns
        assert (tmp_path / "secret-key").stat().st_mode & 0o077 == 0
        # static files collected, named by their hash, compressed and cached a year
        script = re.search(r'data-plotly="([^"]+)"', page).group(1)
        assert script != "/static/plotly/plotly.min.js"
        fetched = urllib.request.urlopen(
            urllib.request.Request(f"http://127.0.0.1:{port}{script}", headers={"Accept-Encoding": "gzip"}), timeout=10
        )
        assert fetched.headers["Content-Encoding"] == "gzip"
        assert "immutable" in fetched.headers["Cache-Control"]

        # a lock left by a worker that died long ago: beat + worker must expire it
        database = sqlite3.connect(tmp_path / "brokerage.sqlite3", timeout=30)
        with database:
            queue_id = database.execute("SELECT MIN(queue_id) FROM jedi_work_queue").fetchone()[0]
            database.execute(
                "INSERT INTO jedi_process_lock (prodSourceLabel, vo, workQueue_ID, cloud, resource_type, lockedBy,"
                " lockedTime) VALUES ('managed', 'atlas', ?, '', '', 'dead-worker', '2000-01-01 00:00:00')",
                (queue_id,),
            )

        def lock_gone():
            return database.execute("SELECT COUNT(*) FROM jedi_process_lock").fetchone()[0] == 0

        wait_for(lock_gone, 90, "the worker to expire the stale lock", stack, log_path)

        # the living demo: within a minute (of the home page answering) tasks are refined, brokered to nuclei,
        # get jobs brokered to queues, and pilots run them — every decision stored
        def grid_alive():
            plugins = {row[0] for row in database.execute("SELECT DISTINCT plugin FROM brokerage_decisions")}
            moves = {row[0] for row in database.execute("SELECT DISTINCT new_status FROM jedi_task_status_log")}
            running = database.execute("SELECT COUNT(*) FROM panda_jobs WHERE jobStatus = 'running'").fetchone()[0]
            return {"atlas_prod_task", "atlas_prod_job"} <= plugins and {"assigning", "ready"} <= moves and running

        wait_for(grid_alive, 60, "tasks and jobs to move with stored decisions", stack, log_path)
        database.close()
        assert (tmp_path / "admin-password").exists()
        # the filesystem broker keeps its exchange tables under VAR_DIR too, not in the repository (issue 48: kombu's
        # default `control/` of the working directory was in git)
        assert list((tmp_path / "broker" / "control").glob("*.exchange"))
        assert not (ROOT / "control").exists()
        processes = descendants(stack.pid)
    finally:
        # SIGTERM to the whole group, as a service manager stops it (Ctrl-C, SIGINT, takes the same path in
        # run.sh): the worker used to stay in its warm shutdown for over 90 s
        stopping = time.monotonic()
        os.killpg(stack.pid, signal.SIGTERM)
        try:
            stack.wait(timeout=60)
        finally:
            log.close()
    # nothing of the group is left running, within 10 s: the worker, in a process group of its own, too
    all_gone_within(processes | {stack.pid}, 10 - (time.monotonic() - stopping), tmp_path / "stack.log")
    try:
        os.killpg(stack.pid, 0)
    except ProcessLookupError:
        pass
    else:
        os.killpg(stack.pid, signal.SIGKILL)
        raise AssertionError(
            "processes of the stack's group were still running:\n" + (tmp_path / "stack.log").read_text()[-3000:]
        )
    # the worker stopped warm, its pool processes never killed under it (Celery logged each as an ERROR)
    assert "exited with 'signal 15" not in (tmp_path / "stack.log").read_text()
