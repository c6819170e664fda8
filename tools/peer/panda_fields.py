"""What the PanDA differential driver hands the real panda-server 1.0.4 of each scenario field (issue 33: "a driver
that hides nothing").

Every field of the scenario schema that the three ATLAS brokers read is either PASSED (with where the real code
gets it) or UNSUPPORTED (with why the real code cannot be given it). The driver refuses a scenario that sets an
unsupported field away from its default (`refusal`), naming the field, so a comparison never agrees by the real
code not seeing what ours saw. tests/tools/peer/test_driver_fields.py checks that the two tables together name every
field of the schema. Plain data: imported by the driver in the peer's environment and by the project's tests.
"""

from __future__ import annotations

from typing import Any

QUEUE_KEYS = (
    "corecount", "maxrss", "minrss", "maxwdir", "maxinputsize", "maxtime", "mintime", "pledgedcpu",
    "transferringlimit", "maxdiskio", "corepower", "status", "type", "capability", "fairsharepolicy", "catchall",
    "wnconnectivity", "jobseed", "workflow", "atlas_site", "cloud", "releases", "direct_access_lan",
    "direct_access_wan", "astorages", "params",
)  # fmt: skip
# section.field → what the real code receives
PASSED: dict[str, str] = {
    # the task (JediTaskSpec, its split rules, and the task parameters getTaskParamsWithID_JEDI returns)
    "task.jediTaskID": "JediTaskSpec.jediTaskID",
    "task.taskPriority": "JediTaskSpec.taskPriority",
    "task.currentPriority": "JediTaskSpec.currentPriority",
    "task.processingType": "JediTaskSpec.processingType",
    "task.prodSourceLabel": "JediTaskSpec.prodSourceLabel",
    "task.gshare": "JediTaskSpec.gshare and the work queue",
    "task.vo": "JediTaskSpec.vo",
    "task.coreCount": "JediTaskSpec.coreCount and the resource type",
    "task.ramCount": "JediTaskSpec.ramCount and the resource type",
    "task.ramUnit": "JediTaskSpec.ramUnit",
    "task.baseRamCount": "JediTaskSpec.baseRamCount",
    "task.outDiskCount": "JediTaskSpec.outDiskCount",
    "task.outDiskUnit": "JediTaskSpec.outDiskUnit",
    "task.workDiskCount": "JediTaskSpec.workDiskCount",
    "task.workDiskUnit": "JediTaskSpec.workDiskUnit",
    "task.nEsConsumers": "split rule nEsConsumers",
    "task.maxAttemptEsJob": "split rule maxAttemptEsJob",
    "task.nJumboJobs": "split rule nJumboJobs, useJumbo R",
    "task.ioIntensity": "JediTaskSpec.ioIntensity",
    "task.diskIO": "JediTaskSpec.diskIO",
    "task.cpuTime": "JediTaskSpec.cpuTime (HS06sPerEvent)",
    "task.cpuEfficiency": "JediTaskSpec.cpuEfficiency",
    "task.baseWalltime": "JediTaskSpec.baseWalltime",
    "task.architecture": "JediTaskSpec.architecture",
    "task.transUses": "JediTaskSpec.transUses",
    "task.transHome": "JediTaskSpec.transHome (analysis: AnalysisTransforms-<project>_<release>)",
    "task.container_name": "JediTaskSpec.container_name",
    "task.nucleus": "JediTaskSpec.nucleus",
    "task.userName": "JediTaskSpec.userName and origUserName",
    "task.workingGroup": "JediTaskSpec.workingGroup",
    "task.t1Weight": "split rule t1Weight",
    "task.fullChain": "split rule fullChain",
    "task.ipConnectivity": "split rule ipConnectivity",
    "task.taskBrokerOnMaster": "task parameter taskBrokerOnMaster",
    "task.inputPreStaging": "split rule inputPreStaging",
    "task.onlyTagsForFC": "split rule onlyTagsForFC",
    "task.maxCoreCount": "split rule maxCoreCount",
    "task.includedSite": "task parameter includedSite, split rule limitedSites",
    "task.excludedSite": "task parameter excludedSite, split rule limitedSites",
    "task.avoidVP": "split rule avoidVP",
    "task.nEventsPerJob": "the events of each input file",
    "task.nFilesPerJob": "split rule nFilesPerJob (else jobs.nFiles)",
    "task.parentNucleus": "the parent task's nucleus (getTaskWithID_JEDI)",
    "task.parentBareNucleus": "the bare-nucleus mode of the parent's nucleus, which must be that site's (sites)",
    "task.outputEndpointType": "the output datasets' storage token",
    "task.allowInputLAN": "split rule allowInputLAN",
    "task.eventService": "JediTaskSpec.eventService",
    "task.taskClass": "analy_task_eval",
    "task.site": "JediTaskSpec.site",
    # the job set (InputChunk, the task's split rules)
    "jobs.nEvents": "the events of each input file",
    "jobs.inputSizeMB": "the size of each input file",
    "jobs.nFiles": "split rule nFilesPerJob (merges: nFilesPerMergeJob)",
    "jobs.isScout": "InputChunk.setUseScout",
    "jobs.isMerge": "InputChunk.isMerging",
    "jobs.isPreMerged": "split rule mergeOutput",
    "jobs.preassigned": "merges: the master dataset's site (pmerge); others: JediTaskSpec.site",
    "jobs.preassignedSkippedHours": "the master dataset's modification time and the task's frozenTime",
    "jobs.nJobs": "analysis: the files of the job set (one job a file)",
    # datasets and their replicas (Rucio's answers)
    "datasets.name": "JediDatasetSpec.datasetName",
    "datasets.master": "JediDatasetSpec.masterID",
    "datasets.nFiles": "the dataset's files",
    "datasets.sizeGB": "the files' sizes",
    "datasets.replicas.nFiles": "listDatasetReplicas, getAvailableFiles",
    "datasets.replicas.sizeGB": "listReplicasPerDataset",
    # sites
    "sites.role": "nuclei are the sites of role nucleus (CRIC's queue role)",
    "sites.bareNucleus": "catchall bareNucleus of the site's queues",
    # storage endpoints (the ddm_endpoint and panda_ddm_relation rows EntityModule.getSiteInfo reads)
    "ddm_endpoints.site": "ddm_endpoint.site_name",
    "ddm_endpoints.type": "ddm_endpoint.type and ddm_spacetoken_name",
    "ddm_endpoints.space_total": "ddm_endpoint.space_total",
    "ddm_endpoints.space_free": "ddm_endpoint.space_free",
    "ddm_endpoints.space_used": "ddm_endpoint.space_used",
    "ddm_endpoints.space_expired": "ddm_endpoint.space_expired",
    "ddm_endpoints.is_tape": "ddm_endpoint.is_tape",
    "ddm_endpoints.blacklisted": "ddm_endpoint.blacklisted and the relation's blacklisted_read",
    "ddm_endpoints.detailed_status": "ddm_endpoint.detailed_status",
    # network (getNetworkMetrics)
    "network.src": "the source site",
    "network.dst": "the destination nucleus",
    "network.closeness": "AGIS_closeness",
    "network.mbps_1h": "dashb_mbps_1h",
    "network.mbps_1d": "dashb_mbps_1d",
    "network.mbps_1w": "dashb_mbps_1w",
    "network.queued": "<activity>_queued",
    "nucleus_stats.rw": "calculateWorldRWwithPrio_JEDI",
    "nucleus_stats.outputQueued": "the total queued into the nucleus, and getBackloggedNuclei",
    # queue records: the whole CRIC record goes to EntityModule.getSiteInfo
    **{f"queues.{key}": "the CRIC record (EntityModule.getSiteInfo)" for key in QUEUE_KEYS},
    "queues.siteClass": "analy_site_eval",
    "queues.use_vp": "SiteSpec.use_vp (a *_VP_DISK endpoint)",
    # statistics per queue
    **{
        f"queue_stats.{key}": "job statistics by share, resource type and work queue"
        for key in ("running", "activated", "assigned", "starting", "defined", "transferring")
    },
    "queue_stats.nBatchJob": "ups_load_worker_stats (Harvester workers)",
    "queue_stats.numSlots": "Harvester_Slots",
    "queue_stats.pilotsLast3h": "getCurrentSiteData getJob",
    "queue_stats.hoursSinceLastStart": "getInactiveSites_JEDI (more than 2 h)",
    "queue_stats.avgDiskIOPerCore": "getAvgDiskIO_JEDI",
    "queue_stats.runningCores": "get_core_statistics",
    "queue_stats.toRunningRate": "getSiteToRunRateStats",
    "queue_stats.nUsers": "getUsersJobsStats_JEDI (other users)",
    # the user's (or group's) numbers and the shares
    **{
        f"user_stats.{who}.{key}": "countJobsPerTarget_JEDI"
        for who in ("user", "group")
        for key in ("running", "queued", "runningCores", "queuedCores")
    },
    "user_stats.user.runningSlotsHiSites": "analy_user_eval rem_slots_A",
    "user_stats.user.diskQuotaExceeded": "Rucio check_global_quota",
    "user_stats.gshareUsage": "gshare_preference usage_perc",
    "user_stats.hoursSinceLastSuccess": "JediTaskSpec.frozenTime",
    **{
        f"user_stats.queues.{key}": "getUsersJobsStats_JEDI / getFailureCountsForTask_JEDI"
        for key in ("userQueued", "userRunning", "taskFinished", "taskFailed", "taskClosed")
    },
    # software and hardware
    "sw_tags": "load_sw_map",
    "gpu_summary": "get_worker_node_gpu_map (model, vendor, vram; microarchitecture as architecture, version as "
    "framework_version, driver_version)",
    "gdpconfig": "getConfigValue",
    "now": "the real code reads the clock; nothing it compares depends on the scenario's time",
    "seed": "the real code draws nothing: the comparison is on the kept set and weights",
    "profile": "our side only (the real code is one profile)",
}

