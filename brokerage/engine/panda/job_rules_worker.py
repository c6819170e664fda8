"""The production job broker's rules on what a queue's worker nodes offer: cores, software, network connectivity
and the event-service seed (seed 000; panda-server 1.0.4 AtlasProdJobBroker). What a job asks in numbers (memory,
disk, walltime) is in job_rules_resources, each estimate beside its check."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from brokerage.engine.core.plugin import (
    NOTHING_FAILS,
    Context,
    Filter,
    Rejection,
    Variants,
    among,
)
from brokerage.engine.panda.job_candidates import preassign_mode
from brokerage.engine.panda.records import split_connectivity
from brokerage.engine.panda.software import SoftwareRules, software_check
from brokerage.engine.panda.software_panda import prod_software_panda

# seed 000: full accepts any task, http accepts http or none, none accepts none
NETWORK_ACCEPTS = {"full": {"full", "http", "none", ""}, "http": {"http", "none", ""}, "none": {"none", ""}}


def unified_queue_itself(context: Context) -> np.ndarray:
    """seed 000: a unified queue scanned itself (not through its pseudo-queues) takes any core count."""
    return (context["capability"] == "ucore") & ~context["is_pseudo"]


def no_unified_exemption(context: Context) -> np.ndarray:
    """PREASSIGNMENT_RULE panda: a unified queue scanned itself (pre-assigned) is checked as it is."""
    return np.zeros(len(context.names), dtype=bool)


unified_exempt = Variants("PREASSIGNMENT_RULE", seed=unified_queue_itself, panda=no_unified_exemption)


def zero_cores_anywhere(context: Context) -> bool:
    """seed 000: a task of coreCount 0 (either) takes single- and multi-core queues."""
    return False


def zero_cores_multicore_when_pressed(context: Context) -> bool:
    """CRIC_QUEUE_RULE panda (AtlasProdJobBroker.py 289-295, 1.0.4): a task of coreCount 0 uses multi-core queues
    only for its scouts and at currentPriority 900 or above ("close to completion"), else any."""
    return context.task.currentPriority >= 900 or context.scenario.jobs.isScout


zero_cores_multicore_only = Variants(
    "CRIC_QUEUE_RULE", seed=zero_cores_anywhere, panda=zero_cores_multicore_when_pressed
)


def core_count(context: Context) -> Rejection:
    task = context.task
    if preassign_mode(context) == "site":  # panda: "selection for MP" left out
        return NOTHING_FAILS
    # a unified queue is brokered through its pseudo-queues, each with its own core count
    cores, ucore = context["corecount"], unified_exempt(context)
    if task.coreCount == 1:
        mismatch = (cores > 1) & ~ucore
    elif task.coreCount > 1 or zero_cores_multicore_only(context):
        mismatch = (cores <= 1) & ~ucore
    else:
        mismatch = np.zeros(len(context.names), dtype=bool)
    too_many = np.zeros(len(context.names), dtype=bool)
    if task.maxCoreCount:
        too_many = context["job_cores"] > task.maxCoreCount

    def code() -> np.ndarray:  # made only for a skip
        return np.where(mismatch, "cpucore", "max_cpucore")

    return Rejection(
        mismatch | too_many,
        lambda: {  # the job's cores (estimated with its memory and walltime) only when the numbers are read
            "taskCoreCount": task.coreCount,
            "queueCoreCount": cores,
            "capability": context["capability"],
            "jobCoreCount": context["job_cores"],
            "maxCoreCount": task.maxCoreCount,
        },
        code=code,
    )


CORE_COUNT = Filter("core count", "cpucore", core_count)


def software_checker_seed(config) -> tuple[SoftwareRules, Callable[..., tuple[bool, dict[str, Any]]]]:
    """seed 000's check with its switches (software.py)."""
    rules = SoftwareRules(
        any_skips_hw_check=config.get("RELEASES_ANY_SKIPS_HW_CHECK"),
        list_accepted=config.get("RELEASES_LIST_ACCEPTED"),
        cpu_needs_architecture=config.get("CPU_CHECK_NEEDS_ARCHITECTURE"),
    )
    return rules, functools.partial(software_check, rules=rules)


def software_checker_panda(config) -> tuple[str, Callable[..., tuple[bool, dict[str, Any]]]]:
    """SOFTWARE_RULE panda: panda-server 1.0.4's own check (software_panda.py)."""
    return "panda", prod_software_panda


# (what identifies the rules, the check of one queue); the plugin's software_checker, which the analysis broker
# overrides, picks one
software_checkers = Variants("SOFTWARE_RULE", seed=software_checker_seed, panda=software_checker_panda)


