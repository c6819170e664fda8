"""Our JumboWatchDog round (brokerage.jumbo, the panda variant, with the service's parameter lookup) against the real
JumboWatchDog of panda-server 1.0.4 (tools/peer/jumbo_driver.py), on generated rounds shaped like a grid's event
service tasks: one to eight tasks in every useJumbo flag and every status the watchdog reads, events left exactly at
JUMBO_MIN_EVENTS_DISABLE and one either side, priorities at 500 and 900 and one either side, files left at
JUMBO_MAX_FILES_TO_BOOST and either side, progress at JUMBO_PROG_TO_BOOST, tasks with a site, jumbo jobs in active and
ended statuses, and the parameters unset (the derived defaults) or set around the numbers they are compared with.

A round agrees when both make the same calls in the same order (disable: enableJumboJobs(task, 0, 0); boost:
changeTaskPriorityPanda; kick; reset) and report the same totals of the tasks kept with jumbo jobs."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from brokerage.gdpconfig.registry import ConfigView
from brokerage.jumbo import (
    ACTIVE_JUMBO_STATUSES,
    STATUSES_READ,
    USE_JUMBO_FLAGS,
    JumboRound,
    JumboTask,
    jumbo_round_panda,
)
from brokerage.services.jumbo import jumbo_limits
from tools.peer.compare import driver_run

ENDED = ("finished", "failed", "cancelled", "closed")
KEYS = ("JUMBO_MIN_EVENTS_DISABLE", "JUMBO_PROG_TO_BOOST", "JUMBO_MAX_FILES_TO_BOOST", "JUMBO_PRIO_DISABLED")


def round_generate(rng: random.Random) -> dict[str, Any]:
    """One round in the driver's format."""
    config: dict[str, Any] = {}
    if rng.random() < 0.5:
        config["JUMBO_MIN_EVENTS_DISABLE"] = rng.choice((0, 1000, 50_000, 100_000))
    if rng.random() < 0.3:
        config["JUMBO_PROG_TO_BOOST"] = rng.choice((0, 50, 95, 100))
    if rng.random() < 0.3:
        config["JUMBO_MAX_FILES_TO_BOOST"] = rng.choice((0, 10, 500))
    if rng.random() < 0.3:
        config["JUMBO_PRIO_DISABLED"] = rng.choice((300, 500, 900))
    disable_at = config.get("JUMBO_MIN_EVENTS_DISABLE", 100_000)
    files_at = config.get("JUMBO_MAX_FILES_TO_BOOST", 500)
    tasks = []
    for number in range(rng.randint(1, 8)):
        events = rng.choice((0, 1000, 120_000, 2_000_000))
        left = max(0, rng.choice((disable_at - 1, disable_at, disable_at + 1, events, events // 20, 0)))
        left = min(left, events) if rng.random() < 0.8 else left  # a few with more done than asked for
        files = rng.choice((0, 5, 400, 5000))
        files_left = max(0, min(files, rng.choice((files_at - 1, files_at, files_at + 1, files, 0))))
        jumbo_jobs: dict[str, int] = {}
        for _ in range(rng.choice((0, 0, 1, 2))):
            status = rng.choice((*ACTIVE_JUMBO_STATUSES, *ENDED))
            jumbo_jobs[status] = jumbo_jobs.get(status, 0) + rng.randint(1, 3)
        tasks.append(
            {
                "jediTaskID": 1000 + number,
                "status": rng.choice(STATUSES_READ),
                "useJumbo": rng.choice(USE_JUMBO_FLAGS),
                "currentPriority": rng.choice((0, 299, 300, 499, 500, 501, 899, 900, 901, 1000)),
                "site": "CERN-PROD" if rng.random() < 0.15 else "",
                "nEvents": events,
                "nEventsDone": events - left,
                "nFiles": files,
                "nFilesDone": files - files_left,
                "jumbo_jobs": jumbo_jobs,
            }
        )
    return {"config": config, "tasks": tasks}


def ours(round_: dict[str, Any]) -> JumboRound:
    """Our panda round on the driver's input, the parameters looked up as the service looks them up."""
    tasks = [
        JumboTask(
            jediTaskID=t["jediTaskID"],
            status=t["status"],
            useJumbo=t["useJumbo"],
            currentPriority=t["currentPriority"],
            site=t["site"],
            nEvents=t["nEvents"],
            nEventsDone=t["nEventsDone"],
            nFiles=t["nFiles"],
            nFilesDone=t["nFilesDone"],
            jumbo_jobs=t["jumbo_jobs"],
        )
        for t in round_["tasks"]
    ]
    view = ConfigView({(key, ""): value for key, value in round_["config"].items()})
    return jumbo_round_panda(tasks=tasks, limits=jumbo_limits(config=view))


def calls_of(decided: JumboRound) -> list[list]:
    """Our actions as the real watchdog's calls."""
    calls: list[list] = []
    for action in decided.actions:
        if action.action == "disable":
            calls.append(["enableJumboJobs", action.task_id, 0, 0])
        elif action.action == "boost":
            calls.append(["changeTaskPriorityPanda", action.task_id, action.priority])
        elif action.action == "kick":
            calls.append(["kickPendingTasksWithJumbo_JEDI", action.task_id])
        elif action.action == "reset":
            calls.append(["resetInputToReGenCoJumbo_JEDI", action.task_id])
    return calls


TOTALS = re.compile(r"total_events=(-?\d+) n_events_to_process=(-?\d+) n_tasks=(\d+)")


def totals_of(lines: list[str]) -> tuple[int, int, int] | None:
    """The real round's last line: events of the tasks kept with jumbo jobs, events left, tasks."""
    for line in reversed(lines):
        found = TOTALS.search(line)
        if found:
            return int(found[1]), int(found[2]), int(found[3])
    return None


@dataclass
class JumboComparison:
    seed: int
    agrees: bool
    ours: str
    theirs: str


def peer_rounds(peer, rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The real watchdog's calls and log lines for each round, from one peer process."""
    return driver_run(peer, "jumbo_driver.py", rounds, timeout=600)


def jumbo_compare(peer, *, count: int, first_seed: int = 0) -> list[JumboComparison]:
    """`count` generated rounds (seeds first_seed…), each run by ours and by the real watchdog."""
    rounds = [round_generate(random.Random(seed)) for seed in range(first_seed, first_seed + count)]
    comparisons = []
    for seed, round_, theirs in zip(
        range(first_seed, first_seed + count), rounds, peer_rounds(peer, rounds), strict=True
    ):
        decided = ours(round_)
        mine = (calls_of(decided), (decided.total_events, decided.events_to_process, decided.tasks_with_jumbo))
        if "error" in theirs or any("ERROR" in line or "Traceback" in line for line in theirs["lines"]):
            real = (theirs.get("error") or theirs["lines"], None)
        else:
            real = (theirs["calls"], totals_of(theirs["lines"]))
        agrees = mine[0] == real[0] and mine[1] == real[1]
        comparisons.append(JumboComparison(seed, agrees, repr(mine), repr(real)))
    return comparisons
