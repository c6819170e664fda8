"""PanDA's own API for PanDA's own clients (issue 36): panda-client 2.2.0 and pbook call `/api/v1/<module>/<method>`
on the server's host and read `{"success", "message", "data"}`. These views answer the calls they make about tasks
and jobs from our records, in panda-server 1.0.4's words (api/v1/task_api.py, job_api.py): its parameter names and
their conversions (a GET's `task_id=12.0` is 12, `true`/`1` are true), its messages, its return codes.

As the real server, an answer the method decides is HTTP 200, `success` false and the message when it refuses; a
client that cannot be authenticated is 403 ("Token authentication failed. …", server/panda.py); too many requests a
429. Nothing else: a bad parameter is the real server's "Type error" message, never a 500.

Reading follows the API's anonymous-read rule (API_ANONYMOUS_READ); kill, finish and retry of a task need the
permission the task page's actions need (brokerage.change_task), kill of jobs the permission to change jobs.
Clients authenticate with our API tokens (`Authorization: Token …`) or OIDC ID tokens (`Bearer`, monitor.api.oidc).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, ClassVar

from django.http import JsonResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.parsers import FormParser
from rest_framework.views import APIView

from brokerage.selectors.panda_client import (
    TaskFilterError,
    panda_job_descriptions,
    panda_task_details,
    panda_task_parameters,
    panda_task_status,
    panda_tasks_since,
)
from brokerage.services.task_commands import TaskCommandRefused, job_kill, task_action_run
from monitor.api.parsers import BoundedJSONParser
from monitor.api.permissions import read_allowed

# panda-server 1.0.4's messages (api/v1/common.py)
MESSAGE_TASK_ID = "jediTaskID must be an integer"
MESSAGE_TASK_OWNER = "not the task owner or no production role"
MESSAGE_JOB_PERMISSION = "no permission to kill jobs (brokerage.change_job)"
# sendCommandTaskPanda's return codes with properErrorCode (panda-client's killTask documents them)
# (3, permission denied, is answered as the real server's decorator answers it: MESSAGE_TASK_OWNER, no code)
CODE_DONE, CODE_SERVER_ERROR, CODE_NOT_FOUND, CODE_IRRELEVANT_STATUS = 0, 1, 2, 4
TAG = "PanDA client (panda-client 2.2.0, pbook)"


def envelope(success: bool, message: str = "", data: Any = None, *, status: int = 200) -> JsonResponse:
    """panda-server's generate_response, as JSON."""
    return JsonResponse({"success": success, "message": message, "data": data}, status=status)


class CallRefused(Exception):
    """The method refuses the call: success false with this message (and data, when the real server sends some)."""

    def __init__(self, message: str, data: Any = None):
        super().__init__(message)
        self.message, self.data = message, data


# The largest integer a database column of ours holds (a signed 64-bit BIGINT): a number past it is no ID of ours,
# and SQLite cannot even be asked about it (the fuzz test sent 9.3e259 and got a 500)
LARGEST_INTEGER = 2**63 - 1


def _integer(value: Any) -> int:
    number = int(float(value)) if isinstance(value, str) else int(value)
    if abs(number) > LARGEST_INTEGER:
        raise OverflowError(f"{number} is past a 64-bit integer")
    return number


class Parameter:
    """One parameter of a PanDA method and how the real server converts what a client sends
    (request_validation, api/v1/common.py 1.0.4)."""

    def __init__(self, kind: type, default: Any = None, *, required: bool = False, element: type | None = None):
        self.kind, self.default, self.required, self.element = kind, default, required, element

    def convert(self, name: str, value: Any) -> Any:
        try:
            return self._convert(value)
        except (TypeError, ValueError, OverflowError) as error:
            kind = self.kind.__name__
            raise CallRefused(
                f"Type error: '{name}' with value '{value}' could not be casted to type {kind} from "
                f"{type(value).__name__}."
            ) from error

    def _convert(self, value: Any) -> Any:
        if value is None:  # JSON's null where a value is needed (a required one, or one with a default)
            raise TypeError("null")
        if self.kind is bool:
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1")
        if self.kind is int:
            if isinstance(value, bool):
                raise TypeError("a boolean is no integer")
            return _integer(value)
        if self.kind is float:  # the real `int | float`: either, as a number
            if isinstance(value, bool):
                raise TypeError("a boolean is no number")
            number = float(value)
            if number != number or abs(number) == float("inf"):
                raise ValueError("not a finite number")
            return number
        if self.kind is list:
            items = value if isinstance(value, list) else [value]
            if isinstance(value, str) and value.startswith("["):
                items = json.loads(value)
            if self.element is int:
                return [_integer(item) for item in items]
            if self.element is dict:
                if not all(isinstance(item, dict) for item in items):
                    raise TypeError("not a list of dictionaries")
                return items
            return [str(item) for item in items]
        if self.kind is dict:
            parsed = json.loads(value) if isinstance(value, str) else value
            if not isinstance(parsed, dict):
                raise TypeError("not a dictionary")
            return parsed
        if isinstance(value, dict | list):
            raise TypeError("not a string")
        return str(value)


