"""`manage.py bench`: a smoke run of each benchmark's shape (figures are measured outside the suite)."""

import io
import json
import os

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tools.management.commands.bench import row_line


def postgres_only(reason: str):
    """Skips a benchmark test outside the PostgreSQL pass of `make test`."""
    return pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason=reason)


def bench(*args) -> str:
    out = io.StringIO()
    call_command("bench", *args, stdout=out)
    return out.getvalue()


def test_task_broker_rows():
    rows = json.loads(bench("task-broker", "--json", "--quick"))
    assert [row["params"] for row in rows] == [
        {"nuclei": 10},
        {"nuclei": 50},
        {"nuclei": 200},
        {"nuclei": 20, "queues": 1000, "profile": "panda"},  # with the job check over the nuclei's queues
    ]
    for row in rows:
        assert row["bench"] == "task-broker"
        assert row["n"] == 20
        assert 0 < row["median_ms"] <= row["p95_ms"]
    assert rows[-1]["cold_first_ms"] > 0


@pytest.mark.django_db(transaction=True)
def test_trace_size_rows_and_nothing_left_behind():
    from brokerage.models import BrokerageCycle, Decision

    rows = json.loads(bench("trace-size", "--json", "--quick"))
    assert [row["params"]["candidates"] for row in rows] == [100, 1000]
    assert all(row["trace_bytes_mean"] > 0 for row in rows)
    assert not Decision.objects.exists()
    assert not BrokerageCycle.objects.exists()


def test_unknown_benchmark_exits_2():
    with pytest.raises(CommandError, match="unknown benchmark 'nope'") as caught:
        bench("nope")
    assert caught.value.returncode == 2


def test_job_broker_rows():
    rows = json.loads(bench("job-broker", "--json", "--quick"))
    assert [row["params"] for row in rows] == [
        {"queues": queues, "profile": profile} for profile in ("seed", "panda") for queues in (100, 1000, 10000)
    ]
    assert all(row["median_ms"] > 0 and row["cold_first_ms"] > 0 for row in rows)


def test_anal_broker_row():
    (row,) = json.loads(bench("anal-broker", "--json", "--quick"))
    assert row["params"] == {"queues": 1000}
    assert row["median_us"] == pytest.approx(row["median_ms"] * 1000, abs=0.1)


@pytest.mark.django_db(transaction=True)
def test_cycle_rows_and_nothing_left_behind():
    from brokerage.models import BrokerageCycle, Task

    rows = json.loads(bench("cycle", "--json", "--quick"))
    assert [(row["params"]["kind"], row["params"]["tasks"]) for row in rows] == [
        ("task brokerage", 20),
        ("task brokerage", 50),
        ("job generation + job brokerage", 20),
        ("job generation + job brokerage", 50),
    ]
    assert [row["n"] for row in rows] == [20, 50, 20, 50]
    assert [row["assigned"] for row in rows[2:]] == [20, 50]  # every task's job set found a queue
    assert all(row["queries_per_cycle"] > 0 for row in rows)
    assert not Task.objects.exists()
    assert not BrokerageCycle.objects.exists()


@pytest.mark.django_db
def test_a_page_request_may_name_a_redirect_as_its_answer():
    """The search box answers an ID naming one thing with a redirect to its page: a request naming 302 as an answer
    times it; any other request stops the benchmark on it, saying what was answered."""
    from tests.factories import TaskFactory
    from tools.bench.runner import time_pages

    task = TaskFactory()
    url = f"/search/?q={task.pk}"
    rows = time_pages("pages", [("search an ID", url, lambda name: {"page": name}, (200, 302))], repeat=2, params={})
    assert rows[0]["params"] == {"page": "search an ID"}
    assert rows[0]["median_ms"] > 0
    with pytest.raises(RuntimeError, match=f"/search/\\?q={task.pk} answered 302"):
        time_pages("pages", [("search an ID", url, lambda name: {"page": name})], repeat=2, params={})


