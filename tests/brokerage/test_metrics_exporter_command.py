"""`manage.py metrics_exporter` (issue 53): a host with Celery workers and no web server serves what its processes
counted, summed over their files; a port it cannot bind is exit status 2 with the port named."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

MANAGE = [sys.executable, "manage.py"]


def counted_in_another_process(env: dict, rows: int) -> None:
    """A process as a Celery worker is: it counts housekeeping rows into the shared folder, then ends."""
    script = (
        "import django; django.setup()\n"
        "from brokerage.metrics import housekeeping_count\n"
        f"housekeeping_count({{'job_status_log': {{'dropped': {rows}}}}})\n"
    )
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=60)


def test_the_exporter_sums_the_hosts_processes(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "VAR_DIR": str(tmp_path),
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}  # fmt: skip
    env.pop("DATABASE_URL", None)
    counted_in_another_process(env, 120)
    counted_in_another_process(env, 30)  # a second process (a worker's child after the first one ended)
    exporter = subprocess.Popen([*MANAGE, "metrics_exporter", "--bind", "127.0.0.1", "--port", "0"], env=env,
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        line = exporter.stdout.readline()
        port = int(re.search(r":(\d+)/metrics", line).group(1))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert samples[("brokerage_housekeeping_rows_total", (("action", "dropped"), ("table", "job_status_log")))] == 150


def test_a_port_in_use_is_exit_status_2(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ended = subprocess.run([*MANAGE, "metrics_exporter", "--bind", "127.0.0.1", "--port", str(port)], env=env,
                               capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ended.returncode == 2
    assert f"--port {port}:" in ended.stderr
