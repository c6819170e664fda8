"""DIRAC's side of the demo (seed 003): an LHCb-like community whose jobs wait in task queues, and the pilots at
six sites that ask the Matcher for them (played by the grid simulator).

Three groups submit: Monte Carlo production (long jobs, any site), data processing (Tier-1s only, some on
several cores) and users (short jobs, some pinned to a site or banning one, a few on GPUs). The sites differ the
way real ones do: a Tier-1 whose pilots cannot run the longest jobs, a GPU site, an old site still on EL7 with
short slots — so some requests find nothing, and the overview shows why.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from brokerage.services.dirac import dirac_jobs_submit

SETUP = "LHCb-Production"
EL9 = "x86_64-el9"
TIER1 = ("LCG.CERN.cern", "LCG.CNAF.it", "LCG.GRIDKA.de", "LCG.RAL.uk")
PRODUCTION_DN = "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=lbprods/CN=Robot: LHCb Production"
DATA_DN = "/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN=lbdata/CN=Robot: LHCb Data Processing"
USER_DNS = tuple(
    f"/DC=ch/DC=cern/OU=Organic Units/OU=Users/CN={login}/CN={name}"
    for login, name in (("amartin", "Ana Martin"), ("bkowal", "Bartek Kowalski"), ("cdupont", "Claire Dupont"))
)


@dataclass(frozen=True)
class DiracPilot:
    """What the pilots of one site offer the Matcher, and how many jobs the site runs at once."""

    site: str
    gridCE: str
    platform: str
    tags: tuple[str, ...]
    cpuTime: int
    slots: int

    def resource(self) -> dict[str, Any]:
        return {
            "setup": SETUP,
            "cpuTime": self.cpuTime,
            "site": self.site,
            "gridCE": self.gridCE,
            "platform": self.platform,
            "tags": list(self.tags),
        }


PILOTS = (
    DiracPilot("LCG.CERN.cern", "ce503.cern.ch", EL9, ("MultiProcessor",), 345_600, 40),
    DiracPilot("LCG.CNAF.it", "ce01-lcg.cr.cnaf.infn.it", EL9, (), 345_600, 25),
    DiracPilot("LCG.GRIDKA.de", "arc-1-kit.gridka.de", EL9, ("MultiProcessor",), 345_600, 25),
    DiracPilot("LCG.RAL.uk", "arc-ce01.gridpp.rl.ac.uk", EL9, (), 172_800, 20),  # too short for MC production
    DiracPilot("DIRAC.Bologna.it", "hpc-gpu.bo.infn.it", EL9, ("GPU",), 86_400, 6),
    DiracPilot("LCG.JINR.ru", "lcgce21.jinr.ru", "x86_64-el7", (), 10_000, 6),  # old OS, short slots
)


def dirac_demo_jobs(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """`count` job descriptions in the proportions of the module docstring."""
    jobs = []
    for _ in range(count):
        kind = rng.choices(("mc", "data", "user"), weights=(5, 2, 3))[0]
        if kind == "mc":
            job = {
                "owner": PRODUCTION_DN,
                "ownerGroup": "lhcb_mc",
                "cpuTime": rng.choice([80_000, 150_000, 250_000]),
                "platforms": [EL9],
                "jobTypes": ["MCSimulation"],
                "userPriority": rng.choice([1, 2, 3]),
            }
        elif kind == "data":
            job = {
                "owner": DATA_DN,
                "ownerGroup": "lhcb_data",
                "cpuTime": 40_000,
                "sites": list(TIER1),
                "platforms": [EL9],
                "jobTypes": ["DataReconstruction"],
                "tags": ["MultiProcessor"] if rng.random() < 0.4 else [],
                "userPriority": 5,
            }
        else:
            job = {
                "owner": rng.choice(USER_DNS),
                "ownerGroup": "lhcb_user",
                "cpuTime": rng.choice([3_000, 4_000, 20_000]),
                "jobTypes": ["User"],
                "userPriority": rng.randint(1, 5),
            }
            pick = rng.random()
            if pick < 0.2:
                job["sites"] = rng.sample(TIER1, 2)
            elif pick < 0.3:
                job["bannedSites"] = [rng.choice(TIER1)]
            elif pick < 0.4:
                job["tags"] = ["GPU"]
        job["setup"] = SETUP
        jobs.append(job)
    return jobs


def demo_dirac_build(*, now: datetime, rng: random.Random, count: int = 300) -> int:
    """Submits the first jobs (into their task queues, with their priorities). Returns how many."""
    return len(dirac_jobs_submit(jobs=dirac_demo_jobs(rng, count), now=now))
