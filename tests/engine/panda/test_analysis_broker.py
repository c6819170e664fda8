"""ATLAS analysis job brokerage (seed 000), rule by rule, with worked numbers.

Builder defaults: single-core analysis queues running 100 jobs with 20 activated and 5 starting (25 queued), a
User Analysis task of jdoe with ramCount 2000 MB (needs 1,800 MB), no throttling numbers unless given.
"""

import json
from pathlib import Path

import pytest

from brokerage.engine import explain, run
from tests.engine.builders import anal_scenario, dataset, decide, queue


def codes(decision):
    return {name: skip.code for name, skip in decision.skipped.items()}


def q(name, **options):
    options.setdefault("corecount", 1)
    return queue(name, **options)


class TestThrottling:
    @pytest.mark.parametrize(
        ("counts", "gdpconfig", "throttled"),
        [
            ({"running": 1001}, {"CAP_RUNNING_USER_JOBS": 1000}, True),
            ({"running": 1000}, {"CAP_RUNNING_USER_JOBS": 1000}, False),
            ({"queued": 2001}, {"CAP_RUNNING_USER_JOBS": 1000}, True),  # queued limit is twice the cap
            ({"queued": 2000}, {"CAP_RUNNING_USER_JOBS": 1000}, False),
            ({"runningCores": 4001}, {"CAP_RUNNING_USER_CORES": 4000}, True),
            ({"queuedCores": 8001}, {"CAP_RUNNING_USER_CORES": 4000}, True),
            ({"running": 10**6}, {}, False),  # no cap by default
        ],
    )
    def test_user_caps(self, counts, gdpconfig, throttled):
        decision = decide(anal_scenario(q("A"), user_stats={"user": counts}, gdpconfig=gdpconfig))
        assert (decision.outcome == "throttled") is throttled

    def test_working_group_uses_the_group_caps(self):
        stats = {"user": {"running": 5000}, "group": {"running": 301}}
        scenario = anal_scenario(
            q("A"),
            task={"workingGroup": "GP_Higgs"},
            user_stats=stats,
            gdpconfig={"CAP_RUNNING_USER_JOBS": 100, "CAP_RUNNING_GROUP_JOBS": 300},
        )
        decision = decide(scenario)
        assert decision.outcome == "throttled"
        assert decision.message == "throttled: group running 301 > CAP_RUNNING_GROUP_JOBS 300"
        assert decision.extra["throttle"]["key"] == "CAP_RUNNING_GROUP_JOBS"
        assert (decision.chosen, decision.candidates, decision.retry_after_minutes) == (None, (), None)

    def test_disk_quota(self):
        decision = decide(anal_scenario(q("A"), user_stats={"user": {"diskQuotaExceeded": True}}))
        assert decision.message == "throttled: the user's global disk quota is exceeded"

    @pytest.mark.parametrize(
        ("task_class", "usage", "slots", "throttled"),
        [
            ("C", 0.91, 0, True),
            ("C", 0.90, 0, False),
            ("B", 0.96, 0, True),
            ("B", 0.95, 0, False),
            # A: max(USER_USAGE_THRESHOLD_A 1000 / 500 slots, 1) = 2 → 200 %
            ("A", 2.01, 500, True),
            ("A", 1.99, 500, False),
            # A with 2000 slots: max(0.5, 1) = 1 → 100 %
            ("A", 1.01, 2000, True),
            ("S", 5.0, 0, False),
        ],
    )
    def test_user_analysis_share_by_class(self, task_class, usage, slots, throttled):
        stats = {"gshareUsage": {"User Analysis": usage}, "user": {"runningSlotsHiSites": slots}}
        decision = decide(anal_scenario(q("A"), task={"taskClass": task_class}, user_stats=stats))
        assert (decision.outcome == "throttled") is throttled

    def test_other_shares_are_immune(self):
        stats = {"gshareUsage": {"User Analysis": 3.0}}
        decision = decide(anal_scenario(q("A"), task={"taskClass": "C", "gshare": "Group Analysis"}, user_stats=stats))
        assert decision.outcome == "assigned"


