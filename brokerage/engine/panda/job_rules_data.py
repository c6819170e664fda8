"""The production job broker's rules on the input and the storage: the input complete, the input to move,
the disk IO, and the storage endpoints each queue reads and writes (seed 000; panda-server 1.0.4 AtlasProdJobBroker
and AtlasBrokerUtils)."""

from __future__ import annotations

from typing import Any

import numpy as np

from brokerage.engine.core.plugin import (
    NOTHING_FAILS,
    Context,
    Filter,
    Rejection,
    Variants,
    never,
)
from brokerage.engine.panda.input_data import complete_locations, input_incomplete
from brokerage.engine.panda.job_candidates import preassign_mode
from brokerage.engine.panda.records import DOWNTIME_STATUSES, ENDPOINT_ACTIVITIES


def _io_detail(context: Context, io: float, size_cut: float, num_cut: float) -> dict[str, Any]:
    """The numbers the input-transfer check compared (both profiles' variants)."""
    return {
        "ioIntensity": io,
        "missingGB": context["missing_size"],
        "sizeCutoffGB": size_cut,
        "missingFiles": context["missing_files"],
        "fileCutoff": num_cut,
    }


def input_complete(context: Context, datasets=None) -> Rejection:
    """Every queue skipped when an input dataset (of `datasets`, all when not given) has no complete copy."""
    dataset = input_incomplete(context.scenario, datasets)
    if not dataset:
        return NOTHING_FAILS
    return Rejection(np.ones(len(context.names), dtype=bool), {"dataset": dataset})


INPUT_COMPLETE = Filter("input complete", "input_missing", input_complete)


def io(context: Context) -> Rejection:
    """seed 000 "IO intensive": for a task above IO_INTENSITY_CUTOFF, a queue missing SIZE_CUTOFF_TO_MOVE_INPUT GB or
    NUM_CUTOFF_TO_MOVE_INPUT files of the input or more is skipped."""
    config = context.config
    cutoff = config.get("IO_INTENSITY_CUTOFF")
    io = context.task.ioIntensity or 0.0
    if io <= cutoff:
        return NOTHING_FAILS
    size_cut, num_cut = config.get("SIZE_CUTOFF_TO_MOVE_INPUT"), config.get("NUM_CUTOFF_TO_MOVE_INPUT")
    fails = (context["missing_size"] >= size_cut) | (context["missing_files"] >= num_cut)
    return Rejection(fails, _io_detail(context, io, size_cut, num_cut))


def io_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "IO check" (1.0.4): for an IO-intensive task (not merge, not event service) with
    input, a queue missing more than SIZE_CUTOFF_TO_MOVE_INPUT GB (whole MB) or NUM_CUTOFF_TO_MOVE_INPUT
    files is skipped. When no queue passes, queues that pass counting their tape copies too are the second
    choice (LOCAL_DATA_DISK_ONLY tells the two apart); when none passes either, the check is switched off."""
    config, task, jobs = context.config, context.task, context.scenario.jobs
    io = task.ioIntensity
    if (
        io is None
        or io <= config.get("IO_INTENSITY_CUTOFF")
        or context["total_size"] <= 0
        or jobs.isMerge
        or task.eventService
        or preassign_mode(context) == "site"
    ):
        return NOTHING_FAILS
    size_cut, num_cut = config.get("SIZE_CUTOFF_TO_MOVE_INPUT"), config.get("NUM_CUTOFF_TO_MOVE_INPUT")
    fails = (np.floor(context["missing_size"] * 1024) > size_cut * 1024) | (context["missing_files"] > num_cut)
    # second choice: queues that would miss little counting their tape copies too
    fails_with_tape = (np.floor(context["missing_size_with_tape"] * 1024) > size_cut * 1024) | (
        context["missing_files_with_tape"] > num_cut
    )
    if not np.any(context.alive & ~fails_with_tape):
        return NOTHING_FAILS  # no queue passes: the check is switched off
    detail = _io_detail(context, io, size_cut, num_cut)
    if not np.any(context.alive & ~fails):
        detail.update(missingGB=context["missing_size_with_tape"], missingFiles=context["missing_files_with_tape"])
        return Rejection(fails_with_tape, {**detail, "tapeCounted": True})
    return Rejection(fails, detail)


INPUT_TRANSFER = Filter("input transfer", "io", Variants("IO_CHECK_RULE", seed=io, panda=io_panda))


def max_io_intensity(context: Context) -> Rejection:
    """CRIC_QUEUE_RULE panda (AtlasProdJobBroker.py 1426-1441, 1.0.4): an IO-intensive task's ioIntensity above
    the queue's params.max_io_intensity skips it; merges are not checked."""
    task = context.task
    if not task.ioIntensity or context.scenario.jobs.isMerge:
        return NOTHING_FAILS
    limit = context["max_io_intensity"]
    with np.errstate(invalid="ignore"):
        over = ~np.isnan(limit) & (task.ioIntensity > limit)
    return Rejection(over, {"ioIntensity": task.ioIntensity, "maxIOIntensity": limit})


