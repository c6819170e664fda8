"""The error vocabulary of jobs: PanDA's error components in the order its monitor reads them, and the messages of
the codes the simulator and our own services set. Codes and wording are the real ones: pilot codes from the
pilot's ErrorCodes (PanDAWMS/pilot3, pilot/common/errorcodes.py), task-buffer codes from panda-server's
pandaserver/taskbuffer/ErrorCode.py."""

from __future__ import annotations

# (component, code column, diagnostic column), in the order a job's main error is read: the first with a code
COMPONENTS = (
    ("pilot", "pilotErrorCode", "pilotErrorDiag"),
    ("exe", "exeErrorCode", "exeErrorDiag"),
    ("sup", "supErrorCode", "supErrorDiag"),
    ("ddm", "ddmErrorCode", "ddmErrorDiag"),
    ("brokerage", "brokerageErrorCode", "brokerageErrorDiag"),
    ("jobdispatcher", "jobDispatcherErrorCode", "jobDispatcherErrorDiag"),
    ("taskbuffer", "taskBufferErrorCode", "taskBufferErrorDiag"),
)

PILOT = {
    1008: "General pilot error, consult batch log",
    1098: "Not enough local space",
    1099: "Failed to stage-in file",
    1137: "Failed to stage-out file",
    1150: "Looping job killed by pilot",
    1151: "File transfer timed out during stage-in",
    1171: "adler32 mismatch on input file",  # an ES merge job's corrupted input (event_service.PEC_CORRUPTED_INPUT)
    1201: "Job killed by signal: SIGTERM",
    1212: "Payload ran out of memory",
    1213: "Reached batch system time limit",
    1235: "Payload exceeded maximum allowed memory",
    1305: "Failed to execute payload",
    1324: "Service not available at the moment",
    1361: "Remote file could not be opened",
    1377: "CVMFS is not responding",
}

# panda-server ErrorCode.py
TASK_BUFFER_KILLED = 100  # EC_Kill
TASK_BUFFER_TRANSFER_TIMEOUT = 101  # EC_Transfer
TASK_BUFFER_EXPIRED = 102  # EC_Expire
TASK_BUFFER_REASSIGNED = 105  # EC_Reassigned (rebrokerage)
TASK_BUFFER_MERGE_FAILED = 113  # EC_MergeFailed: the merge job of its pre-merged outputs failed its last attempt
TASK_BUFFER = {
    TASK_BUFFER_KILLED: "killed",
    TASK_BUFFER_TRANSFER_TIMEOUT: "transfer timeout",
    TASK_BUFFER_EXPIRED: "expired",
    103: "aborted",
    TASK_BUFFER_REASSIGNED: "reassigned by rebrokerage",
    106: "reassigned by server-side retry",
    TASK_BUFFER_MERGE_FAILED: "merge failed",
}

KNOWN = {"pilot": PILOT, "taskbuffer": TASK_BUFFER}


def error_label(component: str, code: int | None) -> str:
    """`pilot:1099 Failed to stage-in file`, the way the BigPanDA monitor writes an error."""
    if not code:
        return "no error code"
    message = KNOWN.get(component, {}).get(code, "")
    return f"{component}:{code}" + (f" {message}" if message else "")


def job_main_error(job: dict) -> tuple[str, int | None, str]:
    """(component, code, diagnostic) of the first component with a non-zero code; ("", None, "") when none."""
    for component, code_column, diag_column in COMPONENTS:
        code = job.get(code_column)
        if code:
            return component, code, job.get(diag_column) or ""
    return "", None, ""
