"""The production job broker's rules on a queue's state and load and its place towards the nucleus: status,
links, activity, shares, transfers, pilots and caps. Each rule with its numbers and its skip codes (seed 000;
panda-server 1.0.4 AtlasProdJobBroker)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from brokerage.engine.core.plugin import (
    NOTHING_FAILS,
    Context,
    Filter,
    Rejection,
    Variants,
    among,
    never,
)
from brokerage.engine.panda.fairshare import FairsharePolicyError, share_for, zero_share_panda
from brokerage.engine.panda.job_candidates import is_preassigned, preassign_mode, preassignment_dropped
from brokerage.engine.panda.job_weights import BOOTSTRAP_RUNNING, near_nucleus
from brokerage.engine.panda.records import DOWNTIME_STATUSES, nucleus_bare_mode
from brokerage.engine.panda.urgency import is_express, is_urgent, urgent_or_scout

INACTIVE_HOURS = 2.0


def _cap_limit(context: Context) -> np.ndarray:
    # REFERENCE.md cap ruling: max(NQUEUELIMITSITE, 2 × running) so an empty queue can bootstrap
    return np.maximum(context.config.get("NQUEUELIMITSITE"), 2 * context["running_used"])


def status(context: Context) -> Rejection:
    jobs = context.scenario.jobs
    if preassign_mode(context):  # panda: no status check for a pre-assigned job set
        return NOTHING_FAILS
    in_force = jobs.preassigned and not preassignment_dropped(context.scenario)
    offline = context["status"] != "online"
    if context.config.get("CRIC_QUEUE_RULE") == "panda":  # AtlasProdJobBroker.py 402: standby counts as online
        offline &= context["status"] != "standby"
    if in_force:  # seed 000: pre-assigned queues are used whatever their status
        offline = offline & ~among(context.names, jobs.preassigned)
    return Rejection(offline, {"status": context["status"], "required": "online"})


QUEUE_STATUS = Filter("queue status", "status", status)


def unknown_nucleus(context: Context) -> Rejection:
    """NUCLEUS_NEEDS_QUEUE (1.0.4 SiteMapper.collect_nuclei_and_satellites): a nucleus is known through any
    production or unified queue at it, whichever queues the job set scans (issue 33 D5: a job set
    pre-assigned away from the nucleus still knows it). Read from the task, not the arrays: the grid is not
    built for a job set that goes here."""
    nucleus = context.task.nucleus
    unknown = (
        bool(nucleus)
        and bool(context.config.get("NUCLEUS_NEEDS_QUEUE"))
        and nucleus not in context.plugin.nuclei_known(context.scenario)
    )
    if not unknown:
        return NOTHING_FAILS
    return Rejection(np.ones(len(context.names), dtype=bool), {"nucleus": nucleus})


UNKNOWN_NUCLEUS = Filter("unknown nucleus", "unknown_nucleus", unknown_nucleus)


def link_blocked(context: Context) -> Rejection:
    return Rejection(
        (context["closeness"] == -1) & ~context["at_nucleus"],
        {"closeness": context["closeness"], "nucleus": context["nucleus"]},
    )


def link_blocked_panda(context: Context) -> Rejection:
    """JOB_ENDPOINT_RULE panda (AtlasProdJobBroker "link check", 1.0.4 455-495): a satellite's blocked link is asked
    only when the nucleus can receive over WAN and its total queue is under the cap: the check's if/elif chain
    notes such satellites as temporary problems (dest_blacklisted, links_full) before it reads their links."""
    verdict = link_blocked(context)
    earlier = np.zeros(len(context.names), dtype=bool)
    for rule in (nucleus_storage, nucleus_full_panda):
        noted = rule(context)
        if noted is not NOTHING_FAILS:
            earlier |= noted.fails
    return Rejection(verdict.fails & ~earlier, verdict.detail)


LINK_BLOCKED = Filter(
    "link blocked", "link_unusable", Variants("JOB_ENDPOINT_RULE", seed=link_blocked, panda=link_blocked_panda)
)


def nucleus_storage(context: Context) -> Rejection:
    """JOB_ENDPOINT_RULE panda (AtlasProdJobBroker "link check", 1.0.4 455-475): when the nucleus's default
    output endpoint cannot receive over WAN, satellites are skipped (dest_blacklisted, a temporary problem).
    The seed checks the nucleus's storage in the endpoint rules instead."""
    nucleus = context["nucleus"]
    if not nucleus:
        return NOTHING_FAILS
    endpoint = context.plugin.nucleus_default_out(context.scenario, nucleus)
    info = context.scenario.ddm_endpoints.get(endpoint) if endpoint else None
    status = info.activity("write_wan") if info is not None else "ON"
    down = status in DOWNTIME_STATUSES
    return Rejection(
        ~context["at_nucleus"] & down, {"endpoint": f"{endpoint} (nucleus {nucleus})", "write_wan": status}
    )


