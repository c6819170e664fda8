"""The `panda` profile of the production job broker: each switch it sets, with worked numbers, against the seed.

Each rule is what panda-server 1.0.4 (pandajedi/jedibrokerage/AtlasProdJobBroker.py) does; tests/tools/peer checks the
whole profile against that code. Builder defaults (tests/engine/builders.py): an 8-core task at priority 500,
ramCount 2000 MBPerCore, queues of 8 cores running 100 with 20 activated and 5 starting, nBatchJob 100, 50
pilots; the SAT → NUC link has closeness 2, 150 Mbps in the last hour and 15 files queued.
"""

import pytest

from tests.engine.builders import dataset, decide, job_scenario, queue


def under(profile, scenario):
    return decide({**scenario, "profile": profile})


def codes(decision):
    return {name: skip.code for name, skip in decision.skipped.items()}


def factors(decision, name):
    return next(c.factors for c in decision.candidates if c.name == name)


def weight(decision, name):
    return next(c.weight for c in decision.candidates if c.name == name)


def test_the_decision_records_its_profile():
    scenario = job_scenario(queue("A"))
    assert under("seed", scenario).profile == "seed"
    assert under("panda", scenario).profile == "panda"


def test_a_stored_value_overrides_the_profile():
    # gdpconfig of the scenario (a stored row, live) wins over the profile's value
    scenario = job_scenario(queue("A"), queue("A_TEST"), gdpconfig={"EXCLUDE_TEST_QUEUES": True})
    assert under("panda", scenario).initial == ("A",)


def test_test_queues_are_scanned_like_any_other():
    scenario = job_scenario(queue("A"), queue("ANALY_Test"))
    assert under("seed", scenario).initial == ("A",)
    assert under("panda", scenario).initial == ("A", "ANALY_Test")


def test_a_nucleus_without_queues_is_unknown_and_nothing_is_brokered():
    scenario = job_scenario(queue("A"))  # the only queue is at SAT; the task's nucleus NUC has none
    assert codes(under("seed", scenario)) == {}
    panda = under("panda", scenario)
    assert codes(panda) == {"A": "unknown_nucleus"}
    assert panda.skipped["A"].detail == {"nucleus": "NUC"}


class TestSoftware:
    TASK = {
        "transUses": "AthSimulation-24.0.30",
        "transHome": "AthSimulation-24.0.30",
        "architecture": "x86_64-el9-gcc13-opt#x86_64",
    }

    def test_any_does_not_skip_a_cpu_check(self):
        scenario = job_scenario(queue("A", releases=("ANY",)), queue("N", site="NUC"), task=self.TASK)
        assert "A" not in under("seed", scenario).skipped
        assert codes(under("panda", scenario))["A"] == "cache"

    def test_a_plain_release_list_is_not_accepted(self):
        task = {**self.TASK, "architecture": "x86_64-el9-gcc13-opt"}
        scenario = job_scenario(queue("A", releases=("24.0.30",)), queue("N", site="NUC"), task=task)
        assert "A" not in under("seed", scenario).skipped
        assert codes(under("panda", scenario))["A"] == "cache"


class TestBootstrap:
    def test_batch_workers_stand_for_running_jobs_only_up_to_priority_150(self):
        # running 5 < 20 with nBatchJob 30: the seed counts min(30, 20) = 20 running; panda only at priority ≤ 150
        stats = {"running": 5, "nBatchJob": 30, "activated": 0}
        at_500 = job_scenario(queue("A", stats=stats), queue("N", site="NUC"))
        assert factors(under("seed", at_500), "A")["running"] == 20
        assert factors(under("panda", at_500), "A")["running"] == 5
        at_150 = job_scenario(queue("A", stats=stats), queue("N", site="NUC"), task={"currentPriority": 150})
        assert factors(under("panda", at_150), "A")["running"] == 20

    def test_batch_workers_count_only_where_pilots_come(self):
        # a queue without pilots but with numSlots set passes the pilot check, yet its workers do not count
        stats = {"running": 5, "nBatchJob": 30, "pilotsLast3h": 0, "numSlots": 0, "activated": 0}
        scenario = job_scenario(queue("A", stats=stats), queue("N", site="NUC"), task={"currentPriority": 100})
        # numSlots 0: running + starting = 5 + 5 = 10 under panda; seed: max(5, 20 workers, 5 starting) = 20
        assert factors(under("panda", scenario), "A")["running"] == 10

    def test_num_slots_count_per_core(self):
        # numSlots 400 at an 8-core queue: 400 running for the seed, floor(400 / 8) = 50 for panda
        stats = {"running": 10, "numSlots": 400}
        scenario = job_scenario(queue("A", stats=stats), queue("N", site="NUC"), task={"currentPriority": 100})
        assert factors(under("seed", scenario), "A")["running"] == 400
        assert factors(under("panda", scenario), "A")["running"] == 50

    def test_a_queue_without_any_job_is_bootstrapped_with_weight_0_and_placed_first(self):
        empty = {"running": 0, "activated": 0, "starting": 0, "nBatchJob": 0}
        scenario = job_scenario(queue("A", stats=empty), queue("N", site="NUC"), task={"currentPriority": 100})
        panda = under("panda", scenario)
        assert weight(panda, "A") == 0
        assert factors(panda, "A")["bootstrap"] is True
        assert panda.candidates[0].name == "A"
        assert weight(under("seed", scenario), "A") > 0


