"""Our brokerage log lines in JEDI's grammar (brokerage/engine/core/jedi_log.py) against the lines the real
panda-server 1.0.4 brokers write for the same scenarios (their logger captured by tools/peer/panda_driver.py with
PEER_LOG=1), compared line by line after this normalisation:

- every line begins with the same `<jediTaskID=N> ` (the analysis broker's `<jediTaskID=N datasetID=M>`), and
  the job broker's first is `start currentPriority=P`;
- the summary blocks — the `===== … =====` title, `the number of initial candidates: N`, each
  `N -> M candidates, P% cut : <check>` line, `the number of final candidates: M` — are compared line for line,
  in order (a task broker's log holds its job check's summary when that keeps no queue);
- the skip lines are compared as (subject, name, criteria), a queue as its unified name (JEDI names a unified queue
  at some checks and a pseudo-queue at others), as a set: the real broker prints a check's removed queues in the
  order of a Python set. The words between `skip site=Q` (or `nucleus=N`) and `criteria=` are each side's own
  sentence; a task broker's log holds its job check's site skips beside its own nucleus skips;
- the use lines of the log's own subject as (name, weight) pairs, a queue by its unified name at its best weight
  (as the decisions' comparison: the real broker picks among a unified queue and its pseudo-queues in a set's
  order), the weights equal within a relative 1e-6 (as the decisions' comparison; the analysis broker writes 7
  decimals, so 1e-7 apart there), a queue used "to bootstrap" weighing 0 (as the real broker sets it); the queues
  used "for jumbo jobs" as a set of unified names (their weights are the real broker's ordering of them, which ours
  keeps in the decision); the task broker's `set nucleus=N` (when several nuclei are used, any of them: the choice
  is a weighted draw by each side's own random numbers);
- a summary block's comment line (the analysis broker's `data locality check: True`) with it; a skip line without
  criteria (the analysis broker's VP and architecture checks) as criteria "";
- the last word: `done`, `no candidates`, `no sites can run jobs`, or the error that ended the brokerage before
  its checks (`unknown nucleus N`, `D is incomplete at any online storage`, `dataset=D is incomplete/missing at
  online endpoints with read_wan=ON`, `D is incomplete at online storage.`, `throttle to generate jobs due to …`);
- every other line is informational and dropped: `N candidates passed <check>` (the real broker writes it for each
  check it runs, which depends on the task), network, disk IO, software and cache notes, which describe the real
  broker's own lookups.

Nothing here imports Django.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from brokerage.engine import run
from brokerage.engine.core.jedi_log import unified_name
from brokerage.engine.panda.jedi_grammars import GRAMMARS, jedi_lines

from .compare import BROKERS, peer_decisions
from .setup import Peer

PREFIX = re.compile(r"^<jediTaskID=(\d+(?: datasetID=\d+)?)> ?(.*)$")
# (AtlasAnalJobBroker's -longwalltime line reads "skip site X", without "=")
SKIP = re.compile(r"^\s*skip (site|nucleus)[= ](\S+?)[ ,:].*criteria=(-\S+)\s*$")
SKIP_UNCODED = re.compile(r"^\s*skip (site|nucleus)[= ](\S+?)(?:[ ,:].*)?$")
USE = re.compile(r"^\s*use (site|nucleus)=(\S+) (?:with )?weight=(\S+) .*criteria=\+use\s*$")
CHOSEN = re.compile(r"^\s*set nucleus=(\S+) with .*criteria=\+set\s*$")
BOOTSTRAP = re.compile(r"^\s*use site=(\S+) to bootstrap .*criteria=\+use\s*$")
JUMBO = re.compile(r"^\s*use site=(\S+) for jumbo jobs .*criteria=\+usejumbo\s*$")
SUMMARY_TITLE = re.compile(r"^===== .* =====$")
CUT = re.compile(r"^\s*\d+ -> +\d+ candidates, +\d+% cut : .+$")
ENDS = ("done", "no candidates", "no sites can run jobs")
ABORT = re.compile(
    r"^(unknown nucleus \S*|\S+ is incomplete at any online storage|\S+ is incomplete at online storage\."
    r"|dataset=\S+ is incomplete/missing at online endpoints with read_wan=ON"
    r"|throttle to generate (?:only merge )?jobs due to .+)$"
)


@dataclass
class Normalised:
    task: set[str] = field(default_factory=set)
    start: str = ""
    summaries: list[list[str]] = field(default_factory=list)
    skips: set[tuple[str, str, str]] = field(default_factory=set)
    used: dict[str, float] = field(default_factory=dict)
    jumbo: set[str] = field(default_factory=set)
    chosen: str = ""
    end: str = ""


def normalise(lines: list[str], *, subject: str = "site") -> Normalised:
    """The compared parts of a log whose candidates are `subject`s (a task broker's log holds its job check's
    site lines too: its use lines are only its nucleus ones)."""
    found = Normalised()
    in_summary = False
    for raw in lines:
        match = PREFIX.match(raw)
        if not match:
            continue
        found.task.add(match.group(1))
        line = match.group(2)
        if line.startswith("start currentPriority=") and not found.start:
            found.start = line.strip()
        elif SUMMARY_TITLE.match(line.strip()):
            in_summary = True
            found.summaries.append([line.strip()])
        elif in_summary and (line.startswith(("the number of", "data locality check:")) or CUT.match(line)):
            found.summaries[-1].append(line.rstrip())
            if line.startswith("the number of final candidates"):
                in_summary = False
        elif skip := SKIP.match(line) or SKIP_UNCODED.match(line):
            name = unified_name(skip.group(2)) if skip.group(1) == "site" else skip.group(2)
            found.skips.add((skip.group(1), name, skip.group(3) if skip.re is SKIP else ""))
        elif use := USE.match(line):
            if use.group(1) == subject:
                # a unified queue and its pseudo-queues as one, at the best weight: on a tie the real broker keeps
                # the first of a Python set (get_pseudo_sites), the unified queue or one of its pseudo-queues
                name = unified_name(use.group(2)) if subject == "site" else use.group(2)
                found.used[name] = max(float(use.group(3)), found.used.get(name, float("-inf")))
        elif chosen := CHOSEN.match(line):
            found.chosen = chosen.group(1)
        elif bootstrap := BOOTSTRAP.match(line):
            found.used[bootstrap.group(1)] = 0.0  # the real broker sets a bootstrapped queue's weight to 0
        elif jumbo := JUMBO.match(line):
            found.jumbo.add(unified_name(jumbo.group(1)))
        elif line.strip() in ENDS or ABORT.match(line.strip()):
            found.end = line.strip()
    return found


def differences(
    ours: list[str], theirs: list[str], *, subject: str = "site", tolerance: float = 1e-6, absolute: float = 1e-12
) -> list[str]:
    """What differs between the two logs after the normalisation ([] when they agree)."""
    a, b = normalise(ours, subject=subject), normalise(theirs, subject=subject)
    found = []
    if a.task != b.task or len(a.task) != 1:
        found.append(f"task prefix: ours {sorted(a.task)}, theirs {sorted(b.task)}")
    if a.start != b.start:
        found.append(f"start: ours {a.start!r}, theirs {b.start!r}")
    if a.summaries != b.summaries:
        found.append("summary:\n    ours:   " + "\n            ".join(map(" | ".join, a.summaries))
                     + "\n    theirs: " + "\n            ".join(map(" | ".join, b.summaries)))  # fmt: skip
    if a.skips != b.skips:
        found.append(f"skips only ours {sorted(a.skips - b.skips)}, only theirs {sorted(b.skips - a.skips)}")
    if set(a.used) != set(b.used) or any(
        not math.isclose(a.used[site], b.used[site], rel_tol=tolerance, abs_tol=absolute) for site in a.used
    ):
        found.append(f"use: ours {a.used}, theirs {b.used}")
    if a.jumbo != b.jumbo:
        found.append(f"jumbo: ours {sorted(a.jumbo)}, theirs {sorted(b.jumbo)}")
    # the nucleus set is a weighted draw by each side's own random numbers: among several, any used one agrees
    if a.chosen != b.chosen and not (len(b.used) > 1 and a.chosen in a.used and b.chosen in b.used):
        found.append(f"chosen: ours {a.chosen!r}, theirs {b.chosen!r}")
    if a.end != b.end:
        found.append(f"end: ours {a.end!r}, theirs {b.end!r}")
    return found


def compare_logs(peer: Peer, kind: str, seeds: list[int], *, profile: str = "panda") -> list[dict[str, Any]]:
    """Per scenario: the seed, our lines, the real lines and their differences."""
    plugin, generate = BROKERS[kind]
    subject = GRAMMARS[plugin].subject
    scenarios = [generate(seed) for seed in seeds]
    theirs = peer_decisions(peer, kind, scenarios, log=True)
    results = []
    for seed, scenario, their in zip(seeds, scenarios, theirs, strict=True):
        decision = run({**scenario, "plugin": plugin, "profile": profile})
        task = scenario.get("task", {})
        # the driver's job set is its first dataset (datasetID 1, the pseudo dataset's too: panda_driver.py)
        ours = jedi_lines(
            decision, task_id=int(task.get("jediTaskID", 0)), priority=task.get("currentPriority"), dataset_id=1
        )
        log = their.get("log", [])
        # the analysis broker writes its weights with 7 decimals
        found = differences(ours, log, subject=subject, absolute=1e-7 if kind == "anal" else 1e-12)
        results.append(
            {"seed": seed, "ours": ours, "theirs": log, "differences": found, "error": their.get("error", "")}
        )
    return results
