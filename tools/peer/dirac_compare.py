"""Our `dirac_match` under the `dirac` profile beside the real DIRAC 9.1.22 TaskQueueDB, on the same randomized
inputs: which task queues each resource may take (through the plugin, as a scenario file), the task-queue
priorities, and the distribution of the task queues and user priorities drawn (a chi-square test of both
samples). Nothing here imports Django; the real code runs in its own venv (dirac_setup.py, dirac_driver.py).
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokerage.engine import run
from brokerage.engine.dirac.rules import Group, MatchRules, TaskQueue, match, task_queue_priorities
from brokerage.engine.dirac.scenario import queue_for_priorities, resource_from_data
from brokerage.gdpconfig import ConfigView
from tools.peer.dirac_setup import DiracPeer, MariaDB
from tools.peer.setup import PeerUnavailable

# DIRAC's default segments (TaskQueueDB.__defaultCPUSegments), configured on both sides
CPU_SEGMENTS = (360, 1800, 3600, 21600, 43200, 86400, 172800, 259200, 345600, 518400, 691200, 864000, 1080000)
GROUPS = {
    "lhcb_user": {"share": 1000, "vo": "lhcb", "properties": ["NormalUser"]},
    "lhcb_prod": {"share": 3000, "vo": "lhcb", "properties": ["NormalUser", "JobSharing"]},
    "lhcb_mc": {"share": 2000, "vo": "lhcb", "properties": ["NormalUser"], "backgroundTQs": True},
}
OWNERS = {"alice": "lhcb_user", "bob": "lhcb_user", "prodA": "lhcb_prod", "prodB": "lhcb_prod", "mcX": "lhcb_mc"}
CHOICES = {
    "Sites": [[]] * 5 + [["CERN"], ["CERN", "RAL"], ["GRIDKA"], ["IN2P3", "RAL"]],
    "BannedSites": [[]] * 5 + [["CERN"], ["RAL", "IN2P3"]],
    "GridCEs": [[]] * 7 + [["ce1.cern.ch"], ["ce2.ral.ac.uk", "ce3.ral.ac.uk"]],
    "Platforms": [[]] * 3 + [["x86_64-el9"], ["x86_64-el9", "x86_64-el8"], ["x86_64-el8"]],
    "Tags": [[]] * 5 + [["GPU"], ["MultiProcessor", "8Processors"], ["ANY"]],
    "JobTypes": [[]] * 5 + [["User"], ["MCSimulation"], ["Test"]],
}
PRIORITIES = (0, 1, 1, 1, 2, 3, 5, 9, 10)
# engine field ← DIRAC field
FIELD_NAMES = {
    "sites": "Sites",
    "bannedSites": "BannedSites",
    "gridCEs": "GridCEs",
    "platforms": "Platforms",
    "tags": "Tags",
    "jobTypes": "JobTypes",
}


def _definitions_and_jobs(
    rng: random.Random,
    owners: dict[str, str],
    choices: dict[str, list],
    cpu_time,
    task_queues: int,
    *,
    first_job: int,
    per_queue: tuple[int, int],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Distinct task-queue definitions (an owner and its group, a CPU time, one choice per multi-valued field, RAM
    now and then) and their jobs, `per_queue` of them each with priorities 0-10."""
    seen, definitions = set(), []
    while len(definitions) < task_queues:
        owner = rng.choice(sorted(owners))
        definition = {"Owner": owner, "OwnerGroup": owners[owner], "CPUTime": cpu_time()}
        definition.update({name: list(rng.choice(options)) for name, options in choices.items()})
        if rng.random() < 0.2:
            definition["MinRAM"], definition["MaxRAM"] = rng.choice([(2000, 4000), (8000, 16000), (0, 4000)])
        key = json.dumps(definition, sort_keys=True)
        if key not in seen:
            seen.add(key)
            definitions.append(definition)
    jobs, job_id = [], first_job
    for index in range(len(definitions)):
        for _ in range(rng.randint(*per_queue)):
            job_id += 1
            jobs.append({"jobID": job_id, "def": index, "priority": rng.choice(PRIORITIES)})
    return definitions, jobs


