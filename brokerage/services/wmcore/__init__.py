"""CMS WMCore's work-queue pull over the database (seed 004): the five transitions from an assigned request to
jobs in the pool, the periodic location update, the explicit reset, and the statuses that follow.

1. `request_queue_work`   ReqMgr2 → global queue: inbox element Negotiating → Acquired, one Available element per
                          input block (or per slice of jobs without input), request assigned → acquired.
2. `work_pull`            global → local queue (pullWork): Normal sites, pending + running slots; elements → Negotiating
                          with the child queue; `work_replicate` copies them to the local inbox and queue (Available)
                          and marks inbox and global element Acquired.
3. `work_get`             local queue → WMBS (getWork): Normal and Draining sites, running jobs subtracted; a WMBS
                          subscription and its jobs per element; the element Running everywhere, the request
                          running-open.
4. `job_submitter_cache_refresh`  WMBS created jobs → the JobSubmitter cache (refilled below 30,000 jobs, or when the
                          last refresh is 20 minutes old).
5. `job_submitter_run`    cache → pool: per-type thresholds, the high-priority overflow, the schedd limit.

Every pull (2 and 3) stores a `wmcore_pull` Decision with each element not taken and why, and writes the reason
on the element (`stuck_reason`) for the monitor. Reads are `.values()` in a fixed number of queries per step;
writes are bulk. Statuses move only forward through `status_transition_many` (checked against the state machines,
logged); going back to Available is `element_reset`, logged with who asked.

One module per stage: queue_work (1), pull_work and replicate (2), get_work (3), job_submitter (4, 5), then
locations, interventions (reset, abort, cancel), progress and cycles; common holds what they share.
"""

from brokerage.adapters.wmcore import CONFIG_KEYS

from .common import ACTOR_GLOBAL, ACTOR_LOCAL, ACTOR_SUBMITTER, schedd_free, wmbs_job_transition_many
from .cycles import wmcore_agent_cycle_run, wmcore_cycle_run, wmcore_global_cycle_run
from .get_work import work_get
from .interventions import ABORTABLE, KILLABLE, AbortRefused, ResetRefused, element_cancel, element_reset, request_abort
from .job_submitter import job_submitter_cache_refresh, job_submitter_run
from .locations import element_locations_update
from .progress import wmcore_progress_update
from .pull_work import work_pull
from .queue_work import request_queue_work
from .replicate import work_replicate

__all__ = [
    "ABORTABLE",
    "ACTOR_GLOBAL",
    "ACTOR_LOCAL",
    "ACTOR_SUBMITTER",
    "CONFIG_KEYS",
    "KILLABLE",
    "AbortRefused",
    "ResetRefused",
    "element_cancel",
    "element_locations_update",
    "element_reset",
    "job_submitter_cache_refresh",
    "job_submitter_run",
    "request_abort",
    "request_queue_work",
    "schedd_free",
    "wmbs_job_transition_many",
    "wmcore_agent_cycle_run",
    "wmcore_cycle_run",
    "wmcore_global_cycle_run",
    "wmcore_progress_update",
    "work_get",
    "work_pull",
    "work_replicate",
]
