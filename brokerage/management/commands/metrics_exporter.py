"""Serves this host's process metrics for Prometheus, on a host that runs Celery workers but no web server:

    manage.py metrics_exporter [--bind 0.0.0.0] [--port 9108]

What the workers of this host counted (brokerage.metrics: decisions, candidates removed, job moves, housekeeping
rows, each Celery task's wait and run time), summed over their files in PROMETHEUS_MULTIPROC_DIR, at
http://<bind>:<port>/metrics. The grid's state (jobs, tasks, shares, Celery's queue) is the web's /metrics: it is
the same for every host. Runs until stopped; exit status 2 when the port cannot be bound."""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from prometheus_client import CollectorRegistry, multiprocess, start_http_server


class Command(BaseCommand):
    help = "Serve this host's Celery workers' metrics (PROMETHEUS_MULTIPROC_DIR) for Prometheus."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="0.0.0.0", help="address to listen on (default: all)")
        parser.add_argument("--port", type=int, default=9108, help="port to listen on (default: 9108)")

    def handle(self, *args, **options):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
        try:
            server, _thread = start_http_server(options["port"], addr=options["bind"], registry=registry)
        except OSError as error:
            raise CommandError(f"--port {options['port']}: {error}", returncode=2) from None
        self.stdout.write(f"metrics of {settings.PROMETHEUS_MULTIPROC_DIR} at http://{options['bind']}:"
                          f"{server.server_port}/metrics", ending="\n")  # fmt: skip
        self.stdout.flush()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            server.shutdown()