class PandaMethod(APIView):
    """One method of PanDA's API. Subclasses name the HTTP method the real server requires (None: any), the
    parameters, and answer in `call`."""

    http_method: ClassVar[str | None] = "GET"
    parameters: ClassVar[dict[str, Parameter]] = {}
    writes = False
    panda_envelope = True  # the schema documents PanDA's envelope, not our API's error body
    permission_classes: ClassVar[list] = []  # who may is decided in the call, answered in the envelope
    parser_classes: ClassVar[list] = [BoundedJSONParser, FormParser]
    filter_backends: ClassVar[list] = []

    @staticmethod
    def error_answer(status: int, message: str) -> JsonResponse:
        """A failure outside the method (a row locked elsewhere, the database away), in PanDA's envelope
        (monitor.middleware)."""
        return envelope(False, message, status=status)

    def handle_exception(self, exc):
        if isinstance(exc, exceptions.Throttled):
            response = envelope(False, f"too many requests: wait {exc.wait or 1:.0f} s")
            response.status_code = 429
            response["Retry-After"] = str(int(exc.wait or 1))
            return response
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            message = str(exc.detail)
            if not message.startswith("Token authentication failed"):
                message = f"Token authentication failed. {message}"
            return envelope(False, message, status=403)
        if isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
            return envelope(False, f"failed to load JSON: {exc.detail}")
        if isinstance(exc, exceptions.APIException):  # a body too large, a method DRF refuses
            return envelope(False, str(exc.detail), status=exc.status_code)
        return super().handle_exception(exc)

    def get(self, request, **_):
        return self._answer(request)

    def post(self, request, **_):
        return self._answer(request)

    def _answer(self, request):
        if self.http_method and request.method != self.http_method:
            return envelope(False, f"expecting {self.http_method}, received {request.method}")
        if self.writes and not request.user.is_authenticated:
            return envelope(False, "Token authentication failed. Send a token: writing needs one.", status=403)
        if not self.writes and not read_allowed(request):
            return envelope(False, "Token authentication failed. Send a token: reading needs one here.", status=403)
        try:
            arguments = self._arguments(request)
            return envelope(*self.call(request, **arguments))
        except CallRefused as refused:
            return envelope(False, refused.message, refused.data)

    def _arguments(self, request) -> dict[str, Any]:
        if request.method == "GET":
            sent = {key: _single(request.query_params.getlist(key)) for key in request.query_params}
        else:
            body = request.data
            if hasattr(body, "getlist"):  # a form
                sent = {key: _single(body.getlist(key)) for key in body}
            elif isinstance(body, dict):
                sent = dict(body)
            else:
                raise CallRefused("failed to load JSON: the body is not a JSON object")
        return arguments_from(self.parameters, sent)

    def call(self, request, **arguments) -> tuple:
        raise NotImplementedError


def arguments_from(parameters: dict[str, Parameter], sent: dict[str, Any]) -> dict[str, Any]:
    """The method's arguments from what the client sent, as request_validation binds and converts them: a name the
    method does not take, a required one missing, a value that is not of its type refused in the real words."""
    unknown = sorted(set(sent) - set(parameters))
    if unknown:
        raise CallRefused(f"Argument error: got an unexpected keyword argument '{unknown[0]}'")
    arguments = {}
    for name, parameter in parameters.items():
        if name not in sent:
            if parameter.required:
                raise CallRefused(f"Argument error: missing a required argument: '{name}'")
            arguments[name] = parameter.default
        elif sent[name] in ("None", None) and parameter.default is None and not parameter.required:
            arguments[name] = None
        else:
            arguments[name] = parameter.convert(name, sent[name])
    return arguments