def generate(seed: int, *, task_queues: int = 40, resources: int = 200) -> dict[str, Any]:
    """Distinct task-queue definitions (owners, CPU times on the segments, every multi-valued field, RAM), 20–60
    jobs each with priorities 0–10, and resource descriptions using every key TaskQueueDB matches."""
    rng = random.Random(seed)
    definitions, jobs = _definitions_and_jobs(
        rng, OWNERS, CHOICES, lambda: rng.choice(CPU_SEGMENTS[:8]), task_queues, first_job=1000, per_queue=(20, 60)
    )
    offers = []
    for _ in range(resources):
        offer: dict[str, Any] = {"CPUTime": rng.choice([300, 2000, 3600, 30000, 86400, 200000, 400000])}
        for key, options in (
            ("Site", ["CERN", "RAL", "GRIDKA", "IN2P3", "PIC", None]),
            ("GridCE", [None] * 5 + ["ce1.cern.ch", "ce2.ral.ac.uk", "ANY"]),
            ("Platform", [None, "x86_64-el9", "x86_64-el9", "x86_64-el8", "x86_64-el7"]),
            ("JobType", [None] * 6 + ["User", "MCSimulation", "Test"]),
            ("MaxRAM", [None, None, 1000, 4000, 20000]),
        ):
            value = rng.choice(options)
            if value is not None:
                offer[key] = value
        tags = rng.choice(
            [None, None, [], ["GPU"], ["MultiProcessor", "8Processors"], ["GPU", "MultiProcessor"], ["ANY"]]
        )
        if tags is not None:
            offer["Tag"] = tags
            if "GPU" in tags and rng.random() < 0.5:
                offer["RequiredTag"] = ["GPU"]
        if rng.random() < 0.15:
            offer["BannedSite"] = [rng.choice(["CERN", "RAL"])]
        if rng.random() < 0.1:
            offer["BannedTag"] = ["GPU"]
        pilot = rng.random()
        owner = rng.choice(sorted(OWNERS))
        if pilot < 0.1:
            offer["Owner"], offer["OwnerGroup"] = owner, OWNERS[owner]
        elif pilot < 0.15:
            offer["OwnerGroup"] = OWNERS[owner]
        elif pilot < 0.2:
            offer["Owner"] = owner
        offers.append(offer)
    return {"seed": seed, "task_queue_defs": definitions, "jobs": jobs, "resources": offers}


# Real-shaped inputs (issue 49): an LHCb-like Registry with several owners per group, a JobSharing group, a group
# allowing background task queues, a group without a JobShare (DIRAC's default) and one outside the Registry;
# CPU times at the segment boundaries; pilots as the Matcher builds them — DIRACPlatform turned into the list of
# compatible platforms, a generic pilot's OwnerGroup the VO's groups, lists of sites, CEs and job types, bans of
# several values, and names in another letter case than the task queues'.
REAL_GROUPS = {
    **GROUPS,
    "lhcb_calib": {"vo": "lhcb", "properties": ["NormalUser"]},  # no JobShare: DIRAC's default
}
REAL_OWNERS = {
    **OWNERS,
    "carol": "lhcb_user",
    "dave": "lhcb_user",
    "prodC": "lhcb_prod",
    "calib1": "lhcb_calib",
    "ghost": "lhcb_ghost",  # a group the Registry does not know
}
COMPATIBLE_PLATFORMS = {
    "x86_64-el9": ["x86_64-el9", "x86_64-el8", "x86_64-el7"],
    "x86_64-el8": ["x86_64-el8", "x86_64-el7"],
    "aarch64-el9": ["aarch64-el9"],
}
REAL_CHOICES = {
    **CHOICES,
    "Sites": [[]] * 5 + [["LCG.CERN.cern"], ["LCG.CERN.cern", "LCG.RAL.uk"], ["LCG.GRIDKA.de"], ["lcg.ral.uk"]],
    "BannedSites": [[]] * 5 + [["LCG.CERN.cern"], ["LCG.RAL.uk", "LCG.IN2P3.fr"]],
    "Platforms": [[]] * 3 + [["x86_64-el9"], ["x86_64-el8"], ["X86_64-EL7"], ["aarch64-el9"]],
    "Tags": [[]] * 4 + [["GPU"], ["gpu"], ["MultiProcessor", "8Processors"], ["ANY"]],
    "JobTypes": [[]] * 4 + [["User"], ["MCSimulation"], ["mcsimulation", "User"], ["Test"]],
}
SITES = ["LCG.CERN.cern", "LCG.RAL.uk", "LCG.GRIDKA.de", "LCG.IN2P3.fr", "LCG.PIC.es"]


def _cpu_at_boundaries(rng: random.Random) -> int:
    segment = rng.choice(CPU_SEGMENTS[:9])
    return max(1, segment + rng.choice([-1, 0, 0, 1]))


