"""The `dirac` profile (dirac 9.1.22 TaskQueueDB and Matcher) beside seed 003, and the resource keys DIRAC matches
today under every profile: each rule with worked numbers, as plain functions and through the dirac_match plugin."""

from collections import Counter

import pytest

from brokerage.engine import ScenarioError, run
from brokerage.engine.dirac.rules import (
    Group,
    MatchRules,
    Resource,
    TaskQueue,
    is_any,
    match,
    no_match_reasons,
    task_queue_priorities,
)
from brokerage.gdpconfig import ConfigView
from brokerage.gdpconfig.profiles import PROFILES

SETUP = "LHCb-Production"
DIRAC = MatchRules.from_config(ConfigView({}, profile="dirac"))
SEED = MatchRules.from_config(ConfigView({}, profile="seed"))


def tq(id, **fields):
    base = {"ownerDN": "/CN=alice", "ownerGroup": "lhcb_user", "setup": SETUP, "cpuTime": 500}
    sets = {k: frozenset(v) for k, v in fields.items() if isinstance(v, list | set | tuple)}
    plain = {k: v for k, v in fields.items() if k not in sets}
    return TaskQueue(id=id, **{**base, **plain}, **sets)


def resource(**fields):
    sets = {k: frozenset(v) for k, v in fields.items() if isinstance(v, list | set | tuple)}
    plain = {k: v for k, v in fields.items() if k not in sets}
    return Resource(**{"setup": SETUP, "cpuTime": 100000, **plain}, **sets)


def codes(queue, res, rules=SEED, groups=None):
    return [code for code, _ in no_match_reasons(queue, res, rules, groups)]


def test_profiles_resolve_to_the_rules():
    assert MatchRules() == SEED
    assert (
        MatchRules(
            tq_order="dirac",
            jobs_per_try=50,
            legacy_fields=False,
            absent_ce_platform="dirac",
            generic_pilot_vo=True,
            priority_average="real",
            split_job_sharing=False,
            priority_grouping=True,
        )
        == DIRAC
    )
    # each difference is one parameter; a stored row still wins over the profile
    assert len(PROFILES["dirac"].values) == 8
    assert MatchRules.from_config(ConfigView({("DIRAC_JOBS_PER_TRY", ""): 20}, profile="dirac")).jobs_per_try == 20


def test_wildcard_spelling():
    assert [is_any(v) for v in ("ANY", "any", "'Any'", "a-n-y", "anyone", "")] == [True] * 4 + [False, False]


# --- keys DIRAC matches today, under every profile (seed 003 is silent on them) --------------------------------


@pytest.mark.parametrize("rules", [SEED, DIRAC], ids=["seed", "dirac"])
def test_job_type_and_the_site_mask(rules):
    user, test, untyped = tq(1, jobTypes=["User"]), tq(2, jobTypes=["Test"]), tq(3)
    assert codes(user, resource(jobType="MCSimulation"), rules) == ["job_type"]
    assert codes(user, resource(jobType="User"), rules) == []
    assert codes(user, resource(), rules) == []  # no JobType sent: no condition
    # a site outside the mask takes Test jobs only (Matcher._getResourceDict)
    masked = resource(jobType="User", inSiteMask=False)
    assert [codes(q, masked, rules) for q in (user, test, untyped)] == [["job_type"], [], []]


@pytest.mark.parametrize("rules", [SEED, DIRAC], ids=["seed", "dirac"])
def test_required_tags_must_all_be_on_the_queue(rules):
    offered = resource(tags=["GPU", "MultiProcessor"], requiredTags=["GPU"])
    assert codes(tq(1), offered, rules) == ["required_tags"]
    assert codes(tq(2, tags=["GPU"]), offered, rules) == []
    assert codes(tq(3, tags=["GPU", "MultiProcessor"]), offered, rules) == []
    assert codes(tq(4, tags=["MultiProcessor"]), offered, rules) == ["required_tags"]
    assert no_match_reasons(tq(1), offered, rules)[0][1] == {"required": ["GPU"], "offered": []}


@pytest.mark.parametrize("rules", [SEED, DIRAC], ids=["seed", "dirac"])
def test_resource_side_bans(rules):
    # the resource's BannedSite excludes queues that list the site (a queue naming no site is not excluded)
    banned = resource(site="RAL", bannedSites=["CERN"], bannedTags=["GPU"], tags=["GPU"])
    assert no_match_reasons(tq(1, sites=["CERN", "RAL"]), banned, rules) == [
        ("resource_ban", {"field": "sites", "banned": ["CERN"]})
    ]
    assert codes(tq(2), banned, rules) == []
    assert codes(tq(3, tags=["GPU"]), banned, rules) == ["resource_ban"]
    assert codes(tq(4, platforms=["el9"]), resource(platform="el9", bannedPlatforms=["el9"]), rules) == ["resource_ban"]


