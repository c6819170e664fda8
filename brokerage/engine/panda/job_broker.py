"""ATLAS production job brokerage: choose the queue of a job set (seed 000, "ATLAS Production Job Brokerage").

Candidates are all queues without "test" in the name, or the pre-assigned ones. The filters run in the seed's
order, each with the real PanDA skip code (REFERENCE.md table); the survivors are weighed by running vs queued
jobs, data availability and the network weight to the nucleus, the best 10 kept, and one drawn in proportion
to weight. All skipped: pending, retried after 60 minutes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from brokerage.engine.core.decision import Candidate, Decision
from brokerage.engine.core.plugin import (
    NOTHING_FAILS,
    Context,
    Filter,
    Plugin,
    Rejection,
    SkipTable,
    Variants,
    filters_resolved,
)
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda import job_rules_data, job_rules_resources, job_rules_site, job_rules_worker
from brokerage.engine.panda.job_candidates import JobCandidates, preassign_mode
from brokerage.engine.panda.job_grid import JobGrid
from brokerage.engine.panda.job_rules_worker import software_checkers
from brokerage.engine.panda.job_weights import JobWeights
from brokerage.engine.panda.software import TaskSoftware


@dataclass(frozen=True)
class JobCheck:
    """Task brokerage's job check over some sites: each site's production queues, the ones job brokerage keeps,
    and for each other queue the first rule that skipped it (reason code, filter); `decision`, the job brokerage
    itself over those queues (its stages and skips, the kept queues unweighed), which the task broker's JEDI log
    writes as the real task broker's log holds its job check's lines (jedi_grammars.JOB_CHECK)."""

    queues: dict[str, list[str]]
    kept: dict[str, list[str]]
    skips: dict[str, tuple[str, str]]
    decision: Decision


class AtlasProdJobBroker(JobCandidates, JobGrid, JobWeights, Plugin):
    name = "atlas_prod_job"
    candidate_kind = "queue"
    retry_after_minutes = 60  # seed 000: "the task is pending for 1 hour"
    # DATA_COMPLETE_ONLY_RULE: production counts only complete copies of an IO-intensive task's master too
    # (AtlasProdJobBroker "get available files"); analysis only of secondaries (AtlasAnalJobBroker 1798-1801)
    master_complete_only_when_io = True
    max_candidates = 10  # seed 000: "the best 10 candidates are taken"
    frame_keys = {
        "status": "status",
        "closeness": "closeness",
        "linkQueued": "link_queued",
        "pledgedcpu": "pledgedcpu",
        "hoursSinceLastStart": "hours_since_start",
        "activated": "activated_real",
        "queueCoreCount": "corecount",
        "capability": "capability",
        "maxrss": "maxrss",
        "minrss": "minrss",
        "maxwdirPerCore": "maxwdir_per_core",
        "storageFreeGB": "output_free",
        "maxtime": "maxtime",
        "mintime": "mintime",
        "wnconnectivity": "wnconnectivity",
        "jobseed": "jobseed",
        "transferring": "transferring",
        "transferringLimit": "transferring_limit",
        "running": "running_real",
        "pilotsLast3h": "pilots",
        "runningCores": "running_cores",
        "networkWeight": "network_weight",
        "queuedWeight": "queued_weight",
        "throughputWeight": "throughput_weight",
        "networkSource": "network_source",
        "queueDiskIOLimit": "diskio_limit",
        "avgDiskIOPerCore": "avg_diskio",
    }

    @staticmethod
    def task_software(task, config) -> TaskSoftware:
        """The task's side of the software check (the analysis broker reads the release its own way)."""
        return TaskSoftware(task.architecture, task.transUses, task.transHome, task.container_name, task.onlyTagsForFC)

    @staticmethod
    def software_extra(record: dict[str, Any]) -> dict[str, Any]:
        """What the check of one queue needs beyond the shared arguments (analysis: whether it is a GPU queue)."""
        return {}

    @staticmethod
    def software_checker(config) -> tuple[Any, Callable[..., tuple[bool, dict[str, Any]]]]:
        """(what identifies the rules, the check of one queue), by SOFTWARE_RULE (job_rules_worker)."""
        return software_checkers.pick(config)(config)

    @staticmethod
    def endpoint_terms(context: Context, locations: frozenset[str] | None) -> tuple[str | None, np.ndarray, Any]:
        """What the endpoint check compares (JOB_ENDPOINT_RULE panda): production looks at DATADISK endpoints, its
        nucleus's queues are the ones excused from WAN, and a nucleus queue without a complete copy is not."""
        return "DATADISK", context["at_nucleus"], locations

    filters = (
        job_rules_site.UNKNOWN_NUCLEUS,
        job_rules_data.INPUT_COMPLETE,
        job_rules_site.QUEUE_STATUS,
        job_rules_site.LINK_BLOCKED,
        job_rules_site.NUCLEUS_STORAGE,
        job_rules_site.SATELLITE_LINK_FULL,
        job_rules_site.NUCLEUS_BACKLOG,
        job_rules_site.INACTIVE_QUEUE,
        job_rules_site.OPPORTUNISTIC_QUEUE,
        job_rules_site.HIGH_PRIORITY_AT_NUCLEUS,
        job_rules_site.ZERO_SHARE,
        job_rules_site.JUMBO_QUEUE,
        job_rules_data.INPUT_TRANSFER,
        job_rules_data.DISK_IO,
        job_rules_worker.CORE_COUNT,
        job_rules_worker.SOFTWARE,
        job_rules_resources.MEMORY,
        job_rules_resources.DIRECT_ACCESS,
        job_rules_resources.DISK,
        job_rules_resources.STORAGE_SPACE,
        job_rules_data.STORAGE_ENDPOINTS,
        job_rules_resources.WALLTIME,
        job_rules_worker.NETWORK_CONNECTIVITY,
        job_rules_worker.EVENT_SERVICE,
        job_rules_site.TRANSFERRING,
        job_rules_site.T1_WEIGHT,
        job_rules_data.MAX_IO_INTENSITY,
        job_rules_site.FULL_CHAIN,
        job_rules_site.PILOTS,
        job_rules_site.URGENT_NETWORK_WEIGHT,
        job_rules_data.NON_LOCAL_DATA,
        job_rules_site.WORK_SHORTAGE,
        job_rules_site.QUEUED_ACTIVATED_STARTING,
        job_rules_site.QUEUED_ALL,
        job_rules_site.T1_WEIGHT_MOST_RUNNING,
    )

    # The filters the real broker treats as temporary problems: it removes their queues only after the IO check
    # (AtlasProdJobBroker "temporary problem check"), so with IO_CHECK_RULE panda they run after it. Its checks that
    # note them, in its order, each with its rules in their if/elif order (1.0.4): the link check (465-490: the
    # nucleus's storage unwritable over WAN, too many files queued to the nucleus in all, too many on the
    # satellite's channel), the slowness check, the disk IO check, the Storage check (1006-1019: space first, then
    # the endpoints' blacklist), the transferring check, the pilot check.
    TEMPORARY_CHECKS = (
        ("nucleus storage", "nucleus backlog", "satellite link full"),
        ("inactive queue",),
        ("disk IO",),
        ("storage space", "storage endpoints"),
        ("transferring",),
        ("pilots",),
    )
    TEMPORARY = frozenset(name for check in TEMPORARY_CHECKS for name in check)

    LAST = (
        "urgent network weight",
        "non-local data",
        "queued activated+starting",
        "queued all",
        "t1 weight most running",
    )

    # seed 002, "Jumbo jobs and co-jumbo jobs": a task with nJumboJobs gets "one jumbo job … for each PQ which has
    # useJumbo", while its co-jumbo jobs go where "the standard brokerage procedures for event service" send them.
    # AtlasProdJobBroker's last loop (2083-2092, 1.0.4) weighs the queues taking jumbo jobs with the others, then
    # keeps them as the task's jumbo candidates instead of candidates for its job set: they leave at this stage,
    # with the reason "jumbo", and the job generation reads them there (adapters.job_brokerage.jumbo_candidates).
    late_stage = "jumbo jobs"

    def late_skips(self, context: Context) -> list:
        jumbo = context.task.nJumboJobs
        if not jumbo or preassign_mode(context) == "site":
            return []
        return [(self.late_stage, context["jumbo_only"], "jumbo", {"nJumboJobs": jumbo})]

    def filters_for(self, scenario: Scenario):
        """The seed's order, or IO_CHECK_RULE panda's (_panda_order)."""
        return filter_orders.pick(scenario.config)(type(self))

    # panda-server 1.0.4 AtlasProdJobBroker.doBrokerage(hintForTB=True), the task broker's "job check": the task
    # has no nucleus yet, so the rules against one are not run and every queue scanned counts as at a nucleus (the
    # real sites_in_nucleus then holds all nuclei's queues); the scan ends after the pilot check and drops the
    # temporary problems there, so the IO check and the rules of the weight loop are left out too.
    JOB_CHECK_LEFT_OUT = frozenset(
        {
            "unknown nucleus",
            "link blocked",
            "nucleus storage",
            "satellite link full",
            "nucleus backlog",
            "t1 weight",
            "high priority at nucleus",
            "full chain",
            "input transfer",
            *LAST,
        }
    )

    def job_check(self, scenario: Scenario, sites: Collection[str]) -> JobCheck:
        """Job brokerage as task brokerage asks it (JOB_CHECK_LEFT_OUT) over the production queues of `sites`, with
        the task scenario's `jobs` as the job set (AtlasProdTaskBroker passes the task's first input chunk)."""
        hint = replace(scenario, task=replace(scenario.task, nucleus=""), jobs=replace(scenario.jobs, preassigned=()))
        names = self._nucleus_queues(hint)
        arrays = self.prepare(hint, names).copy()
        # every queue of a nucleus (the real sites_in_nucleus holds all nuclei's queues then), not a bare-nucleus
        # satellite's, which the full-chain task may take as its nucleus (AtlasProdJobBroker.py 268-273)
        roles = {name: site.role for name, site in hint.sites.items()}
        arrays["at_nucleus"] = np.array([roles.get(site) == "nucleus" for site in arrays["site"].tolist()], dtype=bool)
        bare_satellites_scanned = not arrays["at_nucleus"].all()
        wanted = set(sites)
        site_of = arrays["site"].tolist()
        context = Context(hint, names, arrays, np.array([s in wanted for s in site_of], dtype=bool), self)
        skipped = SkipTable(names)
        stages = [
            self._apply(rule, context, skipped)
            for rule in filters_resolved(self.filters_for(hint), hint.config)
            if rule.name not in self.JOB_CHECK_LEFT_OUT and rule.name not in self.disabled_filters
        ]
        if bare_satellites_scanned:
            stages.append(self._apply(JOB_CHECK_T1_WEIGHT, context, skipped))
        queues: dict[str, list[str]] = {site: [] for site in wanted}
        kept: dict[str, list[str]] = {site: [] for site in wanted}
        skips: dict[str, tuple[str, str]] = {}
        scanned: list[str] = []
        able: list[str] = []
        for position, (name, site) in enumerate(zip(names, site_of, strict=True)):
            if site not in wanted:
                continue
            queues[site].append(name)
            scanned.append(name)
            if context.alive[position]:
                kept[site].append(name)
                able.append(name)
            else:
                skip = skipped[name]
                skips[name] = (skip.code, skip.filter)
        decision = job_check_decision(hint, initial=scanned, kept=able, skipped=skipped, stages=stages)
        return JobCheck(queues, kept, skips, decision)

    @classmethod
    @functools.cache
    def _panda_order(cls) -> tuple[Filter, ...]:
        """The real broker's order: permanent filters, the IO check, the temporary ones, the weight-loop checks.

        The real broker notes a temporary problem at each check (siteSkippedTmp[queue] = message) and removes the
        queues at the "temporary problem check": a queue noted at several checks is removed with the message of
        the last one. Ours removes a queue at the first filter that fails it, so the temporary ones run last check
        first, each check's own rules in its order (TEMPORARY_CHECKS). The pledge check comes before the T1 weight
        check there (1350-1420)."""
        by_name = {f.name: f for f in cls.filters}
        moved = cls.TEMPORARY | set(cls.LAST) | {"input transfer", "work shortage"}
        permanent = [f for f in cls.filters if f.name not in moved]
        at = [f.name for f in permanent].index("t1 weight")
        permanent[at:at] = [by_name["work shortage"]]
        temporary = [by_name[name] for check in reversed(cls.TEMPORARY_CHECKS) for name in check]
        last = (jumbo_kept(by_name[name]) for name in cls.LAST)
        return (*permanent, by_name["input transfer"], *temporary, *last)


