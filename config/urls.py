"""Top-level URLs: the admin, the REST API with its schema and docs, and the monitor at the root."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from monitor import dispatcher, health, metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # PanDA's own paths for panda-client and pbook (task/…, job/…) first: our API's catch-all would answer them
    path("api/v1/", include("monitor.panda_api.urls", namespace="panda")),
    path("api/v1/", include(("monitor.api.urls", "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    # the PanDA pilot's dispatcher protocol and the caches it reads its queue and storages from (monitor.dispatcher)
    path("server/panda/getJob", dispatcher.GetJob.as_view(), name="pilot-get-job"),
    path("server/panda/updateJob", dispatcher.UpdateJob.as_view(), name="pilot-update-job"),
    path("server/panda/getEventRanges", dispatcher.GetEventRanges.as_view(), name="pilot-get-event-ranges"),
    path("server/panda/updateEventRanges", dispatcher.UpdateEventRanges.as_view(), name="pilot-update-event-ranges"),
    path("server/panda/getStatus", dispatcher.GetStatus.as_view(), name="pilot-get-status"),
    re_path(r"^cache/schedconfig/(?P<queue>[^/]+?)(?P<whole>\.all)?\.json$", dispatcher.QueueData.as_view()),
    path("cache/ddmendpoints.json", dispatcher.Storages.as_view(), name="pilot-storages"),
    # probes for an orchestrator (monitor.health): no login, no throttle
    path("health/live", health.health_live, name="health-live"),
    path("health/ready", health.health_ready, name="health-ready"),
    path("health/startup", health.health_startup, name="health-startup"),
    # Prometheus's scrape (monitor.metrics): a bearer token or the read rule, no throttle (its state is cached)
    path("metrics", metrics.metrics_view, name="metrics"),
    path("", include("monitor.urls")),
]

# pages in the site's layout (the API answers its own errors in JSON)
handler404 = "monitor.views.page_not_found"
handler500 = "monitor.views.server_error"
