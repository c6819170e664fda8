"""Benchmark of the REST API on a big database: 1,000,000 jobs and 100,000 stored decisions (each a real
1,000-queue job-brokerage trace against its cycle's frame); median latency of the decision list (plain, and
filtered by plugin and outcome), a decision's detail with its decoded trace, and a page of jobs with their
timeout states. Rows are inserted with INSERT … SELECT over a series and rolled back."""

from __future__ import annotations

from django.db import connection, transaction
from django.utils import timezone

from brokerage.engine import parse_scenario, trace_encode
from brokerage.engine.panda.synthetic import job_brokerage_scenario
from brokerage.models import BrokerageCycle, Decision, PandaQueue, Site, Task
from brokerage.plugins import plugin_registry
from brokerage.services.decisions import DecisionToStore, cycle_start, decision_row

from .pages import _insert_jobs
from .runner import Row, benchmark, insert_series, time_pages


def _insert_decisions(*, count: int, template: Decision, first_task: int, tasks: int) -> None:
    """count copies of `template` spread over the tasks, a fifth of them pending."""
    insert_series(
        Decision,
        count=count,
        computed={
            "task": f"{first_task} + n %% {tasks}",
            "jobsetID": "n",
            # a fifth pending (nothing chosen), as the database's invariant wants
            "outcome": "CASE WHEN n %% 5 = 0 THEN 'pending' ELSE 'assigned' END",
            "chosen": f"CASE WHEN n %% 5 = 0 THEN '' ELSE '{template.chosen}' END",
        },
        value_of=lambda field: getattr(template, field.attname),
    )


@benchmark("api")
def api(*, quick: bool = False) -> list[Row]:
    """Median latency of /api/v1/decisions/ (list, filtered), /api/v1/decisions/{id}/ and /api/v1/jobs/."""
    jobs, decisions = (20_000, 2_000) if quick else (1_000_000, 100_000)
    now = timezone.now()
    with transaction.atomic():
        site = Site.objects.create(name="BENCH-API-SITE", role="nucleus")
        queues = [PandaQueue.objects.create(name=f"BENCH-API-Q{i:02d}", site=site) for i in range(50)]
        tasks = Task.objects.bulk_create(
            Task(taskName=f"bench.api.{i}", status="running", creationDate=now, modificationTime=now)
            for i in range(1000)
        )
        _insert_jobs(count=jobs, task_of=f"{tasks[0].pk} + n %% 1000", queues=[q.name for q in queues], now=now)
        scenario = parse_scenario(job_brokerage_scenario(queues=1000, seed=1))
        broker = plugin_registry().get(scenario.plugin)()
        frame = broker.frame(scenario)
        cycle = cycle_start(plugin=scenario.plugin, now=now, frame=frame)
        engine_decision = broker.decide(scenario)
        template = decision_row(cycle=cycle, item=DecisionToStore(engine_decision, task_id=tasks[0].pk))
        _insert_decisions(count=decisions, template=template, first_task=tasks[0].pk, tasks=1000)
        with connection.cursor() as cursor:  # every decision with its full trace, as the cycles store them
            cursor.execute(
                "INSERT INTO brokerage_decision_traces (decision_id, created, trace) "
                "SELECT id, created, %s FROM brokerage_decisions WHERE cycle_id = %s",
                [trace_encode(engine_decision, frame=frame), cycle.pk],
            )
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE panda_jobs")
                cursor.execute("ANALYZE brokerage_decisions")
                cursor.execute("ANALYZE brokerage_decision_traces")
        some = Decision.objects.order_by("-pk").values_list("pk", flat=True)[decisions // 2]
        repeat = 5 if quick else 25
        requests = [
            (name, url, lambda name: {"request": name})
            for name, url in (
                ("decision list", "/api/v1/decisions/"),
                ("decision list filtered", f"/api/v1/decisions/?plugin={scenario.plugin}&outcome=pending"),
                ("decision list of a task", f"/api/v1/decisions/?jediTaskID={tasks[7].pk}"),
                ("decision detail", f"/api/v1/decisions/{some}/"),
                ("job list", "/api/v1/jobs/"),
            )
        ]
        rows = time_pages(
            "api", requests, repeat=repeat, params={"jobs": jobs, "decisions": decisions, "database": connection.vendor}
        )
        transaction.set_rollback(True)
    BrokerageCycle.objects.filter(pk=cycle.pk).delete()
    return rows
