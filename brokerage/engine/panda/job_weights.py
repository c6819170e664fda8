"""The production job broker's weight: running against queued jobs, the input already there, the network to
the nucleus and the nucleus's own factor (seed 000 "weight"; panda-server 1.0.4 AtlasProdJobBroker "calculate
weight")."""

from __future__ import annotations

from typing import Any

import numpy as np

from brokerage.engine.core.plugin import (
    Context,
    Variants,
)
from brokerage.engine.panda.job_candidates import is_preassigned

BOOTSTRAP_RUNNING = 20


WORKERS_CUTOFF = 20


WORLD_NUCLEUS_WEIGHT = 4


def running_used(grid: dict[str, Any], task, config, *, pilots_seen: bool = True) -> np.ndarray:
    """The running count the weight and the caps use, by NUM_SLOTS_RULE. `pilots_seen` False: the job set's
    brokerage counts no pilot anywhere (a pre-assigned one, under BOOTSTRAP_NEEDS_PILOTS)."""
    max_prio = config.get("MAX_PRIO_TO_BOOTSTRAP")
    allowed = max_prio is None or task.currentPriority <= max_prio
    running = grid["running"]
    bootstrap_ok = (running < BOOTSTRAP_RUNNING) & (grid["nBatchJob"] > running) & allowed
    if config.get("BOOTSTRAP_NEEDS_PILOTS"):
        # a Harvester queue is one that reports batch workers
        bootstrap_ok &= (grid["nBatchJob"] > 0) & (grid["pilots"] > 0) & pilots_seen
    return running_used_variant.pick(config)(grid, allowed, bootstrap_ok)


def running_used_seed(grid: dict[str, Any], allowed: bool, bootstrap_ok: np.ndarray) -> np.ndarray:
    """seed 000: the largest of the real number, min(nBatchJob, 20) when bootstrapping, numSlots when positive,
    the starting jobs when numSlots is 0."""
    running, starting, slots = grid["running"], grid["starting"], grid["num_slots"]
    if not len(running):
        return np.zeros(0)
    workers = np.minimum(grid["nBatchJob"], WORKERS_CUTOFF)
    return np.maximum.reduce(
        [
            running,
            np.where(bootstrap_ok, workers, 0.0),
            np.where((slots > 0) & allowed, slots, 0.0),
            np.where((slots == 0) & allowed, starting, 0.0),
        ]
    )


def running_used_per_core(grid: dict[str, Any], allowed: bool, bootstrap_ok: np.ndarray) -> np.ndarray:
    """NUM_SLOTS_RULE per_core, panda-server 1.0.4 (AtlasProdJobBroker "calculate weight"): nBatchJob (capped at
    20) replaces a running count under 20 at Harvester queues with pilots, numSlots ÷ corecount or running +
    starting when numSlots is 0; both only up to MAX_PRIO_TO_BOOTSTRAP."""
    running, starting, slots = grid["running"], grid["starting"], grid["num_slots"]
    workers = np.minimum(grid["nBatchJob"], WORKERS_CUTOFF)
    used = np.where(bootstrap_ok & (workers > running), workers, running)
    if not allowed:
        return used
    with np.errstate(invalid="ignore"):
        per_core = np.floor(slots / np.maximum(grid["corecount"], 1))
    used = np.where(slots == 0, used + starting, used)
    return np.where(slots > 0, np.maximum(per_core, used), used)


running_used_variant = Variants("NUM_SLOTS_RULE", seed=running_used_seed, per_core=running_used_per_core)


def near_nucleus(context: Context) -> np.ndarray:
    """The queues the nucleus rules treat as the nucleus's: its own, and under NUCLEUS_OUTPUT_SHARING those
    writing to storage its first production queue reads (JobGrid._sharing_nucleus_output)."""
    if context.config.get("NUCLEUS_OUTPUT_SHARING"):
        return context["at_nucleus"] | context["shares_nucleus_output"]
    return context["at_nucleus"]


