"""The API's one error body, `{"error": {"status", "code", "message", "fields"}}`, for every layer that answers an
API request with an error: DRF's exception handler, and the middlewares and views that answer before DRF runs
(a bad parameter, a body too large, a CSRF refusal, a database timeout)."""

from __future__ import annotations

from django.http import JsonResponse


def error_body(*, status: int, code: str, message: str, fields: dict | None = None) -> dict:
    return {"error": {"status": status, "code": code, "message": message, "fields": fields or {}}}


def api_error(status: int, code: str, message: str, fields: dict | None = None) -> JsonResponse:
    return JsonResponse(error_body(status=status, code=code, message=message, fields=fields), status=status)
