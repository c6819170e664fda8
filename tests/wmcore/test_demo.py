"""The demo's WMCore side lives: requests flow to jobs in the pool, the simulator runs and ends them, and the
demo's stuck requests show the reasons they were built for."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokerage.models import WMBSJob, WMCoreElement, WMCoreRequest
from brokerage.services.demo_grid import demo_grid_build
from brokerage.services.simulator import grid_simulate_step
from brokerage.services.wmcore import wmcore_cycle_run

from .conftest import NOW

pytestmark = pytest.mark.django_db


def test_the_demo_flows_and_shows_each_kind_of_stuck_work():
    demo_grid_build(size="small", now=NOW, seed=7)
    now = NOW
    for _ in range(6):
        now += timedelta(seconds=20)
        wmcore_cycle_run(now=now)
        grid_simulate_step(now=now, speed=60)
    statuses = dict(WMCoreRequest.objects.values_list("RequestName", "RequestStatus"))
    assert statuses["pdmvserv_Run2024C_JetHT_ReReco"] in ("running-open", "running-closed", "completed")
    assert statuses["pdmvserv_Run2024E_Tau_xrootd"] in ("running-open", "running-closed", "completed")  # trusted
    assert WMBSJob.objects.filter(state__in=("success", "exhausted")).exists()  # the pool ended some
    stuck = dict(
        WMCoreElement.objects.filter(queue__kind="global", database="queue", Status="Available")
        .exclude(stuck_reason="")
        .values_list("request__RequestName", "stuck_reason")
    )
    assert stuck["pdmvserv_Run2024C_ZeroBias_ReReco"] == "no_resources"  # only at draining CERN
    assert stuck["cmsunified_Run3Summer24_TTto2L_MC"] == "no_site_with_pileup"
    assert stuck["pdmvserv_Run2024B_EGamma_ReReco"] == "site_blacklisted"
