"""panda-server 1.0's pilot API (issue 53): `/api/v1/pilot/acquire_jobs`, `get_job_status`, `update_job`,
`update_jobs_bulk` and `update_worker_node`, in the 1.0.4 module's words (pandaserver/api/v1/pilot_api.py): its
parameter names, their types, its envelope `{"success", "message", "data"}` and its messages. Harvester and pilots
that speak panda-server 1.0 call these; pilot 3.7 still speaks the old dispatcher (/server/panda/getJob…,
monitor.dispatcher), kept beside them. Both decide through the same services (brokerage/services/dispatcher.py).

The production role is the permission to change jobs (brokerage.change_job), as for the old protocol: update_job,
update_jobs_bulk and update_worker_node need it (MESSAGE_PROD_ROLE otherwise); acquire_jobs without it hands only
the caller's own user jobs, as the real server does for a user's pilot; get_job_status follows the read rule.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.utils import timezone

from brokerage.models import WorkerNode, WorkerNodeQueue
from brokerage.selectors.dispatcher import pilot_job_description, pilot_job_states, pilot_jobs_sent_recently
from brokerage.services.dispatcher import AcquireCriteria, DispatcherRefused, pilot_job_update, pilot_jobs_acquire
from brokerage.services.worker_nodes import worker_node_update
from monitor.dispatcher import SC_FAILED, SC_INVALID, SC_SUCCESS, PilotThrottle

from .views import CallRefused, PandaMethod, Parameter, arguments_from, envelope, panda_user_name

# panda-server 1.0.4's words (api/v1/common.py, pilot_api.py)
MESSAGE_PROD_ROLE = "production or pilot role required"
MESSAGE_ROLE_ACQUIRE = "no production/pilot role in VOMS FQANs or non pilot owner"
MESSAGE_NO_JOBS = "No jobs in PanDA"
# the states a pilot reports through update_job (pilot_api.py VALID_JOB_STATES)
VALID_JOB_STATES = ("running", "failed", "finished", "holding", "starting", "transferring")
# the most job updates one update_jobs_bulk takes (a request's cost is bounded)
BULK_MAX = 500


def production_role(request) -> bool:
    return request.user.is_authenticated and request.user.has_perm("brokerage.change_job")


class PilotMethod(PandaMethod):
    """A method of the pilot module: the pilots' own rate (a fleet shares one identity), and the production role
    where the real decorator asks for it."""

    throttle_classes: ClassVar[list] = [PilotThrottle]
    production = False

    def _answer(self, request):
        if self.production and request.user.is_authenticated and not production_role(request):
            return envelope(False, MESSAGE_PROD_ROLE)
        return super()._answer(request)


class AcquireJobs(PilotMethod):
    http_method = "POST"
    writes = True
    parameters: ClassVar = {
        "site_name": Parameter(str, required=True),
        "timeout": Parameter(int, 60),
        "memory": Parameter(int, None),
        "disk_space": Parameter(int, None),
        "prod_source_label": Parameter(str, None),
        "node": Parameter(str, None),
        "computing_element": Parameter(str, None),
        "prod_user_id": Parameter(str, None),
        "get_proxy_key": Parameter(str, None),
        "task_id": Parameter(int, None),
        "n_jobs": Parameter(int, 1),
        "background": Parameter(bool, None),
        "resource_type": Parameter(str, None),
        "harvester_id": Parameter(str, None),
        "worker_id": Parameter(int, None),
        "scheduler_id": Parameter(str, None),
        "job_type": Parameter(str, None),
        "via_topic": Parameter(bool, None),
        "remaining_time": Parameter(int, None),
        "target_architecture": Parameter(dict, None),
    }

    def call(self, request, *, site_name, memory, disk_space, prod_source_label, node, computing_element,
             prod_user_id, task_id, n_jobs, resource_type, remaining_time, **_unused):  # fmt: skip
        # timeout, proxy keys, Harvester's worker mapping, background and topic delivery: nothing of ours reads them
        is_production = production_role(request)
        if not is_production and prod_source_label not in ("user",):
            raise CallRefused(MESSAGE_ROLE_ACQUIRE)
        if not is_production:  # a user's pilot gets the user's own jobs only
            prod_user_id = panda_user_name(request.user)
        now = timezone.now()
        criteria = AcquireCriteria(
            memory=max(0, memory or 0),
            disk_space=max(0, disk_space or 0),
            remaining_time=max(0, remaining_time or 0),
            resource_type=resource_type,
            prod_source_label=prod_source_label,
            computing_element=computing_element,
            prod_user=prod_user_id,
            task_id=task_id,
        )
        node = (node or "")[:128]
        jobs = pilot_jobs_acquire(
            queue=site_name, node=node, now=now, computing_element=computing_element or "", n_jobs=n_jobs or 1,
            criteria=criteria,
        )  # fmt: skip
        if not jobs:
            return False, MESSAGE_NO_JOBS, None
        sent = pilot_jobs_sent_recently(queue=site_name, now=now) if prod_source_label in (None, "managed") else 0
        described = [{**pilot_job_description(job=job), "nSent": sent} for job in jobs]
        return True, "", {"StatusCode": SC_SUCCESS, "jobs": described}


class GetJobStatus(PilotMethod):
    http_method = "GET"
    parameters: ClassVar = {"job_ids": Parameter(list, required=True, element=int), "timeout": Parameter(int, 60)}

    def call(self, request, *, job_ids, timeout):
        return True, "", pilot_job_states(job_ids=job_ids)


# update_job's measurements of memory (kB) and I/O (bytes, bytes/s): `int | float` in 1.0.4
MEMORY_AND_IO = (
    *(f"{kind}_{memory}" for kind in ("max", "avg") for memory in ("rss", "vmem", "swap", "pss")),
    *(f"{kind}_{io}" for kind in ("tot", "rate") for io in ("rchar", "wchar", "rbytes", "wbytes")),
)
# update_job's parameters (pilot_api.py 1.0.4), in its order; the names the job record keeps, where we keep them
UPDATE_JOB_PARAMETERS: dict[str, Parameter] = {
    "job_id": Parameter(int, required=True),
    "job_status": Parameter(str, required=True),
    "job_output_report": Parameter(str, ""),
    "node": Parameter(str, None),
    "cpu_consumption_time": Parameter(int, None),
    "cpu_consumption_unit": Parameter(str, None),
    "scheduler_id": Parameter(str, None),
    "pilot_id": Parameter(str, None),
    "site_name": Parameter(str, None),
    "pilot_log": Parameter(str, ""),
    "meta_data": Parameter(str, ""),
    "cpu_conversion_factor": Parameter(float, None),
    "trans_exit_code": Parameter(int, None),
    "pilot_error_code": Parameter(int, None),
    "pilot_error_diag": Parameter(str, None),
    "exe_error_code": Parameter(int, None),
    "exe_error_diag": Parameter(str, None),
    "pilot_timing": Parameter(str, None),
    "start_time": Parameter(str, None),
    "end_time": Parameter(str, None),
    "n_events": Parameter(int, None),
    "n_input_files": Parameter(int, None),
    "batch_id": Parameter(str, None),
    "attempt_nr": Parameter(int, None),
    "job_metrics": Parameter(str, None),
    "stdout": Parameter(str, ""),
    "job_sub_status": Parameter(str, None),
    "core_count": Parameter(int, None),
    **{name: Parameter(float, None) for name in MEMORY_AND_IO},
    "corrupted_files": Parameter(str, None),
    "mean_core_count": Parameter(int, None),
    "cpu_architecture_level": Parameter(str, None),
    "grid": Parameter(str, None),
    "source_site": Parameter(str, None),
    "destination_site": Parameter(str, None),
    "timeout": Parameter(int, 60),
}
# update_job's names → the old protocol's (JobDispatcher.updateJob), which services.dispatcher reads
REPORT_NAMES = {
    "node": "node",
    "cpu_consumption_time": "cpuConsumptionTime",
    "pilot_id": "pilotID",
    "batch_id": "batchID",
    "pilot_error_code": "pilotErrorCode",
    "pilot_error_diag": "pilotErrorDiag",
    "exe_error_code": "exeErrorCode",
    "exe_error_diag": "exeErrorDiag",
    "job_sub_status": "jobSubStatus",
    "core_count": "coreCount",
    "max_rss": "maxRSS",
    "max_pss": "maxPSS",
    "corrupted_files": "corruptedFiles",
}


def job_update(arguments: dict[str, Any]) -> dict[str, Any]:
    """One update_job, as its envelope (update_jobs_bulk answers a list of them)."""
    status = arguments["job_status"]
    if status not in VALID_JOB_STATES:
        return _envelope(False, f"Invalid job status: {status}", {"StatusCode": SC_INVALID})
    report = {old: arguments[new] for new, old in REPORT_NAMES.items() if arguments.get(new) is not None}
    try:
        command = pilot_job_update(job_id=arguments["job_id"], state=status, report=report, now=timezone.now())
    except DispatcherRefused as refused:
        # the real server's "Database error" when updateJobStatus finds nothing to update, with our reason
        return _envelope(True, str(refused), {"StatusCode": SC_FAILED})
    return _envelope(True, "", {"StatusCode": SC_SUCCESS, "command": command})


def _envelope(success: bool, message: str, data: Any) -> dict[str, Any]:
    return {"success": success, "message": message, "data": data}


class UpdateJob(PilotMethod):
    http_method = "POST"
    writes = True
    production = True
    parameters: ClassVar = UPDATE_JOB_PARAMETERS

    def call(self, request, **arguments):
        answered = job_update(arguments)
        return answered["success"], answered["message"], answered["data"]


class UpdateJobsBulk(PilotMethod):
    http_method = "POST"
    writes = True
    production = True
    parameters: ClassVar = {"job_list": Parameter(list, required=True, element=dict), "harvester_id": Parameter(str)}

    def call(self, request, *, job_list, harvester_id):
        if len(job_list) > BULK_MAX:
            raise CallRefused(f"job_list: at most {BULK_MAX} jobs in one call, not {len(job_list)}")
        answers = []
        for job in job_list:
            # as the real loop: a job without job_id or job_status stops the call ("failed with KeyError …")
            for key in ("job_id", "job_status"):
                if key not in job:
                    return False, f"failed with KeyError '{key}'", []
            if "meta_data" in job:  # the real loop sends it as text, whatever it was
                job = {**job, "meta_data": str(job["meta_data"])}
            try:
                answers.append(job_update(arguments_from(UPDATE_JOB_PARAMETERS, job)))
            except CallRefused as refused:  # the real update_job answers a bad argument in its own envelope
                answers.append(_envelope(False, refused.message, None))
        return True, "", answers


class UpdateWorkerNode(PilotMethod):
    http_method = "POST"
    writes = True
    production = True
    parameters: ClassVar = {
        "site": Parameter(str, required=True),
        "host_name": Parameter(str, required=True),
        "cpu_model": Parameter(str, required=True),
        "panda_queue": Parameter(str, None),
        "n_logical_cpus": Parameter(int, None),
        "n_sockets": Parameter(int, None),
        "cores_per_socket": Parameter(int, None),
        "threads_per_core": Parameter(int, None),
        "cpu_architecture": Parameter(str, None),
        "cpu_architecture_level": Parameter(str, None),
        "clock_speed": Parameter(float, None),
        "total_memory": Parameter(int, None),
        "total_local_disk": Parameter(int, None),
        "timeout": Parameter(int, 60),
    }
    # longer text than its column holds (brokerage.models.WorkerNode, WorkerNodeQueue) is refused, not cut
    TEXTS: ClassVar = ("site", "host_name", "cpu_model", "cpu_architecture", "cpu_architecture_level")
    COUNTS: ClassVar = ("n_logical_cpus", "n_sockets", "cores_per_socket", "threads_per_core", "total_memory",
                        "total_local_disk")  # fmt: skip

    def call(self, request, *, site, host_name, cpu_model, panda_queue, timeout, **measured):
        texts = {"site": site, "host_name": host_name, "cpu_model": cpu_model, **measured}
        columns = [(name, WorkerNode._meta.get_field(name).max_length, texts.get(name)) for name in self.TEXTS]
        columns.append(("panda_queue", WorkerNodeQueue._meta.get_field("panda_queue").max_length, panda_queue))
        for name, length, value in columns:
            if value is not None and len(value) > length:
                raise CallRefused(f"{name}: at most {length} characters")
        if not host_name.strip() or not site.strip() or not cpu_model.strip():
            raise CallRefused("site, host_name and cpu_model: not empty")
        for name in self.COUNTS:
            if measured.get(name) is not None and not 0 <= measured[name] < 2**31:
                raise CallRefused(f"{name}: a count from 0 to {2**31 - 1}")
        message = worker_node_update(
            site=site, host_name=host_name, cpu_model=cpu_model, panda_queue=panda_queue, now=timezone.now(),
            **{name: value for name, value in measured.items() if value not in (None, "")},
        )  # fmt: skip
        return True, message, None


METHODS: dict[str, tuple[type[PandaMethod], str, str]] = {
    "pilot/acquire_jobs": (
        AcquireJobs, "Acquire jobs (pilot)",
        "panda-server 1.0's acquire_jobs: up to n_jobs of the queue's activated jobs that fit the worker (memory, "
        "disk_space, remaining_time, resource_type, prod_source_label), now sent; data {StatusCode, jobs}. Without "
        "brokerage.change_job only the caller's own user jobs.",
    ),
    "pilot/get_job_status": (
        GetJobStatus, "Status of jobs (pilot)",
        "get_job_status: per job {job_id, status, attempt_number}, status \"not found\" for an id that is no job.",
    ),
    "pilot/update_job": (
        UpdateJob, "Update a job (pilot)",
        "update_job: the pilot's state (starting, running, holding, transferring, finished, failed) with its error "
        "codes and measurements; data {StatusCode, command}. Needs brokerage.change_job.",
    ),
    "pilot/update_jobs_bulk": (
        UpdateJobsBulk, "Update jobs in bulk (pilot)",
        "update_jobs_bulk: update_job for each dictionary of job_list (its job_id, job_status and update_job's other "
        "parameters), data the list of their answers. Needs brokerage.change_job.",
    ),
    "pilot/update_worker_node": (
        UpdateWorkerNode, "Describe a worker node (pilot)",
        "update_worker_node: the host's CPU at its site, and the queue it served, seen now. Needs "
        "brokerage.change_job.",
    ),
}  # fmt: skip
