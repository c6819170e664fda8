"""The arrays the production job broker's rules read: per queue, what the snapshot says (CRIC, statistics,
storage, network) built once per snapshot, and per decision the task's input at each queue and the running
counts, each group made when a rule first reads it (PreparedArrays)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from brokerage.engine.core.plugin import (
    PreparedArrays,
    overlay_producer,
)
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda.job_candidates import scans_in_preassigned_order
from brokerage.engine.panda.job_rules_resources import job_estimates
from brokerage.engine.panda.job_weights import running_used
from brokerage.engine.panda.network import network_weight
from brokerage.engine.panda.records import (
    ENDPOINT_ACTIVITIES,
    as_float,
    as_int,
    catchall,
    distinct,
    max_io_intensity,
    per_core_scaled,
    queue_options,
    runs_analysis,
)
from brokerage.engine.panda.urgency import is_express

TRANSFERRING_DEFAULT_LIMIT = 2000


class JobGrid:
    """prepare() and the per-snapshot grid (a part of AtlasProdJobBroker)."""

    # prepare()'s groups made only when a rule first reads one of their keys (PreparedArrays)
    NETWORK_KEYS = (
        "at_nucleus",
        "shares_nucleus_output",
        "queue_sites",
        "closeness",
        "link_queued",
        "network_weight",
        "queued_weight",
        "throughput_weight",
        "network_source",
        "nucleus_queued",
        "nucleus_read_wan",
        "nucleus_write_wan",
    )

    DATA_KEYS = (
        "total_size",
        "total_files",
        "local_size",
        "local_files",
        "missing_size",
        "missing_files",
        "missing_size_with_tape",
        "missing_files_with_tape",
        "assigned_used",
    )

    ESTIMATE_KEYS = (
        "direct_io",
        "job_cores",
        "memory_needed",
        "maxwdir_per_core",
        "disk_needed",
        "queue_corepower",
        "walltime_undefined",
        "walltime",
        "hs06_needed",
        "maxtime_hs06",
        "mintime_hs06",
    )

    RUNNING_KEYS = ("running_used", "bootstrap_empty")

    def prepare(self, scenario: Scenario, names: list[str]) -> PreparedArrays:
        """Per-queue arrays. What depends only on the snapshot (CRIC, statistics, storage) is computed once per
        snapshot and candidate list and reused by every job set brokered over it; per decision only the
        nucleus-, task- and configuration-dependent arrays are computed, as whole-array operations, each group
        when a rule first reads it."""
        grid = self._grid(scenario, names)
        arrays = grid.copy()
        task, config = scenario.task, scenario.config
        limit = config.get("MAX_DISKIO_DEFAULT")
        arrays["diskio_limit"] = np.where(
            np.isnan(grid["own_diskio_limit"]), np.nan if limit is None else limit, grid["own_diskio_limit"]
        )
        arrays["nucleus"] = task.nucleus
        if scans_in_preassigned_order.pick(config)(self, scenario):
            arrays["scan_order"] = np.arange(len(names), dtype=float)
        arrays.lazily(
            self.NETWORK_KEYS,
            lambda _: self._network(
                scenario, grid, task.nucleus, config.get("NQUEUED_SAT_CAP"), config.get("NW_THROUGHPUT_LOOKUP")
            ),
        )
        arrays.lazily(self.DATA_KEYS, overlay_producer(lambda target: self._prepare_data(scenario, grid, target)))
        arrays.lazily(
            self.ESTIMATE_KEYS,
            overlay_producer(lambda target: job_estimates(task, scenario.jobs, target, config)),
        )
        arrays.lazily(self.RUNNING_KEYS, overlay_producer(lambda target: self._prepare_running(scenario, grid, target)))
        return arrays

    def _prepare_running(self, scenario: Scenario, grid: dict[str, Any], arrays: dict[str, Any]) -> None:
        task, config = scenario.task, scenario.config
        # the real broker counts pilots only for a job set not pre-assigned ("selection for nPilot"): a pre-assigned
        # one sees none, so no queue bootstraps on its workers (AtlasProdJobBroker 1469-1500 and 1777-1785, 1.0.4)
        pilots_seen = not self.preassignment(scenario)[0]
        arrays["running_used"] = running_used(grid, task, config, pilots_seen=pilots_seen)
        # panda (BOOTSTRAP_EMPTY_QUEUES): a queue without any running or queued job gets weight 0 and goes first
        max_prio = config.get("MAX_PRIO_TO_BOOTSTRAP")
        queued = arrays["activated"] + arrays["assigned"] + arrays["starting"] + arrays["defined"]
        arrays["bootstrap_empty"] = (
            (arrays["running_used"] + queued == 0)
            & bool(config.get("BOOTSTRAP_EMPTY_QUEUES"))
            & (max_prio is None or task.currentPriority <= max_prio)
            & (not scenario.jobs.isMerge)
            & (not is_express(task, config))
        )

    def _grid(self, scenario: Scenario, names: list[str]) -> PreparedArrays:
        cache = self._snapshot_cache(scenario)
        # the candidates of the previous decision first: a cycle brokers job set after job set over the same ones,
        # and comparing the lists (their strings are the same objects) costs less than hashing a tuple of them
        last = cache.get("grid last")
        if last is not None and last[0] == names:
            return last[1]
        key = ("grid", tuple(names))
        if key not in cache:
            cache[key] = self._build_grid(scenario, names)
        cache["grid last"] = (list(names), cache[key])
        return cache[key]

    # The grid's columns from the CRIC record (name, dtype), in the order _record_row gives them.
    RECORD_COLUMNS = (
        ("status", object),
        ("site", object),
        ("capability", object),
        ("corecount", float),
        ("maxrss", float),
        ("minrss", float),
        ("maxwdir", float),
        ("unified_corecount", float),
        ("maxtime", float),
        ("mintime", float),
        ("direct_access_lan", bool),
        ("always_direct", bool),
        ("corepower", float),
        ("own_diskio_limit", float),
        ("input_endpoint", object),
        ("output_endpoint", object),
    )

    # ... and those only production rules read, made from the records when one of them first is
    PRODUCTION_COLUMNS = (
        ("pledgedcpu", float),
        ("wnconnectivity", object),
        ("fairsharepolicy", object),
        ("jobseed", object),
        ("allow_no_pilot", bool),
        ("transferring_limit", float),
    )

    # The grid's columns from the queue's statistics: (name, statistics key, default, conversion).
    STAT_COLUMNS = (
        ("running", "running", 0, as_int),
        ("activated", "activated", 0, as_int),
        ("assigned", "assigned", 0, as_int),
        ("starting", "starting", 0, as_int),
        ("defined", "defined", 0, as_int),
        ("transferring", "transferring", 0, as_int),
        ("nBatchJob", "nBatchJob", 0, as_int),
        ("runningCores", "runningCores", 0, as_int),
        ("num_slots", "numSlots", -1, as_int),
        ("pilots", "pilotsLast3h", np.nan, as_float),
        ("hours_since_start", "hoursSinceLastStart", np.nan, as_float),
        ("avg_diskio", "avgDiskIOPerCore", np.nan, as_float),
    )

    @staticmethod
    def _record_row(record: dict[str, Any]) -> tuple:
        """One queue's values for RECORD_COLUMNS, read in one pass over its record. parse_scenario has checked that
        every number read here is a number or null (check_queue_record), so they are taken as they are."""
        get = record.get
        corecount = get("corecount")
        unified_corecount = get("unified_corecount", corecount)
        diskio = get("maxdiskio")
        storages = get("astorages") or {}
        return (
            get("status", "online"),
            get("atlas_site") or get("site") or "",
            get("capability") or "",
            max(int(corecount), 1) if corecount is not None else 1,
            get("maxrss") or 0.0,
            get("minrss") or 0.0,
            get("maxwdir") or 0.0,
            max(int(unified_corecount), 1) if unified_corecount is not None else 1,
            get("maxtime") or 0.0,
            get("mintime") or 0.0,
            bool(get("direct_access_lan")),
            # maxinputsize -1: the queue always reads its input directly (SiteSpec.always_use_direct_io)
            get("maxinputsize") == -1,
            # CRIC's corepower as it is, 0 for none (EntityModule.getSiteInfo); the estimates read it by profile
            get("corepower") or 0.0,
            np.nan if diskio is None else diskio,
            (storages.get("read_lan") or [""])[0] or "",
            (storages.get("write_lan") or [""])[0] or "",
        )

    @classmethod
    def _record_rows(cls, scenario: Scenario, pairs: list[tuple[dict, str]], names: list[str]) -> list[tuple]:
        """_record_row for each candidate; a pseudo-queue's is its unified queue's with its own cores and memory
        limits, the only keys pseudo_queue_records sets (read once per unified queue, not once per type)."""
        rows, unified_rows = [], {}
        for (record, queue), name in zip(pairs, names, strict=True):
            if queue == name:
                rows.append(cls._record_row(record))
                continue
            base = unified_rows.get(queue)
            if base is None:
                base = unified_rows[queue] = cls._record_row(per_core_scaled(scenario.queues[queue]))
            get = record.get
            corecount, unified_corecount = get("corecount"), get("unified_corecount", get("corecount"))
            rows.append(
                (
                    *base[:3],
                    max(int(corecount), 1) if corecount is not None else 1,
                    get("maxrss") or 0.0,
                    get("minrss") or 0.0,
                    base[6],
                    max(int(unified_corecount), 1) if unified_corecount is not None else 1,
                    *base[8:],
                )
            )
        return rows

    @staticmethod
    def _production_row(record: dict[str, Any]) -> tuple:
        """One queue's values for PRODUCTION_COLUMNS."""
        get = record.get
        pledged, catchall_text = get("pledgedcpu"), get("catchall")
        return (
            np.nan if pledged is None else pledged,
            get("wnconnectivity") or "",
            get("fairsharepolicy") or "",
            get("jobseed") or "std",
            bool(catchall_text) and "allow_no_pilot" in catchall(catchall_text),
            int(get("transferringlimit") or 0) or TRANSFERRING_DEFAULT_LIMIT,
        )

    @classmethod
    def _columns(cls, rows: list[tuple], layout: tuple[tuple[str, type], ...]) -> dict[str, np.ndarray]:
        """Rows of values in `layout`'s order as one array per column."""
        # rows of one length by construction: a strict zip would check it again, value by value
        columns = list(zip(*rows, strict=False)) if rows else [()] * len(layout)
        return {key: np.array(values, dtype=dtype) for (key, dtype), values in zip(layout, columns, strict=True)}

    def _build_grid(self, scenario: Scenario, names: list[str]) -> PreparedArrays:
        known = self.queue_records(scenario)
        # a pseudo-queue reads its unified queue's statistics, pilots and software (panda-server 1.0.4)
        pairs = [known.get(name) or (scenario.queues[name], name) for name in names]
        records = [record for record, _ in pairs]
        unified = [queue for _, queue in pairs]
        # the statistics are read once per queue, whose pseudo-queues share them
        distinct_queues = {queue: position for position, queue in enumerate(dict.fromkeys(unified))}
        queue_stats = [scenario.queue_stats.get(queue, {}) for queue in distinct_queues]
        stats = [queue_stats[distinct_queues[queue]] for queue in unified]
        arrays = PreparedArrays()
        arrays.update(self._columns(self._record_rows(scenario, pairs, names), self.RECORD_COLUMNS))
        arrays.lazily(
            [key for key, _ in self.PRODUCTION_COLUMNS],
            lambda _: self._columns([self._production_row(record) for record in records], self.PRODUCTION_COLUMNS),
        )
        shared = len(distinct_queues) < len(unified)
        arrays.update(self._stat_columns(queue_stats, [distinct_queues[q] for q in unified] if shared else None))
        arrays["unified"] = np.array(unified, dtype=object)
        arrays["is_pseudo"] = np.array([u != name for u, name in zip(unified, names, strict=True)], dtype=bool)
        arrays["running_real"] = arrays["running"]
        arrays["activated_real"] = arrays["activated"]
        arrays["running_cores"] = arrays["runningCores"]
        arrays.lazily(self.ACTIVITY_KEYS, lambda grid: self._grid_activities(scenario, grid))
        arrays.lazily(self.SPACE_KEYS, lambda grid: self._grid_space(scenario, grid))
        arrays.lazily(("readers",), lambda _: {"readers": self._grid_readers(records)})
        arrays.lazily(self.DERIVED_KEYS, lambda grid: self._grid_derived(scenario, names, stats, grid))
        arrays.lazily(self.CATCHALL_KEYS, lambda grid: self._grid_catchall(scenario, names, grid))
        return arrays

    # what some rules read of the grid (the production broker's): made when one of them first does
    DERIVED_KEYS = (
        "scan_order",
        "policy_values",
        "policy_index",
        "connectivity_values",
        "connectivity_index",
        "has_stats",
    )

    def _grid_derived(self, scenario: Scenario, names: list[str], stats: list[dict], grid) -> dict[str, Any]:
        order = self._scan_positions(scenario)
        derived = {
            "scan_order": np.array([order.get(name, len(order)) for name in names], dtype=float),
            "has_stats": np.array([bool(st) for st in stats], dtype=bool),
        }
        # rules read per distinct string: the distinct values and, per queue, which one it has
        derived["policy_values"], derived["policy_index"] = distinct(grid["fairsharepolicy"].tolist())
        derived["connectivity_values"], derived["connectivity_index"] = distinct(grid["wnconnectivity"].tolist())
        return derived

    # what the queues' catchall and `params` say, made when a rule first reads one of them
    CATCHALL_KEYS = ("site_bare", "jumbo_only", "local_data_only", "max_io_intensity")

    def _grid_catchall(self, scenario: Scenario, names: list[str], grid) -> dict[str, Any]:
        sites = scenario.sites
        known = self.queue_records(scenario)
        # what each candidate's catchall and `params` say, read once per unified queue (most queues have neither)
        by_queue: dict[str, tuple] = {}
        site_bare, jumbo, local, io_cap = [], [], [], []
        for name, site in zip(names, grid["site"].tolist(), strict=True):
            record, queue = known.get(name) or (scenario.queues[name], name)
            held = by_queue.get(queue)
            if held is None:
                site_mode = sites[site].bareNucleus if site in sites else ""
                if record.get("catchall") or record.get("params"):
                    o = queue_options(record)
                    # its own bareNucleus, else its site's (the differential driver writes the site's into each
                    # queue's catchall after the queue's own, and SiteSpec.getValueFromCatchall takes the first)
                    own = o.get("bareNucleus")
                    held = (
                        own if own in ("only", "allow") else site_mode,
                        "useJumboJobs" in o,
                        "use_only_local_data" in o,
                        max_io_intensity(record),
                    )
                else:
                    held = (site_mode, False, False, np.nan)
                by_queue[queue] = held
            site_bare.append(held[0])
            jumbo.append(held[1])
            local.append(held[2])
            io_cap.append(held[3])
        return {
            "site_bare": np.array(site_bare, dtype=object),
            "jumbo_only": np.array(jumbo, dtype=bool),
            "local_data_only": np.array(local, dtype=bool),
            "max_io_intensity": np.array(io_cap, dtype=float),
        }

    # the queues' storage endpoints, each group made when a rule first reads one of its keys: the activities of
    # their input and output endpoints, the output endpoint's space, and which queues read each endpoint
    ACTIVITY_KEYS = tuple(f"{role}_{activity}" for role in ("in", "out") for activity in ENDPOINT_ACTIVITIES)

    SPACE_KEYS = ("output_free", "output_usable")

    @classmethod
    def _stat_columns(cls, stats: list[dict[str, Any]], rows: list[int] | None = None) -> dict[str, np.ndarray]:
        """STAT_COLUMNS for the queues' statistics (`rows`: per candidate, its queue's position in `stats`, when
        pseudo-queues share their unified queue's): one float matrix when every value is a number or null (a null
        or absent one takes the column's default, counts are whole), converted as a whole, else value by value."""
        keys, whole, defaults = _STAT_LAYOUT
        try:
            # one flat list, a column after the other, absent values NaN already: numpy converts it at twice the
            # speed of rows holding None, and each column comes out contiguous
            flat = [s.get(key, math.nan) for key in keys for s in stats]
            matrix = np.array(flat, dtype=float).reshape(len(keys), len(stats))
        except (TypeError, ValueError):  # text where a number belongs: as_int and as_float read what they can
            return {
                name: np.array([convert(s.get(key), default) for s in stats], dtype=float)[rows or slice(None)]
                for name, key, default, convert in cls.STAT_COLUMNS
            }
        # in place, on the counts' columns and the missing values only (truncating and testing NaN or infinity
        # raise no floating-point error)
        np.trunc(matrix, out=matrix, where=whole)
        np.copyto(matrix, defaults, where=np.isnan(matrix))
        if rows is not None:
            matrix = matrix[:, rows]
        return {name: matrix[position] for position, (name, _, _, _) in enumerate(cls.STAT_COLUMNS)}

    def _scan_positions(self, scenario: Scenario) -> dict[str, int]:
        cache = self._snapshot_cache(scenario)
        if "scan positions" not in cache:
            cache["scan positions"] = {name: position for position, name in enumerate(self.queue_records(scenario))}
        return cache["scan positions"]

    @staticmethod
    def _grid_activities(scenario: Scenario, grid) -> dict[str, np.ndarray]:
        """Each activity of each queue's input and output endpoint (a blacklisted endpoint's are OFF; an unknown
        endpoint's empty)."""
        endpoints = scenario.ddm_endpoints
        made: dict[str, np.ndarray] = {}
        unknown = ("",) * len(ENDPOINT_ACTIVITIES)
        for role, key in (("in", "input_endpoint"), ("out", "output_endpoint")):
            # once per distinct endpoint (a grid has a few per site), then spread by numpy
            values, inverse = distinct(grid[key].tolist())
            table = []
            for name in values.tolist():
                info = endpoints.get(name) if name else None
                if info is None:
                    table.append(unknown)
                else:
                    table.append(tuple("OFF" if info.blacklisted else info.activity(x) for x in ENDPOINT_ACTIVITIES))
            columns = np.array(table, dtype=object).reshape(len(table), len(ENDPOINT_ACTIVITIES))
            for number, activity in enumerate(ENDPOINT_ACTIVITIES):
                made[f"{role}_{activity}"] = columns[:, number][inverse]
        return made

    @staticmethod
    def _grid_space(scenario: Scenario, grid) -> dict[str, np.ndarray]:
        """The free space of each queue's output endpoint, and free plus expired (GB; unknown: NaN)."""
        endpoints = scenario.ddm_endpoints
        free, usable = [], []
        for name in grid["output_endpoint"].tolist():
            info = endpoints.get(name) if name else None
            free.append(np.nan if info is None else info.space_free)
            usable.append(np.nan if info is None else info.space_free + info.space_expired)
        return {"output_free": np.array(free, dtype=float), "output_usable": np.array(usable, dtype=float)}

    @staticmethod
    def _grid_readers(records: list[dict[str, Any]]) -> dict[str, list[int]]:
        """Endpoint → the queues (positions) that read from it over LAN, for the data-availability sums."""
        readers: dict[str, list[int]] = {}
        for position, record in enumerate(records):
            for endpoint in (record.get("astorages") or {}).get("read_lan") or []:
                readers.setdefault(endpoint, []).append(position)
        return readers

    def _sharing_nucleus_output(self, scenario: Scenario, grid: dict[str, Any], nucleus: str) -> np.ndarray:
        """The queues outside the nucleus whose output storage its first production queue reads: panda-server
        1.0.4 counts them as at the nucleus for the transferring cap, t1Weight −1 and the nucleus weight
        (DataServiceUtils.getSitesShareDDM(output_share=True), AtlasProdJobBroker.py 276-281, 1311, 1408, 1863):
        online production queues whose default write endpoint is among its read endpoints."""
        n = len(grid["site"])
        # the nucleus's first production queue (a cloudless one is not in the real SiteMapper)
        first = self.first_queues(scenario).get(nucleus) if nucleus else None
        if first is None:
            return np.zeros(n, dtype=bool)
        read = set((first.get("astorages") or {}).get("read_lan") or [])
        sharing = np.array([endpoint in read for endpoint in grid["output_endpoint"].tolist()], dtype=bool)
        sharing &= (grid["status"] == "online") & (grid["site"] != nucleus)
        # a unified first queue runs analysis too, and then only queues running analysis share with it
        # (getSitesShareDDM: runs_analysis and not tmp_site_spec.runs_analysis()); read for the few that share
        if sharing.any() and runs_analysis(first):
            queues = grid["unified"]
            for position in np.flatnonzero(sharing).tolist():
                sharing[position] = runs_analysis(scenario.queues.get(queues[position], {}))
        return sharing

    def _network(
        self, scenario: Scenario, grid: dict[str, Any], nucleus: str, sat_cap: float, lookup: str
    ) -> dict[str, Any]:
        """The arrays that depend on the nucleus: at the nucleus, link to it, network weight (cached per nucleus)."""
        cache = self._snapshot_cache(scenario)
        key = ("network", id(grid), nucleus, sat_cap, lookup)
        if key in cache:
            return cache[key]
        links = {link.src: link for link in scenario.network if link.dst == nucleus}
        result: dict[str, Any] = {}  # the nucleus itself is prepared up front (prepare)
        sites = grid["site"].tolist()
        result["at_nucleus"] = (grid["site"] == nucleus) if nucleus else np.zeros(len(sites), dtype=bool)
        result["shares_nucleus_output"] = self._sharing_nucleus_output(scenario, grid, nucleus)
        result["queue_sites"] = frozenset(sites)
        # once per site (its queues share its link and weight): closeness, queued, the weights and their source
        by_site: dict[str, tuple] = {}
        for site in result["queue_sites"]:
            link = links.get(site)
            if not nucleus:
                weight = (1.0, 1.0, 1.0, "no nucleus")
            else:
                w = network_weight(
                    at_nucleus=site == nucleus,
                    queued=0 if link is None else link.queued,
                    sat_cap=sat_cap,
                    mbps_1h=None if link is None else link.mbps_1h,
                    mbps_1d=None if link is None else link.mbps_1d,
                    mbps_1w=None if link is None else link.mbps_1w,
                    closeness=None if link is None else link.closeness,
                    lookup=lookup,
                )
                weight = (w.weight, w.queued_weight, w.throughput_weight, w.source)
            by_site[site] = (
                np.nan if link is None or link.closeness is None else link.closeness,
                0 if link is None else link.queued,
                *weight,
            )
        # per site, then spread to its queues by numpy (one row per site, not per queue)
        site_values, inverse = distinct(sites)
        table = [by_site[site] for site in site_values.tolist()]
        numbers = np.array([row[:5] for row in table], dtype=float).reshape(len(table), 5)[inverse]
        for number, name in enumerate(
            ("closeness", "link_queued", "network_weight", "queued_weight", "throughput_weight")
        ):
            result[name] = numbers[:, number]
        result["network_source"] = np.array([row[5] for row in table], dtype=object)[inverse]
        stats = scenario.nucleus_stats.get(nucleus)
        if stats is not None and stats.outputQueued is not None:
            result["nucleus_queued"] = stats.outputQueued
        else:
            result["nucleus_queued"] = sum(link.queued for link in links.values()) if nucleus else 0
        nucleus_endpoints = [
            info
            for info in scenario.ddm_endpoints.values()
            if info.site == nucleus and info.type == scenario.task.outputEndpointType
        ]
        result["nucleus_read_wan"] = (
            "ON" if all(e.activity("read_wan") == "ON" and not e.blacklisted for e in nucleus_endpoints) else "OFF"
        )
        result["nucleus_write_wan"] = (
            "ON" if all(e.activity("write_wan") == "ON" and not e.blacklisted for e in nucleus_endpoints) else "OFF"
        )
        cache[key] = result
        return result

    def _prepare_data(self, scenario: Scenario, grid: dict[str, Any], arrays: dict[str, Any]) -> None:
        """Input already at each queue's storage (its read_lan endpoints), per dataset the most complete copy. The
        same for every job set of a task over one snapshot: kept per grid, datasets and IO intensity."""
        task, config = scenario.task, scenario.config
        io_intensive = (
            task.ioIntensity is not None
            and task.ioIntensity > config.get("IO_INTENSITY_CUTOFF")
            and not task.inputPreStaging
        )
        cache = self._snapshot_cache(scenario)
        key = ("data", id(grid), id(scenario.datasets), io_intensive)
        held = cache.get(key)
        if held is not None and held[0] is scenario.datasets and held[1] is grid:
            arrays.update(held[2])
            return
        made: dict[str, Any] = {}
        self._data_arrays(scenario, grid, io_intensive, made)
        cache[key] = (scenario.datasets, grid, made)  # the objects kept, so their ids are not reused meanwhile
        arrays.update(made)

    def _data_arrays(self, scenario: Scenario, grid: dict[str, Any], io_intensive: bool, arrays: dict) -> None:
        n = len(grid["site"])
        readers = grid["readers"]
        config = scenario.config
        # LOCAL_DATA_DISK_ONLY (panda siteSizeMap): the local input is what disk copies hold; with tape copies
        # too (siteSizeMapWT) it is the IO check's second choice
        disk_only = bool(config.get("LOCAL_DATA_DISK_ONLY"))
        # summed per queue in plain lists: a copy reaches the few queues that read its endpoint, where an array
        # operation per copy cost more than the rest of the data check
        local_size, local_files, with_tape_size, with_tape_files = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
        for dataset in scenario.datasets:
            # panda-server 1.0.4 ("get available files"): only complete copies count for a secondary dataset
            # and for an IO-intensive task's master (getAvailableFiles complete_only)
            complete_only = bool(config.get("DATA_COMPLETE_ONLY_RULE")) and (
                not dataset.master or (io_intensive and self.master_complete_only_when_io)
            )
            best: dict[int, list[float]] = {}  # position → [GB, files] of the most complete disk copy it reads
            tape: dict[int, list[float]] = {}  # ... of tape copies, apart under LOCAL_DATA_DISK_ONLY
            for endpoint, replica in dataset.replicas.items():
                if complete_only and replica.nFiles < dataset.nFiles:
                    continue
                positions = readers.get(endpoint)
                if positions is None:
                    continue
                info = scenario.ddm_endpoints.get(endpoint)
                target = tape if disk_only and info is not None and info.is_tape else best
                for position in positions:
                    held = target.setdefault(position, [0.0, 0.0])
                    held[0] = max(held[0], replica.sizeGB)
                    held[1] = max(held[1], replica.nFiles)
            for position, (size, files) in best.items():
                local_size[position] += size
                local_files[position] += files
            # the copies are the first files of the dataset (as the driver's Rucio answers): their union is the
            # larger of the two
            for position in best.keys() | tape.keys():
                disk_copy, tape_copy = best.get(position, (0.0, 0.0)), tape.get(position, (0.0, 0.0))
                with_tape_size[position] += max(disk_copy[0], tape_copy[0])
                with_tape_files[position] += max(disk_copy[1], tape_copy[1])
        local_size, local_files = np.array(local_size, dtype=float), np.array(local_files, dtype=float)
        with_tape_size, with_tape_files = np.array(with_tape_size, dtype=float), np.array(with_tape_files, dtype=float)
        total_size = float(sum(d.sizeGB for d in scenario.datasets))
        total_files = float(sum(d.nFiles for d in scenario.datasets))
        arrays["total_size"], arrays["total_files"] = total_size, total_files
        arrays["local_size"], arrays["local_files"] = local_size, local_files
        arrays["missing_size"] = np.maximum(total_size - local_size, 0.0)
        arrays["missing_files"] = np.maximum(total_files - local_files, 0.0)
        arrays["missing_size_with_tape"] = np.maximum(total_size - with_tape_size, 0.0)
        arrays["missing_files_with_tape"] = np.maximum(total_files - with_tape_files, 0.0)
        arrays["assigned_used"] = np.where(arrays["missing_files"] == 0, 0.0, grid["assigned"])


# _stat_columns' layout: the statistics keys in column order, which columns are whole counts, each column's default
_STAT_LAYOUT = (
    tuple(key for _, key, _, _ in JobGrid.STAT_COLUMNS),
    np.array([[convert is as_int] for _, _, _, convert in JobGrid.STAT_COLUMNS]),  # a row per column
    np.array([[default] for _, _, default, _ in JobGrid.STAT_COLUMNS], dtype=float),
)
