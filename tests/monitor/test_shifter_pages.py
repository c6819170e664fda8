"""The shifter's pages of issue 18: errors by code, the job page, search, filters that say what is wrong, task
actions through the services, 404s in the layout, overrides in force on the gdpconfig page, the admin's what-if
and its sections. Worked numbers; the Django test client."""

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from brokerage.job_errors import TASK_BUFFER_EXPIRED
from brokerage.models import GdpConfig, Job, Task
from brokerage.selectors.jobs import job_error_summary
from brokerage.services.gdpconfig import gdpconfig_save
from tests import factories
from tests.engine.builders import nucleus, task_scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def failing_task():
    """A task with 12 of 48 jobs ended badly: 7 stage-in failures at Q_A (5 first attempts, 2 second), 3 out of
    memory at Q_B, 2 closed by the watchdog at Q_A."""
    factories.PandaQueueFactory(name="Q_A")
    factories.PandaQueueFactory(name="Q_B")
    task = factories.TaskFactory(status="running")
    jobs = []
    for attempt, count in ((1, 5), (2, 2)):
        jobs += factories.JobFactory.create_batch(
            count,
            task=task,
            jobStatus="failed",
            computingSite="Q_A",
            attemptNr=attempt,
            pilotErrorCode=1099,
            pilotErrorDiag="Failed to stage-in file: copy command failed",
        )
    jobs += factories.JobFactory.create_batch(
        3,
        task=task,
        jobStatus="failed",
        computingSite="Q_B",
        pilotErrorCode=1212,
        pilotErrorDiag="Payload ran out of memory",
    )
    jobs += factories.JobFactory.create_batch(
        2,
        task=task,
        jobStatus="closed",
        computingSite="Q_A",
        taskBufferErrorCode=TASK_BUFFER_EXPIRED,
        taskBufferErrorDiag="timeout: activated for 7 days",
    )
    factories.JobFactory.create_batch(36, task=task, jobStatus="finished", computingSite="Q_A")
    return task, jobs


def test_the_error_summary_groups_by_main_error_with_queues_and_attempts(failing_task, django_assert_num_queries):
    task, _ = failing_task
    with django_assert_num_queries(1):
        summary = job_error_summary(task_id=task.pk)
    assert summary["total"] == 12
    by_label = {e["label"]: e for e in summary["errors"]}
    stage_in = by_label["pilot:1099 Failed to stage-in file"]
    assert stage_in["count"] == 7
    assert stage_in["queues"] == [("Q_A", 7)]
    assert stage_in["attempts"] == [(1, 5), (2, 2)]
    assert by_label["pilot:1212 Payload ran out of memory"]["queues"] == [("Q_B", 3)]
    expired = by_label["taskbuffer:102 expired"]
    assert expired["statuses"] == [("closed", 2)]
    assert [e["count"] for e in summary["errors"]] == [7, 3, 2]  # commonest first


def test_the_task_page_shows_the_errors_and_links_its_jobs(client, failing_task):
    task, jobs = failing_task
    html = client.get(reverse("monitor:task", args=[task.pk])).content.decode()
    assert "12 jobs failed, closed or cancelled" in html
    assert "pilot:1099" in html
    assert reverse("monitor:task-errors", args=[task.pk]) in html
    assert (
        reverse("monitor:job", args=[jobs[0].pk]) in html
        or reverse("monitor:job", args=[min(j.pk for j in jobs)]) in html
    )
    errors = client.get(reverse("monitor:task-errors", args=[task.pk]))
    assert errors.status_code == 200
    assert "#1: 5, #2: 2" in errors.content.decode()


