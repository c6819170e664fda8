"""A user's activated analysis jobs throttled while the user runs too much, and released afterwards (seed 002,
"Throttled jobs and tasks": "If a user has more running jobs than CAP_RUNNING_USER_JOBS, activated jobs go to
throttled so that job slots are released to other users. They are automatically changed to activated. Otherwise,
they are closed after 7 days" — the last by the watchdog's TIMEOUT_THROTTLED). The rule is USER_JOB_CAP_RULE's
(brokerage.throttle); this module counts, moves and records. Run by the watchdog, as JEDI's AtlasAnalWatchDog does."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q, Sum

from brokerage.models import Job
from brokerage.selectors.gdpconfig import gdpconfig_view
from brokerage.services.status import job_status_transition_many
from brokerage.throttle import UserCapVerdict, user_cap_rules

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
