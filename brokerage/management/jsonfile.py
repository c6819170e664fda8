"""Reading the JSON file a command is given: every way it can be unusable is exit status 2 with the path named."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError

from brokerage.jsonsafe import UnsafeJson, json_loads_bounded


def read_json_argument(file: str) -> tuple[str, Any]:
    """(the name to report, the parsed value) of a file argument, "-" being standard input. Unreadable, not UTF-8,
    not JSON or nested too deep: CommandError with exit status 2."""
    source = "stdin" if file == "-" else file
    try:
        if file == "-":  # the bytes when standard input has them, so that an encoding error is ours to report
            raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
        else:
            raw = open(file, "rb").read()  # noqa: SIM115
    except OSError as error:
        raise CommandError(f"{source}: cannot read: {error.strerror or error}", returncode=2) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CommandError(
            f"{source}: not UTF-8 text: byte 0x{raw[error.start]:02x} at offset {error.start} (save the file as UTF-8)",
            returncode=2,
        ) from None
    try:
        return source, json_loads_bounded(text)
    except UnsafeJson as error:
        raise CommandError(f"{source}: {error}", returncode=2) from None
    except ValueError as error:
        raise CommandError(f"{source}: $: expected JSON: {error}", returncode=2) from None
