"""Addresses that no page or API view can answer are refused before any of them runs: a NUL or a lone surrogate in
the path or in a query parameter (PostgreSQL refuses them in any text: issue 31 found 500s on `/queues/a%00b/` and
on 30 filter parameters) is a 400 naming the parameter, in the API's JSON shape under /api/."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from brokerage.params import refused_character
from monitor.api.bodies import api_error


def _problem(request: HttpRequest) -> tuple[str, str] | None:
    found = refused_character(request.path)
    if found:
        return "path", f"The address contains {found}."
    for key, values in request.GET.lists():
        for text in (key, *values):
            found = refused_character(text)
            if found:
                return key, f"{found} is not allowed in a query parameter."
    return None


class RequestGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = _problem(request)
        if problem is None:
            return self.get_response(request)
        field, message = problem
        if request.path.startswith("/api/"):
            return api_error(400, "invalid", message, {field: [message]})
        return HttpResponseBadRequest(f"{field}: {message}", content_type="text/plain; charset=utf-8")
