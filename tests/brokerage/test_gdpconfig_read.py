"""Every registered gdpconfig parameter is read by something (issue 51: PRESTAGE_LIMIT and the seven JUMBO_*
parameters were registered and read by nothing): its key appears as a string in the code that reads the
configuration, or is composed there from parts this test names, or is listed below as not read yet, with why."""

from __future__ import annotations

import ast
from pathlib import Path

from brokerage.gdpconfig.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
# where a parameter's name appears without being read
NOT_READERS = {"registry.py", "profiles.py"}
# keys read under a name composed at run time: (the parts, where)
COMPOSED = {
    "CAP_RUNNING_USER_JOBS": ("CAP_RUNNING_USER", "JOBS"),
    "CAP_RUNNING_USER_CORES": ("CAP_RUNNING_USER", "CORES"),
    "CAP_RUNNING_GROUP_JOBS": ("CAP_RUNNING_GROUP", "JOBS"),
    "CAP_RUNNING_GROUP_CORES": ("CAP_RUNNING_GROUP", "CORES"),
}
# registered for the record and read by nothing yet, with why; the list may only shrink
NOT_READ_YET: dict[str, str] = {}


def string_constants() -> set[str]:
    """Every string constant, and every constant part of an f-string, in the code (not docstrings or comments)."""
    found: set[str] = set()
    for path in [*ROOT.glob("brokerage/**/*.py"), *ROOT.glob("monitor/**/*.py")]:
        if path.name in NOT_READERS or "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found.add(node.value)
    return found


def test_every_registered_parameter_is_read():
    strings = string_constants()
    words = {piece for text in strings for piece in text.replace("{", " ").replace("}", " ").split("_")}
    unread = []
    for parameter in REGISTRY:
        key = parameter.key
        if key in NOT_READ_YET:
            continue
        if key in strings:
            continue
        if key in COMPOSED and all(part in strings or part in words for part in COMPOSED[key]):
            continue
        unread.append(key)
    assert unread == []


def test_the_not_read_list_holds_only_what_nothing_reads():
    strings = string_constants()
    assert [key for key in NOT_READ_YET if key in strings] == []
    assert set(NOT_READ_YET) <= {parameter.key for parameter in REGISTRY}
