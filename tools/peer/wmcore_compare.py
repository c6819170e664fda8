"""Our `wmcore_pull` engine under the `wmcore` profile beside the real wmagent 2.4.5.9, on the same randomized
cases: each element's possible sites and the sites passing its restrictions, the elements a pull considers and
their order, the sites chosen (each side's choices checked under the other's rule: both draw at random), the
free slots of both steps, and the JobSubmitter's outcome for every cached job (submitted and where, failed and
with which exit code, left out of the cache). Nothing here imports Django; the real code runs in its own venv
(wmcore_setup.py, wmcore_driver.py).
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from brokerage.engine.wmcore.elements import (
    GET_WORK,
    PULL_WORK,
    STEPS,
    Element,
    PullRules,
    today_passing_sites,
    today_possible_sites,
)
from brokerage.engine.wmcore.elements import possible_sites as seed_possible_sites
from brokerage.engine.wmcore.job_submitter import (
    FAILED_CODES,
    CachedJob,
    SiteLoad,
    SubmitRules,
    SubmitSite,
    assign_locations,
)
from brokerage.engine.wmcore.matching import Pull, free_slots, match_work
from brokerage.engine.wmcore.scenario import parse_element, parse_site_jobs, parse_site_resources
from brokerage.gdpconfig import ConfigView
from tools.peer.setup import PeerUnavailable
from tools.peer.wmcore_setup import WMCorePeer

SITES = (
    "T1_US_FNAL",
    "T1_DE_KIT",
    "T1_IT_CNAF",
    "T2_CH_CERN",
    "T2_DE_DESY",
    "T2_US_MIT",
    "T2_US_Nebraska",
    "T2_IT_Pisa",
    "T2_FR_IPHC",
    "T2_UK_London_IC",
    "T2_ES_CIEMAT",
    "T3_US_FNALLPC",
    "T2_BE_IIHE",
    "T2_RU_JINR",
)
PRIORITIES = (10000, 50000, 85000, 100000, 200000)
TYPE_WEIGHTS = {
    "Processing": 30,
    "Production": 30,
    "Merge": 12,
    "Cleanup": 8,
    "LogCollect": 8,
    "Skim": 6,
    "Harvesting": 6,
}
NOW = 1795000000.0  # 2026-11-18, POSIX seconds: the one clock of both sides (the driver's poller reads it too)
DRAIN_GRACE = 2 * 24 * 60 * 60  # JobSubmitterPoller.drainGracePeriod
# WorkQueueElement statuses other than Available: in the queue, never pulled
OTHER_STATUSES = ("Negotiating", "Acquired", "Running", "Done", "Failed", "Canceled", "CancelRequested")
TEAM = "production"


def generate(seed: int) -> dict[str, Any]:
    """One case: an agent's sites (every state) and jobs by priority; 30–150 elements of a few requests with every
    kind of site list, data location, trust flag, ParentFlag, team and blowup factor, creation times that tie;
    the pull's slicing and caps; and a JobSubmitter cache with per-type thresholds, loads and draining ages."""
    rng = random.Random(seed)
    agent = sorted(rng.sample(SITES, rng.randint(8, 12)))
    records = {
        site: {
            "state": rng.choices(("Normal", "Draining", "Down", "Aborted"), (75, 10, 10, 5))[0],
            "pendingSlots": rng.randint(0, 300),
            "runningSlots": rng.randint(0, 1000),
            "runningJobs": rng.randint(0, 1000),
        }
        for site in agent
    }
    site_jobs = {
        site: {str(p): rng.randint(0, 200) for p in rng.sample(PRIORITIES, rng.randint(0, 3))} for site in agent
    }
    elements, request = [], 0
    while len(elements) < rng.randint(30, 150):
        request += 1
        whitelist = [] if rng.random() < 0.08 else sorted(rng.sample(SITES, rng.randint(1, 8)))
        blacklist = [] if rng.random() < 0.6 else sorted(rng.sample(SITES, rng.randint(1, 3)))
        priority = rng.choice(PRIORITIES)
        base = NOW - rng.choice((0, 600, 3600, 7200))  # shared bases: creation-time ties between requests
        trust_input, trust_pileup = rng.random() < 0.15, rng.random() < 0.15
        parents = rng.choices(("none", "flag", "flag_empty", "listed_no_flag"), (75, 15, 3, 7))[0]
        team = rng.choices((TEAM, "", "relval"), (85, 10, 5))[0]
        pileup = {}
        if rng.random() < 0.2:
            for dataset in range(rng.choice((1, 1, 1, 2))):
                pileup[f"/PU{request}_{dataset}/X/PREMIX"] = sorted(rng.sample(SITES, rng.randint(1, 6)))
        for block in range(rng.randint(1, 10)):
            element = {
                "id": f"{rng.getrandbits(128):032x}",
                "RequestName": f"req{seed}_{request}",
                "Priority": priority,
                "CreationTime": base + rng.choice((0, 0, block)),
                "Jobs": rng.randint(1, 300),
                "SiteWhitelist": whitelist,
                "SiteBlacklist": blacklist,
                "NoInputUpdate": trust_input,
                "NoPileupUpdate": trust_pileup,
                "ParentFlag": parents in ("flag", "flag_empty"),
                "TeamName": team,
            }
            inputs = {}
            for k in range(rng.choices((0, 1, 2), (5, 85, 10))[0]):
                located = [] if rng.random() < 0.05 else sorted(rng.sample(SITES, rng.randint(1, 3)))
                inputs[f"/D{request}/R-v1/RAW#{block}{k}"] = located
            if inputs:
                element["Inputs"] = inputs
            if parents in ("flag", "listed_no_flag"):
                element["ParentData"] = {f"/D{request}/P-v1/RAW#{block}": sorted(rng.sample(SITES, rng.randint(1, 3)))}
            if pileup:
                element["PileupData"] = pileup
            if rng.random() < 0.1:
                element["blowupFactor"] = rng.choice((1.5, 2.0, 3.0))
            if rng.random() < 0.12:
                element["Status"] = rng.choice(OTHER_STATUSES)
            elements.append(element)
    rng.shuffle(elements)
    requests = sorted({element["RequestName"] for element in elements})
    step = rng.choice((PULL_WORK, GET_WORK))
    return {
        "seed": seed,
        "now": NOW,
        "step": step,
        "team": TEAM,
        # FileFeeder passes the aborted and force-completed requests to getWork; pullWork passes none
        "excludeWorkflows": rng.sample(requests, min(len(requests), rng.randint(0, 2))) if step == "getWork" else [],
        "rowsPerSlice": rng.choice((10, 25, 2500)),
        "maxRows": rng.choice((50, 100, 50000)),
        "workPerCycle": rng.choice((5, 20, 100)),
        "queueDepth": rng.choice((1.0, 1.0, 2.0)),
        "site_thresholds": records,
        "site_jobs": site_jobs,
        "elements": elements,
        "submit": _submitter_case(rng, agent, records),
    }


