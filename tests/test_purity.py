"""Plain-Python layers stay free of Django, DRF and Celery (the engine will rely on them)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE = [
    "brokerage/states.py",
    "brokerage/shares.py",
    "brokerage/throttle.py",
    "brokerage/splitter.py",
    "brokerage/watchdog.py",
    "brokerage/gdpconfig",
    "brokerage/engine",
]
FORBIDDEN = ("django", "rest_framework", "celery")


def pure_files():
    for entry in PURE:
        path = ROOT / entry
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")) if path.exists() else [])


@pytest.mark.parametrize("path", list(pure_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_framework_import_in_source(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in FORBIDDEN, f"{path.relative_to(ROOT)} imports {name}"


def test_importing_them_loads_no_framework():
    code = (
        "import sys, brokerage.states, brokerage.shares, brokerage.gdpconfig;"
        "import brokerage.throttle, brokerage.splitter, brokerage.watchdog;"
        "import brokerage.engine, brokerage.engine.synthetic;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', 'celery'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
