"""The `panda` profile of the task and analysis brokers: each switch with worked numbers, against the seed.

The rules are panda-server 1.0.4's AtlasProdTaskBroker and AtlasAnalJobBroker; tests/tools/peer checks the profile
against that code. Task builder defaults (tests/engine/builders.py): nuclei with one DATADISK of 1,000,000 GB,
300,000 GB free, no remaining work, ioIntensity 100 (below MIN_IO_INTENSITY_WITH_LOCAL_DATA 200).
"""

import pytest

from tests.engine.builders import anal_scenario, dataset, decide, nucleus, queue, task_scenario

EVERYWHERE = {"A_DATADISK": (5, 0.5), "B_DATADISK": (5, 0.5)}


def under(profile, scenario):
    return decide({**scenario, "profile": profile})


def weights(decision):
    return {c.name: c.weight for c in decision.candidates}


def codes(decision):
    return {name: skip.code for name, skip in decision.skipped.items()}


class TestTaskBroker:
    def test_remaining_work_under_50_weighs_one(self):
        # both 300,000 GB free of 1,000,000; A has RW 20, B 100.
        # panda: A = 1 × 0.3 × min(1000, floor(300000 / 1024) = 292) = 87.6, B = 87.6 / 100 = 0.876 (100 : 1)
        # seed: divides by max(50, RW): A = 300000 × 300000 / (50 × 1e6) = 1800, B = 900 (2 : 1)
        scenario = task_scenario(nucleus("A", rw=20), nucleus("B", rw=100), datasets=[dataset(replicas=EVERYWHERE)])
        panda, seed = weights(under("panda", scenario)), weights(under("seed", scenario))
        assert panda["A"] == pytest.approx(0.3 * 292)
        assert panda["B"] == pytest.approx(0.3 * 292 / 100)
        assert seed["A"] == pytest.approx(1800)
        assert seed["B"] == pytest.approx(900)

    def test_a_nucleus_exactly_at_the_disk_threshold_passes(self):
        # DISK_THRESHOLD 100 TB = 102,400 GB: usable 102,400 is short for the seed (needs more), enough for panda
        scenario = task_scenario(nucleus("A", free=102_400), nucleus("B"), datasets=[dataset(replicas=EVERYWHERE)])
        assert codes(under("seed", scenario)) == {"A": "space"}
        assert codes(under("panda", scenario)) == {}

    def test_under_one_tb_free_weighs_zero(self):
        # threshold 0: 1,000 GB free is floor(1000 / 1024) = 0 whole TB, weight 0 under panda
        scenario = task_scenario(
            nucleus("A", free=1000),
            nucleus("B"),
            datasets=[dataset(replicas=EVERYWHERE)],
            gdpconfig={"DISK_THRESHOLD": 0},
        )
        assert weights(under("panda", scenario))["A"] == 0
        assert weights(under("seed", scenario))["A"] > 0

    def test_the_expected_output_is_whole_gb_off_the_usable_space(self):
        # RW 5,000,000: int(5e6 / 10 / 86400 × 0.25) = 1 GB; 102,401 − 1 = 102,400 passes, 102,400 − 1 fails
        passing = task_scenario(nucleus("A", free=102_401, rw=5_000_000), datasets=[dataset(replicas=EVERYWHERE)])
        failing = task_scenario(nucleus("A", free=102_400, rw=5_000_000), datasets=[dataset(replicas=EVERYWHERE)])
        assert codes(under("panda", passing)) == {}
        assert codes(under("panda", failing)) == {"A": "space"}
        assert under("panda", failing).skipped["A"].detail["expectedOutputGB"] == 1

    def test_a_backlog_is_above_the_cap_not_at_it(self):
        scenario = task_scenario(nucleus("A", queued=2000), nucleus("B"), datasets=[dataset(replicas=EVERYWHERE)])
        assert codes(under("seed", scenario)) == {"A": "transfer_backlog"}
        assert codes(under("panda", scenario)) == {}

    def test_tape_holding_more_than_disk_weighs_a_thousandth(self):
        # A: 2 of 5 files on disk, all 5 on tape; panda ×0.001 (tape holds more), the seed only for tape alone
        data = [dataset(replicas={"A_DATADISK": (2, 0.2), "A_DATATAPE": (5, 0.5), "B_DATADISK": (5, 0.5)})]
        scenario = task_scenario(nucleus("A", tape=True), nucleus("B"), datasets=data)
        panda, seed = weights(under("panda", scenario)), weights(under("seed", scenario))
        assert panda["A"] / panda["B"] == pytest.approx(0.001)
        assert seed["A"] / seed["B"] == pytest.approx(1.0)

    def test_no_complete_readable_copy_brokers_no_nucleus(self):
        data = [dataset(replicas={"A_DATADISK": (4, 0.4)})]  # 4 of 5 files, nowhere complete
        scenario = task_scenario(nucleus("A"), nucleus("B"), datasets=data)
        assert set(codes(under("panda", scenario)).values()) == {"input_missing"}
        assert under("seed", scenario).chosen is not None

    def test_the_first_dataset_without_a_readable_copy_is_named(self):
        # EVNT complete at A; HITS 4 of 5 files at A, complete only at B whose read_wan is OFF: HITS is named
        data = [
            dataset("mc.EVNT", replicas=EVERYWHERE),
            dataset("mc.HITS", master=False, replicas={"A_DATADISK": (4, 0.4), "B_DATADISK": (5, 0.5)}),
        ]
        scenario = task_scenario(nucleus("A"), nucleus("B", read_wan="OFF"), datasets=data)
        assert under("panda", scenario).skipped["A"].detail == {"readableCompleteCopy": False, "dataset": "mc.HITS"}

    def test_a_nucleus_failing_its_wan_and_its_space_is_skipped_for_its_wan(self):
        # A: write_wan OFF and 1,000 GB free, under DISK_THRESHOLD's 102,400: the real endpoint check reads the
        # WAN activities before the space (destination_blacklist); the seed lists space first
        scenario = task_scenario(
            nucleus("A", free=1000, write_wan="OFF"), nucleus("B"), datasets=[dataset(replicas=EVERYWHERE)]
        )
        assert codes(under("panda", scenario)) == {"A": "destination_blacklist"}
        assert codes(under("seed", scenario)) == {"A": "space"}