def _submitter_case(rng: random.Random, agent: list[str], records: dict[str, Any]) -> dict[str, Any]:
    sites = {}
    for site in agent:
        load = {}
        for task_type in TYPE_WEIGHTS:
            pending = rng.randint(0, 80) if rng.random() < 0.6 else 0
            running = rng.randint(0, 300) if rng.random() < 0.6 else 0
            load[task_type] = {
                "pending": pending,
                "running": running,
                "highest": rng.choice(PRIORITIES) if pending or running else None,
            }
        sites[site] = {
            "state": records[site]["state"],
            "pendingSlots": rng.randint(0, 400),
            "runningSlots": rng.randint(0, 1500),
            # a day, three days, and the drain grace period (2 days) to the second on both sides
            "stateAge": rng.choice((3600, 3 * 86400, DRAIN_GRACE - 1, DRAIN_GRACE, DRAIN_GRACE + 1)),
            "task_slots": {t: [0 if rng.random() < 0.2 else rng.randint(1, 100), rng.randint(0, 300)] for t in load},
            "load": load,
        }
    jobs, seen = [], set()
    for j in range(rng.randint(20, 120)):
        job_id = 1000 + j * rng.randint(1, 3) + j
        pool = agent + ([rng.choice(SITES)] if rng.random() < 0.3 else [])
        possible = [] if rng.random() < 0.03 else sorted(set(rng.sample(pool, rng.randint(1, 4))))
        if job_id not in seen:
            seen.add(job_id)
            jobs.append(
                {
                    "id": job_id,
                    "priority": rng.choice(PRIORITIES),
                    "task_type": rng.choices(list(TYPE_WEIGHTS), list(TYPE_WEIGHTS.values()))[0],
                    "possible_sites": possible,
                }
            )
    return {"sites": sites, "jobs": jobs, "limit": rng.choice((5, 30, 1000)), "overflow": 0.2}


