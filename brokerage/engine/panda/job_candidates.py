"""The production job broker's candidates: the queues a job set may go to (not test queues, or the
pre-assigned ones), the unified queues' pseudo-queues, and what pre-assignment is in force (seed 000 "ATLAS
Production Job Brokerage"; panda-server 1.0.4 AtlasProdJobBroker)."""

from __future__ import annotations

from typing import Any

from brokerage.engine.core.plugin import Context, Variants
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.panda.records import (
    cloud_missing,
    first_production_queues,
    nucleus_bare_mode,
    per_core_scaled,
    pseudo_queue_records,
    queue_site,
)

PREASSIGNMENT_PATIENCE_HOURS = 24


def no_preassignment_mode(context: Context) -> str:
    """seed: no check is left out for a pre-assigned job set."""
    return ""


def preassignment_mode(context: Context) -> str:
    """PREASSIGNMENT_RULE panda: 'site' or 'cloud' when the job set is pre-assigned (AtlasProdJobBroker
    sitePreAssigned / cloudPreAssigned), '' when not."""
    return context.plugin.preassignment(context.scenario)[0]


# The pre-assignment in force for the checks PREASSIGNMENT_RULE panda leaves out ('' under seed).
preassign_mode = Variants("PREASSIGNMENT_RULE", seed=no_preassignment_mode, panda=preassignment_mode)


def preassigned_seed(context: Context) -> bool:
    """seed 000: the job set names queues."""
    return bool(context.scenario.jobs.preassigned)


def preassigned_panda(context: Context) -> bool:
    """panda-server 1.0.4: the job set is pre-assigned to a site or a cloud."""
    return bool(preassignment_mode(context))


# Whether the job set counts as pre-assigned where a rule exempts pre-assigned job sets (pilots, T1 weight).
is_preassigned = Variants("PREASSIGNMENT_RULE", seed=preassigned_seed, panda=preassigned_panda)


def scout_seed(context: Context) -> bool:
    """seed 000: scouts, unless pre-assigned."""
    jobs = context.scenario.jobs
    return jobs.isScout and not jobs.preassigned


def scout_panda(context: Context) -> bool:
    """panda-server 1.0.4: scouts, unless pre-assigned to a site."""
    return context.scenario.jobs.isScout and preassignment_mode(context) != "site"


# Whether the walltime rule treats the job set as scouts (who need a day of walltime).
counts_as_scout = Variants("PREASSIGNMENT_RULE", seed=scout_seed, panda=scout_panda)


def preassignment_dropped(scenario: Scenario) -> bool:
    """seed 000: merge jobs are pre-assigned, but not once those queues were skipped for 24 hours."""
    jobs = scenario.jobs
    return jobs.isMerge and jobs.preassignedSkippedHours >= PREASSIGNMENT_PATIENCE_HOURS


def preassigned_queues_seed(broker, scenario: Scenario) -> list[str] | None:
    """seed 000: a job set naming queues goes only there (their pseudo-queues for a unified one), unless it is a
    merge whose queues were skipped for 24 hours; None when the job set names none."""
    jobs = scenario.jobs
    if not jobs.preassigned or preassignment_dropped(scenario):
        return None
    records = broker.queue_records(scenario)
    wanted = set(jobs.preassigned)
    return [name for name in records if records[name][1] in wanted]


def preassigned_queues_panda(broker, scenario: Scenario) -> list[str] | None:
    """PREASSIGNMENT_RULE panda: the queues preassignment() gives for a job set pre-assigned to a site or a cloud."""
    mode, names = broker.preassignment(scenario)
    return names if mode else None


# The candidates of a pre-assigned job set (None: the job set is not pre-assigned), by the broker and scenario.
preassigned_queues = Variants("PREASSIGNMENT_RULE", seed=preassigned_queues_seed, panda=preassigned_queues_panda)


def preassigned_scan_seed(broker, scenario: Scenario) -> bool:
    """seed 000: the queues are scanned in the snapshot's order."""
    return False


