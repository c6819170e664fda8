"""ATLAS production task brokerage: choose the nucleus of a task (seed 000, "ATLAS Production Task Brokerage").

Flow: the nuclei, filtered by status, full-chain rules, transfer backlog, storage, space, WAN activities and
data locality; the survivors weighed by free space, remaining work and local input; one drawn in proportion to
weight. All skipped: the task is pending and retried after 30 minutes.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from brokerage.engine.core.decision import Decision, Skip, Stage
from brokerage.engine.core.plugin import NOTHING_FAILS, Context, Filter, Plugin, Rejection, Variants, among
from brokerage.engine.core.reasons import reason_title
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda.input_data import input_incomplete, unreadable_over_wan
from brokerage.engine.panda.job_broker import AtlasProdJobBroker, job_check_decision
from brokerage.engine.panda.records import (
    DOWNTIME_STATUSES,
    cloud_missing,
    nucleus_bare_mode,
    queue_site,
    runs_production,
)

# seed 000 / REFERENCE.md: weight uses max(rwOffset, RW) with rwOffset = 50
RW_OFFSET = 50.0
# REFERENCE.md: normalizedExpOutSize × RW = RW / (corePower 10) / 86400 × 0.25 GB
CORE_POWER = 10.0
OUTPUT_GB_PER_CORE_DAY = 0.25
# REFERENCE.md: tapeWeight 0.001 when the input is only on tape at the nucleus
TAPE_WEIGHT = 0.001
# gdpconfig keeps DISK_THRESHOLD and FREE_DISK_CUTOFF in TB; storage sizes are GB (docs/decisions.md)
GB_PER_TB = 1024.0


def expected_output_gb(rw: np.ndarray | float) -> np.ndarray | float:
    """normalizedExpOutSize × RW: the output the nucleus's remaining work will still write, in GB."""
    return rw / CORE_POWER / 86400.0 * OUTPUT_GB_PER_CORE_DAY


# how many skipped queues a nucleus's job-check skip names before "and N more"
QUEUES_NAMED = 3


def _dataset_type(name: str) -> str:
    """DataServiceUtils.getDatasetType (1.0.4): the fifth dot-separated part of the name, '' when it has none."""
    parts = name.split(".")
    return parts[4] if len(parts) > 4 else ""


def _best_copy(held: tuple, dataset, endpoint, replica) -> tuple:
    """One more copy of `dataset` a nucleus reads, folded into what it holds (files, GB, disk files, disk GB, done):
    a complete disk copy ends the scan; otherwise the most complete disk copy, and over disk and tape the most
    complete one (AtlasBrokerUtils.getNucleiWithData, 1.0.4)."""
    files, size, disk_files, disk, done = held
    if done:
        return held
    if not endpoint.is_tape:
        if replica.nFiles == dataset.nFiles and dataset.nFiles > 0:
            return (replica.nFiles, replica.sizeGB, replica.nFiles, replica.sizeGB, True)
        if replica.nFiles > disk_files:
            disk_files, disk = replica.nFiles, replica.sizeGB
    if files < replica.nFiles:
        files, size = replica.nFiles, replica.sizeGB
    return (files, size, disk_files, disk, False)


def _nucleus_inputs(scenario: Scenario, position: dict[str, int]) -> dict[str, list[int]]:
    """Endpoint → the nuclei (positions) that count a copy there as theirs: the endpoints their production queues
    read (NucleusSpec.is_associated_for_input: read_lan, not blacklisted for reading; AtlasBrokerUtils.py 71,
    1.0.4); a nucleus without queues (a scenario that lists none) by the endpoints at its site."""
    readers: dict[str, set[int]] = {}
    with_queues: set[int] = set()
    for record in scenario.queues.values():
        i = position.get(queue_site(record))
        if i is None or not runs_production(record) or cloud_missing(record):
            continue
        with_queues.add(i)
        for name in (record.get("astorages") or {}).get("read_lan") or []:
            endpoint = scenario.ddm_endpoints.get(name)
            if endpoint is None or not endpoint.blacklisted:
                readers.setdefault(name, set()).add(i)
    for name, endpoint in scenario.ddm_endpoints.items():
        i = position.get(endpoint.site)
        if i is not None and i not in with_queues:
            readers.setdefault(name, set()).add(i)
    return {name: sorted(found) for name, found in readers.items()}


def _queues_skipped(check, site: str) -> str:
    """The queues of `site` job brokerage skipped, each with the reason, for the job check's skip."""
    names = check.queues.get(site, ())
    if not names:
        return "no production queue"
    skipped = [name for name in names if name in check.skips]
    text = "; ".join(f"{name}: {reason_title(check.skips[name][0])}" for name in skipped[:QUEUES_NAMED])
    if len(skipped) > QUEUES_NAMED:
        text += f"; and {len(skipped) - QUEUES_NAMED} more"
    return text


