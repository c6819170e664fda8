"""ATLAS production task brokerage: choose the nucleus of a task (seed 000, "ATLAS Production Task Brokerage").

Flow: the nuclei, filtered by status, full-chain rules, transfer backlog, storage, space, WAN activities and
data locality; the survivors weighed by free space, remaining work and local input; one drawn in proportion to
weight. All skipped: the task is pending and retried after 30 minutes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..plugin import Context, Filter, Plugin, Rejection
from ..scenario import Scenario

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
        return sorted(name for name, site in scenario.sites.items() if site.role == "nucleus")

    def prepare(self, scenario: Scenario, names: list[str]) -> dict[str, Any]:
        task = scenario.task
        n = len(names)
        position = {name: i for i, name in enumerate(names)}
        arrays: dict[str, Any] = {
            "state": np.array([scenario.sites[name].state for name in names], dtype=object),
            "bare": np.array([scenario.sites[name].bareNucleus for name in names], dtype=object),
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
        return arrays

    def weigh(self, context: Context, survivors: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
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

    # --- filters, in the order of seed 000 ---

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
            fails, rule = ~np.isin(bare, ["only", "allow"]), "fullChain=require needs bareNucleus=only or allow"
        elif mode == "capable" and task.parentBareNucleus in ("only", "allow") and task.parentNucleus:
            fails, rule = names != task.parentNucleus, f"fullChain=capable follows the parent to {task.parentNucleus}"
        else:
            fails, rule = bare == "only", "a bareNucleus=only nucleus accepts only full-chain tasks"
        return Rejection(fails, {"fullChain": mode, "bareNucleus": bare, "rule": rule})

    @staticmethod
    def _transfer_backlog(context: Context) -> Rejection:
        """Skip nuclei with long transfer backlogs unless t1Weight < 0 (seed 000). 'Below 2000 files' passes
        (seed 002), so a queue of exactly NQUEUED_NUC_CAP files is a backlog."""
        cap = context.config.get("NQUEUED_NUC_CAP")
        if (context.task.t1Weight or 0) < 0:
            return Rejection(np.zeros(len(context.names), dtype=bool))
        return Rejection(context["queued"] >= cap, {"outputQueued": context["queued"], "cap": cap})

    @staticmethod
    def _storage(context: Context) -> Rejection:
        return Rejection(
            context["n_endpoints"] == 0,
            {"endpointType": context.task.outputEndpointType, "endpoints": 0, "rule": "no storage for the output"},
        )

    @staticmethod
    def _space(context: Context) -> Rejection:
        task, config = context.task, context.config
        threshold_tb = config.get("DISK_THRESHOLD", gshare=task.gshare or None)
        _, origin = config.explain("DISK_THRESHOLD", gshare=task.gshare or None)
        threshold_gb = threshold_tb * GB_PER_TB
        available = context["space_available"]
        return Rejection(
            ~(available > threshold_gb),
            {
                "spaceFree": context["space_free"],
                "spaceExpired": context["space_expired"],
                "expectedOutputGB": context["expected_output"],
                "spaceAvailable": available,
                "thresholdGB": threshold_gb,
                "thresholdKey": origin if origin != "default" else "DISK_THRESHOLD default",
            },
        )

    @staticmethod
    def _wan(context: Context) -> Rejection:
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

    filters = (
        Filter("nucleus status", "status", _status),
        Filter("full chain", "full_chain", _full_chain),
        Filter("transfer backlog", "transfer_backlog", _transfer_backlog),
        Filter("storage present", "space", _storage),
        Filter("disk space", "space", _space),
        Filter("WAN read/write", "destination_blacklist", _wan),
        Filter("data locality", "insize", _locality, fallback=_locality_fallback),
    )
