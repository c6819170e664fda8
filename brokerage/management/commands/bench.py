"""Runs a benchmark and prints its figures (a table, or JSON rows with --json). See docs/benchmarks.md."""

import json

from django.core.management.base import BaseCommand, CommandError

from brokerage.bench import api, cycles, dirac, engine, load, pages, peer, wmcore  # noqa: F401  (registers the benchmarks)
from brokerage.bench.runner import BENCHMARKS


class Command(BaseCommand):
    help = "Run a benchmark: " + ", ".join(sorted(BENCHMARKS))

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name, or 'all'")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print a JSON list of rows")
        parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run, not a measurement)")

    def handle(self, *args, name: str, as_json: bool, quick: bool, **options):
        if name != "all" and name not in BENCHMARKS:
            raise CommandError(
                f"unknown benchmark '{name}' (known: {', '.join(sorted(BENCHMARKS))}, all)", returncode=2
            )
        rows = []
        for bench_name in sorted(BENCHMARKS) if name == "all" else [name]:
            rows += BENCHMARKS[bench_name](quick=quick)
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
