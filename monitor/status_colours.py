"""One colour per status, everywhere: the charts' series and bars (monitor.charts) and the badges beside them
(static/css/status-colours.css, written from this table by `status_css` and checked by a test).

Issue 50: finished and running were both green on the overview, and assigned, finished and running one green,
activated and starting one blue, on the queue page. Each status of PanDA's job and task machines, the queues' and
the decisions' has a colour of its own here, kept apart within every group a chart can show together; families of
hue say how it stands (greens ended well, reds ended badly, ambers wait, blues move). The statuses of the other
machines (DIRAC, WMCore, events, files, datasets) take the colour of the PanDA status of the same name, or one of
their own from EXTRA, never one a status of their machine already has.
"""

from __future__ import annotations

from brokerage.states import (
    DIRAC_JOB,
    EVENT,
    INPUT_DATASET,
    INPUT_FILE,
    JOB,
    OUTPUT_DATASET,
    OUTPUT_FILE,
    TASK,
    WMBS_JOB,
    WMCORE_ELEMENT,
    WMCORE_REQUEST,
)

NEUTRAL = "#6b7280"
# PanDA's job and task statuses, the queues' states and the decisions' outcomes: every one distinct from every other
PANDA = {
    # waiting to start
    "registered": "#64748b",
    "defined": "#475569",
    "waiting": "#78716c",
    "pending": "#a16207",
    "throttled": "#c2410c",
    "paused": "#b45309",
    "exhausted": "#854d0e",
    "topreprocess": "#57534e",
    "preprocessing": "#92400e",
    "assigning": "#6d28d9",
    "assigned": "#7c3aed",
    "ready": "#1d4ed8",
    "scouting": "#0e7490",
    "scouted": "#155e75",
    # moving
    "activated": "#2563eb",
    "sent": "#0891b2",
    "starting": "#0369a1",
    "running": "#0d9488",
    "holding": "#ea580c",
    "merging": "#c026d3",
    "transferring": "#4338ca",
    "prepared": "#4d7c0f",
    "finishing": "#65a30d",
    "toretry": "#d97706",
    "toincexec": "#0f766e",
    "rerefine": "#0284c7",
    # ended well
    "finished": "#15803d",
    "done": "#166534",
    "passed": "#059669",
    # ended badly
    "failed": "#b91c1c",
    "broken": "#7f1d1d",
    "tobroken": "#dc2626",
    "aborting": "#be185d",
    "aborted": "#9f1239",
    "closed": "#881337",
    "cancelled": "#9d174d",
    # queues
    "online": "#16a34a",
    "offline": "#991b1b",
    "test": "#ca8a04",
    "brokeroff": "#9a3412",
    # decisions
    "skipped": "#52525b",
}
# colours for the other machines' statuses that have no PanDA namesake
EXTRA = (
    "#0e7490",
    "#7c2d12",
    "#3730a3",
    "#be123c",
    "#047857",
    "#a21caf",
    "#1e40af",
    "#b45309",
    "#334155",
    "#15803d",
    "#6d28d9",
    "#0f766e",
    "#9f1239",
    "#4d7c0f",
    "#1d4ed8",
    "#92400e",
    "#0369a1",
    "#86198f",
    "#365314",
    "#7f1d1d",
)
QUEUE_STATES = ("online", "offline", "test", "brokeroff", "paused")
OUTCOMES = ("assigned", "pending", "skipped", "failed")
OTHER_MACHINES = (DIRAC_JOB, EVENT, INPUT_DATASET, INPUT_FILE, OUTPUT_DATASET, OUTPUT_FILE, WMBS_JOB, WMCORE_ELEMENT,
                  WMCORE_REQUEST)  # fmt: skip
# groups a chart can show together: their statuses never share a colour
GROUPS = {
    "job": JOB.statuses,
    "task": TASK.statuses,
    "queue": QUEUE_STATES,
    "decision": OUTCOMES,
    **{machine.entity: machine.statuses for machine in OTHER_MACHINES},
}


def _table() -> dict[str, str]:
    colours = dict(PANDA)
    for machine in OTHER_MACHINES:
        taken = {colours[s] for s in machine.statuses if s in colours}
        for status in machine.statuses:
            if status in colours:
                continue
            namesake = PANDA.get(status.lower())
            if namesake and namesake not in taken:
                colours[status] = namesake
            else:
                colours[status] = next(c for c in EXTRA + tuple(PANDA.values()) if c not in taken)
            taken.add(colours[status])
    return colours


STATUS_COLOURS = _table()


def status_colour(status: str) -> str:
    return STATUS_COLOURS.get(str(status), NEUTRAL)


def _tint(colour: str, keep: float = 0.14) -> str:
    """The colour mixed with white, `keep` of it: a badge's background, light enough for dark text on it."""
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(255 - (255 - c) * keep):02x}" for c in (red, green, blue))


def status_css() -> str:
    """static/css/status-colours.css: each status badge marked by its colour (a bar at its left, on a tint of it);
    the text stays dark: half of the colours are too light for text (contrast under 4.5:1 on their tint)."""
    lines = ["/* Written by monitor.status_colours.status_css from its table: edit the table, not this file. */"]
    for status, colour in sorted(STATUS_COLOURS.items()):
        lines.append(f".status-{status} {{ border-left-color: {colour}; background: {_tint(colour)}; }}")
    return "\n".join(lines) + "\n"