# section.field → why the real code cannot be handed it; the driver refuses a scenario that sets it
UNSUPPORTED: dict[str, str] = {
    "sites.state": "EntityModule.getSiteInfo marks every site ACTIVE; our status filter keeps the field in every "
    "profile and the generator keeps the nuclei ACTIVE",
    "user_stats.group.diskQuotaExceeded": "no broker reads a group's quota (neither ours nor 1.0.4's): nothing to pass",
    "queue_stats.vpOverloaded": "1.0.4 reads no such flag: it judges VP queues by data placed through VP, which no "
    "scenario describes (docs/decisions.md, Virtual placement)",
}

# the default of each unsupported field: a scenario that leaves it so is run
UNSUPPORTED_DEFAULTS: dict[str, Any] = {"sites.state": "ACTIVE"}


def refusal(scenario: dict[str, Any]) -> str:
    """'' when the real code can be handed everything `scenario` says, else the first field it cannot be, with
    why (the driver answers such a scenario with {"refused": ...})."""
    for name, site in (scenario.get("sites") or {}).items():
        state = site.get("state", "ACTIVE")
        if state not in ("", "ACTIVE"):
            return f"sites.{name}.state={state!r}: {UNSUPPORTED['sites.state']}"
    for name, stats in (scenario.get("queue_stats") or {}).items():
        if "vpOverloaded" in stats:
            return f"queue_stats.{name}.vpOverloaded: {UNSUPPORTED['queue_stats.vpOverloaded']}"
    if scenario.get("plugin") == "atlas_prod_task" and not scenario.get("queues"):
        # the real task broker knows a nucleus and its storage only through queues: the driver stands a
        # permissive queue in at each site (panda_driver.with_site_queues), which must not fail on its storage
        for name, endpoint in (scenario.get("ddm_endpoints") or {}).items():
            status = {k: str(v).upper() for k, v in (endpoint.get("detailed_status") or {}).items()}
            down = [a for a in ("read_lan", "write_lan") if status.get(a, "ON") != "ON"]
            if endpoint.get("blacklisted") or down:
                what = "blacklisted" if endpoint.get("blacklisted") else f"detailed_status.{down[0]}"
                return (
                    f"ddm_endpoints.{name}.{what}: a scenario without queues gets a stand-in queue at each site, and "
                    "one reading or writing an endpoint that is down would be skipped where ours checks only the input"
                )
    task = scenario.get("task") or {}
    parent = task.get("parentNucleus")
    if parent and parent in (scenario.get("sites") or {}):
        site_mode = scenario["sites"][parent].get("bareNucleus", "") or ""
        if (task.get("parentBareNucleus") or "") != site_mode:
            return (
                f"task.parentBareNucleus={task.get('parentBareNucleus')!r}: the real code reads the bare-nucleus mode "
                f"of the parent's nucleus from its queues, where sites.{parent}.bareNucleus is {site_mode!r}"
            )
    return ""