def job_check_decision(scenario: Scenario, *, initial, kept, skipped, stages) -> Decision:
    """The task broker's job check as a job brokerage decision (for its JEDI log): the queues scanned, those kept
    (unweighed: the real check returns before the weights), the others' skips and the stages."""
    return Decision(
        plugin=AtlasProdJobBroker.name,
        outcome="assigned" if kept else "pending",
        chosen=None,
        candidates=tuple(Candidate(name, 0.0, {}) for name in kept),
        skipped=skipped,
        stages=tuple(stages),
        message="",
        retry_after_minutes=None,
        now=scenario.now,
        seed=scenario.seed,
        initial=tuple(initial),
        candidate_kind=AtlasProdJobBroker.candidate_kind,
        profile=scenario.profile,
    )


def jumbo_kept(rule: Filter) -> Filter:
    """A check of the real broker's weight loop as it treats a queue kept for the task's jumbo jobs: not at all
    (AtlasProdJobBroker.py 1974-1984 and 2040-2048, 1.0.4: forJumbo sets okAsPrimary, which none of the loop's
    skips — the caps, non-local data, the network weight, the T1 weight — unsets). Such queues leave the job set's
    candidates afterwards, as "jumbo jobs" (late_skips)."""

    def check(context: Context) -> Rejection:
        verdict = rule.check(context)
        if not context.task.nJumboJobs or not len(verdict.fails):
            return verdict
        return Rejection(verdict.fails & ~context["jumbo_only"], verdict.detail, verdict.code)

    return replace(rule, check=check)


def job_check_t1_weight(context: Context) -> Rejection:
    """The job check's t1Weight −1 (AtlasProdJobBroker.py 1403-1413 with hintForTB): the jobs go to the nuclei's
    queues only, so a bare-nucleus satellite's queues are skipped (its nucleus is not set yet, so the task-time
    rule, job_rules_site.t1_weight, does not see it)."""
    if (context.task.t1Weight or 0) >= 0 or context.scenario.jobs.isMerge:
        return NOTHING_FAILS
    return Rejection(~context["at_nucleus"], {"t1Weight": context.task.t1Weight, "site": context["site"]})


JOB_CHECK_T1_WEIGHT = Filter("t1 weight (job check)", "t1weight", job_check_t1_weight)


def seed_order(broker_class) -> tuple[Filter, ...]:
    """seed 000: the rules in the order the seed lists them."""
    return broker_class.filters


def panda_order(broker_class) -> tuple[Filter, ...]:
    """IO_CHECK_RULE panda: the real broker's order (AtlasProdJobBroker._panda_order)."""
    return broker_class._panda_order()


filter_orders = Variants("IO_CHECK_RULE", seed=seed_order, panda=panda_order)
