"""Keeping what decisions were decided on (issue 34; models.inputs): the grid side of a cycle's scenario split into
parts stored once a day by content, the decision's own side with its trace."""

from __future__ import annotations

import hashlib
import json
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from brokerage.models import BrokerageCycle, CycleInputs, ScenarioPart

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


# The parts this process stored or found, by day and digest: a DIRAC matching request reads the same index and
# configuration as the hundreds before it, and must not ask the database each time (bounded; parts are dropped only
# with their whole day, which no new request belongs to).
_KNOWN: OrderedDict[tuple[datetime, str], None] = OrderedDict()
KNOWN_KEPT = 4096


def parts_known_forget() -> None:
    """Forgets which parts this process knows to be stored (a test database that starts again)."""
    _KNOWN.clear()


def parts_store(*, day: datetime, texts: Mapping[str, tuple[str, bytes]]) -> None:
    """Stores the parts (digest → (kind, canonical JSON)) of `day` not stored yet, compressed: no query when this
    process knows them all, one when they are stored already, two otherwise. Two workers storing the same new part
    at once both succeed: the second insert is ignored."""
    texts = {digest: item for digest, item in texts.items() if (day, digest) not in _KNOWN}
    if not texts:
        return
    known = set(ScenarioPart.objects.filter(day=day, digest__in=list(texts)).values_list("digest", flat=True))
    new = [
        ScenarioPart(day=day, kind=kind, digest=digest, size=len(text), data=zlib.compress(text, LEVEL))
        for digest, (kind, text) in texts.items()
        if digest not in known
    ]
    if new:
        ScenarioPart.objects.bulk_create(new, ignore_conflicts=True)

    def remember() -> None:  # only once committed: a part of a rolled-back transaction is not stored
        for digest in texts:
            _KNOWN[(day, digest)] = None
        while len(_KNOWN) > KNOWN_KEPT:
            _KNOWN.popitem(last=False)

    transaction.on_commit(remember)


def cycle_inputs_store(*, cycle: BrokerageCycle, raw: Mapping[str, Any]) -> CycleInputs:
    """Stores the grid side of `cycle`'s scenario: each part once a day by its content (two queries when every part
    is known already, three otherwise), and the cycle's list of them."""
    head, parts = grid_split(raw)
    encoded = {}
    for name, value in parts.items():
        text = _canonical(value)
        encoded[name] = (part_digest(text), text)
    parts_store(day=day_of(cycle.started), texts={digest: (name, text) for name, (digest, text) in encoded.items()})
    return CycleInputs.objects.create(
        cycle=cycle,
        started=cycle.started,
        head=head,
        parts={name: digest for name, (digest, _) in encoded.items()},
    )
