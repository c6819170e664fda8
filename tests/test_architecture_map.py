"""docs/architecture.md names every folder of Python code by its path from the repository root (issue 48): a new
package goes on the map with the change that makes it."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("brokerage", "config", "monitor", "tools")


def package_folders() -> list[str]:
    folders = set()
    for app in APPS:
        for init in (ROOT / app).rglob("__init__.py"):
            folders.add(init.parent.relative_to(ROOT).as_posix())
    return sorted(folders)


@pytest.mark.parametrize("folder", package_folders())
def test_every_package_folder_is_on_the_map(folder):
    assert f"`{folder}/`" in (ROOT / "docs" / "architecture.md").read_text()
