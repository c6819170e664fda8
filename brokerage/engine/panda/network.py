"""Network weight between a queue's site and the nucleus (seed 000 "Network Weight"; constants REFERENCE.md)."""

from __future__ import annotations

from dataclasses import dataclass

# REFERENCE.md: throughput (Mbps) → weight, first threshold exceeded wins
THROUGHPUT_STEPS = ((200, 2.0), (100, 1.9), (75, 1.8), (50, 1.6), (20, 1.5), (10, 1.3), (2, 1.2), (1, 1.1))
CLOSENESS_DEFAULT = 7.7
AT_NUCLEUS_WEIGHT = 2.5
MAX_CLOSENESS = 11.0


@dataclass(frozen=True)
class NetworkWeight:
    weight: float
    queued_weight: float
    throughput_weight: float
    source: str  # mbps_1h, mbps_1d, mbps_1w, closeness, closeness default, nucleus


def throughput_weight(mbps: float) -> float:
    for threshold, weight in THROUGHPUT_STEPS:
        if mbps > threshold:
            return weight
    return 1.0


def network_weight(
    *,
    at_nucleus: bool,
    queued: float,
    sat_cap: float,
    mbps_1h: float | None,
    mbps_1d: float | None,
    mbps_1w: float | None,
    closeness: float | None,
    lookup: str = "newest_first",
) -> NetworkWeight:
    """0.5 × queuedWeight + 0.5 × throughputWeight, with queuedWeight = 2 − queued / NQUEUED_SAT_CAP and the
    throughput weight from the freshest Mbps figure, else 1 + (11 − closeness) / 11 (closeness 7.7 when
    unknown). A queue at the nucleus gets 2.5 for both."""
    if at_nucleus:
        return NetworkWeight(AT_NUCLEUS_WEIGHT, AT_NUCLEUS_WEIGHT, AT_NUCLEUS_WEIGHT, "nucleus")
    queued_weight = 2.0 - queued / sat_cap if sat_cap > 0 else 1.0
    if lookup == "week_first":
        # AtlasProdJobBroker (1.0.4) reads 1w, then 1d, then 1h, each replacing the one before; the first
        # missing figure ends the reading (KeyError), so a missing 1w means no throughput at all.
        measured = []
        for name, mbps in (("mbps_1w", mbps_1w), ("mbps_1d", mbps_1d), ("mbps_1h", mbps_1h)):
            if mbps is None:
                break
            measured = [(name, mbps)]
    else:
        measured = [
            (name, mbps)
            for name, mbps in (("mbps_1h", mbps_1h), ("mbps_1d", mbps_1d), ("mbps_1w", mbps_1w))
            if mbps is not None
        ]
    if measured:
        source, mbps = measured[0]
        throughput = throughput_weight(mbps)
    else:
        source = "closeness" if closeness is not None else "closeness default"
        value = CLOSENESS_DEFAULT if closeness is None else closeness
        throughput = 1.0 + (MAX_CLOSENESS - value) / MAX_CLOSENESS
    return NetworkWeight(0.5 * queued_weight + 0.5 * throughput, queued_weight, throughput, source)
