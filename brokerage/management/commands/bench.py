"""Runs a benchmark and prints its figures (a table, or JSON rows with --json). See docs/benchmarks.md."""

import json

from django.core.management.base import BaseCommand, CommandError

from brokerage.bench import (  # noqa: F401  (registers the benchmarks)
    api,
    cycles,
    dirac,
    engine,
    history,
    load,
    pages,
    peer,
    wmcore,
)
from brokerage.bench.runner import BENCHMARKS


class Command(BaseCommand):
    help = "Run a benchmark: " + ", ".join(sorted(BENCHMARKS))

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name, or 'all'")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print a JSON list of rows")
        parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run, not a measurement)")
        parser.add_argument("--days", type=int, help="history: days of history to build (7)")
        parser.add_argument("--jobs-per-day", type=int, dest="jobs_per_day", help="history: jobs a day (1,000,000)")

    def handle(self, *args, name: str, as_json: bool, quick: bool, **options):
        if name != "all" and name not in BENCHMARKS:
            raise CommandError(
                f"unknown benchmark '{name}' (known: {', '.join(sorted(BENCHMARKS))}, all)", returncode=2
            )
        sizes = {key: options[key] for key in ("days", "jobs_per_day") if options.get(key) is not None}
        if sizes and name != "history":
            raise CommandError("--days and --jobs-per-day are options of the history benchmark", returncode=2)
        if any(value < 1 for value in sizes.values()):
            raise CommandError("--days and --jobs-per-day: give a whole number, at least 1", returncode=2)
        rows = []
        for bench_name in sorted(BENCHMARKS) if name == "all" else [name]:
            rows += BENCHMARKS[bench_name](quick=quick, **(sizes if bench_name == "history" else {}))
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for row in rows:
            params = ", ".join(f"{k}={v}" for k, v in row["params"].items())
            extra = ", ".join(
                f"{k}={v}" for k, v in row.items() if k not in ("bench", "params", "median_ms", "p95_ms", "n")
            )
            self.stdout.write(
                f"{row['bench']:<12} {params:<32} median {row['median_ms']:>9.3f} ms  p95 {row['p95_ms']:>9.3f} ms  "
                f"n={row['n']}  {extra}"
            )