NUCLEUS_STORAGE = Filter(
    "nucleus storage", "dest_blacklisted", Variants("JOB_ENDPOINT_RULE", seed=never, panda=nucleus_storage)
)


def satellite_link_full(context: Context) -> Rejection:
    cap = context.config.get("NQUEUED_SAT_CAP")
    return Rejection(
        (context["link_queued"] >= cap) & ~context["at_nucleus"],
        {"linkQueued": context["link_queued"], "cap": cap, "capKey": "NQUEUED_SAT_CAP"},
    )


def satellite_link_full_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "link check" (1.0.4, 486-488): too many files queued on the satellite's channel is a
    temporary problem written with the check's own criteria, -link_unusable (-links_full is the nucleus's total)."""
    verdict = satellite_link_full(context)
    return Rejection(verdict.fails, verdict.detail, code=lambda: np.full(len(verdict.fails), "link_unusable"))


SATELLITE_LINK_FULL = Filter(
    "satellite link full",
    "links_full",
    Variants("JOB_ENDPOINT_RULE", seed=satellite_link_full, panda=satellite_link_full_panda),
)


def nucleus_full(context: Context) -> Rejection:
    """seed 000: every queue is skipped while the nucleus has NQUEUED_NUC_CAP_FOR_JOBS files queued or more."""
    cap = context.config.get("NQUEUED_NUC_CAP_FOR_JOBS")
    full = bool(context["nucleus"]) and context["nucleus_queued"] >= cap
    return Rejection(
        np.full(len(context.names), full, dtype=bool),
        {"nucleusQueued": context["nucleus_queued"], "cap": cap, "capKey": "NQUEUED_NUC_CAP_FOR_JOBS"},
    )


def nucleus_full_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "link check" (1.0.4, 465-482): the nucleus's own queues pass before any link rule."""
    verdict = nucleus_full(context)
    return Rejection(verdict.fails & ~context["at_nucleus"], verdict.detail)


NUCLEUS_BACKLOG = Filter(
    "nucleus backlog", "links_full", Variants("JOB_ENDPOINT_RULE", seed=nucleus_full, panda=nucleus_full_panda)
)


def inactive(context: Context) -> Rejection:
    if not urgent_or_scout(context, merge_too=True) or preassign_mode(context):
        return NOTHING_FAILS
    hours = context["hours_since_start"]
    waiting = context["activated_real"]
    if context.config.get("INACTIVE_COUNTS_STARTING"):
        waiting = waiting + context["starting"]
    fails = (hours > INACTIVE_HOURS) & (waiting > 0)
    return Rejection(fails, {"hoursSinceLastStart": hours, "activated": context["activated_real"], "limitHours": 2})


INACTIVE_QUEUE = Filter("inactive queue", "inactive", inactive)


def opportunistic(context: Context) -> Rejection:
    if not urgent_or_scout(context, merge_too=False) or preassign_mode(context):
        return NOTHING_FAILS
    return Rejection(
        context["pledgedcpu"] == -1, {"pledgedcpu": context["pledgedcpu"], "priority": context.task.currentPriority}
    )


OPPORTUNISTIC_QUEUE = Filter("opportunistic queue", "opportunistic", opportunistic)