# --- What the real code reads (issue 49: a CRIC-field coverage test) ---
# tests/tools/peer/test_cric_field_coverage.py scans panda-server 1.0.4's source for every CRIC queue key
# EntityModule.getSiteInfo reads, every catchall or params key SiteSpec reads, and every JediTaskSpec attribute the
# three ATLAS brokers read, and fails unless each is named here: ("ours", the key our engine reads, which the test
# finds in brokerage/engine/) or ("not", why no decision of ours needs it).
OURS, NOT = "ours", "not"
REAL_QUEUE_READS: dict[str, tuple[str, str]] = {
    "allowfax": (NOT, "SiteSpec.allowfax: FAX federation access, read by no broker of 1.0.4"),
    "capability": (OURS, "capability"),
    "catchall": (OURS, "catchall"),
    "cloud": (OURS, "cloud"),
    "comment_": (NOT, "free text"),
    "corecount": (OURS, "corecount"),
    "corepower": (OURS, "corepower"),
    "ddm": (NOT, "the legacy storage name: the brokers read the endpoints (astorages)"),
    "defaulttoken": (NOT, "read by the dispatcher, not by a broker"),
    "direct_access_lan": (OURS, "direct_access_lan"),
    "direct_access_wan": (
        NOT,
        "only sets the chosen candidate's remote protocol (AtlasProdJobBroker.py 1952): no decision",
    ),
    "fairsharepolicy": (OURS, "fairsharepolicy"),
    "is_cvmfs": (NOT, "read by no broker: the software check reads the pilots' tags (sw_tags, cvmfs)"),
    "jobseed": (OURS, "jobseed"),
    "lastmod": (NOT, "a timestamp"),
    "maxdiskio": (OURS, "maxdiskio"),
    "maxinputsize": (OURS, "maxinputsize"),
    "maxrss": (OURS, "maxrss"),
    "maxtime": (OURS, "maxtime"),
    "maxwdir": (OURS, "maxwdir"),
    "memory": (NOT, "legacy: SiteMapper compares it only when it merges two records of one queue"),
    "minrss": (OURS, "minrss"),
    "mintime": (OURS, "mintime"),
    "nickname": (NOT, "the queue's name, which is the scenario's key"),
    "objectstores": (NOT, "event-service output storage: read when jobs are made, not brokered"),
    "params": (OURS, "params"),
    "pledgedcpu": (OURS, "pledgedcpu"),
    "releases": (OURS, "releases"),
    "space": (NOT, "legacy; the storage rules read the endpoints' space"),
    "status": (OURS, "status"),
    "tier": (NOT, "the ATLAS tier, read by no broker"),
    "transferringlimit": (OURS, "transferringlimit"),
    "type": (OURS, "type"),
    "validatedreleases": (NOT, "read by no broker of 1.0.4"),
    "wnconnectivity": (OURS, "wnconnectivity"),
    "workflow": (NOT, "read by no broker of 1.0.4 (Harvester's pull/push mode)"),
}
REAL_CATCHALL_READS: dict[str, tuple[str, str]] = {
    "allowed_processing": (NOT, "read by GenJobBroker only (not an ATLAS broker)"),
    "excluded_processing": (NOT, "read by GenJobBroker only (not an ATLAS broker)"),
    "bareNucleus": (OURS, "bareNucleus"),
    "disableReassign": (NOT, "read by the reassignment, not by a broker"),
    "gpu": (OURS, "gpu"),
    "grandly_unified": (OURS, "grandly_unified"),
    "jobChunkSize": (NOT, "read by Harvester's job fetch, not by a broker"),
    "maxDiskPerCore": (NOT, "read by no broker of 1.0.4"),
    "max_io_intensity": (OURS, "max_io_intensity"),
    "minEventsForJumbo": (NOT, "read only for a task with nJumboJobs, which no scenario has (issue 52)"),
    "nSimEvents": (NOT, "read by job generation, not by a broker"),
    "per_core_attr": (OURS, "per_core_attr"),
    "secondaryNucleus": (
        NOT,
        "a full-chain task's second nucleus (AtlasProdTaskBroker.py 335): not modelled, docs/decisions.md",
    ),
    "useJumboJobs": (OURS, "useJumboJobs"),
    "use_only_local_data": (OURS, "use_only_local_data"),
    "allow_no_pilot": (OURS, "allow_no_pilot"),
}
# JediTaskSpec attributes and methods the brokers call → ("ours", our scenario field the engine reads as
# `task.<field>` / `jobs.<field>`) or ("not", why)
REAL_TASK_READS: dict[str, tuple[str, str]] = {
    "allowInputLAN": (OURS, "task.allowInputLAN"),
    "allowInputWAN": (NOT, "only sets the chosen candidate's remote protocol: no decision"),
    "allow_incomplete_input": (
        NOT,
        "a user option letting incomplete input through the analysis check; the "
        "scenarios' inputs are complete or the check applies",
    ),
    "avoid_vp": (OURS, "task.avoidVP"),
    "baseRamCount": (OURS, "task.baseRamCount"),
    "baseWalltime": (OURS, "task.baseWalltime"),
    "check_full_chain_with_mode": (OURS, "task.fullChain"),
    "check_full_chain_with_nucleus": (OURS, "task.fullChain"),
    "cloud": (NOT, "JEDI leaves it None for WORLD tasks (TaskRefinerBase.py 191-198); the driver passes None"),
    "container_name": (OURS, "task.container_name"),
    "coreCount": (OURS, "task.coreCount"),
    "cpuEfficiency": (OURS, "task.cpuEfficiency"),
    "cpuTimeUnit": (OURS, "task.cpuTime"),
    "currentPriority": (OURS, "task.currentPriority"),
    "diskIO": (OURS, "task.diskIO"),
    "dynamicNumEvents": (NOT, "dynamic events per job (a walltime range): not modelled, docs/decisions.md"),
    "frozenTime": (OURS, "user_stats.hoursSinceLastSuccess"),
    "getCpuTime": (OURS, "task.cpuTime"),
    "getIpConnectivity": (OURS, "task.ipConnectivity"),
    "getIpStack": (OURS, "task.ipConnectivity"),
    "getMaxAttemptEsJob": (OURS, "task.maxAttemptEsJob"),
    "getMaxNumFilesPerJob": (NOT, "the analysis job count of a job set: given as jobs.nJobs"),
    "getMaxSizePerJob": (NOT, "nGBPerJob: no scenario sets it; the scratch need without it (docs/decisions.md)"),
    "getMaxWalltime": (NOT, "the analysis job count of a job set: given as jobs.nJobs"),
    "getNumEventServiceConsumer": (OURS, "task.nEsConsumers"),
    "getNumEventsPerJob": (OURS, "task.nEventsPerJob"),
    "getNumFilesPerJob": (OURS, "jobs.nFiles"),
    "getNumFilesPerMergeJob": (OURS, "jobs.nFiles"),
    "getNumJumboJobs": (OURS, "task.nJumboJobs"),
    "getNumSitesPerJob": (NOT, "job cloning across sites: not modelled"),
    "getOutDiskSize": (OURS, "task.outDiskCount"),
    "getT": (OURS, "task.t1Weight"),
    "getWorkDiskSize": (OURS, "task.workDiskCount"),
    "get_base_platform": (OURS, "task.architecture"),
    "get_full_chain": (OURS, "task.fullChain"),
    "get_host_cpu_preference": (OURS, "task.architecture"),
    "get_host_cpu_spec": (OURS, "task.architecture"),
    "get_host_gpu_spec": (OURS, "task.architecture"),
    "get_max_core_count": (OURS, "task.maxCoreCount"),
    "get_max_events_per_job": (NOT, "with dynamicNumEvents only"),
    "get_min_granularity": (NOT, "with dynamicNumEvents only"),
    "get_sw_platform": (OURS, "task.architecture"),
    "gshare": (OURS, "task.gshare"),
    "inputPreStaging": (OURS, "task.inputPreStaging"),
    "ioIntensity": (OURS, "task.ioIntensity"),
    "is_hpo_workflow": (NOT, "hyperparameter-optimisation tasks: not modelled"),
    "jediTaskID": (NOT, "an identifier"),
    "mergeCoreCount": (NOT, "merges take the task's coreCount here: no scenario gives another"),
    "mergeOutput": (OURS, "jobs.isPreMerged"),
    "nucleus": (OURS, "task.nucleus"),
    "origUserName": (NOT, "names the user whose figures the scenario gives (user_stats)"),
    "outputScaleWithEvents": (OURS, "task.outDiskUnit"),
    "parent_tid": (OURS, "task.parentNucleus"),
    "processingType": (OURS, "task.processingType"),
    "prodSourceLabel": (OURS, "task.prodSourceLabel"),
    "ramPerCore": (OURS, "task.ramUnit"),
    "ramUnit": (OURS, "task.ramUnit"),
    "resetChangedList": (NOT, "bookkeeping"),
    "resource_type": (OURS, "task.ramCount"),
    "respectLumiblock": (NOT, "lumiblock boundaries: not modelled"),
    "setErrDiag": (NOT, "writes the diagnostic"),
    "site": (OURS, "task.site"),
    "taskPriority": (OURS, "task.taskPriority"),
    "transHome": (OURS, "task.transHome"),
    "transUses": (OURS, "task.transUses"),
    "useEventService": (OURS, "task.eventService"),
    "useHS": (OURS, "task.cpuTime"),
    "useJobCloning": (NOT, "job cloning: not modelled"),
    "useLimitedSites": (OURS, "task.includedSite"),
    "useLocalIO": (NOT, "forced local IO: not modelled (docs/decisions.md)"),
    "useScout": (OURS, "jobs.isScout"),
    "useWorldCloud": (NOT, "every task is WORLD here"),
    "use_only_tags_fc": (OURS, "task.onlyTagsForFC"),
    "userName": (NOT, "names the user whose figures the scenario gives (user_stats)"),
    "vo": (OURS, "task.vo"),
    "walltime": (NOT, "the pre-HS06 walltime per MB: tasks give cpuTime here (docs/decisions.md)"),
    "walltimeUnit": (NOT, "the pre-HS06 walltime per MB: tasks give cpuTime here (docs/decisions.md)"),
    "workQueue_ID": (NOT, "the work queue's id: the share is task.gshare"),
    "workingGroup": (OURS, "task.workingGroup"),
}
