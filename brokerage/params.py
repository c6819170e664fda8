"""Reading numbers and words that come from outside (addresses, forms, files): one rule for every page, the API
and the selectors they call. Plain Python.

`str.isdigit()` is true for "²" and "٣", which `int()` refuses or reads as 3 (issue 31: `?page=²` was a 500), and
PostgreSQL refuses a NUL in any text; so a whole number here is ASCII digits only, within a 64-bit key."""

from __future__ import annotations

import re

BIGGEST_ID = 2**63 - 1
_ASCII_WHOLE = re.compile(r"[0-9]{1,19}")


def whole_number(text: object, *, maximum: int = BIGGEST_ID) -> int | None:
    """The number `text` spells in ASCII digits (no sign, no spaces), at most `maximum`; None for anything else."""
    if not isinstance(text, str) or not _ASCII_WHOLE.fullmatch(text):
        return None
    value = int(text)
    return value if value <= maximum else None


def refused_character(text: str) -> str | None:
    """The description of a character the database cannot store or compare in `text`, None if there is none."""
    if "\x00" in text:
        return "a NUL character (\\u0000)"
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        return "a lone surrogate"
    return None
