from django.urls import path

from . import views

app_name = "monitor"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("tasks/", views.tasks, name="tasks"),
    path("tasks/<int:task_id>/", views.task, name="task"),
    # queue names may hold "/" (pseudo-queues such as CERN/MCORE), spaces or any letters
    path("queues/<path:name>/", views.queue, name="queue"),
    path("shares/", views.shares, name="shares"),
    path("timeouts/", views.timeouts, name="timeouts"),
    path("decisions/", views.decisions, name="decisions"),
    path("gdpconfig/", views.gdpconfig, name="gdpconfig"),
    path("dirac/", views.dirac, name="dirac"),
    path("wmcore/", views.wmcore, name="wmcore"),
]
