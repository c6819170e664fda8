"""Profiles: named sets of gdpconfig values (REFERENCE.md ruling 5).

`seed` (the default) is the seeds' behaviour: it sets nothing, every parameter keeps its registry default. `panda`
reproduces panda-server 1.0.4 (pandajedi/jedibrokerage/AtlasProdJobBroker.py, AtlasProdTaskBroker.py,
AtlasAnalJobBroker.py, AtlasBrokerUtils.py): each value below switches one behaviour where the real code departs
from the seed, and `tools/peer/compare.py` checks the profile against that code run side by side on generated
scenarios (tests/tools/peer, `make test-peer` within `make test`).

Resolution (ConfigView): a stored row (or a scenario's own `gdpconfig`) wins over the profile's value, which wins
over the registry default. Plain Python: the engine and the admin read the same table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PROFILE = "seed"


@dataclass(frozen=True)
class Profile:
    """One named set of values; `source` says what the values reproduce."""

    name: str
    title: str
    source: str
    values: Mapping[str, Any] = field(default_factory=dict)


PROFILES: dict[str, Profile] = {
    "seed": Profile(
        "seed",
        "The seeds' behaviour",
        "../shared/seeds (000 > 001 > 002 for PanDA brokerage), REFERENCE.md rulings",
    ),
    "panda": Profile(
        "panda",
        "panda-server 1.0.4",
        "panda-server 1.0.4 (PyPI sdist): AtlasProdJobBroker, AtlasProdTaskBroker, AtlasAnalJobBroker",
        {
            # AtlasProdJobBroker.doBrokerage scans every queue of the cloud; names are not looked at
            # AtlasProdTaskBroker (task brokerage)
            "TASK_INPUT_COPY_REQUIRED": True,
            "TASK_BACKLOG_STRICT": True,
            "TASK_JOB_CHECK": True,
            "TASK_ENDPOINT_RULE": "panda",
            "TASK_LOCALITY_RULE": "panda",
            "TASK_WEIGHT_RULE": "panda",
            "FULL_CHAIN_RULE": "panda",
            # AtlasAnalJobBroker (analysis job brokerage)
            "USE_NEW_BASIC_WEIGHT": True,
            "ANALYSIS_WEIGHT_RULE": "panda",
            "ANALYSIS_SKIP_CLOSED": True,
            "ANALYSIS_LOCALITY_RULE": "panda",
            "ANALYSIS_BAD_JOBS_STRICT": True,
            "ANALYSIS_STORAGE_FLOOR_RULE": "panda",
            "ANALYSIS_THROTTLE_RULE": "panda",
            # AtlasAnalWatchDog.doForPriorityMassage and DBProxy.throttleUserJobs (job-level throttling)
            "USER_JOB_CAP_RULE": "panda",
            # AtlasAnalWatchDog.doForPreStaging: USER_PRESTAGE_LIMIT and USER_TRANSFER_LIMIT, 1,024 GB when unset
            "PRESTAGE_RULE": "panda",
            # JumboWatchDog.run: no enabling (tasks ask with nJumboJobs), priority lifts, kicks, inputs given back
            "JUMBO_DOG_RULE": "panda",
            # JobGenerator and JobThrottlerBase allocate no share: getJob's order serves them (SHARE_ALLOCATION_RULE)
            "SHARE_ALLOCATION_RULE": "panda",
            # copyArchive.py kills the waiting jobs older than an hour (seed 002: 30 min)
            "TIMEOUT_WAITING": 1,
            "ANALYSIS_SITES_RULE": "panda",
            "ANALYSIS_STABILIZER_RULE": "panda",
            "ANALYSIS_OVERLOAD_RULE": "panda",
            "ANALYSIS_VP_RULE": "panda",
            "DATA_CHECK_TIMEOUT_FROM": "frozen",
            # AtlasProdJobBroker (job brokerage)
            "EXCLUDE_TEST_QUEUES": False,
            # SiteMapper.getNucleus knows a nucleus only through its queues; doBrokerage stops on an unknown one
            "NUCLEUS_NEEDS_QUEUE": True,
            "FAIRSHARE_RULE": "panda",
            "INPUT_COMPLETENESS_CHECK": True,
            # "SW/HW check": the real check, ported (engine/panda/software_panda.py); it also covers what the seed
            # check's switches RELEASES_ANY_SKIPS_HW_CHECK, RELEASES_LIST_ACCEPTED and CPU_CHECK_NEEDS_ARCHITECTURE
            # and the analysis ANALYSIS_SW_RULE select, which the profile therefore leaves at the seed's values
            "SOFTWARE_RULE": "panda",
            # pre-assigned and pmerge job sets, direct input reading, connectivity (AtlasProdJobBroker 181-227,
            # CoreUtils.use_direct_io_for_job, "network connectivity")
            "PREASSIGNMENT_RULE": "panda",
            "DIRECT_IO_RULE": "panda",
            "CONNECTIVITY_RULE": "panda",
            "JOB_ENDPOINT_RULE": "panda",
            "DISK_IO_RULE": "panda",
            "ES_RULE": "panda",
            # "calculate weight": bootstrap figures up to priority 150, nBatchJob only with pilots at Harvester
            # queues, numSlots per core
            "MAX_PRIO_TO_BOOTSTRAP": 150,
            "BOOTSTRAP_NEEDS_PILOTS": True,
            "NUM_SLOTS_RULE": "per_core",
            "BOOTSTRAP_EMPTY_QUEUES": True,
            "NW_THROUGHPUT_LOOKUP": "week_first",
            "DATA_COMPLETE_ONLY_RULE": True,
            "LOCAL_DATA_DISK_ONLY": True,
            "T1_WEIGHT_HIGH_PRIO_SCOUTS": True,
            "T1_WEIGHT_IO_STRICT": True,
            "NEGATIVE_T1_WEIGHT_RULE": "most_running",
            "JOB_CAP_RULE": "panda",
            "MAXWDIR_SCALING": "single_core_task",
            "MANY_ASSIGNED_RULE": "plus_one",
            "MEMORY_RULE": "panda",
            "CRIC_QUEUE_RULE": "panda",
            "JOB_WALLTIME_RULE": "panda",
            "JOB_DISK_RULE": "panda",
            "PILOT_RULE": "panda",
            "IO_CHECK_RULE": "panda",
            "EXPRESS_MIN_PRIORITY": 1001,
            "INACTIVE_COUNTS_STARTING": True,
            "TRANSFERRING_AT_NUCLEUS": False,
            "NUCLEUS_OUTPUT_SHARING": True,
        },
    ),
    "dirac": Profile(
        "dirac",
        "DIRAC 9.1.22",
        "dirac 9.1.22 (PyPI wheel): WorkloadManagementSystem/DB/TaskQueueDB.py, Client/Matcher.py",
        {
            # TaskQueueDB.matchAndGetJob: ORDER BY RAND()/Priority LIMIT 10, 3 tries; numJobsPerTry=50
            "DIRAC_TQ_ORDER": "dirac",
            "DIRAC_JOBS_PER_TRY": 50,
            # v9 task queues have no Setup and no pilot types (singleValueDefFields, multiValueDefFields)
            "DIRAC_MATCH_SETUP_PILOT_TYPE": False,
            # __generateTQMatchSQL: a GridCE or Platform not sent adds no condition
            "DIRAC_ABSENT_CE_PLATFORM": "dirac",
            # Matcher._checkCredentials: a generic pilot's OwnerGroup = the groups of its VO
            "DIRAC_GENERIC_PILOT_VO": True,
            # __setPrioritiesForEntity (AVG of RealPriority), recalculateTQSharesForEntity (JobSharing not split),
            # calculate_priority (queues equal but for Sites/BannedSites/RAM summed)
            "DIRAC_PRIORITY_AVERAGE": "real",
            "DIRAC_SPLIT_JOB_SHARING": False,
            "DIRAC_PRIORITY_GROUPING": True,
        },
    ),
}

PROFILES["wmcore"] = Profile(
    "wmcore",
    "wmagent 2.4.5.9",
    "wmagent 2.4.5.9 (PyPI wheel): WMCore/WorkQueue/WorkQueueBackend.py, DataStructs/WorkQueueElement.py, "
    "WMBSHelper.py, couchapps/WorkQueue/lists/workRestrictions.js, WMComponent/JobSubmitter/JobSubmitterPoller.py",
    {
        # WMBSHelper.freeSlots: pending slots × QueueDepth (pullWork), pending slots (getWork, minusRunning only
        # fills the counts); WorkQueue.freeResouceCheck counts the local queue's Available elements
        "WMCORE_FREE_SLOTS": "wmcore",
        "WMCORE_PULL_COUNTS": "wmcore",
        # WorkQueueBackend.availableWork: view slices of RowsPerSlice, WorkPerCycle 100
        "WMCORE_AVAILABLE_ORDER": "wmcore",
        "WMCORE_WORK_PER_CYCLE": 100,
        # possibleSites / passesSiteRestriction / workRestrictions.js
        "WMCORE_SITE_RULE": "wmcore",
        # WorkQueueManagerWorkPoller: availableScheddSlots(dbi) with condorFraction 1
        "WMCORE_PULL_SCHEDD_FRACTION": 1.0,
        # JobSubmitterPoller: task_prio × maxTaskPriority + wf_priority; Merge bypasses NoPendingSlot;
        # refreshCache's 71101/71102/71103 and the drain grace period
        "WMCORE_TASK_PRIORITY": True,
        "WMCORE_MERGE_IGNORES_PENDING": True,
        "WMCORE_SUBMIT_LOCATIONS": "wmcore",
    },
)

PROFILE_NAMES: tuple[str, ...] = tuple(PROFILES)


def profile_values(name: str) -> Mapping[str, Any]:
    """The values a profile sets (KeyError for an unknown name)."""
    return PROFILES[name].values
