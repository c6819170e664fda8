"""Top-level URLs: the admin, and the monitor at the root."""

from django.contrib import admin
from django.urls import include, path

admin.site.site_header = "Brokerage monitor administration"
admin.site.site_title = "Brokerage monitor admin"
admin.site.index_title = "Domain data and gdpconfig"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("monitor.urls")),
]
