"""ATLAS analysis job brokerage (seed 000, "ATLAS Analysis Job Brokerage").

First the user (or working group) may be throttled: running/queued jobs and cores over the caps, the disk quota,
or the User Analysis share over its target for the task's class. Then the analysis and unified queues go
through persistent filters (many shared with production) and temporary ones (bad jobs, queue length, the
Analysis Stabilizer), are weighed by the original basic weight (or the new W_s × W_q, by gdpconfig), and the
best 10 kept. When persistent filters leave nothing, they run again without the data-locality check; still
nothing: pending, retried after 20 minutes.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any

import numpy as np

from brokerage.engine.core.decision import Decision
from brokerage.engine.core.plugin import Context, Filter, Variants, overlay_producer
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda import analysis_rules
from brokerage.engine.panda.analysis_rules import LOCALITY_PRIORITY, catchall_keys, locality_suppressed
from brokerage.engine.panda.input_data import readable_over_wan
from brokerage.engine.panda.job_broker import AtlasProdJobBroker
from brokerage.engine.panda.job_rules_worker import software_checker_seed
from brokerage.engine.panda.records import as_float, cloud_missing, readable
from brokerage.engine.panda.software import TaskSoftware
from brokerage.engine.panda.software_panda import anal_gpu_queue_ok, anal_software_panda

USER_ANALYSIS = "User Analysis"
# seed 000: User Analysis usage over 90 % (class C) or 95 % (class B) of its target throttles the task
CLASS_USAGE_LIMIT = {"C": 0.90, "B": 0.95}
# seed 000 new basic weight W_s: task class → (hi, mid, lo) where "N" is N_j and "e1"/"e2" the epsilons
SITE_CLASS_TABLE = {
    "S": ("N", "e1", "e2"),
    "A": ("N", "e1", "e2"),
    "B": ("e2", "N", "e1"),
    "C": ("e2", "e1", "N"),
}
SITE_CLASS_COLUMN = {"hi": 0, "mid": 1, "lo": 2}
CLASS_SHARES = ("User Analysis", "Express Analysis")
# the filters whose queues panda-server 1.0.4 marks problematic and drops only after both loops
PROBLEMATIC = frozenset({"bad jobs", "analysis stabilizer"})
# panda-server 1.0.4 class values (analy_task_eval / analy_site_eval); an unknown site class counts as mid
PANDA_TASK_CLASS = {"S": 1, "A": 1, "B": 0, "C": -1}
PANDA_SITE_CLASS = {"hi": 1, "mid": 0, "lo": -1}


def throttle_reason(scenario: Scenario) -> tuple[str, dict[str, Any]] | None:
    """Why the task is throttled before brokerage, or None, by ANALYSIS_THROTTLE_RULE."""
    return throttle_rules.pick(scenario.config)(scenario)


def throttle_reason_seed(scenario: Scenario) -> tuple[str, dict[str, Any]] | None:
    """seed 000: caps come from gdpconfig; the user's counts from `user_stats.user`, or `user_stats.group` and the
    group caps when the task has a workingGroup."""
    task, config, stats = scenario.task, scenario.config, scenario.user_stats
    who, prefix = ("group", "CAP_RUNNING_GROUP") if task.workingGroup else ("user", "CAP_RUNNING_USER")
    counts = stats.get(who) or {}
    for measure, key in (("running", "JOBS"), ("runningCores", "CORES")):
        cap = config.get(f"{prefix}_{key}")
        if cap is None:
            continue
        running = as_float(counts.get(measure))
        queued_measure = "queued" if key == "JOBS" else "queuedCores"
        queued = as_float(counts.get(queued_measure))
        if running > cap:
            return (
                f"{who} {measure} {running:g} > {prefix}_{key} {cap}",
                {"who": who, "measure": measure, "value": running, "cap": cap, "key": f"{prefix}_{key}"},
            )
        if queued > 2 * cap:
            return (
                f"{who} {queued_measure} {queued:g} > 2 × {prefix}_{key} {cap}",
                {"who": who, "measure": queued_measure, "value": queued, "cap": 2 * cap, "key": f"{prefix}_{key}"},
            )
    if (stats.get("user") or {}).get("diskQuotaExceeded"):
        return "the user's global disk quota is exceeded", {"measure": "diskQuotaExceeded"}
    if task.gshare == USER_ANALYSIS and task.taskClass in ("A", "B", "C"):
        usage = as_float((stats.get("gshareUsage") or {}).get(USER_ANALYSIS), None)
        if usage is not None:
            if task.taskClass == "A":
                slots = as_float((stats.get("user") or {}).get("runningSlotsHiSites"))
                threshold = config.get("USER_USAGE_THRESHOLD_A")
                limit = max(threshold / slots, 1.0) if slots > 0 else float("inf")
            else:
                limit = CLASS_USAGE_LIMIT[task.taskClass]
            if usage > limit:
                return (
                    f"User Analysis usage {usage:.0%} of target > {limit:.0%} for class {task.taskClass}",
                    {"measure": "gshareUsage", "value": usage, "limit": limit, "taskClass": task.taskClass},
                )
    return None


def complete_disk_copy_readable(scenario: Scenario, dataset) -> bool:
    """AtlasBrokerUtils.get_sites_with_data's truly complete disk (1.0.4): a copy with every file of the dataset on
    a known disk endpoint that can be read."""
    return dataset.nFiles > 0 and any(
        replica.nFiles == dataset.nFiles
        and (endpoint := scenario.ddm_endpoints.get(key)) is not None
        and not endpoint.is_tape
        and readable(endpoint)
        for key, replica in dataset.replicas.items()
    )


def _sites_with_data(complete: set, partial: set, complete_disk: set, truly_complete: bool) -> set:
    """AtlasBrokerUtils.getAnalSitesWithDataDisk (1.0.4) for one dataset: the queues with a complete copy, with
    the incomplete ones too when no readable disk copy anywhere is complete and none of the queues has one on
    disk; the incomplete ones when no queue has a complete copy."""
    if complete:
        return complete if truly_complete or complete_disk else complete | partial
    return partial


def _anal_software(task, releases, tags, all_entry, gpus, *, gpu_queue: bool = False, **_) -> tuple[bool, dict]:
    """AtlasAnalJobBroker (1.0.4): a GPU queue (catchall gpu) needs the task's platform published there (its
    "architecture check"), then the SW/HW check."""
    if gpu_queue and not anal_gpu_queue_ok(task, releases, tags, all_entry, gpus):
        return False, {"check": "architecture", "needed": task.architecture or "a platform", "queue": "GPU queue"}
    return anal_software_panda(task, releases, tags, all_entry, gpus)


def _caps_exceeded(scenario: Scenario) -> tuple[str, dict[str, Any]] | None:
    """The running and queued jobs and cores of the user (or working group) against the CAP_RUNNING_* caps."""
    task, config, stats = scenario.task, scenario.config, scenario.user_stats
    who, prefix = ("group", "CAP_RUNNING_GROUP") if task.workingGroup else ("user", "CAP_RUNNING_USER")
    counts = stats.get(who) or {}
    for measure, key in (("running", "JOBS"), ("runningCores", "CORES")):
        cap = config.get(f"{prefix}_{key}")
        if not cap:
            continue
        queued_measure = "queued" if key == "JOBS" else "queuedCores"
        for what, value, limit in (
            (measure, as_float(counts.get(measure)), cap),
            (queued_measure, as_float(counts.get(queued_measure)), 2 * cap),
        ):
            if value > limit:
                times = "2 × " if what == queued_measure else ""
                return (
                    f"{who} {what} {value:g} > {times}{prefix}_{key} {cap}",
                    {"who": who, "measure": what, "value": value, "cap": limit, "key": f"{prefix}_{key}"},
                )
    return None


def throttle_reason_panda(scenario: Scenario) -> tuple[str, dict[str, Any]] | None:
    """ANALYSIS_THROTTLE_RULE panda (AtlasAnalJobBroker 168-330, 1.0.4; issue 33 D9): the caps are not asked for
    merge job sets; the User Analysis share throttles classes S and A (class value 1) when usage × the user's
    share of USER_USAGE_THRESHOLD_A (½ when the user's evaluation is unknown) is above 100 % of target, B above
    95 %, C above 90 %, merge job sets included."""
    task, config, stats = scenario.task, scenario.config, scenario.user_stats
    if not scenario.jobs.isMerge:
        capped = _caps_exceeded(scenario)
        if capped is not None:
            return capped
    if (stats.get("user") or {}).get("diskQuotaExceeded"):
        return "the user's global disk quota is exceeded", {"measure": "diskQuotaExceeded"}
    usage = as_float((stats.get("gshareUsage") or {}).get(USER_ANALYSIS), None)
    if task.gshare != USER_ANALYSIS or task.taskClass not in PANDA_TASK_CLASS or not usage:
        return None
    percent = usage * 100
    value = PANDA_TASK_CLASS[task.taskClass]
    if (value == -1 and percent > 90) or (value == 0 and percent > 95):
        limit = 90 if value == -1 else 95
        return (
            f"User Analysis usage {percent:.0f} % of target > {limit} % for class {task.taskClass}",
            {"measure": "gshareUsage", "value": usage, "limit": limit / 100, "taskClass": task.taskClass},
        )
    if value == 1:
        slots = (stats.get("user") or {}).get("runningSlotsHiSites")
        threshold = config.get("USER_USAGE_THRESHOLD_A")
        ratio = 0.5 if slots is None else 1.0 - max(threshold - as_float(slots), 0.0) / threshold
        if percent * ratio > 100:
            return (
                f"User Analysis usage {percent:.0f} % × {ratio:.3g} of USER_USAGE_THRESHOLD_A > 100 % for class "
                f"{task.taskClass}",
                {"measure": "gshareUsage", "value": usage, "ratio": ratio, "taskClass": task.taskClass},
            )
    return None


throttle_rules = Variants("ANALYSIS_THROTTLE_RULE", seed=throttle_reason_seed, panda=throttle_reason_panda)


def analysis_software_checker_seed(config):
    """The production broker's check (software_checker_seed), which has no GPU side."""
    rules, check = software_checker_seed(config)
    return rules, lambda *args, gpu_queue=False: check(*args)


def analysis_software_checker_panda(config):
    """SOFTWARE_RULE panda: AtlasAnalJobBroker's own SW/HW loop (software_panda.anal_software_panda), after its
    architecture check at GPU queues."""
    return "panda-analysis", _anal_software


analysis_software_checkers = Variants(
    "SOFTWARE_RULE", seed=analysis_software_checker_seed, panda=analysis_software_checker_panda
)


def release_as_given(task, config=None) -> TaskSoftware:
    """The task's own release fields (SOFTWARE_RULE panda reads them so, software_panda; the seed for most tasks)."""
    home, uses = task.transHome or "", task.transUses or ""
    return TaskSoftware(task.architecture, uses, home, task.container_name, task.onlyTagsForFC)


def release_as_offline(task, config=None) -> TaskSoftware:
    """ANALYSIS_SW_RULE panda (AtlasAnalJobBroker "SW/HW check", 1.0.4): a task whose transHome ends in a three-part
    release (and whose transUses does not end in a two-part one) is checked as the AtlasOffline release of its
    transUses, not as its own project; other tasks as given."""
    home, uses = task.transHome or "", task.transUses or ""
    if re.search(r"-\d+\.\d+\.\d+$", home) and not re.search(r"-\d+\.\d+$", uses):
        home = uses = f"AtlasOffline-{uses.split('-')[-1]}" if uses else ""
    return TaskSoftware(task.architecture, uses, home, task.container_name, task.onlyTagsForFC)


def release_by_analysis_rule(task, config) -> TaskSoftware:
    """The seed's software check reads the release as ANALYSIS_SW_RULE says."""
    return analysis_releases.pick(config)(task, config)


analysis_releases = Variants("ANALYSIS_SW_RULE", seed=release_as_given, panda=release_as_offline)
task_releases = Variants("SOFTWARE_RULE", seed=release_by_analysis_rule, panda=release_as_given)


# Decision.asides' key for the first loop's decision (with the data locality check) when a second one was run: the
# JEDI-grammar log writes both loops, as AtlasAnalJobBroker does
FIRST_LOOP_KEY = "first loop"


def after_first_loop(second: Decision, first: Decision, note: str) -> Decision:
    """The second loop's decision, saying why it was run (message, extra["retry"]) and keeping the first beside it
    for the JEDI-grammar log."""
    return replace(
        second,
        message=f"{second.message} ({note})",
        extra={**second.extra, "retry": note},
        asides={**second.asides, FIRST_LOOP_KEY: first},
    )


class AtlasAnalJobBroker(AtlasProdJobBroker):
    name = "atlas_anal_job"
    retry_after_minutes = 20  # seed 000: "the task is pending for 20 min"
    master_complete_only_when_io = False
    max_candidates = 10
    # AtlasAnalJobBroker's late drops are its problematic queues (late_skips), not production's jumbo queues
    late_stage = "problematic"

    @staticmethod
    def software_checker(config):
        """(what identifies the rules, the check of one queue), by SOFTWARE_RULE (analysis_software_checkers)."""
        return analysis_software_checkers.pick(config)(config)

    @staticmethod
    def software_extra(record: dict[str, Any]) -> dict[str, Any]:
        return {"gpu_queue": "gpu" in catchall_keys(record.get("catchall") or "")}

    @staticmethod
    def task_software(task, config) -> TaskSoftware:
        """The task's side of the software check, by SOFTWARE_RULE and ANALYSIS_SW_RULE (task_releases)."""
        return task_releases.pick(config)(task, config)

    def filters_for(self, scenario: Scenario):
        """The seed's order, or ANALYSIS_SITES_RULE panda's, the real broker's (PANDA_ORDER); IO_CHECK_RULE, which
        reorders production's filters, does not apply."""
        return self.ORDERS.pick(scenario.config)(self)

    def _seed_order(self) -> tuple[Filter, ...]:
        return self.filters

    def _panda_order(self) -> tuple[Filter, ...]:
        return self._panda_order_of()

    @classmethod
    @functools.cache
    def _panda_order_of(cls) -> tuple[Filter, ...]:
        """The class's filters in ANALYSIS_PANDA_ORDER, with the panda order's own (PANDA_ONLY_FILTERS)."""
        by_name = {rule.name: rule for rule in (*PANDA_ONLY_FILTERS, *cls.filters)}
        return tuple(by_name[name] for name in ANALYSIS_PANDA_ORDER)

    ORDERS = Variants("ANALYSIS_SITES_RULE", seed=_seed_order, panda=_panda_order)

    def site_preassignment(self, scenario: Scenario) -> tuple[str, tuple[str, ...]]:
        """ANALYSIS_SITES_RULE panda (AtlasAnalJobBroker 118-143, 1.0.4): the task's `site` naming a queue is a
        pre-assignment ('site'); naming a storage endpoint, the analysis queues that read it are its included
        queues ('endpoint'); naming neither, it is ignored ('')."""
        site = scenario.task.site
        if not site:
            return "", ()
        if site in scenario.queues:
            return "site", (site,)
        readers = tuple(
            sorted(
                name
                for name, record in scenario.queues.items()
                if record.get("type") in ("analysis", "unified")
                and site in ((record.get("astorages") or {}).get("read_lan") or [])
                and not getattr(scenario.ddm_endpoints.get(site), "blacklisted", False)
            )
        )
        return ("endpoint", readers) if readers else ("", ())

    def initial_candidates(self, scenario: Scenario) -> list[str]:
        # unified queues are brokered as their pseudo-queues, as in production (seed 000; SiteMapper)
        records = self.queue_records(scenario)
        site = scenario.task.site
        if site and scenario.config.get("ANALYSIS_SITES_RULE") == "panda":
            mode, _ = self.site_preassignment(scenario)
            if mode == "site":
                # AtlasAnalJobBroker (1.0.4, 116-142): every analysis queue is scanned, the pre-assigned one added
                # when it is not one; the "preassign check" keeps it alone (analysis_rules.preassigned)
                own = [name for name, (_, unified) in records.items() if unified == site]
                return sorted({*self._analysis_queues(scenario, records), *own})
            site = ""
        if site:
            # a task pre-assigned to a queue (its `site`) is brokered to that queue only (seed 000; AtlasAnalJobBroker
            # sitePreAssigned); an unknown queue leaves no candidate
            return [name for name, (_, unified) in records.items() if unified == site]
        return self._analysis_queues(scenario, records)

    def _analysis_queues(self, scenario: Scenario, records) -> list[str]:
        """Every analysis and unified queue (pseudo-queues each), once per snapshot."""
        drop_cloudless = scenario.config.get("CRIC_QUEUE_RULE") == "panda"
        cache = self._snapshot_cache(scenario)
        key = ("analysis queues", drop_cloudless)
        if key not in cache:
            # CRIC_QUEUE_RULE panda: a unified queue without a cloud is not in the real SiteMapper (SiteMapper.py 75-79)
            cache[key] = sorted(
                name
                for name, (record, _) in records.items()
                if record.get("type") in ("analysis", "unified") and not (drop_cloudless and cloud_missing(record))
            )
        return list(cache[key])

    def prepare(self, scenario: Scenario, names: list[str]) -> dict[str, Any]:
        arrays = super().prepare(scenario, names)
        arrays.lazily(self.ANALYSIS_GRID_KEYS, lambda _: self._analysis_grid(scenario, names))
        arrays.lazily(self.USER_KEYS, overlay_producer(lambda target: self._prepare_user(scenario, names, target)))
        return arrays

    # the analysis rules' own columns of the grid: made when one of them is first read, once per snapshot
    ANALYSIS_GRID_KEYS = ("site_class", "vp", "vp_overloaded", "vp_overloaded_given", "trr", "n_users")

    def _analysis_grid(self, scenario: Scenario, names: list[str]) -> dict[str, np.ndarray]:
        cache = self._snapshot_cache(scenario)
        key = ("analysis grid", tuple(names))
        if key not in cache:
            known = self.queue_records(scenario)
            records = [known[name][0] for name in names]
            stats = [scenario.queue_stats.get(known[name][1], {}) for name in names]
            cache[key] = {
                "site_class": np.array([r.get("siteClass") or "" for r in records], dtype=object),
                "vp": np.array([bool(r.get("use_vp")) for r in records], dtype=bool),
                # an explicit vpOverloaded (a scenario file's) wins; absent, the queue's own numbers decide (_vp)
                "vp_overloaded": np.array([bool(s.get("vpOverloaded")) for s in stats], dtype=bool),
                "vp_overloaded_given": np.array(["vpOverloaded" in s for s in stats], dtype=bool),
                "trr": np.array([as_float(s.get("toRunningRate")) for s in stats], dtype=float),
                "n_users": np.array([max(as_float(s.get("nUsers")), 1.0) for s in stats], dtype=float),
            }
        return cache[key]

    # the user's numbers per queue and the Analysis Stabilizer's: made when a rule first reads them
    USER_KEYS = (
        "user_queued",
        "user_running",
        "task_finished",
        "task_failed",
        "task_closed",
        "queued_all",
        "user_listed",
        "stabilizer_panda",
        "throttleable",
        "nq_max",
        "user_percentage",
        "max_q_len",
    )

    def _prepare_user(self, scenario: Scenario, names: list[str], arrays: dict[str, Any]) -> None:
        arrays.update(self._user_arrays(scenario, names))
        arrays["queued_all"] = arrays["defined"] + arrays["activated"] + arrays["assigned"] + arrays["starting"]
        self._stabilizer_numbers(scenario, arrays)

    USER_FIELDS = (
        ("userQueued", "user_queued"),
        ("userRunning", "user_running"),
        ("taskFinished", "task_finished"),
        ("taskFailed", "task_failed"),
        ("taskClosed", "task_closed"),
    )

    def _user_arrays(self, scenario: Scenario, names: list[str]) -> dict[str, np.ndarray]:
        """The user's and task's numbers per queue, read from user_stats.queues once per user_stats object (the
        job sets of one task share it); only the queues listed are visited."""
        per_queue = scenario.user_stats.get("queues") or {}
        cache = self._snapshot_cache(scenario)
        key = ("user arrays", id(per_queue), tuple(names))
        held = cache.get(key)
        if held is not None and held[0] is per_queue:
            return held[1]
        known = self.queue_records(scenario)
        positions: dict[str, list[int]] = {}
        for i, name in enumerate(names):  # a unified queue's numbers go to each of its pseudo-queues
            positions.setdefault(known[name][1] if name in known else name, []).append(i)
        columns = {array: [0.0] * len(names) for _, array in self.USER_FIELDS}
        for queue_name, numbers in per_queue.items():
            where = positions.get(queue_name)
            if where is None or not numbers:
                continue
            for field, array in self.USER_FIELDS:
                value, column = as_float(numbers.get(field)), columns[array]
                for position in where:
                    column[position] = value
        arrays = {array: np.array(column, dtype=float) for array, column in columns.items()}
        cache[key] = (per_queue, arrays)  # the object is kept so its id cannot be reused meanwhile
        return arrays

    @staticmethod
    def _stabilizer_numbers(scenario: Scenario, arrays: dict[str, Any]) -> None:
        """seed 000 Analysis Stabilizer: which queues can be throttled, nQ_max, the user's percentage, max_q_len."""
        config = scenario.config
        base_length = config.get("BASE_QUEUE_LENGTH_PER_PQ")
        queued, running, trr = arrays["queued_all"], arrays["running_real"], arrays["trr"]
        panda = config.get("ANALYSIS_STABILIZER_RULE") == "panda"
        if panda:
            # AtlasAnalJobBroker 1628-1635 (1.0.4): the share's start rate counts only while jobs run there
            trr = np.where(running > 0, trr, 0.0)
        # the user has jobs queued or running there (the real statistics list them only then)
        arrays["user_listed"] = (arrays["user_queued"] + arrays["user_running"] > 0) | (not panda)
        arrays["stabilizer_panda"] = panda
        arrays["throttleable"] = ~(
            (queued < base_length) | (queued < config.get("BASE_EXPECTED_WAIT_HOUR_ON_PQ") * trr)
        )
        arrays["nq_max"] = np.maximum(
            np.maximum(
                config.get("STATIC_MAX_QUEUE_RUNNING_RATIO") * running, config.get("MAX_EXPECTED_WAIT_HOUR") * trr
            ),
            float(base_length),
        )
        running_some = running > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(running_some, arrays["user_running"] / np.where(running_some, running, 1), 0.0)
        # ANALYSIS_WEIGHT_RULE panda: AtlasAnalJobBroker counts the users of a queue with len() of a map that
        # also holds the "_total" entry, one more than there are
        users = arrays["n_users"] + (1.0 if config.get("ANALYSIS_WEIGHT_RULE") == "panda" else 0.0)
        arrays["user_percentage"] = np.maximum(share, 1.0 / users)
        arrays["max_q_len"] = np.maximum(
            np.maximum(config.get("BASE_QUEUE_RATIO_ON_PQ") * running, arrays["nq_max"] * arrays["user_percentage"]),
            float(config.get("BASE_DEFAULT_QUEUE_LENGTH_PER_PQ_USER")),
        )

    # --- the flow: throttle, persistent filters (retry without locality), temporary filters, weight ---

    def decide(self, scenario: Scenario) -> Decision:
        throttled = throttle_reason(scenario)
        if throttled is not None:
            sentence, numbers = throttled
            return Decision(
                plugin=self.name,
                outcome="throttled",
                chosen=None,
                candidates=(),
                skipped={},
                stages=(),
                message=f"throttled: {sentence}",
                retry_after_minutes=None,
                now=scenario.now,
                seed=scenario.seed,
                initial=(),
                candidate_kind=self.candidate_kind,
                profile=scenario.profile,
                extra={"throttle": numbers},
            )
        decision = super().decide(scenario)
        return self.SECOND_LOOPS.pick(scenario.config)(self, scenario, decision)

    def _second_loop_seed(self, scenario: Scenario, decision: Decision) -> Decision:
        """seed 000: when every queue failed the persistent filters, brokerage runs once more without the data
        locality check (unless it was off already)."""
        persistent_left = self._after_persistent(decision)
        locality_on = "data locality" not in self.disabled_filters and not locality_suppressed(scenario)
        if persistent_left == 0 and locality_on and decision.initial:
            retry = type(self)(disabled_filters=self.disabled_filters | {"data locality"})
            retry._snapshot_held = getattr(self, "_snapshot_held", None)
            second = retry.decide(scenario)
            note = "all queues failed persistent filters: tried again without the data locality check"
            return after_first_loop(second, decision, note)
        return decision

    def _second_loop_panda(self, scenario: Scenario, decision: Decision) -> Decision:
        """AtlasAnalJobBroker (1.0.4) brokers in two loops: with the data locality check, then, when that loop
        keeps no queue, again from all queues without it. The second loop exists whenever the task has input
        with a copy regarded as complete and readable over WAN (its other conditions always hold for one site per
        job). Queues the real code calls problematic (bad jobs, the Analysis Stabilizer) are dropped only after
        the loops, so the first loop counts as failed for them only when locality was to be ignored (high
        priority, low ioIntensity, timeout)."""
        if (
            decision.candidates
            or not decision.initial
            or "data locality" in self.disabled_filters
            or not scenario.datasets
            or not readable_over_wan(scenario, self.located_datasets(scenario), nearly_complete=True)
        ):
            return decision
        if not self._locality_to_ignore(scenario) and self._problematic_dropped_any(decision):
            # (when the problematic rules dropped nothing, the first loop without them is the decision itself)
            probe = type(self)(disabled_filters=self.disabled_filters | PROBLEMATIC)
            probe._snapshot_held = getattr(self, "_snapshot_held", None)
            probe.first_loop_probe = True
            # the first loop alone (the plugin's own decide would loop again)
            if super(AtlasAnalJobBroker, probe).decide(scenario).candidates:
                return decision  # the first loop kept queues; all of them were problematic
        locality = next((stage for stage in decision.stages if stage.filter == "data locality"), None)
        if locality is not None and locality.before == 0:
            # every queue was gone before the data locality check: the loop without it keeps none either, and its
            # stages are this loop's without that check (the same rules and verdicts before it, none run after)
            second = replace(decision, stages=tuple(stage for stage in decision.stages if stage is not locality))
        else:
            retry = type(self)(disabled_filters=self.disabled_filters | {"data locality"})
            retry._snapshot_held = getattr(self, "_snapshot_held", None)
            second = retry.decide(scenario)
        note = "no queue kept with the data locality check: tried again without it"
        return after_first_loop(second, decision, note)

    SECOND_LOOPS = Variants("ANALYSIS_LOCALITY_RULE", seed=_second_loop_seed, panda=_second_loop_panda)

    @staticmethod
    def _problematic_dropped_any(decision: Decision) -> bool:
        """Whether the bad-jobs or stabilizer rule removed a queue, or problematic queues were dropped after the
        weights (the stages say so)."""
        return any(
            stage.filter == "problematic" or (stage.filter in PROBLEMATIC and stage.after < stage.before)
            for stage in decision.stages
        )

    @staticmethod
    def _locality_to_ignore(scenario: Scenario) -> bool:
        """AtlasAnalJobBroker's to_ignore_data_loc: taskPriority ≥ 2000, a known ioIntensity at or under
        IO_INTENSITY_CUTOFF_USER, or no success for DATA_CHECK_TIMEOUT_USER hours."""
        task, config = scenario.task, scenario.config
        cutoff, timeout = config.get("IO_INTENSITY_CUTOFF_USER"), config.get("DATA_CHECK_TIMEOUT_USER")
        hours = scenario.user_stats.get("hoursSinceLastSuccess")
        return (
            task.taskPriority >= LOCALITY_PRIORITY
            or bool(cutoff and task.ioIntensity and cutoff >= task.ioIntensity)
            or (timeout is not None and hours is not None and hours > timeout)
        )

    @classmethod
    def _after_persistent(cls, decision: Decision) -> int | None:
        left = None
        for stage in decision.stages:
            if stage.filter in PERSISTENT:
                left = stage.after
        return left

    def weigh(self, context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        running = context["running_used"][survivors]
        queued = (context["activated"] + context["assigned"] + context["starting"] + context["defined"])[survivors]
        original = (running + 1) / (queued + 1)
        new, w_s, w_q, data_factor = self.NEW_WEIGHTS.pick(context.config)(context, survivors)
        use_new = bool(context.config.get("USE_NEW_BASIC_WEIGHT"))
        return (new if use_new else original) * data_factor, {
            "used": "new" if use_new else "original",
            "dataWeight": data_factor,
            "originalWeight": original,
            "newWeight": new,
            "Ws": w_s,
            "Wq": w_q,
            "running": running,
            "queued": queued,
            "maxQueueLength": context["max_q_len"][survivors],
            "userQueued": context["user_queued"][survivors],
        }

    @staticmethod
    def _data_weight_panda(context: Context, survivors: np.ndarray) -> np.ndarray:
        """ANALYSIS_WEIGHT_RULE panda, the data factor (AtlasAnalJobBroker 2197-2217, 1.0.4): with the data locality
        check in this loop, 1 per dataset the queue has on disk and 0.001 per dataset on tape only; without it, or
        when no queue had all the data (union; never for a task pre-assigned to a queue), 1 + the whole GB of input
        on its disk / 10."""
        scenario = context.scenario
        n = len(survivors)
        if not scenario.datasets:
            return np.ones(n)
        checked = "data locality" not in context.plugin.disabled_filters
        per_dataset = context.plugin.data_sites(scenario)[4]
        if checked and not analysis_rules.union_taken(context):
            unified = context["unified"][survivors].tolist()
            factor = np.zeros(n)
            found = np.zeros(n, dtype=bool)
            for on_any, on_disk in per_dataset:
                for i, name in enumerate(unified):
                    if name in on_any:
                        factor[i] += 1.0 if name in on_disk else 0.001
                        found[i] = True
            return np.where(found, factor, 1.0)
        total_gb = np.floor(sum(d.sizeGB for d in scenario.datasets))
        if total_gb <= 0:
            return np.ones(n)
        return 1.0 + np.floor(context["local_size"][survivors]) / 10.0

    @staticmethod
    def _new_weight(context: Context, survivors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """seed 000 new basic weight W_s × W_q. Guards (docs/decisions.md): a negative W_q counts as 0, and when
        the candidates have no room left in total (denominator ≤ 0) every queue gets W_q = 1 / N_PQ."""
        task, config = context.task, context.config
        n_jobs = float(context.scenario.jobs.nJobs)
        epsilon = {"N": n_jobs, "e1": config.get("NEW_WEIGHT_EPSILON_1"), "e2": config.get("NEW_WEIGHT_EPSILON_2")}
        classes = context["site_class"][survivors]
        if task.gshare in CLASS_SHARES and task.taskClass in SITE_CLASS_TABLE:
            row = SITE_CLASS_TABLE[task.taskClass]
            # a queue without a site class counts as mid
            w_s = np.array([epsilon[row[SITE_CLASS_COLUMN.get(c, 1)]] for c in classes], dtype=float)
        else:
            w_s = np.full(len(survivors), n_jobs)
        room = context["max_q_len"][survivors] - context["user_queued"][survivors]
        n_pq = len(survivors)
        denominator = room.sum() - n_jobs
        w_q = np.maximum((room - n_jobs / n_pq) / denominator, 0.0) if denominator > 0 else np.full(n_pq, 1.0 / n_pq)
        return w_s * w_q, w_s, w_q

    @staticmethod
    def _new_weight_panda(context: Context, survivors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The new basic weight of panda-server 1.0.4 (AtlasAnalJobBroker, "WEIGHT-COMPAR"): the job set's jobs
        are handed out to the site classes in the task class's order (S/A/unclassified: hi, mid, lo; B: mid, lo;
        C: lo), each class taking what its queues have room for (the user's remaining queue length), with small
        epsilons moved between classes; each queue gets its class's share × its part of the class's room
        (+ 2^-20). Returned: the weight, the class share (W_s), the queue part (W_q); per unified queue."""
        task = context.task
        n_jobs = float(context.scenario.jobs.nJobs)
        classes = np.array([PANDA_SITE_CLASS.get(c, 0) for c in context["site_class"][survivors]], dtype=int)
        units = context["unified"][survivors] if "unified" in context.arrays else np.array(context.names)[survivors]
        rem = np.maximum(context["max_q_len"][survivors] - context["user_queued"][survivors], 0.0)
        # one entry per unified queue (pseudo-queues share their queue's figures)
        first = {}
        for position, unit in enumerate(units.tolist()):
            first.setdefault(unit, position)
        entries = list(first.values())
        n_sites = {k: sum(1 for i in entries if classes[i] == k) for k in (1, 0, -1)}
        class_rem = {k: float(sum(rem[i] for i in entries if classes[i] == k)) for k in (1, 0, -1)}
        total_rem = float(sum(rem[i] for i in entries))
        main = {1: 0.001, 0: 0.001, -1: 0.001}
        analysis_share = task.gshare in CLASS_SHARES
        if analysis_share:
            left = min(n_jobs, total_rem)
            task_class = PANDA_TASK_CLASS.get(task.taskClass, 1)
            if task_class == -1:
                main[-1] = left
            elif task_class == 0:
                main[0] = min(left, class_rem[0])
                main[-1] = left - main[0]
                if main[0] > 0:
                    main[0] -= 0.1
                    main[-1] += 0.1
            else:
                main[1] = min(left, class_rem[1])
                left -= main[1]
                main[0] = min(left, class_rem[0])
                main[-1] = left - main[0]
                if main[1] > 0:
                    main[1] -= 0.05 + 0.002
                    main[0] += 0.05
                    main[-1] += 0.002
        merging = context.scenario.jobs.isMerge
        w_s, w_q = np.zeros(len(survivors)), np.zeros(len(survivors))
        for position, unit in enumerate(units.tolist()):
            k, mine = classes[position], rem[first[unit]]
            if analysis_share:
                share = main[k]
                numerator = max(mine - share / n_sites[k], share * 0.001)
                reduced = class_rem[k] - share
                if reduced > 0 and not merging:
                    part = numerator / reduced
                elif class_rem[k] > 0:
                    part = mine / class_rem[k]
                else:
                    part = 1.0 / n_sites[k]
            else:
                share = n_jobs
                numerator = max(mine - share / len(entries), share * 0.001)
                reduced = total_rem - share
                if reduced > 0 and not merging:
                    part = numerator / reduced
                elif total_rem > 0:
                    part = mine / total_rem
                else:
                    part = 1.0 / len(entries)
            w_s[position], w_q[position] = share, part
        return w_s * w_q + 2.0**-20, w_s, w_q

    @staticmethod
    def _weights_seed(context: Context, survivors: np.ndarray):
        """seed 000's new basic weight (_new_weight), no data factor."""
        return (*AtlasAnalJobBroker._new_weight(context, survivors), np.ones(len(survivors)))

    @staticmethod
    def _weights_panda(context: Context, survivors: np.ndarray):
        """ANALYSIS_WEIGHT_RULE panda: the real broker's weight (_new_weight_panda) and its data factor."""
        return (
            *AtlasAnalJobBroker._new_weight_panda(context, survivors),
            AtlasAnalJobBroker._data_weight_panda(context, survivors),
        )

    NEW_WEIGHTS = Variants("ANALYSIS_WEIGHT_RULE", seed=_weights_seed, panda=_weights_panda)

    # --- filters ---

    def data_sites(self, scenario: Scenario) -> tuple:
        """The analysis queues (unified names) with the input, as the real data check lists them: every dataset
        (scan), every dataset on disk (disk), any dataset (union, disk union), and per dataset (anywhere, on
        disk). Once per task and snapshot."""
        return self._per_task(scenario, "data sites", self._data_sites)

    def _per_task(self, scenario: Scenario, name: str, make):
        """make(scenario), kept per snapshot and input datasets (every job set of a task shares them); the datasets
        object is kept with it, so that its id is not reused meanwhile."""
        cache = self._snapshot_cache(scenario)
        key = (name, id(scenario.datasets))
        held = cache.get(key)
        if held is None or held[0] is not scenario.datasets:
            held = cache[key] = (scenario.datasets, make(scenario))
        return held[1]

    def _data_sites(self, scenario: Scenario) -> tuple:
        readers = self.analysis_readers(scenario)
        scan = disk = None
        union, disk_union = set(), set()
        per_dataset: list[tuple[frozenset, frozenset]] = []
        distributed = self.distributed(scenario)
        for dataset in scenario.datasets:
            # a distributed dataset (a container) takes incomplete copies too (use_incomplete, 1.0.4 568-571)
            truly_complete = dataset.name not in distributed and complete_disk_copy_readable(scenario, dataset)
            complete, complete_disk, partial, partial_disk = set(), set(), set(), set()
            for key, replica in dataset.replicas.items():
                info = scenario.ddm_endpoints.get(key)
                tape = info is not None and info.is_tape
                whole = replica.nFiles == dataset.nFiles
                for name in readers.get(key, ()):
                    (complete if whole else partial).add(name)
                    if not tape:
                        (complete_disk if whole else partial_disk).add(name)
            on_any = _sites_with_data(complete, partial, complete_disk, truly_complete)
            on_disk = _sites_with_data(complete_disk, partial_disk, complete_disk, truly_complete)
            per_dataset.append((frozenset(on_any), frozenset(on_disk)))
            scan = on_any if scan is None else scan & on_any
            disk = on_disk if disk is None else disk & on_disk
            union |= on_any
            disk_union |= on_disk
        return (
            frozenset(scan or ()),
            frozenset(disk or ()),
            frozenset(union),
            frozenset(disk_union),
            tuple(per_dataset),
        )

    def analysis_readers(self, scenario: Scenario) -> dict[str, list[str]]:
        """Endpoint → the analysis and unified queues reading it over LAN, once per snapshot; a queue does not read
        an endpoint blacklisted for reading (EntityModule.getDdmEndpoints' input endpoints, 1.0.4)."""
        cache = self._snapshot_cache(scenario)
        if "analysis readers" not in cache:
            readers: dict[str, list[str]] = {}
            for name, record in scenario.queues.items():
                if record.get("type") not in ("analysis", "unified"):
                    continue
                for endpoint in (record.get("astorages") or {}).get("read_lan") or []:
                    info = scenario.ddm_endpoints.get(endpoint)
                    if info is None or not info.blacklisted:
                        readers.setdefault(endpoint, []).append(name)
            cache["analysis readers"] = readers
        return cache["analysis readers"]

    def any_fairshare_policy(self, scenario: Scenario) -> bool:
        """Whether any queue of the snapshot has a fair-share policy, once per snapshot."""
        cache = self._snapshot_cache(scenario)
        if "any fairshare" not in cache:
            cache["any fairshare"] = any(record.get("fairsharepolicy") for record in scenario.queues.values())
        return cache["any fairshare"]

    def distributed(self, scenario: Scenario) -> frozenset[str]:
        """ANALYSIS_LOCALITY_RULE panda: the input datasets the real broker treats as distributed (AtlasAnalJobBroker
        432-450, 1.0.4): containers (names ending in "/") with a copy somewhere. Their copies may be incomplete,
        virtual placement is avoided (their jobs trigger transfers), they need no complete copy and no WAN-readable
        one, and the ten-queue cut is dropped. None under the seed's rules."""
        if scenario.config.get("ANALYSIS_LOCALITY_RULE") != "panda":
            return frozenset()
        return frozenset(d.name for d in scenario.datasets if d.name.endswith("/") and d.replicas)

    def located_datasets(self, scenario: Scenario) -> list:
        """The input datasets that must have a copy regarded as complete (not the distributed ones)."""
        distributed = self.distributed(scenario)
        return [dataset for dataset in scenario.datasets if dataset.name not in distributed]

    def candidate_cap(self, context: Context) -> int | None:
        """The ten best queues, or all of them for a task reading a distributed dataset (1.0.4, 2262-2270)."""
        return None if self.distributed(context.scenario) else self.max_candidates

    def local_complete(self, scenario: Scenario) -> tuple[tuple[frozenset, bool], ...]:
        """Per located dataset (a distributed one counts as available everywhere: tmpDatasetSpec.isDistributed(),
        AtlasAnalJobBroker 2329): the analysis queues reading a copy with all its files (disk or tape), and whether a
        complete disk copy is readable anywhere (complete_disk_copy_readable). Once per task and snapshot."""
        return self._per_task(scenario, "local complete", self._local_complete)

    def _local_complete(self, scenario: Scenario) -> tuple[tuple[frozenset, bool], ...]:
        readers = self.analysis_readers(scenario)
        found = []
        for dataset in self.located_datasets(scenario):
            complete = frozenset(
                name
                for endpoint, replica in dataset.replicas.items()
                if replica.nFiles >= dataset.nFiles
                for name in readers.get(endpoint, ())
            )
            found.append((complete, complete_disk_copy_readable(scenario, dataset)))
        return tuple(found)

    def late_skips(self, context: Context) -> list:
        return context.arrays.get("late", [])

    def grand_queue_ratio(self, scenario: Scenario) -> float:
        """Queued over running jobs summed over every queue (AtlasBrokerUtils.get_total_nq_nr_ratio), once per
        snapshot: 0 when nothing runs."""
        cache = self._snapshot_cache(scenario)
        if "grand queue ratio" not in cache:
            queued = running = 0.0
            for stats in scenario.queue_stats.values():
                queued += sum(as_float(stats.get(key)) for key in ("defined", "assigned", "activated", "starting"))
                running += as_float(stats.get("running"))
            cache["grand queue ratio"] = queued / running if running > 0 else 0.0
        return cache["grand queue ratio"]

    @staticmethod
    def endpoint_terms(context: Context, locations):
        """The analysis broker's endpoint check (AtlasAnalJobBroker 1224, 1.0.4): every endpoint type; the queues
        that passed the data locality check of this loop stand where production's nucleus queues do, and none
        without it; no complete-copy exception."""
        checked = (
            "data locality" not in context.plugin.disabled_filters
            and bool(context.scenario.datasets)
            and (context.config.get("ANALYSIS_LOCALITY_RULE") == "panda" or not locality_suppressed(context.scenario))
        )
        return None, np.full(len(context.names), checked, dtype=bool), None

    filters = (
        analysis_rules.ANALYSIS_INPUT_COMPLETE,
        analysis_rules.ANALYSIS_EXCLUDED_SITES,
        analysis_rules.ANALYSIS_INCLUDED_SITES,
        analysis_rules.ANALYSIS_QUEUE_STATUS,
        analysis_rules.ANALYSIS_ZERO_SHARE,
        analysis_rules.ANALYSIS_MAX_IO_INTENSITY,
        analysis_rules.ANALYSIS_DATA_LOCALITY,
        analysis_rules.ANALYSIS_DISK_IO,
        analysis_rules.ANALYSIS_CORE_COUNT,
        analysis_rules.ANALYSIS_VIRTUAL_PLACEMENT,
        analysis_rules.ANALYSIS_SOFTWARE,
        analysis_rules.ANALYSIS_MEMORY,
        analysis_rules.ANALYSIS_DISK,
        analysis_rules.ANALYSIS_STORAGE_ENDPOINTS,
        analysis_rules.ANALYSIS_WALLTIME,
        analysis_rules.ANALYSIS_PILOTS,
        analysis_rules.ANALYSIS_CLOSED_JOBS,
        analysis_rules.ANALYSIS_INCLUDED_AUTO,
        analysis_rules.ANALYSIS_HOSPITAL,
        # temporary issues
        analysis_rules.ANALYSIS_BAD_JOBS,
        analysis_rules.ANALYSIS_QUEUE_LENGTH,
        analysis_rules.ANALYSIS_STABILIZER,
        analysis_rules.ANALYSIS_LOCAL_DATA_ONLY,
    )


# ANALYSIS_SITES_RULE panda: AtlasAnalJobBroker.doBrokerage's order (1.0.4): the input's completeness before the
# loops; in each loop the input data check (data locality) first, the status, zero share, disk IO, max IO intensity,
# VP, core count, GPU architecture and closed-jobs checks, software, memory, scratch disk, storage, walltime and
# pilots, then the include/exclude check (which the seed's order asks second), the preassign check (a task
# pre-assigned to a queue is scanned over every queue, its own kept alone here), the hospital and the overload checks.
# The seed's disk rule is its two real checks (scratch disk, then the storage floor at the storage space check); the
# problematic queues and those lacking local data go after the weights (late_skips). The survivors are the same in
# either order; which check names a queue failing several is the real one's (issue 53: the JEDI log comparison).
PANDA_ONLY_FILTERS = (
    analysis_rules.ANALYSIS_PREASSIGNED,
    analysis_rules.ANALYSIS_SCRATCH_DISK,
    analysis_rules.ANALYSIS_STORAGE_SPACE,
    analysis_rules.ANALYSIS_ARCHITECTURE,
)
ANALYSIS_PANDA_ORDER = (  # the filters' names
    "input complete",
    "data locality",
    "queue status",
    "zero share",
    "disk IO",
    "max IO intensity",
    "virtual placement",
    "core count",
    "architecture",
    "closed jobs",
    "software",
    "memory",
    "scratch disk",
    "storage space",
    "storage endpoints",
    "walltime",
    "pilots",
    "excluded sites",
    "included sites",
    "included sites (AUTO)",
    "preassigned",
    "hospital",
    "queue length",
    "bad jobs",
    "analysis stabilizer",
    "local data only",
)

# the persistent filters: up to the walltime check (the pilots and closed-jobs checks and what follows are not)
PERSISTENT = {
    f.name for f in AtlasAnalJobBroker.filters[: [f.name for f in AtlasAnalJobBroker.filters].index("walltime") + 1]
}