def generate_real(seed: int, *, task_queues: int = 45, resources: int = 300) -> dict[str, Any]:
    """Real-shaped inputs (REAL_GROUPS … above): task-queue definitions and jobs as `generate` makes them, and
    resources sending lists."""
    rng = random.Random(f"real-dirac:{seed}")
    definitions, jobs = _definitions_and_jobs(
        rng, REAL_OWNERS, REAL_CHOICES, lambda: _cpu_at_boundaries(rng), task_queues, first_job=5000, per_queue=(10, 40)
    )
    offers = []
    for _ in range(resources):
        offer: dict[str, Any] = {"CPUTime": _cpu_at_boundaries(rng)}
        roll = rng.random()
        if roll < 0.6:
            offer["Site"] = rng.choice(SITES) if rng.random() < 0.7 else rng.sample(SITES, 2)
            if rng.random() < 0.15:
                offer["Site"] = "lcg.cern.cern"  # another letter case
        if rng.random() < 0.4:
            offer["GridCE"] = rng.choice([["ce1.cern.ch"], ["ce2.ral.ac.uk", "ce3.ral.ac.uk"], "CE1.CERN.CH", "ANY"])
        if rng.random() < 0.7:
            offer["Platform"] = list(COMPATIBLE_PLATFORMS[rng.choice(sorted(COMPATIBLE_PLATFORMS))])
        if rng.random() < 0.4:
            offer["JobType"] = rng.choice([["User", "MCSimulation"], "User", ["Test"], ["MCSimulation", "Merge"]])
        if rng.random() < 0.3:
            offer["MaxRAM"] = rng.choice([1000, 4000, 20000])
        tags = rng.choice(
            [None, [], ["GPU"], ["gpu"], ["MultiProcessor", "8Processors"], ["ANY"], ["Gpu", "MultiProcessor"]]
        )
        if tags is not None:
            offer["Tag"] = tags
        for banned, options in (
            ("BannedSite", [["LCG.CERN.cern"], ["LCG.CERN.cern", "LCG.RAL.uk"], ["lcg.ral.uk", "LCG.IN2P3.fr"]]),
            ("BannedJobType", [["User"], ["User", "MCSimulation"]]),
            ("BannedTag", [["GPU"], ["GPU", "MultiProcessor"]]),
            ("BannedPlatform", [["x86_64-el7"], ["x86_64-el7", "x86_64-el8"]]),
            ("BannedGridCE", [["ce1.cern.ch"], ["ce1.cern.ch", "ce2.ral.ac.uk"]]),
        ):
            if rng.random() < 0.12:
                offer[banned] = rng.choice(options)
        pilot = rng.random()
        owner = rng.choice(sorted(REAL_OWNERS))
        if pilot < 0.08:
            offer["Owner"], offer["OwnerGroup"] = owner, REAL_OWNERS[owner]
        elif pilot < 0.2:  # a generic pilot: its VO's groups
            offer["OwnerGroup"] = sorted({g for g in REAL_OWNERS.values() if g in REAL_GROUPS})
        elif pilot < 0.25:
            offer["OwnerGroup"] = [REAL_OWNERS[owner].upper()]
        if rng.random() < 0.04:
            offer["RequiredTag"] = ["NotOffered"]  # "Wrong conditions" in the real code: an error for this resource
        offers.append(offer)
    return {"seed": seed, "task_queue_defs": definitions, "jobs": jobs, "resources": offers, "groups": REAL_GROUPS}


def our_resource(offer: dict[str, Any]) -> dict[str, Any]:
    """A TaskQueueDB match dict as our resource (no Setup in DIRAC v9: both empty)."""
    return {
        "setup": "",
        "cpuTime": offer["CPUTime"],
        "site": offer.get("Site", ""),
        "gridCE": offer.get("GridCE", ""),
        "platform": offer.get("Platform", ""),
        "jobType": offer.get("JobType", ""),
        "ownerDN": offer.get("Owner", ""),
        "ownerGroup": offer.get("OwnerGroup", ""),
        "tags": offer.get("Tag", []),
        "requiredTags": offer.get("RequiredTag", []),
        "bannedSites": offer.get("BannedSite", []),
        "bannedTags": offer.get("BannedTag", []),
        "bannedJobTypes": offer.get("BannedJobType", []),
        "bannedPlatforms": offer.get("BannedPlatform", []),
        "bannedGridCEs": offer.get("BannedGridCE", []),
        **({"maxRAM": offer["MaxRAM"]} if "MaxRAM" in offer else {}),
    }