@pytest.mark.django_db(transaction=True)
def test_pages_rows_and_nothing_left_behind():
    from brokerage.models import BrokerageCycle, Job, JobCountNow, JobErrorHour, JobStateHour, SummaryMark, Task

    rows = json.loads(bench("pages", "--json", "--quick"))
    assert [row["params"]["page"] for row in rows] == [
        "task page",
        "task error summary",
        "job page",
        "job list of the task",
        "task list",
        "task list filtered",
        "queue page",
        "overview",
        "search listing matches",
        "search an ID",
        "site list",
        "job list with facets",
        "job list by user and error",
        "errors page",
        "errors page of a user",
        "user page",
        "site page",
        "overview 7 days",
        "overview 30 days",
    ]
    assert all(row["params"]["jobs"] == 20000 and row["median_ms"] > 0 for row in rows)
    assert not Task.objects.exists()
    assert not Job.objects.exists()
    assert not BrokerageCycle.objects.exists()
    # the hourly summaries it rolled up, as the housekeeping would have, and their marks (none before) went too
    assert not JobErrorHour.objects.exists()
    assert not JobStateHour.objects.exists()
    assert not JobCountNow.objects.exists()
    assert not SummaryMark.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_history_rows_and_nothing_left_behind():
    """Four days of 4,000 jobs: pages at day 1 and day 4 (the archived task and job only at day 4, once a day has
    passed the three days), then the housekeeping figures; every row the benchmark made is gone after it."""
    from brokerage.models import Decision, DecisionTrace, DiracMatchRecord, Job, JobStatusLog, Task

    rows = json.loads(bench("history", "--json", "--quick", "--days", "4", "--jobs-per-day", "4000"))
    pages = [(row["params"]["page"], row["params"]["day"]) for row in rows if "page" in row["params"]]
    assert ("task page, 100k jobs archived", 4) in pages
    assert ("overview", 1) in pages
    assert ("overview", 4) in pages
    assert all(row["median_ms"] > 0 for row in rows)
    (summary,) = [row for row in rows if row["params"].get("measure") == "housekeeping"]
    assert summary["archive_jobs_per_s"] > 0
    assert summary["n"] == 4
    if summary["params"]["database"] == "postgresql":
        assert summary["drop_day_rows"] == 4000 * 7  # the oldest day of job status logs, dropped whole
        assert summary["bytes_per_day"]["panda_jobs"] > 0
        # the year's jobs: a day of the archive per day kept, and the active partition once
        assert summary["bytes_per_day"]["panda_jobs_archive"] > 0
        assert summary["bytes_per_year_per_table_gb"]["panda_jobs"] >= round(
            summary["bytes_per_day"]["panda_jobs_archive"] * 365 / 1e9, 2
        )
    for model in (Task, Job, JobStatusLog, Decision, DecisionTrace, DiracMatchRecord):
        assert not model.objects.exists(), model


def test_options_belong_to_their_benchmarks():
    with pytest.raises(CommandError, match="--days is an option of the history benchmark"):
        bench("pages", "--days", "3")
    with pytest.raises(CommandError, match="--jobs-per-day is an option of the history and keepup benchmark"):
        bench("dirac", "--jobs-per-day", "3")
    with pytest.raises(CommandError, match="--speed is an option of the keepup benchmark"):
        bench("history", "--speed", "60")
    with pytest.raises(CommandError, match="--minutes: give a positive number"):
        bench("keepup", "--minutes", "0")
    with pytest.raises(CommandError, match="--days: give a positive number"):
        bench("history", "--days", "0")


@pytest.mark.django_db(transaction=True)
def test_api_rows_and_nothing_left_behind():
    from brokerage.models import BrokerageCycle, Decision, Job

    rows = json.loads(bench("api", "--json", "--quick"))
    assert [row["params"]["request"] for row in rows] == [
        "decision list",
        "decision list filtered",
        "decision list of a task",
        "decision detail",
        "job list",
    ]
    assert all(row["median_ms"] > 0 for row in rows)
    assert not Decision.objects.exists()
    assert not Job.objects.exists()
    assert not BrokerageCycle.objects.exists()


@postgres_only("the DIRAC benchmark forks requesters that need a shared database: PostgreSQL pass")
@pytest.mark.django_db(transaction=True)
def test_dirac_rows_and_nothing_left_behind():
    from brokerage.models import DiracJob, DiracMatchRecord, DiracTaskQueue

    rows = json.loads(bench("dirac", "--json", "--quick"))
    assert [row["params"]["measure"] for row in rows] == ["match latency", "4 concurrent requesters"]
    assert rows[0]["matched"] == 30
    assert rows[1]["double_matches"] == 0
    assert rows[1]["matches_per_second"] > 0
    assert not DiracTaskQueue.objects.exists()
    assert not DiracJob.objects.exists()
    assert not DiracMatchRecord.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_wmcore_rows_and_nothing_left_behind():
    from brokerage.models import BrokerageCycle, WMCoreElement, WMCoreQueue, WMCoreRequest

    rows = json.loads(bench("wmcore", "--json", "--quick"))
    assert [row["params"]["measure"] for row in rows] == [
        "match (engine)",
        "match + decision + trace",
        "pullWork over the database, first pull",
        "pullWork over the database, a minute later",
    ]
    assert rows[0]["params"] == {"measure": "match (engine)", "elements": 5000, "sites": 50}
    assert rows[0]["taken"] + sum(rows[0]["left"].values()) == 5000
    assert rows[2]["pulled"] > 0
    assert rows[2]["read"] == 5000  # a worker with no snapshot reads every row
    later = rows[3]
    assert later["n"] == 9
    # a minute later: the new request's 50 rows (PostgreSQL) or every row (elsewhere), and a trace stored as the
    # change against the previous pull's, far smaller than the whole 5,000-element trace
    if connection.vendor == "postgresql":
        assert later["read_median"] == 50
    else:
        assert later["read_median"] > 3000  # every Available row, compared by content
    assert later["trace_kb_median"] < rows[1]["trace_kb"] / 2
    assert not WMCoreElement.objects.exists()
    assert not WMCoreQueue.objects.exists()
    assert not WMCoreRequest.objects.exists()
    assert not BrokerageCycle.objects.filter(plugin="wmcore_pull").exists()


