"""Event ranges for real pilots (issue 52): getEventRanges hands an ES job its ready ranges (sent), updateEventRanges
takes their ends in both of pilot 3.7's shapes (version 0: a list of ranges, or one; version 1: a zip's ranges), and
the final updateJob ends the ES job from what was reported (services/event_service.py, reported=True). A jumbo job
takes the ranges of its task's co-jumbo jobs that have not started."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from brokerage.models import Event, Job
from brokerage.services.event_service import pilot_event_ranges_get
from brokerage.states import CO_JUMBO_JOB, ES_JOB, JUMBO_JOB, WAITING_CO_JUMBO
from tests import factories
from tests.brokerage.test_dispatcher import pilot_client, queue  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def es_job(task, *, ranges, status="running", event_service=ES_JOB, site="LOCAL_PILOT", **fields):
    job = factories.JobFactory(
        task=task, jobStatus=status, eventService=event_service, computingSite=site, jobsetID=3, maxAttempt=3,
        attemptNr=1, **fields,
    )  # fmt: skip
    dataset = factories.DatasetFactory(task=task, type="input", status="ready")
    file = factories.DatasetFileFactory(dataset=dataset, status="running", nEvents=250 * ranges, lfn="EVNT.01._1.root")
    for number in range(ranges):
        factories.EventFactory(
            file=file, PandaID=job.pk, status="ready", job_processID=number, def_min_eventID=250 * number,
            def_max_eventID=250 * number + 249,
        )  # fmt: skip
    return job, file


def test_a_pilot_gets_its_ranges_reports_them_and_its_job_ends_from_them(queue):  # noqa: F811
    task = factories.TaskFactory(status="running", eventService=1, taskParams={"maxAttemptEsJob": 3})
    job, file = es_job(task, ranges=3)
    pilot = pilot_client("change_job")
    asked = {"pandaID": job.pk, "jobsetID": 3, "taskID": task.pk, "nRanges": 2}
    answer = pilot.post("/server/panda/getEventRanges", asked).json()
    assert answer["StatusCode"] == 0
    first, second = answer["eventRanges"]
    assert first == {
        "eventRangeID": f"{task.pk}-{job.pk}-{file.pk}-0-0", "startEvent": 0, "lastEvent": 249,
        "LFN": "EVNT.01._1.root", "GUID": file.GUID, "scope": file.scope,
    }  # fmt: skip
    assert second["eventRangeID"].endswith("-1-0")
    assert sorted(Event.objects.filter(PandaID=job.pk).values_list("status", flat=True)) == ["ready", "sent", "sent"]
    # version 0: the first range failed (sent as one range, not a list); version 1: the second finished in a zip
    failed = {"version": 0, "eventRanges": json.dumps({"eventRangeID": first["eventRangeID"], "eventStatus": "failed"})}
    assert pilot.post("/server/panda/updateEventRanges", failed).json() == {
        "StatusCode": 0, "Returns": [True], "Command": None
    }  # fmt: skip
    zipped = [{"zipFile": {"numEvents": 1, "lfn": "z.tar"}, "eventRanges": [
        {"eventRangeID": second["eventRangeID"], "eventStatus": "finished"},
        {"eventRangeID": "1-2-3-4-5", "eventStatus": "finished"},  # no such range
    ]}]  # fmt: skip
    answer = pilot.post("/server/panda/updateEventRanges", {"version": 1, "eventRanges": json.dumps(zipped)}).json()
    assert answer["Returns"] == [True, False]
    # the final update: 1 range finished, 1 failed (attempt 1 of 3: ready again), 1 never taken: es_retry, a consumer
    # takes the two left
    update = {"jobId": job.pk, "state": "finished", "node": "wn1"}
    assert pilot.post("/server/panda/updateJob", update).json()["StatusCode"] == 0
    job.refresh_from_db()
    assert (job.jobStatus, job.jobSubStatus, job.taskBufferErrorCode) == ("merging", "es_retry", 111)
    consumer = Job.objects.exclude(pk=job.pk).get(task=task)
    assert sorted(Event.objects.filter(PandaID=consumer.pk).values_list("status", "attemptNr")) == [
        ("ready", 0), ("ready", 1)
    ]  # fmt: skip
    assert list(Event.objects.filter(PandaID=job.pk).values_list("status", flat=True)) == ["done"]


def test_bad_requests_are_answered_in_the_protocol(queue):  # noqa: F811
    pilot = pilot_client("change_job")
    assert pilot.post("/server/panda/getEventRanges", {"pandaID": "x"}).json()["StatusCode"] == 50
    assert pilot.post("/server/panda/updateEventRanges", {"eventRanges": "{"}).json()["StatusCode"] == 50
    bad = json.dumps([{"eventRangeID": "a-b", "eventStatus": "finished"}, {"eventRangeID": "1-2-3-4-5", "x": 1}])
    assert pilot.post("/server/panda/updateEventRanges", {"eventRanges": bad}).json()["Returns"] == [False, False]
    # a job that is no ES job gets no range; no token, no ranges
    plain = factories.JobFactory(jobStatus="running", computingSite="LOCAL_PILOT")
    assert pilot.post("/server/panda/getEventRanges", {"pandaID": plain.pk, "nRanges": 5}).json()["eventRanges"] == []
    assert pilot_client().post("/server/panda/getEventRanges", {"pandaID": plain.pk}).json()["StatusCode"] == 60


def test_a_jumbo_job_takes_the_ranges_of_co_jumbo_jobs_not_started(queue):  # noqa: F811
    task = factories.TaskFactory(status="running", eventService=1, useJumbo="R", taskParams={"nJumboJobs": 1})
    fake, _ = es_job(task, ranges=2, status="waiting", event_service=CO_JUMBO_JOB, site=WAITING_CO_JUMBO)
    started, _ = es_job(task, ranges=1, status="running", event_service=CO_JUMBO_JOB)
    jumbo = factories.JobFactory(task=task, jobStatus="running", eventService=JUMBO_JOB, computingSite="LOCAL_PILOT")
    ranges = pilot_event_ranges_get(job_id=jumbo.pk, n_ranges=10, now=timezone.now())
    assert [r["eventRangeID"].split("-")[1] for r in ranges] == [str(fake.pk), str(fake.pk)]
    assert set(Event.objects.filter(PandaID=fake.pk).values_list("status", "is_jumbo")) == {("sent", True)}
    assert set(Event.objects.filter(PandaID=started.pk).values_list("status", flat=True)) == {"ready"}
