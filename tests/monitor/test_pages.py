"""Every dashboard page and filter through the Django test client, over a living demo grid."""

import re

import pytest
from django.contrib.staticfiles import finders
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from brokerage.models import Decision, Job, PandaQueue, Task
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from tests import factories
from tests.monitor.assets import foreign_assets

pytestmark = pytest.mark.django_db

# a chart is an empty box naming the JSON of its figure; static/js/monitor.js draws it once laid out
PLOTS = re.compile(r'<div class="chart" id="([\w-]+)" data-figure="([\w-]+)-figure"')


def page(client, url, **params):
    response = client.get(url, params)
    assert response.status_code == 200, url
    return response, response.content.decode()


def test_plotly_is_served_from_our_static_files():
    path = finders.find("plotly/plotly.min.js")
    assert path is not None
    with open(path, encoding="utf-8") as script:
        assert "plotly.js" in script.read(400)


def test_every_page_loads_the_library_from_static_and_draws(client, living_grid):
    task = Decision.objects.filter(plugin="atlas_prod_job").values_list("task_id", flat=True).first()
    queue = Job.objects.exclude(computingSite="").values_list("computingSite", flat=True).first()
    urls = {
        reverse("monitor:overview"): 0,
        reverse("monitor:tasks"): 1,
        reverse("monitor:task", args=[task]): 2,
        reverse("monitor:queue", args=[queue]): 1,
        reverse("monitor:shares"): 2,
        reverse("monitor:timeouts"): 1,
        reverse("monitor:decisions"): 1,
        reverse("monitor:gdpconfig"): 0,
    }
    for url, at_least in urls.items():
        _, html = page(client, url)
        # monitor.js fetches plotly.js from our static files when the page has a chart (tests/monitor/test_browser.py)
        assert 'data-plotly="/static/plotly/plotly.min.js"' in html
        assert '<script src="/static/plotly/' not in html
        assert foreign_assets(html) == []
        assert len(PLOTS.findall(html)) >= at_least, url


def test_task_list_filters_sorts_and_counts(client, living_grid):
    response, _ = page(client, reverse("monitor:tasks"), status="running", sort="-priority")
    listing = response.context["listing"]
    running = Task.objects.filter(status="running")
    assert listing.total == running.count() > 0
    assert dict(listing.counts_by_status) == {"running": running.count()}
    priorities = [task.currentPriority for task in listing.page.object_list]
    assert priorities == sorted(priorities, reverse=True)
    # the filters stay in the sort and page links
    assert "status=running" in response.context["keep_filters"]


def test_task_list_free_text_window_and_columns(client, living_grid):
    task = Task.objects.filter(userName="prodsys").first()
    response, _ = page(client, reverse("monitor:tasks"), q=str(task.pk))
    assert task.pk in [t.pk for t in response.context["listing"].page.object_list]
    response, _ = page(client, reverse("monitor:tasks"), q=task.taskName[-12:], window="7d")
    assert task.pk in [t.pk for t in response.context["listing"].page.object_list]
    for key, value in (
        ("userName", "prodsys"),
        ("gshare", task.gshare),
        ("processingType", task.processingType),
        ("workQueue", task.workQueue.queue_name),
        ("nucleus", task.nucleus or "nowhere"),
        ("workingGroup", "GP_Higgs"),
        ("taskType", "prod"),
    ):
        response, _ = page(client, reverse("monitor:tasks"), **{key: value})
        expected = Task.objects.filter(**({"workQueue__queue_name": value} if key == "workQueue" else {key: value}))
        assert response.context["listing"].total == expected.count(), key
    response, _ = page(client, reverse("monitor:tasks"), window="1h")
    assert response.context["listing"].filters == {"window": "1h"}


def test_task_list_pages_with_the_total(client, living_grid):
    response, _ = page(client, reverse("monitor:tasks"), page="1")
    listing = response.context["listing"]
    assert listing.total == Task.objects.count()
    assert len(listing.page.object_list) == min(50, listing.total)
    # a page number that is not one is page 1; filters that are not valid are named, and left out
    response = client.get(
        reverse("monitor:tasks"), {"page": "x", "sort": "'; drop", "window": "forever", "status": "bogus"}
    )
    assert response.status_code == 400
    assert response.context["listing"].sort == "-modified"
    assert set(response.context["problems"]) == {"sort", "window", "status"}
    html = response.content.decode()
    assert "&#x27;bogus&#x27; is not a task status" in html
    assert "&#x27;forever&#x27; is not a time window; one of 1h, 6h, 1d, 7d" in html
    assert response.context["listing"].total == Task.objects.count()  # the bad filters were left out


