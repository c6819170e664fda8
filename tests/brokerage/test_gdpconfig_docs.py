"""docs/gdpconfig.md lists every value a profile sets, with the seed's value beside it."""

from pathlib import Path

import pytest

from brokerage.gdpconfig.profiles import PROFILES
from brokerage.gdpconfig.registry import REGISTRY, format_value

DOC = Path(__file__).resolve().parents[2] / "docs" / "gdpconfig.md"


@pytest.mark.parametrize("profile", ["panda", "dirac", "wmcore"])
def test_every_switch_of_a_real_code_profile_is_documented_with_both_values(profile):
    rows = {line.split("|")[1].strip(" `"): line for line in DOC.read_text().splitlines() if line.startswith("| `")}
    for key, value in PROFILES[profile].values.items():
        parameter = REGISTRY.find(key)[0]
        seed = parameter.default_text if parameter.default is not None else "unset"
        cells = [cell.strip() for cell in rows[key].split("|")]
        assert cells[3:5] == [seed, format_value(parameter.value_type, value)], key