def away_from_nucleus(context: Context) -> Rejection:
    """seed 001 ("Job Brokerage", the checks): "If priority ≥ 800 or scout jobs, skip queues unless they are
    associated to the nucleus." Not for a pre-assigned job set or a task without a nucleus."""
    if not urgent_or_scout(context, merge_too=False) or preassign_mode(context) or not context["nucleus"]:
        return NOTHING_FAILS
    return Rejection(
        ~context["at_nucleus"],
        {
            "priority": context.task.currentPriority,
            "scout": context.scenario.jobs.isScout,
            "nucleus": context["nucleus"],
        },
    )


# HIGH_PRIORITY_NUCLEUS_RULE: seed 001's filter, or panda-server 1.0.4's nucleus weight of at least 100 at
# priority 900 or for scouts (job_weights.nucleus_weight; no filter, AtlasProdJobBroker.py 1385-1416)
HIGH_PRIORITY_AT_NUCLEUS = Filter(
    "high priority at nucleus",
    "t1weight",
    Variants("HIGH_PRIORITY_NUCLEUS_RULE", seed=never, skip=away_from_nucleus),
)


def seed_policy_zero(policy: str, *, merging: bool, **job) -> tuple[bool, str]:
    """seed 000: the share the policy gives the job is 0; an unreadable policy gives none."""
    try:
        share, rule = share_for(policy, **job)
    except FairsharePolicyError as error:
        share, rule = None, f"unreadable policy ignored: {error}"
    return share == 0, rule


def zero_share(context: Context) -> Rejection:
    """seed 000 "Zero Share"; urgent tasks ignore fairshare (seed 002)."""
    if is_urgent(context.task):
        return NOTHING_FAILS
    return zero_share_verdict(context, seed_policy_zero)


def zero_share_real(context: Context) -> Rejection:
    """FAIRSHARE_RULE panda: panda-server 1.0.4's hasZeroShare, which has no urgent exemption."""
    return zero_share_verdict(context, zero_share_panda)


def zero_share_verdict(context: Context, policy_zero: Callable[..., tuple[bool, str]]) -> Rejection:
    """The queues whose fair-share policy gives the job set a zero share, by `policy_zero`."""
    task = context.task
    policies, inverse = context["policy_values"], context["policy_index"]
    job = {
        "processing_type": task.processingType,
        "working_group": task.workingGroup,
        "gshare": task.gshare,
        "priority": task.currentPriority,
    }
    shares, rules = [], []
    for policy in policies.tolist():  # once per distinct policy string
        zero, rule = policy_zero(policy, merging=context.scenario.jobs.isMerge, **job)
        shares.append(zero)
        rules.append(rule)
    fails = np.array(shares, dtype=bool)[inverse] if len(policies) else np.zeros(0, dtype=bool)
    return Rejection(
        fails,
        {
            "rule": np.array(rules, dtype=object)[inverse] if len(policies) else fails,
            "processingType": task.processingType,
        },
    )


ZERO_SHARE = Filter("zero share", "zeroshare", Variants("FAIRSHARE_RULE", seed=zero_share, panda=zero_share_real))


def jumbo_only(context: Context) -> Rejection:
    """CRIC_QUEUE_RULE panda (AtlasProdJobBroker.py 618-635, 1.0.4): a queue whose catchall (or params) says
    useJumboJobs takes jumbo jobs only, so a job set not pre-assigned of a task without nJumboJobs skips it (a task
    with nJumboJobs keeps it for its jumbo jobs: AtlasProdJobBroker.late_skips)."""
    if preassign_mode(context) == "site" or context.task.nJumboJobs:
        return NOTHING_FAILS
    return Rejection(context["jumbo_only"], {"useJumboJobs": context["jumbo_only"]})


JUMBO_QUEUE = Filter("jumbo queue", "jumbo", Variants("CRIC_QUEUE_RULE", seed=never, panda=jumbo_only))


def transferring(context: Context) -> Rejection:
    limit = np.maximum(context["transferring_limit"], 2 * context["running_real"])
    too_many = context["transferring"] > limit
    if not context.config.get("TRANSFERRING_AT_NUCLEUS"):
        too_many &= ~near_nucleus(context)  # panda-server 1.0.4 checks only queues outside the nucleus
    return Rejection(
        too_many, {"transferring": context["transferring"], "limit": limit, "running": context["running_real"]}
    )


TRANSFERRING = Filter("transferring", "transferring", transferring)


