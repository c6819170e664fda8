"""What the simulator's pilots report when a job ends (brokerage.services.simulator._pilot_reports_apply): the
measured columns of every ended job, a failure's error columns, and the one failure in five that ran out of
memory. Worked numbers from the job's key: `_draw(pk, salt)` is the simulator's stable draw."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.job_errors import PILOT
from brokerage.models import Job
from brokerage.services.simulator import _draw, _pilot_reports_apply
from tests import factories

pytestmark = pytest.mark.django_db

END = datetime(2026, 11, 1, 12, tzinfo=UTC)


def _ended(pk: int, status: str) -> Job:
    # 8 cores × 2,000 MB a core = 16,000 MB; two hours; 1 GB of input
    return factories.JobFactory(
        pk=pk,
        jobStatus=status,
        coreCount=8,
        minRamCount=2000,
        startTime=END - timedelta(hours=2),
        endTime=END,
        inputFileBytes=1_000_000_000,
    )


def test_a_finished_job_reports_its_cpu_memory_and_output():
    _ended(900001, "finished")
    assert (_draw(900001, 3) % 35, _draw(900001, 4) % 35, _draw(900001, 6) % 30) == (15, 0, 10)
    _pilot_reports_apply(finished=[900001], failed=[], now=END)
    job = Job.objects.get(pk=900001)
    assert job.cpuConsumptionTime == 48_960  # 7,200 s × 8 cores × 85 %
    assert job.maxPSS == 12_288_000  # 16,000 MB × 1,024 × (60 + 15) %
    assert job.maxRSS == 11_468_800  # 16,000 MB × 1,024 × (70 + 0) %
    assert job.outputFileBytes == 200_000_000  # 1 GB × (10 + 10) %
    assert job.pilotErrorCode is None


def test_a_failure_gets_its_drawn_cause_or_runs_out_of_memory_and_a_crash_stays_a_crash():
    for pk in (900002, 900003, 900012):
        _ended(pk, "failed")
    # 900002: one in five (draw 0) ran out of memory; its drawn cause (10 of 15: 1213) keeps no exe error
    # 900003: a demo story's crash: its transform's cause, never the memory, although its draw is 0 too
    # 900012: its draw (2) is not a memory failure; its cause (2 of 15) is the transform's crash
    assert [_draw(pk, 5) % 5 for pk in (900002, 900003, 900012)] == [0, 0, 2]
    assert [_draw(pk, 4) % 15 for pk in (900002, 900012)] == [10, 2]
    _pilot_reports_apply(finished=[], failed=[900002, 900003, 900012], now=END, crashed={900003})
    jobs = {job.pk: job for job in Job.objects.filter(pk__in=(900002, 900003, 900012))}
    memory = jobs[900002]
    assert (memory.pilotErrorCode, memory.pilotErrorDiag) == (1212, PILOT[1212])
    assert (memory.exeErrorCode, memory.exeErrorDiag) == (None, "")
    assert memory.maxPSS == 19_660_800  # 16,000 MB × 1,024 × 1.2: above what the job asked for
    assert memory.cpuConsumptionTime == 48_960
    for crash in (jobs[900003], jobs[900012]):
        assert (crash.pilotErrorCode, crash.exeErrorCode) == (1305, 65)
        assert crash.exeErrorDiag == "Non-zero return code from the transform (65)"
    assert jobs[900003].maxPSS == 13_926_400  # measured, (60 + 25) %: no memory failure for a crash