@pytest.mark.parametrize("rules", [SEED, DIRAC], ids=["seed", "dirac"])
def test_max_ram(rules):
    big = tq(1, minRAM=4000, maxRAM=8000)
    assert no_match_reasons(big, resource(maxRAM=2000), rules) == [("ram", {"required": 4000, "offered": 2000})]
    assert codes(big, resource(maxRAM=4000), rules) == []
    assert codes(big, resource(), rules) == []  # no MaxRAM sent: no condition
    assert codes(tq(2, maxRAM=8000), resource(maxRAM=100), rules) == []  # MaxRAM alone is informational


@pytest.mark.parametrize("rules", [SEED, DIRAC], ids=["seed", "dirac"])
def test_a_pilot_naming_only_an_owner_or_only_a_group(rules):
    queues = [tq(1), tq(2, ownerDN="/CN=bob"), tq(3, ownerGroup="lhcb_mc", ownerDN="/CN=bob")]
    assert [q.id for q in queues if not codes(q, resource(ownerDN="/CN=bob"), rules)] == [2, 3]
    assert [q.id for q in queues if not codes(q, resource(ownerGroup="lhcb_user"), rules)] == [1, 2]
    # a group with JobSharing in the registry shares its jobs like the request's own flag says
    sharing = resource(ownerGroup="lhcb_user", ownerDN="/CN=alice")
    assert [q.id for q in queues if not codes(q, sharing, rules, {"lhcb_user": Group(jobSharing=True)})] == [1, 2]


# --- where the dirac profile departs from seed 003 --------------------------------------------------------------


def test_absent_grid_ce_or_platform():
    queue = tq(1, gridCEs=["ce1.cern.ch"], platforms=["el9"])
    assert codes(queue, resource(), SEED) == ["grid_ce", "platform"]
    assert codes(queue, resource(), DIRAC) == []
    assert codes(queue, resource(gridCE="ce2.cern.ch", platform="el8"), DIRAC) == ["grid_ce", "platform"]
    assert codes(queue, resource(gridCE="ANY", platform="any"), SEED) == []


def test_setup_and_pilot_types_are_not_matched_in_dirac_v9():
    queue = tq(1, setup="Other", pilotTypes=["private"])
    assert codes(queue, resource(), SEED) == ["setup", "pilot_type"]
    assert codes(queue, resource(), DIRAC) == []


def test_generic_pilots_take_only_their_vo_groups_under_dirac():
    groups = {"lhcb_user": Group(vo="lhcb"), "lhcb_mc": Group(vo="lhcb"), "cms_user": Group(vo="cms")}
    queues = [tq(1), tq(2, ownerGroup="lhcb_mc"), tq(3, ownerGroup="cms_user")]
    generic = resource(vo="lhcb")
    assert [q.id for q in queues if not codes(q, generic, DIRAC, groups)] == [1, 2]
    assert [q.id for q in queues if not codes(q, generic, SEED, groups)] == [1, 2, 3]
    assert no_match_reasons(queues[2], generic, DIRAC, groups)[0] == (
        "owner_group",
        {"required": "cms_user", "offered": "VO lhcb: ['lhcb_mc', 'lhcb_user']"},
    )


def test_dirac_order_has_no_cpu_step():
    # seed: the 5000 s queue always wins; DIRAC: RAND()/priority over both, equal priorities → about half each
    queues = [tq(1, cpuTime=500), tq(2, cpuTime=5000)]
    jobs = {1: [(10, 1)], 2: [(20, 1)]}
    seed_wins = Counter(match(queues, jobs, resource(), seed, SEED).task_queue for seed in range(2000))
    dirac_wins = Counter(match(queues, jobs, resource(), seed, DIRAC).task_queue for seed in range(2000))
    assert seed_wins == {2: 2000}
    assert dirac_wins[1] / 2000 == pytest.approx(0.5, abs=0.04)


def test_dirac_order_is_literal_rand_over_priority_over_every_matching_queue():
    # priorities 2 and 1 at different CPU times: P(U1/2 < U2) = 3/4 under DIRAC (seed: the higher CPU always)
    queues = [tq(1, cpuTime=500, priority=2.0), tq(2, cpuTime=5000, priority=1.0)]
    jobs = {1: [(10, 1)], 2: [(20, 1)]}
    wins = Counter(match(queues, jobs, resource(), seed, DIRAC).task_queue for seed in range(20000))
    assert wins[1] / 20000 == pytest.approx(0.75, abs=0.015)


