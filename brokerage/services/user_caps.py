"""A user's activated analysis jobs throttled while the user runs too much, and released afterwards (seed 002,
"Throttled jobs and tasks": "If a user has more running jobs than CAP_RUNNING_USER_JOBS, activated jobs go to
throttled so that job slots are released to other users. They are automatically changed to activated. Otherwise,
they are closed after 7 days" — the last by the watchdog's TIMEOUT_THROTTLED). The rule is USER_JOB_CAP_RULE's
(brokerage.throttle); this module counts, moves and records. Run by the watchdog, as JEDI's AtlasAnalWatchDog does.

A user's running analysis tasks throttled while the user moves too much data (the same section: "If the total size
of staging/transferring data from TAPE/DISK is larger than PRESTAGE_LIMIT for a user, tasks for the user with data
staging/transfers are throttled until the total size drops below the limit … existing jobs can run"): the data in
motion is the input of the user's jobs set up and waiting for it (defined, assigned: PanDA's dispatch blocks), from
tape when the task's input has replicas on tape only. PRESTAGE_RULE compares; AtlasAnalWatchDog.doForPreStaging
(1.0.4) throttles for 120 minutes at a time and releases once the user is no longer over."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q, Sum

from brokerage.models import Dataset, DatasetReplica, Job, Task
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.services.status import job_status_transition_many, task_status_transition_many
from brokerage.throttle import (
    DATA_MOTION_MARK,
    DATA_MOTION_THROTTLE_MINUTES,
    DataMotionVerdict,
    UserCapVerdict,
    data_motion_rules,
    user_cap_rules,
)

ACTOR = "user job cap"


@dataclass(frozen=True)
class UserCapMove:
    """The analysis jobs of one user (in one working group, or none) throttled or released, and why."""

    user: str
    group: str
    verdict: UserCapVerdict
    jobs: list[int]


def user_jobs_cap(*, now: datetime, vo: str = "atlas") -> list[UserCapMove]:
    """Throttles the activated analysis jobs of each user (per working group) over a cap and releases those of a
    user back under it; one count of the running jobs and their cores, one list of who is throttled, then one
    move per user that changes."""
    config = gdpconfig_view(vo=vo)
    rule = user_cap_rules.pick(config)
    analysis = Job.objects.filter(prodSourceLabel="user")
    running = {
        (row["prodUserName"], row["workingGroup"]): {"JOBS": row["jobs"], "CORES": row["cores"] or 0}
        for row in analysis.filter(jobStatus="running")
        .values("prodUserName", "workingGroup")
        .annotate(jobs=Count("pk"), cores=Sum("coreCount"))
        .order_by()
    }
    throttled = set(
        analysis.filter(jobStatus="throttled").values_list("prodUserName", "workingGroup").distinct().order_by()
    )
    moves = []
    for user, group in sorted(set(running) | throttled):
        prefix = "CAP_RUNNING_GROUP" if group else "CAP_RUNNING_USER"
        caps = {"JOBS": config.get(f"{prefix}_JOBS"), "CORES": config.get(f"{prefix}_CORES")}
        verdict = rule(
            running=running.get((user, group), {"JOBS": 0, "CORES": 0}),
            caps=caps,
            group=bool(group),
            throttled=(user, group) in throttled,
        )
        if verdict.action == "keep":
            continue
        source, target = ("activated", "throttled") if verdict.action == "throttle" else ("throttled", "activated")
        jobs = analysis.filter(prodUserName=user, workingGroup=group, jobStatus=source)
        if verdict.longer_than_seconds is not None:
            jobs = jobs.filter(Q(maxWalltime__gt=verdict.longer_than_seconds))
        ids = list(jobs.values_list("pk", flat=True))
        who = f"user {user}" + (f" of group {group}" if group else "")
        reason = f"{who}: {verdict.sentence}"
        moved = job_status_transition_many(
            from_status=source, to_status=target, job_ids=ids, reason=reason, actor=ACTOR, now=now
        ) if ids else []  # fmt: skip
        moves.append(UserCapMove(user, group, verdict, moved))
    return moves


DATA_MOTION_ACTOR = "data motion throttle"
# the jobs whose input is on its way to them (DBProxy.getDispatchDatasetsPerUser, 1.0.4: jobsDefined4)
DATA_WAITING_JOBS = ("defined", "assigned")
GB = 1024**3


@dataclass(frozen=True)
class DataMotionMove:
    """One user's (working group's, when the jobs have one: JEDI's uid) data in motion, in GB per kind, the
    verdict, and the tasks throttled and released."""

    user: str
    gigabytes: dict[str, float]
    verdict: DataMotionVerdict
    throttled: list[int]
    released: list[int]


def user_data_motion(*, vo: str = "atlas") -> dict[str, dict[str, dict]]:
    """user → kind ("prestaging", "transfer") → {"bytes", "tasks"}: the input of each user's analysis jobs waiting
    for it (three queries)."""
    rows = list(
        Job.objects.filter(prodSourceLabel="user", jobStatus__in=DATA_WAITING_JOBS, task__vo=vo)
        .values("prodUserName", "workingGroup", "task_id")
        .annotate(size=Sum("inputFileBytes"))
        .order_by()
    )
    tasks = {row["task_id"] for row in rows}
    names = dict(
        Dataset.objects.filter(task_id__in=tasks, master__isnull=True, type="input").values_list(
            "datasetName", "task_id"
        )
    )
    on_disk: dict[int, bool] = {}
    for name, tape in DatasetReplica.objects.filter(datasetName__in=list(names), nFiles__gt=0).values_list(
        "datasetName", "endpoint__is_tape"
    ):
        on_disk[names[name]] = on_disk.get(names[name], False) or not tape
    motion: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        kind = "prestaging" if on_disk.get(row["task_id"]) is False else "transfer"
        uid = row["workingGroup"] or row["prodUserName"]
        entry = motion[uid].setdefault(kind, {"bytes": 0, "tasks": set()})
        entry["bytes"] += row["size"] or 0
        entry["tasks"].add(row["task_id"])
    return motion


def users_data_motion_throttle(*, now: datetime, vo: str = "atlas") -> list[DataMotionMove]:
    """Throttles the running analysis tasks moving data of a user over PRESTAGE_LIMIT (module docstring); releases
    the tasks it throttled once their user is no longer over, or after 120 minutes (releaseThrottledTasks_JEDI;
    throttled again at the next pass if still over). One move per user that changes."""
    config = gdpconfig_view(vo=vo)
    rule = data_motion_rules.pick(config)
    limit = config.get("PRESTAGE_LIMIT")
    motion = user_data_motion(vo=vo)
    held = defaultdict(list)
    for pk, user, group, since in Task.objects.filter(
        status="throttled", errorDialog__startswith=DATA_MOTION_MARK, vo=vo
    ).values_list("pk", "userName", "workingGroup", "throttledTime"):
        held[group or user].append((pk, since))
    moves = []
    for uid in sorted(set(motion) | set(held)):
        gigabytes = {kind: entry["bytes"] / GB for kind, entry in motion.get(uid, {}).items()}
        verdict = rule(gigabytes=gigabytes, limit_tb=limit)
        tasks = {pk for kind in verdict.kinds for pk in motion[uid][kind]["tasks"]}
        throttled = task_status_transition_many(
            from_status="running",
            moves={pk: ("throttled", f"user {uid}: {verdict.sentence}") for pk in tasks},
            extra={pk: {"throttledTime": now, "errorDialog": verdict.sentence[:255]} for pk in tasks},
            actor=DATA_MOTION_ACTOR,
            now=now,
        ) if tasks else []  # fmt: skip
        period = timedelta(minutes=DATA_MOTION_THROTTLE_MINUTES)
        due = [pk for pk, since in held.get(uid, []) if not verdict.kinds or since is None or since + period <= now]
        why = f"user {uid}: data in motion no longer over the limit" if not verdict.kinds else "120 minutes passed"
        released = task_status_transition_many(
            from_status="throttled",
            moves={pk: ("running", why) for pk in due},
            extra={pk: {"errorDialog": ""} for pk in due},
            actor=DATA_MOTION_ACTOR,
            now=now,
        ) if due else []  # fmt: skip
        if throttled or released:
            moves.append(DataMotionMove(uid, gigabytes, verdict, throttled, released))
    return moves
