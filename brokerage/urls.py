"""Top-level URLs: the admin, the REST API with its schema and docs, and the monitor at the root."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include(("monitor.api.urls", "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("monitor.urls")),
]

# pages in the site's layout (the API answers its own errors in JSON)
handler404 = "monitor.views.page_not_found"
handler500 = "monitor.views.server_error"