def test_throughput_is_read_from_the_weekly_figure_first():
    # only a 1-hour figure (150 Mbps): the seed takes it (throughput weight 1.9); panda stops at the missing
    # weekly figure and uses closeness 2: 1 + (11 − 2) / 11 = 1.8182. Queued weight 2 − 15 / 150 = 1.9.
    scenario = job_scenario(queue("A"), queue("N", site="NUC"))
    assert factors(under("seed", scenario), "A")["networkWeight"] == pytest.approx(1.9, abs=1e-4)
    assert factors(under("panda", scenario), "A")["networkWeight"] == pytest.approx((1.9 + 1 + 9 / 11) / 2, abs=1e-4)


class TestT1Weight:
    def test_scouts_at_the_nucleus_weigh_100(self):
        scenario = job_scenario(queue("A"), queue("N", site="NUC"), jobs={"isScout": True})
        assert factors(under("seed", scenario), "N")["nucleusWeight"] == 1
        assert factors(under("panda", scenario), "N")["nucleusWeight"] == 100

    @pytest.mark.parametrize(("io", "seed_weight", "panda_weight"), [(500, 4, 1), (501, 4, 4), (499, 1, 1)])
    def test_io_intensive_tasks_weigh_the_nucleus_4_above_500(self, io, seed_weight, panda_weight):
        scenario = job_scenario(queue("A"), queue("N", site="NUC"), task={"ioIntensity": io, "t1Weight": 0})
        assert factors(under("seed", scenario), "N")["nucleusWeight"] == seed_weight
        assert factors(under("panda", scenario), "N")["nucleusWeight"] == panda_weight

    def test_minus_one_keeps_the_nucleus_queue_with_most_running_jobs(self):
        scenario = job_scenario(
            queue("N1", site="NUC", stats={"running": 100}),
            queue("N2", site="NUC", stats={"running": 300}),
            queue("A"),
            task={"t1Weight": -1},
        )
        seed = under("seed", scenario)
        assert {c.name for c in seed.candidates} == {"N1", "N2"}
        panda = under("panda", scenario)
        assert {c.name for c in panda.candidates} == {"N2"}
        # A is no nucleus queue (-t1weight); N1 runs fewer than N2: the weight loop's "low total nRunningAll for
        # negative T1 weight criteria=-t1_weight" (AtlasProdJobBroker.py 2031, 1.0.4)
        assert codes(panda) == {"A": "t1weight", "N1": "t1_weight"}
        assert panda.skipped["N1"].detail["mostRunning"] == 300


class TestCaps:
    def test_defined_jobs_count_in_the_cap_per_resource_type(self):
        # running 10 → limit max(20, 2 × 10) = 20; activated 15 + starting 5 = 20 passes the plain cap,
        # with 10 defined 30 > 20 is over the cap per resource type (the seed's "queued all" cap, same numbers)
        stats = {"running": 10, "activated": 15, "starting": 5, "defined": 10, "nBatchJob": 0}
        scenario = job_scenario(queue("A", stats=stats), queue("N", site="NUC"))
        seed = under("seed", scenario)
        assert codes(seed)["A"] == "cap"
        assert seed.skipped["A"].detail == {"queued": 30, "limit": 20, "running": 10}
        panda = under("panda", scenario)
        assert codes(panda)["A"] == "cap_rt"
        assert panda.skipped["A"].detail == {"queued": 30, "limit": 20, "running": 10}

    def test_express_tasks_are_not_capped(self):
        stats = {"running": 10, "activated": 50, "nBatchJob": 0}
        scenario = job_scenario(queue("A", stats=stats), queue("N", site="NUC"), task={"currentPriority": 1001})
        assert "A" not in under("panda", scenario).skipped
        # express begins above 1000 under panda, at 1000 under the seed
        at_1000 = job_scenario(queue("A", stats=stats), queue("N", site="NUC"), task={"currentPriority": 1000})
        assert codes(under("panda", at_1000))["A"] == "cap"