def space_before_wan(order: tuple[Filter, ...]) -> tuple[Filter, ...]:
    """TASK_ENDPOINT_RULE seed: the order as given (seed 000 lists storage, space, then WAN)."""
    return order


@functools.cache
def wan_before_space(order: tuple[Filter, ...]) -> tuple[Filter, ...]:
    """TASK_ENDPOINT_RULE panda: the endpoint check reads an endpoint's read_wan, then its write_wan, then its space
    (AtlasProdTaskBroker.py 346-371, 1.0.4), so a nucleus failing both is skipped for its WAN (issue 53: the JEDI
    log comparison found ours naming the space)."""
    names = [rule.name for rule in order]
    wan, space = names.index("WAN read/write"), names.index("disk space")
    if wan < space:
        return order
    swapped = list(order)
    swapped[wan], swapped[space] = order[space], order[wan]
    return tuple(swapped)


# Decision.asides' keys: the job check's own job brokerage (also the decision's arrays' key for it), and the nuclei
# with no production queue, which the real site mapper does not know as nuclei (SiteMapper
# .collect_nuclei_and_satellites builds them from the production queues, 1.0.4)
JOB_CHECK_KEY = "job check"
UNLISTED_KEY = "no production queue"


def _input_only_job_check(scenario: Scenario, nuclei: list[str], dataset: str) -> Decision:
    """The job check of a scenario without queues as its own job brokerage, each nucleus standing for its queues:
    all of them skipped at the input's completeness when `dataset` has no complete copy (the real job broker then
    ends with "D is incomplete at any online storage"), else all kept."""
    skip = Skip("input_missing", "input complete", {"dataset": dataset})
    return job_check_decision(
        scenario,
        initial=nuclei,
        kept=() if dataset else nuclei,
        skipped={name: skip for name in nuclei} if dataset else {},
        stages=(Stage("input complete", len(nuclei), 0 if dataset else len(nuclei)),),
    )


