"""Drives the REAL job throttler of panda-server 1.0.4 (pandajedi/jedithrottle/JobThrottlerBase.py) on cases in our
format, many per process, in the peer's own virtual environment (tools/peer/setup.py).

Only what sits behind the database is a stand-in (TaskBuffer below), answering from the case: the gdpconfig rows
(getConfigValue, by the exact key the real code asks for), the work queue's jobs by status and resource type
(getJobStatisticsByResourceType), the highest priority among its queued jobs and the number of them
(getHighestPrioJobStat_JEDI), the highest priority of its waiting tasks (checkWaitingTaskPrio_JEDI) and the queued
jobs' walltime (getTotalWallTime_JEDI). No standby jobs (getNumMapForStandbyJobs_JEDI: none; we do not model them).

Usage:  python throttle_driver.py CASES.json  → a JSON list on stdout, one per case: {"throttled": bool or level,
"max_jobs", "min_priority", "lack_of_jobs", "keys": [the config keys asked for], "lines": [its log lines]} or
{"error": text}.
"""

from __future__ import annotations

import logging

from panda_driver import Lines, cases_run  # tools/peer/panda_driver.py, beside this script
from pandajedi.jedithrottle import JobThrottlerBase as throttler_module
from pandajedi.jedithrottle.JobThrottlerBase import JobThrottlerBase


class WorkQueue:
    """The two attributes and the one method of a work queue the throttler reads."""

    def __init__(self, case: dict):
        self.queue_name = case["work_queue"]
        self.throttled = case.get("throttled", True)
        self.queue_id = 1

    def getID(self):
        return self.queue_id


class TaskBuffer:
    """The throttler's database calls, answered from the case."""

    def __init__(self, case: dict):
        self.case = case
        self.asked: list[str] = []

    def get_site_mapper(self):
        return None

    def getConfigValue(self, component, key, app="panda", vo=None):
        self.asked.append(key)
        if key == "WORK_SHORTAGE":
            return self.case.get("work_shortage", False)
        return self.case.get("config", {}).get(key)

    def getJobStatisticsByResourceType(self, work_queue):
        return True, {status: dict(by_type) for status, by_type in self.case.get("stats", {}).items()}

    def getNumMapForStandbyJobs_JEDI(self, work_queue):
        return {}, {}

    def getHighestPrioJobStat_JEDI(self, prod_source_label, cloud, work_queue, resource_name=None):
        top = self.case.get("queued_top") or {}
        return True, {"highestPrio": top.get("priority", -1), "nNotRun": top.get("jobs", 0)}

    def checkWaitingTaskPrio_JEDI(self, vo, work_queue, prod_source_label, cloud, resource_name=None, pid=None):
        waiting = self.case.get("highest_waiting")
        return -1 if waiting is None else waiting

    def getTotalWallTime_JEDI(self, vo, prod_source_label, work_queue, resource_name):
        return self.case.get("total_walltime")


def run(case: dict, lines: Lines) -> dict:
    buffer = TaskBuffer(case)
    throttler = JobThrottlerBase(buffer)
    throttler.comp_name = "prod_job_throttler"
    logger = logging.getLogger("throttle")
    status, throttled = throttler.toBeThrottledBase(
        case.get("vo", "atlas"),
        case.get("prod_source_label", "managed"),
        "WORLD",
        WorkQueue(case),
        case["resource_type"],
        logger,
    )
    return {
        "status": str(status),
        "throttled": throttled,
        "max_jobs": throttler.maxNumJobs,
        "min_priority": throttler.minPriority,
        "lack_of_jobs": throttler.lackOfJobs(),
        "keys": buffer.asked,
        "lines": list(lines.lines),
    }


def main() -> None:
    # MsgWrapper.sendMsg posts to a message server: none offline, the line is in the log already
    throttler_module.MsgWrapper.sendMsg = lambda self, *args, **kwargs: None
    cases_run(run, "throttle")


if __name__ == "__main__":
    main()
