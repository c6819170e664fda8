"""Drives the REAL global-share ordering of panda-server 1.0.4 on cases in our format, many per process, in the
peer's own virtual environment: the share tree built from GlobalShares.Share nodes and normalised by them, the
HS06 distribution by EntityModule's own __get_hs_leave_distribution over a stand-in cursor answering its one query
(HS06 per gshare and status group), aggregated and sorted by GlobalShares (aggregate_hs_distribution,
sort_branch_by_current_hs_distribution): the order JobDispatcher hands activated jobs to pilots in.

Usage:  python shares_driver.py CASES.json  → a JSON list on stdout, one per case: {"order": [leaf names],
"distribution": {share: {executing, queued, pledged}}} or {"error": text}. A case: {"nodes": [[name, value,
parent or null], …] in the tree's order, "hs06": [[gshare, "executing" | "queued" | "ignore", HS06], …]}.
"""

from __future__ import annotations

import json
import sys
import traceback

from pandaserver.taskbuffer import GlobalShares
from pandaserver.taskbuffer.db_proxy_mods.entity_module import EntityModule


class Cursor:
    """Answers the distribution's one query with the case's rows."""

    def __init__(self, rows):
        self.rows = rows

    def execute(self, sql, *args):
        return None

    def fetchall(self):
        return [tuple(row) for row in self.rows]


class Proxy:
    def __init__(self, rows):
        self.cur = Cursor(rows)


def run(case: dict) -> dict:
    nodes = {}
    root = GlobalShares.Share("root", 100, None, None, None, None, None, None, None, None, None, None)
    for name, value, parent in case["nodes"]:
        share = GlobalShares.Share(name, value, parent, None, None, None, None, None, None, None, None, None)
        nodes[name] = share
        (root if parent is None else nodes[parent]).children.append(share)
    root.normalize()
    leaves = root.get_leaves(leaves=[])  # a fresh list: the default one is shared between calls
    distribution = EntityModule._EntityModule__get_hs_leave_distribution(Proxy(case["hs06"]), leaves)
    root.aggregate_hs_distribution(distribution)
    order = [share.name for share in root.sort_branch_by_current_hs_distribution(distribution)]
    return {"order": order, "distribution": distribution}


def main() -> None:
    with open(sys.argv[1]) as handle:
        cases = json.load(handle)
    results = []
    for case in cases:
        try:
            results.append(run(case))
        except Exception as error:  # the real code raising is a result too
            results.append({"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-1500:]})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