@pytest.mark.slow
@postgres_only("the load benchmark runs gunicorn and a Celery worker on a shared database: PostgreSQL pass")
@pytest.mark.django_db(transaction=True)
def test_load_rows_and_nothing_left_behind():
    import shutil

    from brokerage.models import BrokerageCycle, Task

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make test installs it as root)")
    rows = json.loads(bench("load", "--json", "--quick"))
    whole = rows[0]
    assert whole["params"] == {"page": "all", "clients": 16, "database": "postgresql"}
    assert whole["n"] > 0
    assert whole["errors"] == 0  # every request answered 200 by gunicorn on the production settings
    assert whole["p99_ms"] >= whole["p95_ms"] >= whole["median_ms"] > 0
    assert whole["cycles_succeeded"] > 0  # the worker ran cycles meanwhile
    # where the time went: each part of the stack used some CPU in the clients' seconds
    spent = whole["cpu_seconds"]
    assert spent["web"] > 0
    assert spent["workers"] > 0
    assert spent["database"] > 0
    assert spent["machine"] > 0
    assert whole["cpu_capacity_seconds"] == 8 * (os.cpu_count() or 1)
    assert {row["params"]["page"] for row in rows[1:]} >= {"/", "/tasks/", "/api/v1/decisions/"}
    assert not Task.objects.exists()
    assert not BrokerageCycle.objects.exists()


@pytest.mark.slow
@postgres_only("the keeping-up benchmark runs two Celery workers on a shared database: PostgreSQL pass")
@pytest.mark.django_db(transaction=True)
def test_keepup_rows_and_nothing_left_behind():
    """A half-minute run at 20,000 jobs a day: the jobs made and ended, each cycle's distance behind its beat
    (every cycle the beat sent in the window started, the job-generation cycles counted from their dispatch),
    the rows and bytes per simulated day; the grid removed afterwards."""
    import shutil

    from brokerage.models import Job, Task

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make test installs it as root)")
    rows = json.loads(bench("keepup", "--json", "--quick"))
    whole, *cycles = rows
    assert whole["params"] == {
        "measure": "jobs", "jobs_per_day": 20_000, "speed": 60.0, "workers": 2, "concurrency": 2,
        "database": "postgresql",
    }  # fmt: skip
    assert whole["seconds"] >= 30
    # 30 real seconds at 60×: half an hour of the grid, 1/48 of a day
    assert whole["simulated_days"] == pytest.approx(whole["seconds"] * 60 / 86_400, abs=1e-4)
    assert whole["jobs_ended"] > 0
    assert whole["jobs_ended_per_simulated_day"] == round(whole["jobs_ended"] / (whole["seconds"] * 60 / 86_400))
    # 20,000 jobs a day of 90 grid minutes each: 1,250 at once, over the queues the brokerage used (each share
    # rounded up)
    assert 1250 <= whole["slots"] < 1250 + whole["queues_used"]
    assert 1 <= whole["slots_per_queue_min"] <= whole["slots_per_queue_max"]
    # 20,000 a day at 60×: 13.9 jobs a real second, 278 a 20-s generation cycle, a limit of 20 times that
    assert whole["work_queue_limit"] == 20 * 278
    assert whole["rows_per_simulated_day"]["panda_job_status_log"] > 0
    # what limits the rate: the holds by kind, the job sets placed, pending (with their first reasons) or held, and
    # where the jobs and the tasks stand at the end (the grid is flushed afterwards: read here or never)
    assert set(whole["generation_held"]) == {
        "share_running_over_target",
        "share_queued_over_target",
        "work_queue_limits",
    }
    generation = whole["generation_cycles"]
    assert generation["n"] > 0
    assert generation["assigned"] > 0
    assert sum(whole["generation_pending_reasons"].values()) <= generation["pending"]
    assert sum(whole["jobs_by_status_at_end"].values()) >= whole["jobs_ended"]
    assert whole["tasks_by_status_at_end"]
    names = {row["params"]["cycle"] for row in cycles}
    assert {"grid_simulate_task", "task_refine_task", "job_generation_cycle_task"} <= names
    assert "job_generation_dispatch_task" not in names  # counted through its cycles
    for row in cycles:
        assert row["n"] > 0
        assert row["max_behind_periods"] == pytest.approx(row["max_behind_s"] / row["params"]["period_s"], abs=0.02)
    assert whole["max_behind_periods"] == max(row["max_behind_periods"] for row in cycles)
    assert not Task.objects.exists()
    assert not Job.objects.exists()