MAX_IO_INTENSITY = Filter(
    "max IO intensity", "max_io_intensity", Variants("CRIC_QUEUE_RULE", seed=never, panda=max_io_intensity)
)


def non_local_data(context: Context) -> Rejection:
    """CRIC_QUEUE_RULE panda (AtlasProdJobBroker.py 1850-1858, 1989, 1.0.4): a queue whose catchall says
    use_only_local_data is skipped in the weight loop when any input would move to it (a MB or more, or a file)."""
    only_local = context["local_data_only"]  # per snapshot: most grids have no such queue, and no data is read
    if not only_local.any():
        return NOTHING_FAILS
    total = context["total_size"]
    if total <= 0:
        return NOTHING_FAILS
    to_move_mb = np.trunc(context["missing_size"] * 1024)
    moving = (to_move_mb > 0) | (context["missing_files"] > 0)
    return Rejection(
        context["local_data_only"] & moving,
        {
            "useOnlyLocalData": context["local_data_only"],
            "mbToMove": to_move_mb,
            "filesToMove": context["missing_files"],
        },
    )


NON_LOCAL_DATA = Filter("non-local data", "non_local", Variants("CRIC_QUEUE_RULE", seed=never, panda=non_local_data))


def disk_io(context: Context) -> Rejection:
    """seed 000: a queue whose average disk IO per core is above its limit skips a task whose diskIO is too."""
    if context.task.diskIO is None:
        return NOTHING_FAILS
    return disk_io_verdict(context, context.task.diskIO)


def disk_io_panda(context: Context) -> Rejection:
    """AtlasProdJobBroker "diskIO check" (1.0.4, 695-698): a multi-core task's diskIO per core of the queue."""
    task_io = context.task.diskIO
    if task_io is None:
        return NOTHING_FAILS
    if (context.task.coreCount or 0) > 1:
        task_io = np.floor(task_io / context["unified_corecount"])
    return disk_io_verdict(context, task_io)


def disk_io_verdict(context: Context, task_io) -> Rejection:
    limit = context["diskio_limit"]
    with np.errstate(invalid="ignore"):
        fails = ~np.isnan(limit) & (context["avg_diskio"] > limit) & (task_io > limit)
    return Rejection(
        fails, {"queueDiskIOLimit": limit, "avgDiskIOPerCore": context["avg_diskio"], "taskDiskIO": task_io}
    )


disk_io_check = Variants("DISK_IO_RULE", seed=disk_io, panda=disk_io_panda)
DISK_IO = Filter("disk IO", "diskIO", disk_io_check)


def endpoints_seed(context: Context) -> Rejection:
    """seed 000's endpoint rules (endpoint_rules), once per site list, nucleus and output endpoint type."""
    cache = context.plugin._snapshot_cache(context.scenario)
    key = ("endpoints", id(context["site"]), context["nucleus"], context.scenario.task.outputEndpointType)
    if key not in cache:
        cache[key] = endpoint_rules(context)
    return cache[key]


def endpoints_panda(context: Context) -> Rejection:
    """JOB_ENDPOINT_RULE panda (endpoint_rules_panda), once per site list and the terms it compares."""
    cache = context.plugin._snapshot_cache(context.scenario)
    locations, remote_ok = complete_locations(context.scenario)
    storage_type, nucleus_queues, locations = context.plugin.endpoint_terms(context, locations)
    key = ("endpoints panda", id(context["site"]), nucleus_queues.tobytes(), locations, remote_ok, storage_type)
    if key not in cache:
        cache[key] = endpoint_rules_panda(context, locations, remote_ok, storage_type, nucleus_queues)
    return cache[key]


endpoints = Variants("JOB_ENDPOINT_RULE", seed=endpoints_seed, panda=endpoints_panda)
STORAGE_ENDPOINTS = Filter("storage endpoints", "read_lan_blacklist", endpoints)


