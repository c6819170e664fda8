"""API views: thin — a queryset or a selector, a serializer, the filters of filters.py."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.http import JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import Resolver404, resolve
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from brokerage.adapters.shares import global_share_usage
from brokerage.costly import SlotsBusy, costly_client, costly_slot
from brokerage.gdpconfig import GdpConfigError
from brokerage.models import (
    BrokerageCycle,
    Dataset,
    Decision,
    DiracJob,
    DiracMatchRecord,
    GdpConfig,
    GdpConfigChange,
    GdpConfigRevision,
    GlobalShare,
    Job,
    PandaQueue,
    Site,
    Task,
    WMCoreElement,
    WMCoreRequest,
    WorkQueue,
)
from brokerage.params import whole_number
from brokerage.selectors.decisions import decision_trace
from brokerage.selectors.dirac import dirac_job_explained, dirac_task_queues
from brokerage.selectors.dirac_replay import dirac_match_replay, dirac_match_scenario
from brokerage.selectors.gdpconfig import gdpconfig_parameter_rows, gdpconfig_revision_detail
from brokerage.selectors.inputs import InputsUnavailable, decision_scenario
from brokerage.selectors.jobs import job_event_service_state, job_input_files, job_output_files, job_parameters
from brokerage.selectors.preview import PreviewUnavailable, broker_preview_scenario, broker_preview_task
from brokerage.selectors.replay import decision_replay
from brokerage.selectors.tasks import task_datasets, task_event_summary, task_why
from brokerage.selectors.timeouts import job_timeout_states
from brokerage.selectors.whatif import cycle_id_list, cycles_what_if
from brokerage.services.dirac import dirac_match_request, resource_from
from brokerage.services.gdpconfig import (
    GdpConfigInputError,
    gdpconfig_delete,
    gdpconfig_revision_restore,
    gdpconfig_save,
)

from . import filters, serializers
from .errors import error_response
from .pagination import NewestFirst
from .parameters import KnownQueryParameters
from .permissions import CanChangeGdpConfig, CanClaimDiracJobs, ReadAccess, ReadOrModelPermission


class ReadOnly(KnownQueryParameters, viewsets.ReadOnlyModelViewSet):
    permission_classes = [ReadOrModelPermission]
    # ids are 64-bit: a longer number cannot name a row (404, not a database error)
    lookup_value_regex = r"[0-9]{1,18}"


class TaskViewSet(ReadOnly):
    """JEDI tasks, filtered by their columns, a modification window and free text."""

    queryset = Task.objects.select_related("workQueue").order_by("-jediTaskID")
    serializer_class = serializers.TaskSerializer
    filterset_class = filters.TaskFilter
    ordering_fields = ["jediTaskID", "currentPriority", "modificationTime", "creationDate", "progress"]

    @extend_schema(responses=serializers.TaskWhySerializer)
    @action(detail=True)
    def why(self, request, pk=None):
        """Why the task is where it is, why it gets no jobs (the job throttler holding its work queue back, with the
        numbers) and what a shifter can do, as the task page says it."""
        task = self.get_object()
        return Response(serializers.TaskWhySerializer(task_why(task_id=task.pk, now=timezone.now())).data)

    @extend_schema(responses=serializers.TaskContentsSerializer)
    @action(detail=True)
    def contents(self, request, pk=None):
        """The task's datasets (output and log ones with their files by status now) and its event ranges by status
        with its event service, merge, jumbo and co-jumbo jobs, as the task page shows them."""
        task = self.get_object()
        body = {
            "jediTaskID": task.pk,
            "datasets": task_datasets(task_id=task.pk),
            "events": task_event_summary(task_id=task.pk),
        }
        return Response(serializers.TaskContentsSerializer(body).data)


class JobViewSet(ReadOnly):
    """PanDA jobs, newest first with cursor pages; each carries its timeout state (rule, deadline, time left)."""

    queryset = Job.objects.order_by("-PandaID")
    serializer_class = serializers.JobSerializer
    filterset_class = filters.JobFilter
    pagination_class = NewestFirst

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "timeouts": getattr(self, "_timeouts", {})}

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        if page is not None:
            self._timeouts = job_timeout_states(job_ids=[job.pk for job in page], now=timezone.now())
        return page

    def retrieve(self, request, *args, **kwargs):
        job = self.get_object()
        self._timeouts = job_timeout_states(job_ids=[job.pk], now=timezone.now())
        return Response(self.get_serializer(job).data)

    @extend_schema(responses=serializers.JobContentsSerializer)
    @action(detail=True)
    def contents(self, request, pk=None):
        """The job's parameters (its task's template filled in), the output and log files it produces and, for an
        event service, ES merge, jumbo or co-jumbo job, what its substatus means, as its page says it."""
        job = self.get_object()
        outputs = job_output_files(job_id=job.pk)
        inputs = job_input_files(job_ids=[job.pk])[job.pk]
        body = {
            "PandaID": job.pk,
            "jobSubStatus": job.jobSubStatus,
            "parameters": job_parameters(job=job, inputs=inputs, outputs=outputs),
            "outputs": outputs,
            "event_service": job_event_service_state(job),
        }
        return Response(serializers.JobContentsSerializer(body).data)

    @extend_schema(responses=serializers.TimeoutStateSerializer)
    @action(detail=True)
    def timeout(self, request, pk=None):
        """Which timeout rule watches the job now, when it times out and how long is left."""
        job = self.get_object()
        state = job_timeout_states(job_ids=[job.pk], now=timezone.now())[job.pk]
        return Response(serializers.TimeoutStateSerializer(state).data)


class DatasetViewSet(ReadOnly):
    queryset = Dataset.objects.order_by("-datasetID")
    serializer_class = serializers.DatasetSerializer
    filterset_class = filters.DatasetFilter


class SiteViewSet(ReadOnly):
    queryset = Site.objects.order_by("name")
    serializer_class = serializers.SiteSerializer
    lookup_field = "name"
    lookup_value_regex = ".+"  # names may hold "/", spaces or any letters
    filterset_fields = ["role", "state", "cloud"]


class QueueViewSet(ReadOnly):
    queryset = PandaQueue.objects.select_related("site").order_by("name")
    serializer_class = serializers.QueueSerializer
    filterset_class = filters.QueueFilter
    lookup_field = "name"
    lookup_value_regex = ".+"  # names may hold "/", spaces or any letters


class WorkQueueViewSet(ReadOnly):
    queryset = WorkQueue.objects.select_related("partition").order_by("queue_type", "queue_order")
    serializer_class = serializers.WorkQueueSerializer
    filterset_fields = ["queue_type", "vo", "status"]


class GlobalShareViewSet(ReadOnly):
    """The global share tree with each share's usage now (executing / target HS06)."""

    queryset = GlobalShare.objects.select_related("parent").order_by("name")
    serializer_class = serializers.GlobalShareSerializer
    lookup_field = "name"
    lookup_value_regex = ".+"  # names may hold "/", spaces or any letters

    def get_serializer_context(self):
        usage = {row["share"].name: row for row in global_share_usage()}
        return {**super().get_serializer_context(), "usage": usage}


