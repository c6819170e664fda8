"""What-if previews of a stored task (brokerage/selectors/preview.py)."""

import pytest
from django.utils import timezone

from brokerage.gdpconfig.registry import REGISTRY
from brokerage.selectors.preview import PreviewUnavailable, broker_preview_task
from brokerage.services.jobs import job_generation_cycle_run
from tests import factories
from tests.jobs.conftest import make_one_queue_grid, make_ready_task

pytestmark = pytest.mark.django_db

PLUGINS = ("atlas_prod_task", "atlas_prod_job")  # a production task's two brokerages


def extremes(parameter) -> list:
    """The smallest and the largest value each numeric parameter accepts (a huge one where it has no maximum)."""
    huge = 10**30 if parameter.value_type == "int" else 1.7e308
    low = parameter.minimum if parameter.minimum is not None else -huge
    high = parameter.maximum if parameter.maximum is not None else huge
    cast = int if parameter.value_type == "int" else float
    return [cast(low), cast(high)]


@pytest.fixture
def task_with_jobs():
    """A task whose first jobs are generated: its files are used and its dataset's nEvents is unknown (0), as
    in the API fuzz's fixture."""
    make_one_queue_grid()
    work_queue = factories.WorkQueueFactory(queue_name="MC_16", queue_share=None)
    task = make_ready_task(work_queue, files=3, nScoutJobs=0)
    job_generation_cycle_run(work_queue_id=work_queue.pk, now=timezone.now())
    return task


@pytest.mark.parametrize("plugin", PLUGINS)
def test_a_task_with_used_files_is_previewed_by_both_its_brokerages(task_with_jobs, plugin):
    # Before: the task brokerage's snapshot carried RW = (0 − 1,500 events) × 300 = −450,000 for NUC and the
    # engine refused it, a 400 for a valid request to the API
    result = broker_preview_task(task_id=task_with_jobs.pk, now=timezone.now(), overrides={}, plugin=plugin)
    assert result["decision"]["plugin"] == plugin
    assert result["decision"]["outcome"]


def test_a_production_task_is_not_previewed_as_analysis(task_with_jobs):
    # before, the analysis preview of a production task answered with a production job decision
    with pytest.raises(PreviewUnavailable, match="jobs are brokered by atlas_prod_job, not atlas_anal_job"):
        broker_preview_task(task_id=task_with_jobs.pk, now=timezone.now(), overrides={}, plugin="atlas_anal_job")


def test_every_numeric_parameter_at_its_extremes_gives_a_decision(task_with_jobs):
    """Overrides the API accepts (within the registry's bounds) never break the engine: no overflow, no
    infinite or negative quantity, for each plugin."""
    failures = []
    for parameter in REGISTRY:
        if parameter.value_type not in ("int", "float"):
            continue
        for value in extremes(parameter):
            for plugin in PLUGINS:
                try:
                    result = broker_preview_task(
                        task_id=task_with_jobs.pk, now=timezone.now(), overrides={parameter.key: value}, plugin=plugin
                    )
                except Exception as error:  # every failure is listed with its cause
                    failures.append(f"{parameter.key}={value} {plugin}: {error!r}")
                else:
                    assert result["overrides"] == {parameter.key: value}
    assert failures == []
