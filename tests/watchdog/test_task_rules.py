"""Seed 002's rules around jobs and tasks, with worked numbers: memory increase, scout-derived parameters,
exhausted and throttled tasks."""

from datetime import UTC, datetime, timedelta

import pytest

from brokerage.states import throttled_period_minutes
from brokerage.watchdog import (
    ScoutJob,
    exhausted_reason,
    next_ram_count,
    scout_task_parameters,
    task_needs_more_memory,
    throttled_attempt,
)

T0 = datetime(2026, 11, 1, 12, tzinfo=UTC)
MB = 1024**2


@pytest.mark.parametrize(
    ("max_pss", "ram", "expected"),
    [
        (1500, 1000, 2000),  # max(1500, 1000) → next above is 2000
        (900, 2000, 3000),  # the current ramCount counts too: above 2000
        (3000, None, 4000),  # exactly a step: the next one above
        (4500, 4000, 6000),
        (7999, 0, 8000),
        (9000, 8000, 8000),  # the list ends at 8000
        (None, None, 1000),
    ],
)
def test_next_ram_count(max_pss, ram, expected):
    assert next_ram_count(max_pss_mb=max_pss, ram_count=ram) == expected


def test_task_memory_increase_at_30_percent():
    assert task_needs_more_memory(failed_for_memory=3, jobs=10)
    assert not task_needs_more_memory(failed_for_memory=2, jobs=10)
    assert not task_needs_more_memory(failed_for_memory=0, jobs=0)


def scout(*, pss_mb=4000, cores=8, hours=2.0, events=100, input_mb=2000, output_mb=500, power=10.0, disk_mb=0.0):
    return ScoutJob(
        maxPSS_kB=pss_mb * 1024,
        coreCount=cores,
        startTime=T0,
        endTime=T0 + timedelta(hours=hours),
        nEvents=events,
        inputBytes=input_mb * MB,
        outputBytes=output_mb * MB,
        corePower=power,
        diskReadBytes=disk_mb * MB,
        diskWriteBytes=0.0,
    )


def test_scout_parameters_with_worked_numbers():
    # five 8-core scouts of 2 h on 100 events; the slowest (95th percentile of wall × corePower) ran 3 h
    scouts = [scout(pss_mb=pss) for pss in (9000, 10000, 12000, 11000)] + [scout(hours=3.0, pss_mb=9500)]
    params = scout_task_parameters(
        scouts, ram_unit="MBPerCore", base_ram_count=1000, cpu_efficiency=90, base_walltime=600
    )
    # ramCount = (max PSS 12000 − baseRamCount 1000) / 8 cores = 1375 MB per core
    assert params["ramCount"] == 1375
    # cpuTime = max(0, 10800 − 600) × 10 × 8 × 0.9 / 100 events × 1.5 = 11016 HS06 s per event
    assert params["cpuTime"] == 11016
    # ioIntensity = (2000 + 500) MB × 1024 kB/MB / 7200 s / 8 cores = 44.4 → 45 kB/s per core (the 2 h scouts)
    assert params["ioIntensity"] == 45
    # outDiskCount = 500 MB × 1024 kB / 2000 MB of input = 256 kB per MB; walltime = 10800 s / 2000 MB = 5.4 → 6
    assert params["outDiskCount"] == 256
    assert params["walltime"] == 6
    assert params["cpuTimeUnit"] == "HS06sPerEvent"


def test_scout_ram_in_mb_when_not_per_core():
    params = scout_task_parameters(
        [scout(pss_mb=3000)] * 5, ram_unit="MB", base_ram_count=1000, cpu_efficiency=90, base_walltime=600
    )
    assert params["ramCount"] == 3000


def test_disk_io_from_local_disk_bytes():
    # 7200 MB read in 2 h on 8 cores: 7200 × 1024 / 7200 / 8 = 128 kB/s per core
    params = scout_task_parameters(
        [scout(disk_mb=7200)] * 5, ram_unit="MB", base_ram_count=0, cpu_efficiency=None, base_walltime=None
    )
    assert params["diskIO"] == 128


def test_cpu_efficiency_zero_gives_zero_cpu_time():
    params = scout_task_parameters([scout()] * 5, ram_unit="MB", base_ram_count=0, cpu_efficiency=0, base_walltime=600)
    assert params["cpuTime"] == 0


def test_five_scouts_are_needed():
    with pytest.raises(ValueError, match="5 finished scouts"):
        scout_task_parameters([scout()] * 4, ram_unit="MB", base_ram_count=0, cpu_efficiency=90, base_walltime=600)


def test_exhausted_production_when_scouts_need_more_than_twice_the_cpu():
    assert exhausted_reason(analysis=False, scout_cpu_time=601, defined_cpu_time=300) is not None
    assert exhausted_reason(analysis=False, scout_cpu_time=600, defined_cpu_time=300) is None


def test_exhausted_production_when_attempts_are_used_up_and_configured_to_wait():
    assert exhausted_reason(analysis=False, attempts_used_up=True, exhausted_configured=True) is not None
    assert exhausted_reason(analysis=False, attempts_used_up=True, exhausted_configured=False) is None


def test_exhausted_analysis_with_many_short_scouts_and_many_jobs():
    assert exhausted_reason(analysis=True, short_scouts=6, expected_jobs=1001) is not None
    assert exhausted_reason(analysis=True, short_scouts=5, expected_jobs=5000) is None
    assert exhausted_reason(analysis=True, short_scouts=6, expected_jobs=1000) is None


def test_exhausted_when_timed_out_pending_in_brokerage():
    assert exhausted_reason(analysis=True, pending_timed_out=True) == "timed out while pending in the brokerage"
    assert exhausted_reason(analysis=False, pending_timed_out=True) == "timed out while pending in the brokerage"


@pytest.mark.parametrize(
    ("attempt", "throttled", "minutes"), [(4, False, 0), (5, True, 120), (10, True, 480), (15, True, 1080)]
)
def test_throttled_task_every_fifth_attempt(attempt, throttled, minutes):
    # 120 × int(max(attemptNr)/5)² minutes
    assert throttled_attempt(attempt) is throttled
    if throttled:
        assert throttled_period_minutes(attempt) == minutes