def _single(values: list[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else values


def _task_id(value: int) -> int:
    if not 0 < value < 2**63:
        raise CallRefused(MESSAGE_TASK_ID)
    return value


ENVELOPE = inline_serializer(
    "PandaEnvelope",
    {
        "success": serializers.BooleanField(),
        "message": serializers.CharField(allow_blank=True),
        "data": serializers.JSONField(help_text="any JSON value, null when there is none"),
    },
)
REFUSED = OpenApiResponse(ENVELOPE, description="success false: the client could not be authenticated")
THROTTLED = OpenApiResponse(ENVELOPE, description="success false: too many requests, see Retry-After")
WRONG_METHOD = OpenApiResponse(ENVELOPE, description="success false: the method takes another HTTP method")
TOO_LARGE = OpenApiResponse(ENVELOPE, description="success false: the body is larger than API_MAX_BODY_BYTES")


def _schema(name: str, summary: str, description: str, params: dict[str, Parameter], *, method: str | None):
    kinds = {int: int, bool: bool, str: str, float: float, list: str, dict: str}
    query = [
        OpenApiParameter(name, kinds[parameter.kind], required=parameter.required, many=parameter.kind is list)
        for name, parameter in params.items()
    ]
    body = inline_serializer(
        f"Panda{name}Body",
        {field: serializers.JSONField(required=parameter.required) for field, parameter in params.items()},
    )
    responses = {
        200: OpenApiResponse(ENVELOPE, description=description),
        403: REFUSED,
        405: WRONG_METHOD,
        413: TOO_LARGE,
        429: THROTTLED,
    }
    decorators = {}
    if method in (None, "GET"):
        decorators["get"] = extend_schema(
            tags=[TAG], summary=summary, description=description, parameters=query, responses=responses
        )
    if method in (None, "POST"):
        decorators["post"] = extend_schema(
            tags=[TAG], summary=summary, description=description, request=body, responses=responses
        )
    return decorators


def panda_method(name: str, summary: str, description: str):
    """Documents a method in the OpenAPI schema under its own group, with its parameters (as the query of a GET,
    as a JSON body of a POST) and the envelope it answers with."""

    def document(view: type[PandaMethod]) -> type[PandaMethod]:
        for handler, decorator in _schema(name, summary, description, view.parameters, method=view.http_method).items():
            # a handler of its own: the schema's decorator marks the function, which the base class shares

            def answer(self, request, **_):
                return self._answer(request)

            setattr(view, handler, decorator(answer))
        if view.http_method == "GET":
            view.http_method_names = ["get", "head", "options"]
        elif view.http_method == "POST":
            view.http_method_names = ["post", "options"]
        return view

    return document


# --- tasks ---


class TaskStatus(PandaMethod):
    parameters: ClassVar = {"task_id": Parameter(int, required=True)}

    def call(self, request, *, task_id):
        status = panda_task_status(task_id=_task_id(task_id))
        if status is None:
            raise CallRefused("Task not found")
        return True, "", status


class TaskDetails(PandaMethod):
    parameters: ClassVar = {
        "task_id": Parameter(int, required=True),
        "include_parameters": Parameter(bool, False),
        "include_status": Parameter(bool, False),
    }

    def call(self, request, *, task_id, include_parameters, include_status):
        details = panda_task_details(
            task_id=_task_id(task_id), include_parameters=include_parameters, include_status=include_status
        )
        if details is None:
            raise CallRefused("Task not found or error retrieving the details")
        return True, "", details


class TaskParameters(PandaMethod):
    parameters: ClassVar = {"task_id": Parameter(int, required=True)}

    def call(self, request, *, task_id):
        found = panda_task_parameters(task_id=_task_id(task_id))
        if found is None:
            raise CallRefused("Task not found")
        return True, "", found


SINCE_FORMAT = "%Y-%m-%d %H:%M:%S"


class TasksDetailedInfoSince(PandaMethod):
    parameters: ClassVar = {
        "since": Parameter(str, None),
        "filters": Parameter(str, None),
        "n_tasks": Parameter(int, 500),
    }

    def call(self, request, *, since, filters, n_tasks):
        parsed_since = None
        if since is not None:
            try:
                parsed_since = datetime.strptime(since, SINCE_FORMAT).replace(tzinfo=UTC)
            except ValueError as error:
                raise CallRefused("Failed to retrieve task IDs", data=None) from error
        parsed_filters: dict[str, Any] = {}
        if filters:
            try:
                parsed_filters = json.loads(filters)
            except ValueError as error:
                raise CallRefused("filters is not valid JSON") from error
            if not isinstance(parsed_filters, dict):
                raise CallRefused("filters must be a JSON object")
        if not 0 <= n_tasks <= 10_000:
            raise CallRefused("n_tasks: from 0 to 10000")
        # the authenticated user's own tasks unless the filters name another user (an anonymous reader: anyone's)
        user_name = panda_user_name(request.user) if request.user.is_authenticated else None
        if "userName" in parsed_filters:
            user_name = None
        try:
            tasks = panda_tasks_since(
                user_name=user_name, since=parsed_since, filters=parsed_filters, n_tasks=n_tasks, now=timezone.now()
            )
        except TaskFilterError as error:
            raise CallRefused(f"Failed to retrieve task IDs: {error}") from error
        return True, "", tasks


def panda_user_name(user) -> str:
    """The name PanDA records as the owner of a user's tasks: the full name with each word capitalised
    (panda_request.decode_token, 1.0.4), or the username when the user has no full name."""
    full = " ".join(word[:1].upper() + word[1:].lower() for word in user.get_full_name().split())
    return full or user.get_username()


class TaskCommand(PandaMethod):
    http_method = "POST"
    writes = True
    action = ""

    def call(self, request, *, task_id, **options):
        task_id = _task_id(task_id)
        if not request.user.has_perm("brokerage.change_task"):
            raise CallRefused(MESSAGE_TASK_OWNER)
        self.check(options)
        if panda_task_status(task_id=task_id) is None:
            return False, f"jediTaskID={task_id} not found", CODE_NOT_FOUND
        action, params = self.command(options)
        try:
            done = task_action_run(
                task_id=task_id,
                action=action,
                user=request.user,
                params=params,
                now=timezone.now(),
                via="panda-client",
            )
        except TaskCommandRefused as refused:
            return False, str(refused), CODE_IRRELEVANT_STATUS
        return True, done, CODE_DONE

    def check(self, options: dict[str, Any]) -> None:
        """Options the command cannot honour: CallRefused saying so."""

    def command(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The task page's action these options ask for, and its parameters."""
        return self.action, {}


class TaskKill(TaskCommand):
    action = "abort"
    parameters: ClassVar = {"task_id": Parameter(int, required=True), "broadcast": Parameter(bool, False)}


class TaskFinish(TaskCommand):
    action = "finish"
    # soft: running jobs may end; ours always lets them (seed 002's finish), so both answers are the same
    parameters: ClassVar = {
        "task_id": Parameter(int, required=True),
        "soft": Parameter(bool, False),
        "broadcast": Parameter(bool, False),
    }


class TaskPause(TaskCommand):
    action = "pause"
    parameters: ClassVar = {"task_id": Parameter(int, required=True)}


class TaskResume(TaskCommand):
    action = "resume"
    parameters: ClassVar = {"task_id": Parameter(int, required=True)}


class TaskRetry(TaskCommand):
    action = "retry"
    parameters: ClassVar = {
        "task_id": Parameter(int, required=True),
        "new_parameters": Parameter(dict, None),
        "no_child_retry": Parameter(bool, False),
        "discard_events": Parameter(bool, False),
        "disable_staging_mode": Parameter(bool, False),
        "keep_gshare_priority": Parameter(bool, False),
        "ignore_hard_exhausted": Parameter(bool, False),
    }

    def command(self, options):
        # with new parameters the retry is JEDI's incexec (TaskCommando: a resubmission), for a done, failed or
        # finished task
        if options.get("new_parameters"):
            return "incexec", {"new_parameters": options["new_parameters"]}
        return self.action, {}

    def check(self, options):
        for flag in ("no_child_retry", "discard_events", "disable_staging_mode", "keep_gshare_priority"):
            if options.get(flag):
                raise CallRefused(f"{flag}: not supported here (the retry of seed 002 only)", CODE_SERVER_ERROR)


# --- jobs ---


class JobDescription(PandaMethod):
    http_method = None  # the real server takes both (panda-client POSTs a JSON body)
    parameters: ClassVar = {"job_ids": Parameter(list, required=True, element=int)}

    def call(self, request, *, job_ids):
        return True, "", panda_job_descriptions(job_ids=job_ids)


class JobKill(PandaMethod):
    http_method = "POST"
    writes = True
    parameters: ClassVar = {
        "job_ids": Parameter(list, required=True, element=int),
        "code": Parameter(int, None),
        "use_email_as_id": Parameter(bool, False),
        "kill_options": Parameter(list, [], element=str),
    }

    def call(self, request, *, job_ids, code, use_email_as_id, kill_options):
        if not request.user.has_perm("brokerage.change_job"):
            raise CallRefused(MESSAGE_JOB_PERMISSION)
        reason = f"killed by {request.user.get_username()} with panda-client" + (f" (code {code})" if code else "")
        killed = job_kill(job_ids=job_ids, actor=f"{request.user.get_username()} (panda-client)", now=timezone.now(),
                          reason=reason)  # fmt: skip
        return True, "", killed


METHODS: dict[str, tuple[type[PandaMethod], str, str]] = {
    "task/get_status": (TaskStatus, "Status of a task", "getTaskStatus: the task's status (data)."),
    "task/get_details": (
        TaskDetails,
        "Details of a task",
        "getJediTaskDetails: input and output containers, the input files' statistics, the jobs reading them; "
        "`status` with include_status, `cliParams` with include_parameters.",
    ),
    "task/get_task_parameters": (
        TaskParameters,
        "Parameters of a task",
        "getTaskParamsMap: the parameters the task was defined with.",
    ),
    "task/get_tasks_detailed_info_since": (
        TasksDetailedInfoSince,
        "Tasks changed since",
        "pbook show: the full records of at most n_tasks tasks changed since `since` (at most 90 days back), the "
        "caller's own unless `filters` (a JSON object of task attributes → value or regular expression) names "
        "another userName.",
    ),
    "task/kill": (TaskKill, "Kill a task", "killTask, pbook kill: the task aborted, its jobs killed (data: 0 done, "
                  "2 no such task, 4 not in a status that can be killed). Needs brokerage.change_task."),
    "task/finish": (TaskFinish, "Finish a task", "finishTask, pbook finish: no new jobs, queued ones killed, "
                    "running ones may end (data as for kill). Needs brokerage.change_task."),
    "task/pause": (TaskPause, "Pause a task", "pauseTask, pbook pause: no new jobs until resumed; its jobs go on "
                   "(data as for kill). Needs brokerage.change_task."),
    "task/resume": (TaskResume, "Resume a task", "resumeTask, pbook resume: back to what it was doing (data as for "
                    "kill). Needs brokerage.change_task."),
    "task/retry": (TaskRetry, "Retry a task", "retryTask, pbook retry: failed inputs get new attempts (finished or "
                   "exhausted tasks); with new_parameters, a resubmission (incexec: done, failed or finished tasks, "
                   "the parameters seed 002 lets change). Data as for kill. Needs brokerage.change_task."),
    "job/get_description": (
        JobDescription,
        "Descriptions of jobs",
        "getJobStatus: each job's record with its input Files, null for an id that is no job.",
    ),
    "job/get_description_incl_archive": (
        JobDescription,
        "Descriptions of jobs, archived ones too",
        "getFullJobStatus: as job/get_description (our jobs, active and archived, are one table).",
    ),
    "job/kill": (JobKill, "Kill jobs", "killJobs: per job, whether it was killed. Needs brokerage.change_job."),
}  # fmt: skip


# every path method_views made a view for (the 404 of an unknown method lists its module's)
SERVED_PATHS: dict[str, Any] = {}


def method_views(methods: dict[str, tuple[type[PandaMethod], str, str]]) -> dict[str, Any]:
    """Each method's view, its schema documented (one class per path, so that two paths' documents differ)."""
    views = {}
    SERVED_PATHS.update(methods)
    for path, (base, summary, description) in methods.items():
        view = type(base.__name__ + "_" + path.replace("/", "_"), (base,), {})  # job/… serves two paths
        name = "".join(part.title() for part in path.replace("/", "_").split("_"))
        views[path] = panda_method(name, summary, description)(view).as_view()
    return views


def unknown_method(request, module: str, method: str):
    served = ", ".join(path for path in SERVED_PATHS if path.startswith(f"{module}/"))
    return envelope(False, f"{module}/{method} is not served here (served: {served})", status=404)
