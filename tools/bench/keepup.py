"""Keeping up at a real grid's rate (issue 32): `manage.py bench keepup [--jobs-per-day M] [--minutes N]
[--speed S] [--json]`.

The real cycles and the grid simulator run in two Celery worker processes (production settings, PostgreSQL,
Redis) over a grid sized for M jobs a day: the queues' slots add up to the jobs that run at once at that rate
(M × the mean run time of 90 grid minutes ÷ a day's 1,440), each work queue's NQUEUELIMIT lets a job-generation
cycle make a cycle's worth of jobs at that rate, and enough tasks are registered for the jobs the window needs.
Time is compressed as the demo compresses it: S grid minutes pass per real minute (60, as `make run`), so each
real second carries S seconds of the grid's work. A beat in this process sends every periodic task at the demo's
pace (scripts/run.sh) and the workers' task events (Celery's `-E`, as Flower reads them) say when each started.

After a warm-up (the first jobs ended, and two minutes more; then the rate's slots are shared out over the
queues the brokerage used, in proportion to the jobs it gave each), it measures N real minutes and reports:
- the jobs made and ended per real second, and what that is per simulated day (the goal: M);
- for each periodic cycle, how far its runs started behind the beat that sent them (a job-generation cycle
  counts from its dispatch's beat), in seconds and in periods, with the sends never started by the end counted
  as behind by the time they waited; the goal: no cycle more than one period behind;
- the rows inserted and the bytes added per simulated day, per table (PostgreSQL's statistics and sizes).

PostgreSQL only; the grid is removed afterwards (the database is flushed), so run it on a scratch database as
`scripts/with_postgres.sh` gives."""

from __future__ import annotations

import math
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from django.core.management import call_command
from django.db import connection

from .runner import Row, benchmark, percentile
from .stack import processes_stop, production_env, redis_start, sender, wait_until, worker_start

WORKERS = 2
# Each worker's pool: a process a core, as Celery's default. With one process a worker, a 5-s simulator step
# queued behind a 7-s WMCore agent cycle on one worker and a job-generation cycle on the other, while half of
# the machine's CPU was idle.
CONCURRENCY = 2
WARM_UP_SECONDS = 120
# NTASKS_<work queue> of the benchmark's six work queues: the tasks a job-generation cycle takes per resource type
# (JEDI's nTasks, 50 by default). The rate a hundred ATLAS work queues share rests on six here, so their operators
# raise it, as they raise NQUEUELIMIT below. The benchmark's tasks are not spread evenly over the four resource
# types: 80 a type took fewer tasks a cycle than 320 of any type had (556,246 jobs a simulated day against
# 612,648); 160 a type made 641,827 with every cycle within 0.72 of its period (docs/benchmarks.md, 2026-11-29).
NTASKS = 160
# The slots follow the work this often (real seconds), as pilot factories send pilots where activated jobs wait.
RESHARE_SECONDS = 30
MEAN_RUN_MINUTES = 90  # brokerage.services.simulator.job_run_minutes: 30 to 150 grid minutes
# The demo's beat periods in seconds (scripts/run.sh); the housekeeping every minute, so that it runs in the window.
PERIODS = {
    "brokerage.tasks.grid_simulate_task": 5,
    "brokerage.tasks.task_refine_task": 10,
    "brokerage.tasks.task_brokerage_cycle_task": 15,
    "brokerage.tasks.process_lock_expire_task": 15,
    "brokerage.tasks.job_generation_dispatch_task": 20,
    "brokerage.tasks.wmcore_dispatch_task": 20,
    "brokerage.tasks.watchdog_task": 30,
    "brokerage.tasks.job_counts_refresh_task": 10,
    "brokerage.tasks.housekeeping_task": 60,
    "brokerage.tasks.wmcore_locations_task": 120,
    "brokerage.tasks.task_priority_boost_task": 600,
    "brokerage.tasks.global_share_snapshot_task": 600,
}
# Tasks sent by a periodic one: they are behind the schedule of their root's beat.
CHILDREN = {
    "brokerage.tasks.job_generation_cycle_task": "brokerage.tasks.job_generation_dispatch_task",
    "brokerage.tasks.wmcore_agent_cycle_task": "brokerage.tasks.wmcore_dispatch_task",
}
TABLES = (
    "panda_jobs",
    "panda_job_status_log",
    "jedi_dataset_contents",
    "jedi_events",
    "brokerage_decisions",
    "brokerage_decision_traces",
    "brokerage_cycles",
    "brokerage_cycle_frames",
    "jedi_task_status_log",
    "dirac_match_records",
)