def with_queues(scenario, *queues, jobs=None):
    """A task scenario carrying production queues (and the first job the job check sizes)."""
    scenario["queues"] = {q["name"]: q["record"] for q in queues}
    scenario["queue_stats"] = {q["name"]: q["stats"] for q in queues}
    scenario["jobs"] = {"nFiles": 1, "nEvents": 100, "inputSizeMB": 1000, **(jobs or {})}
    return scenario


class TestTaskJobCheck:
    """AtlasProdTaskBroker "job check": job brokerage over the nuclei's production queues (hintForTB). Queue
    builder defaults: 8 cores, maxrss 32,000 MB, maxwdir 160,000 MB, 100 running, 50 pilots in 3 h."""

    TASK = {"coreCount": 8, "ramCount": 2000, "ramUnit": "MBPerCore", "cpuTime": 10, "currentPriority": 500}

    def scenario(self, *queues, jobs=None, **task):
        base = task_scenario(
            nucleus("A"), nucleus("B"), datasets=[dataset(replicas=EVERYWHERE)], task={**self.TASK, **task}
        )
        return with_queues(base, *queues, jobs=jobs)

    def test_a_nucleus_whose_queues_cannot_run_the_jobs_is_skipped(self):
        # A's only queue: maxrss 12,000 < 2,000 MB × 8 cores × 0.9 = 14,400 MB; B's 32,000 fits
        scenario = self.scenario(queue("A_Q", site="A", maxrss=12000), queue("B_Q", site="B"))
        panda = under("panda", scenario)
        assert codes(panda) == {"A": "job"}
        assert panda.skipped["A"].detail == {
            "queues": 1,
            "queuesAble": 0,
            "queuesSkipped": "A_Q: memory too small",
        }
        assert {c.name for c in panda.candidates} == {"B"}
        assert codes(under("seed", scenario)) == {}  # TASK_JOB_CHECK is off under the seed

    def test_one_able_queue_is_enough(self):
        scenario = self.scenario(
            queue("A_OFF", site="A", status="brokeroff"), queue("A_ON", site="A"), queue("B_Q", site="B")
        )
        assert codes(under("panda", scenario)) == {}

    def test_a_nucleus_without_production_queue_is_skipped(self):
        # B has an analysis queue only: production jobs never go there
        scenario = self.scenario(queue("A_Q", site="A"), queue("ANALY_B", site="B", type="analysis"))
        panda = under("panda", scenario)
        assert codes(panda) == {"B": "job"}
        assert panda.skipped["B"].detail["queuesSkipped"] == "no production queue"
        assert panda.skipped["B"].detail["queues"] == 0

    def test_the_first_job_of_the_scenario_is_sized(self):
        # a 1-core queue with maxwdir 20,000 MB; the job needs 1,500 MB of output (InputChunk.defaultOutputSize)
        # + its input: 18,500 MB of input fits (20,000 is not more than 20,000), 18,501 MB does not
        small = queue("A_Q", site="A", corecount=1, maxwdir=20_000)
        fits = self.scenario(small, jobs={"inputSizeMB": 18_500}, coreCount=1, ramCount=1000)
        too_big = self.scenario(small, jobs={"inputSizeMB": 18_501}, coreCount=1, ramCount=1000)
        assert codes(under("panda", fits)) == {"B": "job"}
        decision = under("panda", too_big)
        assert codes(decision) == {"A": "job", "B": "job"}
        assert decision.skipped["A"].detail["queuesSkipped"] == "A_Q: not enough disk"
        assert decision.chosen is None

    def test_rules_against_a_nucleus_are_not_asked(self):
        # 3,000 transferring > max(2,000, 2 × 100 running) skips a satellite queue; at a nucleus, and every queue
        # the job check scans is at one, panda-server does not count them. t1Weight −1 keeps no queue out either.
        busy = queue("A_Q", site="A", stats={"transferring": 3000})
        scenario = self.scenario(busy, queue("B_Q", site="B"), t1Weight=-1)
        assert codes(under("panda", scenario)) == {}

    def test_temporary_problems_count_as_well(self):
        # no pilot in 3 h: the real job check drops temporary problems before it answers
        scenario = self.scenario(queue("A_Q", site="A", stats={"pilotsLast3h": 0}), queue("B_Q", site="B"))
        decision = under("panda", scenario)
        assert codes(decision) == {"A": "job"}
        assert decision.skipped["A"].detail["queuesSkipped"] == "A_Q: no pilots"

    def test_more_than_three_skipped_queues_are_summed_up(self):
        offline = [queue(f"A_Q{i}", site="A", status="offline") for i in range(5)]
        decision = under("panda", self.scenario(*offline, queue("B_Q", site="B")))
        assert decision.skipped["A"].detail["queuesSkipped"] == (
            "A_Q0: not online/ACTIVE; A_Q1: not online/ACTIVE; A_Q2: not online/ACTIVE; and 2 more"
        )

    def test_the_shifter_reads_which_queues_failed(self):
        from brokerage.engine.core.reasons import explain

        decision = under("panda", self.scenario(queue("A_Q", site="A", maxrss=12000), queue("B_Q", site="B")))
        assert explain("job", decision.skipped["A"].detail) == (
            "Job brokerage keeps none of its 1 production queues (A_Q: memory too small)."
        )


