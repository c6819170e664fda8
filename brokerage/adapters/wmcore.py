"""WMCore's WorkQueue elements read from the database as the engine's elements (engine/wmcore/elements.py): the
columns a pull reads, and each distinct JSON text decoded once."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast

from brokerage.engine.wmcore.elements import Element
from brokerage.engine.wmcore.scenario import element_data, site_jobs_data, site_resources_data

# What the matcher reads of an element besides its JSON columns (JSON_FIELDS, read as text), and the element
# rows a pull reads: those, its key and what it writes back.
MATCHER_FIELDS = (
    "element_id",
    "request__RequestName",
    "Priority",
    "CreationTime",
    "Jobs",
    "NoInputUpdate",
    "NoPileupUpdate",
    "ParentFlag",
    "blowupFactor",
    "request__Team",
)


ELEMENT_FIELDS = ("pk", *MATCHER_FIELDS, "stuck_reason", "stuck_digest")


JSON_FIELDS = ("Inputs", "ParentData", "PileupData", "SiteWhitelist", "SiteBlacklist")


def element_rows(queryset, *extra: str) -> list[dict[str, Any]]:
    """Element rows for the matcher in primary-key order (the last tie-break of a pull's order, as in the
    snapshot), the JSON columns as their text (`<name>_text`): equal texts (a request's site lists, its pileup,
    empty parents) are decoded once by `ElementReader`."""
    casts = {f"{name}_text": Cast(name, TextField()) for name in JSON_FIELDS}
    return list(queryset.annotate(**casts).values(*ELEMENT_FIELDS, *casts, *extra).order_by("pk"))


class ElementReader:
    """Engine elements from `element_rows` rows. Each distinct JSON text is decoded once and its value shared:
    equal site lists are then one tuple, which the matcher's caches find by identity."""

    def __init__(self) -> None:
        self._sites: dict[str | None, tuple[str, ...]] = {}
        self._locations: dict[str | None, dict[str, tuple[str, ...]]] = {}

    def __len__(self) -> int:
        """Distinct texts held."""
        return len(self._sites) + len(self._locations)

    def sites(self, text: str | None) -> tuple[str, ...]:
        found = self._sites.get(text)
        if found is None:
            found = self._sites[text] = tuple(json.loads(text) or ()) if text else ()
        return found

    def locations(self, text: str | None) -> dict[str, tuple[str, ...]]:
        found = self._locations.get(text)
        if found is None:
            value = json.loads(text) if text else {}
            found = self._locations[text] = {str(k): tuple(v or ()) for k, v in (value or {}).items()}
        return found

    def element(self, row: Mapping[str, Any]) -> Element:
        return Element(
            id=row["element_id"],
            priority=float(row["Priority"]),
            created=row["CreationTime"].timestamp(),
            jobs=int(row["Jobs"]),
            inputs=self.locations(row["Inputs_text"]),
            parents=self.locations(row["ParentData_text"]),
            pileup=self.locations(row["PileupData_text"]),
            whitelist=self.sites(row["SiteWhitelist_text"]),
            blacklist=self.sites(row["SiteBlacklist_text"]),
            trust_sitelists=bool(row["NoInputUpdate"]),
            trust_pileup_sitelists=bool(row["NoPileupUpdate"]),
            request=row["request__RequestName"],
            parent_flag=row["ParentFlag"],
            blowup=float(row["blowupFactor"]),
            team=row["request__Team"] or "",
        )


CONFIG_KEYS = (
    "WMCORE_MAX_JOBS_PER_OWNER",
    "WMCORE_SCHEDD_FRACTION",
    "WMCORE_OVERFLOW_FRACTION",
    "WMCORE_CACHE_REFRESH_SIZE",
    "WMCORE_CACHE_REFRESH_MINUTES",
    "WMCORE_MAX_JOBS_TO_CACHE",
    "WMCORE_MAX_JOBS_PER_POLL",
    "WMCORE_PULL_SCHEDD_FRACTION",
    "WMCORE_FREE_SLOTS",
    "WMCORE_QUEUE_DEPTH",
    "WMCORE_PULL_COUNTS",
    "WMCORE_AVAILABLE_ORDER",
    "WMCORE_ROWS_PER_SLICE",
    "WMCORE_MAX_ROWS_PER_CYCLE",
    "WMCORE_WORK_PER_CYCLE",
    "WMCORE_SITE_RULE",
    "WMCORE_TASK_PRIORITY",
    "WMCORE_MERGE_IGNORES_PENDING",
    "WMCORE_SUBMIT_LOCATIONS",
    "WMCORE_DRAIN_GRACE_HOURS",
)


def pull_inputs(
    *,
    elements,
    sites,
    site_jobs,
    schedd_free_slots: int | None,
    team: str,
    exclude_workflows=(),
    step: str,
    seed: int,
    now,
    config: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a pull decided on as a wmcore_pull scenario (issue 34): the shared side (its gdpconfig, the elements,
    the sites' slots and jobs: stored by content, consecutive pulls share what did not change) and its own (seed,
    step, schedd room as the jobs in it, team, closed requests)."""
    shared = {
        "plugin": "wmcore_pull",
        "now": now.isoformat(),
        "gdpconfig": {key: config[key] for key in CONFIG_KEYS if config.get(key) is not None},
        "elements": [element_data(element) for element in elements],
        "site_thresholds": site_resources_data(sites),
        "site_jobs": site_jobs_data(site_jobs),
    }
    own: dict[str, Any] = {
        "plugin": "wmcore_pull",
        "now": now.isoformat(),
        "seed": seed,
        "step": step,
        "team": team,
        "excludeWorkflows": list(exclude_workflows),
    }
    if schedd_free_slots is not None:  # the scenario gives the jobs in the schedd; the room follows from gdpconfig
        limit = math.floor(int(config["WMCORE_MAX_JOBS_PER_OWNER"]) * float(config["WMCORE_PULL_SCHEDD_FRACTION"]))
        own["schedd"] = {"jobs": limit - schedd_free_slots}
    return shared, own