def test_dirac_tries_the_first_ten_queues_three_times():
    # eleven empty queues of priority 1e6 come before the one with jobs (0.001) in every try → no job
    queues = [tq(i, priority=1e6) for i in range(1, 12)] + [tq(12, priority=0.001)]
    result = match(queues, {12: [(120, 1)]}, resource(), seed=5, rules=DIRAC)
    assert (result.job, result.tries, result.matching) == (None, 3, [12])
    # with nine empty ones it is always among the first ten
    assert match(queues[2:], {12: [(120, 1)]}, resource(), seed=5, rules=DIRAC).job == 120


def test_dirac_draws_from_the_first_fifty_jobs():
    jobs = {1: [(job_id, 3) for job_id in range(1000, 1080)]}
    seed_jobs = {match([tq(1)], jobs, resource(), seed, SEED).job for seed in range(1500)}
    dirac_jobs = {match([tq(1)], jobs, resource(), seed, DIRAC).job for seed in range(1500)}
    assert seed_jobs == set(range(1000, 1010))
    assert dirac_jobs == set(range(1000, 1050))


def queue(id, owner, average, real=None, **fields):
    return {
        "id": id,
        "ownerGroup": "g",
        "ownerDN": owner,
        "averagePriority": average,
        "averageRealPriority": average if real is None else real,
        **fields,
    }


def test_priorities_average_real_priority_under_dirac():
    # owner x's queues: jobs [10, 0] (user mean 5, RealPriority mean (1e6 + 1e-5) / 2) and [5] (5)
    queues = [queue(1, "x", 5, (1e6 + 1e-5) / 2), queue(2, "x", 5)]
    assert task_queue_priorities(queues) == {1: 500.0, 2: 500.0}
    real = task_queue_priorities(queues, rules=MatchRules(priority_average="real"))
    assert real[1] == pytest.approx(1000 * 500000.000005 / 500005.000005)  # 999.990…
    assert real[2] == pytest.approx(1000 * 5 / 500005.000005)  # 0.0099999


def test_a_job_sharing_group_is_not_split_under_dirac():
    # share 800, owners a (averages 2 and 6) and b (4): split → a 400 (100, 300), b 400; one entity → 800 × x/12
    queues = [queue(1, "a", 2), queue(2, "a", 6), queue(3, "b", 4)]
    groups = {"g": Group(share=800, jobSharing=True)}
    assert task_queue_priorities(queues, groups=groups) == {1: 100.0, 2: 300.0, 3: 400.0}
    whole = task_queue_priorities(queues, groups=groups, rules=MatchRules(split_job_sharing=False))
    assert whole == pytest.approx({1: 800 * 2 / 12, 2: 400.0, 3: 800 * 4 / 12})
    # a group without JobSharing is split under every rule
    plain = task_queue_priorities(queues, groups={"g": Group(share=800)}, rules=MatchRules(split_job_sharing=False))
    assert plain == {1: 100.0, 2: 300.0, 3: 400.0}


def test_queues_differing_only_in_sites_share_the_sum_under_dirac():
    queues = [
        queue(1, "x", 1, sites=["CERN"]),
        queue(2, "x", 3, sites=["RAL"], bannedSites=["PIC"]),
        queue(3, "x", 4, platforms=["el9"]),
    ]
    assert task_queue_priorities(queues) == {1: 125.0, 2: 375.0, 3: 500.0}
    assert task_queue_priorities(queues, rules=MatchRules(priority_grouping=True)) == {1: 500.0, 2: 500.0, 3: 500.0}


def test_background_queues_get_the_minimum_and_leave_the_sum():
    # AllowBackgroundTQs: a queue averaging ≤ 0.1 gets 0.001; the other takes the whole share
    queues = [queue(1, "x", 0, 1e-5, cpuTime=500), queue(2, "x", 3, cpuTime=5000)]
    groups = {"g": Group(backgroundTQs=True)}
    assert task_queue_priorities(queues, groups=groups, rules=DIRAC) == {1: 0.001, 2: 1000.0}
    assert task_queue_priorities(queues, rules=DIRAC)[1] == pytest.approx(1000 * 1e-5 / 3.00001)


# --- through the plugin ------------------------------------------------------------------------------------------


