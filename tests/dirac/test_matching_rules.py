"""DIRAC task-queue matching (seed 003): every rule, DIRAC's own integration cases (REFERENCE.md), the
selection order and the priorities, as plain functions."""

import random
from collections import Counter

import pytest

from brokerage.engine.dirac.rules import (
    Resource,
    TaskQueue,
    cpu_segment,
    match,
    no_match_reasons,
    real_priority,
    select_job,
    select_task_queue,
    task_queue_priorities,
)

SETUP = "LHCb-Production"


def tq(id, **fields):
    base = {"ownerDN": "/CN=alice", "ownerGroup": "lhcb_user", "setup": SETUP, "cpuTime": 500}
    sets = {k: frozenset(v) for k, v in fields.items() if isinstance(v, list | set | tuple)}
    plain = {k: v for k, v in fields.items() if k not in sets}
    return TaskQueue(id=id, **{**base, **plain}, **sets)


def resource(**fields):
    tags = fields.pop("tags", ())
    return Resource(**{"setup": SETUP, "cpuTime": 100000, **fields}, tags=frozenset(tags))


def matching(queues, res):
    return [q.id for q in queues if not no_match_reasons(q, res)]


@pytest.mark.parametrize(
    ("cpu", "segment"),
    [(10, 500), (500, 500), (501, 5000), (5000, 5000), (49999, 50000), (300000, 300000), (10**7, 300000)],
)
def test_cpu_time_moves_to_the_next_segment(cpu, segment):
    assert cpu_segment(cpu) == segment


def test_configured_segments():
    assert cpu_segment(2000, (360, 1800, 3600)) == 3600


def test_sites_case():
    # task queues for [CERN], [IN2P3], [CERN, IN2P3]: CERN matches 1 and 3, no site matches all
    queues = [tq(1, sites=["CERN"]), tq(2, sites=["IN2P3"]), tq(3, sites=["CERN", "IN2P3"])]
    assert matching(queues, resource(site="CERN")) == [1, 3]
    assert matching(queues, resource()) == [1, 2, 3]


def test_banned_sites_case():
    queues = [tq(1, bannedSites=["CERN", "IN2P3"]), tq(2, bannedSites=["IN2P3", "Test"])]
    assert matching(queues, resource(site="Test")) == [1]
    assert matching(queues, resource(site="CERN")) == [2]
    assert matching(queues, resource(site="IN2P3")) == []


def test_platforms_case():
    queues = [
        tq(1, platforms=["centos7"]),
        tq(2, platforms=["ubuntu"]),
        tq(3, platforms=["centos7", "slc6"]),
        tq(4, platforms=["debian", "ubuntu"]),
    ]
    assert matching(queues, resource(platform="centos7")) == [1, 3]
    assert matching(queues, resource(platform="slc5")) == []
    queues.append(tq(5))
    assert matching(queues, resource(platform="slc5")) == [5]


def test_tags_case():
    queues = [
        tq(1, tags=["MultiProcessor"]),
        tq(2, tags=["MultiProcessor", "GPU"]),
        tq(3),
        tq(4, tags=["SingleProcessor"]),
        tq(5, tags=["SingleProcessor", "MultiProcessor"]),
    ]
    assert matching(queues, resource(tags=["MultiProcessor", "GPU"])) == [1, 2, 3]
    assert matching(queues, resource()) == [3]


def test_any_tag_on_the_queue_is_required_like_any_tag_and_on_the_resource_drops_the_condition():
    # seed 003 says nothing of tags; DIRAC v9 decides for every profile (TaskQueueDB.__generateTQMatchSQL): a
    # resource offering ANY (any case, punctuation ignored) adds no tag condition, a queue's ANY is a plain tag
    queues = [tq(1, tags=["ANY"]), tq(2, tags=["GPU"]), tq(3)]
    assert matching(queues, resource()) == [3]
    assert matching(queues, resource(tags=["ANY"])) == [1, 2, 3]
    assert matching(queues, resource(tags=["'any'"])) == [1, 2, 3]
    assert no_match_reasons(queues[0], resource(tags=["GPU"])) == [("tags", {"required": ["ANY"], "offered": ["GPU"]})]


def test_cpu_time_case():
    assert no_match_reasons(tq(1, cpuTime=5000), resource(cpuTime=10)) == [
        ("cpu_time", {"required": 5000, "offered": 10})
    ]
    assert matching([tq(1, cpuTime=5000)], resource(cpuTime=5000)) == [1]


