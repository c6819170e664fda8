"""The PanDA pilot's dispatcher protocol (issue 36): `/server/panda/getJob`, `updateJob`, `getStatus`, and for event
service jobs `getEventRanges` and `updateEventRanges` (issue 52; pilot 3.7's PandaCommunicator), as form
posts answered in JSON (pilot 3.7.0.36: pilot/util/https.py sends `Accept: application/json`), and the CRIC-shaped
caches the pilot reads its queue and storages from (`/cache/schedconfig/<queue>.all.json`, `<queue>.json`,
`/cache/ddmendpoints.json`). Thin: the services in brokerage/services/dispatcher.py decide.

A pilot authenticates as panda-client does, with an OIDC ID token (`PANDA_AUTH_TOKEN`/`PANDA_AUTH_ORIGIN`: a
bearer token and the VO) or one of our API tokens; getJob and updateJob change jobs, so the token's user needs
`brokerage.change_job` (JobDispatcher's "production or pilot role"). getStatus and the caches follow the read rule.
Answers carry JobDispatcher's StatusCode: 0 success, 20 no job, 30 failed, 50 invalid, 60 no pilot role.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django.conf import settings
from django.http import JsonResponse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from brokerage.selectors.dispatcher import pilot_job_description, pilot_queuedata, pilot_storages
from brokerage.services.dispatcher import DispatcherRefused, pilot_job_acquire, pilot_job_statuses, pilot_job_update
from brokerage.services.event_service import pilot_event_ranges_get, pilot_event_ranges_update
from monitor.api.permissions import read_allowed

# jobdispatcher/Protocol.py (panda-server)
SC_SUCCESS, SC_NO_JOBS, SC_FAILED, SC_INVALID, SC_ROLE = 0, 20, 30, 50, 60
# the most event ranges one getEventRanges gives (a request's cost is bounded; updates take ten times as many)
MAX_RANGES = 1000


def answer(status_code: int, **fields: Any) -> JsonResponse:
    return JsonResponse({"StatusCode": status_code, **fields})


class PilotThrottle(UserRateThrottle):
    """The pilots' own rate (PILOT_RATE): a fleet shares one identity, so the API's per-user rate would starve it."""

    scope = "pilot"


@extend_schema(exclude=True)  # the pilot's protocol, not our API (README, "The PanDA pilot")
class PilotCall(APIView):
    parser_classes: ClassVar[list] = [FormParser, JSONParser]
    permission_classes: ClassVar[list] = []
    throttle_classes: ClassVar[list] = [PilotThrottle]
    writes = True
    http_method_names: ClassVar[list[str]] = ["post"]

    @staticmethod
    def error_answer(status: int, message: str) -> JsonResponse:
        """A failure outside the call (a row locked elsewhere, the database away) in the protocol's shape
        (monitor.middleware): failed, with what happened as the error dialog."""
        response = answer(SC_FAILED, errorDialog=message)
        response.status_code = status
        return response

    def handle_exception(self, exc):
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            return answer(SC_ROLE, errorDialog=str(exc.detail))
        if isinstance(exc, exceptions.Throttled):
            return self.error_answer(429, "too many requests")
        if isinstance(exc, exceptions.APIException):
            return answer(SC_INVALID, errorDialog=str(exc.detail))
        return super().handle_exception(exc)

    def post(self, request):
        if self.writes and not request.user.has_perm("brokerage.change_job"):
            return answer(SC_ROLE, errorDialog="production or pilot role required (brokerage.change_job)")
        if not self.writes and not read_allowed(request):
            return answer(SC_ROLE, errorDialog="reading needs a token here")
        data = request.data
        fields = {key: data.get(key) for key in data} if hasattr(data, "get") else {}
        try:
            return self.call(fields)
        except DispatcherRefused as refused:
            return answer(SC_INVALID, errorDialog=str(refused))

    def call(self, fields: dict[str, Any]) -> JsonResponse:
        raise NotImplementedError


class GetJob(PilotCall):
    def call(self, fields):
        queue = str(fields.get("computingElement") or fields.get("siteName") or "")
        if not queue:
            return answer(SC_INVALID, errorDialog="siteName or computingElement: the queue asking")
        job = pilot_job_acquire(
            queue=queue,
            node=str(fields.get("node") or "")[:128],
            computing_element=str(fields.get("computingElement") or ""),
            now=timezone.now(),
        )
        if job is None:
            return answer(SC_NO_JOBS)
        return JsonResponse(pilot_job_description(job=job))


class UpdateJob(PilotCall):
    def call(self, fields):
        try:
            job_id = int(str(fields.get("jobId")))
        except ValueError:
            return answer(SC_INVALID, errorDialog=f"jobId: a PandaID, not {fields.get('jobId')!r}")
        command = pilot_job_update(
            job_id=job_id, state=str(fields.get("state") or ""), report=fields, now=timezone.now()
        )
        return answer(SC_SUCCESS, command=command)


class GetEventRanges(PilotCall):
    """getEventRanges: pandaID, nRanges (jobsetID and taskID as the pilot sends them, not needed here)."""

    def call(self, fields):
        try:
            job_id = int(str(fields.get("pandaID")))
            n_ranges = int(str(fields.get("nRanges") or 1))
        except ValueError:
            return answer(SC_INVALID, errorDialog="pandaID and nRanges: whole numbers")
        ranges = pilot_event_ranges_get(job_id=job_id, n_ranges=min(n_ranges, MAX_RANGES), now=timezone.now())
        return answer(SC_SUCCESS, eventRanges=ranges)


class UpdateEventRanges(PilotCall):
    """updateEventRanges: `eventRanges`, JSON: version 0 a list of {eventRangeID, eventStatus} (or one of them),
    version 1 a list of {"zipFile" or "esOutput": {...}, "eventRanges": [...]} (pilot 3.7's executors)."""

    def call(self, fields):
        try:
            sent = json.loads(str(fields.get("eventRanges") or "[]"))
        except ValueError:
            return answer(SC_INVALID, errorDialog="eventRanges: JSON")
        sent = [sent] if isinstance(sent, dict) else sent
        if not isinstance(sent, list) or len(sent) > MAX_RANGES * 10:
            return answer(SC_INVALID, errorDialog=f"eventRanges: a list of at most {MAX_RANGES * 10}")
        updates = []
        for item in sent:
            if isinstance(item, dict) and isinstance(item.get("eventRanges"), list):  # version 1: a zip's ranges
                updates += [update for update in item["eventRanges"] if isinstance(update, dict)]
            elif isinstance(item, dict):
                updates.append(item)
        results = pilot_event_ranges_update(updates=updates[: MAX_RANGES * 10], now=timezone.now())
        return answer(SC_SUCCESS, Returns=results, Command=None)


class GetStatus(PilotCall):
    writes = False

    def call(self, fields):
        raw = str(fields.get("ids") or "")
        try:
            ids = [int(part) for part in raw.split(",") if part.strip()]
        except ValueError:
            return answer(SC_INVALID, errorDialog=f"ids: PandaIDs separated by commas, not {raw!r}")
        statuses = pilot_job_statuses(job_ids=ids)
        return answer(
            SC_SUCCESS,
            status=",".join(status for status, _ in statuses),
            command=",".join(command for _, command in statuses),
        )


def caches_readable(request) -> bool:
    """The caches are queue and storage configuration, public in CRIC and PanDA, and the real pilot fetches them
    without credentials (pilot 3.7.0.36, pilot/info/dataloader.py load_url_data): readable by anyone unless
    PILOT_CACHES_ANONYMOUS_READ is off, then by the read rule."""
    return settings.PILOT_CACHES_ANONYMOUS_READ or read_allowed(request)


class CacheView(APIView):
    permission_classes: ClassVar[list] = []
    http_method_names: ClassVar[list[str]] = ["get", "head"]

    @staticmethod
    def error_answer(status: int, message: str) -> JsonResponse:
        return JsonResponse({"error": message}, status=status)


@extend_schema(exclude=True)
class QueueData(CacheView):
    def get(self, request, queue: str, whole: str = ""):
        if not caches_readable(request):
            return JsonResponse({"error": "reading needs a token here"}, status=403)
        record = pilot_queuedata(queue=queue)
        if record is None:
            return JsonResponse({"error": f"no queue {queue}"}, status=404)
        # <queue>.all.json is PanDA's cache of one queue; <queue>.json CRIC's, keyed by its name
        return JsonResponse(record if whole else {queue: record})


@extend_schema(exclude=True)
class Storages(CacheView):
    def get(self, request):
        if not caches_readable(request):
            return JsonResponse({"error": "reading needs a token here"}, status=403)
        return JsonResponse(pilot_storages())
