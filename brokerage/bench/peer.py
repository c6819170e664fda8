"""Our brokers beside the real panda-server 1.0.4 on the same generated scenarios: agreement and time per decision.

Each side is timed on the decision alone (ours: `run` on the scenario; theirs: `doBrokerage` inside the peer
process, without building its SiteMapper). Needs the package index the first time (brokerage/peer/setup.py).
"""

from __future__ import annotations

import statistics

from django.core.management.base import CommandError

from brokerage.peer.compare import BROKERS, compare
from brokerage.peer.setup import PeerUnavailable, peer_ready

from .runner import Row, benchmark, percentile


@benchmark("peer")
def peer(*, quick: bool = False) -> list[Row]:
    """One row per broker: scenarios agreeing under the `panda` profile, and our median time over theirs."""
    try:
        real = peer_ready()
    except PeerUnavailable as error:
        raise CommandError(f"the real PanDA code is not available here: {error}", returncode=2) from error
    rows = []
    for kind in BROKERS:
        report, _ = compare(real, kind, list(range(50 if quick else 500)), profile="panda")
        ours = [c.our_seconds * 1000.0 for c in report.comparisons]
        theirs = [c.their_seconds * 1000.0 for c in report.comparisons if c.their_seconds]
        ours_median = statistics.median(ours)
        theirs_median = statistics.median(theirs) if theirs else float("nan")
        rows.append(
            {
                "bench": "peer",
                "params": {"broker": kind, "profile": "panda"},
                "median_ms": round(ours_median, 4),
                "p95_ms": round(percentile(ours, 0.95), 4),
                "n": len(ours),
                "agree": f"{report.agreeing}/{len(report.comparisons)}",
                "theirs_median_ms": round(theirs_median, 4),
                "ratio_ours_to_theirs": round(ours_median / theirs_median, 3) if theirs else None,
            }
        )
    return rows
