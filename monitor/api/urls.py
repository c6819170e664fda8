from django.urls import path, re_path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("tasks", views.TaskViewSet)
router.register("jobs", views.JobViewSet)
router.register("datasets", views.DatasetViewSet)
router.register("sites", views.SiteViewSet)
router.register("queues", views.QueueViewSet)
router.register("work-queues", views.WorkQueueViewSet)
router.register("global-shares", views.GlobalShareViewSet)
router.register("cycles", views.CycleViewSet)
router.register("decisions", views.DecisionViewSet)
router.register("gdpconfig", views.GdpConfigViewSet)
router.register("gdpconfig-revisions", views.GdpConfigRevisionViewSet)
router.register("wmcore/requests", views.WMCoreRequestViewSet)
router.register("wmcore/elements", views.WMCoreElementViewSet)

urlpatterns = [
    path("broker/preview", views.PreviewView.as_view(), name="broker-preview"),
    path("dirac/match", views.DiracMatchView.as_view(), name="dirac-match"),
    path("dirac/matches/<int:record_id>/replay", views.DiracMatchReplayView.as_view(), name="dirac-match-replay"),
    path("dirac/matches/<int:record_id>/scenario", views.DiracMatchScenarioView.as_view(), name="dirac-match-scenario"),
    path("dirac/task-queues", views.DiracTaskQueueView.as_view(), name="dirac-task-queues"),
    path("dirac/jobs/<int:job_id>", views.DiracJobExplainedView.as_view(), name="dirac-job"),
    # issue 34's paths as written, without the router's trailing slash (a POST is not redirected)
    path("decisions/<int:pk>/replay", views.DecisionViewSet.as_view({"post": "replay"}), name="decision-replay-bare"),
    path(
        "decisions/<int:pk>/scenario", views.DecisionViewSet.as_view({"get": "scenario"}), name="decision-scenario-bare"
    ),
    path("cycles/<int:pk>/what-if", views.CycleViewSet.as_view({"post": "what_if"}), name="cycle-what-if-bare"),
    path("cycles/what-if", views.CycleViewSet.as_view({"post": "window_what_if"}), name="cycles-what-if-bare"),
    *router.urls,
    re_path(r"^(?P<unmatched>[\s\S]*)$", views.not_found, name="not-found"),
]