def preassigned_scan_panda(broker, scenario: Scenario) -> bool:
    """panda-server 1.0.4: a pre-assigned job set scans its queues in the order preassignment() gives them."""
    return bool(broker.preassignment(scenario)[0])


# Whether the queues are scanned in the order of the pre-assignment (the most-running rule follows scan_order).
scans_in_preassigned_order = Variants("PREASSIGNMENT_RULE", seed=preassigned_scan_seed, panda=preassigned_scan_panda)


class JobCandidates:
    """The candidate queues of a job set and the records behind them (a part of AtlasProdJobBroker)."""

    def initial_candidates(self, scenario: Scenario) -> list[str]:
        records = self.queue_records(scenario)
        preassigned = preassigned_queues.pick(scenario.config)(self, scenario)
        if preassigned is not None:
            return preassigned
        exclude_test = scenario.config.get("EXCLUDE_TEST_QUEUES")
        drop_cloudless = scenario.config.get("CRIC_QUEUE_RULE") == "panda"
        cache = self._snapshot_cache(scenario)
        key = ("all queues", exclude_test, drop_cloudless)
        if key not in cache:
            # seed 000: queues with "test" in the name are not candidates; the real doBrokerage scans them all.
            # Analysis queues never take production jobs (panda-server 1.0.4 SiteMapper puts only queues that
            # runs_production(), production or unified, in the clouds the broker scans), nor, under
            # CRIC_QUEUE_RULE panda, production queues without a cloud (SiteMapper.py 75-79).
            cache[key] = sorted(
                name
                for name, (record, unified) in records.items()
                if record.get("type") != "analysis"
                and not (exclude_test and "test" in unified.lower())
                and not (drop_cloudless and cloud_missing(record))
            )
        return list(cache[key])

    def queue_records(self, scenario: Scenario) -> dict[str, tuple[dict[str, Any], str]]:
        """Candidate name → (CRIC record, the queue whose statistics it uses), in the order the real broker scans
        them: plain queues in the snapshot's order, then the pseudo-queues of unified ones."""
        cache = self._snapshot_cache(scenario)
        if "records" not in cache:
            plain: dict[str, tuple[dict[str, Any], str]] = {}
            pseudo: dict[str, tuple[dict[str, Any], str]] = {}
            for name, record in scenario.queues.items():
                record = per_core_scaled(record)
                if record.get("capability") == "ucore":
                    for child_name, child in pseudo_queue_records(name, record):
                        pseudo[child_name] = (child, name)
                else:
                    plain[name] = (record, name)
            cache["records"] = {**plain, **pseudo}
        return cache["records"]

    def first_queues(self, scenario: Scenario) -> dict[str, dict[str, Any]]:
        """Site → its first production queue (records.first_production_queues), once per snapshot."""
        cache = self._snapshot_cache(scenario)
        if "first queues" not in cache:
            cache["first queues"] = first_production_queues(scenario.queues)
        return cache["first queues"]

    def preassignment(self, scenario: Scenario) -> tuple[str, list[str]]:
        """PREASSIGNMENT_RULE panda (AtlasProdJobBroker.doBrokerage 181-227, 1.0.4): how the job set is pre-assigned
        and the queues it scans. A merge job set (pmerge) scans the queue holding the pre-merged outputs and the
        online production queues that read its output storage (DataServiceUtils.getSitesShareDDM), as a list;
        past 24 h it scans every queue, as if not pre-assigned. Another pre-assigned job set (the task's `site`)
        scans those queues (a unified one as its pseudo-queues): one queue is a "site" pre-assignment, which
        leaves many checks out, several a "list". Returns ('' | 'site' | 'list', candidate names)."""
        jobs = scenario.jobs
        if not jobs.preassigned or preassignment_dropped(scenario):
            return "", []
        cache = self._snapshot_cache(scenario)
        key = ("preassignment", jobs.preassigned, jobs.isMerge)
        if key in cache:
            return cache[key]
        records = self.queue_records(scenario)
        if jobs.isMerge:
            found = ("list", self._merge_scan(scenario, jobs.preassigned[0]))
            cache[key] = found
            return found
        wanted = set(jobs.preassigned)
        names = [name for name, (_, unified) in records.items() if unified in wanted]
        # the real scan keeps a unified queue itself beside its pseudo-queues (get_pseudo_sites, in the order of a
        # set): only the status check, which a pre-assigned job set skips, drops it (AtlasProdJobBroker 395-397)
        names += sorted(name for name in wanted if scenario.queues.get(name, {}).get("capability") == "ucore")
        found = ("site" if len(names) == 1 else "list", names)
        cache[key] = found
        return found

    def _merge_scan(self, scenario: Scenario, queue: str) -> list[str]:
        """The queues a merge job set scans, in the real order (AtlasProdJobBroker 215-219, 1.0.4): those sharing the
        pre-merged outputs' storage as SiteMapper lists them (plain and unified queues in CRIC order, a unified one
        as itself, then the pseudo-queues), the pre-assigned queue last. The order decides among equal weights."""
        sharing = self._sharing_output(scenario, queue, include_self=True)
        top = [name for name in scenario.queues if name in sharing and name != queue]
        children = [
            name for name, (_, parent) in self.queue_records(scenario).items() if name != parent and parent in sharing
        ]
        return top + children + ([queue] if queue in scenario.queues else [])

    def _sharing_output(self, scenario: Scenario, queue: str, *, include_self: bool = False) -> set[str]:
        """The online production queues whose input storage holds `queue`'s output storage (its first write_lan
        endpoint), and that run what it runs (DataServiceUtils.getSitesShareDDM); `queue` itself only with
        include_self (its pseudo-queues are listed as others are)."""
        record = scenario.queues.get(queue)
        if record is None:
            return set()
        output = ((record.get("astorages") or {}).get("write_lan") or [None])[0]
        unified = record.get("type") == "unified"
        found = set()
        for name, other in scenario.queues.items():
            if (name == queue and not include_self) or other.get("status", "online") != "online" or output is None:
                continue
            if other.get("type") not in ("production", "unified") or (unified and other.get("type") != "unified"):
                continue
            if output in ((other.get("astorages") or {}).get("read_lan") or []):
                found.add(name)
        return found

    def nucleus_default_out(self, scenario: Scenario, nucleus: str) -> str:
        """The nucleus's default output endpoint as SiteMapper sets it: the first write endpoint of the first
        production queue at the nucleus (first_queues, once per snapshot)."""
        record = self.first_queues(scenario).get(nucleus)
        return ((record.get("astorages") or {}).get("write_lan") or [""])[0] if record is not None else ""

    def nuclei_known(self, scenario: Scenario) -> frozenset[str]:
        """The nucleus sites with a production or unified queue (SiteMapper.nuclei), once per snapshot."""
        cache = self._snapshot_cache(scenario)
        if "nuclei known" not in cache:
            cache["nuclei known"] = frozenset(
                queue_site(record)
                for record in scenario.queues.values()
                if record.get("type") in ("production", "unified")
                and (site := scenario.sites.get(queue_site(record))) is not None
                and site.role == "nucleus"
            )
        return cache["nuclei known"]

    def _nucleus_queues(self, scenario: Scenario) -> list[str]:
        """The production queues at nuclei (pseudo-queues for unified ones), the same list for every task of a
        snapshot so that the per-snapshot arrays are built once."""
        cache = self._snapshot_cache(scenario)
        key = ("nucleus queues", scenario.config.get("EXCLUDE_TEST_QUEUES"))
        if key not in cache:
            records = self.queue_records(scenario)
            first = self.first_queues(scenario)
            # the nuclei, and the satellites in bare-nucleus mode, which a full-chain task takes as nuclei
            nuclei = {
                name
                for name, site in scenario.sites.items()
                if site.role == "nucleus" or (name in first and nucleus_bare_mode(first[name], site.bareNucleus))
            }
            cache[key] = [name for name in self.initial_candidates(scenario) if queue_site(records[name][0]) in nuclei]
        return list(cache[key])
