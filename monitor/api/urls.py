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
    *router.urls,
    # the rest: the same path with or without its final slash (one rule for every path: both answer), else a 404
    re_path(r"^(?P<unmatched>[\s\S]*)$", views.not_found, name="not-found"),
]
