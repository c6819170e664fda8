"""The jumbo watchdog round and the co-jumbo check on the database (brokerage.services.jumbo; seed 002, "Jumbo jobs
and co-jumbo jobs", "Jumbo job switcher"), both profiles, with worked numbers: what each action writes, what the
status log says, and how co-jumbo jobs end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.adapters.job_brokerage import job_set_inputs
from brokerage.models import DatasetFile, Event, GdpConfig, Job, Task, TaskStatusLog
from brokerage.selectors.gdpconfig import gdpconfig_cache_clear
from brokerage.selectors.jumbo import jumbo_task_facts
from brokerage.selectors.timeouts import job_timeout_states
from brokerage.services.jumbo import co_jumbo_check, jumbo_watch_run
from brokerage.services.retries import job_inputs_after_end
from brokerage.states import CO_JUMBO_JOB, ES_MERGE_JOB, JUMBO_JOB, WAITING_CO_JUMBO
from tests import factories

pytestmark = pytest.mark.django_db

NOW = datetime(2027, 2, 1, 12, 0, tzinfo=UTC)


def gdpconfig(**values):
    for key, value in values.items():
        GdpConfig.objects.create(key=key, value=str(value), component="jumbo_dog", app="jedi")
    gdpconfig_cache_clear()


def es_task(*, events=2_000_000, use_jumbo="", priority=400, status="running", **params):
    task = factories.TaskFactory(
        status=status, eventService=1, useJumbo=use_jumbo, currentPriority=priority,
        taskParams={"nFilesPerJob": 1, **params},
    )  # fmt: skip
    dataset = factories.DatasetFactory(task=task, type="input", status="ready", nFiles=2, nEvents=events)
    return task, dataset


@pytest.fixture
def jumbo_queue():
    return factories.PandaQueueFactory(name="CERN_JUMBO", catchall="useJumboJobs,jobseed=all", status="online")


def test_the_seed_round_enables_the_task_with_most_events_left(jumbo_queue):
    big, _ = es_task(events=2_000_000)
    small, _ = es_task(events=1_500_000)
    decided = jumbo_watch_run(now=NOW)
    assert [(a.task_id, a.action) for a in decided.actions] == [(big.pk, "enable")]
    big.refresh_from_db()
    assert (big.useJumbo, big.taskParams["nJumboJobs"], big.taskParams["maxJumboPerSite"]) == ("W", 1, 1)
    assert Task.objects.get(pk=small.pk).useJumbo == ""
    (log,) = TaskStatusLog.objects.filter(task=big, actor="jumbo watchdog")
    assert log.old_status == log.new_status == "running"
    assert log.reason.startswith("enable most_events_left (events_to_process=2000000, JUMBO_MIN_EVENTS_ENABLE=1000000")


def test_no_jumbo_queue_no_enabling():
    es_task(events=2_000_000)
    assert jumbo_watch_run(now=NOW).actions == ()


def test_events_processed_count_and_a_task_under_the_limit_is_disabled(jumbo_queue):
    # JUMBO_MIN_EVENTS_DISABLE 100: 1,000 events, 950 processed (0-949 done, by a jumbo job) leaves 50 < 100
    gdpconfig(JUMBO_MIN_EVENTS_DISABLE=100)
    task, dataset = es_task(events=1000, use_jumbo="R", nJumboJobs=1, maxJumboPerSite=1)
    file = factories.DatasetFileFactory(dataset=dataset, status="running", nEvents=1000)
    factories.EventFactory(file=file, status="done", def_min_eventID=0, def_max_eventID=949, is_jumbo=True)
    factories.EventFactory(file=file, status="ready", def_min_eventID=950, def_max_eventID=999)
    (facts,) = jumbo_task_facts(now=NOW)
    assert (facts.nEvents, facts.nEventsDone, facts.remaining) == (1000, 950, 50)
    jumbo_watch_run(now=NOW)
    task.refresh_from_db()
    assert (task.useJumbo, task.taskParams["nJumboJobs"], task.taskParams["maxJumboPerSite"]) == ("D", 0, 0)
    assert TaskStatusLog.objects.get(task=task, actor="jumbo watchdog").reason == (
        "disable few_events_left (events_to_process=50, JUMBO_MIN_EVENTS_DISABLE=100)"
    )


def test_the_panda_round_lifts_kicks_and_gives_back_inputs(jumbo_queue):
    gdpconfig(JUMBO_DOG_RULE="panda")
    disabled, _ = es_task(use_jumbo="D", priority=400, events=3_000_000)
    idle, _ = es_task(use_jumbo="P", priority=450, events=3_000_000, nJumboJobs=1)
    factories.JobFactory(task=idle, eventService=JUMBO_JOB, jobStatus="finished", endTime=NOW - timedelta(hours=2))
    urgent, dataset = es_task(use_jumbo="R", priority=900, events=3_000_000, nJumboJobs=1)
    held_by_nobody = factories.DatasetFileFactory(dataset=dataset, status="running", attemptNr=1, maxAttempt=3)
    closed = factories.JobFactory(task=urgent, jobStatus="closed", eventService=CO_JUMBO_JOB)
    DatasetFile.objects.filter(pk=held_by_nobody.pk).update(PandaID=closed.pk)
    factories.JobFactory(task=urgent, eventService=JUMBO_JOB, jobStatus="running")
    jumbo_watch_run(now=NOW)
    assert Task.objects.get(pk=disabled.pk).currentPriority == 500  # JUMBO_PRIO_DISABLED
    idle.refresh_from_db()
    assert idle.useJumbo == "L"  # its only jumbo job ended: kicked
    urgent.refresh_from_db()
    assert urgent.useJumbo == "R"  # a jumbo job runs
    file = DatasetFile.objects.get(pk=held_by_nobody.pk)
    assert (file.status, file.attemptNr, file.maxAttempt) == ("ready", 2, 4)


def co_jumbo(task, dataset, *, status="waiting", site=WAITING_CO_JUMBO, created=NOW, events=("finished",)):
    job = factories.JobFactory(
        task=task, eventService=CO_JUMBO_JOB, jobStatus=status, computingSite=site, creationTime=created,
        stateChangeTime=created,
    )  # fmt: skip
    file = factories.DatasetFileFactory(dataset=dataset, status="running", nEvents=500 * len(events), PandaID=job.pk)
    for number, event_status in enumerate(events):
        factories.EventFactory(
            file=file, PandaID=job.pk, status=event_status, job_processID=number, def_min_eventID=500 * number,
            def_max_eventID=500 * number + 499, is_jumbo=event_status == "finished",
        )  # fmt: skip
    return job, file


def test_the_check_finishes_co_jumbo_jobs_whose_events_jumbo_jobs_processed():
    task, dataset = es_task(use_jumbo="R", nJumboJobs=1)
    waiting, waiting_file = co_jumbo(task, dataset, events=("finished", "finished"))
    activated, _ = co_jumbo(task, dataset, status="activated", site="CERN", events=("finished",))
    half, _ = co_jumbo(task, dataset, events=("finished", "ready"))
    assert co_jumbo_check(now=NOW) == {"merging": sorted([waiting.pk, activated.pk])}
    # they end as ES jobs whose payload ended: in merging, waiting (es_wait, 115) while the half-done one of their job
    # set still waits; "Those events are changed to done when co-jumbo jobs are finished"
    assert set(Job.objects.filter(pk__in=[waiting.pk, activated.pk]).values_list("jobStatus", "jobSubStatus",
                                                                                "taskBufferErrorCode")) == {
        ("merging", "es_wait", 115)
    }  # fmt: skip
    assert Job.objects.get(pk=half.pk).jobStatus == "waiting"
    assert set(Event.objects.filter(PandaID=waiting.pk).values_list("status", flat=True)) == {"done"}
    # its file is processed once an ES merge job merged its ranges ("Then co-jumbo jobs generate merge jobs
    # similarly as conventional event service jobs")
    assert DatasetFile.objects.get(pk=waiting_file.pk).status == "running"
    es_merge = factories.JobFactory(task=task, isMerge=True, eventService=ES_MERGE_JOB, jobStatus="finished")
    Job.objects.filter(pk__in=[waiting.pk, activated.pk]).update(mergeJob=es_merge)
    job_inputs_after_end(finished=[es_merge.pk], failed=[], now=NOW)
    assert Job.objects.get(pk=waiting.pk).jobStatus == "finished"
    assert set(Event.objects.filter(PandaID=waiting.pk).values_list("status", flat=True)) == {"merged"}
    assert DatasetFile.objects.get(pk=waiting_file.pk).status == "finished"


def test_a_fake_co_jumbo_job_is_given_back_after_six_hours_or_when_jumbo_is_disabled():
    task, dataset = es_task(use_jumbo="R", nJumboJobs=1)
    old, old_file = co_jumbo(task, dataset, created=NOW - timedelta(hours=6, seconds=1), events=("ready",))
    young, _ = co_jumbo(task, dataset, created=NOW - timedelta(hours=5, minutes=59), events=("ready",))
    assert co_jumbo_check(now=NOW) == {"closed": [old.pk]}
    old.refresh_from_db()
    assert (old.jobStatus, old.jobSubStatus) == ("closed", "co_jumbo_reset")
    # its range cancelled, its file ready again with one attempt more, for a real co-jumbo job
    assert list(Event.objects.filter(PandaID=old.pk).values_list("status", flat=True)) == ["cancelled"]
    old_file.refresh_from_db()
    assert (old_file.status, old_file.attemptNr, old_file.maxAttempt) == ("ready", 1, 4)
    assert old_file.pk not in job_set_inputs([task.pk])[3]  # its events are cut again from the first
    Task.objects.filter(pk=task.pk).update(useJumbo="D")
    assert co_jumbo_check(now=NOW) == {"closed": [young.pk]}


def test_a_waiting_co_jumbo_job_has_no_waiting_timeout():
    task, dataset = es_task(use_jumbo="R", nJumboJobs=1)
    job, _ = co_jumbo(task, dataset, created=NOW - timedelta(hours=5), events=("ready",))
    other = factories.JobFactory(task=task, jobStatus="waiting", stateChangeTime=NOW - timedelta(hours=1))
    states = job_timeout_states(job_ids=[job.pk, other.pk], now=NOW)
    assert states[job.pk].rule is None
    assert "co-jumbo check" in states[job.pk].sentence
    assert (states[other.pk].rule, states[other.pk].timed_out) == ("waiting", True)  # 1 h > the seed's 30 min