def wmcore_rules(case: dict[str, Any], profile: str = "wmcore") -> tuple[PullRules, SubmitRules]:
    """A profile's rules (`wmcore` unless told), with the case's slicing, caps and QueueDepth."""
    config = ConfigView({}, profile=profile)
    pull = replace(
        PullRules.from_config(config),
        queue_depth=case["queueDepth"],
        rows_per_slice=case["rowsPerSlice"],
        max_rows=case["maxRows"],
    )
    return pull, SubmitRules.from_config(config)


def our_side(case: dict[str, Any], profile: str = "wmcore") -> dict[str, Any]:
    """Our engine over one case: the same numbers the driver records for the real code."""
    pull_rules, submit_rules = wmcore_rules(case, profile)
    shared: dict[tuple, tuple] = {}
    elements = [parse_element(item, f"$.elements[{i}]", shared) for i, item in enumerate(case["elements"])]
    sites = parse_site_resources(case)
    slots = {step: free_slots(sites, step=step, rules=pull_rules) for step in STEPS}
    site_jobs = parse_site_jobs(case)
    agent = set(case["site_thresholds"])
    wmcore_sites = pull_rules.site_rule == "wmcore"
    possible = {element.id: possible_sites(element, wmcore_sites) for element in elements}
    passing = {
        element.id: today_passing_sites(element)[0] if wmcore_sites else possible[element.id] for element in elements
    }

    def pull(cap: int) -> Pull:
        return match_work(
            elements,
            slots[case["step"]],
            site_jobs,
            seed=case["seed"],
            rules=replace(pull_rules, work_per_cycle=cap),
            team=case["team"],
            exclude_workflows=case["excludeWorkflows"],
        )

    submit = case["submit"]
    submit_sites = {
        name: SubmitSite(
            name,
            site["state"],
            site["pendingSlots"],
            site["runningSlots"],
            {t: tuple(v) for t, v in site["task_slots"].items()},
            NOW - site["stateAge"],
        )
        for name, site in submit["sites"].items()
    }
    loads = {
        name: SiteLoad(
            sum(v["pending"] for v in site["load"].values()),
            sum(v["running"] for v in site["load"].values()),
            {t: v["pending"] for t, v in site["load"].items()},
            {t: v["running"] for t, v in site["load"].items()},
            {t: float(v["highest"]) for t, v in site["load"].items() if v["highest"] is not None},
        )
        for name, site in submit["sites"].items()
    }
    jobs = [
        CachedJob(j["id"], float(j["priority"]), j["task_type"], tuple(j["possible_sites"])) for j in submit["jobs"]
    ]
    submission = assign_locations(
        jobs,
        submit_sites,
        loads,
        overflow_fraction=submit["overflow"],
        limit=submit["limit"],
        rules=submit_rules,
        now=NOW,
    )
    return {
        "elements": {element.id: element for element in elements},
        "possibleSites": {element_id: sorted(sites) for element_id, sites in possible.items()},
        "passes": {element_id: sorted(sites & agent) for element_id, sites in passing.items()},
        "thresholds": slots[case["step"]].thresholds,
        "free_slots": {step: dict(found.thresholds) for step, found in slots.items()},
        "isolated": pull(0),
        "deployed": pull(case["workPerCycle"]),
        "submit": {
            "submitted": {str(job_id): site for job_id, site in submission.submitted},
            "failed": {str(job_id): FAILED_CODES[code] for job_id, (code, _) in submission.failed.items()},
            "not_cached": sorted(
                str(job_id) for job_id, (code, _) in submission.waiting.items() if code == "draining_grace"
            ),
        },
    }