def t1_weight(context: Context) -> Rejection:
    """t1Weight = −1: normal jobs go only to the nucleus's queues (seed 000)."""
    if (context.task.t1Weight or 0) >= 0 or context.scenario.jobs.isMerge or not context["nucleus"]:
        return NOTHING_FAILS
    return Rejection(
        ~near_nucleus(context),
        {"t1Weight": context.task.t1Weight, "nucleus": context["nucleus"], "site": context["site"]},
    )


T1_WEIGHT = Filter("t1 weight", "t1weight", t1_weight)


def full_chain(context: Context) -> Rejection:
    """seed 000: a full-chain task on a bare nucleus runs only at the nucleus; queues of a bareNucleus=only
    site take full-chain work only."""
    task = context.task
    nucleus_site = context.scenario.sites.get(context["nucleus"])
    first_queue = context.plugin.first_queues(context.scenario).get(context["nucleus"])
    nucleus_bare = nucleus_bare_mode(first_queue, nucleus_site.bareNucleus) if nucleus_site else ""
    chain_on_bare = bool(task.fullChain) and nucleus_bare in ("only", "allow")
    elsewhere = ~context["at_nucleus"] if chain_on_bare else np.zeros(len(context.names), dtype=bool)
    only_chain = (context["site_bare"] == "only") & (not chain_on_bare)
    return Rejection(
        elsewhere | only_chain,
        {"fullChain": task.fullChain, "nucleusBare": nucleus_bare, "siteBare": context["site_bare"]},
        code=lambda: np.where(elsewhere, "full_chain", "not_full_chain"),
    )


FULL_CHAIN = Filter("full chain", "full_chain", full_chain)


def pilots(context: Context) -> Rejection:
    """seed 000: no pilot in the last 3 hours skips the queue, unless its catchall says allow_no_pilot."""
    return Rejection((context["pilots"] == 0) & ~context["allow_no_pilot"], {"pilotsLast3h": context["pilots"]})


def pilots_panda(context: Context) -> Rejection:
    """panda-server 1.0.4 (AtlasProdJobBroker.py 1497-1503): no pilot seen (no statistics counts as none), unless
    numSlots is set for the queue, the task is a test task that is not express, or the task has jumbo jobs and the
    queue takes them (useJumboJobs: it stays a candidate for them); pre-assigned job sets are not checked."""
    if is_preassigned(context):
        return NOTHING_FAILS
    if "test" in context.task.prodSourceLabel and not is_express(context.task, context.config):
        return NOTHING_FAILS
    none = (context["pilots"] == 0) | np.isnan(context["pilots"])  # no statistics counts as none
    if context.task.nJumboJobs:
        none = none & ~context["jumbo_only"]
    return Rejection(none & (context["num_slots"] < 0), {"pilotsLast3h": context["pilots"]})


PILOTS = Filter("pilots", "nopilot", Variants("PILOT_RULE", seed=pilots, panda=pilots_panda))


def urgent_network(context: Context) -> Rejection:
    task = context.task
    if not is_express(task, context.config) or not context.config.get("NW_ACTIVE"):
        return NOTHING_FAILS
    threshold = context.config.get("NW_THRESHOLD") * context.config.get("NW_WEIGHT_MULTIPLIER")
    return Rejection(
        context["network_weight"] < threshold, {"networkWeight": context["network_weight"], "threshold": threshold}
    )


URGENT_NETWORK_WEIGHT = Filter("urgent network weight", "lowNetworkWeight", urgent_network)


def work_shortage(context: Context) -> Rejection:
    if not context.config.get("WORK_SHORTAGE") or preassign_mode(context) == "site":
        return NOTHING_FAILS
    pledged = context["pledgedcpu"]
    opportunistic = pledged == -1
    with np.errstate(invalid="ignore"):
        over = (pledged > 0) & (context["running_cores"] > pledged)
    return Rejection(
        opportunistic | over,
        {"pledgedcpu": pledged, "runningCores": context["running_cores"]},
        code=lambda: np.where(opportunistic, "non_pledged", "over_pledged"),
    )


WORK_SHORTAGE = Filter("work shortage", "non_pledged", work_shortage)


