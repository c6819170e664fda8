"""Top-level URLs: the admin, the REST API with its schema and docs, and the monitor at the root."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

admin.site.site_header = "Brokerage monitor administration"
admin.site.site_title = "Brokerage monitor admin"
admin.site.index_title = "Domain data and gdpconfig"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include(("monitor.api.urls", "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("monitor.urls")),
]
