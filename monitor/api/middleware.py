"""The API's body limit, met before any view reads the body: a JSON 413 naming the sizes (Django's own limit
would raise while the body is read, ending in an HTML 400 page)."""

from __future__ import annotations

from monitor.api.bodies import api_error

from .parsers import max_body_bytes


class ApiBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = max_body_bytes()
            if length > limit:
                message = f"The request body has {length} bytes; at most {limit} are accepted."
                return api_error(413, "too_large", message)
        return self.get_response(request)