def test_setup_grid_ce_and_pilot_type():
    assert no_match_reasons(tq(1, setup="Other"), resource())[0][0] == "setup"
    assert no_match_reasons(tq(1, gridCEs=["ce1.cern.ch"]), resource(gridCE="ce2.cern.ch"))[0][0] == "grid_ce"
    assert matching([tq(1, gridCEs=["ce1.cern.ch"])], resource(gridCE="ce1.cern.ch")) == [1]
    assert no_match_reasons(tq(1, pilotTypes=["private"]), resource())[0][0] == "pilot_type"


def test_private_pilots_match_their_group_and_owner_unless_job_sharing():
    queues = [tq(1), tq(2, ownerDN="/CN=bob"), tq(3, ownerGroup="lhcb_mc")]
    private = resource(ownerGroup="lhcb_user", ownerDN="/CN=alice")
    assert matching(queues, private) == [1]
    sharing = resource(ownerGroup="lhcb_user", ownerDN="/CN=alice", jobSharing=True)
    assert matching(queues, sharing) == [1, 2]
    assert matching(queues, resource()) == [1, 2, 3]  # a generic pilot takes any owner


def test_every_failed_rule_is_reported():
    failed = no_match_reasons(
        tq(1, cpuTime=50000, bannedSites=["CERN"], tags=["GPU"]), resource(site="CERN", cpuTime=10)
    )
    assert [code for code, _ in failed] == ["cpu_time", "banned_site", "tags"]


def test_highest_cpu_time_first_then_rand_over_priority():
    queues = [tq(1, cpuTime=500, priority=1e6), tq(2, cpuTime=5000, priority=1), tq(3, cpuTime=5000, priority=1)]
    chosen, top, keys = select_task_queue(queues, random.Random(1))
    assert top == [2, 3]
    assert chosen.id in (2, 3)
    assert keys[chosen.id] == min(keys.values())


def test_rand_over_priority_is_literal_not_proportional():
    # REFERENCE.md: priority ratio 2 wins 75 % of draws (P(U1/2 < U2) = 3/4), not 67 %
    queues = [tq(1, priority=2.0), tq(2, priority=1.0)]
    rng = random.Random(7)
    wins = Counter(select_task_queue(queues, rng)[0].id for _ in range(20000))
    assert wins[1] / 20000 == pytest.approx(0.75, abs=0.015)


def test_job_selection_takes_the_first_ten_of_the_drawn_priority_by_id():
    jobs = [(job_id, 5) for job_id in range(100, 130)] + [(50, 1)]
    seen = Counter()
    rng = random.Random(3)
    for _ in range(2000):
        job, priority, first = select_job(jobs, rng)
        seen[job] += 1
        if priority == 5:
            assert first == list(range(100, 110))
            assert job in first
    assert set(seen) <= set(range(100, 110)) | {50}
    assert seen[50] < 200  # priority 1 against thirty jobs of priority 5


def test_real_priority():
    assert (real_priority(0), real_priority(1), real_priority(9), real_priority(10)) == (1e-5, 1, 9, 1e6)


def test_task_queue_priorities_from_group_shares():
    # group A (share 1000) has owners x and y: 500 each; x's queues average 1 and 3 → 125 and 375
    queues = [
        {"id": 1, "ownerGroup": "A", "ownerDN": "x", "averagePriority": 1},
        {"id": 2, "ownerGroup": "A", "ownerDN": "x", "averagePriority": 3},
        {"id": 3, "ownerGroup": "A", "ownerDN": "y", "averagePriority": 2},
        {"id": 4, "ownerGroup": "B", "ownerDN": "z", "averagePriority": 0},
    ]
    priorities = task_queue_priorities(queues, group_shares={"B": 10})
    assert priorities == {1: 125.0, 2: 375.0, 3: 500.0, 4: 10.0}
    tiny = task_queue_priorities(
        [{"id": 9, "ownerGroup": "C", "ownerDN": "w", "averagePriority": 1}], group_shares={"C": 0}
    )
    assert tiny == {9: 0.001}


def test_match_is_reproducible_from_its_seed():
    queues = [tq(1), tq(2)]
    jobs = {1: [(10, 1), (11, 1)], 2: [(20, 3)]}
    first = match(queues, jobs, resource(), seed=42)
    assert match(queues, jobs, resource(), seed=42).job == first.job
    assert match(queues, {}, resource(), seed=1).job is None
