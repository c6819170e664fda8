"""docs/production.md followed on a fresh PostgreSQL (issue 47): the guide's commands in its order, then the stack it
brings up (gunicorn × 4 on `config.settings.production`, a Celery worker, Redis as broker and cache) put through
what found the site wanting: eight worst-case what-ifs at once from one viewer while another user reads a page, and
the database stopped and started under it.

The PostgreSQL server is this test's own (initdb and pg_ctl, as scripts/with_postgres.sh does), since it is stopped
in the middle; it runs in the PostgreSQL pass, where those programs are installed. The requests carry
`X-Forwarded-Proto: https`, as the TLS proxy in front of gunicorn sends it (the guide, section 6)."""

from __future__ import annotations

import glob
import http.client
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tools.bench.stack import ROOT, processes_stop, redis_start, sender, worker_start

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="production guide: PostgreSQL pass only"
    ),
]

RETRY_AFTER = "30"  # monitor.middleware: what a client is told while the database is away


class PostgresServer:
    """A PostgreSQL server of the test's own, on a Unix socket in a fresh directory, with an empty database."""

    def __init__(self):
        found = shutil.which("initdb") or (sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [""])[-1]
        if not found:
            pytest.fail("initdb not found: scripts/with_postgres.sh installs PostgreSQL's server programs")
        self.bin = Path(found).resolve().parent  # Debian's wrappers link to the version's own directory
        self.home = Path(tempfile.mkdtemp(prefix="bm-guide-pg."))  # short: a socket's path has ~100 characters
        self.home.chmod(0o755)
        self.as_db_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_db_user:
            shutil.chown(self.home, "postgres")
        self.url = f"postgres://postgres@/brokerage?host={self.home}"
        try:
            self._run("initdb", "-D", str(self.home / "data"), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                      "--locale=C.UTF-8")  # fmt: skip
            self.start()
            self._run("createdb", "-h", str(self.home), "-U", "postgres", "brokerage")
        except BaseException:  # no server left running behind a failed set-up
            self.remove()
            raise

    def _run(self, program: str, *args: str) -> None:
        subprocess.run([*self.as_db_user, str(self.bin / program), *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-k {self.home} -c listen_addresses='' -c fsync=off -c max_connections=100"
        self._run("pg_ctl", "-D", str(self.home / "data"), "-l", str(self.home / "server.log"), "-o", options,
                  "-w", "-t", "60", "start")  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.home / "data"), "-m", "fast", "-w", "-t", "60", "stop")

    def log(self) -> str:
        return (self.home / "server.log").read_text(errors="replace")

    def remove(self) -> None:
        subprocess.run([*self.as_db_user, str(self.bin / "pg_ctl"), "-D", str(self.home / "data"), "-m", "immediate",
                        "stop"], capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(self.home, ignore_errors=True)


class Visitor:
    """One client of the site over plain HTTP behind a pretend TLS proxy: keeps its cookies (secure ones too, which
    a real browser sends over its HTTPS) and fills in the CSRF token of the last form it read."""

    def __init__(self, port: int, token: str = ""):
        self.port, self.token, self.cookies, self.csrf = port, token, {}, ""

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, dict, bytes, float]:
        headers = {"Host": "localhost", "X-Forwarded-Proto": "https", "Referer": f"https://localhost{path}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        body = None
        if form is not None:
            body = urlencode({**form, "csrfmiddlewaretoken": self.csrf})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        started = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            content = response.read()
            answer = {name.lower(): value for name, value in response.getheaders()}
            for cookie in response.msg.get_all("Set-Cookie") or []:
                name, _, value = cookie.split(";", 1)[0].partition("=")
                self.cookies[name.strip()] = value.strip()
        finally:
            connection.close()
        found = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', content)
        if found:
            self.csrf = found.group(1).decode()
        return response.status, answer, content, time.monotonic() - started

    def sign_in(self, username: str, password: str) -> None:
        self.request("GET", "/login/")
        status, headers, _, _ = self.request("POST", "/login/", {"username": username, "password": password})
        assert (status, "sessionid" in self.cookies) == (302, True), (status, headers)


METRICS_TOKEN = "guide-metrics-token-" + "x" * 24


def metrics_scrape(port: int, token: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", "/metrics", headers={"Host": "localhost", "X-Forwarded-Proto": "https",
                                                       "Authorization": f"Bearer {token}"})  # fmt: skip
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def stack_home():
    home = Path(tempfile.mkdtemp(prefix="bm-guide."))
    database = PostgresServer()
    yield home, database
    database.remove()
    shutil.rmtree(home, ignore_errors=True)