class AtlasProdTaskBroker(Plugin):
    name = "atlas_prod_task"
    candidate_kind = "nucleus"
    retry_after_minutes = 30  # seed 000: "the task is pending for 30 min and then gets retried"
    frame_keys = {
        "state": "state",
        "bareNucleus": "bare",
        "outputQueued": "queued",
        "spaceFree": "space_free",
        "spaceExpired": "space_expired",
        "spaceFreeGB": "space_free",
        "spaceExpiredGB": "space_expired",
        "spaceTotalGB": "space_total",
        "RW": "rw",
        "rwUsed": "rw_used",
        "expectedOutputGB": "expected_output",
        "spaceAvailable": "space_available",
        "endpoint": "wan_endpoint",
        "read_wan": "read_wan",
        "write_wan": "write_wan",
        "blacklisted": "blacklisted",
    }

    def initial_candidates(self, scenario: Scenario) -> list[str]:
        nuclei = sorted(name for name, site in scenario.sites.items() if site.role == "nucleus")
        if scenario.task.fullChain and scenario.config.get("FULL_CHAIN_RULE") == "panda":
            # AtlasProdTaskBroker.py 224-229 (1.0.4): a full-chain task also takes the satellites in bare-nucleus
            # mode (their first production queue's catchall, else the site's) as nuclei
            first = self.job_broker.first_queues(scenario)
            nuclei += sorted(
                name
                for name, site in scenario.sites.items()
                if site.role == "satellite" and name in first and nucleus_bare_mode(first[name], site.bareNucleus)
            )
        return nuclei

    def prepare(self, scenario: Scenario, names: list[str]) -> dict[str, Any]:
        task = scenario.task
        n = len(names)
        position = {name: i for i, name in enumerate(names)}
        first = self.job_broker.first_queues(scenario)
        arrays: dict[str, Any] = {
            "state": np.array([scenario.sites[name].state for name in names], dtype=object),
            "bare": np.array(
                [nucleus_bare_mode(first.get(name), scenario.sites[name].bareNucleus) for name in names],
                dtype=object,
            ),
            "rw": np.array(
                [scenario.nucleus_stats[name].rw if name in scenario.nucleus_stats else 0.0 for name in names],
                dtype=float,
            ),
        }
        # Output queued to the nucleus: its own figure, else the files queued on the links into it.
        queued = np.zeros(n)
        for link in scenario.network:
            if link.dst in position:
                queued[position[link.dst]] += link.queued
        for name, stats in scenario.nucleus_stats.items():
            if name in position and stats.outputQueued is not None:
                queued[position[name]] = stats.outputQueued
        arrays["queued"] = queued.astype(int)
        arrays["rw_used"] = np.maximum(RW_OFFSET, arrays["rw"])
        arrays["expected_output"] = expected_output_gb(arrays["rw"])

        # The nucleus's storage for the task's output (endpoints of that type at the nucleus).
        for key in ("n_endpoints", "space_free", "space_expired", "space_total"):
            arrays[key] = np.zeros(n)
        wan_ok = np.ones(n, dtype=bool)
        endpoint_name = np.full(n, "", dtype=object)
        read_wan = np.full(n, "", dtype=object)
        write_wan = np.full(n, "", dtype=object)
        blacklisted = np.zeros(n, dtype=bool)
        for endpoint_key, endpoint in sorted(scenario.ddm_endpoints.items()):
            i = position.get(endpoint.site)
            if i is None or endpoint.type != task.outputEndpointType:
                continue
            arrays["n_endpoints"][i] += 1
            arrays["space_free"][i] += endpoint.space_free
            arrays["space_expired"][i] += endpoint.space_expired
            arrays["space_total"][i] += endpoint.space_total
            ok = (
                endpoint.activity("read_wan") == "ON"
                and endpoint.activity("write_wan") == "ON"
                and not endpoint.blacklisted
            )
            if wan_ok[i] and not ok:
                endpoint_name[i] = endpoint_key
                read_wan[i], write_wan[i] = endpoint.activity("read_wan"), endpoint.activity("write_wan")
                blacklisted[i] = endpoint.blacklisted
            wan_ok[i] &= ok
        arrays.update(
            wan_ok=wan_ok, wan_endpoint=endpoint_name, read_wan=read_wan, write_wan=write_wan, blacklisted=blacklisted
        )
        arrays["space_available"] = arrays["space_free"] + arrays["space_expired"] - arrays["expected_output"]

        # Data locality: the datasets considered (seed 000 taskBrokerOnMaster), what each nucleus holds.
        datasets = [d for d in scenario.datasets if d.master] if task.taskBrokerOnMaster else list(scenario.datasets)
        # DBRelease datasets (ddo*) and log datasets say nothing of where the task's data is (AtlasProdTaskBroker.py
        # 246-252, 1.0.4: DataServiceUtils.isDBR, datasetTypeToSkipCheck)
        datasets = [d for d in datasets if not d.name.startswith("ddo") and _dataset_type(d.name) != "log"]
        local_size, local_files = np.zeros(n), np.zeros(n)
        on_disk = np.zeros(n, dtype=bool)
        on_tape = np.zeros(n, dtype=bool)
        for dataset in datasets:
            best_size, best_files = np.zeros(n), np.zeros(n)
            for endpoint_key, replica in dataset.replicas.items():
                endpoint = scenario.ddm_endpoints.get(endpoint_key)
                i = position.get(endpoint.site) if endpoint is not None else None
                if i is None:
                    continue
                # Copies on several endpoints of one nucleus count once: the most complete one.
                best_size[i] = max(best_size[i], replica.sizeGB)
                best_files[i] = max(best_files[i], replica.nFiles)
                if endpoint.is_tape:
                    on_tape[i] = True
                else:
                    on_disk[i] = True
            local_size += best_size
            local_files += best_files
        arrays.update(
            local_size=local_size,
            local_files=local_files,
            total_size=float(sum(d.sizeGB for d in datasets)),
            total_files=float(sum(d.nFiles for d in datasets)),
            tape_only=on_tape & ~on_disk,
        )
        self._prepare_panda(scenario, names, position, datasets, arrays)
        return arrays

    @staticmethod
    def _prepare_panda(scenario: Scenario, names, position, datasets, arrays: dict[str, Any]) -> None:
        """The figures panda-server 1.0.4 reads (AtlasProdTaskBroker, AtlasBrokerUtils.getNucleiWithData)."""
        task, n = scenario.task, len(names)
        # the first endpoint of the output type at each nucleus (NucleusSpec.getAssociatedEndpoint), its usable
        # space (free + expired) and WAN activities; the projected output of the remaining work in whole GB
        first = np.full(n, "", dtype=object)
        usable, total = np.zeros(n), np.zeros(n)
        read_wan, write_wan = np.full(n, "", dtype=object), np.full(n, "", dtype=object)
        for endpoint_key, endpoint in sorted(scenario.ddm_endpoints.items()):
            i = position.get(endpoint.site)
            if i is None or first[i] or endpoint.type != task.outputEndpointType:
                continue
            first[i] = endpoint_key
            usable[i] = endpoint.space_free + endpoint.space_expired
            total[i] = endpoint.space_total
            read_wan[i], write_wan[i] = endpoint.activity("read_wan"), endpoint.activity("write_wan")
        to_use = np.floor(arrays["rw"] / 10 / 24 / 3600 * 0.25)
        arrays.update(
            first_endpoint=first,
            first_usable=usable,
            first_total=total,
            first_read_wan=read_wan,
            first_write_wan=write_wan,
            to_use=to_use,
            usable_after=usable - to_use,
        )
        # input per nucleus, per dataset: a complete disk copy ends the scan of its endpoints; otherwise the most
        # complete disk copy, and over disk and tape the most complete one ("any"); summed over the datasets as
        # AtlasProdTaskBroker sums getNucleiWithData's figures
        any_size, any_files, disk_size = np.zeros(n), np.zeros(n), np.zeros(n)
        input_size, input_files = 0.0, 0.0
        readers = _nucleus_inputs(scenario, position)
        for dataset in datasets:
            best = {}
            for endpoint_key, replica in dataset.replicas.items():
                endpoint = scenario.ddm_endpoints.get(endpoint_key)
                for i in readers.get(endpoint_key, ()) if endpoint is not None else ():
                    best[i] = _best_copy(best.get(i, (0.0, 0.0, 0.0, 0.0, False)), dataset, endpoint, replica)
            for i, (files, size, _, disk, _) in best.items():
                any_files[i] += files
                any_size[i] += size
                disk_size[i] += disk
            input_size, input_files = input_size + dataset.sizeGB, input_files + dataset.nFiles
        arrays.update(
            any_size=any_size,
            any_files=any_files,
            disk_size=disk_size,
            input_total_size=input_size,
            input_total_files=input_files,
            # a complete copy readable over WAN somewhere, else the task cannot be brokered at all
            input_unreadable=unreadable_over_wan(scenario, datasets),
        )

    def weigh(self, context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """The nuclei's weights by TASK_WEIGHT_RULE (_weigh_seed, _weigh_panda)."""
        return self.WEIGHTS.pick(context.config)(context, survivors)

    @staticmethod
    def _weigh_seed(context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        config, task = context.config, context.task
        free = context["space_free"][survivors]
        expired = context["space_expired"][survivors]
        total_space = context["space_total"][survivors]
        rw = context["rw"][survivors]
        cutoff_gb = config.get("FREE_DISK_CUTOFF") * GB_PER_TB
        tape_weight = np.where(context["tape_only"][survivors], TAPE_WEIGHT, 1.0)
        local = context["local_size"][survivors]
        total_input = context["total_size"]
        io_intensive = (task.ioIntensity or 0.0) > config.get("MIN_IO_INTENSITY_WITH_LOCAL_DATA")
        denominator = np.maximum(RW_OFFSET, rw) * total_space
        numerator = tape_weight * (free + expired) * np.minimum(cutoff_gb, free)
        # Guard (docs/decisions.md): with no input at all the local-input formula has no meaning, so the plain
        # one applies; a nucleus reporting no total space gets weight 0 instead of a division by zero.
        use_local = io_intensive and total_input > 0
        if use_local:
            numerator = numerator * local / total_input
        with np.errstate(divide="ignore", invalid="ignore"):
            weights = np.where(denominator > 0, numerator / denominator, 0.0)
        factors = {
            "formula": "local input" if use_local else "space and RW",
            "tapeWeight": tape_weight,
            "spaceFreeGB": free,
            "spaceExpiredGB": expired,
            "spaceTotalGB": total_space,
            "spaceFreeCutoffGB": cutoff_gb,
            "RW": rw,
            "rwUsed": context["rw_used"][survivors],
        }
        if use_local:
            factors.update(localInputGB=local, totalInputGB=total_input)
        return weights, factors

    @staticmethod
    def _weigh_panda(context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """AtlasProdTaskBroker "weight" (panda-server 1.0.4): 1/RW (1 under RW 50); the local input share when
        ioIntensity is unknown or above MIN_IO_INTENSITY_WITH_LOCAL_DATA, and 0.001 when tape holds more of the
        input than disk, unless locality was switched off; then the free fraction and min(FREE_DISK_CUTOFF, whole
        TB free), free being usable space minus the expected output."""
        config, task = context.config, context.task
        rw = context["rw"][survivors]
        weights = np.where(rw >= RW_OFFSET, 1.0 / np.where(rw > 0, rw, 1.0), 1.0)
        factors: dict[str, Any] = {"RW": rw, "rwFactor": weights.copy()}
        total_input = context["input_total_size"]
        if context.arrays.get("locality_on", True) and context.scenario.datasets and total_input > 0:
            any_size, disk_size = context["any_size"][survivors], context["disk_size"][survivors]
            io = task.ioIntensity
            if io is None or io > config.get("MIN_IO_INTENSITY_WITH_LOCAL_DATA"):
                weights = weights * any_size / total_input
                factors.update(localInputGB=any_size, totalInputGB=total_input)
            tape = np.where(any_size > disk_size, TAPE_WEIGHT, 1.0)
            weights = weights * tape
            factors["tapeWeight"] = tape
        free, total = context["usable_after"][survivors], context["first_total"][survivors]
        free_tb = np.floor(free / GB_PER_TB)
        with np.errstate(divide="ignore", invalid="ignore"):
            space = np.where(total > 0, free / total * np.minimum(config.get("FREE_DISK_CUTOFF"), free_tb), 1.0)
        factors.update(spaceFreeGB=free, spaceTotalGB=total, freeTB=free_tb)
        return weights * space, factors

    WEIGHTS = Variants("TASK_WEIGHT_RULE", seed=_weigh_seed, panda=_weigh_panda)

    def decision_asides(self, context: Context) -> dict[str, Any]:
        """The job check's job brokerage, when it ran (read without making the arrays of a decision whose nuclei
        all went before them), and the nuclei without a production queue when the scenario has queues."""
        asides: dict[str, Any] = {}
        check = dict.get(context.arrays, JOB_CHECK_KEY)
        if check is not None:
            asides[JOB_CHECK_KEY] = check
        if context.scenario.queues:
            first = self.job_broker.first_queues(context.scenario)
            unlisted = frozenset(name for name in context.names if name not in first)
            if unlisted:
                asides[UNLISTED_KEY] = unlisted
        return asides

    # --- filters, in the order of seed 000 ---

    @functools.cached_property
    def job_broker(self) -> AtlasProdJobBroker:
        """The job broker the job check asks, kept so that its per-snapshot arrays serve every task of a cycle."""
        return AtlasProdJobBroker()

    @staticmethod
    def _job_check(context: Context) -> Rejection:
        """AtlasProdTaskBroker "job check" (1.0.4): job brokerage, as the task broker asks it, over the production
        queues of the nuclei still in the running; a nucleus none of whose queues it keeps is skipped (-job). A
        scenario without queues is checked for what fails every queue at once, the input's completeness."""
        n = len(context.names)
        if not context.config.get("TASK_JOB_CHECK"):
            return Rejection(np.zeros(n, dtype=bool))
        scenario = context.scenario
        alive = [name for name, ok in zip(context.names, context.alive.tolist(), strict=True) if ok]
        if not scenario.queues:
            dataset = input_incomplete(scenario)
            context.arrays[JOB_CHECK_KEY] = _input_only_job_check(scenario, alive, dataset)
            return Rejection(
                np.full(n, bool(dataset), dtype=bool),
                {"rule": f"{dataset} has no complete copy readable anywhere"},
            )
        check = context.plugin.job_broker.job_check(scenario, alive)
        context.arrays[JOB_CHECK_KEY] = check.decision
        queues = np.array([len(check.queues.get(name, ())) for name in context.names], dtype=int)
        able = np.array([len(check.kept.get(name, ())) for name in context.names], dtype=int)
        why = np.array([_queues_skipped(check, name) for name in context.names], dtype=object)
        return Rejection(able == 0, {"queues": queues, "queuesAble": able, "queuesSkipped": why})

    @staticmethod
    def _input_copy(context: Context) -> Rejection:
        dataset = context["input_unreadable"]
        missing = bool(context.config.get("TASK_INPUT_COPY_REQUIRED")) and bool(dataset)
        return Rejection(
            np.full(len(context.names), missing, dtype=bool), {"readableCompleteCopy": False, "dataset": dataset}
        )

    @staticmethod
    def _status(context: Context) -> Rejection:
        return Rejection(context["state"] != "ACTIVE", {"state": context["state"], "required": "ACTIVE"})

    @staticmethod
    def _full_chain(context: Context) -> Rejection:
        """seed 000, full-chain: only → bareNucleus=only; require → only or allow; capable → the parent's nucleus
        when the parent went to a bare nucleus, otherwise no constraint; normal tasks avoid bareNucleus=only."""
        task = context.task
        bare = context["bare"]
        names = np.array(context.names, dtype=object)
        mode = task.fullChain
        if mode == "only":
            fails, rule = bare != "only", "fullChain=only needs bareNucleus=only"
        elif mode == "require":
            fails, rule = ~among(bare, ("only", "allow")), "fullChain=require needs bareNucleus=only or allow"
        elif mode == "capable" and task.parentBareNucleus in ("only", "allow") and task.parentNucleus:
            fails, rule = names != task.parentNucleus, f"fullChain=capable follows the parent to {task.parentNucleus}"
        else:
            fails, rule = bare == "only", "a bareNucleus=only nucleus accepts only full-chain tasks"
        return Rejection(fails, {"fullChain": mode, "bareNucleus": bare, "rule": rule})

    @staticmethod
    def _full_chain_check_panda(context: Context) -> Rejection:
        """FULL_CHAIN_RULE panda (below), over the nuclei's bareNucleus values."""
        return AtlasProdTaskBroker._full_chain_panda(context, context["bare"], np.array(context.names, dtype=object))

    @staticmethod
    def _full_chain_panda(context: Context, bare: np.ndarray, names: np.ndarray) -> Rejection:
        """FULL_CHAIN_RULE panda (AtlasProdTaskBroker "check for full chain", 1.0.4 505-535, issue 33 D8): a
        bareNucleus=only nucleus takes tasks with any fullChain value; only and require need a bare nucleus (only
        or allow); a full-chain task whose parent ran at a bare nucleus follows the parent there."""
        task = context.task
        mode = task.fullChain
        parent_on_bare = bool(mode) and bool(task.parentNucleus) and task.parentBareNucleus in ("only", "allow")
        normal_refused = (bare == "only") & (not mode)
        bare_needed = ~among(bare, ("only", "allow")) & (mode in ("only", "require"))
        elsewhere = (names != task.parentNucleus) & parent_on_bare
        rule = np.where(
            normal_refused,
            "a bareNucleus=only nucleus accepts only full-chain tasks",
            np.where(
                bare_needed,
                f"fullChain={mode} needs a bare nucleus (only or allow)",
                f"the parent of the full chain ran at {task.parentNucleus}",
            ),
        )
        return Rejection(
            normal_refused | bare_needed | elsewhere, {"fullChain": mode, "bareNucleus": bare, "rule": rule}
        )

    @staticmethod
    def _transfer_backlog(context: Context) -> Rejection:
        """Skip nuclei with long transfer backlogs unless t1Weight < 0 (seed 000). 'Below 2000 files' passes
        (seed 002), so a queue of exactly NQUEUED_NUC_CAP files is a backlog."""
        cap = context.config.get("NQUEUED_NUC_CAP")
        if (context.task.t1Weight or 0) < 0:
            return NOTHING_FAILS
        queued = context["queued"]
        backlog = queued > cap if context.config.get("TASK_BACKLOG_STRICT") else queued >= cap
        return Rejection(backlog, {"outputQueued": queued, "cap": cap})

    @staticmethod
    def _storage_panda(context: Context) -> Rejection:
        """TASK_ENDPOINT_RULE panda: the nucleus's first endpoint of the output's type is the one that counts."""
        return Rejection(
            context["first_endpoint"] == "",
            {"endpointType": context.task.outputEndpointType, "endpoints": 0, "rule": "no storage for the output"},
        )

    @staticmethod
    def _storage(context: Context) -> Rejection:
        """seed 000: a nucleus without an endpoint of the output's type."""
        return Rejection(
            context["n_endpoints"] == 0,
            {"endpointType": context.task.outputEndpointType, "endpoints": 0, "rule": "no storage for the output"},
        )

    @staticmethod
    def _space(context: Context) -> Rejection:
        """seed 000: free + expired − the output expected there must be above DISK_THRESHOLD (per gshare)."""
        available = context["space_available"]
        return AtlasProdTaskBroker._space_rejection(
            context,
            lambda threshold_gb: ~(available > threshold_gb),
            free=context["space_free"],
            expired=context["space_expired"],
            expected=context["expected_output"],
            available=available,
        )

    @staticmethod
    def _space_panda(context: Context) -> Rejection:
        """AtlasProdTaskBroker: usable (free + expired) − int(RW / 10 / 86400 × 0.25) < threshold is a shortage."""
        available = context["usable_after"]
        return AtlasProdTaskBroker._space_rejection(
            context,
            lambda threshold_gb: available < threshold_gb,
            free=context["first_usable"],
            expired=0,
            expected=context["to_use"],
            available=available,
        )

    @staticmethod
    def _space_rejection(context: Context, short, *, free, expired, expected, available) -> Rejection:
        """The disk-space verdict against DISK_THRESHOLD (TB, per gshare) with the numbers it compared."""
        task, config = context.task, context.config
        threshold_gb = config.get("DISK_THRESHOLD", gshare=task.gshare or None) * GB_PER_TB
        _, origin = config.explain("DISK_THRESHOLD", gshare=task.gshare or None)
        return Rejection(
            short(threshold_gb),
            {
                "spaceFree": free,
                "spaceExpired": expired,
                "expectedOutputGB": expected,
                "spaceAvailable": available,
                "thresholdGB": threshold_gb,
                "thresholdKey": origin if origin != "default" else "DISK_THRESHOLD default",
            },
        )

    @staticmethod
    def _wan_panda(context: Context) -> Rejection:
        """TASK_ENDPOINT_RULE panda: the first endpoint's read_wan and write_wan (source or destination)."""
        read_down = among(context["first_read_wan"], DOWNTIME_STATUSES)
        write_down = among(context["first_write_wan"], DOWNTIME_STATUSES)
        return Rejection(
            (read_down | write_down) & (context["first_endpoint"] != ""),
            {
                "endpoint": context["first_endpoint"],
                "read_wan": context["first_read_wan"],
                "write_wan": context["first_write_wan"],
                "blacklisted": False,
            },
            code=np.where(read_down, "source_blacklist", "destination_blacklist"),
        )

    @staticmethod
    def _wan(context: Context) -> Rejection:
        """seed 000: the nucleus's endpoints read and written over WAN, not blacklisted."""
        return Rejection(
            ~context["wan_ok"],
            {
                "endpoint": context["wan_endpoint"],
                "read_wan": context["read_wan"],
                "write_wan": context["write_wan"],
                "blacklisted": context["blacklisted"],
            },
        )

    @staticmethod
    def _locality(context: Context) -> Rejection:
        """seed 000 data locality: above INPUT_SIZE_THRESHOLD (GB) more than INPUT_SIZE_FRACTION % of the input
        size must be local; above INPUT_NUM_THRESHOLD files more than INPUT_NUM_FRACTION % of the files. The seed
        text compares the second with "the total input size"; we read the number of files, as seed 002 does."""
        task, config = context.task, context.config
        n = len(context.names)
        total_size, total_files = context["total_size"], context["total_files"]
        if task.inputPreStaging:  # data carousel guarantees completeness: both rules are ignored
            return Rejection(np.zeros(n, dtype=bool))
        size_percent = np.where(total_size > 0, 100.0 * context["local_size"] / max(total_size, 1e-300), 0.0)
        file_percent = np.where(total_files > 0, 100.0 * context["local_files"] / max(total_files, 1e-300), 0.0)
        size_rule = total_size > config.get("INPUT_SIZE_THRESHOLD")
        num_rule = total_files > config.get("INPUT_NUM_THRESHOLD")
        size_fails = size_rule & ~(size_percent > config.get("INPUT_SIZE_FRACTION"))
        num_fails = num_rule & ~(file_percent > config.get("INPUT_NUM_FRACTION"))
        code = np.where(size_fails, "insize", "innum")
        percent = np.where(size_fails, size_percent, file_percent)
        required = np.where(size_fails, config.get("INPUT_SIZE_FRACTION"), config.get("INPUT_NUM_FRACTION"))
        return Rejection(
            size_fails | num_fails,
            {
                "localSizeGB": context["local_size"],
                "totalSizeGB": total_size,
                "localFiles": context["local_files"].astype(int),
                "totalFiles": int(total_files),
                "localPercent": np.round(percent, 2),
                "requiredPercent": required,
            },
            code=code,
        )

    @staticmethod
    def _locality_panda(context: Context) -> Rejection:
        """AtlasProdTaskBroker "data locality" (1.0.4): above INPUT_SIZE_THRESHOLD GB the input at the nucleus
        (disk or tape) below INPUT_SIZE_FRACTION % of the total is too little; above INPUT_NUM_THRESHOLD files,
        fewer than INPUT_NUM_FRACTION % of them; a pre-staged task passes with any file at the nucleus."""
        task, config = context.task, context.config
        n = len(context.names)
        if not context.scenario.datasets:
            return Rejection(np.zeros(n, dtype=bool))
        total_size, total_files = context["input_total_size"], context["input_total_files"]
        any_size, any_files = context["any_size"], context["any_files"]
        size_fraction, num_fraction = config.get("INPUT_SIZE_FRACTION"), config.get("INPUT_NUM_FRACTION")
        prestaged = task.inputPreStaging & (any_files > 0)
        size_fails = ~prestaged & (total_size > config.get("INPUT_SIZE_THRESHOLD"))
        size_fails &= any_size < total_size * size_fraction / 100.0
        num_fails = ~prestaged & ~size_fails & (total_files > config.get("INPUT_NUM_THRESHOLD"))
        num_fails &= any_files < total_files * num_fraction / 100.0
        with np.errstate(divide="ignore", invalid="ignore"):
            percent = np.where(
                size_fails,
                100.0 * any_size / max(total_size, 1e-300),
                100.0 * any_files / max(total_files, 1e-300),
            )
        return Rejection(
            size_fails | num_fails,
            {
                "localSizeGB": any_size,
                "totalSizeGB": total_size,
                "localFiles": any_files.astype(int),
                "totalFiles": int(total_files),
                "localPercent": np.round(percent, 2),
                "requiredPercent": np.where(size_fails, size_fraction, num_fraction),
            },
            code=np.where(size_fails, "insize", "innum"),
        )

    @staticmethod
    def _locality_fallback(context: Context) -> str:
        """seed 000: the whole locality check is disabled when no nucleus passes and either (ioIntensity ≤
        MIN_IO_INTENSITY_WITH_LOCAL_DATA and total input ≤ MIN_INPUT_SIZE_WITH_LOCAL_DATA) or taskPriority ≥
        MAX_TASK_PRIO_WITH_LOCAL_DATA. An unknown ioIntensity counts as 0."""
        task, config = context.task, context.config
        io = task.ioIntensity or 0.0
        io_limit = config.get("MIN_IO_INTENSITY_WITH_LOCAL_DATA")
        size_limit = config.get("MIN_INPUT_SIZE_WITH_LOCAL_DATA")
        priority_limit = config.get("MAX_TASK_PRIO_WITH_LOCAL_DATA")
        if io <= io_limit and context["total_size"] <= size_limit:
            return (
                f"disabled: no nucleus passed, ioIntensity {io:g} ≤ {io_limit:g} kB/s and input "
                f"{context['total_size']:g} GB ≤ {size_limit:g} GB"
            )
        if task.taskPriority >= priority_limit:
            return f"disabled: no nucleus passed and taskPriority {task.taskPriority} ≥ {priority_limit}"
        return ""

    @staticmethod
    def _locality_fallback_panda(context: Context) -> str:
        """panda-server 1.0.4: as seed 000 but with currentPriority, and, once switched off, no data factor in the
        weight either."""
        task, config = context.task, context.config
        io = task.ioIntensity
        io_limit = config.get("MIN_IO_INTENSITY_WITH_LOCAL_DATA")
        size_limit = config.get("MIN_INPUT_SIZE_WITH_LOCAL_DATA")
        priority_limit = config.get("MAX_TASK_PRIO_WITH_LOCAL_DATA")
        size = context["input_total_size"]
        note = ""
        if (io is None or io <= io_limit) and size <= size_limit:
            note = (
                f"disabled: no nucleus passed, ioIntensity {'unknown' if io is None else f'{io:g}'} ≤ {io_limit:g} "
                f"kB/s and input {size:g} GB ≤ {size_limit:g} GB"
            )
        elif task.currentPriority >= priority_limit:
            note = f"disabled: no nucleus passed and currentPriority {task.currentPriority} ≥ {priority_limit}"
        if note:
            context.arrays["locality_on"] = False  # the weight then leaves the data factor out
        return note

    filters = (
        Filter("input copy", "input_missing", _input_copy),
        Filter("nucleus status", "status", _status),
        Filter(
            "full chain",
            "full_chain",
            Variants(
                "FULL_CHAIN_RULE",
                seed=_full_chain,
                panda=_full_chain_check_panda,
            ),
        ),
        Filter("transfer backlog", "transfer_backlog", _transfer_backlog),
        Filter("storage present", "space", Variants("TASK_ENDPOINT_RULE", seed=_storage, panda=_storage_panda)),
        Filter("disk space", "space", Variants("TASK_ENDPOINT_RULE", seed=_space, panda=_space_panda)),
        Filter("WAN read/write", "destination_blacklist", Variants("TASK_ENDPOINT_RULE", seed=_wan, panda=_wan_panda)),
        Filter("job check", "job", _job_check),
        Filter(
            "data locality",
            "insize",
            Variants("TASK_LOCALITY_RULE", seed=_locality, panda=_locality_panda),
            fallback=Variants("TASK_LOCALITY_RULE", seed=_locality_fallback, panda=_locality_fallback_panda),
        ),
    )

    # FULL_CHAIN_RULE panda: the real broker checks the full chain last, after the data check (AtlasProdTaskBroker
    # 1.0.4: data check 434-499, full-chain check 505-534); the order matters, the data check's fallback reading
    # whether any nucleus still in the running has the input
    PANDA_ORDER = (*(f for f in filters if f.name != "full chain"), *(f for f in filters if f.name == "full chain"))

    def filters_for(self, scenario: Scenario):
        """The seed's order, or FULL_CHAIN_RULE panda's (PANDA_ORDER); with TASK_ENDPOINT_RULE panda, the WAN rule
        before the space rule (wan_before_space)."""
        config = scenario.config
        return self.ENDPOINT_ORDERS.pick(config)(self.ORDERS.pick(config)(self))

    def _seed_order(self) -> tuple[Filter, ...]:
        return self.filters

    def _panda_order(self) -> tuple[Filter, ...]:
        return self.PANDA_ORDER

    ORDERS = Variants("FULL_CHAIN_RULE", seed=_seed_order, panda=_panda_order)
    ENDPOINT_ORDERS = Variants("TASK_ENDPOINT_RULE", seed=space_before_wan, panda=wan_before_space)
