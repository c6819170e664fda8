"""Runs the real WMCore code (wmagent 2.4.5.9, unmodified) over the cases wmcore_compare.py writes, in the venv
wmcore_setup.py builds. Not part of the project's import graph: it imports WMCore, which only that venv has.

    python wmcore_driver.py compare CASES.json WORKRESTRICTIONS.js LIST_RUNNER.js > RESULTS.json
    python wmcore_driver.py speed WORK.json REPEAT > SECONDS.json

What stands in for the services the code would talk to, and nothing more:
- CouchDB: the availableByPriority view (Available documents by Priority, then document id, descending, with skip
  and limit) is emulated; the list function is the real workRestrictions.js, run by node (wmcore_list.js).
- oracledb: an empty module (WMCore.Database.DBFactory calls init_oracle_client() on import).
- ResourceControl's listThresholdsForCreate / listThresholdsForSubmit answer the case's rows in the DAO's format.
- The JobSubmitter's WMBS reads (Jobs.ListForSubmitter), ChangeState and the job.pkl files: the case's jobs.
  The poller is built without __init__ (which wants a configuration, a database, BossAir and ReqMgr) and given
  the attributes __init__ sets; then the real getThresholds, refreshCache and assignJobLocations run.
- Instrumentation that changes no logic: possibleSites is wrapped to record the elements the loop considers,
  siteJobCounts records the site each accepted element gets (setdefault is called once per acceptance), and
  _handleSubmitFailedJobs is wrapped to record each failed job's exit code before it runs.
- The submitter's possible sites are iterated in name order (a frozenset subclass), as ours are: the real code
  walks them in string-hash order, which changes with PYTHONHASHSEED.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import random
import re
import subprocess
import sys
import tempfile
import time
import types

_oracle = types.ModuleType("oracledb")
_oracle.init_oracle_client = lambda *args, **kwargs: None
_oracle.version = _oracle.__version__ = "3.3.0"
sys.modules.setdefault("oracledb", _oracle)

import WMComponent.JobSubmitter.JobSubmitterPoller as JobSubmitterPoller  # noqa: E402
import WMCore.WorkQueue.WMBSHelper as WMBSHelper  # noqa: E402
import wmcoredb  # noqa: E402
from WMCore.WorkQueue import WorkQueueBackend as Backend  # noqa: E402
from WMCore.WorkQueue.DataStructs.WorkQueueElement import WorkQueueElement, possibleSites  # noqa: E402

logging.basicConfig(level=logging.CRITICAL)
ELEMENT = "WMCore.WorkQueue.DataStructs.WorkQueueElement.WorkQueueElement"
TEAM = "production"  # the speed run's elements and agent


def _sub_type_priorities() -> dict[str, int]:
    """wmbs_sub_types.priority as the release creates it (wmcoredb's initial_wmbs_data.sql, read from the installed
    wheel rather than copied): what Jobs.ListForSubmitter returns as task_prio."""
    sql = os.path.join(os.path.dirname(wmcoredb.__file__), "sql", "mariadb", "wmbs", "initial_wmbs_data.sql")
    with open(sql) as stream:
        found = re.findall(r"INSERT INTO wmbs_sub_types \(name, priority\) VALUES \('(\w+)', (\d+)\)", stream.read())
    return {name: int(priority) for name, priority in found}


TASK_PRIORITY = _sub_type_priorities()


class ListRunner:
    """One node process running workRestrictions.js for every list request of the run."""

    def __init__(self, list_function: str, runner: str) -> None:
        self.process = subprocess.Popen(
            ["node", runner, list_function], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, rows, query) -> str:
        self.process.stdin.write(json.dumps({"rows": rows, "query": query}) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


class CouchStandIn:
    """The workqueue database: documents in memory, the view emulated, the list function real."""

    def __init__(self, documents, lists: ListRunner) -> None:
        self.documents = documents
        self.lists = lists

    def _view(self, descending: bool):
        rows = [d for d in self.documents if d[ELEMENT].get("Status") == "Available"]
        rows.sort(key=lambda d: (d[ELEMENT]["Priority"], d["_id"]), reverse=descending)
        return rows

    def loadView(self, design, view, options=None):
        assert view == "availableByPriority", view
        rows = self._view(True)
        return {"total_rows": len(rows), "rows": [] if (options or {}).get("limit") == 0 else rows}

    def loadList(self, design, list_name, view, options=None):
        assert (list_name, view) == ("workRestrictions", "availableByPriority")
        options = options or {}
        rows = self._view(options.get("descending", False))
        skip, limit = options.get("skip", 0), options.get("limit")
        rows = rows[skip:] if limit is None else rows[skip : skip + limit]
        query = {key: json.dumps(options[key]) for key in ("resources", "num_elem", "team", "wfs") if key in options}
        return self.lists.run([{"id": d["_id"], "key": d[ELEMENT]["Priority"], "doc": d} for d in rows], query)


class ChosenSites(dict):
    """siteJobCounts that notes the site of each accepted element (_evalAvailableWork calls setdefault once)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.chosen = []

    def setdefault(self, key, default=None):
        self.chosen.append(key)
        return super().setdefault(key, default)


