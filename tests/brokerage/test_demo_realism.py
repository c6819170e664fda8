"""Demo data an ATLAS shifter would not trip over (issue 35, finding 9)."""

from datetime import UTC, datetime

import pytest

from brokerage.models import DiracJob, Site, Task
from brokerage.services.demo_grid import demo_grid_build
from brokerage.services.status import status_transition_many
from brokerage.services.task_commands import TaskCommandRefused, task_reassign
from brokerage.task_actions import task_actions_available

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def test_cern_prod_is_in_switzerland_and_analysis_tasks_are_named_as_users_name_them():
    demo_grid_build(size="small", now=NOW, seed=2026)
    cern = Site.objects.get(name="CERN-PROD")
    assert (cern.cloud, cern.country) == ("CERN", "Switzerland")
    # the Tier-1s take the other clouds, each named after its own
    assert all(site.name.startswith(site.cloud) for site in Site.objects.filter(role="nucleus").exclude(pk=cern.pk))
    assert not Site.objects.filter(role="nucleus", cloud="CERN").exclude(pk=cern.pk).exists()
    analysis = list(Task.objects.filter(prodSourceLabel="user").values_list("taskName", "userName", "workingGroup"))
    assert analysis
    for name, user, group in analysis:
        # a working group's outputs are named after the group (group.<group>.…), a user's after the user
        assert name.startswith(f"group.{group}." if group else f"user.{user}."), name
    assert all(
        name.startswith("mc23_13p6TeV.")
        for name in Task.objects.filter(prodSourceLabel="managed").values_list("taskName", flat=True)
    )


def test_an_analysis_task_is_never_offered_or_allowed_a_nucleus_reassignment():
    demo_grid_build(size="small", now=NOW, seed=2026)
    task = Task.objects.filter(prodSourceLabel="user").first()
    Task.objects.filter(pk=task.pk).update(status="ready")
    task.refresh_from_db()
    assert "reassign" not in task_actions_available(task)
    with pytest.raises(TaskCommandRefused, match="analysis task"):
        task_reassign(task_id=task.pk, nucleus="CERN-PROD", actor="test", now=NOW)
    production = Task.objects.filter(prodSourceLabel="managed").first()
    Task.objects.filter(pk=production.pk).update(status="ready")
    production.refresh_from_db()
    assert "reassign" in task_actions_available(production)


def test_a_dirac_jobs_minor_status_follows_its_major_status():
    job = DiracJob.objects.create(status="Matched", minorStatus="Assigned", submissionTime=NOW, lastUpdateTime=NOW)
    move = dict(model=DiracJob, ids=[job.pk], now=NOW)
    status_transition_many(from_status="Matched", to_status="Running", **move)
    job.refresh_from_db()
    assert (job.status, job.minorStatus) == ("Running", "Application")
    status_transition_many(from_status="Running", to_status="Done", **move)
    job.refresh_from_db()
    assert (job.status, job.minorStatus) == ("Done", "Execution Complete")
    failed = DiracJob.objects.create(
        status="Running", minorStatus="Application", submissionTime=NOW, lastUpdateTime=NOW
    )
    status_transition_many(model=DiracJob, ids=[failed.pk], from_status="Running", to_status="Failed", now=NOW)
    failed.refresh_from_db()
    assert failed.minorStatus == "Application Finished With Errors"


@pytest.mark.django_db(transaction=True)
def test_demo_tasks_are_numbered_like_atlas_so_pbook_takes_them_for_tasks():
    """pbook takes an id below 10**7 for a request id (panda-client 2.2.0, PBookCore.is_reqid)."""
    from brokerage.services.demo_grid import task_ids_from
    from tests import factories

    task_ids_from(first=45_000_000)
    first = factories.TaskFactory()
    task_ids_from(first=1_000)  # never back: ids stay unique
    second = factories.TaskFactory()
    assert (first.pk, second.pk) == (45_000_000, 45_000_001)