def test_many_assigned_is_assigned_plus_one_over_activated_plus_one():
    # input missing at A (so assigned jobs count): assigned 30, activated 9 → (30 + 1) / (9 + 1) = 3.1, capped at
    # 2; base weight (100 + 1) / (9 + 30 + 5 + 0 + 10) / 2 = 0.93519
    stats = {"activated": 9, "assigned": 30}
    data = [dataset(size=1.0, files=4, replicas={"NUC_DATADISK": (4, 1.0)})]
    scenario = job_scenario(queue("A", stats=stats), queue("N", site="NUC"), datasets=data)
    panda = factors(under("panda", scenario), "A")
    assert panda["manyAssigned"] == 2
    assert panda["baseWeight"] == pytest.approx(101 / 54 / 2, abs=1e-4)


class TestScratchDisk:
    def test_maxwdir_is_per_core_only_for_a_single_core_task(self):
        # disk needed (panda): 1500 MB output floor + 2000 MB input = 3500 MB. maxwdir 16,000 at 8 cores: the seed
        # compares per core (2,000 MB, too small); panda divides only for a single-core task (8-core task: 16,000)
        scenario = job_scenario(queue("A", maxwdir=16000), queue("N", site="NUC"))
        assert codes(under("seed", scenario))["A"] == "disk"
        assert "A" not in under("panda", scenario).skipped

    def test_a_pseudo_queue_divides_by_its_unified_queues_cores(self):
        # single-core task at an 8-core unified queue: its SCORE pseudo-queue has 1 core, but maxwdir 20,000 is
        # divided by the unified queue's 8 → 2,500 MB < 3,500 MB
        task = {"coreCount": 1, "ramCount": 1000}
        scenario = job_scenario(
            queue("U", maxwdir=20000, capability="ucore", type="unified"), queue("N", site="NUC"), task=task
        )
        panda = under("panda", scenario)
        assert codes(panda)["U/SCORE"] == "disk"
        assert panda.skipped["U/SCORE"].detail["maxwdirPerCore"] == 2500

    def test_the_output_floor_is_1500_mb_not_the_seeds_one_and_a_half_gb(self):
        # 1-core task, 1-core queue with maxwdir 3,500: panda needs max(output 0, InputChunk.defaultOutputSize 1,500)
        # + 2,000 MB input = 3,500 (fits, not more than maxwdir); the seed needs 1,536 + 2,000 + 300 = 3,836
        task = {"coreCount": 1, "ramCount": 1000}
        scenario = job_scenario(queue("A", corecount=1, maxwdir=3500), queue("N", site="NUC", corecount=1), task=task)
        assert "A" not in under("panda", scenario).skipped
        assert under("seed", scenario).skipped["A"].detail["neededMB"] == 3836


def test_analysis_queues_take_no_production_jobs():
    # panda-server's SiteMapper puts only production and unified queues in the clouds job brokerage scans
    scenario = job_scenario(queue("A"), queue("ANALY_A", type="analysis"), queue("U", type="unified"))
    for profile in ("seed", "panda"):
        assert "ANALY_A" not in under(profile, scenario).initial


def test_memory_adds_base_ram_once_and_rounds_down():
    # panda: (2000 × 8 + 500) × 0.9 = 14,850 MB, floored; the seed: the same sum here, not floored. A queue with
    # maxrss 14,849 is too small for both, 14,850 passes panda
    task = {"baseRamCount": 500}
    scenario = job_scenario(queue("A", maxrss=14850), queue("N", site="NUC"), task=task)
    assert "A" not in under("panda", scenario).skipped
    detail = under("panda", job_scenario(queue("A", maxrss=14849), queue("N", site="NUC"), task=task)).skipped["A"]
    assert detail.code == "lowmemory"
    assert detail.detail["neededMB"] == 14850


def test_walltime_is_compared_in_hs06_seconds():
    # 300 HS06 s/event × 1000 events = 300,000 HS06 s against (maxtime − 600 s) × 8 cores × 10 HS06 × 0.9: a
    # queue with maxtime 4,766 s offers (4,766 − 600) × 72 = 299,952 < 300,000 → too short
    short = job_scenario(queue("A", maxtime=4766), queue("N", site="NUC"))
    assert codes(under("panda", short))["A"] == "shortwalltime"
    assert under("panda", short).skipped["A"].detail["maxtimeHS06"] == pytest.approx(299952)
    enough = job_scenario(queue("A", maxtime=4767), queue("N", site="NUC"))
    assert "A" not in under("panda", enough).skipped