class Rows:
    """ResourceControl or a DAO: returns the case's rows."""

    def __init__(self, create=None, submit=None, result=None) -> None:
        self._create, self._submit, self.result = create, submit, result

    def listThresholdsForCreate(self):
        return json.loads(json.dumps(self._create))

    def listThresholdsForSubmit(self):
        return self._submit

    def execute(self, *args, **kwargs):
        return self.result


class StateChanges:
    """ChangeState: the failed jobs' move to submitfailed has nowhere to go (their exit codes are recorded by the
    wrapper of _handleSubmitFailedJobs)."""

    def propagate(self, jobs, new, old):
        pass


class _Baggage:
    pass


class PickledJob(dict):
    """The unpickled WMBS job (job.pkl), with what refreshCache and addJobsToPackage read."""

    def getBaggage(self):
        return _Baggage()

    def getDataStructsJob(self):
        return dict(self)


class NameOrder(frozenset):
    """A frozenset iterated in name order."""

    def __iter__(self):
        return iter(sorted(frozenset.__iter__(self)))


def document(element, team):
    body = {
        "RequestName": element.get("RequestName", ""),
        "Priority": element["Priority"],
        "Jobs": element["Jobs"],
        "Inputs": element.get("Inputs", {}),
        "ParentData": element.get("ParentData", {}),
        "ParentFlag": bool(element.get("ParentFlag", False)),
        "PileupData": element.get("PileupData", {}),
        "SiteWhitelist": element.get("SiteWhitelist", []),
        "SiteBlacklist": element.get("SiteBlacklist", []),
        "NoInputUpdate": bool(element.get("NoInputUpdate", False)),
        "NoPileupUpdate": bool(element.get("NoPileupUpdate", False)),
        "Status": element.get("Status", "Available"),
        "TeamName": element.get("TeamName", team),
        "CreationTime": element["CreationTime"],
    }
    if "blowupFactor" in element:
        body["blowupFactor"] = element["blowupFactor"]
    created = element["CreationTime"]
    return {
        "_id": element["id"],
        "_rev": "1-0",
        "timestamp": created,
        "updatetime": created,
        "type": ELEMENT,
        ELEMENT: body,
    }


def available_work(case, documents, lists, *, elements_cap):
    considered = []
    real = Backend.possibleSites

    def recording(element):
        sites = real(element)
        considered.append(element.id)
        return sites

    Backend.possibleSites = recording
    try:
        random.seed(case["seed"])
        counts = ChosenSites({s: {float(p): n for p, n in by.items()} for s, by in case["site_jobs"].items()})
        backend = object.__new__(Backend.WorkQueueBackend)  # no CouchServer: the stand-in below
        backend.db = CouchStandIn(json.loads(json.dumps(documents)), lists)
        backend.logger = logging.getLogger("workqueue")
        backend.queueUrl = "local://workqueue"
        accepted, _ = backend.availableWork(
            dict(case["thresholds"]),
            counts,
            team=case["team"],
            excludeWorkflows=list(case["excludeWorkflows"]),
            numElems=elements_cap,
            rowsPerSlice=case["rowsPerSlice"],
            maxRows=case["maxRows"],
        )
    finally:
        Backend.possibleSites = real
    return {"considered": considered, "taken": {e.id: site for e, site in zip(accepted, counts.chosen, strict=True)}}