class _Schedule:
    """What the beat sent (task id → name, time) and what the workers' events say started when."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: dict[str, tuple[str, float]] = {}
        self.roots: dict[str, tuple[str, str]] = {}  # child id → (name, root id)
        self.started: dict[str, float] = {}
        self.runtimes: dict[str, float] = {}  # task id → seconds the worker ran it (task-succeeded/failed)

    def send(self, app, name: str) -> None:
        result = app.send_task(name)
        with self.lock:
            self.sent[result.id] = (name, time.time())

    def on_received(self, event: dict) -> None:
        with self.lock:
            if event.get("root_id") and event["root_id"] != event["uuid"]:
                self.roots[event["uuid"]] = (event.get("name", ""), event["root_id"])

    def on_started(self, event: dict) -> None:
        with self.lock:
            self.started[event["uuid"]] = event["timestamp"]

    def on_ended(self, event: dict) -> None:
        with self.lock:
            if event.get("runtime") is not None:
                self.runtimes[event["uuid"]] = float(event["runtime"])

    def runtimes_by_name(self, *, since: float, until: float) -> dict[str, list[float]]:
        """Seconds each run took on its worker, by task name, for the runs started in [since, until)."""
        names = {task_id: name for task_id, (name, _) in self.sent.items()}
        names.update({task_id: name for task_id, (name, _) in self.roots.items()})
        found: dict[str, list[float]] = {}
        with self.lock:
            for task_id, seconds in self.runtimes.items():
                if task_id in names and since <= self.started.get(task_id, -1.0) < until:
                    found.setdefault(names[task_id], []).append(seconds)
        return found

    def lags(self, *, since: float, until: float) -> dict[str, list[float]]:
        """Seconds behind the beat of every run sent in [since, until), by task name; a send never started is
        behind by the time it waited until `until`."""
        lags: dict[str, list[float]] = {}
        with self.lock:
            for task_id, (name, sent) in self.sent.items():
                if since <= sent < until and name not in CHILDREN.values():
                    lags.setdefault(name, []).append(max(self.started.get(task_id, until), sent) - sent)
            for task_id, (name, root) in self.roots.items():
                root_sent = self.sent.get(root)
                if name in CHILDREN and root_sent is not None and since <= root_sent[1] < until:
                    lags.setdefault(name, []).append(max(self.started.get(task_id, until) - root_sent[1], 0.0))
            # a dispatch is counted through its cycles; one that never started stands for them, behind by its wait
            dispatches = {parent: child for child, parent in CHILDREN.items()}
            for task_id, (name, sent) in self.sent.items():
                if name in dispatches and since <= sent < until and task_id not in self.started:
                    lags.setdefault(dispatches[name], []).append(until - sent)
        return lags


def _events(app, schedule: _Schedule, stop: threading.Event) -> None:
    """Listens to the workers' task events until `stop` (the receiver checks it between its one-second waits)."""
    with app.connection() as conn:
        receiver = app.events.Receiver(
            conn,
            handlers={
                "task-received": schedule.on_received,
                "task-started": schedule.on_started,
                "task-succeeded": schedule.on_ended,
                "task-failed": schedule.on_ended,
            },
        )
        receiver.on_iteration = lambda: setattr(receiver, "should_stop", stop.is_set())
        try:
            receiver.capture(limit=None, timeout=None, wakeup=False)
        except Exception:  # Redis stopped under it: only at the end
            if not stop.is_set():
                raise


def _beat(app, schedule: _Schedule, stop: threading.Event) -> None:
    due = dict.fromkeys(PERIODS, time.monotonic())
    while not stop.is_set():
        now = time.monotonic()
        for name, period in PERIODS.items():
            if due[name] <= now:
                schedule.send(app, name)
                due[name] += period
        stop.wait(max(min(due.values()) - time.monotonic(), 0.05))