def our_groups(groups: dict[str, dict[str, Any]] = GROUPS) -> dict[str, dict[str, Any]]:
    """The Registry's groups as scenario groups; a group without a JobShare takes our default (DIRAC's)."""
    return {
        name: {
            **({"share": spec["share"]} if "share" in spec else {}),
            "vo": spec["vo"],
            "jobSharing": "JobSharing" in spec["properties"],
            "backgroundTQs": spec.get("backgroundTQs", False),
        }
        for name, spec in groups.items()
    }


def our_task_queues(state: dict[str, Any]) -> list[dict[str, Any]]:
    """DIRAC's stored task queues (ids, owners, CPU times, fields, RAM, priorities) as scenario task queues."""
    return [
        {
            "id": tq["id"],
            "ownerDN": tq["Owner"],
            "ownerGroup": tq["OwnerGroup"],
            "setup": "",
            "cpuTime": tq["CPUTime"],
            "priority": tq["Priority"],
            "minRAM": tq["MinRAM"],
            "maxRAM": tq["MaxRAM"],
            **{ours: sorted(tq[theirs]) for ours, theirs in FIELD_NAMES.items()},
        }
        for tq in state["task_queues"]
    ]


def chi_square_p(first: Counter, second: Counter) -> float:
    """p-value of a chi-square test that two samples come from one law (a 2 × k table; cells expecting fewer
    than 5 pooled). The survival function by the Wilson–Hilferty approximation, ample for a p > 0.001 test."""
    n1, n2 = sum(first.values()), sum(second.values())
    cells, pooled = [], [0, 0]
    for key in set(first) | set(second):
        a, b = first.get(key, 0), second.get(key, 0)
        if (a + b) * min(n1, n2) / (n1 + n2) < 5:
            pooled[0] += a
            pooled[1] += b
        else:
            cells.append((a, b))
    if sum(pooled):
        cells.append(tuple(pooled))
    if len(cells) < 2:
        return 1.0
    total = n1 + n2
    x = 0.0
    for a, b in cells:
        column = a + b
        for observed, row in ((a, n1), (b, n2)):
            expected = row * column / total
            x += (observed - expected) ** 2 / expected
    k = len(cells) - 1
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass
class DiracReport:
    """Agreement figures: eligible sets, priorities, draw distributions (p-values), and the times."""

    resources: int
    eligible_agree: int
    priorities_agree: int
    task_queues: int
    draw_p_values: dict[int, dict[str, float]] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    our_match_ms: float = 0.0
    their_match_ms: float = 0.0
    load_seconds: float = 0.0


