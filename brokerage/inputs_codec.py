"""How the inputs of decisions are stored (issue 34; models.inputs): a scenario's grid side split into parts by how
fast each changes, each part as canonical JSON named by its digest, a decision's own side compressed. Plain Python,
read by the services that store inputs and the selectors that replay them."""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# The grid side of a scenario, by how fast each part changes: the resolved gdpconfig (per revision), the queues'
# configuration (CRIC, hours to days), their statistics (every cycle), sites and network (hourly), storage
# (free space, minutes), software tags and GPUs (days). A key of the scenario named nowhere here goes to "other".
GRID_PARTS: dict[str, tuple[str, ...]] = {
    "config": ("gdpconfig", "profile"),
    "queues": ("queues",),
    "queue_stats": ("queue_stats",),
    "network": ("sites", "network"),
    "storage": ("ddm_endpoints",),
    "software": ("sw_tags", "gpu_summary"),
    # a WMCore pull's: the elements (they move a few at a time) and the sites' slots and jobs
    "elements": ("elements",),
    "wmcore_sites": ("site_thresholds", "site_jobs"),
}
# the scenario's own small keys, kept in CycleInputs.head
HEAD_KEYS = ("plugin", "now")
OTHER_PART = "other"
# zlib level 6: within 5 % of level 9's size on these parts at a third of the time
LEVEL = 6


def _canonical(value: Any) -> bytes:
    """The JSON of a part, keys in their order: the engine reads objects in order (ties between equal queues go by
    it), so a replay must see them as the cycle did. The adapters read the database in a fixed order, so an
    unchanged part gives the same text, and the same digest, cycle after cycle."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def inputs_encode(value: Mapping[str, Any]) -> bytes:
    """A decision's own side of its scenario as stored (DecisionTrace.inputs)."""
    return zlib.compress(_canonical(value), LEVEL)


def inputs_decode(blob: bytes) -> Any:
    return json.loads(zlib.decompress(bytes(blob)))


def grid_split(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The head and the parts (GRID_PARTS) of a cycle's grid-side scenario object; empty parts are left out."""
    head = {key: raw[key] for key in HEAD_KEYS if key in raw}
    placed = {key: name for name, keys in GRID_PARTS.items() for key in keys}
    parts: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        if key in HEAD_KEYS:
            continue
        parts.setdefault(placed.get(key, OTHER_PART), {})[key] = value
    return head, parts


def day_of(moment: datetime) -> datetime:
    return datetime.combine(moment.astimezone(UTC).date(), datetime.min.time(), tzinfo=UTC)


def canonical_json(value: Any) -> bytes:
    return _canonical(value)


def part_digest(text: bytes) -> str:
    """A part's name: BLAKE2b-128 of its canonical JSON."""
    return hashlib.blake2b(text, digest_size=16).hexdigest()