class TestCandidates:
    def test_analysis_and_unified_queues_only(self):
        production = q("PROD")
        production["record"]["type"] = "production"
        unified = q("UNI", type="unified")
        scenario = anal_scenario(q("ANA"), unified)
        scenario["queues"]["PROD"] = {**production["record"], "type": "production"}
        assert decide(scenario).initial == ("ANA", "UNI")

    def test_excluded_and_included_sites(self):
        grid = (q("ANALY_CERN", site="CERN-PROD"), q("ANALY_BNL", site="BNL-ATLAS"), q("ANALY_MWT2", site="MWT2"))
        excluded = decide(anal_scenario(*grid, task={"excludedSite": "ANALY_CERN"}))
        assert codes(excluded) == {"ANALY_CERN": "excluded"}
        # a name with * is searched as a regular expression (AtlasBrokerUtils.isMatched): ANALY_B.* matches ANALY_BNL
        included = decide(anal_scenario(*grid, task={"includedSite": ["ANALY_B*", "ANALY_MWT2"]}))
        assert codes(included) == {"ANALY_CERN": "notincluded"}
        searched = decide(anal_scenario(*grid, task={"includedSite": ["*MWT*"]}))
        assert set(codes(searched)) == {"ANALY_CERN", "ANALY_BNL"}

    def test_the_lists_name_queues_never_their_sites(self):
        # issue 33 D11: seed 000 ("the queues are included in the list") and AtlasBrokerUtils.isMatched compare
        # queue names only, so a site's name excludes nothing and includes nothing
        grid = (q("ANALY_CERN", site="CERN-PROD"), q("ANALY_BNL", site="BNL-ATLAS"))
        for profile in ("seed", "panda"):
            excluded = decide(anal_scenario(*grid, task={"excludedSite": "CERN-PROD"}, profile=profile))
            assert codes(excluded) == {}
            included = decide(anal_scenario(*grid, task={"includedSite": "BNL-ATLAS"}, profile=profile))
            assert codes(included) == {"ANALY_CERN": "notincluded", "ANALY_BNL": "notincluded"}

    def test_preassigned_queues_skip_the_status_check(self):
        grid = (q("A", status="brokeroff"), q("B", status="brokeroff"))
        assert codes(decide(anal_scenario(*grid))) == {"A": "status", "B": "status"}
        assert decide(anal_scenario(*grid, task={"site": "A"})).chosen == "A"
        assert decide(anal_scenario(*grid, task={"includedSite": "B"})).chosen == "B"

    def test_a_site_pre_assignment_restricts_the_candidates_to_that_queue(self):
        # B is online and less busy, yet a task pre-assigned to A is brokered to A alone
        grid = (q("A", stats={"activated": 50}), q("B"))
        decision = decide(anal_scenario(*grid, task={"site": "A"}))
        assert decision.initial == ("A",)
        assert decision.chosen == "A"
        unknown = decide(anal_scenario(*grid, task={"site": "NOWHERE"}))
        assert (unknown.initial, unknown.chosen) == ((), None)

    def test_a_pre_assigned_queue_too_short_for_the_job_is_skipped_under_both_profiles(self):
        # 100 HS06 s an event × 1,000 events = 100,000 HS06 s; A's maxtime 3,600 s less the 600 s base walltime,
        # × 1 core × corepower 10 × 90 % efficiency = 27,000: too short. The real walltime check has no exemption
        # for a pre-assigned task (AtlasAnalJobBroker 1256, 1.0.4), so its own queue goes, and with it every other
        task = {"site": "A", "cpuTime": 100, "cpuTimeUnit": "HS06sPerEvent"}
        grid = (q("A", corecount=1, maxtime=3600), q("B", corecount=1))
        panda = decide(anal_scenario(*grid, task=task, profile="panda"))
        assert codes(panda) == {"A": "shortwalltime", "B": "nonpreassigned"}
        assert (panda.skipped["A"].detail["hs06Needed"], panda.skipped["A"].detail["maxtimeHS06"]) == (100_000, 27_000)
        assert codes(decide(anal_scenario(*grid, task=task))) == {"A": "shortwalltime"}

    def test_the_panda_profile_scans_every_queue_and_keeps_the_pre_assigned_one_alone(self):
        # AtlasAnalJobBroker (1.0.4): every analysis queue is checked; the "preassign check", after the
        # include/exclude check, keeps the task's own queue A and skips B; A offline: none is kept
        grid = (q("A", stats={"activated": 50}), q("B"), q("C", status="offline"))
        decision = decide(anal_scenario(*grid, task={"site": "A"}, profile="panda"))
        assert (decision.initial, decision.chosen) == (("A", "B", "C"), "A")
        assert codes(decision) == {"B": "nonpreassigned", "C": "status"}
        assert (
            explain("nonpreassigned", decision.skipped["B"].detail)
            == "The task is pre-assigned to A, which is kept alone."
        )
        down = (q("A", status="offline"), q("B"))
        failed = decide(anal_scenario(*down, task={"site": "A"}, profile="panda"))
        assert (failed.chosen, codes(failed)) == (None, {"A": "status", "B": "nonpreassigned"})
        assert explain("nonpreassigned", failed.skipped["B"].detail) == (
            "The task is pre-assigned to A, which did not pass every check."
        )