def test_a_pending_task_page_says_why_with_the_numbers(client, living_grid):
    pending = Decision.objects.filter(outcome="pending", task__status="pending").select_related("task").first()
    assert pending is not None, "the living grid has a pending decision"
    response, html = page(client, reverse("monitor:task", args=[pending.task_id]))
    panel = next(p for p in response.context["decision_panels"] if p["decision"].plugin == pending.plugin)
    # the funnel, the reasons chart, the skipped candidates grouped by reason with sentences and numbers
    assert f"funnel-{pending.plugin}-" in html
    assert panel["trace"]["by_reason"]
    group = panel["trace"]["by_reason"][0]
    assert group["title"] in html
    first = group["skipped"][0]
    assert first["name"] in html
    assert first["sentence"].split(" (")[0][:30] in html.replace("&#x27;", "'")
    assert response.context["why"]
    assert "Why is this task" in html


def test_task_page_shows_jobs_datasets_history_and_timeouts(client, living_grid):
    task = Task.objects.filter(jobs__isnull=False).distinct().first()
    response, html = page(client, reverse("monitor:task", args=[task.pk]))
    context = response.context
    assert context["jobs_total"] == Job.objects.filter(task=task).count()
    assert sum(row["count"] for row in context["jobs_by_status"]) == context["jobs_total"]
    assert context["datasets"]
    assert context["timeline"]
    assert context["history"]
    assert 'id="decision-history"' in html
    # an older decision can be opened
    older = context["history"][-1]["pk"]
    response, html = page(client, reverse("monitor:task", args=[task.pk]), decision=str(older))
    assert response.context["selected"]["decision"].pk == older


def test_task_page_shows_the_goal_termination_condition_and_failed_attempts(client, living_grid):
    task = factories.TaskFactory(status="running", progress=70, goal=955, termCondition="90%", failureRate=12)
    _, html = page(client, reverse("monitor:task", args=[task.pk]))
    assert "70 % · goal 95.5 % · ends at 90%" in html
    assert "<dt>Failed attempts</dt><dd>12 %</dd>" in html
    row = client.get(f"/api/v1/tasks/{task.pk}/").json()
    assert (row["goal"], row["termCondition"], row["failureRate"]) == (955, "90%", 12)


def test_task_page_query_count_does_not_grow_with_jobs(client, living_grid):
    small = factories.TaskFactory(status="running")
    big = factories.TaskFactory(status="running")
    factories.JobFactory.create_batch(2, task=small, jobStatus="running")
    factories.JobFactory.create_batch(40, task=big, jobStatus="running")
    counts = []
    for task in (small, big):
        gdpconfig_cache_clear()  # both pages read the timeout durations from the table
        with CaptureQueriesContext(connection) as captured:
            page(client, reverse("monitor:task", args=[task.pk]))
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_unknown_task_and_queue_are_404(client, living_grid):
    assert client.get(reverse("monitor:task", args=[999999999])).status_code == 404
    assert client.get(reverse("monitor:queue", args=["NO_SUCH_QUEUE"])).status_code == 404


def test_queue_page(client, living_grid):
    queue = PandaQueue.objects.get(
        name=Job.objects.exclude(computingSite="").values_list("computingSite", flat=True).first()
    )
    response, html = page(client, reverse("monitor:queue", args=[queue.name]))
    context = response.context
    assert sum(row["count"] for row in context["jobs_now"]) == Job.objects.filter(computingSite=queue.name).count()
    assert context["over_time"]
    assert context["decisions_read"] > 0
    assert "CRIC record" in html
    assert "queue-over-time" in html


def test_the_queue_page_reads_its_decisions_in_a_fixed_number_of_queries(client, living_grid):
    # issue 50: 94 queries and 390 ms in bench history, one trace read (and its cycle's frame) per decision
    from brokerage.selectors.queues import queue_detail

    queue = Job.objects.exclude(computingSite="").values_list("computingSite", flat=True).first()
    counts = {}
    for decisions in (2, 40):
        with CaptureQueriesContext(connection) as queries:
            detail = queue_detail(name=queue, now=living_grid, decisions=decisions)
        counts[decisions] = (len(queries), detail["decisions_read"])
    assert counts[40][1] > counts[2][1]  # more decisions were read …
    assert counts[40][0] == counts[2][0]  # … in the same number of queries


