"""A Content-Security-Policy on every response (issue 31: no page sent one). Everything the pages run comes from
our own static files: scripts only from 'self' and never inline (the charts' figures travel as JSON data blocks,
which are not run; the API docs load their start-up script from its own address), no plugin, no frame around our
pages, forms only to us. Styles allow 'unsafe-inline' because Plotly writes its styles into the page at run time
and the chart boxes carry their height; no script can be injected through a style."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse

DEFAULT_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data: blob:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "worker-src": "'self' blob:",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def content_security_policy() -> str:
    policy = {**DEFAULT_POLICY, **getattr(settings, "CONTENT_SECURITY_POLICY", {})}
    return "; ".join(f"{directive} {sources}" for directive, sources in policy.items())


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.header = content_security_policy()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.header)
        return response