class TestDataLocality:
    DATA = [dataset(size=10, files=4, replicas={"HAS_DATADISK": (4, 10)})]
    SITES = {"HAS": {"role": "satellite", "state": "ACTIVE"}}

    def grid(self):
        return (q("WITH", site="HAS"), q("WITHOUT"))

    def test_queues_without_the_input_are_skipped(self):
        decision = decide(
            anal_scenario(*self.grid(), datasets=self.DATA, sites=self.SITES, task={"taskPriority": 1000})
        )
        assert codes(decision) == {"WITHOUT": "fileunavailable"}
        assert decision.skipped["WITHOUT"].detail == {"missingFiles": 4, "totalFiles": 4, "availableGB": 0}

    @pytest.mark.parametrize(
        ("task", "gdpconfig", "user_stats"),
        [
            ({"taskPriority": 2000}, {}, {}),
            ({"ioIntensity": 100}, {"IO_INTENSITY_CUTOFF_USER": 100}, {}),
            ({}, {"DATA_CHECK_TIMEOUT_USER": 24}, {"hoursSinceLastSuccess": 25}),
        ],
    )
    def test_check_suppressed(self, task, gdpconfig, user_stats):
        decision = decide(
            anal_scenario(
                *self.grid(),
                datasets=self.DATA,
                sites=self.SITES,
                task=task,
                gdpconfig=gdpconfig,
                user_stats=user_stats,
            )
        )
        assert codes(decision) == {}

    def test_not_suppressed_just_inside_the_limits(self):
        decision = decide(
            anal_scenario(
                *self.grid(),
                datasets=self.DATA,
                sites=self.SITES,
                task={"ioIntensity": 101},
                gdpconfig={"IO_INTENSITY_CUTOFF_USER": 100, "DATA_CHECK_TIMEOUT_USER": 24},
                user_stats={"hoursSinceLastSuccess": 24},
            )
        )
        assert codes(decision) == {"WITHOUT": "fileunavailable"}

    def test_retry_without_locality_when_persistent_filters_leave_nothing(self):
        # WITH has the data but too little memory; WITHOUT has memory but no data
        grid = (q("WITH", site="HAS", maxrss=1000), q("WITHOUT"))
        decision = decide(anal_scenario(*grid, datasets=self.DATA, sites=self.SITES))
        assert decision.chosen == "WITHOUT"
        assert codes(decision) == {"WITH": "lowmemory"}
        assert "tried again without the data locality check" in decision.message

    def test_temporary_filters_do_not_trigger_the_retry(self):
        grid = (q("WITH", site="HAS", stats={"activated": 300}), q("WITHOUT"))
        decision = decide(anal_scenario(*grid, datasets=self.DATA, sites=self.SITES))
        assert (decision.outcome, decision.retry_after_minutes) == ("pending", 20)
        assert codes(decision) == {"WITH": "overloaded", "WITHOUT": "fileunavailable"}

    def test_when_every_queue_with_the_data_closed_jobs_the_input_moves_to_idle_queues(self):
        # seed 002 "Input data transfer": WITH holds the input but 2 of the task's jobs were closed there in 6 h
        stats = {"queues": {"WITH": {"taskClosed": 2}}}
        scenario = anal_scenario(
            *self.grid(), datasets=self.DATA, sites=self.SITES, user_stats=stats, task={"ioIntensity": 10_000}
        )
        decision = decide(scenario)
        assert codes(decision) == {"WITH": "closed"}
        assert decision.chosen == "WITHOUT"
        # no closed job there: the input stays where it is
        normal = decide(anal_scenario(*self.grid(), datasets=self.DATA, sites=self.SITES, task={"ioIntensity": 10_000}))
        assert codes(normal) == {"WITHOUT": "fileunavailable"}