def run_dirac(peer: DiracPeer, server: MariaDB, data: dict[str, Any], *, draws: int, drawn: int) -> dict[str, Any]:
    """The real TaskQueueDB on the input; `draws` matchAndGetJob draws for `drawn` resources it picks."""
    payload = {
        **data,
        "port": server.port,
        "groups": data.get("groups", GROUPS),
        "cpu_segments": list(CPU_SEGMENTS),
        "draws": {"count": draws, "resources": drawn},
    }
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "input.json"
        path.write_text(json.dumps(payload))
        done = subprocess.run([str(peer.python), str(peer.driver), str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PeerUnavailable(f"the real TaskQueueDB failed: {' / '.join(tail)}")
    return json.loads(done.stdout)


def run_dirac_speed(peer: DiracPeer, server: MariaDB, data: dict[str, Any]) -> dict[str, Any]:
    """matchAndGetJob timed on a bulk-loaded set (dirac_driver.py's speed mode): {match_ms, matched, load_seconds}."""
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "input.json"
        path.write_text(json.dumps({**data, "port": server.port}))
        done = subprocess.run([str(peer.python), str(peer.driver), str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PeerUnavailable(f"the real TaskQueueDB failed: {' / '.join(tail)}")
    return json.loads(done.stdout)


def compare_dirac(
    peer: DiracPeer,
    server: MariaDB,
    *,
    seed: int = 19,
    resources: int = 200,
    draws: int = 1500,
    drawn: int = 4,
    real_shaped: bool = False,
) -> DiracReport:
    """Both sides on one generated input (`generate`, or `generate_real`); `drawn` plain pilots with at least three
    eligible queues get `draws` draws on each side. A resource the real code answers with an error ("Wrong
    conditions") is counted apart (`refused`), not compared."""
    data = generate_real(seed, resources=resources) if real_shaped else generate(seed, resources=resources)
    theirs = run_dirac(peer, server, data, draws=draws, drawn=drawn)
    state = theirs["state"]
    queues = our_task_queues(state)
    jobs = [{"jobID": j["jobID"], "taskQueue": j["taskQueue"], "userPriority": j["priority"]} for j in state["jobs"]]
    base = {
        "plugin": "dirac_match",
        "profile": "dirac",
        "cpu_segments": list(CPU_SEGMENTS),
        "groups": our_groups(data.get("groups", GROUPS)),
        "task_queues": queues,
        "jobs": jobs,
    }
    report = DiracReport(
        resources=len(data["resources"]), eligible_agree=0, priorities_agree=0, task_queues=len(queues)
    )
    for index, offer in enumerate(data["resources"]):
        if isinstance(theirs["eligible"][index], dict):  # the real code's error for this resource
            report.refused.append(f"resource {index}: {theirs['eligible'][index]['error']}")
            continue
        decision = run({**base, "seed": index, "resource": our_resource(offer)})
        ours = sorted(int(c.name[2:]) for c in decision.candidates)
        if ours == theirs["eligible"][index]:
            report.eligible_agree += 1
        else:
            report.differences.append(f"resource {index} {offer}: ours {ours}, DIRAC {theirs['eligible'][index]}")
    # priorities: ours from the stored jobs under the dirac rules, theirs as stored: a "%.4f" value in a MariaDB
    # FLOAT column, read back with six significant digits (322.2345 → 322.234)
    rules = MatchRules.from_config(ConfigView({}, profile="dirac"))
    groups = {name: Group(**spec) for name, spec in our_groups(data.get("groups", GROUPS)).items()}
    by_queue: dict[int, list[float]] = {}
    for job in jobs:
        by_queue.setdefault(job["taskQueue"], []).append(job["userPriority"])
    engine_queues = [TaskQueue(**{**q, **{k: frozenset(q[k]) for k in FIELD_NAMES}}) for q in queues]
    ours_priorities = task_queue_priorities(
        [queue_for_priorities(tq, by_queue.get(tq.id, [])) for tq in engine_queues], groups=groups, rules=rules
    )
    for tq in state["task_queues"]:
        mine = ours_priorities[tq["id"]]
        if abs(mine - tq["Priority"]) <= 1e-4 + 5e-6 * abs(tq["Priority"]):
            report.priorities_agree += 1
        else:
            report.differences.append(f"TQ{tq['id']} priority: ours {mine:.6f}, DIRAC {tq['Priority']:.6f}")
    # draws: ours with the same priorities and seeds 0 … n−1, against DIRAC's RAND() draws
    jobs_of: dict[int, list[tuple[int, float]]] = {}
    for job in jobs:
        jobs_of.setdefault(job["taskQueue"], []).append((job["jobID"], job["userPriority"]))
    priority_of = {job["jobID"]: job["userPriority"] for job in jobs}
    # time per request on parsed inputs, as TaskQueueDB's query runs on loaded tables: the rules and the draw
    our_seconds = []
    for offer in data["resources"]:
        resource = resource_from_data(our_resource(offer))
        started = time.perf_counter()
        match(engine_queues, jobs_of, resource, 0, rules, groups)
        our_seconds.append(time.perf_counter() - started)
    for key, picked in theirs["draws"].items():
        index = int(key)
        resource = resource_from_data(our_resource(data["resources"][index]))
        mine = [match(engine_queues, jobs_of, resource, s, rules, groups) for s in range(len(picked))]
        their_queues = Counter(p[0] for p in picked if p)
        our_queues = Counter(m.task_queue for m in mine if m.task_queue is not None)
        their_priorities = Counter(priority_of[p[1]] for p in picked if p)
        our_priorities = Counter(m.user_priority for m in mine if m.job is not None)
        report.draw_p_values[index] = {
            "task_queue": chi_square_p(their_queues, our_queues),
            "user_priority": chi_square_p(their_priorities, our_priorities),
            "n": len(picked),
        }
    report.our_match_ms = 1000 * sorted(our_seconds)[len(our_seconds) // 2]
    their = theirs["seconds"]["eligible"]
    report.their_match_ms = 1000 * sorted(their)[len(their) // 2]
    report.load_seconds = theirs["seconds"]["load"]
    return report