class TestPilots:
    def test_a_queue_without_pilots_is_skipped_unless_it_sets_num_slots(self):
        none = {"pilotsLast3h": 0}
        scenario = job_scenario(
            queue("A", stats=none), queue("B", stats={**none, "numSlots": 0}), queue("N", site="NUC")
        )
        assert codes(under("panda", scenario)) == {"A": "nopilot"}

    def test_test_tasks_are_not_checked(self):
        none = {"pilotsLast3h": 0}
        scenario = job_scenario(queue("A", stats=none), queue("N", site="NUC"), task={"prodSourceLabel": "ptest"})
        assert "A" not in under("panda", scenario).skipped


class TestInputTransfer:
    DATA = [dataset(size=50.0, files=10, replicas={"NUC_DATADISK": (10, 50.0)})]

    def test_an_io_intensive_task_avoids_queues_missing_over_10_gb(self):
        # ioIntensity 300 > 200: A misses 50 GB > 10 GB; N holds the data
        scenario = job_scenario(queue("A"), queue("N", site="NUC"), datasets=self.DATA, task={"ioIntensity": 300})
        assert codes(under("panda", scenario)) == {"A": "io"}

    def test_the_check_is_switched_off_when_no_queue_passes(self):
        # the only copy is at FAR, where no queue reads: both queues miss 50 GB
        data = [dataset(size=50.0, files=10, replicas={"FAR_DATADISK": (10, 50.0)})]
        scenario = job_scenario(
            queue("A"),
            queue("N", site="NUC"),
            datasets=data,
            task={"ioIntensity": 300},
            sites={"FAR": {"role": "satellite"}},
        )
        assert codes(under("panda", scenario)) == {}
        assert set(codes(under("seed", scenario)).values()) == {"io"}

    def test_only_complete_copies_count_for_an_io_intensive_task(self):
        # 9 of 10 files at the nucleus: the seed counts 45 GB local, panda none (getAvailableFiles complete_only)
        data = [dataset(size=50.0, files=10, replicas={"NUC_DATADISK": (9, 45.0)})]
        scenario = job_scenario(queue("N", site="NUC"), datasets=data, task={"ioIntensity": 300})
        assert factors(under("seed", scenario), "N")["availableGB"] == 45
        assert factors(under("panda", scenario), "N")["availableGB"] == 0

    def tape_scenario(self, disk_at_a=None, io=300):
        # 50 GB in 10 files, all of it on tape at SAT (A reads SAT_DATATAPE too); nothing on disk anywhere unless
        # `disk_at_a` puts a copy on SAT_DATADISK
        replicas = {"SAT_DATATAPE": (10, 50.0), **({"SAT_DATADISK": disk_at_a} if disk_at_a else {})}
        tape_endpoint = {"SAT_DATATAPE": {"site": "SAT", "is_tape": True, "space_total": 1e7, "space_free": 5e6}}
        reader = queue("A")
        reader["record"]["astorages"]["read_lan"].append("SAT_DATATAPE")
        return job_scenario(
            reader,
            queue("N", site="NUC"),
            datasets=[dataset(size=50.0, files=10, replicas=replicas)],
            endpoints=tape_endpoint,
            task={"ioIntensity": io},
        )

    def test_queues_with_the_input_on_tape_are_the_second_choice(self):
        # on disk both miss 50 GB > 10 GB; counting tape, A misses nothing: panda keeps A, skips N. The seed
        # counts the tape copy as local at A from the start, with the same outcome.
        panda = under("panda", self.tape_scenario())
        assert codes(panda) == {"N": "io"}
        assert panda.skipped["N"].detail["tapeCounted"] is True
        assert codes(under("seed", self.tape_scenario())) == {"N": "io"}

    def test_tape_copies_do_not_count_in_the_data_weight(self):
        # a task that is not IO-intensive (100), 8 of the 10 files (40 GB) on disk at SAT: panda's data weight
        # counts the disk copy only, (40 + 50) / (50 × (2 / 100 + 1)) = 1.7647; the seed counts the complete tape
        # copy, (50 + 50) / (50 × 1) = 2
        scenario = self.tape_scenario(disk_at_a=(8, 40.0), io=100)
        panda, seed = under("panda", scenario), under("seed", scenario)
        assert factors(panda, "A")["dataWeight"] == pytest.approx(90 / 51, rel=1e-4)
        assert factors(seed, "A")["dataWeight"] == pytest.approx(2.0)