class TestPersistentFilters:
    def test_virtual_placement(self):
        grid = (q("VP", use_vp=True), q("VPBUSY", use_vp=True, stats={"vpOverloaded": True}), q("PLAIN"))
        assert codes(decide(anal_scenario(*grid))) == {"VPBUSY": "overloaded_vp"}
        assert codes(decide(anal_scenario(*grid, task={"avoidVP": True}))) == {
            "VP": "overloaded_vp",
            "VPBUSY": "overloaded_vp",
        }

    def test_memory_in_both_units(self):
        # MB: (500 + 2000) × 0.9 = 2,250; MBPerCore at a 4-core queue with a 4-core task: (500 + 2000 × 4) × 0.9
        grid = (q("SMALL", maxrss=2249), q("FITS", maxrss=2250))
        assert codes(decide(anal_scenario(*grid, task={"baseRamCount": 500}))) == {"SMALL": "lowmemory"}
        multi = decide(
            anal_scenario(
                q("M4", corecount=4, maxrss=7649),
                q("M4OK", corecount=4, maxrss=7650),
                task={"baseRamCount": 500, "ramUnit": "MBPerCore", "coreCount": 4},
            )
        )
        assert codes(multi) == {"M4": "lowmemory"}

    def test_analysis_disk_formula(self):
        # 2000 MB input + 0.5 × 2000 + 500 work = 3,500 MB against maxwdir / corecount
        task = {"outDiskCount": 0.5, "workDiskCount": 500}
        decision = decide(anal_scenario(q("TIGHT", maxwdir=3500), q("ROOM", maxwdir=3501), task=task))
        assert codes(decision) == {"TIGHT": "disk"}
        assert decision.skipped["TIGHT"].detail["neededMB"] == 3500
        # direct access: no input copy, 1,500 MB
        assert decide(anal_scenario(q("TIGHT", maxwdir=3500, direct_access_lan=True), task=task)).chosen == "TIGHT"

    def test_merge_jobs_need_a_day_of_walltime(self):
        decision = decide(anal_scenario(q("SHORT", maxtime=43200), q("LONG"), jobs={"isMerge": True}))
        assert codes(decision) == {"SHORT": "scout_walltime"}

    def test_pilots_and_releases_as_in_production(self):
        grid = (q("NOPILOT", stats={"pilotsLast3h": 0}), q("OLD", releases=["21.0.38"]), q("OK"))
        decision = decide(anal_scenario(*grid, task={"transUses": "Athena-24.0.30"}))
        assert codes(decision) == {"NOPILOT": "nopilot", "OLD": "cache"}


class TestTemporaryFilters:
    @pytest.mark.parametrize(
        ("numbers", "skipped"),
        [
            ({"taskFailed": 3, "taskClosed": 2, "taskFinished": 1}, True),  # 5 ≥ max(2, 5)
            ({"taskFailed": 3, "taskClosed": 1, "taskFinished": 1}, False),  # 4 < 5
            ({"taskFailed": 6, "taskClosed": 0, "taskFinished": 3}, True),  # 6 ≥ max(6, 5)
            ({"taskFailed": 6, "taskClosed": 0, "taskFinished": 4}, False),  # 6 < 8
        ],
    )
    def test_bad_jobs(self, numbers, skipped):
        decision = decide(anal_scenario(q("Q"), user_stats={"queues": {"Q": numbers}}))
        assert (codes(decision).get("Q") == "badsite") is skipped

    def test_bad_jobs_floor_from_gdpconfig(self):
        numbers = {"taskFailed": 3, "taskClosed": 2, "taskFinished": 1}
        decision = decide(
            anal_scenario(q("Q"), user_stats={"queues": {"Q": numbers}}, gdpconfig={"MIN_BAD_JOBS_TO_SKIP_PQ": 6})
        )
        assert decision.chosen == "Q"

    @pytest.mark.parametrize(
        ("stats", "skipped"),
        [
            ({"running": 100, "activated": 196, "starting": 5}, True),  # 201 > 2 × 100
            ({"running": 100, "activated": 195, "starting": 5}, False),
            ({"running": 5, "activated": 41, "starting": 0, "nBatchJob": 0}, True),  # 41 > 2 × max(20, 5)
            ({"running": 5, "activated": 40, "starting": 0, "nBatchJob": 0}, False),
        ],
    )
    def test_queue_length(self, stats, skipped):
        decision = decide(anal_scenario(q("Q", stats=stats)))
        assert (codes(decision).get("Q") == "overloaded") is skipped


