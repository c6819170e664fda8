"""The dashboard in a real browser: Playwright drives Debian's Chromium headless against a live test server.
Every page loads without a JavaScript error and its plots render with data; filters, sorting and navigation
work. Bounded: one living grid, one browser, about thirty page loads."""

import os
import shutil

import pytest

from brokerage.models import Decision, Job
from tests.monitor.conftest import grid_live

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it as root)",
    ),
    # the pages do not depend on the database engine: one pass (SQLite) is enough for the browser
    pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="browser: SQLite pass"),
]


@pytest.fixture
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    assert shutil.which(CHROMIUM) or os.path.exists(CHROMIUM), "CI must have chromium (scripts/ensure_chromium.sh)"
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield launched
        launched.close()


def open_page(browser, url, errors):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("pageerror", lambda error: errors.append(f"{url}: {error}"))
    page.on("console", lambda message: message.type == "error" and errors.append(f"{url}: {message.text}"))
    page.goto(url, wait_until="load")
    return page


def plots_with_data(page) -> int:
    page.wait_for_function("() => !document.querySelector('.plotly-graph-div') || window.Plotly !== undefined")
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('.plotly-graph-div'))
                  .filter(div => div.classList.contains('js-plotly-plot') && div.data && div.data.length > 0
                                 && div.querySelector('svg.main-svg')).length"""
    )


@pytest.mark.django_db(transaction=True)
def test_every_page_renders_its_plots_without_javascript_errors(live_server, browser, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop shares the test's thread
    grid_live()
    task = Decision.objects.filter(plugin="atlas_prod_job").values_list("task_id", flat=True).first()
    queue = Job.objects.exclude(computingSite="").values_list("computingSite", flat=True).first()
    pages = {
        "/": 0,
        "/tasks/": 1,
        f"/tasks/{task}/": 3,
        f"/queues/{queue}/": 1,
        "/shares/": 2,
        "/timeouts/": 1,
        "/decisions/": 1,
        "/gdpconfig/": 0,
        "/wmcore/": 3,
    }
    errors: list[str] = []
    for path, at_least in pages.items():
        page = open_page(browser, live_server.url + path + "?refresh=0", errors)
        assert plots_with_data(page) >= at_least, path
        assert page.locator("main h1").count() == 1, path
        page.close()
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_filters_sorting_and_navigation(live_server, browser, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    grid_live()
    errors: list[str] = []
    page = open_page(browser, live_server.url + "/tasks/?refresh=0", errors)
    # filter by status through the form: the state goes into the address
    page.select_option("select[name=status]", "running")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state("load")
    assert "status=running" in page.url
    statuses = page.locator("#task-table tbody td:nth-child(3)").all_inner_texts()
    assert statuses
    assert set(statuses) == {"running"}
    # sort by priority, highest first, keeping the filter
    page.click("#task-table thead a:has-text('Priority')")
    page.wait_for_load_state("load")
    assert "sort=-priority" in page.url
    assert "status=running" in page.url
    priorities = [int(text) for text in page.locator("#task-table tbody td:nth-child(4)").all_inner_texts()]
    assert priorities == sorted(priorities, reverse=True)
    # into a task, its brokerage panel, back to the decisions of a reason
    page.click("#task-table tbody tr:first-child td:first-child a")
    page.wait_for_load_state("load")
    assert "/tasks/" in page.url
    assert page.locator("#brokerage").count() == 1
    page.click("nav a:has-text('Decisions')")
    page.wait_for_load_state("load")
    page.select_option("select[name=outcome]", "assigned")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state("load")
    outcomes = set(page.locator("#decision-table tbody td:nth-child(4)").all_inner_texts())
    assert outcomes == {"assigned"}
    assert errors == []