def nucleus_weight(context: Context) -> float:
    """seed 002 "T1 weight": the factor of queues at the nucleus. The task's t1Weight; 0 or unset: 1, or the
    nucleus weight 4 (panda-server's WORLD_NUCLEUS_WEIGHT) for IO-intensive tasks (ioIntensity ≥ 500 kB/s; above
    500 with T1_WEIGHT_IO_STRICT); −1: 1 (the queues are limited to the nucleus instead); at priority ≥ 900 at
    least 100 (T1_WEIGHT_HIGH_PRIO_SCOUTS: scouts too, never event service or pre-assigned job sets)."""
    task, config, jobs = context.task, context.config, context.scenario.jobs
    weight = int(task.t1Weight or 0)
    if weight == 0:
        io = task.ioIntensity
        intensive = io is not None and (io > 500 if config.get("T1_WEIGHT_IO_STRICT") else io >= 500)
        weight = WORLD_NUCLEUS_WEIGHT if intensive else 1
    elif weight < 0:
        weight = 1
    if config.get("T1_WEIGHT_HIGH_PRIO_SCOUTS"):
        pre = is_preassigned(context)
        high = (task.currentPriority >= 900 or jobs.isScout) and not task.eventService and not pre
    else:
        high = task.currentPriority >= 900
    return float(max(weight, 100 if high else 1))


class JobWeights:
    """weigh() and the rank of equal weights (a part of AtlasProdJobBroker)."""

    def weigh(self, context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        config = context.config
        running = context["running_used"][survivors]
        activated = context["activated"][survivors]
        starting = context["starting"][survivors]
        defined = context["defined"][survivors]
        total = context["total_size"]
        missing_files = context["missing_files"][survivors]
        available = context["local_size"][survivors]
        if config.get("MANY_ASSIGNED_RULE") == "plus_one":
            # panda-server 1.0.4: the assigned jobs count only while input is missing at the queue
            assigned = context["assigned"][survivors]
            local = (total <= 0) | (context["missing_size"][survivors] <= 0)
            many_assigned = np.clip((assigned + 1) / (activated + 1), 1.0, 2.0)
            base = np.where(
                local,
                (running + 1) / (activated + starting + defined + 10),
                (running + 1) / (activated + assigned + starting + defined + 10) / many_assigned,
            )
            assigned = np.where(local, 0.0, assigned)
        else:
            assigned = context["assigned_used"][survivors]
            # REFERENCE.md: manyAssigned = max(1, min(2, assigned/activated)); activated 0: 2 if assigned else 1
            with np.errstate(divide="ignore", invalid="ignore"):
                many_assigned = np.where(
                    activated > 0,
                    np.maximum(1.0, np.minimum(2.0, assigned / np.where(activated > 0, activated, 1))),
                    np.where(assigned > 0, 2.0, 1.0),
                )
            base = (running + 1) / ((activated + assigned + starting + defined + 10) * many_assigned)
        data_factor = (
            (available + total) / (total * (missing_files / 100.0 + 1)) if total > 0 else np.ones(len(survivors))
        )
        network = context["network_weight"][survivors]
        t1_weight = nucleus_weight(context)
        nucleus_factor = np.where(near_nucleus(context)[survivors], t1_weight, 1.0)
        weights = base * data_factor * nucleus_factor
        if config.get("NW_ACTIVE"):
            weights = weights * network
        bootstrap = context["bootstrap_empty"][survivors]
        weights = np.where(bootstrap, 0.0, weights)
        return weights, {
            "running": running,
            "activated": activated,
            "assigned": assigned,
            "starting": starting,
            "defined": defined,
            "manyAssigned": many_assigned,
            "baseWeight": base,
            "dataWeight": data_factor,
            "availableGB": available,
            "missingFiles": missing_files,
            "nucleusWeight": nucleus_factor,
            "networkWeight": network,
            "bootstrap": bootstrap,
        }

    def rank_key(self, context: Context, survivors: np.ndarray, weights: np.ndarray):
        """panda (BOOTSTRAP_EMPTY_QUEUES): queues brought up from nothing first, then by weight, equal weights in
        the order the real broker scans them; otherwise by weight, equal weights by name."""
        if not context.config.get("BOOTSTRAP_EMPTY_QUEUES"):
            return super().rank_key(context, survivors, weights)
        order = context["scan_order"]
        return lambda i: (weights[i] != 0, -weights[i], order[survivors[i]])
