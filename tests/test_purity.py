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
    "brokerage/jumbo.py",
    "brokerage/event_service.py",
    "brokerage/splitter.py",
    "brokerage/watchdog.py",
    "brokerage/gdpconfig",
    "brokerage/inputs_codec.py",
    "brokerage/engine",
]
FORBIDDEN = ("django", "rest_framework", "celery")


def imported_modules(path: Path) -> list[str]:
    """Every module `path` imports, at its top or inside a function (absolute imports)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def pure_files():
    for entry in PURE:
        path = ROOT / entry
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")) if path.exists() else [])


@pytest.mark.parametrize("path", list(pure_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_framework_import_in_source(path):
    for name in imported_modules(path):
        assert name.split(".")[0] not in FORBIDDEN, f"{path.relative_to(ROOT)} imports {name}"


def test_importing_them_loads_no_framework():
    code = (
        "import sys, brokerage.states, brokerage.shares, brokerage.gdpconfig;"
        "import brokerage.throttle, brokerage.jumbo, brokerage.event_service, brokerage.splitter, brokerage.watchdog;"
        "import brokerage.engine, brokerage.engine.panda.synthetic, brokerage.inputs_codec;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', 'celery'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


RUNTIME = ("brokerage", "monitor")


@pytest.mark.parametrize("package", RUNTIME)
def test_the_runtime_apps_import_no_tool(package):
    """Issue 48: the benchmarks and the drivers of the real code live in tools/, outside the apps a deployment
    runs; nothing of the apps may need them."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] == "tools"
    ]
    assert offenders == []


def test_no_benchmark_or_driver_code_is_left_in_the_app():
    assert not (ROOT / "brokerage" / "bench").exists()
    assert not (ROOT / "brokerage" / "peer").exists()
    assert (ROOT / "tools" / "bench" / "runner.py").exists()
    assert (ROOT / "tools" / "peer" / "compare.py").exists()