def test_the_job_page_shows_its_error_history_and_retries(client, failing_task):
    task, jobs = failing_task
    first, second = jobs[0], jobs[5]
    factories_retry = __import__("brokerage.models", fromlist=["JobRetryHistory"]).JobRetryHistory
    factories_retry.objects.create(task=task, oldPandaID=first.pk, newPandaID=second.pk, originPandaID=first.pk)
    response = client.get(reverse("monitor:job", args=[second.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "pilot:1099 Failed to stage-in file" in html
    assert "copy command failed" in html
    assert reverse("monitor:job", args=[first.pk]) in html  # the retry it replaced
    assert client.get(reverse("monitor:job", args=[999999999])).status_code == 404


def test_search_jumps_to_one_thing_or_lists_matches(client, failing_task):
    task, jobs = failing_task
    found = client.get(reverse("monitor:search"), {"q": str(task.pk)})
    if Job.objects.filter(pk=task.pk).exists():  # also a job's ID: the page asks which (tests/monitor/test_search.py)
        assert reverse("monitor:task", args=[task.pk]) in [c["url"] for c in found.context["choices"]]
    else:
        assert found["Location"] == reverse("monitor:task", args=[task.pk])
    job_only = max(j.pk for j in jobs)
    if not Task.objects.filter(pk=job_only).exists():
        assert client.get(reverse("monitor:search"), {"q": str(job_only)})["Location"] == reverse(
            "monitor:job", args=[job_only]
        )
    assert client.get(reverse("monitor:search"), {"q": "Q_A"})["Location"] == reverse("monitor:queue", args=["Q_A"])
    listing = client.get(reverse("monitor:search"), {"q": "Q_"})
    assert listing.status_code == 200
    assert [q["name"] for q in listing.context["queues"]] == ["Q_A", "Q_B"]
    nothing = client.get(reverse("monitor:search"), {"q": "no-such-thing"}).content.decode()
    assert "Nothing is called or contains" in nothing


def test_a_missing_page_is_a_404_in_the_layout(client, settings):
    settings.DEBUG = False
    response = client.get("/tasks/987654321/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'class="topbar"' in html
    assert "No task 987654321." in html


def test_invalid_job_filters_are_named(client, failing_task):
    response = client.get(reverse("monitor:jobs"), {"status": "bogus", "task": "x"})
    assert response.status_code == 400
    assert set(response.context["problems"]) == {"status", "task"}
    assert client.get(reverse("monitor:jobs"), {"status": "failed"}).context["page"].paginator.count == 10


@pytest.fixture
def shifter(client):
    user = User.objects.create_user("shifter", password="x")
    user.user_permissions.add(Permission.objects.get(codename="change_task"))
    client.force_login(user)
    return user


def test_task_actions_need_permission_and_are_logged(client, failing_task):
    task, _ = failing_task
    url = reverse("monitor:task-action", args=[task.pk])
    anonymous = client.post(url, {"action": "priority", "priority": "900"})
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/login/?next=")  # the dashboard's own sign-in page
    client.force_login(User.objects.create_user("reader", password="x"))
    assert client.post(url, {"action": "priority", "priority": "900"}).status_code == 403
    task.refresh_from_db()
    assert task.currentPriority != 900


def test_a_shifter_changes_the_priority_and_it_is_in_the_tasks_history(client, shifter, failing_task):
    task, _ = failing_task
    queued = factories.JobFactory.create_batch(2, task=task, jobStatus="activated", currentPriority=100)
    response = client.post(reverse("monitor:task-action", args=[task.pk]), {"action": "priority", "priority": "900"})
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.currentPriority == 900
    assert {j.currentPriority for j in type(queued[0]).objects.filter(pk__in=[j.pk for j in queued])} == {900}
    entry = LogEntry.objects.get(object_id=str(task.pk))
    assert entry.user == shifter
    assert entry.change_message == f"Task {task.pk} priority set to 900 (2 queued jobs too)."
    page = client.get(response["Location"]).content.decode()
    assert "priority set to 900" in page
    refused = client.post(reverse("monitor:task-action", args=[task.pk]), {"action": "retry"})
    assert "does not apply" in client.get(refused["Location"]).content.decode()


def test_the_gdpconfig_page_shows_the_value_in_force_per_share(client):
    admin = User.objects.create_superuser("admin", password="x")
    gdpconfig_save(key="DISK_THRESHOLD_Express", value="50", user=admin)
    html = client.get(reverse("monitor:gdpconfig")).content.decode()
    assert "DISK_THRESHOLD_Express" in html
    assert "<strong>50</strong> <small>for gshare Express</small>" in html
    assert "(any other gshare)" in html


def test_the_admin_groups_its_index_and_escapes_help_and_previews_before_saving(client):
    admin = User.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    index = client.get(reverse("admin:index")).content.decode()
    for section in ("Grid", "Tasks and jobs", "Brokerage", "DIRAC", "WMCore"):
        assert f">{section}<" in index or f"{section}</a>" in index, section
    assert "JobSubmitter cache entries" in index
    assert "entrys" not in index
    # The list pages and breadcrumbs use the same names (the models' verbose names), not "wm core requests".
    listing = client.get(reverse("admin:brokerage_wmcorerequest_changelist")).content.decode()
    assert "Select WMCore request to change" in listing
    assert "wm core" not in listing.lower()
    form = client.get(reverse("admin:brokerage_gdpconfig_add") + "?key=DISK_THRESHOLD").content.decode()
    assert "DISK_THRESHOLD_&lt;gshare&gt;" in form  # the description's placeholder, escaped, not eaten as a tag
    assert reverse("admin:brokerage_gdpconfig_what_if") in form
    what_if = client.post(reverse("admin:brokerage_gdpconfig_what_if"), {"key": "NQUEUED_SAT_CAP", "value": "300"})
    assert what_if.status_code == 200
    assert what_if.context["effect"]["n_cycles"] == 0  # no cycle ran in the last hour here
    bad = client.post(reverse("admin:brokerage_gdpconfig_what_if"), {"key": "NQUEUED_SAT_CAP", "value": "lots"})
    assert "NQUEUED_SAT_CAP" in bad.context["error"]
    assert not GdpConfig.objects.filter(key="NQUEUED_SAT_CAP").exists()  # nothing saved


def test_charts_carry_axis_titles_and_whole_number_ticks():
    from monitor import charts

    figure = charts.figure_json(charts.status_bar_chart([{"status": "failed", "count": 3}], title="t", unit="jobs"))
    assert figure["layout"]["yaxis"]["title"]["text"] == "jobs"
    assert figure["layout"]["yaxis"]["dtick"] == 1  # no 0.5 job
    assert figure["layout"]["xaxis"]["title"]["text"] == "status"
    stages = [{"filter": "status", "before": 5, "after": 5}, {"filter": "io", "before": 5, "after": 2}]
    funnel = charts.figure_json(charts.funnel_chart(stages, initial=5))
    assert list(funnel["data"][0]["y"]) == ["considered", "io"]  # the filter that removed nobody is left out
    weights = charts.figure_json(
        charts.weights_chart([{"name": "A", "weight": 2.0, "factors": {"spaceFreeGB": 4795286.5938}}], chosen="A")
    )
    assert weights["layout"]["xaxis"]["type"] == "linear"  # one weight: no decade to span
    assert "spaceFreeGB = 4,795,286.6 GB" in weights["data"][0]["customdata"][0]


def test_a_decision_that_left_the_task_pending_explains_it_only_while_it_is_pending(client):
    # task brokerage found no nucleus (the only one disabled): pending, retried 30 minutes after the decision
    task = factories.TaskFactory(status="pending", oldStatus="assigning")
    decision = factories.stored_decision(task=task, scenario=task_scenario(nucleus("A", state="DISABLED")))
    html = client.get(reverse("monitor:task", args=[task.pk])).content.decode()
    assert "Why is this task pending?" in html
    assert "Task brokerage (choice of a nucleus) was pending: of 1 candidates" in html
    assert "Brokerage tries again" in html
    assert client.get(reverse("monitor:task", args=[task.pk])).context["advice"]  # from the decision
    # the task came back for its retry: the old decision no longer says why it is where it is
    Task.objects.filter(pk=task.pk).update(status="assigning")
    response = client.get(reverse("monitor:task", args=[task.pk]))
    html = response.content.decode()
    assert "Why is this task" not in html
    assert "Brokerage tries again" not in html
    assert response.context["advice"] == []  # nothing failed, and the decision no longer holds
    assert decision.pk in [panel["decision"].pk for panel in response.context["decision_panels"]]  # still shown


def test_a_throttled_task_says_when_it_is_released_and_why(client):
    from datetime import timedelta

    from django.utils import timezone

    task = factories.TaskFactory(
        status="throttled", oldStatus="running", throttledTime=timezone.now() - timedelta(minutes=20), numThrottled=1
    )
    response = client.get(reverse("monitor:task", args=[task.pk]))
    html = response.content.decode()
    assert "The watchdog releases it to running at" in html  # 120 minutes after it was throttled
    assert "(in 1 h 40 min)" in html or "(in 1 h 39 min)" in html
    advice = [a for a in response.context["advice"] if a.kind == "wait"]
    assert advice
    assert "When the task's inputs reached 5 attempts, a multiple of 5" in advice[0].evidence


def test_a_time_chart_with_one_point_spans_two_hours_and_never_repeats_a_label():
    from datetime import UTC, datetime, timedelta

    from monitor import charts

    at = datetime(2026, 11, 23, 18, tzinfo=UTC)
    figure = charts.figure_json(charts.timeline_chart([{"time": at, "status": "matched", "count": 575}], title="t"))
    axis = figure["layout"]["xaxis"]
    assert axis["range"] == [(at - timedelta(hours=1)).isoformat(), (at + timedelta(hours=1)).isoformat()]
    assert axis["tickformatstops"][0] == {"dtickrange": [None, 60_000], "value": "%H:%M:%S"}
    assert axis["title"]["text"] == "time (UTC)"


def test_a_failed_task_says_why_and_that_the_fault_is_its_own(client):
    # issue 35, finding 1: a failed task had no Why box and only generic advice tagged SITE
    task = factories.TaskFactory(status="failed")
    factories.TaskStatusLogFactory(task=task, old_status="running", new_status="failed", reason="3 inputs failed")
    factories.JobFactory.create_batch(
        3,
        task=task,
        jobStatus="failed",
        computingSite="CERN-PROD_UCORE",
        pilotErrorCode=1305,
        pilotErrorDiag="Failed to execute payload",
        exeErrorCode=65,
    )
    response = client.get(reverse("monitor:task", args=[task.pk]))
    html = response.content.decode()
    assert "Why did this task fail?" in html
    assert response.context["why"] == [
        "Its jobs kept failing until the inputs had no attempt left (3 inputs failed).",
        "The main error, pilot:1305 Failed to execute payload, is the task's own (its release, configuration or "
        "resource requests): 3 of 3 jobs, at CERN-PROD_UCORE (3).",
    ]
    assert [a.kind for a in response.context["advice"]] == ["task", "task"]
