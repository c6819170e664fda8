"""gdpconfig changes written as KEY=VALUE (the replay command's --set, the what-if pages' text box), each value read
as its registered parameter's type."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .registry import REGISTRY, GdpConfigError


def assignment_parse(text: str) -> tuple[str, Any]:
    """KEY=VALUE, the value read as the registered parameter's type; GdpConfigError names what is wrong."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise GdpConfigError(f"{text!r}: expected KEY=VALUE")
    found = REGISTRY.find(key)
    if found is None:
        raise GdpConfigError(f"{key}: unknown gdpconfig parameter")
    return key, found[0].parse(value.strip(), key)


def assignments_parse(lines: Iterable[str]) -> dict[str, Any]:
    """Every non-empty line (or item) as KEY=VALUE; the last of a key wins."""
    return dict(assignment_parse(line) for line in lines if line.strip())
