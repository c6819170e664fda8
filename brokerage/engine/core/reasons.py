"""The one table of reason codes and the sentences a shifter reads for them.

Codes are the real PanDA skip codes (REFERENCE.md, "What each job-brokerage code means here"), so traces, the
monitor and the API speak the language shifters already know. A sentence may name detail values in braces;
a value missing from the detail leaves the plain sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Reason:
    code: str
    title: str
    sentence: str
    numbers: str | tuple[str, ...] = ""  # sentences with the compared numbers; the first the detail fills wins


_REASONS = [
    # --- task brokerage (nuclei) ---
    Reason(
        "status", "not online/ACTIVE", "Its status does not allow brokerage.", "Its status is {state}, not {required}."
    ),
    Reason(
        "transfer_backlog",
        "transfer backlog",
        "Too many output files are queued for transfer to it.",
        "{outputQueued} output files are queued to it; the cap is {cap} (NQUEUED_NUC_CAP).",
    ),
    Reason(
        "space",
        "not enough space",
        "Its storage does not have enough free space for the task's output.",
        "Free {spaceFree} GB + expired {spaceExpired} GB − expected output {expectedOutputGB} GB = "
        "{spaceAvailable} GB, not above the threshold of {thresholdGB} GB ({thresholdKey}).",
    ),
    Reason("match", "cannot run the workload", "It cannot execute the task's workload."),
    Reason("source_blacklist", "input storage blacklisted", "The storage holding the input cannot send it."),
    Reason(
        "destination_blacklist",
        "storage not usable over WAN",
        "Its storage cannot send inputs to or receive outputs from satellites over WAN.",
        "{endpoint}: read_wan {read_wan}, write_wan {write_wan}, blacklisted {blacklisted}; both must be ON.",
    ),
    Reason(
        "insize",
        "too little input data local",
        "Too small a share of the input data is at this nucleus.",
        "{localSizeGB} GB of {totalSizeGB} GB input is local ({localPercent} %); more than {requiredPercent} % "
        "is needed (INPUT_SIZE_FRACTION).",
    ),
    Reason(
        "innum",
        "too few input files local",
        "Too small a share of the input files is at this nucleus.",
        "{localFiles} of {totalFiles} input files are local ({localPercent} %); more than {requiredPercent} % is "
        "needed (INPUT_NUM_FRACTION).",
    ),
    Reason(
        "full_chain",
        "full-chain rules",
        "Full-chain rules send the task to another nucleus or queue.",
        "The task's fullChain is {fullChain!r} and the nucleus's bareNucleus is {bareNucleus!r}: {rule}.",
    ),
    Reason("not_full_chain", "not part of the full chain", "Full-chain rules keep this queue out of the chain."),
    # --- job brokerage (queues) ---
    Reason(
        "unknown_nucleus",
        "unknown nucleus",
        "The task's nucleus has no queue, so job brokerage cannot place its jobs anywhere.",
    ),
    Reason(
        "job",
        "no queue can run the jobs",
        "Job brokerage finds no queue at the nucleus that can run the jobs.",
        (
            "Job brokerage keeps none of its {queues} production queues ({queuesSkipped}).",
            "Job brokerage fails at every queue: {rule}.",
        ),
    ),
    Reason(
        "input_missing",
        "no complete input copy",
        "No complete copy of the task's input can be read over the WAN anywhere, so no nucleus can be chosen.",
    ),
    Reason("link_unusable", "link blocked", "Its network link to the nucleus is blocked."),
    Reason(
        "dest_blacklisted",
        "nucleus cannot receive",
        "The nucleus's output storage cannot receive files over WAN, so satellites cannot send it their output.",
    ),
    Reason("links_full", "link full", "Too many files are queued on its link to the nucleus."),
    Reason("inactive", "inactive", "No job started there in the last 2 hours although activated jobs waited."),
    Reason("opportunistic", "opportunistic", "It is opportunistic (pledgedcpu = −1) and the job is urgent or a scout."),
    Reason("zeroshare", "zero share", "Its fair-share policy gives this kind of job a zero share."),
    Reason("io", "input too far", "The task is IO-intensive and too much input would have to be moved there."),
    Reason("diskIO", "disk IO over limit", "Its disk IO per core is over its limit and the task's diskIO is above it."),
    Reason("cpucore", "core count", "Its core count does not match the task's."),
    Reason("max_cpucore", "too many cores", "Its core count exceeds the task's maxCoreCount."),
    Reason("cache", "software or hardware", "The release, cache, platform, container, CPU or GPU does not match."),
    Reason("lowmemory", "memory too small", "The job needs more memory than its maxrss."),
    Reason("highmemory", "memory too large", "The job needs less memory than its minrss."),
    Reason(
        "remoteio", "no direct access", "The task reads input only by direct access and the queue does not allow it."
    ),
    Reason("disk", "not enough disk", "Its work directory or local storage is too small for the job."),
    Reason("read_lan_blacklist", "input storage blacklisted", "An input endpoint cannot be read over LAN."),
    Reason("write_lan_blacklist", "output storage blacklisted", "An output endpoint cannot be written over LAN."),
    Reason("read_wan_blacklist", "storage cannot send over WAN", "An endpoint cannot send files over WAN."),
    Reason("write_wan_blacklist", "storage cannot receive over WAN", "An endpoint cannot receive files over WAN."),
    Reason("shortwalltime", "walltime too short", "The job's estimated walltime is above its maxtime."),
    Reason("longwalltime", "walltime too long", "The job's estimated walltime is below its mintime."),
    Reason("min_walltime", "walltime below minimum", "The job's estimated walltime is below its mintime."),
    Reason(
        "scout_walltime",
        "walltime too short for scouts",
        "Scout or walltime-undefined jobs need a maxtime of at least 24 hours.",
    ),
    Reason("network", "network connectivity", "Its worker-node connectivity does not accept the task's."),
    Reason("es", "event service", "Its event-service settings do not fit the job."),
    Reason("eshigh", "event service for urgent work", "It takes event-service jobs of urgent tasks only."),
    Reason("nones", "event service only", "It takes event-service jobs only."),
    Reason("es_ucore", "event service on a single-core queue", "Event-service jobs do not go to its 1-core part."),
    Reason("transferring", "too many transferring", "Too many of its jobs are transferring output."),
    Reason("t1weight", "not at the nucleus", "The task sends all jobs to the nucleus (t1Weight = −1)."),
    Reason(
        "t1_weight",
        "fewer running jobs at the nucleus",
        "The task sends all jobs to the nucleus (t1Weight = −1) and another of its queues runs more jobs.",
    ),
    Reason("nopilot", "no pilots", "No pilot asked for a job in the last 3 hours."),
    Reason("lowNetworkWeight", "slow link", "The job is urgent and its network weight is below the threshold."),
    Reason("non_pledged", "opportunistic during work shortage", "WORK_SHORTAGE is on and the queue is opportunistic."),
    Reason("over_pledged", "over its pledge", "WORK_SHORTAGE is on and it runs more cores than it pledged."),
    Reason("cap", "too many queued", "It already has more queued jobs than the limit."),
    Reason("jumbo", "jumbo jobs only", "The queue takes jumbo jobs only (CRIC catchall useJumboJobs)."),
    Reason(
        "max_io_intensity",
        "IO intensity over its limit",
        "The task's ioIntensity is above the queue's max_io_intensity (CRIC params).",
    ),
    Reason(
        "non_local",
        "input not local",
        "The queue reads only input at its own storage (CRIC catchall use_only_local_data) and some would move.",
    ),
    Reason(
        "low_weight",
        "outside the best",
        "It passed every filter but its weight is outside the best candidates.",
        "Its weight {weight} is outside the best {kept}.",
    ),
    # --- analysis ---
    Reason("closed", "jobs closed there", "Jobs of this task were closed there recently."),
    Reason("excluded", "excluded by the task", "The task's excludedSite names it."),
    Reason("notincluded", "not included by the task", "The task's includedSite does not name it."),
    Reason(
        "nonpreassigned",
        "not the pre-assigned queue",
        "The task is pre-assigned to another queue (its site).",
        "The task is pre-assigned to {preassigned}, which {preassignedOutcome}.",
    ),
    Reason("hospital", "hospital queue", "It is a hospital queue (*_HOSPITAL), used only when no other queue is left."),
    Reason("overloaded", "overloaded", "It is overloaded."),
    Reason(
        "overloaded_vp", "VP queue avoided or overloaded", "It is a VP queue the task avoids or that is overloaded."
    ),
    Reason("tmp_user_problem", "user has enough queued there", "The user already has enough queued jobs there."),
    Reason("badsite", "many bad jobs", "Too many of the task's jobs failed or were closed there recently."),
    Reason("fileunavailable", "input unavailable", "The input files are not available there."),
]

# Job-brokerage sentences with the numbers each filter records (brokerage/engine/panda/job_broker.py).
_JOB_NUMBERS = {
    "status": "Its status is {status}, not {required}.",
    "unknown_nucleus": "The task's nucleus {nucleus} is not the site of any queue.",
    "link_unusable": (
        "Its link to the nucleus {nucleus} has closeness {closeness}: blocked.",
        "{linkQueued} files are queued on its link to the nucleus; the cap is {cap} ({capKey}).",
    ),
    "dest_blacklisted": "{endpoint}: write_wan is {write_wan}, so the output cannot reach the nucleus.",
    "links_full": (
        "{linkQueued} files are queued on its link to the nucleus; the cap is {cap} ({capKey}).",
        "{nucleusQueued} files wait to be aggregated to the nucleus; the cap is {cap} ({capKey}).",
    ),
    "inactive": "No job started for {hoursSinceLastStart} h while {activated} jobs were activated "
    "(limit {limitHours} h).",
    "opportunistic": "Its pledgedcpu is {pledgedcpu} (opportunistic) and the job's priority is {priority}.",
    "zeroshare": "Its fairsharepolicy rule {rule!r} gives {processingType} jobs a zero share.",
    "io": "ioIntensity {ioIntensity} kB/s and {missingGB} GB in {missingFiles} files would have to be moved; the "
    "cut-offs are {sizeCutoffGB} GB and {fileCutoff} files.",
    "diskIO": "Its disk IO is {avgDiskIOPerCore} kB/s per core over the limit {queueDiskIOLimit}; the task's diskIO "
    "is {taskDiskIO}.",
    "cpucore": "It runs {queueCoreCount}-core jobs (capability {capability}) and the task needs {taskCoreCount}-core "
    "jobs.",
    "max_cpucore": "Its jobs would get {jobCoreCount} cores; the task allows at most {maxCoreCount}.",
    "cache": "The {check} check failed: the task needs {needed}; the queue has {queue}.",
    "lowmemory": "The job needs {neededMB} MB; its maxrss is {maxrss} MB.",
    "highmemory": "The job needs {neededMB} MB; its minrss is {minrss} MB.",
    "remoteio": "The task reads input only by direct access and direct_access_lan is {direct_access_lan} "
    "(always direct: {directAlways}).",
    "disk": (
        "The job needs {neededMB} MB of work directory and it offers {maxwdirPerCore} MB per core; its storage "
        "has {storageFreeGB} GB free (more than {storageFloorGB} GB needed).",
        "The job needs {neededMB} MB of work directory and it offers {maxwdirPerCore} MB per core; its storage "
        "has {storageUsableGB} GB free or expired ({storageFloorGB} GB or more needed).",
        "Its storage has {storageUsableGB} GB free or expired ({storageFloorGB} GB or more needed).",
    ),
    "read_lan_blacklist": "{endpoint}: {activity} is not {required} (or the endpoint is blacklisted).",
    "write_lan_blacklist": "{endpoint}: {activity} is not {required} (or the endpoint is blacklisted).",
    "read_wan_blacklist": "{endpoint}: {activity} is not {required} (or the endpoint is blacklisted).",
    "write_wan_blacklist": "{endpoint}: {activity} is not {required} (or the endpoint is blacklisted).",
    "shortwalltime": "The job would run {walltime} s; its maxtime is {maxtime} s.",
    "min_walltime": "The job would run {walltime} s; its mintime is {mintime} s.",
    "scout_walltime": "Its maxtime is {maxtime} s; scout or walltime-undefined jobs need {requiredMaxtime} s.",
    "network": "Its wnconnectivity {wnconnectivity!r} does not accept the task's {ipConnectivity!r}.",
    "es": "Its jobseed is {jobseed!r} and the task's eventService is {eventService}.",
    "eshigh": "Its jobseed is {jobseed!r} and the task's eventService jobs are not urgent.",
    "nones": "Its jobseed is {jobseed!r} and the task does not use the event service.",
    "es_ucore": "It is the 1-core part of a unified queue and the task uses the event service.",
    "transferring": "{transferring} jobs are transferring; the limit is {limit} (max(transferringlimit, 2 × {running} "
    "running)).",
    "t1weight": "The task has t1Weight {t1Weight}: only queues at {nucleus} (this one is at {site}).",
    "t1_weight": "It runs {running} jobs; the queue of the nucleus with the most runs {mostRunning}.",
    "full_chain": "The task's fullChain is {fullChain!r} on a bare nucleus ({nucleusBare}): only its queues.",
    "not_full_chain": "Its site is bareNucleus={siteBare} and takes full-chain work only.",
    "nopilot": "{pilotsLast3h} pilots in the last 3 hours.",
    "lowNetworkWeight": "Its network weight {networkWeight} is below {threshold} "
    "(NW_THRESHOLD × NW_WEIGHT_MULTIPLIER).",
    "non_pledged": "WORK_SHORTAGE is on and its pledgedcpu is {pledgedcpu}.",
    "over_pledged": "WORK_SHORTAGE is on and it runs {runningCores} cores over its pledge of {pledgedcpu}.",
    "max_io_intensity": "The task's ioIntensity is {ioIntensity} kB/s; the queue's max_io_intensity is "
    "{maxIOIntensity}.",
    "non_local": "{mbToMove} MB in {filesToMove} input files would have to move to it.",
    "excluded": "The task's excludedSite ({excludedSite}) names it.",
    "notincluded": "The task's includedSite ({includedSite}) does not name it.",
    "fileunavailable": "{missingFiles} of the {totalFiles} input files are not at its storage.",
    "overloaded_vp": "It is a virtual-placement queue: the task avoids VP ({avoidVP}) or it is overloaded "
    "({vpOverloaded}).",
    "badsite": "{failedPlusClosed} of the task's jobs failed or were closed there in {windowHours} h; the limit is "
    "{limit} (max(2 × {finished} finished, MIN_BAD_JOBS_TO_SKIP_PQ)).",
    "overloaded": "{queued} jobs are queued; the limit is {limit} (2 × max(20, {running} running)).",
    "tmp_user_problem": "The user has {userQueued} jobs queued there, more than max_q_len {maxQueueLength} "
    "(nQ_max {nQmax} × the user's share {userPercentage}; {queued} queued, {running} running, "
    "{toRunningRate} starts per hour).",
    "cap": (
        "{activatedPlusStarting} activated + starting jobs are over the limit {limit} (max(NQUEUELIMITSITE, 2 × "
        "{running} running)).",
        "{queued} queued jobs are over the limit {limit} (max(NQUEUELIMITSITE, 2 × {running} running)).",
    ),
}


def _with_job_numbers(reason: Reason) -> Reason:
    extra = _JOB_NUMBERS.get(reason.code)
    if not extra:
        return reason
    own = (reason.numbers,) if isinstance(reason.numbers, str) and reason.numbers else tuple(reason.numbers or ())
    return replace(reason, numbers=own + ((extra,) if isinstance(extra, str) else extra))


# DIRAC task-queue matching (seed 003): why a task queue cannot give a job to the resource.
_REASONS += [
    Reason(
        "owner_group",
        "other owner group",
        "The private pilot's group is not the task queue's.",
        "The task queue is for group {required}; the pilot is {offered}.",
    ),
    Reason(
        "owner_dn",
        "other owner",
        "The private pilot's owner is not the task queue's, and the group does not share jobs (JOB_SHARING).",
        "The task queue is {required}'s; the pilot is {offered}'s.",
    ),
    Reason(
        "setup",
        "other setup",
        "The task queue belongs to another setup.",
        "The task queue needs setup {required}; the resource is {offered}.",
    ),
    Reason(
        "cpu_time",
        "not enough CPU time",
        "The jobs need more CPU time than the resource offers.",
        "The task queue needs {required} s of CPU; the resource offers {offered} s.",
    ),
    Reason(
        "pilot_type",
        "pilot type not accepted",
        "The jobs do not accept this pilot type.",
        "The jobs accept {accepted}; the pilot is {offered}.",
    ),
    Reason(
        "site_not_accepted",
        "site not accepted",
        "The jobs may run only at other sites.",
        "The jobs may run at {accepted}; the resource is at {offered}.",
    ),
    Reason(
        "banned_site",
        "banned site",
        "The jobs banned the resource's site.",
        "The jobs banned {banned}; the resource is at {offered}.",
    ),
    Reason(
        "grid_ce",
        "other CE",
        "The jobs require another grid CE.",
        "The jobs require {accepted}; the resource is {offered}.",
    ),
    Reason(
        "platform",
        "platform not accepted",
        "The jobs need another platform.",
        "The jobs need {accepted}; the resource offers {offered}.",
    ),
    Reason(
        "tags",
        "missing tag",
        "The jobs need tags the resource does not offer.",
        "The jobs need {required}; the resource offers {offered}.",
    ),
    Reason(
        "ram",
        "not enough memory",
        "The jobs need more memory than the resource offers.",
        "The task queue needs {required} MB; the resource offers {offered} MB.",
    ),
    Reason(
        "job_type",
        "job type not accepted",
        "The resource asks for another job type (a site outside the mask takes Test jobs only).",
        "The jobs are {accepted}; the resource asks for {offered}.",
    ),
    Reason(
        "required_tags",
        "required tag missing",
        "The resource only takes jobs asking for tags these jobs do not ask for.",
        "The resource requires {required}; the jobs ask for {offered}.",
    ),
    Reason(
        "resource_ban",
        "banned by the resource",
        "The resource bans something the jobs list.",
        "The resource bans {banned} among the jobs' {field}.",
    ),
    Reason("no_waiting_job", "no waiting job", "The task queue has no job waiting."),
    Reason(
        "lower_cpu_time",
        "lower CPU time",
        "Another matching task queue needs more CPU time: the Matcher takes the highest first.",
        "It needs {cpuTime} s, less than the chosen ones.",
    ),
]

# CMS WMCore (seed 004): why a pull left a work-queue element, and why the JobSubmitter keeps a job in its cache.
_REASONS += [
    Reason(
        "site_blacklisted",
        "blacklisted",
        "Every site the element may use is in its site blacklist.",
        ("Its data is at {inputSites}, all blacklisted ({blacklist}).", "Whitelist {whitelist}, all blacklisted."),
    ),
    Reason(
        "no_input_location",
        "input has no location",
        "An input block has no replica anywhere, and the request does not trust its site lists.",
        "No site holds block {blocks}.",
    ),
    Reason(
        "no_parent_location",
        "parent has no location",
        "A parent block has no replica anywhere, and the request does not trust its site lists.",
        "No site holds parent block {blocks}.",
    ),
    Reason(
        "no_pileup_location",
        "pileup has no location",
        "The pileup has no replica anywhere, and the request does not trust its pileup site lists.",
        "No site holds pileup {blocks}.",
    ),
    Reason(
        "no_site_with_input",
        "no site with the input",
        "No site of its whitelist holds its input.",
        "The input is at {inputSites}; the whitelist is {whitelist}.",
    ),
    Reason(
        "no_site_with_parent",
        "no site with the parents",
        "No site it may use holds the parents of its input.",
        "The parents are at {parentSites}; the whitelist is {whitelist}.",
    ),
    Reason(
        "no_site_with_pileup",
        "no site with the pileup",
        "No site it may use holds its pileup (TrustPUSitelists would read it remotely).",
        "The pileup is at {pileupSites}; the whitelist is {whitelist}.",
    ),
    Reason(
        "no_resources",
        "no usable site",
        "The sites it may use are unknown to the agent, or draining or down (pullWork takes Normal sites only).",
        "It may use {possible}; states there: {states}; unknown to the agent: {unknown}.",
    ),
    Reason(
        "threshold_full",
        "sites full at its priority",
        "Every site it may use already has as many jobs of its priority or higher as its threshold.",
        "At priority {priority}: sites {sites} have {jobsAtOrAbove} jobs at or above it, thresholds {thresholds}.",
    ),
    Reason(
        "schedd_limit",
        "schedd limit",
        "The agent's schedd holds MAX_JOBS_PER_OWNER × factor jobs: nothing is pulled or submitted.",
        ("The schedd has no free room ({scheddFree}).", "The submitter may send {limit} jobs."),
    ),
    Reason(
        "no_pending_slot",
        "no pending slot",
        "The site has as many pending jobs as pending slots.",
        "{current} pending at {site}, threshold {threshold}.",
    ),
    Reason(
        "no_task_pending_slot",
        "no pending slot for the type",
        "The site has as many pending jobs of this type as the type's pending slots.",
        "{current} {taskType} jobs pending at {site}, threshold {threshold}.",
    ),
    Reason(
        "no_running_slot",
        "no running slot",
        "The site's pending and running jobs fill its pending and running slots.",
        "{current} jobs at {site}, threshold {threshold}.",
    ),
    Reason(
        "no_task_running_slot",
        "no running slot for the type",
        "The site's pending and running jobs of this type fill the type's slots.",
        "{current} {taskType} jobs at {site}, threshold {threshold}.",
    ),
    Reason(
        "no_task_threshold",
        "no threshold for the type",
        "No site it may use has pending slots for this job type.",
        "No site has pending slots for {taskType} jobs.",
    ),
    Reason(
        "cycle_limit",
        "cycle limit",
        "The pull or the submitter took as much as it may in one cycle; the rest wait for the next.",
        ("{limit} jobs per cycle.", "{workPerCycle} elements per cycle (WMCORE_WORK_PER_CYCLE)."),
    ),
    Reason(
        "empty_whitelist",
        "empty whitelist",
        "The element's site whitelist is empty: today's WorkQueue gives it no site (WMCORE_SITE_RULE wmcore).",
    ),
    Reason(
        "other_team",
        "another team's work",
        "The element belongs to another team; the agent pulls only its team's work.",
        "The element is for team {team}, the agent works for {agentTeam}.",
    ),
    Reason(
        "workflow_aborted",
        "request aborted",
        "The element's request was aborted or force-completed: its work is not acquired.",
        "Request {request} is aborted or force-completed.",
    ),
    Reason(
        "not_read",
        "beyond the rows read",
        "The pull reads only the first rows of the queue by priority; this element was past them.",
        "Only {maxRows} rows are read per cycle, {rowsPerSlice} at a time (WMCORE_MAX_ROWS_PER_CYCLE).",
    ),
    Reason(
        "draining_grace",
        "sites draining",
        "Every site the job may use is draining: it stays out of the cache while a site drains for less than the "
        "grace period.",
        "Its sites {sites} are draining; a job fails after {graceHours} h of draining (WMCORE_DRAIN_GRACE_HOURS).",
    ),
    Reason(
        "no_possible_site",
        "no possible site (71101)",
        "The job has no site where its input passes the site restrictions: it fails with 71101.",
    ),
    Reason(
        "sites_down",
        "sites down (71102)",
        "Every site the job may use is Down or Aborted: it fails with 71102.",
        "Its sites {sites} are Down or Aborted.",
    ),
    Reason(
        "drain_expired",
        "drained too long (71103)",
        "Every site the job may use has been draining longer than the grace period: it fails with 71103.",
        "Its sites {sites} are draining, and no site of the agent started draining within {graceHours} h.",
    ),
]

# --- a task's state (engine/panda/task_states.py): why it is there, for every state but pending ---
_STATES = [
    Reason(
        "state_throttled",
        "throttled",
        "An input reached a fifth attempt: the watchdog holds the task back for a while.",
        (
            "Input {file} is at attempt {attempt}: when the task's inputs reached {threshold} attempts, a multiple "
            "of 5, the watchdog throttled it (level {level}) until {until}; then it goes back to {back}.",
            "When the task's inputs reached {threshold} attempts, a multiple of 5, the watchdog throttled it "
            "(level {level}) until {until}; then it goes back to {back}.",
        ),
    ),
    Reason(
        "state_throttled_data_motion",
        "throttled: its user moves too much data",
        "Its user's input data being staged or transferred to jobs waiting for it is over PRESTAGE_LIMIT: no new "
        "jobs until it drops under the limit (its existing jobs run on).",
        "{by} throttled it at {at}: {reason} (PRESTAGE_LIMIT). No new jobs until it drops under the limit; its "
        "existing jobs run on.",
    ),
    Reason(
        "state_exhausted",
        "exhausted",
        "The task stopped for a shifter to look at it.",
        "The task stopped for a shifter to look at it: {reason}.",
    ),
    Reason(
        "state_exhausted_attempts",
        "exhausted: attempts used up",
        "Every input had all its attempts and some still failed; the task is set to wait for a shifter "
        "instead of finishing.",
        "Every input had all its attempts and some still failed ({reason}); the task is set to wait for a shifter "
        "instead of finishing.",
    ),
    Reason(
        "state_exhausted_scout_cpu",
        "exhausted: scouts' CPU time",
        "Its scout jobs needed more than twice the CPU time the task defines per event.",
        "Its scout jobs needed more than twice the CPU time the task defines per event ({reason}).",
    ),
    Reason(
        "state_exhausted_short_jobs",
        "exhausted: jobs too short",
        "More than 5 scout jobs ran under 4 minutes while over 1,000 jobs are to come: too many, too short jobs.",
        "{reason}.",
    ),
    Reason(
        "state_exhausted_pending",
        "exhausted: pending too long",
        "It waited in the brokerage for longer than TASK_PENDING_TIMEOUT without a nucleus or queue.",
        "It {reason} (TASK_PENDING_TIMEOUT) without a nucleus or queue that passed.",
    ),
    Reason(
        "state_failed",
        "failed",
        "Its jobs kept failing until the inputs had no attempt left.",
        "Its jobs kept failing until the inputs had no attempt left ({reason}).",
    ),
    Reason(
        "state_broken",
        "broken",
        "It cannot run as defined: its scouts or its definition failed.",
        "It cannot run as defined: {reason}.",
    ),
    Reason(
        "state_finished_failures",
        "finished with failures",
        "It finished, but some inputs were not processed: their jobs failed.",
        "It finished, but {failed} of its {total} jobs failed, closed or were cancelled: some inputs were not "
        "processed.",
    ),
    Reason(
        "state_running_failing",
        "running, failing often",
        "It runs, but many of its jobs fail.",
        "It runs, but {rate} % of its jobs that ended in the last {hours} h failed ({failed} of {ended}).",
    ),
    Reason(
        "state_running_merging",
        "running, outputs merging",
        "Some of its jobs wait in merging: their pre-merged outputs are merged once their queue's other jobs are done.",
        "Jobs in merging, waiting for their merge: {merging} ({merges} active, {failed_merges} failed). A queue's "
        "merge job, at priority 5,000, is made once the task's other jobs "
        "there are done, and is tried three times.",
    ),
    Reason(
        "state_running_jumbo",
        "running, with jumbo jobs",
        "Its jumbo jobs take events of any of its job sets on demand, beside its co-jumbo jobs.",
        "Jumbo jobs: {flag}; {jumbo}; {fakes} waiting at WAITING_CO_JUMBO for them. A co-jumbo job whose events "
        "jumbo jobs processed is finished by the co-jumbo check, its events done.",
    ),
    Reason(
        "state_scouting",
        "scouting",
        "A few scout jobs run first; the rest are made once their memory, CPU and output figures are known.",
        "{wanted} scout jobs run first ({done} finished, {failed} failed); the rest are made once their memory, CPU "
        "and output figures are known.",
    ),
    Reason(
        "state_paused",
        "paused",
        "Someone paused it: nothing is brokered or generated until it is resumed.",
        "{by} paused it at {at}: nothing is brokered or generated until it is resumed.",
    ),
    Reason(
        "state_topreprocess",
        "preprocess job next",
        "Its preprocess job is made at the next job generation; its own jobs come after it.",
        "Its preprocess job ({reason}) is made at the next job generation; its own jobs come after it.",
    ),
    Reason(
        "state_preprocessing",
        "preprocessing",
        "Its preprocess job runs; its own jobs are made once it has finished (it is tried once).",
        "Its preprocess job runs since {at}; its own jobs are made once it has finished (it is tried once).",
    ),
    Reason(
        "state_aborting",
        "being aborted",
        "Someone aborted it: its jobs are being killed.",
        "{by} aborted it at {at}: its jobs are being killed.",
    ),
    Reason(
        "state_aborted", "aborted", "Someone aborted it: its jobs were killed.", "{by} aborted it at {at} ({reason})."
    ),
    Reason(
        "state_finishing",
        "being finished",
        "Someone finished it: no new jobs, its queued ones cancelled; it closes once its running jobs end.",
        "{by} finished it at {at}: no new jobs, its queued ones cancelled; it closes once its running jobs end.",
    ),
    Reason(
        "state_finishing_terminated",
        "being finished: its termination condition met",
        "Enough of its input files finished for its termination condition: no new jobs; it closes once its running "
        "jobs end.",
        "Its {reason} input files finished ({at}): no new jobs; it closes once its running jobs end.",
    ),
    Reason(
        "state_passed",
        "passed",
        "Left exhausted for ten days or finished by a shifter: it closes at the next check by what it processed.",
        "Passed at {at} ({reason}): it closes at the next check as done, finished or failed by what it processed.",
    ),
    Reason(
        "state_toretry",
        "being retried",
        "Someone retried it: its failed inputs get new attempts.",
        "{by} retried it at {at}: its failed inputs get new attempts.",
    ),
    Reason(
        "state_toincexec",
        "new parameters coming",
        "Someone resubmitted it with new parameters (incremental execution): they are applied next.",
        "{by} resubmitted it at {at} with new parameters ({reason}): they are applied at the next refining.",
    ),
    Reason(
        "state_rerefine",
        "parameters changed",
        "Its new parameters were applied; its inputs are looked up again for new files before new jobs are made.",
        "Its new parameters were applied at {at} ({reason}); its inputs are looked up again for new files.",
    ),
    # whose fault the main error is (engine/panda/task_states.py FAULT_OF_ERROR)
    Reason(
        "fault_task",
        "the task's fault",
        "The main error is the task's own: its release, configuration or resource requests.",
        "The main error, {error}, is the task's own (its release, configuration or resource requests): {count} of "
        "{ended} jobs, at {where}.",
    ),
    Reason(
        "fault_site",
        "the site's fault",
        "The main error is a site's: its storage, worker nodes or services.",
        "The main error, {error}, is a site's (its storage, worker nodes or services): {count} of {ended} jobs, at "
        "{where}.",
    ),
    Reason(
        "fault_data",
        "the data's fault",
        "The main error is the data's: inputs that could not be read or transferred.",
        "The main error, {error}, is the data's (inputs that could not be read or transferred): {count} of {ended} "
        "jobs, at {where}.",
    ),
]

# --- the job throttler holding a work queue's new jobs back (brokerage/throttle.py): why a task gets none ---
_THROTTLE = [
    Reason(
        "throttle_no_running_enough_queued",
        "no job runs, enough queued",
        "No job of its work queue runs while more are queued than its limit: pilots do not come, or the data is not "
        "there.",
        "No {resource_type} job of work queue {work_queue} runs while {queued} are queued, more than its queue limit "
        "of {queue_limit}: no new jobs until some start.",
    ),
    Reason(
        "throttle_queued_over_threshold",
        "enough queued",
        "Its work queue already holds more queued jobs than its running ones allow.",
        "Work queue {work_queue} holds {queued} queued {resource_type} jobs for {running} running, more than "
        "{threshold} × running and over its queue limit of {queue_limit}: no new jobs until the queued ones start.",
    ),
    Reason(
        "throttle_too_many_defined",
        "brokerage stuck",
        "Too many of its work queue's jobs wait to be assigned a site.",
        "{defined} {resource_type} jobs of work queue {work_queue} are defined, waiting for a site, more than its "
        "queue limit of {queue_limit}.",
    ),
    Reason(
        "throttle_too_many_waiting",
        "too many waiting",
        "Too many of its work queue's jobs wait for their input.",
        "{waiting} {resource_type} jobs of work queue {work_queue} wait for input, more than max(4 × {running} "
        "running, 2 × {bunch}).",
    ),
    Reason(
        "throttle_running_cap",
        "running cap reached",
        "Its work queue runs as many jobs as its running cap allows.",
        "Work queue {work_queue} runs {running} {resource_type} jobs, over its cap of {running_cap} (NRUNNINGCAP).",
    ),
    Reason(
        "throttle_queue_cap",
        "queue cap reached",
        "Its work queue holds as many queued jobs as its cap allows.",
        "Work queue {work_queue} holds {queued} queued {resource_type} jobs, over its cap of {queue_cap} (NQUEUECAP).",
    ),
    Reason(
        "throttle_priority_limit",
        "higher priority first",
        "Its work queue makes jobs only for tasks of higher priority than this one for now.",
        "Work queue {work_queue} makes {resource_type} jobs only for tasks of priority {highest_waiting_priority} or "
        "more while it is throttled; this task's priority is {priority}.",
    ),
    Reason(
        "throttle_share_over_target",
        "share used up",
        "Its share of the grid is used up: other shares below theirs get the free slots first.",
        "The {level} {share} runs {executing_hs06} HS06 over its target of {target_hs06} HS06 ({effective_percent} % "
        "of what the grid runs, idle shares lent included): no new jobs until it is back under its target.",
    ),
    Reason(
        "throttle_share_queued_over_target",
        "share's queue full",
        "Its share already has more jobs queued than its part of the grid can run soon.",
        "The {level} {share} holds {queued_hs06} HS06 of queued jobs, over {threshold} × its target of {target_hs06} "
        "HS06 ({effective_percent} % of what the grid runs): no new jobs until its queued ones start.",
    ),
]

REASONS: dict[str, Reason] = {reason.code: _with_job_numbers(reason) for reason in (*_REASONS, *_STATES, *_THROTTLE)}


# Skips that only say a candidate is of another kind than the work — a queue of another core count or
# event-service set-up — are expected: a single-core task passes over every multi-core queue, and nobody can or
# should act on that. They rank after every other reason, so they are never the headline, the main reason or the
# first advice while another reason removed something (issue 35); alone, they are the reason.
EXPECTED_CODES = frozenset({"cpucore", "es", "eshigh", "nones", "es_ucore"})


def reason_order(counts: Mapping[str, int]) -> list[str]:
    """Reason codes by how much a shifter can act on them: those someone can act on first, then the expected ones;
    each by how many candidates it removed (most first), then by code."""
    return sorted(counts, key=lambda code: (code in EXPECTED_CODES, -counts[code], code))


def reason_title(code: str) -> str:
    reason = REASONS.get(code)
    return reason.title if reason else code


# What each factor of a candidate's weight is, for the pages' candidate tables ("RW = 0, rwUsed = 50" read as
# nothing to a newcomer; issue 50). Names are the engine's (the brokers' `weigh`); the words follow the seeds.
FACTOR_MEANINGS: dict[str, str] = {
    "formula": "which of the seed's weight formulas applied",
    "RW": "the nucleus's remaining work: the work of its tasks not yet done, in PanDA's RW units",
    "rwUsed": "the RW the weight used (RW below its offset of 50 counts as 50)",
    "rwFactor": "1 / RW, or 1 below an RW of 50 (panda-server's task broker)",
    "tapeWeight": "0.001 when more of the input is on tape than on disk at the nucleus, else 1",
    "spaceFreeGB": "free space of the nucleus's output storage, GB",
    "spaceExpiredGB": "space of expired data there, which can be reused, GB",
    "spaceTotalGB": "total space of that storage, GB",
    "spaceFreeCutoffGB": "free space counted at most up to this cut-off, GB",
    "freeTB": "whole TB free, capped by FREE_DISK_CUTOFF in the weight",
    "localInputGB": "input already at the candidate, GB",
    "totalInputGB": "the task's whole input, GB",
    "baseWeight": "the queue's base weight from its running and queued jobs (seed 000, job brokerage)",
    "running": "jobs running at the queue",
    "activated": "jobs activated (waiting for a pilot) at the queue",
    "assigned": "jobs assigned to the queue, waiting for their input",
    "starting": "jobs starting at the queue",
    "defined": "jobs defined for the queue",
    "dataWeight": "the share of the input already at the queue's storage",
    "missingFiles": "input files not at the queue's storage",
    "networkWeight": "the network's weight between the queue's site and the nucleus",
    "nucleusWeight": "the weight of the nucleus (HIGH_PRIORITY_NUCLEUS_RULE)",
    "manyAssigned": "the cut for queues with many assigned jobs",
    "availableGB": "space available at the queue's storage, GB",
    "bootstrap": "an empty queue given a start (BOOTSTRAP_EMPTY_QUEUES)",
    "newWeight": "the analysis weight of USE_NEW_BASIC_WEIGHT",
    "originalWeight": "the analysis weight of the original formula",
    "maxQueueLength": "the queue length above which the queue is weighed down",
    "userQueued": "the user's own jobs queued there",
    "Wq": "the queue's weight from its queued jobs",
    "Ws": "the site's weight from its running jobs",
    "N": "jobs counted for the weight",
}


def factor_meaning(name: str) -> str:
    """What a weight factor is, "" for a name without an entry."""
    return FACTOR_MEANINGS.get(name, "")


def _readable(value: Any) -> Any:
    """Lists read as "A, B", mappings as "A: x, B: y", whole floats as integers, numbers grouped by thousands and
    rounded to what a person compares, a missing value as "none"; other values as they are."""
    if value is None or value == "":
        return "none"
    if isinstance(value, list | tuple):
        return ", ".join(str(_readable(item)) for item in value) or "none"
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {_readable(item)}" for key, item in value.items()) or "none"
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if isinstance(value, int):
        # 4,795,286 rather than 4795286; four-digit values (priorities, core power, minutes) read as they are
        return f"{value:,}" if abs(value) >= 10_000 else value
    if isinstance(value, float):
        # "4795286.5938 GB free" (issue 50): a figure a person reads, at most three significant decimals
        if abs(value) >= 100:
            return f"{value:,.1f}"
        if abs(value) >= 1:
            return f"{value:,.2f}".rstrip("0").rstrip(".")
        return f"{value:.3g}"
    return value


def explain(code: str, detail: Mapping[str, Any] | None = None) -> str:
    """The sentence for a code, with the compared numbers when the detail holds every one the sentence names."""
    reason = REASONS.get(code)
    if reason is None:
        return f"Skipped ({code})."
    if detail and reason.numbers:
        readable = {key: _readable(value) for key, value in detail.items()}
        for template in (reason.numbers,) if isinstance(reason.numbers, str) else reason.numbers:
            try:
                return template.format(**readable)
            except (KeyError, IndexError, ValueError):
                continue
    return reason.sentence
