"""One error body for every API error: {"error": {"status", "code", "message", "fields"}}; `fields` maps a field
(or "non_field_errors") to its messages when the request was invalid."""

from __future__ import annotations

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from brokerage.engine import ScenarioError
from brokerage.gdpconfig import GdpConfigError


def _messages(detail) -> dict | list | str:
    if isinstance(detail, dict):
        return {key: _messages(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [str(item) if not isinstance(item, dict | list) else _messages(item) for item in detail]
    return str(detail)


def exception_handler(exc, context):
    # errors of our own layers that mean "your input is wrong" are 400s with the path or parameter named
    if isinstance(exc, ScenarioError):
        exc = exceptions.ValidationError({"scenario": [str(exc)]})
    elif isinstance(exc, GdpConfigError):
        exc = exceptions.ValidationError({"value": [str(exc)]})
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    fields = {}
    if isinstance(exc, exceptions.ValidationError):
        fields = _messages(detail) if isinstance(detail, dict) else {"non_field_errors": _messages(detail)}
        message = "The request is invalid: see fields."
        code = "invalid"
    else:
        message = str(detail.get("detail", detail)) if isinstance(detail, dict) else str(detail)
        code = getattr(getattr(exc, "detail", None), "code", None) or getattr(exc, "default_code", "error")
    response.data = {"error": {"status": response.status_code, "code": code, "message": message, "fields": fields}}
    return response


def error_response(message: str, *, status_code: int = status.HTTP_400_BAD_REQUEST, fields=None) -> Response:
    return Response(
        {"error": {"status": status_code, "code": "invalid", "message": message, "fields": fields or {}}},
        status=status_code,
    )
