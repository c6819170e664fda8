"""Drives the REAL JumboWatchDog of panda-server 1.0.4 (pandajedi/jedidog/JumboWatchDog.py) on rounds in our format,
many per process, in the peer's own virtual environment (tools/peer/setup.py).

Only what sits behind the database is a stand-in (TaskBuffer below), answering from the round: the process lock
(always granted), the gdpconfig rows (getConfigValue, by the exact key the real code asks for) and the tasks with
jumbo flags (getTaskWithJumbo_JEDI, in the dict that query builds). Every write the watchdog asks for is recorded
in order: enableJumboJobs, changeTaskPriorityPanda, kickPendingTasksWithJumbo_JEDI, resetInputToReGenCoJumbo_JEDI.

Usage:  python jumbo_driver.py ROUNDS.json  → a JSON list on stdout, one per round: {"calls": [[name, args…]…],
"keys": [the config keys asked for], "lines": [its log lines]} or {"error": text}.
"""

from __future__ import annotations

import logging

from panda_driver import Lines, cases_run  # tools/peer/panda_driver.py, beside this script
from pandajedi.jedidog.JumboWatchDog import JumboWatchDog


class TaskBuffer:
    """The watchdog's database calls, answered from the round; its writes recorded."""

    def __init__(self, round_: dict):
        self.round = round_
        self.asked: list[str] = []
        self.calls: list[list] = []

    def lockProcess_JEDI(self, **kwargs):
        return True

    def getConfigValue(self, component, key, app="panda", vo=None):
        self.asked.append(key)
        return self.round.get("config", {}).get(key)

    def getTaskWithJumbo_JEDI(self, vo, prodSourceLabel):
        tasks = {}
        for task in self.round["tasks"]:
            tasks[task["jediTaskID"]] = {
                "taskStatus": task["status"],
                "nEvents": task["nEvents"],
                "useJumbo": task["useJumbo"],
                "currentPriority": task["currentPriority"],
                "site": task["site"] or None,
                "nFiles": task["nFiles"],
                "nFilesDone": task["nFilesDone"],
                "nEventsDone": task["nEventsDone"],
                "nEventsRunning": 0,
                "jumboJobs": {"SOME_QUEUE": dict(task["jumbo_jobs"])} if task["jumbo_jobs"] else {},
            }
        return tasks

    def enableJumboJobs(self, jediTaskID, nJumboJobs, nJumboPerSite):
        self.calls.append(["enableJumboJobs", jediTaskID, nJumboJobs, nJumboPerSite])

    def changeTaskPriorityPanda(self, jediTaskID, newPriority):
        self.calls.append(["changeTaskPriorityPanda", jediTaskID, newPriority])

    def kickPendingTasksWithJumbo_JEDI(self, jediTaskID):
        self.calls.append(["kickPendingTasksWithJumbo_JEDI", jediTaskID])
        return 1

    def resetInputToReGenCoJumbo_JEDI(self, jediTaskID):
        self.calls.append(["resetInputToReGenCoJumbo_JEDI", jediTaskID])
        return 0


def run(round_: dict, lines: Lines) -> dict:
    buffer = TaskBuffer(round_)
    JumboWatchDog(buffer, None, logging.getLogger("jumbo"), "atlas", "managed").run()
    return {"calls": buffer.calls, "keys": buffer.asked, "lines": list(lines.lines)}


def main() -> None:
    cases_run(run, "jumbo")


if __name__ == "__main__":
    main()
