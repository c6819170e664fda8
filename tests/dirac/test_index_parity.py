"""The live matcher's numpy index and the engine's rules answer alike: random task queues in the database and random
resources using every key DIRAC v9 matches, under the seed and dirac profiles. The rule functions are the
reference (tests/dirac/test_dirac_profile.py gives each its worked numbers); this checks the vectorised copy."""

import random
from datetime import UTC, datetime

import pytest

from brokerage.adapters.dirac import engine_task_queues, task_queue_index_read
from brokerage.engine.dirac.rules import Group, MatchRules, Resource, no_match_reasons
from brokerage.gdpconfig import ConfigView
from brokerage.models import DiracTaskQueue
from brokerage.services.dirac import dirac_jobs_submit

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
OWNERS = [("/CN=alice", "lhcb_user"), ("/CN=bob", "lhcb_user"), ("/CN=prod", "lhcb_prod"), ("/CN=carl", "cms_user")]
GROUPS = {
    "lhcb_user": Group(vo="lhcb"),
    "lhcb_prod": Group(vo="lhcb", jobSharing=True),
    "cms_user": Group(vo="cms"),
}
CHOICES = {
    "sites": [[], [], ["CERN"], ["CERN", "RAL"], ["PIC"]],
    "bannedSites": [[], [], ["CERN"], ["RAL", "PIC"]],
    "gridCEs": [[], [], [], ["ce1"], ["ce1", "ce2"]],
    "platforms": [[], [], ["el9"], ["el9", "el8"]],
    "pilotTypes": [[], [], [], ["private"]],
    "tags": [[], [], ["GPU"], ["MultiProcessor", "8Processors"], ["ANY"]],
    "jobTypes": [[], [], ["User"], ["MCSimulation", "Test"]],
}


def random_job(rng):
    owner, group = rng.choice(OWNERS)
    job = {
        "owner": owner,
        "ownerGroup": group,
        "setup": rng.choice(["LHCb-Production", "LHCb-Certification"]),
        "cpuTime": rng.choice([100, 3000, 40000, 200000]),
        "userPriority": rng.randint(0, 10),
        "minRAM": rng.choice([0, 0, 2000, 8000]),
    }
    job.update({name: list(rng.choice(options)) for name, options in CHOICES.items()})
    return job


def random_resource(rng):
    owner, group = rng.choice(OWNERS)
    pilot = rng.choice(["generic", "generic", "private", "group", "owner"])
    tags = frozenset(rng.choice([[], ["GPU"], ["MultiProcessor", "8Processors", "GPU"], ["ANY"]]))
    required = frozenset(rng.choice([[], ["GPU"]])) if "GPU" in tags else frozenset()
    return Resource(
        setup=rng.choice(["LHCb-Production", "LHCb-Certification"]),
        cpuTime=rng.choice([400, 5000, 60000, 400000]),
        site=rng.choice(["", "CERN", "RAL", "PIC", "ANY"]),
        gridCE=rng.choice(["", "", "ce1", "ce2", "any"]),
        platform=rng.choice(["", "el9", "el8", "el7"]),
        pilotType=rng.choice(["", "private"]),
        ownerDN=owner if pilot in ("private", "owner") else "",
        ownerGroup=group if pilot in ("private", "group") else "",
        tags=tags,
        requiredTags=required,
        jobType=rng.choice(["", "", "User", "MCSimulation"]),
        bannedSites=frozenset(rng.choice([[], [], ["CERN"]])),
        bannedTags=frozenset(rng.choice([[], [], ["GPU"]])),
        bannedPlatforms=frozenset(rng.choice([[], ["el8"]])),
        maxRAM=rng.choice([None, 1000, 4000, 16000]),
        vo=rng.choice(["", "lhcb", "cms"]),
        inSiteMask=rng.random() > 0.15,
    )


@pytest.mark.parametrize("profile", ["seed", "dirac"])
def test_index_and_rules_agree_on_random_queues_and_resources(profile):
    rng = random.Random(19)
    dirac_jobs_submit(jobs=[random_job(rng) for _ in range(300)], now=NOW)
    rules = MatchRules.from_config(ConfigView({}, profile=profile))
    index = task_queue_index_read(version="test")
    queues = engine_task_queues(queues=DiracTaskQueue.objects.all())
    assert len(queues) > 150  # enough distinct requirement sets to exercise every rule
    failed_codes = set()
    for _ in range(300):
        resource = random_resource(rng)
        mask = index.matching(resource, rules, GROUPS)
        live = {int(tq_id) for tq_id in index.ids[mask]}
        reasons = {tq.id: no_match_reasons(tq, resource, rules, GROUPS) for tq in queues}
        offline = {tq_id for tq_id, failed in reasons.items() if not failed}
        assert live == offline, resource
        failed_codes |= {code for failed in reasons.values() for code, _ in failed}
    expected = {"owner_group", "owner_dn", "cpu_time", "ram", "site_not_accepted", "banned_site", "grid_ce"}
    expected |= {"platform", "job_type", "tags", "required_tags", "resource_ban"}
    expected |= {"setup", "pilot_type"} if profile == "seed" else set()
    assert expected <= failed_codes