def test_the_guides_commands_bring_up_a_site_no_viewer_can_stall_and_that_outlives_a_database_outage(stack_home):
    home, database = stack_home
    redis, redis_socket = redis_start(home)
    processes = [redis]
    kept = {"DJANGO_DEBUG", "DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY"}
    env = {
        **{name: value for name, value in os.environ.items() if name not in kept},
        # the guide's environment file (section 2)
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "localhost",
        "CSRF_TRUSTED_ORIGINS": "https://localhost",
        "DATABASE_URL": database.url,
        "CELERY_BROKER_URL": f"redis+socket://{redis_socket}",
        "CACHE_URL": f"unix://{redis_socket}?db=1",
        "VAR_DIR": str(home),
        "DJANGO_SUPERUSER_PASSWORD": "guide-admin-password",
        # the guide's "Metrics": Prometheus's token, and the host's own metrics folder
        "METRICS_BEARER_TOKEN": METRICS_TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(home / "prometheus"),
    }
    log = (home / "stack.log").open("w")

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip

    try:
        # section 5, in its order
        before = manage("check", "--deploy")
        assert before.returncode == 0, before.stderr
        assert "brokerage.W202" in before.stderr + before.stdout  # "migrations not applied", said, not a traceback
        assert "does not exist" not in database.log()  # nothing read a table that is not there yet
        assert manage("migrate", "--noinput").returncode == 0
        assert manage("housekeeping").returncode == 0  # the coming partitions: /health/ready needs them
        collected = manage("collectstatic", "--noinput")
        assert collected.returncode == 0, collected.stderr
        assert list((home / "staticfiles").glob("**/*.css"))  # STATIC_ROOT under VAR_DIR
        after = manage("check", "--deploy", "--fail-level", "WARNING")
        assert after.returncode == 0, after.stderr + after.stdout
        assert "System check identified no issues" in after.stdout
        superuser = manage("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.org")
        assert superuser.returncode == 0, superuser.stderr
        made = manage("api_token", "admin", "--name", "guide test", "--output", str(home / "token"))
        assert made.returncode == 0, made.stderr
        token = (home / "token").read_text().strip()
        assert token
        assert token not in made.stdout  # written to the file, not printed
        # data to look at, and two people who may only look
        assert manage("demo_grid", "--size", "small", "--no-progress").returncode == 0
        viewers = "[User.objects.create_user(n, password='guide-viewer-password') for n in ('viewer', 'other')]"
        users = manage("shell", "-c", f"from django.contrib.auth.models import User; {viewers}")
        assert users.returncode == 0, users.stderr

        # section 5, the processes: gunicorn as the guide starts it, a worker running the cycles
        port = free_port()
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "4",
             "--timeout", "30", "--limit-request-line", "4094"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        ))  # fmt: skip
        processes.append(worker_start(env, name="guide", log=log, concurrency=2))
        api = Visitor(port, token)
        anonymous = Visitor(port)

        def ready() -> int:
            try:
                return anonymous.request("GET", "/health/ready")[0]
            except OSError:  # gunicorn not listening yet
                return 0

        # section 8: the readiness probe says when the site may take traffic (database, Redis as cache and broker,
        # migrations, partitions: every check passing)
        deadline = time.monotonic() + 60
        while ready() != 200:
            assert time.monotonic() < deadline, "/health/ready never passed"
            time.sleep(0.5)
        checks = json.loads(anonymous.request("GET", "/health/ready")[2])["checks"]
        assert {name: check["ok"] for name, check in checks.items()} == dict.fromkeys(
            ("database", "cache", "broker", "migrations", "partitions"), True
        ), checks

        def decisions() -> int:
            try:
                status, _, body, _ = api.request("GET", "/api/v1/decisions/")
            except OSError:  # gunicorn not listening yet
                return 0
            return len(json.loads(body)["results"]) if status == 200 else 0

        beat = sender(redis_socket)
        deadline = time.monotonic() + 180
        while decisions() < 20:
            assert time.monotonic() < deadline, "the worker made no decisions in 3 minutes"
            for name in ("task_refine_task", "task_brokerage_cycle_task", "job_generation_dispatch_task"):
                beat.send_task(f"brokerage.tasks.{name}")
            time.sleep(3)
        beat.close()

        # /metrics with the token Prometheus sends (README, "Watching it"): the decisions the Celery worker's
        # processes counted, summed by whichever gunicorn worker answers; without the token, 403
        def decision_count() -> int:
            shown = manage("shell", "-c", "from brokerage.models import Decision; print(Decision.objects.count())")
            return int(shown.stdout.strip().splitlines()[-1])

        # (a cycle still running when the beat stopped counts its decisions right after it commits them: read the
        # table before and after the scrape until the count falls between, within a bounded wait)
        deadline = time.monotonic() + 60
        while True:
            fewest = decision_count()
            status, text = metrics_scrape(port, METRICS_TOKEN)
            most = decision_count()
            assert status == 200, text[:500]
            counted = sum(
                sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
                if sample.name == "brokerage_decisions_total"
            )
            if fewest <= counted <= most:
                break
            assert time.monotonic() < deadline, (fewest, counted, most)
            time.sleep(1)
        assert counted >= 20
        assert metrics_scrape(port, "not-the-token")[0] == 403

        # the production access rule: anonymous visitors are sent to sign in, the API wants credentials
        assert anonymous.request("GET", "/tasks/")[0] == 302
        assert anonymous.request("GET", "/api/v1/tasks/")[0] == 401
        assert api.request("GET", "/api/v1/tasks/")[0] == 200

        # finding 3: eight worst-case what-ifs from one viewer at once, another user reading a page meanwhile
        viewer, other = Visitor(port), Visitor(port)
        viewer.sign_in("viewer", "guide-viewer-password")
        other.sign_in("other", "guide-viewer-password")
        viewer.request("GET", "/what-if/?hours=168")  # the form, and its CSRF token
        assert viewer.csrf
        what_ifs: list[tuple[int, float]] = []
        reads: list[tuple[int, float]] = []
        running = threading.Event()
        running.set()

        def what_if() -> None:
            status, _, _, seconds = viewer.request("POST", "/what-if/?hours=168", {"set": "", "limit": "5000"})
            what_ifs.append((status, seconds))

        def read() -> None:
            while running.is_set():
                status, _, _, seconds = other.request("GET", "/tasks/")
                reads.append((status, seconds))

        reader = threading.Thread(target=read)
        reader.start()
        costly = [threading.Thread(target=what_if) for _ in range(8)]
        for thread in costly:
            thread.start()
        for thread in costly:
            thread.join(120)
        running.clear()
        reader.join(30)
        statuses = sorted(status for status, _ in what_ifs)
        assert len(statuses) == 8
        assert set(statuses) <= {200, 429}, statuses
        assert 200 in statuses, statuses
        # eight at once: some are refused, whatever each one's length (how many depends on how long a what-if takes
        # against how fast gunicorn hands out the rest: counting them raced, issue 50's CI saw 2 of 8)
        assert 429 in statuses, statuses
        # one at a time per client (brokerage.costly), deterministically: while the viewer's slot is held, a what-if
        # of theirs is refused; once it is free, it runs
        slot = (
            "from django.core.cache import cache; from django.contrib.auth.models import User; "
            "key = 'costly:client:user:%d' % User.objects.get(username='viewer').pk; "
        )
        held = manage("shell", "-c", slot + "cache.set(key, 'held by the test', 60)")
        assert held.returncode == 0, held.stderr
        assert viewer.request("POST", "/what-if/?hours=168", {"set": "", "limit": "5000"})[0] == 429
        freed = manage("shell", "-c", slot + "cache.delete(key)")
        assert freed.returncode == 0, freed.stderr
        assert viewer.request("POST", "/what-if/?hours=168", {"set": "", "limit": "5000"})[0] == 200
        assert max(seconds for _, seconds in what_ifs) < 25  # WHAT_IF_SECONDS (8) and the page around it
        assert {status for status, _ in reads} == {200}, reads
        slowest = max(seconds for _, seconds in reads)
        assert slowest < 2.0, f"the other user's page took {slowest:.2f} s ({len(reads)} reads)"

        # finding 5: PostgreSQL stopped: a 503 with Retry-After in each client's shape, never a 500
        database.stop()
        away = {
            "page": other.request("GET", "/tasks/"),
            "sign-in": other.request("GET", "/login/"),
            "api": api.request("GET", "/api/v1/tasks/"),
            "panda": api.request("GET", "/api/v1/task/get_status?task_id=1"),
            "pilot": api.request("POST", "/server/panda/getStatus", {"ids": "1"}),
        }
        for shape, (status, headers, body, seconds) in away.items():
            assert (status, headers.get("retry-after")) == (503, RETRY_AFTER), (shape, status, body[:300])
            assert seconds < 10, (shape, seconds)
        assert b"Database unavailable" in away["page"][2]
        assert b"Database unavailable" in away["sign-in"][2]
        assert json.loads(away["api"][2])["error"]["code"] == "unavailable"
        assert json.loads(away["panda"][2])["success"] is False
        assert json.loads(away["pilot"][2])["StatusCode"] == 30
        # the probes: not ready, the database named and what reads it not checked; alive all the same
        time.sleep(2.5)  # HEALTH_CACHE_SECONDS: each worker's last answer expires
        status, _, body, seconds = anonymous.request("GET", "/health/ready")
        probe = json.loads(body)
        assert (status, probe["failing"]) == (503, ["database"]), probe
        assert (probe["checks"]["migrations"]["ok"], probe["checks"]["partitions"]["ok"]) == (None, None)
        assert seconds < 5
        assert anonymous.request("GET", "/health/live")[0] == 200

        # and back: the next requests are answered, by every gunicorn worker
        database.start()
        back = [other.request("GET", "/tasks/")[0] for _ in range(8)]
        assert back == [200] * 8, back
        deadline = time.monotonic() + 30
        while ready() != 200:
            assert time.monotonic() < deadline, "/health/ready did not pass again"
            time.sleep(0.5)
        assert api.request("GET", "/api/v1/tasks/")[0] == 200
    finally:
        processes_stop(processes)
        log.close()
    assert "WORKER TIMEOUT" not in (home / "stack.log").read_text(errors="replace")  # no request outlived gunicorn