def free_slots(case):
    create = {
        name: {
            "cms_name": name,
            "state": site["state"],
            "total_slots": site["pendingSlots"],
            "pending_jobs": {float(p): n for p, n in case["site_jobs"].get(name, {}).items()},
        }
        for name, site in case["site_thresholds"].items()
    }
    WMBSHelper.ResourceControl = lambda: Rows(create=create)
    pull = WMBSHelper.freeSlots(case["queueDepth"], knownCmsSites=None)  # WorkQueue.freeResouceCheck
    get = WMBSHelper.freeSlots(minusRunning=True, allowedStates=["Normal", "Draining"], knownCmsSites=None)
    return {"pullWork": pull[0], "getWork": get[0]}


def submit_rows(submit, now):
    rows = {}
    for name, site in submit["sites"].items():
        thresholds, pending, running = {}, 0, 0
        for task_type, (pending_slots, max_slots) in site["task_slots"].items():
            load = site["load"][task_type]
            thresholds[task_type] = {
                "pending_slots": pending_slots,
                "max_slots": max_slots,
                "priority": TASK_PRIORITY[task_type],
                "wf_highest_priority": load["highest"],
                "task_pending_jobs": load["pending"],
                "task_running_jobs": load["running"],
            }
            pending += load["pending"]
            running += load["running"]
        rows[name] = {
            "pnns": [name],
            "state": site["state"],
            "state_time": now - site["stateAge"],
            "total_pending_slots": site["pendingSlots"],
            "total_running_slots": site["runningSlots"],
            "total_pending_jobs": pending,
            "total_running_jobs": running,
            "thresholds": thresholds,
        }
    return rows


def job_submitter(submit, workdir, now):
    # one clock for both sides: the case's `now`, which the real poller reads too (JobSubmitterPoller reads
    # time.time() for a site's drain grace period; its own later reading would flip a site at the boundary)
    JobSubmitterPoller.time = types.SimpleNamespace(time=lambda: now, sleep=time.sleep)
    poller = object.__new__(JobSubmitterPoller.JobSubmitterPoller)
    poller.resourceControl = Rows(submit=submit_rows(submit, now))
    poller.currentRcThresholds, poller.jobsByPrio, poller.jobDataCache, poller.jobsToPackage = {}, {}, {}, {}
    poller.drainSites, poller.drainSitesSet, poller.abortSites = {}, set(), set()
    poller.maxJobsThisCycle = submit["limit"]
    poller.maxJobsPerPoll, poller.maxJobsToCache, poller.cacheRefreshSize = 1000, 50000, 30000
    poller.skipRefreshCount, poller.refreshPollingCount = 20, 0
    poller.packageSize, poller.collSize = 500, 500 * 1000
    poller.maxTaskPriority = 1e7
    poller.condorFraction, poller.condorOverflowFraction = 0.75, submit["overflow"]
    poller.ioboundTypes = ("LogCollect", "Merge", "Cleanup", "Harvesting")
    poller.drainGracePeriod = 2 * 24 * 60 * 60
    poller.enableAllSites = False
    poller.useReqMgrForCompletionCheck = False
    poller.changeState = StateChanges()
    poller.setFWJRPathAction = Rows()
    os.makedirs(os.path.join(workdir, "sandbox"), exist_ok=True)
    listed = []
    for job in submit["jobs"]:
        cache_dir = os.path.join(workdir, f"job{job['id']}")
        os.makedirs(cache_dir, exist_ok=True)
        pickled = PickledJob(
            id=job["id"],
            possiblePSN=set(job["possible_sites"]),
            workflow=f"wf{job['priority']}",
            sandbox=os.path.join(workdir, "sandbox", "sandbox.tar.bz2"),
            taskType=job["task_type"],
            requestType="ReReco",
            retry_count=0,
        )
        with open(os.path.join(cache_dir, "job.pkl"), "wb") as handle:
            pickle.dump(pickled, handle)
        listed.append(
            {
                "id": job["id"],
                "request_name": "request",
                "task_type": job["task_type"],
                "cache_dir": cache_dir,
                "retry_count": 0,
                "task_prio": TASK_PRIORITY[job["task_type"]],
                "wf_priority": job["priority"],
            }
        )
    poller.listJobsAction = Rows(result=listed)
    exit_codes = {}
    handle_failed = poller._handleSubmitFailedJobs

    def recording(jobs, exit_code):  # notes each failed job's exit code, then the real handling
        exit_codes.update({job["id"]: exit_code for job in jobs})
        return handle_failed(jobs, exit_code)

    poller._handleSubmitFailedJobs = recording
    poller.getThresholds()
    poller.refreshCache()
    for info in poller.jobDataCache.values():
        info["possibleSites"] = NameOrder(info["possibleSites"])
    packages = poller.assignJobLocations()
    submitted = {job["id"]: job["custom"]["location"] for jobs in packages.values() for job in jobs}
    cached = set(poller.jobDataCache) | set(submitted)
    return {
        "submitted": {str(k): v for k, v in submitted.items()},
        "failed": {str(k): code for k, code in exit_codes.items()},
        "not_cached": [str(j["id"]) for j in submit["jobs"] if j["id"] not in cached and j["id"] not in exit_codes],
    }