def software(context: Context) -> Rejection:
    """The `cache` check, once per (task software, candidate list) per snapshot: job sets of the same release
    brokered over one snapshot reuse the verdicts."""
    key = context.plugin.task_software(context.task, context.config)
    cache = context.plugin._snapshot_cache(context.scenario)
    rules, check = context.plugin.software_checker(context.config)
    cache_key = ("software", key, rules, tuple(context.names))
    if cache_key not in cache:
        scenario = context.scenario
        sw_tags, gpu_summary, queues = scenario.sw_tags, scenario.gpu_summary, scenario.queues
        all_entry = sw_tags.get("ALL")
        extra = context.plugin.software_extra
        known = context.plugin.queue_records(scenario)
        # the pseudo-queues of a unified queue have its releases, software and GPUs: checked once for all, the
        # verdict kept as (fails, check, needed, queue)
        by_queue: dict[str, tuple[bool, str, str, str]] = {}
        rows = []
        for name in context.names:
            record, queue = known.get(name) or (queues[name], name)
            row = by_queue.get(queue)
            if row is None:
                ok, detail = check(
                    key,
                    record.get("releases"),
                    sw_tags.get(queue),
                    all_entry,
                    gpu_summary.get(queue),
                    **extra(record),
                )
                row = by_queue[queue] = (not ok, *(str(detail.get(k, "")) for k in ("check", "needed", "queue")))
            rows.append(row)
        fails, checks, needed, queue_side = zip(*rows, strict=False) if rows else [()] * 4
        cache[cache_key] = Rejection(
            np.array(fails, dtype=bool),
            {
                "check": np.array(checks, dtype=object),
                "needed": np.array(needed, dtype=object),
                "queue": np.array(queue_side, dtype=object),
            },
        )
    return cache[cache_key]


SOFTWARE = Filter("software", "cache", software)


def connectivity_seed(context: Context) -> Rejection:
    """seed 000: the task's network (full, http, none) must be one the queue's wnconnectivity accepts
    (NETWORK_ACCEPTS); a task without an IP stack runs anywhere, one that names it needs a queue with that stack."""
    task_network, task_stack = split_connectivity(context.task.ipConnectivity)

    def refused(queue_network: str, queue_stack: str) -> bool:
        network_ok = task_network in NETWORK_ACCEPTS.get(queue_network or "full", set())
        stack_ok = not task_stack or queue_stack.lower() == task_stack.lower()
        return not (network_ok and stack_ok)

    return connectivity_verdict(context, refused)


def connectivity_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "network connectivity" (1.0.4): JediTaskSpec.setIpConnectivity keeps only full or http,
    and IPv4 or IPv6, of the task's; a full queue takes any task, an http one http tasks; a queue that says nothing
    takes none; the IP stack must be the same."""
    task_network, task_stack = split_connectivity(context.task.ipConnectivity)
    task_network = task_network if task_network in ("full", "http") else ""
    task_stack = task_stack if task_stack in ("IPv4", "IPv6") else ""
    if not task_network and not task_stack:
        return NOTHING_FAILS

    def refused(queue_network: str, queue_stack: str) -> bool:
        network_ok = not task_network or queue_network == "full" or queue_network == task_network == "http"
        stack_ok = not task_stack or queue_stack == task_stack
        return not (network_ok and stack_ok)

    return connectivity_verdict(context, refused)


def connectivity_verdict(context: Context, refused: Callable[[str, str], bool]) -> Rejection:
    """`refused` once per distinct wnconnectivity, spread over the queues."""
    values, inverse = context["connectivity_values"], context["connectivity_index"]
    verdicts = [refused(*split_connectivity(text)) for text in values.tolist()]
    fails = np.array(verdicts, dtype=bool)[inverse] if len(values) else np.zeros(0, dtype=bool)
    return Rejection(
        fails, {"ipConnectivity": context.task.ipConnectivity, "wnconnectivity": context["wnconnectivity"]}
    )


connectivity_variant = Variants("CONNECTIVITY_RULE", seed=connectivity_seed, panda=connectivity_panda)


def connectivity(context: Context) -> Rejection:
    """Only for a task that names its connectivity; a job set pre-assigned to a site is not checked (panda)."""
    if not context.task.ipConnectivity or preassign_mode(context) == "site":
        return NOTHING_FAILS
    return connectivity_variant(context)


NETWORK_CONNECTIVITY = Filter("network connectivity", "network", connectivity)


def event_service_seed(context: Context) -> Rejection:
    """seed 000: event-service tasks need jobseed es, eshigh or all; normal ones avoid queues that take ES only."""
    seeds = context["jobseed"]
    fails = ~among(seeds, ("es", "eshigh", "all")) if context.task.eventService else seeds == "es"
    return Rejection(fails, {"eventService": context.task.eventService, "jobseed": seeds})


def event_service_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "selection for event service" (1.0.4, 1255-1290): an event-service task avoids std
    queues, and eshigh ones unless it is urgent (priority 900 or more, or scouts), and the 1-core pseudo-queues
    of unified queues; other tasks avoid es queues."""
    seeds = context["jobseed"]
    if context.task.eventService:
        high = context.task.currentPriority >= 900 or context.scenario.jobs.isScout
        std, low = seeds == "std", (seeds == "eshigh") & (not high)
        score = context["is_pseudo"] & (context["corecount"] == 1)
        fails = std | low | score

        def code() -> np.ndarray:  # the real criteria, in its order: -es, -eshigh, then -es_ucore
            return np.select([std, low], ["es", "eshigh"], default="es_ucore")

    else:
        fails = seeds == "es"

        def code() -> np.ndarray:  # "only EventService is allowed"
            return np.full(len(seeds), "nones")

    return Rejection(fails, {"eventService": context.task.eventService, "jobseed": seeds}, code=code)


event_service_variant = Variants("ES_RULE", seed=event_service_seed, panda=event_service_panda)


def event_service(context: Context) -> Rejection:
    """A job set pre-assigned to a site is not checked (panda)."""
    if preassign_mode(context) == "site":
        return NOTHING_FAILS
    return event_service_variant(context)


EVENT_SERVICE = Filter("event service", "es", event_service)