def scenario(profile, **extra):
    return {
        "plugin": "dirac_match",
        "seed": 4,
        "profile": profile,
        "groups": {"lhcb_user": {"share": 1000, "vo": "lhcb"}, "cms_user": {"vo": "cms"}},
        "task_queues": [
            {
                "id": 1,
                "ownerDN": "/CN=a",
                "ownerGroup": "lhcb_user",
                "setup": "Old",
                "cpuTime": 500,
                "gridCEs": ["ce1"],
            },
            {"id": 2, "ownerDN": "/CN=a", "ownerGroup": "lhcb_user", "setup": SETUP, "cpuTime": 50000},
            {"id": 3, "ownerDN": "/CN=c", "ownerGroup": "cms_user", "setup": SETUP, "cpuTime": 50000},
        ],
        "jobs": [
            {"jobID": 11, "taskQueue": 1, "userPriority": 10},
            {"jobID": 21, "taskQueue": 2, "userPriority": 1},
            {"jobID": 31, "taskQueue": 3, "userPriority": 1},
        ],
        "resource": {"setup": SETUP, "cpuTime": 86400, "vo": "lhcb"},
        **extra,
    }


def test_plugin_under_seed_and_dirac():
    seed = run(scenario("seed")).to_dict()
    assert seed["skipped"]["TQ1"]["detail"]["failed"] == ["setup", "grid_ce"]
    assert sorted(c["name"] for c in seed["candidates"]) == ["TQ2", "TQ3"]
    assert [s["filter"] for s in seed["stages"]] == ["requirements", "waiting jobs", "highest CPU time"]
    dirac = run(scenario("dirac")).to_dict()
    # TQ1 matches (no Setup, no GridCE sent), TQ3 is another VO's
    assert dirac["skipped"]["TQ3"]["code"] == "owner_group"
    assert sorted(c["name"] for c in dirac["candidates"]) == ["TQ1", "TQ2"]
    assert [s["filter"] for s in dirac["stages"]] == ["requirements", "waiting jobs"]
    assert dirac["extra"]["taskQueueOrder"] == "dirac"


def test_plugin_computes_priorities_under_the_profile():
    # one owner, queues with jobs of priority 10 and 1: user means 10 and 1 → 909.09 / 90.91; RealPriority
    # means 1e6 and 1 → 999.999 / 0.000999… → 0.001 (the minimum)
    base = scenario("seed", priorities="computed")
    base["task_queues"] = base["task_queues"][:2]
    base["jobs"] = base["jobs"][:2]
    weights = {c["name"]: c["weight"] for c in run(base).to_dict()["candidates"]}
    assert weights == pytest.approx({"TQ2": 1000 / 11})  # seed: TQ1 fails setup, TQ2 has 1000 × 1/11
    dirac = run({**base, "profile": "dirac"}).to_dict()
    weights = {c["name"]: c["weight"] for c in dirac["candidates"]}
    assert weights == pytest.approx({"TQ1": 1000 * 1e6 / (1e6 + 1), "TQ2": 0.001})


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"resource": {"setup": SETUP, "cpuTime": 1, "maxRAM": -1}}, r"\$\.resource\.maxRAM"),
        ({"groups": {"g": {"share": "big"}}}, r"\$\.groups\.g\.share"),
        ({"groups": {"g": {"jobsharing": True}}}, r"\$\.groups\.g\.jobsharing"),
        ({"priorities": "random"}, r"\$\.priorities"),
    ],
)
def test_bad_input_names_its_path(change, path):
    with pytest.raises(ScenarioError, match=path):
        run(scenario("dirac", **change))


def test_tq_ram_must_be_whole_megabytes():
    bad = scenario("seed")
    bad["task_queues"][0]["minRAM"] = 1.5
    with pytest.raises(ScenarioError, match=r"\$\.task_queues\[0\]\.minRAM"):
        run(bad)


def test_a_match_is_a_function_of_its_seed_under_both_rule_sets():
    queues = [tq(1), tq(2, cpuTime=5000)]
    jobs = {1: [(10, 1), (11, 2)], 2: [(20, 3)]}
    for rules in (SEED, DIRAC):
        assert match(queues, jobs, resource(), 9, rules) == match(queues, jobs, resource(), 9, rules)


def test_required_tags_count_as_offered():
    # a pilot requiring GPU jobs but listing no tags: TaskQueueDB says "Wrong conditions"; we read GPU as offered
    data = scenario("seed")
    data["task_queues"] = [
        {"id": 1, "ownerDN": "/CN=a", "ownerGroup": "lhcb_user", "setup": SETUP, "cpuTime": 500, "tags": ["GPU"]},
        {"id": 2, "ownerDN": "/CN=a", "ownerGroup": "lhcb_user", "setup": SETUP, "cpuTime": 500},
    ]
    data["jobs"] = [{"jobID": 11, "taskQueue": 1}, {"jobID": 21, "taskQueue": 2}]
    data["resource"] = {"setup": SETUP, "cpuTime": 1000, "requiredTags": ["GPU"]}
    decision = run(data).to_dict()
    assert decision["chosen"] == "11"
    assert decision["skipped"]["TQ2"]["code"] == "required_tags"
