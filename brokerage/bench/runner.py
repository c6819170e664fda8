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