def test_shares_page(client, living_grid):
    response, html = page(client, reverse("monitor:shares"))
    names = {row["name"] for row in response.context["tree"]}
    assert {"WLCG Production", "MC 16", "Analysis"} <= names
    assert {row["name"] for row in response.context["work_queues"]} >= {"evgensimul", "others"}
    assert "share-tree" in html
    assert "work-queues" in html
    # the order getJob serves the leaves in now: every leaf once, as the adapter computes it
    leaves = {row["name"] for row in response.context["tree"] if row["leaf"]}
    order = response.context["served_order"]
    assert sorted(order) == sorted(leaves)
    assert "Pilots take activated jobs of the share furthest below its target first" in html
    assert f"now <b>{order[0]}</b>" in html


def test_timeouts_page(client, living_grid):
    response, _ = page(client, reverse("monitor:timeouts"))
    context = response.context
    assert context["latest"] is not None
    assert context["by_rule"]
    assert sum(row["watched"] for row in context["by_rule"]) == sum(row["watched"] for row in context["by_queue"])
    assert context["closest"]
    assert all(
        a["state"].left <= b["state"].left for a, b in zip(context["closest"], context["closest"][1:], strict=False)
    )


def test_decision_explorer_filters(client, living_grid):
    for params, check in (
        ({"plugin": "atlas_prod_task"}, lambda d: d.plugin == "atlas_prod_task"),
        ({"outcome": "pending"}, lambda d: d.outcome == "pending"),
        ({"window": "7d"}, lambda d: True),
    ):
        response, _ = page(client, reverse("monitor:decisions"), **params)
        rows = list(response.context["page"].object_list)
        assert rows
        assert all(check(d) for d in rows), params
    reason = Decision.objects.exclude(primary_reason="").values_list("primary_reason", flat=True).first()
    response, _ = page(client, reverse("monitor:decisions"), reason=reason)
    assert {d.primary_reason for d in response.context["page"].object_list} == {reason}
    # A task's decision: WMCore pulls and DIRAC matches choose too, but have no task to filter by.
    chosen = Decision.objects.exclude(chosen="").filter(task__isnull=False).first()
    response, _ = page(client, reverse("monitor:decisions"), chosen=chosen.chosen, task=str(chosen.task_id))
    assert chosen.pk in [d.pk for d in response.context["page"].object_list]
    assert response.context["cycles"]
    # issue 50: "Took —" on every finished cycle (rows of values() have no model property)
    from brokerage.models import BrokerageCycle

    latest = response.context["cycles"][0]
    stored = BrokerageCycle.objects.get(pk=latest["pk"])
    assert latest["took"] == stored.finished - stored.started
    # an assigned decision shows no main reason: its skip codes are not why it went where it did
    assigned = Decision.objects.filter(outcome="assigned", task__isnull=False).exclude(primary_reason="").first()
    if assigned is not None:
        html = page(client, reverse("monitor:decisions"), task=str(assigned.task_id), outcome="assigned")[1]
        assert f"reason={assigned.primary_reason}" not in html


def test_gdpconfig_page_lists_every_parameter_and_changes(client, living_grid):
    from brokerage.gdpconfig import REGISTRY

    response, html = page(client, reverse("monitor:gdpconfig"))
    assert len(response.context["parameters"]) == len(REGISTRY)
    assert "DISK_THRESHOLD" in html
    assert response.context["revisions"]  # the demo grid set DISK_THRESHOLD_Express: a revision with its change
    assert reverse("admin:brokerage_gdpconfig_changelist") in html


def test_live_pages_refresh_their_parts_and_can_stop(client, living_grid):
    _, html = page(client, reverse("monitor:tasks"))
    assert 'http-equiv="refresh"' not in html  # a reload wiped what was typed; the script refreshes parts
    assert '<body data-refresh="60">' in html
    assert 'id="live-pause"' in html
    assert "data-live" in html
    _, html = page(client, reverse("monitor:tasks"), refresh="0")
    assert "data-refresh" not in html
