"""Which actions the task page offers for a task in its status, with their labels. The services refuse the
others anyway (brokerage/services/task_commands.py); this only keeps buttons that cannot work off the page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerage import states

if TYPE_CHECKING:
    from brokerage.models import Task

# the statuses task_retry accepts (brokerage/services/task_commands.py reads it from here)
RETRYABLE = ("finished", "exhausted")

# What the task page offers, per task status (and the service each runs).
TASK_ACTIONS = {
    "retry": "Retry the task (failed inputs get new attempts)",
    "broker_now": "Broker again now (do not wait for the retry delay)",
    "reassign": "Reassign to another nucleus",
    "priority": "Change the priority",
    "incexec": "Resubmit with new parameters (incremental execution)",
    "pause": "Pause (no new jobs until resumed; its jobs go on)",
    "resume": "Resume (back to what it was doing)",
    "finish": "Finish (no new jobs; running jobs may end)",
    "abort": "Abort (every job killed)",
}
# what cannot be undone: shown red, after the others and apart from them
DESTRUCTIVE_ACTIONS = ("finish", "abort")


def task_actions_available(task: Task) -> list[str]:
    """The actions that make sense for the task in its status (the services refuse the others anyway)."""
    live = task.status not in ("done", "finished", "failed", "aborted", "broken", "aborting", "finishing", "exhausted")
    available = []
    if task.status in RETRYABLE:
        available.append("retry")
    if task.status in ("done", "failed", "finished"):
        available.append("incexec")
    if task.status == "pending" and task.oldStatus in ("assigning", "ready", "scouted", "running"):
        available.append("broker_now")
    # only production tasks have a nucleus: an analysis task's jobs go wherever its input and the user's queues are
    if task.status in ("pending", "ready", "scouting", "scouted", "running", "assigning") and (
        task.prodSourceLabel != "user"
    ):
        available.append("reassign")
    if live:
        available.append("priority")
    if task.status == "paused":
        available.append("resume")
    elif "paused" in states.TASK.allowed_from(task.status):
        available.append("pause")
    for action, target in (("finish", "finishing"), ("abort", "aborting")):
        if target in states.TASK.allowed_from(task.status):
            available.append(action)
    return available
