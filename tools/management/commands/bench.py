"""Runs a benchmark and prints its figures (a table, or JSON rows with --json). See docs/benchmarks.md."""

import json

from django.core.management.base import BaseCommand, CommandError

from tools.bench import (  # noqa: F401  (registers the benchmarks)
    api,
    cycles,
    dirac,
    engine,
    history,
    keepup,
    load,
    pages,
    peer,
    replay,
    wmcore,
)
from tools.bench.runner import BENCHMARKS

# the options some benchmarks take, and which
OPTIONS = {
    "days": ("history",),
    "jobs_per_day": ("history", "keepup"),
    "minutes": ("keepup",),
    "speed": ("keepup",),
}


class Command(BaseCommand):
    help = "Run a benchmark: " + ", ".join(sorted(BENCHMARKS))

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name, or 'all'")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print a JSON list of rows")
        parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run, not a measurement)")
        parser.add_argument("--days", type=int, help="history: days of history to build (7)")
        parser.add_argument(
            "--jobs-per-day", type=int, dest="jobs_per_day", help="history, keepup: jobs a day (1,000,000)"
        )
        parser.add_argument("--minutes", type=float, help="keepup: real minutes measured (10)")
        parser.add_argument("--speed", type=float, help="keepup: grid minutes per real minute (60, as make run)")

    def handle(self, *args, name: str, as_json: bool, quick: bool, **options):
        if name != "all" and name not in BENCHMARKS:
            raise CommandError(
                f"unknown benchmark '{name}' (known: {', '.join(sorted(BENCHMARKS))}, all)", returncode=2
            )
        sizes = {key: options[key] for key in OPTIONS if options.get(key) is not None}
        for key in sizes:
            if name not in OPTIONS[key]:
                raise CommandError(
                    f"--{key.replace('_', '-')} is an option of the {' and '.join(OPTIONS[key])} benchmark",
                    returncode=2,
                )
            if not sizes[key] > 0:
                raise CommandError(f"--{key.replace('_', '-')}: give a positive number", returncode=2)
        rows = []
        for bench_name in sorted(BENCHMARKS) if name == "all" else [name]:
            rows += BENCHMARKS[bench_name](quick=quick, **(sizes if bench_name == name else {}))
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for row in rows:
            self.stdout.write(row_line(row))


def row_line(row: dict) -> str:
    """One row as a line: its figures, then whatever else it says. A row measured once has no p95; a row whose
    peer could not be set up has no figures, only why (`skipped`)."""
    params = ", ".join(f"{k}={v}" for k, v in row["params"].items())
    shown = ("bench", "params", "median_ms", "p95_ms", "n", "slowest_queries", "slowest_plan")
    extra = ", ".join(f"{k}={v}" for k, v in row.items() if k not in shown)
    figures = ""
    if "median_ms" in row:
        figures += f"median {row['median_ms']:>9.3f} ms  "
    if "p95_ms" in row:
        figures += f"p95 {row['p95_ms']:>9.3f} ms  "
    if "n" in row:
        figures += f"n={row['n']}  "
    return f"{row['bench']:<12} {params:<32} {figures}{extra}".rstrip()
