"""Loads the small demo grid (sites, queues, storages, network, work queues, shares, tasks and jobs)."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from brokerage.services.demo import demo_is_needed, demo_load


class Command(BaseCommand):
    help = "Load a small demo grid. With --if-empty, do nothing when the database already holds domain data."

    def add_arguments(self, parser):
        parser.add_argument("--if-empty", action="store_true", help="only load into an empty database")
        parser.add_argument("--seed", type=int, default=2026, help="random seed of the demo (default 2026)")

    def handle(self, *args, if_empty: bool, seed: int, **options):
        if not demo_is_needed():
            if if_empty:
                self.stdout.write("Database already holds data: demo not loaded.")
                return
            raise CommandError(
                "the database already holds sites or tasks; the demo loads into an empty database only", returncode=2
            )
        counts = demo_load(now=timezone.now(), seed=seed)
        self.stdout.write(self.style.SUCCESS("Demo grid loaded: " + ", ".join(f"{n} {k}" for k, n in counts.items())))
