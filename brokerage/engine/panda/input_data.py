"""Where a task's input is: complete copies, what can be read over WAN, and which dataset is not complete
anywhere (seed 000 "input complete"; panda-server 1.0.4 AtlasProdJobBroker "get available files")."""

from __future__ import annotations

from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda.records import readable


def _regarded_complete(found: int, total: int, config) -> bool:
    """get_sites_with_data: complete, or missing at most MAX_MISSING_INPUT_FILES files, or holding at least
    MIN_INPUT_COMPLETENESS % of them."""
    if found == total:
        return True
    max_missing, min_percent = config.get("MAX_MISSING_INPUT_FILES"), config.get("MIN_INPUT_COMPLETENESS")
    return bool(total and found) and (total - found <= max_missing or found / total * 100 >= min_percent)


def readable_over_wan(scenario: Scenario, datasets, *, nearly_complete: bool = False) -> bool:
    """Every dataset has a complete copy (with `nearly_complete`, one regarded as complete) somewhere whose
    endpoint can be read over WAN (read_wan not OFF/TEST); an endpoint the scenario does not describe counts as
    readable (panda-server SiteMapper.is_readable_remotely)."""
    return not unreadable_over_wan(scenario, datasets, nearly_complete=nearly_complete)


def unreadable_over_wan(scenario: Scenario, datasets, *, nearly_complete: bool = False) -> str:
    """The first of `datasets` without such a copy ('' when every one has one): the one AtlasProdTaskBroker
    (1.0.4) names in "dataset=X is incomplete/missing at online endpoints with read_wan=ON"."""
    config = scenario.config
    for dataset in datasets:
        if not any(
            (
                _regarded_complete(replica.nFiles, dataset.nFiles, config)
                if nearly_complete
                else replica.nFiles == dataset.nFiles
            )
            and dataset.nFiles > 0
            and readable(scenario.ddm_endpoints.get(endpoint_key), ("read_wan",))
            for endpoint_key, replica in dataset.replicas.items()
        ):
            return dataset.name
    return ""


def input_incomplete(scenario: Scenario, datasets=None) -> str:
    """The first input dataset (of `datasets`, all the scenario's when not given) without a complete copy readable
    over LAN or WAN anywhere ('' when every one has one, when the check is off, or when the task is pre-staged).
    panda-server 1.0.4 AtlasProdJobBroker "check dataset completeness" with AtlasBrokerUtils.get_sites_with_data:
    a copy missing at most MAX_MISSING_INPUT_FILES files, or holding at least MIN_INPUT_COMPLETENESS %, counts as
    complete."""
    config = scenario.config
    if not config.get("INPUT_COMPLETENESS_CHECK") or scenario.task.inputPreStaging:
        return ""
    for dataset in scenario.datasets if datasets is None else datasets:
        complete = False
        for endpoint_key, replica in dataset.replicas.items():
            if not _regarded_complete(replica.nFiles, dataset.nFiles, config):
                continue
            if readable(scenario.ddm_endpoints.get(endpoint_key)):
                complete = True
                break
        if not complete:
            return dataset.name
    return ""


def complete_locations(scenario: Scenario) -> tuple[frozenset[str] | None, bool]:
    """AtlasProdJobBroker "check dataset completeness" (1.0.4, 316-385) as the endpoint check reads it: the
    endpoints holding a copy regarded as complete of every input dataset (None without input), and whether every
    dataset not being pre-staged has such a copy readable over WAN (or none readable even over LAN)."""
    config = scenario.config
    locations: frozenset[str] | None = None
    remote_ok = True
    for dataset in scenario.datasets:
        complete = [
            endpoint
            for endpoint, replica in dataset.replicas.items()
            if _regarded_complete(replica.nFiles, dataset.nFiles, config) and dataset.nFiles > 0
        ]
        locations = frozenset(complete) if locations is None else locations & frozenset(complete)
        if scenario.task.inputPreStaging or not complete:
            continue
        remote = any(readable(scenario.ddm_endpoints.get(e), ("read_wan",)) for e in complete)
        local = any(readable(scenario.ddm_endpoints.get(e), ("read_lan",)) for e in complete)
        if not remote and local:
            remote_ok = False
    return locations, remote_ok
