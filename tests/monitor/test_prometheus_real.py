"""A real Prometheus (Debian's package, as the tests start PostgreSQL and Redis) scrapes the monitor's /metrics with a
bearer token, as the README tells an operator to configure it, and a PromQL query answers what the database
counts (issue 53)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from brokerage.models import Job
from tests import factories

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOKEN = "scrape-token-for-the-test"
STARTUP_SECONDS = 30
SCRAPE_WAIT_SECONDS = 30


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def prometheus(tmp_path, live_server, settings):
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("prometheus missing in CI: scripts/ensure_prometheus.sh should have installed it")
        pytest.skip("prometheus not installed (make test installs Debian's package as root)")
    settings.METRICS_BEARER_TOKEN = TOKEN
    target = live_server.url.removeprefix("http://")
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n"
        "  - job_name: brokerage-monitor\n"
        "    metrics_path: /metrics\n"
        f"    authorization:\n      type: Bearer\n      credentials_file: {tmp_path / 'token'}\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = open(tmp_path / "prometheus.log", "w")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [binary, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as ready:
                    if ready.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()


def query(url: str, promql: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}", timeout=5) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]["result"]


def answered(url: str, promql: str) -> list[dict]:
    """The query's result once Prometheus has scraped what it asks about."""
    deadline = time.monotonic() + SCRAPE_WAIT_SECONDS
    while True:
        result = query(url, promql)
        if result:
            return result
        assert time.monotonic() < deadline, f"no answer to {promql} (targets: {query(url, 'up')})"
        time.sleep(0.5)


def test_a_promql_answer_equals_the_databases_count(prometheus):
    site = factories.SiteFactory(name="CERN-PROD", cloud="CERN", role="nucleus")
    factories.PandaQueueFactory(name="CERN-PROD_UCORE", site=site)
    for status, n in (("running", 7), ("activated", 4), ("finished", 3)):
        for _ in range(n):
            factories.JobFactory(jobStatus=status, computingSite="CERN-PROD_UCORE", gshare="MC 16")
    up = answered(prometheus, 'up{job="brokerage-monitor"} == 1')
    assert up[0]["value"][1] == "1"  # scraped with the bearer token (without it: 403, up 0)
    running = answered(prometheus, 'sum(panda_jobs{status="running", cloud="CERN"})')
    assert int(running[0]["value"][1]) == Job.objects.filter(jobStatus="running").count() == 7
    by_status = answered(prometheus, 'sum by (status) (panda_jobs{computingsite="CERN-PROD_UCORE"})')
    assert {row["metric"]["status"]: int(row["value"][1]) for row in by_status} == {"running": 7, "activated": 4}
    # the request side, from django-prometheus's middleware: Prometheus' own scrapes of the metrics view
    scrapes = answered(prometheus, 'sum(django_http_requests_total_by_view_transport_method_total{view="metrics"})')
    assert int(float(scrapes[0]["value"][1])) >= 1
