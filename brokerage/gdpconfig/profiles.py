"""Profiles: named sets of gdpconfig values (REFERENCE.md ruling 5).

`seed` (the default) is the seeds' behaviour: it sets nothing, every parameter keeps its registry default. `panda`
reproduces panda-server 1.0.4 (pandajedi/jedibrokerage/AtlasProdJobBroker.py, AtlasProdTaskBroker.py,
AtlasAnalJobBroker.py, AtlasBrokerUtils.py): each value below switches one behaviour where the real code departs
from the seed, and `tests/peer/` checks the profile against that code run side by side on randomized scenarios.

Resolution (ConfigView): a stored row (or a scenario's own `gdpconfig`) wins over the profile's value, which wins
over the registry default. Plain Python: the engine and the admin read the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PROFILE = "seed"


@dataclass(frozen=True)
class Profile:
    """One named set of values; `source` says what the values reproduce."""

    name: str
    title: str
    source: str
    values: Mapping[str, Any] = field(default_factory=dict)


PROFILES: dict[str, Profile] = {
    "seed": Profile(
        "seed",
        "The seeds' behaviour",
        "../shared/seeds (000 > 001 > 002 for PanDA brokerage), REFERENCE.md rulings",
    ),
    "panda": Profile(
        "panda",
        "panda-server 1.0.4",
        "panda-server 1.0.4 (PyPI sdist): AtlasProdJobBroker, AtlasProdTaskBroker, AtlasAnalJobBroker",
        {
            # AtlasProdJobBroker.doBrokerage: every queue of the cloud is scanned, names are not looked at
            "EXCLUDE_TEST_QUEUES": False,
            # the `ANY` release shortcut needs no CPU/GPU spec (AtlasProdJobBroker "SW/HW check")
            "RELEASES_ANY_SKIPS_HW_CHECK": False,
            # JsonSoftwareCheck passes AUTO queues with the tag; a listed release is not read
            "RELEASES_LIST_ACCEPTED": False,
            # nWorkers / numSlots bootstrap and empty-queue bootstrap only up to this priority
            "MAX_PRIO_TO_BOOTSTRAP": 150,
            "BOOTSTRAP_NEEDS_PILOTS": True,
            "NUM_SLOTS_RULE": "panda",
            # throughput: FTS 1w, then 1d, then 1h, stopping at the first missing one
            "NW_THROUGHPUT_LOOKUP": "panda",
            "NW_ACTIVE": True,
            # AtlasProdJobBroker: t1WeightForHighPrio = 100 for priority ≥ 900 or scouts (not event service)
            "T1_WEIGHT_HIGH_PRIO_SCOUTS": True,
            "T1_WEIGHT_IO_STRICT": True,
            "NEGATIVE_T1_WEIGHT_RULE": "most_running",
            "JOB_CAP_RULE": "panda",
            "BOOTSTRAP_EMPTY_QUEUES": True,
            "UNIFIED_PSEUDO_QUEUES": True,
            "MAXWDIR_SCALING": "panda",
            "MANY_ASSIGNED_RULE": "panda",
            "JOB_WALLTIME_RULE": "panda",
            "JOB_DISK_RULE": "panda",
            "PILOT_RULE": "panda",
            "DISKIO_RULE": "panda",
        },
    ),
}

PROFILE_NAMES: tuple[str, ...] = tuple(PROFILES)


def profile_values(name: str) -> Mapping[str, Any]:
    """The values a profile sets (KeyError for an unknown name)."""
    return PROFILES[name].values