def test_inactive_counts_starting_jobs_too():
    # a scout at a queue that started nothing for 3 h with no activated but 5 starting jobs
    stats = {"activated": 0, "starting": 5, "hoursSinceLastStart": 3}
    scenario = job_scenario(queue("A", site="NUC", stats=stats), jobs={"isScout": True})
    assert "A" not in under("seed", scenario).skipped
    assert codes(under("panda", scenario))["A"] == "inactive"


def test_the_nucleus_is_not_checked_for_transferring_jobs():
    # 3000 transferring > max(2000, 2 × 100 running): skipped at the nucleus only by the seed
    stats = {"transferring": 3000}
    scenario = job_scenario(queue("N", site="NUC", stats=stats), queue("A", stats=stats))
    assert codes(under("seed", scenario)) == {"N": "transferring", "A": "transferring"}
    assert codes(under("panda", scenario)) == {"A": "transferring"}


class TestInputCompleteness:
    @pytest.mark.parametrize(
        ("files", "found", "complete"),
        [(100, 90, True), (100, 89, False), (1000, 990, True), (1000, 989, True), (1000, 899, False)],
    )
    def test_a_copy_missing_at_most_10_files_or_holding_90_percent_counts(self, files, found, complete):
        # 1000 files, 989 found: 11 missing > 10 but 98.9 % ≥ 90 %, complete; 899: neither
        data = [dataset(size=10.0, files=files, replicas={"NUC_DATADISK": (found, 10.0 * found / files)})]
        scenario = job_scenario(queue("A"), queue("N", site="NUC"), datasets=data)
        panda = under("panda", scenario)
        assert ("input_missing" not in set(codes(panda).values())) is complete
        assert "input_missing" not in set(codes(under("seed", scenario)).values())

    def test_no_copy_anywhere_fails_every_queue_naming_the_dataset(self):
        data = [dataset("data.HITS", size=10.0, files=10, replicas={})]
        panda = under("panda", job_scenario(queue("A"), queue("N", site="NUC"), datasets=data))
        assert codes(panda) == {"A": "input_missing", "N": "input_missing"}
        assert panda.skipped["A"].detail == {"dataset": "data.HITS"}

    def test_a_copy_that_cannot_be_read_does_not_count(self):
        data = [dataset(size=10.0, files=10, replicas={"NUC_DATADISK": (10, 10.0)})]
        status = {"read_lan": "OFF", "read_wan": "TEST"}
        down = {"NUC_DATADISK": {"site": "NUC", "space_total": 1e6, "space_free": 5e5, "detailed_status": status}}
        scenario = job_scenario(queue("A"), queue("N", site="NUC"), datasets=data, endpoints=down)
        assert set(codes(under("panda", scenario)).values()) == {"input_missing"}

    def test_pre_staged_tasks_are_not_checked(self):
        data = [dataset(size=10.0, files=10, replicas={})]
        scenario = job_scenario(queue("N", site="NUC"), datasets=data, task={"inputPreStaging": True})
        assert "input_missing" not in set(codes(under("panda", scenario)).values())


class TestZeroShare:
    def test_evgensimul_lets_only_evgen_and_simul_through_under_the_seed(self):
        scenario = job_scenario(
            queue("A", fairsharepolicy="type=evgensimul:100%"), queue("N", site="NUC"), task={"processingType": "deriv"}
        )
        assert codes(under("seed", scenario)) == {"A": "zeroshare"}
        # panda-server 1.0.4 knows no evgensimul group: the rule matches nothing, nothing is restricted
        assert codes(under("panda", scenario)) == {}

    def test_urgent_tasks_ignore_fairshare_under_the_seed_only(self):
        scenario = job_scenario(
            queue("A", fairsharepolicy="type=any:0%"), queue("N", site="NUC"), task={"processingType": "urgent"}
        )
        assert codes(under("seed", scenario)) == {}
        assert codes(under("panda", scenario)) == {"A": "zeroshare"}
        # a processingType that only contains the word is not urgent (issue 33 D2): the zero share applies
        reco = job_scenario(
            queue("A", fairsharepolicy="type=any:0%"), queue("N", site="NUC"), task={"processingType": "urgent_reco"}
        )
        assert codes(under("seed", reco)) == {"A": "zeroshare"}
