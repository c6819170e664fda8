"""Keeping what decisions were decided on (issue 34; models.inputs): the grid side of a cycle's scenario split into
parts stored once a day by content, the decision's own side with its trace."""

from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction

from brokerage.inputs_codec import LEVEL, canonical_json, day_of, grid_split, part_digest
from brokerage.models import BrokerageCycle, CycleInputs, ScenarioPart

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
        text = canonical_json(value)
        encoded[name] = (part_digest(text), text)
    parts_store(day=day_of(cycle.started), texts={digest: (name, text) for name, (digest, text) in encoded.items()})
    return CycleInputs.objects.create(
        cycle=cycle,
        started=cycle.started,
        head=head,
        parts={name: digest for name, (digest, _) in encoded.items()},
    )