def cap_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "check cap" (1.0.4): express tasks are never capped. At a non-unified queue
    activated + starting (+ assigned while input is missing) above max(NQUEUELIMITSITE, 2 × running) is
    `cap`; per resource type, defined jobs included, above max(NQUEUELIMITSITE, 2 × running) is `cap_rt`
    (the queue's own counts stand for the task's resource type)."""
    if is_express(context.task, context.config):
        return NOTHING_FAILS
    cutoff = context.config.get("NQUEUELIMITSITE", gshare=context.task.gshare or None) or BOOTSTRAP_RUNNING
    running = context["running_used"]
    assigned = np.where(context["missing_size"] > 0, context["assigned"], 0.0)
    queued = context["activated"] + context["starting"] + assigned
    limit = np.maximum(cutoff, 2 * running)
    plain = ~((context["capability"] == "ucore") | context["is_pseudo"]) & (queued > limit)
    queued_rt = queued + context["defined"]
    limit_rt = np.maximum(cutoff, 2 * np.maximum(context["running_real"], running))
    per_type = context["has_stats"] & (queued_rt > limit_rt) & ~context["bootstrap_empty"]
    return Rejection(
        plain | per_type,
        {
            "queued": np.where(plain, queued, queued_rt),
            "limit": np.where(plain, limit, limit_rt),
            "running": running,
        },
        code=lambda: np.where(plain, "cap", "cap_rt"),
    )


def most_running_at_nucleus(context: Context) -> Rejection:
    """t1Weight = −1 with NEGATIVE_T1_WEIGHT_RULE most_running (panda-server 1.0.4, "calculate weight"): the
    queues are scanned in order; each time one has more running jobs than any before it, everything kept so
    far is dropped and it is kept; queues being bootstrapped are kept when scanned. So the queue with the most
    running jobs stays (the first scanned on a tie), with the bootstrapped queues scanned after it.

    The real scan order is that of a Python set (JobBrokerBase.get_unified_sites); we scan in queue-list
    order, and the differential test pins the real code to the same order."""
    if (
        context.config.get("NEGATIVE_T1_WEIGHT_RULE") != "most_running"
        or (context.task.t1Weight or 0) >= 0
        or context.scenario.jobs.isMerge
    ):
        return NOTHING_FAILS
    alive = np.flatnonzero(context.alive)
    if not len(alive):
        return NOTHING_FAILS
    running, bootstrap = context["running_real"], context["bootstrap_empty"]
    kept: list[int] = []
    best = None
    for position in alive[np.argsort(context["scan_order"][alive], kind="stable")].tolist():
        if bootstrap[position]:
            kept.append(position)
        elif best is None or best < running[position]:
            best = running[position]
            kept = [position]
    fails = context.alive.copy()
    fails[kept] = False
    return Rejection(fails, {"running": running, "mostRunning": best if best is not None else 0})


# the real criteria: "due to low total nRunningAll … for negative T1 weight criteria=-t1_weight" (1.0.4, 2031)
T1_WEIGHT_MOST_RUNNING = Filter("t1 weight most running", "t1_weight", most_running_at_nucleus)


def cap_activated(context: Context) -> Rejection:
    """seed 000: activated + starting above max(NQUEUELIMITSITE, 2 × running)."""
    queued = context["activated"] + context["starting"]
    limit = _cap_limit(context)
    return Rejection(
        queued > limit, {"activatedPlusStarting": queued, "limit": limit, "running": context["running_used"]}
    )


# JOB_CAP_RULE panda: the real broker's one cap rule in place of the seed's two
QUEUED_ACTIVATED_STARTING = Filter(
    "queued activated+starting", "cap", Variants("JOB_CAP_RULE", seed=cap_activated, panda=cap_panda)
)


def cap_all(context: Context) -> Rejection:
    """seed 000: defined + activated + assigned (while input is missing) + starting above the same limit."""
    queued = context["defined"] + context["activated"] + context["assigned_used"] + context["starting"]
    limit = _cap_limit(context)
    return Rejection(queued > limit, {"queued": queued, "limit": limit, "running": context["running_used"]})


QUEUED_ALL = Filter("queued all", "cap", Variants("JOB_CAP_RULE", seed=cap_all, panda=never))
