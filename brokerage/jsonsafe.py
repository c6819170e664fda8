"""JSON from outside, made safe to hold: bounded nesting, finite numbers and no NUL characters.

Pure Python (the engine, the API parser, the commands and the imports share it). Python's `json` reads NaN,
Infinity and 1e400 as floats that no column, no JSON column and no comparison can hold, and recurses once per
level of nesting: a file nested a few thousand deep ends in a RecursionError. Both are refused here with the place
named, before anything else looks at the value.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Scenarios, CRIC records and task parameters nest at most 6 deep; 64 leaves room and stays far from the stack.
MAX_DEPTH = 64


class UnsafeJson(ValueError):
    """The value cannot be held as it is; `path` names where ("$" is the whole document)."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def json_loads_bounded(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads` that refuses nesting deeper than `max_depth` with a ValueError instead of a RecursionError.
    Other syntax errors stay json's ValueError (line and column named)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise UnsafeJson("$", f"nested deeper than {max_depth} levels") from None
    depth_problem = too_deep(value, max_depth=max_depth)
    if depth_problem is not None:
        raise UnsafeJson(depth_problem, f"nested deeper than {max_depth} levels")
    return value


def _child(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def too_deep(value: Any, *, max_depth: int = MAX_DEPTH, path: str = "$") -> str | None:
    """The path of the first container nested deeper than `max_depth`, or None. Iterative: any depth is safe."""
    stack: list[tuple[Any, int, str]] = [(value, 1, path)]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return where
            children = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((child, depth + 1, _child(where, key)) for key, child in children)
    return None


def unsafe_value(value: Any, *, path: str = "", nul: bool = False) -> UnsafeJson | None:
    """The first number that is not finite, or (unless `nul` allows them) string, value or key, holding a NUL
    character, with its path; None when the whole value is safe. Iterative, depth-first in document order."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return UnsafeJson(where or "$", f"expected a finite number, got {item!r}")
        if not nul and isinstance(item, str) and "\x00" in item:
            return UnsafeJson(where or "$", "contains a NUL character")
        if isinstance(item, dict) and not nul:
            for key in item:
                if isinstance(key, str) and "\x00" in key:
                    return UnsafeJson(where or "$", f"a key contains a NUL character: {key!r}")
        if isinstance(item, dict):
            stack.extend((child, _child(where, key)) for key, child in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((child, _child(where, index)) for index, child in reversed(list(enumerate(item))))
    return None


def check_safe(value: Any, *, path: str = "", max_depth: int = MAX_DEPTH, nul: bool = False) -> None:
    """Raises UnsafeJson for nesting beyond `max_depth`, a non-finite number or (unless `nul`) a NUL character."""
    deep = too_deep(value, max_depth=max_depth, path=path or "$")
    if deep is not None:
        raise UnsafeJson(deep, f"nested deeper than {max_depth} levels")
    problem = unsafe_value(value, path=path, nul=nul)
    if problem is not None:
        raise problem
