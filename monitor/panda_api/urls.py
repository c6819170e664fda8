"""`/api/v1/task/<method>` and `/api/v1/job/<method>`, with or without a final slash, as panda-client calls them, and
`/api/v1/pilot/<method>` as panda-server 1.0's pilots and Harvester do; another method of these modules is answered
in PanDA's envelope (404), not by our API's catch-all."""

from django.urls import path, re_path

from . import pilot, views

app_name = "panda"

METHOD_VIEWS = {**views.method_views(views.METHODS), **views.method_views(pilot.METHODS)}

urlpatterns = [
    *(path(route, view, name=route.replace("/", "-")) for route, view in METHOD_VIEWS.items()),
    *(path(f"{route}/", view) for route, view in METHOD_VIEWS.items()),
    re_path(r"^(?P<module>task|job|pilot)/(?P<method>[^/]*)/?$", views.unknown_method, name="unknown-method"),
]