class TestStabilizer:
    """Own worked example (REFERENCE.md has none): a queue running 300 with 500 queued and 30 starts per hour.
    Throttleable (500 ≥ 100 and 500 ≥ 8 × 30); nQ_max = max(100, 2 × 300, 12 × 30) = 600; the user runs 30 of
    300 (10 %) among 20 users (5 %): percentage 10 %; max_q_len = max(5, 0.05 × 300, 600 × 0.1) = 60."""

    STATS = {"running": 300, "activated": 450, "starting": 50, "toRunningRate": 30, "nUsers": 20}

    def decide_with(self, user_queued, stats=None, gdpconfig=None):
        return decide(
            anal_scenario(
                q("Q", stats={**self.STATS, **(stats or {})}),
                user_stats={"queues": {"Q": {"userQueued": user_queued, "userRunning": 30}}},
                gdpconfig=gdpconfig,
            )
        )

    def test_user_over_max_queue_length_is_skipped(self):
        decision = self.decide_with(61)
        assert codes(decision) == {"Q": "tmp_user_problem"}
        detail = decision.skipped["Q"].detail
        assert (detail["nQmax"], detail["userPercentage"], detail["maxQueueLength"]) == (600, 0.1, 60)
        assert self.decide_with(60).chosen == "Q"

    def test_queue_with_a_short_wait_is_never_throttled(self):
        # 8 h × 70 starts per hour = 560 > 500 queued
        assert self.decide_with(1000, stats={"toRunningRate": 70}).chosen == "Q"

    def test_parameters_come_from_gdpconfig(self):
        # STATIC_MAX_QUEUE_RUNNING_RATIO 1 → nQ_max = max(100, 300, 360) = 360; × 10 % = 36
        decision = self.decide_with(37, gdpconfig={"STATIC_MAX_QUEUE_RUNNING_RATIO": 1})
        assert decision.skipped["Q"].detail["maxQueueLength"] == 36

    def test_a_crowded_queue_trace_names_the_stabilizer_number(self):
        from brokerage.engine.core.reasons import explain

        decision = self.decide_with(80)
        sentence = explain("tmp_user_problem", decision.skipped["Q"].detail)
        assert sentence.startswith("The user has 80 jobs queued there, more than max_q_len 60 (nQ_max 600")


class TestWeights:
    def test_original_basic_weight(self):
        # (100 + 1) / (20 + 0 + 5 + 0 + 1) = 101 / 26
        candidate = decide(anal_scenario(q("Q"))).candidates[0]
        assert candidate.weight == pytest.approx(101 / 26)
        assert candidate.factors["used"] == "original"

    def two_queues(self, task_class="A", gshare="User Analysis", n_jobs=10, use_new=True):
        # max_q_len 200 at both (nQ_max 200, user share 100 %); room 200 − 150 = 50 and 200 − 170 = 30
        return decide(
            anal_scenario(
                q("HI", siteClass="hi"),
                q("LO", siteClass="lo"),
                task={"taskClass": task_class, "gshare": gshare},
                jobs={"nJobs": n_jobs},
                user_stats={"queues": {"HI": {"userQueued": 150}, "LO": {"userQueued": 170}}},
                gdpconfig={"USE_NEW_BASIC_WEIGHT": use_new},
            )
        )

    def test_new_basic_weight_class_a(self):
        # W_q = (room − N_j/N_PQ) / (Σ room − N_j): HI (50 − 5) / 70, LO (30 − 5) / 70
        # W_s for class A: hi N_j = 10, lo ε2 = 0.001
        weights = {c.name: c for c in self.two_queues().candidates}
        assert weights["HI"].factors["Wq"] == pytest.approx(45 / 70, abs=1e-4)
        assert weights["LO"].factors["Wq"] == pytest.approx(25 / 70, abs=1e-4)
        assert weights["HI"].weight == pytest.approx(10 * 45 / 70)
        assert weights["LO"].weight == pytest.approx(0.001 * 25 / 70)
        assert weights["HI"].factors["used"] == "new"

    @pytest.mark.parametrize(("task_class", "hi", "lo"), [("B", 0.001, 0.01), ("C", 0.001, 10), ("S", 10, 0.001)])
    def test_site_class_table(self, task_class, hi, lo):
        weights = {c.name: c.factors["Ws"] for c in self.two_queues(task_class=task_class).candidates}
        assert (weights["HI"], weights["LO"]) == (hi, lo)

    def test_other_shares_use_n_jobs(self):
        weights = {c.name: c.factors["Ws"] for c in self.two_queues(gshare="Group Analysis").candidates}
        assert weights == {"HI": 10, "LO": 10}

    def test_the_trace_shows_both_weights_whichever_is_used(self):
        candidate = self.two_queues(use_new=False).candidates[0]
        assert candidate.factors["used"] == "original"
        assert {"originalWeight", "newWeight", "Ws", "Wq"} <= set(candidate.factors)

    def test_no_room_left_shares_w_q_equally(self):
        decision = decide(
            anal_scenario(
                q("A"),
                q("B"),
                jobs={"nJobs": 1000},
                gdpconfig={"USE_NEW_BASIC_WEIGHT": True},
                task={"gshare": "Group Analysis"},
            )
        )
        assert {c.factors["Wq"] for c in decision.candidates} == {0.5}

    def test_best_ten(self):
        decision = decide(anal_scenario(*(q(f"Q{i:02d}", stats={"running": 100 + i}) for i in range(12))))
        assert len(decision.candidates) == 10
        assert codes(decision) == {"Q00": "low_weight", "Q01": "low_weight"}


