"""Builds a generated ATLAS-like demo grid that the cycles and the grid simulator bring to life."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from brokerage.services.demo import demo_is_needed
from brokerage.services.demo_grid import SIZES, demo_grid_build


class Command(BaseCommand):
    help = (
        "Build a demo grid (nuclei, satellites, queues, storages, network, software, work queues, shares and "
        "newly registered tasks) into an empty database. Sizes: small ≈ 35 queues, medium ≈ 160, large ≈ 530."
    )

    def add_arguments(self, parser):
        parser.add_argument("--size", choices=sorted(SIZES), default="small")
        parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
        parser.add_argument("--if-empty", action="store_true", help="do nothing when the database holds data")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")

    def handle(self, *args, size: str, seed: int, if_empty: bool, no_progress: bool, **options):
        if not demo_is_needed():
            if if_empty:
                self.stdout.write("Database already holds data: demo grid not built.")
                return
            raise CommandError(
                "the database already holds sites or tasks; build the demo grid into an empty one", returncode=2
            )
        counts = demo_grid_build(
            size=size, now=timezone.now(), seed=seed, progress=(lambda *a: None) if no_progress else self._progress
        )
        self.stdout.write(
            self.style.SUCCESS(f"Demo grid ({size}) built: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
        )

    def _progress(self, step: str, done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        self.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {step:<10}", ending="")
        if done >= total:
            self.stderr.write("")