def main(cases_path, list_function, runner):
    with open(cases_path) as handle:
        cases = json.load(handle)
    lists = ListRunner(list_function, runner)
    results = []
    started = time.perf_counter()
    try:
        for case in cases:
            documents = [document(element, case["team"]) for element in case["elements"]]
            agent = sorted(case["site_thresholds"])
            possible, passes = {}, {}
            for doc in documents:
                element = WorkQueueElement(**json.loads(json.dumps(doc[ELEMENT])))
                possible[doc["_id"]] = sorted(possibleSites(element))
                passes[doc["_id"]] = [site for site in agent if element.passesSiteRestriction(site)]
            with tempfile.TemporaryDirectory(prefix="wmcore-submitter-") as workdir:
                submitted = job_submitter(case["submit"], workdir, int(case["now"]))
            results.append(
                {
                    "possibleSites": possible,
                    "passes": passes,
                    "isolated": available_work(case, documents, lists, elements_cap=10**9),
                    "deployed": available_work(case, documents, lists, elements_cap=case["workPerCycle"]),
                    "free_slots": free_slots(case),
                    "submit": submitted,
                }
            )
    finally:
        lists.close()
    json.dump({"results": results, "seconds": time.perf_counter() - started}, sys.stdout)


def speed(work_path, repeat):
    """The real matching loop alone (_evalAvailableWork: documents to elements, sortAvailableElements,
    possibleSites, the shuffle, the per-site count), no element cap, timed `repeat` times on fresh documents."""
    with open(work_path) as handle:
        work = json.load(handle)
    documents = [document(element, TEAM) for element in work["elements"]]
    backend = object.__new__(Backend.WorkQueueBackend)
    backend.db, backend.logger, backend.queueUrl = None, logging.getLogger("workqueue"), "local://workqueue"
    seconds, taken = [], 0
    for _ in range(int(repeat)):
        fresh = json.loads(json.dumps(documents))
        counts = {s: {float(p): n for p, n in by.items()} for s, by in work["site_jobs"].items()}
        random.seed(1)
        started = time.perf_counter()
        taken = len(backend._evalAvailableWork(fresh, dict(work["thresholds"]), counts, [], 10**9))
        seconds.append(time.perf_counter() - started)
    json.dump({"seconds": seconds, "taken": taken}, sys.stdout)


if __name__ == "__main__":
    {"compare": main, "speed": speed}[sys.argv[1]](*sys.argv[2:])