def _grid(*, jobs_per_day: int, minutes: float, speed: float, quick: bool) -> dict:
    """The demo grid with slots for `jobs_per_day` and tasks enough for the window's jobs (and half as many
    again)."""
    import random

    from django.utils import timezone

    from brokerage.models import DatasetFile, NetworkLink, PandaQueue, StorageEndpoint
    from brokerage.services.demo_grid import demo_tasks_register

    call_command("demo_grid", size="small" if quick else "large", no_progress=True, stdout=open(os.devnull, "w"))  # noqa: SIM115
    # the demo starts some network links full, to show the transfer-backlog rule clearing by itself (up to 400
    # files a link, drained at 3 a grid minute): here that would hold most tasks pending for the first grid hours
    NetworkLink.objects.update(queued=0)
    slots = _slots_spread(jobs_per_day=jobs_per_day, over=PandaQueue.objects.filter(status="online").count())
    limit = _throttle_open(jobs_per_day=jobs_per_day, speed=speed)
    # jobs made in the window at the goal's rate: a file makes about one job (files per job 1–5, events per job
    # below a file's): files for 1.5 times as many
    wanted_files = int(1.5 * jobs_per_day * minutes * speed / 1440)
    files = DatasetFile.objects.filter(type="input", status="ready").count()
    nuclei = list(StorageEndpoint.objects.filter(site__role="nucleus").select_related("site"))
    rng = random.Random(32)
    first = 10_000
    while files < wanted_files:
        batch = min(200, max((wanted_files - files) // 300, 1))
        demo_tasks_register(count=batch, files=(200, 400), nuclei=nuclei, now=timezone.now(), rng=rng, first=first)
        first += batch
        files += batch * 300
    return {"input_files": files, "slots_per_queue_first": slots, "work_queue_limit": limit}


def _throttle_open(*, jobs_per_day: int, speed: float) -> int:
    """Sizes each work queue's NQUEUELIMIT for the rate, as a grid's operators size theirs: the job throttler lets
    a cycle make a twentieth of the limit while fewer are queued (services/throttle.py, JEDI's JobThrottlerBase),
    else 250 to 300 jobs a resource type; ATLAS spreads its rate over a hundred work queues, the demo has six.
    Each work queue's cycle may then make a whole cycle's jobs at the rate by itself. And each takes NTASKS tasks
    a resource type (JEDI's nTasks, 50 by default: a hundred work queues take 50 each). Returns the limit."""
    from brokerage.models import WorkQueue
    from brokerage.services.gdpconfig import gdpconfig_save
    from brokerage.services.jobs import config_name

    per_cycle = math.ceil(jobs_per_day * speed / 86_400 * PERIODS["brokerage.tasks.job_generation_dispatch_task"])
    limit = 20 * per_cycle
    queues = WorkQueue.objects.filter(queue_type__in=("production", "analysis"))
    for name in queues.values_list("queue_name", flat=True):
        gdpconfig_save(key=f"NQUEUELIMIT_{config_name(name)}", value=limit, comment="bench keepup")
        gdpconfig_save(key=f"NTASKS_{config_name(name)}", value=NTASKS, comment="bench keepup")
    return limit


def _slots_spread(*, jobs_per_day: int, over: int) -> int:
    """Gives every online queue the slots for `jobs_per_day` spread over `over` queues (the warm-up's grid):
    the jobs that run at once at that rate (its share of a day's 1,440 minutes at the mean run time); returns the
    slots a queue."""
    slots = max(math.ceil(_slots_total(jobs_per_day) / max(over, 1)), 1)
    _slots_write({}, default=slots)
    return slots


def _slots_write(slots: dict[str, int], *, default: int) -> None:
    """Sets every online queue's demo slots: its entry in `slots`, else `default`."""
    from brokerage.models import PandaQueue

    queues = list(PandaQueue.objects.filter(status="online"))
    for queue in queues:
        queue.cric = {**(queue.cric or {}), "demo_slots": slots.get(queue.name, default)}
    PandaQueue.objects.bulk_update(queues, ["cric"], batch_size=500)


def _slots_total(jobs_per_day: int) -> int:
    """The jobs that run at once at `jobs_per_day`, each for the mean run time."""
    return math.ceil(jobs_per_day * MEAN_RUN_MINUTES / 1440)


def slots_in_proportion(*, total: int, jobs_by_queue: dict[str, int]) -> dict[str, int]:
    """`total` slots shared out over the queues in proportion to the jobs the brokerage gave each (rounded up, at
    least one a queue). A real grid's capacity sits where its data and its software are, which is where the
    brokerage sends the work; slots spread evenly leave the queues it prefers with a backlog of activated jobs
    and the others idle (the first keeping-up runs: 30,000 activated jobs beside 48,000 empty slots)."""
    jobs = sum(jobs_by_queue.values())
    return {queue: max(math.ceil(total * count / jobs), 1) for queue, count in jobs_by_queue.items() if jobs}


def _slots_follow_jobs(*, jobs_per_day: int) -> dict[str, int]:
    """Gives the queues the brokerage sends work to their share of the rate's slots (slots_in_proportion), by
    the jobs each holds that are activated (waiting for a pilot) or running; returns the slots by queue."""
    from django.db.models import Count

    from brokerage.models import Job

    jobs_by_queue = dict(
        Job.objects.filter(jobStatus__in=("activated", "starting", "running"))
        .values_list("computingSite")
        .annotate(n=Count("pk"))
        .values_list("computingSite", "n")
    )
    slots = slots_in_proportion(total=_slots_total(jobs_per_day), jobs_by_queue=jobs_by_queue)
    _slots_write(slots, default=1)  # a queue without work keeps a slot, for the first job sent there
    return slots


def _table_stats() -> dict[str, tuple[int, int]]:
    """(rows inserted, bytes) of each table with its partitions, from PostgreSQL's statistics."""
    stats = {}
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(
                "SELECT coalesce(sum(s.n_tup_ins), 0), coalesce(sum(pg_total_relation_size(t.relid)), 0) "
                "FROM pg_partition_tree(%s) t LEFT JOIN pg_stat_user_tables s ON s.relid = t.relid",
                [table],
            )
            inserted, size = cursor.fetchone()
            stats[table] = (int(inserted), int(size))
    return stats


def _statements_reset() -> None:
    """Empties pg_stat_statements when the server loads it (PG_SERVER_OPTIONS="-c
    shared_preload_libraries=pg_stat_statements"), so that the window's statements can be read afterwards."""
    from django.db import DatabaseError, transaction

    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            cursor.execute("SELECT pg_stat_statements_reset()")
    except DatabaseError:
        pass


def _statements_top(limit: int = 12) -> list[dict] | None:
    """The statements that took the server's time in the window (pg_stat_statements), or None without it."""
    from django.db import DatabaseError, transaction

    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT round(total_exec_time::numeric / 1000, 1), calls, rows, left(regexp_replace(query, "
                "'\\s+', ' ', 'g'), 160) FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT %s",
                [limit],
            )
            return [{"seconds": float(s), "calls": c, "rows": r, "query": q} for s, c, r, q in cursor.fetchall()]
    except DatabaseError:
        return None


def _jobs(since) -> tuple[int, int]:
    from brokerage.models import Job

    made = Job.objects.filter(creationTime__gte=since).count()
    ended = Job.objects.filter(endTime__gte=since, jobStatus__in=("finished", "failed")).count()
    return made, ended


def _holds(since) -> dict[str, int]:
    """The job throttler's decisions in the window that held jobs back, by kind: a share running over its target,
    a share's queue over the threshold × its target, a work queue's limits."""
    from brokerage.models import Decision
    from brokerage.plugins import THROTTLER_PLUGIN

    held = Decision.objects.filter(plugin=THROTTLER_PLUGIN, created__gte=since)
    return {
        "share_running_over_target": held.filter(message__contains=" HS06 over a target of ").count(),
        "share_queued_over_target": held.filter(message__contains=" HS06 queued over ").count(),
        "work_queue_limits": held.exclude(message__contains=" HS06 ").count(),
    }


# Prometheus scrapes /metrics this often in production (its default is a minute; operators often use 15 s): the
# benchmark reads the grid's state as a scrape does, the cache emptied first so that each one queries the database
SCRAPE_SECONDS = 15


def _scrape(stop: threading.Event, path: Path, durations: list[float]) -> None:
    """A Prometheus scraping the monitor every SCRAPE_SECONDS while the cycles run (monitor.metrics), timed."""
    from django.core.cache import cache
    from django.db import connection as thread_connection

    from monitor.metrics import CACHE_KEY, metrics_text

    try:
        while not stop.wait(SCRAPE_SECONDS):
            began = time.perf_counter()
            cache.delete(CACHE_KEY)
            metrics_text(path=str(path))
            durations.append(time.perf_counter() - began)
    finally:
        thread_connection.close()


@benchmark("keepup")
def keepup(
    *, quick: bool = False, jobs_per_day: int = 1_000_000, minutes: float = 10.0, speed: float = 60.0
) -> list[Row]:
    if connection.vendor != "postgresql":
        raise RuntimeError("bench keepup runs the production path: PostgreSQL only (scripts/with_postgres.sh)")
    from django.db.models import Count, Sum
    from django.utils import timezone

    from brokerage.adapters.job_brokerage import ANALYSIS_PLUGIN, PLUGIN
    from brokerage.models import BrokerageCycle, Decision, Job, Task

    if Task.objects.exists():
        raise RuntimeError("bench keepup builds its own grid: run it on an empty database")
    if quick:
        jobs_per_day, minutes = min(jobs_per_day, 20_000), min(minutes, 0.5)
    grid = _grid(jobs_per_day=jobs_per_day, minutes=minutes, speed=speed, quick=quick)
    work = Path(tempfile.mkdtemp(prefix="bench-keepup-"))
    processes = []
    stop = threading.Event()
    schedule = _Schedule()
    try:
        redis, redis_socket = redis_start(work)
        processes.append(redis)
        metrics_dir = work / "prometheus"
        metrics_dir.mkdir()
        env = production_env(work, redis_socket, GRID_SIMULATOR="on", GRID_SIMULATOR_SPEED=str(speed),
                             PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))  # fmt: skip
        log = (work / "workers.log").open("w")
        for index in range(WORKERS):
            processes.append(worker_start(env, name=f"keepup{index}", log=log, concurrency=CONCURRENCY, events=True))
        app = sender(redis_socket)
        listener = threading.Thread(target=_events, args=(app, schedule, stop), daemon=True)
        listener.start()
        beat = threading.Thread(target=_beat, args=(app, schedule, stop), daemon=True)
        beat.start()
        # warm-up: the first jobs end, and the brokerage has shown which queues it uses (the demo's tasks fit
        # some queues only: their software, storage and links) and how much; the slots are then shared out over
        # those in proportion, so that the grid's capacity is the rate asked for where the work goes
        warm_since = timezone.now()
        wait_until(
            lambda: Job.objects.filter(endTime__isnull=False).exists(),
            600,
            "the first job's end (warm-up)",
        )
        time.sleep(WARM_UP_SECONDS * (0.1 if quick else 1))
        slots = _slots_follow_jobs(jobs_per_day=jobs_per_day)
        grid["queues_used"] = len(slots)
        grid["slots"] = sum(slots.values())
        grid["slots_per_queue_min"] = min(slots.values(), default=0)
        grid["slots_per_queue_max"] = max(slots.values(), default=0)
        warm_up = (timezone.now() - warm_since).total_seconds()
        before = _table_stats()
        _statements_reset()
        scrapes: list[float] = []
        scraper = threading.Thread(target=_scrape, args=(stop, metrics_dir, scrapes), daemon=True)
        scraper.start()
        started_at, started = timezone.now(), time.time()
        while (left := started + minutes * 60 - time.time()) > 0:
            time.sleep(min(RESHARE_SECONDS, left))
            if left > RESHARE_SECONDS:
                _slots_follow_jobs(jobs_per_day=jobs_per_day)
        ended_at = time.time()
        made, ended = _jobs(started_at)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_force_next_flush()")
        time.sleep(1.5)  # the workers' statistics reach the collector at their next transaction's end
        after = _table_stats()
        cycles = BrokerageCycle.objects.filter(started__gte=started_at)
        cycle_counts = {
            "cycles_succeeded": cycles.filter(status="succeeded").count(),
            "cycles_failed": cycles.filter(status="failed").count(),
            # why job generation held work back in the window, and where the jobs stand at its end: what limits the
            # rate when the cycles keep up
            "generation_held": _holds(started_at),
            "jobs_by_status_at_end": dict(
                Job.objects.values_list("jobStatus").annotate(n=Count("pk")).values_list("jobStatus", "n")
            ),
            # why job sets found no queue: the pending decisions' first reasons, most frequent first
            "generation_pending_reasons": dict(
                Decision.objects.filter(
                    plugin__in=(PLUGIN, ANALYSIS_PLUGIN), outcome="pending", created__gte=started_at
                )
                .values_list("primary_reason")
                .annotate(n=Count("pk"))
                .order_by("-n")
                .values_list("primary_reason", "n")[:8]
            ),
            "tasks_by_status_at_end": dict(
                Task.objects.values_list("status").annotate(n=Count("pk")).values_list("status", "n")
            ),
            # job generation's cycles: how many, and the job sets each placed, left pending or held back
            "generation_cycles": cycles.filter(plugin__in=(PLUGIN, ANALYSIS_PLUGIN)).aggregate(
                n=Count("pk"), assigned=Sum("n_assigned"), pending=Sum("n_pending"), throttled=Sum("n_throttled")
            ),
        }
        stop.set()
        lags = schedule.lags(since=started, until=ended_at)
        runtimes = schedule.runtimes_by_name(since=started, until=ended_at)
        statements = _statements_top()
    finally:
        stop.set()
        processes_stop(processes)
        shutil.rmtree(work, ignore_errors=True)
        call_command("flush", interactive=False, verbosity=0)
    seconds = ended_at - started
    simulated_days = seconds * speed / 86_400
    whole = {
        "bench": "keepup",
        "params": {
            "measure": "jobs",
            "jobs_per_day": jobs_per_day,
            "speed": speed,
            "workers": WORKERS,
            "concurrency": CONCURRENCY,
            "database": "postgresql",
        },
        "median_ms": 0.0,
        "p95_ms": 0.0,
        "n": ended,
        "seconds": round(seconds, 1),
        "warm_up_seconds": round(warm_up, 1),
        "simulated_days": round(simulated_days, 4),
        "jobs_made": made,
        "jobs_ended": ended,
        "jobs_made_per_s": round(made / seconds, 1),
        "jobs_ended_per_s": round(ended / seconds, 1),
        "jobs_ended_per_simulated_day": round(ended / simulated_days),
        # /metrics scraped every SCRAPE_SECONDS meanwhile (the grid's state read from the database each time)
        "metrics_scrapes": len(scrapes),
        "metrics_scrape_ms_max": round(max(scrapes, default=0.0) * 1000, 1),
        "metrics_scrape_ms_mean": round(statistics.fmean(scrapes) * 1000, 1) if scrapes else 0.0,
        "goal_jobs_per_day_met": ended / simulated_days >= jobs_per_day,
        **grid,
        **cycle_counts,
        "rows_per_simulated_day": {t: round((after[t][0] - before[t][0]) / simulated_days) for t in TABLES},
        "bytes_per_simulated_day": {t: round((after[t][1] - before[t][1]) / simulated_days) for t in TABLES},
    }
    if statements is not None:
        whole["statements_top"] = statements
    rows = [whole]
    worst = 0.0
    for name, values in sorted(lags.items()):
        period = PERIODS.get(name) or PERIODS[CHILDREN[name]]
        worst = max(worst, max(values) / period)
        ran = runtimes.get(name) or [0.0]
        rows.append(
            {
                "bench": "keepup",
                "params": {"cycle": name.rsplit(".", 1)[-1], "period_s": period, "database": "postgresql"},
                "median_ms": round(statistics.median(values) * 1000, 1),
                "p95_ms": round(percentile(values, 0.95) * 1000, 1),
                "n": len(values),
                "max_behind_s": round(max(values), 1),
                "max_behind_periods": round(max(values) / period, 2),
                # how long its runs took on a worker, and the share of the workers' processes they kept busy
                "run_median_s": round(statistics.median(ran), 2),
                "run_max_s": round(max(ran), 2),
                "busy_share": round(sum(ran) / (seconds * WORKERS * CONCURRENCY), 3),
            }
        )
    whole["max_behind_periods"] = round(worst, 2)
    whole["goal_behind_met"] = worst <= 1.0
    return rows
