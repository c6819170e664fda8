"""How an event service job ends (seed 002, "Final status of Event Service jobs"; panda-server 1.0.4's
JobComplexModule.ppEventServiceJob where the seed is silent): from what its event ranges did and where its job set
stands, the job's status, substatus and task-buffer error, and whether a consumer is made again for the ranges left.

"ES jobs go to status=merging if they successfully processed one or more events successfully. Then they go to
status=finished or failed (jobsubstatus=es_merge_failed) once corresponding ES-merge jobs are finished or failed."

* **failed** when "the number of attempts for some event ranges reached the limit" (114, EC_EventServiceMaxAttempt;
  the job set's other ES jobs are then closed, es_aborted: "killed since associated ES jobs failed"), when the job
  itself used its last attempt with ranges left (114 as well: those ranges are fatal), and when every range of its
  job set failed so nothing can be merged (119, EC_EventServiceAllFailed);
* **merging, es_retry** when it processed ranges and a new consumer is made for the ranges left (111,
  EC_EventServiceRetried); **merging, es_wait** when it processed ranges, none is left to give out, and other ES
  jobs of its job set still run (115); **merging, es_merge** when it is the last one and its job set's ranges are all
  done: an ES merge job is made (112);
* **closed, es_inaction** when it processed no range and was retried, or others still run (117,
  EC_EventServiceUnprocessed). The seed lists es_inaction among the merging outcomes though its first sentence sends
  a job that processed nothing nowhere near merging; panda-server 1.0.4 closes it (JobComplexModule 1566-1569), and
  so do we (docs/decisions.md, "The event service").

A failed range is retried ("failed events retried up to their limit"): it is ready again for the next consumer
unless its attempts reached the task's maxAttemptEsJob (JEDI's default 10), when it is fatal.

Plain Python: services/event_service.py reads the ranges and the job set, this decides, the service writes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# panda-server 1.0.4's ErrorCode (taskBufferErrorCode of ES jobs)
EC_RETRIED = 111
EC_MERGE = 112
EC_MAX_ATTEMPT = 114
EC_WAIT_OTHERS = 115
EC_UNPROCESSED = 117
EC_ALL_FAILED = 119
# the task's maxAttemptEsJob when it sets none (JediTaskSpec.getMaxAttemptEsJob, 1.0.4)
MAX_ATTEMPT_ES_JOB = 10
# the job substatuses of ES jobs' outcomes, and of ES jobs closed or failed because of another job
ES_RETRY, ES_WAIT, ES_MERGE, ES_INACTION = "es_retry", "es_wait", "es_merge", "es_inaction"
ES_ABORTED, ES_MERGE_FAILED = "es_aborted", "es_merge_failed"
# an ES job the pilot failed, one whose heartbeat was lost before it processed a range (seed 002: "ES jobs have
# status=failed when … the pilot reported errors with jobsubstatus=pilot_failed, or heartbeat was lost without
# successful event ranges (jobsubstatus=es_heartbeat)")
ES_PILOT_FAILED, ES_HEARTBEAT = "pilot_failed", "es_heartbeat"
LOST_DIAG = {ES_PILOT_FAILED: "the pilot failed it", ES_HEARTBEAT: "its heartbeat was lost"}
# the pilot errors of an ES merge job that could not read an ES job's outputs (1.0.4's EventServiceUtils
# PEC_corruptedInputFiles): the done ranges of the files it names are corrupted, to be processed again. 1099, a
# "temporary" corruption panda-server counts only after repeated failures there (PEC_corruptedInputFilesTmp), is left
# out
PEC_CORRUPTED_INPUT = (1171, 1145, 1175, 1103)


@dataclass(frozen=True)
class EsJobEnd:
    """What an ES job's end is decided from: the ranges it processed and failed now, its attempt, and its job set
    after the failed ranges were counted (ranges fatal, ranges left to process, ranges done, its other ES jobs
    still active)."""

    processed: int
    failed: int
    attempt: int
    max_attempt: int
    fatal_in_set: int
    left_in_set: int
    done_in_set: int
    others_active: int
    lost: str = ""  # ES_PILOT_FAILED: the pilot's report said so; ES_HEARTBEAT: the watchdog found it silent


@dataclass(frozen=True)
class EsOutcome:
    status: str
    substatus: str
    code: int
    diag: str
    retry: bool = False  # a new consumer takes the ranges left
    merge: bool = False  # its job set is ready for its ES merge job
    abort_others: bool = False  # the job set's other ES jobs are closed (es_aborted)
    fatal_left: bool = False  # the ranges left are fatal (the job's last attempt)


def es_job_end(end: EsJobEnd) -> EsOutcome:
    """The outcome of one ES job (module docstring). A job the pilot failed (pilot_failed), or whose heartbeat was
    lost before it processed a range (es_heartbeat), is failed with that substatus whatever its ranges say; what its
    ranges do stays (a new consumer for those left, its job set aborted): panda-server 1.0.4 decides the outcome as
    for any ES job (ppEventServiceJob) and then overwrites the status with the substatus it kept
    (JobComplexModule.archiveJob, "overwrite job status"; Watcher sets es_heartbeat "when no successful events")."""
    outcome = _outcome(end)
    if end.lost == ES_PILOT_FAILED or (end.lost == ES_HEARTBEAT and not end.processed):
        return replace(outcome, status="failed", substatus=end.lost, diag=f"{LOST_DIAG[end.lost]}; {outcome.diag}")
    return outcome


def _outcome(end: EsJobEnd) -> EsOutcome:
    if end.fatal_in_set:
        return EsOutcome(
            "failed", "", EC_MAX_ATTEMPT, f"maximum event attempts reached by {end.fatal_in_set} event ranges",
            abort_others=True,
        )  # fmt: skip
    if end.left_in_set:
        if end.attempt >= end.max_attempt:
            return EsOutcome(
                "failed", "", EC_MAX_ATTEMPT,
                f"its attempt {end.attempt} of {end.max_attempt} ended with {end.left_in_set} event ranges left",
                abort_others=True, fatal_left=True,
            )  # fmt: skip
        if end.processed:
            return EsOutcome(
                "merging", ES_RETRY, EC_RETRIED, f"{end.left_in_set} unprocessed event ranges retried", retry=True
            )
        return EsOutcome(
            "closed", ES_INACTION, EC_UNPROCESSED,
            f"processed no event range: {end.left_in_set} retried", retry=True,
        )  # fmt: skip
    if end.others_active:
        if end.processed:
            return EsOutcome(
                "merging", ES_WAIT, EC_WAIT_OTHERS,
                f"no further action: {end.others_active} other consumers of its job set still running",
            )  # fmt: skip
        return EsOutcome("closed", ES_INACTION, EC_UNPROCESSED, "processed no event range; others still running")
    if not end.done_in_set:
        return EsOutcome("failed", "", EC_ALL_FAILED, "all event ranges failed")
    if end.processed:
        return EsOutcome("merging", ES_MERGE, EC_MERGE, "its job set's event ranges are done: merged next", merge=True)
    return EsOutcome(
        "closed", ES_INACTION, EC_UNPROCESSED, "processed no event range; its job set's are done", merge=True
    )


def range_after_failure(*, attempt: int, max_attempt: int) -> str:
    """A failed range's next status: ready for another consumer, or fatal once its attempts reach the limit
    (attempt counts the failed one)."""
    return "fatal" if attempt >= max_attempt else "ready"
