from django.urls import path

from . import replay_views, views

app_name = "monitor"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("search/", views.search, name="search"),
    path("tasks/", views.tasks, name="tasks"),
    path("tasks/<int:task_id>/", views.task, name="task"),
    path("tasks/<int:task_id>/errors/", views.task_errors, name="task-errors"),
    path("tasks/<int:task_id>/action/", views.task_action, name="task-action"),
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/<int:job_id>/", views.job, name="job"),
    path("errors/", views.errors, name="errors"),
    path("users/<path:name>/", views.user, name="user"),
    path("queues/", views.queues, name="queues"),
    # queue, site and request names may hold "/" (pseudo-queues such as CERN/MCORE), spaces or any letters
    path("queues/<path:name>/", views.queue, name="queue"),
    path("sites/", views.sites, name="sites"),
    path("sites/<path:name>/", views.site, name="site"),
    path("shares/", views.shares, name="shares"),
    path("timeouts/", views.timeouts, name="timeouts"),
    path("decisions/", views.decisions, name="decisions"),
    path("decisions/<int:decision_id>/", views.decision, name="decision"),
    path("decisions/<int:decision_id>/replay/", replay_views.decision_replay_page, name="decision-replay"),
    path("cycles/<int:cycle_id>/what-if/", replay_views.cycle_what_if, name="cycle-what-if"),
    path("what-if/", replay_views.window_what_if, name="what-if"),
    path("gdpconfig/", views.gdpconfig, name="gdpconfig"),
    path("gdpconfig/revisions/", replay_views.gdpconfig_revisions, name="gdpconfig-revisions"),
    path("gdpconfig/revisions/<int:revision_id>/", replay_views.gdpconfig_revision, name="gdpconfig-revision"),
    path(
        "gdpconfig/revisions/<int:revision_id>/restore/",
        replay_views.gdpconfig_revision_restore_page,
        name="gdpconfig-revision-restore",
    ),
    path("dirac/", views.dirac, name="dirac"),
    path("dirac/matches/<int:record_id>/", views.dirac_match, name="dirac-match"),
    path("dirac/matches/<int:record_id>/replay/", replay_views.dirac_match_replay_page, name="dirac-match-replay"),
    path("dirac/jobs/<int:job_id>/", views.dirac_job, name="dirac-job"),
    path("dirac/task-queues/<int:task_queue_id>/", views.dirac_task_queue, name="dirac-task-queue"),
    path("wmcore/", views.wmcore, name="wmcore"),
    path("wmcore/requests/<path:name>/", views.wmcore_request, name="wmcore-request"),
]