def _inputs_unavailable(why: InputsUnavailable) -> Response:
    code = status.HTTP_404_NOT_FOUND if why.code == "cycle_unknown" else status.HTTP_409_CONFLICT
    return error_response(str(why), status_code=code, fields={"decision": [f"{why.code}: {why}"]})


def _what_if_response(request, cycle_ids: list[int], **window) -> Response:
    serializer = serializers.WhatIfRequestSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    try:
        # within WHAT_IF_SECONDS and a costly-request slot, as the page (brokerage.costly; issue 47)
        with costly_slot(client=costly_client(request), what="what-if"):
            result = cycles_what_if(
                cycle_ids=cycle_ids,
                profile=data.get("profile"),
                overrides=data.get("gdpconfig") or {},
                limit=data["limit"],
                seconds=settings.WHAT_IF_SECONDS,
            )
    except SlotsBusy as busy:
        raise exceptions.Throttled(wait=busy.retry_after, detail=f"{busy} Try again in {busy.retry_after} s.") from busy
    except GdpConfigError as why:
        return error_response(str(why), fields={"gdpconfig": [str(why)]})
    return Response({**result, **window})


class CycleViewSet(ReadOnly):
    """Brokerage cycles. A cycle's (or a time window's) decisions can be run again with other parameters: what-if."""

    queryset = BrokerageCycle.objects.order_by("-pk")
    serializer_class = serializers.CycleSerializer
    filterset_class = filters.CycleFilter

    @extend_schema(
        operation_id="v1_cycles_what_if_create",
        request=serializers.WhatIfRequestSerializer,
        responses={200: OpenApiResponse(description="decisions that would change, and how"), 400: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"], url_path="what-if", permission_classes=[ReadAccess], filter_backends=[])
    def what_if(self, request, pk=None):
        """The cycle's decisions run again on their stored inputs with `gdpconfig` changes or another `profile`:
        how many change outcome, choice or candidates, each changed decision, assignments before and after."""
        cycle = get_object_or_404(BrokerageCycle, pk=pk)
        return _what_if_response(request, [cycle.pk])

    @extend_schema(
        operation_id="v1_cycles_window_what_if_create",
        request=serializers.WhatIfRequestSerializer,
        responses={200: OpenApiResponse(description="decisions that would change, and how"), 400: OpenApiResponse()},
    )
    @action(detail=False, methods=["post"], url_path="what-if", permission_classes=[ReadAccess], filter_backends=[])
    def window_what_if(self, request):
        """The decisions of the cycles started within `since`–`until` (the last hour by default), newest first, up
        to `limit`, run again with changes. A window that ends before it starts holds no cycle."""
        serializer = serializers.WhatIfRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        until = serializer.validated_data.get("until") or timezone.now()
        since = serializer.validated_data.get("since") or until - timedelta(hours=1)
        return _what_if_response(
            request,
            cycle_id_list(since=since, until=until, plugin=serializer.validated_data.get("plugin")),
            since=since,
            until=until,
        )


class DecisionViewSet(ReadOnly):
    """Brokerage decisions, newest first with cursor pages. One decision comes with its full trace: candidates,
    skipped candidates with their codes, the numbers compared and the sentences."""

    queryset = Decision.objects.order_by("-pk")
    serializer_class = serializers.DecisionSerializer
    filterset_class = filters.DecisionFilter
    pagination_class = NewestFirst

    @extend_schema(responses=serializers.DecisionDetailSerializer)
    def retrieve(self, request, *args, **kwargs):
        decision = get_object_or_404(Decision.objects.select_related("cycle"), pk=kwargs["pk"])
        trace = decision_trace(decision=decision)
        return Response(serializers.DecisionDetailSerializer(decision, context={"trace": trace}).data)

    @extend_schema(
        request=serializers.ReplayRequestSerializer,
        responses={
            200: OpenApiResponse(description="the replayed decision and its difference from the stored one"),
            400: OpenApiResponse(),
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[ReadAccess], filter_backends=[])
    def replay(self, request, pk=None):
        """The decision run again on its stored inputs: `identical` when nothing changed (same outcome, choice,
        candidates, weights, and the trace byte for byte); with `gdpconfig`, `profile` or `cycle`, what changed.
        409 when it cannot be replayed (inputs expired, not a brokerage decision, …), naming why."""
        decision = get_object_or_404(Decision, pk=pk)
        serializer = serializers.ReplayRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            result = decision_replay(
                decision=decision,
                cycle_id=data.get("cycle"),
                profile=data.get("profile"),
                overrides=data.get("gdpconfig") or {},
            )
        except InputsUnavailable as why:
            return _inputs_unavailable(why)
        return Response(result)

    @extend_schema(responses={200: OpenApiResponse(description="a scenario file (docs/scenario.md)")})
    @action(detail=True, methods=["get"], filter_backends=[])
    def scenario(self, request, pk=None):
        """The scenario the decision was decided on, as a file `manage.py broker` runs offline to the same decision.
        409 when its inputs are not kept (expired, or not a brokerage decision)."""
        decision = get_object_or_404(Decision, pk=pk)
        try:
            scenario = decision_scenario(decision=decision)
        except InputsUnavailable as why:
            return _inputs_unavailable(why)
        response = Response(scenario)
        response["Content-Disposition"] = f'attachment; filename="decision-{decision.pk}-scenario.json"'
        return response


class GdpConfigRevisionViewSet(ReadOnly):
    """gdpconfig revisions, newest first: every save, delete, applied profile or restore. One revision comes with its
    rows and its difference from `?against=ID` (else the revision before it); POST …/restore makes it the stored
    gdpconfig again (the permission to change gdpconfig)."""

    queryset = GdpConfigRevision.objects.prefetch_related("changes").order_by("-pk")
    serializer_class = serializers.GdpConfigRevisionSerializer
    filterset_fields = ["action"]
    extra_query_parameters = ("against",)

    @extend_schema(
        parameters=[OpenApiParameter("against", int, description="Compare with this revision.")],
        responses=serializers.GdpConfigRevisionDetailSerializer,
    )
    def retrieve(self, request, *args, **kwargs):
        revision = get_object_or_404(self.get_queryset(), pk=kwargs["pk"])
        against_text = request.query_params.get("against", "")
        against = whole_number(against_text, maximum=10**18) if against_text else None
        if against_text and against is None:
            return error_response("against: give a revision id", fields={"against": ["a revision id"]})
        detail = gdpconfig_revision_detail(revision_id=revision.pk, against_id=against)
        if against and (detail["against"] is None or detail["against"].pk != against):
            return error_response(f"no gdpconfig revision {against}", status_code=404, fields={"against": ["unknown"]})
        data = serializers.GdpConfigRevisionSerializer(revision).data
        keys = ("app", "component", "key", "vo", "value", "type", "is_custom")
        data["rows"] = [dict(zip(keys, row, strict=True)) for row in revision.rows]
        data["against"] = detail["against"].pk if detail["against"] else None
        data["difference"] = detail["difference"]
        return Response(data)

    @extend_schema(
        request=serializers.RestoreRequestSerializer,
        responses={200: serializers.GdpConfigRevisionSerializer, 400: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"], permission_classes=[CanChangeGdpConfig], filter_backends=[])
    def restore(self, request, pk=None):
        """Makes the stored gdpconfig what it was at this revision; the result is a new revision (returned). 400
        when the stored gdpconfig already is this revision."""
        revision = get_object_or_404(GdpConfigRevision, pk=pk)
        serializer = serializers.RestoreRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            made = gdpconfig_revision_restore(
                revision_id=revision.pk, user=request.user, comment=serializer.validated_data["comment"]
            )
        except GdpConfigInputError as why:
            return error_response(str(why), fields={why.field: [str(why)]})
        return Response(serializers.GdpConfigRevisionSerializer(made).data)


COMMENT_LENGTH = GdpConfigChange._meta.get_field("comment").max_length


class GdpConfigViewSet(
    KnownQueryParameters,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Stored gdpconfig rows. Reading follows the read rule; writing needs the gdpconfig permissions and goes
    through the same validation and change history as the admin."""

    queryset = GdpConfig.objects.order_by("key", "vo")
    serializer_class = serializers.GdpConfigSerializer
    extra_query_parameters = ("comment", "vo")
    conflicts = {
        method: "Another row already holds this key for that app, component and VO." for method in ("PUT", "PATCH")
    }
    lookup_value_regex = r"[0-9]{1,18}"
    permission_classes = [ReadOrModelPermission]
    filterset_fields = ["key", "vo", "component", "app"]

    def _save(self, serializer, instance=None):
        data = serializer.validated_data
        with transaction.atomic():
            saved = gdpconfig_save(
                key=data.get("key", getattr(instance, "key", "")),
                value=data.get("value", getattr(instance, "value", "")),
                vo=data.get("vo", getattr(instance, "vo", "")),
                value_type=data.get("type", ""),
                app=data.get("app", ""),
                component=data.get("component", ""),
                is_custom=data.get("is_custom", getattr(instance, "is_custom", False)),
                descr=data.get("descr", ""),
                user=self.request.user,
                comment=data.get("comment", ""),
                instance=instance,
            )
        serializer.instance = saved

    def perform_create(self, serializer):
        self._save(serializer)

    def perform_update(self, serializer):
        self._save(serializer, instance=serializer.instance)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "comment",
                {"type": "string", "maxLength": COMMENT_LENGTH, "pattern": "^[^\u0000]*$"},
                description="Why: kept in the change history.",
            )
        ]
    )
    def destroy(self, request, *args, **kwargs):
        return super().destroy(request, *args, **kwargs)

    def perform_destroy(self, instance):
        comment = self.request.query_params.get("comment", "")
        if len(comment) > COMMENT_LENGTH or "\x00" in comment:
            raise ValidationError({"comment": [f"at most {COMMENT_LENGTH} characters, without NUL"]})
        gdpconfig_delete(instance=instance, user=self.request.user, comment=comment)

    @extend_schema(
        responses=serializers.GdpConfigParameterSerializer(many=True),
        parameters=[
            OpenApiParameter("vo", str, description="The VO whose effective values are shown (default atlas).")
        ],
    )
    @action(detail=False, pagination_class=None, filter_backends=[])
    def parameters(self, request):
        """Every registered parameter: default, effective value for the VO and where it comes from."""
        rows = gdpconfig_parameter_rows(vo=request.query_params.get("vo", "atlas"))
        return Response(serializers.GdpConfigParameterSerializer(rows, many=True).data)


class PreviewView(KnownQueryParameters, GenericAPIView):
    """What-if: brokers a posted scenario (bare, as a scenario file is, or as `{"scenario": …}` with `gdpconfig`
    and `profile` over it), or a task's current snapshot with gdpconfig overrides, stores nothing,
    and returns the decision with its difference from the task's last stored decision (queues gained, queues
    lost with their codes, change of choice)."""

    permission_classes = [ReadAccess]
    filter_backends = []  # not a list of rows: no ordering or filter parameters
    serializer_class = serializers.PreviewRequestSerializer
    # a well-formed request for a task that cannot be previewed as asked: the task's state, not the request, is
    # in the way (nothing left to split and no job set, or its jobs are brokered by the other job plugin)
    conflicts = {"POST": "The task cannot be previewed as asked in its present state; the message says why."}

    @extend_schema(
        request=serializers.PreviewRequestSerializer,
        responses={200: OpenApiResponse(description="decision and difference"), 400: OpenApiResponse()},
    )
    def post(self, request):
        body = request.data
        # a bare scenario (a file of docs/examples as it is) is a scenario: it names its plugin, and a task, when
        # it has one, as an object — where a task preview names the task by its id
        if (
            isinstance(body, dict)
            and "scenario" not in body
            and "plugin" in body
            # a task id is a number: 83 or 83.0 (the same integer in JSON Schema) or "83"
            and not isinstance(body.get("task"), int | float | str)
        ):
            body = {"scenario": body}
        serializer = self.get_serializer(data=body)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if "scenario" in data:
            scenario = data["scenario"]
            if data.get("gdpconfig"):  # overrides on top of the scenario's own parameters
                scenario = {**scenario, "gdpconfig": {**(scenario.get("gdpconfig") or {}), **data["gdpconfig"]}}
            return Response(broker_preview_scenario(scenario=scenario, profile=data.get("profile")))
        try:
            result = broker_preview_task(
                task_id=data["task"],
                now=timezone.now(),
                overrides=data.get("gdpconfig") or {},
                plugin=data.get("plugin"),
                profile=data.get("profile"),
            )
        except PreviewUnavailable as why:
            missing = not Task.objects.filter(pk=data["task"]).exists()
            code = status.HTTP_404_NOT_FOUND if missing else status.HTTP_409_CONFLICT
            return error_response(str(why), status_code=code, fields={"task": [str(why)]})
        except GdpConfigError as why:  # an override out of its parameter's bounds or choices
            return error_response(str(why), fields={"gdpconfig": [str(why)]})
        return Response(result)


class DiracMatchView(KnownQueryParameters, GenericAPIView):
    """The DIRAC Matcher: a resource asks for a job. Claims the job chosen by seed 003's order (needs the
    permission to change DIRAC jobs), or, with `dry_run`, only tells which task queue it would draw from (read
    access). When nothing matches: the nearest task queues with every rule they fail and the values compared."""

    filter_backends = []  # not a list of rows: no ordering or filter parameters
    serializer_class = serializers.DiracResourceSerializer
    anonymous_dry_run = True  # the schema's security: anonymous clients may ask with dry_run

    def get_permissions(self):
        body = self.request.data if isinstance(self.request.data, dict) else {}
        if body.get("dry_run") in (True, "true", "True", "1"):
            return [ReadAccess()]
        return [CanClaimDiracJobs()]

    def get_queryset(self):
        return DiracJob.objects.none()

    @extend_schema(responses={200: OpenApiResponse(description="the job matched, or the nearest task queues")})
    def post(self, request):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        return Response(
            dirac_match_request(
                resource=resource_from(data), now=timezone.now(), seed=data.get("seed"), dry_run=data["dry_run"]
            )
        )


class DiracMatchReplayView(KnownQueryParameters, GenericAPIView):
    """A stored DIRAC matching request run again from what it drew from (issue 34): `identical` when it gets the
    same job from the same task queue in the same steps; with `profile` or `gdpconfig` (the DIRAC_* parameters),
    the task queues gained and lost and the new match, or `undetermined` when the new draw reaches a task queue
    whose waiting jobs the request never read. 409 when its inputs are not kept (expired, or stored before)."""

    filter_backends = []
    permission_classes = [ReadAccess]
    serializer_class = serializers.DiracReplayRequestSerializer

    def get_queryset(self):
        return DiracMatchRecord.objects.none()

    @extend_schema(responses={200: OpenApiResponse(description="the replayed match and what changed"), 409: None})
    def post(self, request, record_id: int):
        record = get_object_or_404(DiracMatchRecord, pk=record_id)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            result = dirac_match_replay(
                record=record, profile=data.get("profile"), overrides=data.get("gdpconfig") or {}
            )
        except InputsUnavailable as why:
            return _inputs_unavailable(why)
        return Response(result)


class DiracMatchScenarioView(KnownQueryParameters, GenericAPIView):
    """A stored DIRAC matching request as a scenario file (`dirac_match` with a `matcher` section) that `manage.py
    broker` runs offline to the same match. 409 when its inputs are not kept."""

    filter_backends = []
    permission_classes = [ReadAccess]

    def get_queryset(self):
        return DiracMatchRecord.objects.none()

    @extend_schema(responses={200: OpenApiResponse(description="a scenario file (docs/scenario.md)"), 409: None})
    def get(self, request, record_id: int):
        record = get_object_or_404(DiracMatchRecord, pk=record_id)
        try:
            scenario = dirac_match_scenario(record=record)
        except InputsUnavailable as why:
            return _inputs_unavailable(why)
        response = Response(scenario)
        response["Content-Disposition"] = f'attachment; filename="dirac-match-{record.pk}-scenario.json"'
        return response


class DiracTaskQueueView(KnownQueryParameters, GenericAPIView):
    """DIRAC task queues with waiting jobs, largest first, with their priorities and requirements."""

    permission_classes = [ReadAccess]
    filter_backends = []  # not a list of rows: no ordering or filter parameters
    serializer_class = serializers.DiracTaskQueueSerializer
    pagination_class = None

    def get_queryset(self):
        return DiracJob.objects.none()

    @extend_schema(responses=serializers.DiracTaskQueueSerializer(many=True))
    def get(self, request):
        return Response(serializers.DiracTaskQueueSerializer(dirac_task_queues(), many=True).data)


class DiracJobExplainedView(KnownQueryParameters, GenericAPIView):
    """One DIRAC job explained: its task queue, that queue's priority with the numbers it comes from, and the rules
    the queue fails for each site and CE that asked for work in the last day."""

    permission_classes = [ReadAccess]
    filter_backends = []
    serializer_class = serializers.DiracJobExplainedSerializer
    pagination_class = None

    def get_queryset(self):
        return DiracJob.objects.none()

    @extend_schema(responses={200: serializers.DiracJobExplainedSerializer, 404: OpenApiResponse(description="no job")})
    def get(self, request, job_id: int):
        explained = dirac_job_explained(job_id=job_id, now=timezone.now())
        if explained is None:
            raise NotFound(f"No DIRAC job {job_id}.")
        return Response(serializers.DiracJobExplainedSerializer(explained).data)


class WMCoreRequestViewSet(ReadOnly):
    """ReqMgr2 requests as the WMCore work queues see them (seed 004)."""

    queryset = WMCoreRequest.objects.order_by("-status_time", "-pk")
    serializer_class = serializers.WMCoreRequestSerializer
    filterset_fields = ["RequestStatus", "RequestType", "Team"]
    lookup_field = "RequestName"
    lookup_value_regex = ".+"  # names may hold "/", spaces or any letters


class WMCoreElementViewSet(ReadOnly):
    """Work-queue elements of every queue and database, with the reason the last pull left them and its sentence."""

    queryset = WMCoreElement.objects.select_related("queue", "request", "ChildQueue").order_by(
        "-Priority", "CreationTime", "pk"
    )
    serializer_class = serializers.WMCoreElementSerializer
    filterset_class = filters.WMCoreElementFilter


@csrf_exempt  # a DELETE to a wrong path is a 404, not a CSRF refusal (an operation checks CSRF itself)
def not_found(request, unmatched: str = ""):
    """Any /api/ path that names no operation: the operation at the same path with or without its final slash
    (one rule for every path, no redirect, so a POST works either way), else the API's JSON 404."""
    path = request.path_info
    other = path[:-1] if path.endswith("/") else path + "/"
    try:
        match = None if path.endswith("//") else resolve(other)
    except Resolver404:
        match = None
    if match is not None and match.func is not not_found:
        return match.func(request, *match.args, **match.kwargs)
    message = f"No API operation at {request.path}."
    return JsonResponse({"error": {"status": 404, "code": "not_found", "message": message, "fields": {}}}, status=404)
