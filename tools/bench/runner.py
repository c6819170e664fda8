"""Timing helpers and the benchmark registry. Each benchmark returns rows:
{"bench": NAME, "params": {...}, "median_ms": …, "p95_ms": …, "n": …, …extra figures}."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]
BENCHMARKS: dict[str, Callable[..., list[Row]]] = {}


def benchmark(name: str):
    def register(function: Callable[..., list[Row]]) -> Callable[..., list[Row]]:
        BENCHMARKS[name] = function
        return function

    return register


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def time_calls(function: Callable[[], Any], *, repeat: int, warmup: int = 3) -> dict[str, float]:
    """Median and 95th percentile in milliseconds over `repeat` calls, after a few warm-up calls."""
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1000.0)
    return {
        "median_ms": round(statistics.median(samples), 4),
        "p95_ms": round(percentile(samples, 0.95), 4),
        "n": repeat,
    }


def unthrottled() -> None:
    """The pages' throttle out of this process's way: a benchmark times pages, and its hundreds of requests from one
    client would be answered 429 (monitor.access, DASHBOARD_*_RATE)."""
    from monitor.access import DashboardAnonThrottle, DashboardUserThrottle

    for throttle in (DashboardAnonThrottle, DashboardUserThrottle):
        throttle.THROTTLE_RATES = {**throttle.THROTTLE_RATES, throttle.scope: None}


def time_pages(bench: str, urls, *, repeat: int, params: dict) -> list[Row]:
    """Median and p95 of GET requests through Django's test client, one row per (name, url), with the number of
    queries of one request, its three slowest and the plan of the slowest (PostgreSQL); a request that does not
    answer 200 (or a status the request names as its answer, a fourth item) stops the benchmark."""
    from django.test import Client

    client = Client()
    unthrottled()

    def get(url: str, answers: tuple[int, ...] = (200,)) -> None:
        response = client.get(url, HTTP_HOST="localhost")
        if response.status_code not in answers:
            raise RuntimeError(f"{url} answered {response.status_code}: {response.content[:200]!r}")

    def queries_of(url: str, answers: tuple[int, ...]) -> dict:
        """One more request, its queries recorded: how many, and the slowest three (where a page's time goes)."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            get(url, answers)
        slowest = sorted(captured.captured_queries, key=lambda query: -float(query["time"]))[:3]
        found = {
            "queries": len(captured.captured_queries),
            "slowest_queries": [f"{float(query['time']) * 1000:.1f} ms {query['sql'][:600]}" for query in slowest],
        }
        if slowest and connection.vendor == "postgresql" and slowest[0]["sql"].lstrip().upper().startswith("SELECT"):
            with connection.cursor() as cursor:  # where the slowest one's time goes, read after the timing
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {slowest[0]['sql']}")
                found["slowest_plan"] = [row[0] for row in cursor.fetchall()]
        return found

    return [
        {
            "bench": bench,
            "params": {**params_for(name), **params},
            "n": repeat,
            **time_calls(lambda url=url, answers=answers: get(url, answers), repeat=repeat, warmup=2),
            **queries_of(url, answers),
        }
        for name, url, params_for, *rest in urls
        for answers in [rest[0] if rest else (200,)]
    ]


def series_sql(count: int) -> str:
    """A relation of integers 0 … count−1 named n, in this database's dialect."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return f"(SELECT generate_series(0, {count - 1}) AS n) AS series"
    recursive = f"WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < {count - 1})"
    return f"({recursive} SELECT n FROM seq) AS series"


def insert_series(model, *, count: int, computed: dict[str, str], value_of, computed_params=None) -> None:
    """`count` rows of `model` in one INSERT … SELECT over a generated series: `computed` maps a field name to an
    SQL expression of n (write % as %%; `computed_params` gives the values of its %s placeholders, prepared as the
    field's), every other column takes `value_of(field)` as a parameter."""
    from django.db import connection

    quote = connection.ops.quote_name
    columns, values, params = [], [], []
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(quote(field.column))
        if field.name in computed:
            values.append(computed[field.name])
            params += [field.get_db_prep_save(v, connection) for v in (computed_params or {}).get(field.name, ())]
        else:
            values.append("%s")
            params.append(field.get_db_prep_save(value_of(field), connection))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)}) "
            f"SELECT {', '.join(values)} FROM {series_sql(count)}",
            params,
        )
