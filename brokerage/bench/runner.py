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


def time_pages(bench: str, urls, *, repeat: int, params: dict) -> list[Row]:
    """Median and p95 of GET requests through Django's test client, one row per (name, url); a request that
    does not answer 200 stops the benchmark."""
    from django.test import Client

    client = Client()

    def get(url: str) -> None:
        response = client.get(url, HTTP_HOST="localhost")
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}: {response.content[:200]!r}")

    return [
        {
            "bench": bench,
            "params": {**params_for(name), **params},
            "n": repeat,
            **time_calls(lambda url=url: get(url), repeat=repeat, warmup=2),
        }
        for name, url, params_for in urls
    ]
