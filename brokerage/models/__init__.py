"""The domain model. Tables mirroring PanDA/JEDI/CRIC keep their column names; our own tables use snake_case."""

from .accounts import ApiToken, OidcIdentity
from .config import GdpConfig, GdpConfigChange, GdpConfigRevision
from .decisions import BrokerageCycle, CycleFrame, CycleStatus, Decision, DecisionHour, DecisionTrace
from .dirac import DiracJob, DiracJobStatusLog, DiracMatchRecord, DiracTaskQueue, DiracTaskQueueValue
from .grid import (
    DatasetReplica,
    GpuSummary,
    NetworkLink,
    PandaQueue,
    QueuePilotStats,
    QueueStorage,
    Site,
    SoftwareTags,
    StorageEndpoint,
)
from .heartbeat import WorkerHeartbeat
from .housekeeping import HousekeepingRun, HousekeepingStatus, SummaryMark
from .inputs import CycleInputs, DiracMatchInputs, ScenarioPart
from .integrity import IntegrityCheck
from .jobs import (
    Job,
    JobCountNow,
    JobErrorHour,
    JobRetryHistory,
    JobStateHour,
    JobStatusLog,
    JobTimeoutSummary,
    MergePreassignment,
)
from .locks import ProcessLock
from .shares import GlobalShare, GlobalShareSnapshot, WorkQueue
from .tasks import Dataset, DatasetFile, DatasetStatusLog, Event, Task, TaskStatusLog
from .wmcore import (
    JobSubmitterCacheEntry,
    JobSubmitterReport,
    WMBSJob,
    WMBSSubscription,
    WMCoreBlock,
    WMCoreElement,
    WMCoreElementStatusLog,
    WMCoreQueue,
    WMCoreRequest,
    WMCoreRequestStatusLog,
    WMCoreSite,
    WMCoreSiteThreshold,
)

__all__ = [
    "ApiToken",
    "BrokerageCycle",
    "CycleFrame",
    "CycleInputs",
    "CycleStatus",
    "Dataset",
    "DatasetFile",
    "DatasetReplica",
    "DatasetStatusLog",
    "Decision",
    "DecisionHour",
    "DecisionTrace",
    "DiracJob",
    "DiracJobStatusLog",
    "DiracMatchInputs",
    "DiracMatchRecord",
    "DiracTaskQueue",
    "DiracTaskQueueValue",
    "Event",
    "GdpConfig",
    "GdpConfigChange",
    "GdpConfigRevision",
    "GlobalShare",
    "GlobalShareSnapshot",
    "GpuSummary",
    "HousekeepingRun",
    "HousekeepingStatus",
    "IntegrityCheck",
    "Job",
    "JobCountNow",
    "JobErrorHour",
    "JobRetryHistory",
    "JobStateHour",
    "JobStatusLog",
    "JobSubmitterCacheEntry",
    "JobSubmitterReport",
    "JobTimeoutSummary",
    "MergePreassignment",
    "NetworkLink",
    "OidcIdentity",
    "PandaQueue",
    "ProcessLock",
    "QueuePilotStats",
    "QueueStorage",
    "ScenarioPart",
    "Site",
    "SoftwareTags",
    "StorageEndpoint",
    "SummaryMark",
    "Task",
    "TaskStatusLog",
    "WMBSJob",
    "WMBSSubscription",
    "WMCoreBlock",
    "WMCoreElement",
    "WMCoreElementStatusLog",
    "WMCoreQueue",
    "WMCoreRequest",
    "WMCoreRequestStatusLog",
    "WMCoreSite",
    "WMCoreSiteThreshold",
    "WorkQueue",
    "WorkerHeartbeat",
]
