"""Who may read the dashboard: anyone when DASHBOARD_ANONYMOUS_READ is on (the same policy as the API's
API_ANONYMOUS_READ unless set apart), otherwise signed-in users; an anonymous visitor is sent to the sign-in page
and comes back to the page asked for. The admin, the API (its own rule, monitor.api.permissions), the sign-in pages,
static files and the pilot's paths are not the dashboard's to guard: the pilot's dispatcher (`/server/panda/…`)
authenticates its token itself and its caches (`/cache/…`) have their own rule (monitor.dispatcher). Issue 47:
guarded here, a pilot with a valid token was sent to the sign-in page."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from monitor.middleware import busy_page

NOT_DASHBOARD = (
    "/admin/",
    "/api/",
    "/login/",
    "/logout/",
    "/static/",
    "/server/panda/",
    "/cache/",
    "/health/",
    "/metrics",
)
# the health probes are cheap (monitor.health keeps an answer a moment) and must answer with the cache down
NOT_THROTTLED = ("/api/", "/static/", "/server/panda/", "/cache/", "/health/", "/metrics")


class DashboardAccessMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            not settings.DASHBOARD_ANONYMOUS_READ
            and not request.path.startswith(NOT_DASHBOARD)  # first: a probe never reads a session
            and not request.user.is_authenticated
        ):
            return redirect_to_login(request.get_full_path())
        return self.get_response(request)


class DashboardAnonThrottle(AnonRateThrottle):
    scope = "dashboard_anon"


class DashboardUserThrottle(UserRateThrottle):
    """Signed-in users only: DRF's user throttle counts an anonymous client by its address too, which would hold
    anonymous visitors to the lower of the two rates (a raised DASHBOARD_ANON_RATE still answered 429)."""

    scope = "dashboard_user"

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None
        return super().get_cache_key(request, view)


class DashboardThrottleMiddleware:
    """Every client of the dashboard and the admin is throttled as the API's are (issue 47: pages had no throttle):
    DASHBOARD_ANON_RATE per address for anonymous visitors, DASHBOARD_USER_RATE per signed-in user; past it a 429
    page says when to come back. The API, the pilot's paths and static files have their own rules."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(NOT_THROTTLED):
            for throttle in (DashboardAnonThrottle(), DashboardUserThrottle()):
                if not throttle.allow_request(request, None):
                    wait = max(1, int(throttle.wait() or 1))
                    return busy_page(
                        status=429,
                        title="Too many requests",
                        message=f"This client asked for more pages than allowed lately. Try again in {wait} s.",
                        back=request.get_full_path(),
                        retry_after=wait,
                    )
        return self.get_response(request)