def possible_sites(element: Element, wmcore_rule: bool) -> frozenset[str]:
    """An element's possible sites under our rule: today's (possibleSites) or the seed's, where an empty
    whitelist means every site of the grid but the blacklisted."""
    if wmcore_rule:
        return today_possible_sites(element)
    found = seed_possible_sites(element).sites
    return frozenset(SITES) - frozenset(element.blacklist) if found is None else found


def considered(pull: Pull) -> list[str]:
    """The elements our pull brought to the site draw, in order: taken, or found full; and those whose possible
    sites came out empty after the restrictions passed (ParentFlag without parents), which the real loop also
    reaches (the list function passes them, possibleSites gives nothing)."""
    taken = {element.id for element, _ in pull.taken}
    return [
        element_id
        for element_id in pull.order
        if element_id in taken
        or pull.rejected[element_id][0] == "threshold_full"
        or pull.rejected[element_id][1].get("ParentFlag")
    ]


def replay_valid(order, chosen, eligible, elements, site_jobs, thresholds) -> tuple[int, int]:
    """Replays one side's choices (element → site or none, in its order) under the other side's rule: a choice is
    valid when the site is one the rule would accept (eligible, jobs at or above the priority below the
    threshold), a refusal when the rule would accept none. Returns (valid, all)."""
    counts = {site: {float(p): n for p, n in by.items()} for site, by in site_jobs.items()}
    valid = 0
    for element_id in order:
        element = elements[element_id]
        open_sites = {
            site
            for site in eligible.get(element_id, ())
            if site in thresholds
            and sum(n for p, n in counts.get(site, {}).items() if p >= element.priority) < thresholds[site]
        }
        site = chosen.get(element_id)
        valid += (site in open_sites) if site else not open_sites
        if site:
            by_priority = counts.setdefault(site, {})
            by_priority[element.priority] = by_priority.get(element.priority, 0) + element.jobs * element.blowup
    return valid, len(order)


@dataclass
class WMCoreReport:
    """Agreement per aspect (agreeing, compared) and the first disagreements, with the time each side took."""

    agree: Counter = field(default_factory=Counter)
    compared: Counter = field(default_factory=Counter)
    examples: dict[str, list[Any]] = field(default_factory=dict)
    totals: Counter = field(default_factory=Counter)
    ours_seconds: float = 0.0
    theirs_seconds: float = 0.0

    def count(self, aspect: str, same: bool, example: Any = None) -> None:
        self.compared[aspect] += 1
        self.agree[aspect] += bool(same)
        if not same and len(self.examples.setdefault(aspect, [])) < 5:
            self.examples[aspect].append(example)

    def lines(self) -> list[str]:
        return [f"{aspect}: {self.agree[aspect]}/{self.compared[aspect]}" for aspect in sorted(self.compared)]


def _driver(peer: WMCorePeer, mode: str, data: Any, *arguments: str) -> dict[str, Any]:
    """Runs wmcore_driver.py MODE INPUT ARGUMENTS in WMCore's venv on `data` (written to INPUT), its JSON answer
    back."""
    with tempfile.TemporaryDirectory(prefix="wmcore-peer-") as folder:
        path = f"{folder}/input.json"
        with open(path, "w") as handle:
            json.dump(data, handle)
        done = subprocess.run(
            [str(peer.python), str(peer.driver), mode, path, *arguments],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": "0", "PATH": "/usr/local/bin:/usr/bin:/bin"},
            timeout=1800,
        )
    if done.returncode != 0:
        raise PeerUnavailable("the WMCore driver failed: " + " / ".join(done.stderr.strip().splitlines()[-3:]))
    return json.loads(done.stdout)


def real_match_seconds(peer: WMCorePeer, work: dict[str, Any], *, repeat: int) -> dict[str, Any]:
    """The real matching loop's time on `work` ({elements, thresholds, site_jobs} in scenario keys)."""
    return _driver(peer, "speed", work, str(repeat))


def run_wmcore(peer: WMCorePeer, cases: list[dict[str, Any]]) -> dict[str, Any]:
    return _driver(peer, "compare", cases, str(peer.list_function), str(peer.list_runner))