def test_keepup_shares_the_slots_out_where_the_brokerage_sent_the_jobs():
    from tools.bench.keepup import slots_in_proportion

    # 1,250 slots; 300, 100 and 100 jobs: 60 %, 20 % and 20 %; a queue with one job still gets a whole slot
    assert slots_in_proportion(total=1250, jobs_by_queue={"A": 300, "B": 100, "C": 100}) == {
        "A": 750, "B": 250, "C": 250
    }  # fmt: skip
    assert slots_in_proportion(total=10, jobs_by_queue={"A": 999, "B": 1}) == {"A": 10, "B": 1}
    assert slots_in_proportion(total=10, jobs_by_queue={}) == {}


def test_keepup_counts_each_cycle_behind_its_beat():
    """Worked numbers for the keeping-up figures: a simulator step sent at 100.0 and started at 100.5 is 0.5 s
    behind; one sent at 105.0 and never started is behind by its wait to the end (110.0), 5.0 s; a job-generation
    cycle counts from its dispatch's beat (sent 101.0, cycle started 104.0: 3.0 s); a dispatch that never started
    stands for its cycles (sent 108.0: 2.0 s); sends before the window are left out."""
    from tools.bench.keepup import _Schedule

    schedule = _Schedule()
    sent = {
        "a": ("brokerage.tasks.grid_simulate_task", 100.0),
        "b": ("brokerage.tasks.grid_simulate_task", 105.0),
        "d": ("brokerage.tasks.job_generation_dispatch_task", 101.0),
        "e": ("brokerage.tasks.job_generation_dispatch_task", 108.0),
        "old": ("brokerage.tasks.grid_simulate_task", 90.0),
    }
    schedule.sent.update(sent)
    schedule.on_received({"uuid": "c", "root_id": "d", "name": "brokerage.tasks.job_generation_cycle_task"})
    schedule.on_received({"uuid": "a", "root_id": "a", "name": "brokerage.tasks.grid_simulate_task"})
    for uuid, at in (("a", 100.5), ("d", 101.2), ("c", 104.0), ("old", 90.1)):
        schedule.on_started({"uuid": uuid, "timestamp": at})
    lags = schedule.lags(since=95.0, until=110.0)
    assert lags == {
        "brokerage.tasks.grid_simulate_task": [0.5, 5.0],
        "brokerage.tasks.job_generation_cycle_task": [3.0, 2.0],
    }


@pytest.mark.django_db(transaction=True)
def test_replay_rows_and_nothing_left_behind():
    from brokerage.models import BrokerageCycle, CycleInputs, Decision, ScenarioPart

    rows = {
        (row["bench"], row["params"].get("caches", "")): row for row in json.loads(bench("replay", "--json", "--quick"))
    }
    storage = rows[("replay-storage", "")]
    assert storage["bytes_per_decision"] == pytest.approx(
        storage["inputs_bytes_per_decision"]
        + storage["trace_bytes_per_decision"]
        + storage["frame_bytes_per_decision"],
        abs=0.2,
    )
    assert storage["own_inputs_bytes_per_decision"] > 0
    assert rows[("replay-one", "parts read before")]["n"] == 20  # each asserted identical inside the benchmark
    what_if = rows[("replay-what-if-cycle", "")]
    assert what_if["replayed"] == 100
    assert not Decision.objects.exists()
    assert not BrokerageCycle.objects.exists()
    assert not CycleInputs.objects.exists()
    assert not ScenarioPart.objects.exists()


def test_a_row_measured_once_or_skipped_prints_what_it_has():
    """`bench peer` ends with rows measured once (no p95) and, where a peer cannot be set up, rows that say why:
    each prints as a line instead of stopping the command (it did, with KeyError 'p95_ms', after 13 minutes)."""
    once = {"bench": "peer", "params": {"broker": "dirac"}, "median_ms": 0.0123, "n": 300, "agree": "300/300"}
    skipped = {"bench": "peer", "params": {"broker": "wmcore_pull"}, "skipped": "wmagent is not installed"}
    assert row_line(once) == "peer         broker=dirac                     median     0.012 ms  n=300  agree=300/300"
    assert row_line(skipped) == "peer         broker=wmcore_pull               skipped=wmagent is not installed"
    full = {**once, "p95_ms": 0.02}
    assert "median     0.012 ms  p95     0.020 ms  n=300" in row_line(full)