def test_the_panda_profile_runs_the_analysis_checks_in_the_real_order():
    # IO_CHECK_RULE panda reorders only the production job broker's filters; ANALYSIS_SITES_RULE panda runs the
    # analysis filters in AtlasAnalJobBroker's order: the data locality (input data) check first in the loop, the
    # include/exclude check after the pilots, the disk rule as the scratch and storage space checks
    data = json.loads((Path(__file__).parents[3] / "docs" / "examples" / "analysis_busy_user.json").read_text())
    scenario = data.get("scenario", data)
    decision = run({**scenario, "profile": "panda"})
    seed = run(scenario)
    assert (decision.profile, decision.chosen, seed.chosen) == ("panda", "ANALY_QUIET", "ANALY_QUIET")
    filters = [stage.filter for stage in decision.stages]
    assert filters[:4] == ["input complete", "data locality", "queue status", "zero share"]
    assert filters.index("pilots") < filters.index("excluded sites") < filters.index("hospital")
    assert filters.index("scratch disk") < filters.index("storage space") < filters.index("storage endpoints")
    assert "disk" not in filters
    assert [stage.filter for stage in seed.stages][:4] == [
        "input complete",
        "excluded sites",
        "included sites",
        "queue status",
    ]


class TestStorageFloor:
    """The analysis queue's output storage floor of 200 GB (issue 33 D10): the seed asks more than 200 GB free;
    panda-server 1.0.4 (AtlasAnalJobBroker 1202-1203) skips below 200 GB of free plus expired space."""

    def scenario(self, profile):
        grid = [q(f"Q{i}", site=f"S{i}") for i in (1, 2, 3)]
        space = {"S1": (150.0, 60.0), "S2": (200.0, 0.0), "S3": (150.0, 40.0)}
        endpoints = {
            f"{site}_DATADISK": {
                "site": site,
                "space_total": 1e5,
                "space_free": free,
                "space_expired": expired,
                "detailed_status": {"read_lan": "ON", "write_lan": "ON", "read_wan": "ON", "write_wan": "ON"},
            }
            for site, (free, expired) in space.items()
        }
        sites = {site: {"role": "satellite", "state": "ACTIVE"} for site in space}
        return anal_scenario(*grid, endpoints=endpoints, sites=sites, profile=profile)

    def test_the_seed_asks_more_than_200_gb_free(self):
        decision = decide(self.scenario("seed"))
        assert codes(decision) == {"Q1": "disk", "Q2": "disk", "Q3": "disk"}  # 150, 200 and 150 free
        assert decision.skipped["Q2"].detail["storageFreeGB"] == 200.0

    def test_panda_counts_expired_space_and_takes_200_gb(self):
        decision = decide(self.scenario("panda"))
        assert codes(decision) == {"Q3": "disk"}  # 150 + 60 = 210 and 200 + 0 pass; 150 + 40 = 190 does not
        assert decision.skipped["Q3"].detail["storageUsableGB"] == 190.0
        sentence = explain("disk", decision.skipped["Q3"].detail)
        assert "190 GB free or expired (200 GB or more needed)" in sentence
