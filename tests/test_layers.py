"""The layers' direction (issue 48): selectors read and never call services (HackSoftware's styleguide: services may
use selectors, not the other way round). Imports inside functions count too.

Two leaks remain, each waiting for its service to be split into read → plan → write (issue 48): the WMCore request
page reads elements with the agents' own reader, and the broker preview builds a job set's scenario with the job
generator's helpers. They are listed here so that no new one comes in and each listed one is taken off when fixed."""

from pathlib import Path

import pytest

from tests.test_purity import ROOT, imported_modules

KNOWN_LEAKS = {
    "brokerage/selectors/preview.py": {"brokerage.services.jobs"},
    "brokerage/selectors/wmcore_request.py": {"brokerage.services.wmcore.common"},
}


def service_imports(path: Path) -> set[str]:
    return {
        name
        for name in imported_modules(path)
        if name == "brokerage.services" or name.startswith("brokerage.services.")
    }


def selector_files() -> list[Path]:
    return sorted((ROOT / "brokerage" / "selectors").rglob("*.py"))


@pytest.mark.parametrize("path", selector_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_selector_imports_no_service(path):
    allowed = KNOWN_LEAKS.get(str(path.relative_to(ROOT)), set())
    assert service_imports(path) <= allowed


@pytest.mark.parametrize("name", sorted(KNOWN_LEAKS))
def test_each_known_leak_is_still_there(name):
    """A leak fixed is taken off the list, so the list only shrinks."""
    assert service_imports(ROOT / name) == KNOWN_LEAKS[name]