def compare_wmcore(peer: WMCorePeer, *, seeds: range, profile: str = "wmcore") -> WMCoreReport:
    """Both sides over the cases of `seeds`, every aspect counted; ours under `profile`."""
    cases = [generate(seed) for seed in seeds]
    report = WMCoreReport()
    started = time.perf_counter()
    ours = [our_side(case, profile) for case in cases]
    report.ours_seconds = time.perf_counter() - started
    # the real loop is fed our thresholds, so that the loop itself is compared; free slots are compared apart
    real = run_wmcore(
        peer, [{**case, "thresholds": mine["thresholds"]} for case, mine in zip(cases, ours, strict=True)]
    )
    report.theirs_seconds = real["seconds"]
    for case, mine, theirs in zip(cases, ours, real["results"], strict=True):
        _compare_case(report, case, mine, theirs)
    return report


def _compare_case(report: WMCoreReport, case, mine, theirs) -> None:
    seed = case["seed"]
    for element_id, sites in theirs["possibleSites"].items():
        report.count("possible sites", mine["possibleSites"][element_id] == sites, (seed, element_id))
        report.count(
            "passing sites", mine["passes"][element_id] == sorted(theirs["passes"][element_id]), (seed, element_id)
        )
    for step in STEPS:
        real_slots = theirs["free_slots"][step]
        for site in sorted(set(real_slots) | set(mine["free_slots"][step])):
            same = site in real_slots and real_slots[site] == mine["free_slots"][step].get(site)
            report.count("free slots", same, (seed, step, site))
    thresholds = mine["thresholds"]
    elements = mine["elements"]
    cap = case["workPerCycle"]
    all_ours, all_real = considered(mine["isolated"]), theirs["isolated"]["considered"]
    report.count("elements considered, in order", all_ours == all_real, seed)
    for mode in ("isolated", "deployed"):
        pull, real = mine[mode], theirs[mode]
        ours_considered = considered(pull)
        taken = {element.id: site for element, site in pull.taken}
        if mode == "deployed":
            # which elements reach the cap depends on the draws, so each side's stop is checked under the cap
            # rule against the other side's full order: the same order, stopped after `cap` taken or at the end
            for mine_or_real, seen, took, other in (
                ("ours", ours_considered, taken, all_real),
                ("real", real["considered"], real["taken"], all_ours),
            ):
                stops_right = seen == other[: len(seen)] and (len(took) == cap or len(seen) == len(other))
                report.count(f"WorkPerCycle stop ({mine_or_real})", stops_right, seed)
        eligible_ours = {e: set(mine["possibleSites"][e]) for e in set(real["considered"]) | set(ours_considered)}
        eligible_real = {e: set(theirs["possibleSites"][e]) for e in set(real["considered"]) | set(ours_considered)}
        valid, total = replay_valid(
            real["considered"], real["taken"], eligible_ours, elements, case["site_jobs"], thresholds
        )
        report.compared[f"real choices valid under ours ({mode})"] += total
        report.agree[f"real choices valid under ours ({mode})"] += valid
        valid, total = replay_valid(ours_considered, taken, eligible_real, elements, case["site_jobs"], thresholds)
        report.compared[f"our choices valid under real ({mode})"] += total
        report.agree[f"our choices valid under real ({mode})"] += valid
        report.totals[f"elements taken ({mode}): ours"] += len(taken)
        report.totals[f"elements taken ({mode}): real"] += len(real["taken"])
    submit_ours, submit_real = mine["submit"], theirs["submit"]
    for job in case["submit"]["jobs"]:
        job_id = str(job["id"])
        same = (
            submit_ours["submitted"].get(job_id) == submit_real["submitted"].get(job_id)
            and submit_ours["failed"].get(job_id) == submit_real["failed"].get(job_id)
            and (job_id in submit_ours["not_cached"]) == (job_id in submit_real["not_cached"])
        )
        report.count("JobSubmitter outcome", same, (seed, job_id))
    report.totals["jobs submitted"] += len(submit_real["submitted"])
    report.totals["jobs failed (71101-71103)"] += len(submit_real["failed"])
    report.totals["jobs left out of the cache (draining)"] += len(submit_real["not_cached"])
