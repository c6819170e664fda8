"""One error body for every API error: {"error": {"status", "code", "message", "fields"}}; `fields` maps a field
(or "non_field_errors") to its messages when the request was invalid."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError
from django.views.csrf import csrf_failure as django_csrf_failure
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from brokerage.engine import ScenarioError
from brokerage.engine.core.registry import UnknownPlugin
from brokerage.gdpconfig import GdpConfigError
from brokerage.services.gdpconfig import GdpConfigConflict
from monitor.api.bodies import api_error, error_body

from .parsers import RequestTooLarge

# one code per kind of error, whichever layer raised it (issue 35)
CODE_OF_STATUS = {
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    429: "throttled",
}


class Conflict(exceptions.ValidationError):
    """A write that another row is in the way of (409), with the field named like a validation error."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def _messages(detail) -> dict | list | str:
    if isinstance(detail, dict):
        return {key: _messages(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [str(item) if not isinstance(item, dict | list) else _messages(item) for item in detail]
    return str(detail)


def exception_handler(exc, context):
    # errors of our own layers that mean "your input is wrong" are 400s with the path or parameter named
    if isinstance(exc, RequestDataTooBig):  # Django's own limit, met before our parser could say it
        exc = RequestTooLarge()
    elif isinstance(exc, IntegrityError):  # a write that a unique constraint refused, raced past validation
        exc = exceptions.ValidationError({"non_field_errors": [f"the database refused the write: {exc}"]})
    elif isinstance(exc, ScenarioError):
        exc = exceptions.ValidationError({"scenario": [str(exc)]})
    elif isinstance(exc, UnknownPlugin):  # a scenario naming a plugin this installation does not have
        exc = exceptions.ValidationError({"scenario": [f"$.plugin: {exc}"]})
    elif isinstance(exc, GdpConfigConflict):  # another row holds this key: a conflict, not a bad field
        exc = Conflict({getattr(exc, "field", "key"): [str(exc)]})
    elif isinstance(exc, GdpConfigError):
        exc = exceptions.ValidationError({getattr(exc, "field", "value"): [str(exc)]})
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    fields = {}
    if isinstance(exc, exceptions.ValidationError | Conflict):
        fields = _messages(detail) if isinstance(detail, dict) else {"non_field_errors": _messages(detail)}
        message = "The request is invalid: see fields." if response.status_code == 400 else "Conflict: see fields."
        code = "invalid" if response.status_code == 400 else "conflict"
    else:
        message = str(detail.get("detail", detail)) if isinstance(detail, dict) else str(detail)
        # Django's Http404 and PermissionDenied carry no code: the status names them as DRF's own would
        code = (
            getattr(getattr(exc, "detail", None), "code", None)
            or getattr(exc, "default_code", None)
            or CODE_OF_STATUS.get(response.status_code, "error")
        )
    response.data = error_body(status=response.status_code, code=code, message=message, fields=fields)
    request = context.get("request")
    if request is not None and not isinstance(getattr(request, "accepted_renderer", None), JSONRenderer):
        # an error is JSON whatever the view renders (the schema view's OpenAPI YAML, the docs' HTML)
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
    return response


def error_response(message: str, *, status_code: int = status.HTTP_400_BAD_REQUEST, fields=None) -> Response:
    code = CODE_OF_STATUS.get(status_code, "invalid")
    return Response(error_body(status=status_code, code=code, message=message, fields=fields), status=status_code)


def csrf_failure(request, reason: str = ""):
    """CSRF refusals: the API's JSON error under /api/, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        message = f"CSRF check failed: {reason}. Send the X-CSRFToken header with a session, or use a token."
        return api_error(403, "csrf_failed", message)
    return django_csrf_failure(request, reason=reason)