def anal_queue(name, **stats):
    return queue(name, site="SAT", corecount=1, stats={"assigned": 0, "defined": 0, **stats})


class TestAnalysisBroker:
    def test_one_closed_job_skips_the_queue(self):
        scenario = anal_scenario(
            anal_queue("ANALY_A"), anal_queue("ANALY_B"), user_stats={"queues": {"ANALY_A": {"taskClosed": 1}}}
        )
        assert codes(under("panda", scenario)) == {"ANALY_A": "closed"}
        assert "ANALY_A" not in codes(under("seed", scenario))

    def test_bad_jobs_skip_only_above_the_limit(self):
        # 5 failed, 0 finished: max(2 × 0, MIN_BAD_JOBS_TO_SKIP_PQ 5) = 5; 5 ≥ 5 for the seed, not > 5 for panda
        stats = {"queues": {"ANALY_A": {"taskFailed": 5, "taskFinished": 0}}}
        scenario = anal_scenario(anal_queue("ANALY_A"), anal_queue("ANALY_B"), user_stats=stats)
        assert codes(under("seed", scenario)).get("ANALY_A") == "badsite"
        assert "ANALY_A" not in codes(under("panda", scenario))

    def test_overload_against_the_ratio_over_all_queues(self):
        # A: 30 queued, 10 running; B: 10 queued, 100 running. Over all queues 40 / 110 = 0.364; A's 3.0 is above
        # 1.2 × 0.364 with more than 20 queued: overloaded for panda. The seed's limit 2 × max(20, 10) = 40 > 30.
        scenario = anal_scenario(
            anal_queue("ANALY_A", running=10, activated=30, starting=0),
            anal_queue("ANALY_B", running=100, activated=10, starting=0),
        )
        panda = under("panda", scenario)
        assert codes(panda) == {"ANALY_A": "overloaded"}
        assert panda.skipped["ANALY_A"].detail["grandRatio"] == pytest.approx(40 / 110, abs=1e-4)
        assert "ANALY_A" not in codes(under("seed", scenario))

    def test_when_every_queue_is_overloaded_only_idle_ones_go(self):
        scenario = anal_scenario(
            anal_queue("ANALY_A", running=0, activated=30, starting=0),
            anal_queue("ANALY_B", running=10, activated=300, starting=0),
        )
        assert codes(under("panda", scenario)) == {"ANALY_A": "overloaded"}

    @staticmethod
    def vp_scenario(**task):
        # ANALY_VP reads through virtual placement, 10 running and 50 queued; ANALY_B 100 running, 10 queued
        vp = anal_queue("ANALY_VP", running=10, activated=50, starting=0)
        vp["record"]["use_vp"] = True
        return anal_scenario(vp, anal_queue("ANALY_B", running=100, activated=10, starting=0), task=task)

    def test_an_overloaded_virtual_placement_queue(self):
        # seed: 50 queued > 2 × max(20, 10) = 40, an overloaded VP queue (overloaded_vp). panda: VP-placed data is
        # not described, so the queue-length rule judges it like any queue: 50 > 20 queued and 50 / 10 = 5 above
        # 1.2 × (60 / 110) = 0.65 → overloaded
        assert codes(under("seed", self.vp_scenario())) == {"ANALY_VP": "overloaded_vp"}
        assert codes(under("panda", self.vp_scenario())) == {"ANALY_VP": "overloaded"}

    def test_a_task_avoiding_virtual_placement(self):
        for profile in ("seed", "panda"):
            decision = under(profile, self.vp_scenario(avoidVP=True))
            assert codes(decision) == {"ANALY_VP": "overloaded_vp"}
            assert decision.skipped["ANALY_VP"].detail["avoidVP"] is True

    DATA_AT_A = [dataset(size=10, files=4, replicas={"HAS_DATADISK": (4, 10)})]
    SITES = {"HAS": {"role": "satellite", "state": "ACTIVE"}}

    def with_data(self, **task):
        return anal_scenario(
            queue("ANALY_A", site="HAS", corecount=1),
            anal_queue("ANALY_B"),
            datasets=self.DATA_AT_A,
            sites=self.SITES,
            task={"taskPriority": 2000, **task},
        )

    def test_a_high_priority_task_still_goes_to_its_data_first(self):
        # taskPriority 2000: the seed drops the locality check; panda's first loop keeps it, and only when that
        # loop keeps nothing does a second one go without
        scenario = self.with_data()
        assert {c.name for c in under("seed", scenario).candidates} == {"ANALY_A", "ANALY_B"}
        assert {c.name for c in under("panda", scenario).candidates} == {"ANALY_A"}
        offline = self.with_data()
        offline["queues"]["ANALY_A"]["status"] = "offline"
        second = under("panda", offline)
        assert {c.name for c in second.candidates} == {"ANALY_B"}
        assert "tried again without it" in second.message

    def test_without_a_complete_copy_an_incomplete_one_counts_as_the_data(self):
        # 3 of 4 files at HAS and nowhere complete: ANALY_A has the data for panda's locality check
        data = [dataset(size=10, files=4, replicas={"HAS_DATADISK": (3, 7.5)})]
        scenario = anal_scenario(
            queue("ANALY_A", site="HAS", corecount=1), anal_queue("ANALY_B"), datasets=data, sites=self.SITES
        )
        panda = under("panda", scenario)
        assert {c.name for c in panda.candidates} == {"ANALY_A"}
        assert codes(panda) == {"ANALY_B": "fileunavailable"}

    def test_a_unified_queue_is_brokered_as_its_pseudo_queues(self):
        # an 8-core unified queue with maxrss 16,000: its 1-core pseudo-queues get 16,000 × 1 / 8 = 2,000 MB;
        # a 3,000 MB single-core job (× 0.9 = 2,700 MB) fits none of them
        unified = queue("ANALY_U", site="SAT", corecount=8, maxrss=16000, capability="ucore", type="unified")
        scenario = anal_scenario(unified, anal_queue("ANALY_B"), task={"ramCount": 3000})
        decision = under("panda", scenario)
        assert {c.name for c in decision.candidates} == {"ANALY_B"}
        assert decision.skipped["ANALY_U/SCORE"].code == "lowmemory"
        assert decision.skipped["ANALY_U/SCORE"].detail["maxrss"] == 2000