def endpoint_rules_panda(
    context: Context,
    locations: frozenset[str] | None,
    remote_ok: bool,
    storage_type: str | None,
    nucleus_queues: np.ndarray,
) -> Rejection:
    """JOB_ENDPOINT_RULE panda: AtlasBrokerUtils.check_endpoints_with_blacklist (1.0.4, 1215-1285) over each
    queue's DATADISK endpoints (an input one blacklisted for reading is not the queue's). Any input endpoint
    readable over LAN, any output one writable over LAN; a satellite (or a nucleus queue whose input endpoint
    holds no complete copy of every dataset, issue 33 D3) needs an input endpoint that receives over WAN and an
    output one that sends; a satellite also needs a complete copy somewhere that can be read over WAN."""
    scenario = context.scenario
    endpoints = scenario.ddm_endpoints
    known = context.plugin.queue_records(scenario)
    n = len(context.names)
    fails = np.zeros(n, dtype=bool)
    code = np.full(n, "", dtype=object)
    endpoint_names = np.full(n, "", dtype=object)
    activity = np.full(n, "", dtype=object)
    # per endpoint, once: (of the storage type asked, blacklisted, read_lan, write_lan, read_wan, write_wan up)
    seen: dict[str, tuple[bool, bool, bool, bool, bool, bool]] = {}

    def state(name: str) -> tuple[bool, bool, bool, bool, bool, bool]:
        found = seen.get(name)
        if found is None:
            info = endpoints.get(name)
            kind = info.type if info is not None else name.rsplit("_", 1)[-1]
            if info is None:
                found = (storage_type is None or kind == storage_type, False, True, True, True, True)
            else:
                found = (
                    storage_type is None or kind == storage_type,
                    bool(info.blacklisted),
                    *(info.activity(what) not in DOWNTIME_STATUSES for what in ENDPOINT_ACTIVITIES),
                )
            seen[name] = found
        return found

    # a queue's verdict depends on its LAN endpoints and whether it is a nucleus queue: the queues of a site
    # (and a unified queue's pseudo-queues) share them
    verdicts: dict[tuple, tuple[str, str, str] | None] = {}
    for i, name in enumerate(context.names):
        record = (known.get(name) or (scenario.queues.get(name, {}), name))[0]
        storages = record.get("astorages") or {}
        nucleus_queue = bool(nucleus_queues[i])
        key = (tuple(storages.get("read_lan") or ()), tuple(storages.get("write_lan") or ()), nucleus_queue)
        if key not in verdicts:
            verdicts[key] = endpoint_verdict(storages, nucleus_queue, state, locations, remote_ok)
        verdict = verdicts[key]
        if verdict is not None:
            fails[i] = True
            code[i], endpoint_names[i], activity[i] = verdict
    return Rejection(fails, {"endpoint": endpoint_names, "activity": activity, "required": "ON"}, code=code)


def endpoint_verdict(storages, nucleus_queue: bool, state, locations, remote_ok: bool) -> tuple[str, str, str] | None:
    """One queue under JOB_ENDPOINT_RULE panda: None when it passes, else (rule, endpoints, activity)."""
    inputs = [e for e in storages.get("read_lan") or [] if state(e)[0] and not state(e)[1]]
    outputs = [e for e in storages.get("write_lan") or [] if state(e)[0]]
    read_lan = any(state(e)[2] for e in inputs)
    receive = source = False
    for e in inputs:
        if not nucleus_queue or (locations and e not in locations):
            receive |= state(e)[5]
        else:
            receive = source = True
    write_lan = any(state(e)[3] for e in outputs)
    send = False
    for e in outputs:
        if not nucleus_queue:
            send |= state(e)[4]
        else:
            send = source = True
    source = source or remote_ok
    for ok, rule, where, what in (
        (read_lan, "read_lan_blacklist", ",".join(inputs) or "no input endpoint", "read_lan"),
        (write_lan, "write_lan_blacklist", ",".join(outputs) or "no output endpoint", "write_lan"),
        (receive, "write_wan_blacklist", ",".join(inputs), "write_wan"),
        (send, "read_wan_blacklist", ",".join(outputs), "read_wan"),
        (source, "source_blacklist", "no complete copy readable over WAN", "read_wan"),
    ):
        if not ok:
            return rule, where, what
    return None


def endpoint_rules(context: Context) -> Rejection:
    """seed 000: input endpoints read_lan and output endpoints write_lan ON everywhere; for satellites the
    input endpoint must also receive (write_wan) and the output endpoint send (read_wan) over WAN, and the
    nucleus's endpoint both. The first endpoint of each role is the queue's primary one."""
    n = len(context.names)
    satellite = ~context["at_nucleus"] & bool(context["nucleus"])
    rules = [
        (
            "read_lan_blacklist",
            context["input_endpoint"],
            (context["in_read_lan"] != "") & (context["in_read_lan"] != "ON"),
            "read_lan",
        ),
        (
            "write_lan_blacklist",
            context["output_endpoint"],
            (context["out_write_lan"] != "") & (context["out_write_lan"] != "ON"),
            "write_lan",
        ),
        (
            "write_wan_blacklist",
            context["input_endpoint"],
            satellite & (context["in_write_wan"] != "") & (context["in_write_wan"] != "ON"),
            "write_wan",
        ),
        (
            "read_wan_blacklist",
            context["output_endpoint"],
            satellite & (context["out_read_wan"] != "") & (context["out_read_wan"] != "ON"),
            "read_wan",
        ),
        (
            "write_wan_blacklist",
            np.full(n, f"{context['nucleus']} (nucleus)", dtype=object),
            satellite & (context["nucleus_write_wan"] != "ON"),
            "write_wan",
        ),
        (
            "read_wan_blacklist",
            np.full(n, f"{context['nucleus']} (nucleus)", dtype=object),
            satellite & (context["nucleus_read_wan"] != "ON"),
            "read_wan",
        ),
    ]
    fails = np.zeros(n, dtype=bool)
    code = np.full(n, "", dtype=object)
    endpoint = np.full(n, "", dtype=object)
    activity = np.full(n, "", dtype=object)
    for rule_code, names, failing, activity_name in rules:
        new = failing & ~fails
        code[new], endpoint[new], activity[new] = rule_code, names[new], activity_name
        fails |= failing
    return Rejection(fails, {"endpoint": endpoint, "activity": activity, "required": "ON"}, code=code)
