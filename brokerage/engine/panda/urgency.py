"""Which tasks are urgent, express or of high priority: the classes several PanDA rules exempt or favour."""

from __future__ import annotations

from brokerage.engine.core.plugin import (
    Context,
)

HIGH_PRIORITY = 800


URGENT = "urgent"


def is_urgent(task) -> bool:
    """processingType urgent (seeds 001, 002: "processingType=urgent"; seed 000's "*urgent*" is emphasis), compared
    whole as panda-server 1.0.4 does (InputChunk.isExpress: `processingType == "urgent"`): `urgent_reco` is not."""
    return task.processingType == URGENT


def is_express(task, config) -> bool:
    """seed 000: processingType urgent or priority ≥ 1000; panda-server 1.0.4 InputChunk.isExpress: above 1000."""
    return is_urgent(task) or task.currentPriority >= config.get("EXPRESS_MIN_PRIORITY")


def urgent_or_scout(context: Context, *, merge_too: bool) -> bool:
    """Priority ≥ 800 or a scout (and, for the inactive-queue rule, merge and pre-merged jobs too)."""
    jobs = context.scenario.jobs
    return (
        context.task.currentPriority >= HIGH_PRIORITY
        or jobs.isScout
        or (merge_too and (jobs.isMerge or jobs.isPreMerged))
    )
