"""ATLAS production task brokerage (seed 000), rule by rule, with worked numbers."""

from collections import Counter

import pytest

from brokerage.engine.panda.task_broker import expected_output_gb
from tests.engine.builders import dataset, decide, nucleus, task_scenario


def skipped_codes(decision):
    return {name: skip.code for name, skip in decision.skipped.items()}


class TestStatus:
    def test_only_active_nuclei_are_candidates(self):
        decision = decide(task_scenario(nucleus("A"), nucleus("B", state="DISABLED")))
        assert decision.initial == ("A", "B")  # satellites are never candidates
        assert skipped_codes(decision) == {"B": "status"}
        assert decision.skipped["B"].detail == {"state": "DISABLED", "required": "ACTIVE"}


class TestFullChain:
    NUCLEI = (nucleus("PLAIN"), nucleus("ALLOW", bare="allow"), nucleus("ONLY", bare="only"))

    @pytest.mark.parametrize(
        ("mode", "survivors"),
        [
            ("only", {"ONLY"}),  # bareNucleus=only accepts only full-chain; only needs it
            ("require", {"ONLY", "ALLOW"}),
            ("", {"PLAIN", "ALLOW"}),  # a normal task never goes to a bareNucleus=only nucleus
        ],
    )
    def test_modes(self, mode, survivors):
        decision = decide(task_scenario(*self.NUCLEI, task={"fullChain": mode}))
        assert {c.name for c in decision.candidates} == survivors
        assert {s.code for s in decision.skipped.values()} == {"full_chain"}

    def test_capable_follows_a_parent_on_a_bare_nucleus(self):
        decision = decide(
            task_scenario(
                *self.NUCLEI, task={"fullChain": "capable", "parentNucleus": "ALLOW", "parentBareNucleus": "allow"}
            )
        )
        assert [c.name for c in decision.candidates] == ["ALLOW"]
        assert decision.skipped["PLAIN"].detail["rule"] == "fullChain=capable follows the parent to ALLOW"

    def test_capable_is_ignored_when_the_parent_went_to_a_normal_nucleus(self):
        decision = decide(
            task_scenario(
                *self.NUCLEI, task={"fullChain": "capable", "parentNucleus": "PLAIN", "parentBareNucleus": ""}
            )
        )
        assert {c.name for c in decision.candidates} == {"PLAIN", "ALLOW"}


class TestTransferBacklog:
    def test_below_the_cap_passes_and_at_the_cap_is_a_backlog(self):
        # NQUEUED_NUC_CAP = 2000 files; seed 002: the queue "must be below 2000 files"
        decision = decide(task_scenario(nucleus("A", queued=1999), nucleus("B", queued=2000)))
        assert skipped_codes(decision) == {"B": "transfer_backlog"}
        assert decision.skipped["B"].detail == {"outputQueued": 2000, "cap": 2000}

    def test_negative_t1_weight_ignores_backlogs(self):
        decision = decide(task_scenario(nucleus("B", queued=9000), task={"t1Weight": -1}))
        assert decision.chosen == "B"

    def test_cap_comes_from_gdpconfig(self):
        decision = decide(task_scenario(nucleus("B", queued=2500), gdpconfig={"NQUEUED_NUC_CAP": 3000}))
        assert decision.chosen == "B"

    def test_without_a_figure_the_links_into_the_nucleus_count(self):
        scenario = task_scenario(nucleus("A", queued=None), nucleus("B", queued=None))
        scenario["network"] = [
            {"src": "SAT", "dst": "A", "closeness": 3, "queued": 1500},
            {"src": "B", "dst": "A", "closeness": 3, "queued": 600},
            {"src": "SAT", "dst": "B", "closeness": 3, "queued": 100},
        ]
        decision = decide(scenario)
        assert decision.skipped["A"].detail["outputQueued"] == 2100
        assert "B" not in decision.skipped


class TestStorageAndSpace:
    def test_a_nucleus_needs_storage_for_the_output(self):
        decision = decide(task_scenario(nucleus("A"), nucleus("B", disk=False, tape=True)))
        assert skipped_codes(decision) == {"B": "space"}
        assert decision.skipped["B"].filter == "storage present"

    def test_expected_output_of_the_remaining_work(self):
        # REFERENCE.md: RW / (corePower 10) / 86400 × 0.25 GB; 3.456e9 HS06 s → 4000 core-days → 1000 GB
        assert expected_output_gb(3_456_000_000) == pytest.approx(1000.0)

    def test_space_rule_with_worked_numbers(self):
        # DISK_THRESHOLD 100 TB = 102,400 GB (1 TB = 1024 GB)
        decision = decide(
            task_scenario(
                nucleus("ROOMY", free=100_000, expired=3_000, rw=0),  # 103,000 > 102,400
                nucleus("BUSY", free=100_000, expired=3_000, rw=3_456_000_000),  # 103,000 − 1,000 = 102,000
                nucleus("EXACT", free=102_400, expired=0, rw=0),  # not strictly above the threshold
            )
        )
        assert skipped_codes(decision) == {"BUSY": "space", "EXACT": "space"}
        detail = decision.skipped["BUSY"].detail
        assert detail["spaceAvailable"] == pytest.approx(102_000)
        assert detail["expectedOutputGB"] == pytest.approx(1000)
        assert detail["thresholdGB"] == 102_400
        assert detail["thresholdKey"] == "DISK_THRESHOLD default"

    def test_per_gshare_threshold_wins(self):
        # DISK_THRESHOLD_Express = 50 TB = 51,200 GB applies to Express tasks only
        grid = (nucleus("A", free=60_000),)
        express = decide(task_scenario(*grid, task={"gshare": "Express"}, gdpconfig={"DISK_THRESHOLD_Express": 50}))
        assert express.chosen == "A"
        other = decide(task_scenario(*grid, task={"gshare": "MC 16"}, gdpconfig={"DISK_THRESHOLD_Express": 50}))
        assert skipped_codes(other) == {"A": "space"}
        general = decide(task_scenario(*grid, gdpconfig={"DISK_THRESHOLD": 50}))
        assert general.chosen == "A"
        assert general.skipped == {}


class TestWan:
    @pytest.mark.parametrize(
        ("settings", "expected"),
        [
            ({"write_wan": "OFF"}, {"read_wan": "ON", "write_wan": "OFF", "blacklisted": False}),
            ({"read_wan": "TEST"}, {"read_wan": "TEST", "write_wan": "ON", "blacklisted": False}),
            ({"blacklisted": True}, {"read_wan": "ON", "write_wan": "ON", "blacklisted": True}),
        ],
    )
    def test_both_wan_activities_must_be_on(self, settings, expected):
        decision = decide(task_scenario(nucleus("A"), nucleus("B", **settings)))
        assert skipped_codes(decision) == {"B": "destination_blacklist"}
        assert decision.skipped["B"].detail == {"endpoint": "B_DATADISK", **expected}


class TestDataLocality:
    # 800 GB in 400 files: above INPUT_SIZE_THRESHOLD (1 GB) and INPUT_NUM_THRESHOLD (100 files)
    def scenario(self, replicas, *, task=None, extra_datasets=(), nuclei=("A", "B", "C")):
        return task_scenario(
            *(nucleus(name) for name in nuclei),
            datasets=[dataset(size=800, files=400, replicas=replicas), *extra_datasets],
            task=task,
        )

    def test_more_than_ten_percent_of_size_and_files_must_be_local(self):
        decision = decide(
            self.scenario(
                {
                    "A_DATADISK": (41, 81),  # 10.25 % of files, 10.125 % of size: passes
                    "B_DATADISK": (41, 80),  # exactly 10 % of size: not more than 10 %
                    "C_DATADISK": (40, 81),  # exactly 10 % of files
                },
                task={"ioIntensity": 500},
            )
        )
        assert skipped_codes(decision) == {"B": "insize", "C": "innum"}
        assert decision.skipped["B"].detail["localPercent"] == 10.0
        assert decision.skipped["C"].detail["localFiles"] == 40

    def test_small_inputs_need_no_local_data(self):
        decision = decide(task_scenario(nucleus("A"), datasets=[dataset(size=1, files=100)], task={"ioIntensity": 500}))
        assert decision.chosen == "A"  # 1 GB and 100 files are not above the thresholds

    def test_master_only_when_task_broker_on_master(self):
        # A holds the whole master (400 files, 800 GB) but none of the 5000-file secondary
        secondary = dataset("pileup.HITS", size=5000, files=5000, master=False)
        replicas = {"A_DATADISK": (400, 800), "B_DATADISK": (400, 800)}
        task = {"ioIntensity": 500, "taskPriority": 100}
        with_all = decide(self.scenario(replicas, task=task, extra_datasets=[secondary], nuclei=("A", "C")))
        # all inputs: 800 of 5,800 GB (13.8 %) is enough, 400 of 5,400 files (7.4 %) is not
        assert skipped_codes(with_all) == {"A": "innum", "C": "insize"}
        assert with_all.skipped["A"].detail["localPercent"] == pytest.approx(7.41, abs=0.01)
        master_only = decide(
            self.scenario(
                replicas, task={**task, "taskBrokerOnMaster": True}, extra_datasets=[secondary], nuclei=("A", "C")
            )
        )
        assert skipped_codes(master_only) == {"C": "insize"}

    def test_input_prestaging_accepts_incomplete_nuclei(self):
        decision = decide(self.scenario({"A_DATADISK": (400, 800)}, task={"inputPreStaging": True, "ioIntensity": 500}))
        assert skipped_codes(decision) == {}

    def test_copies_at_one_nucleus_count_once(self):
        scenario = self.scenario(
            {"A_DATADISK": (30, 60), "A_DATATAPE": (30, 60)}, task={"ioIntensity": 500}, nuclei=("A", "B")
        )
        scenario["ddm_endpoints"]["A_DATATAPE"] = {"site": "A", "is_tape": True, "space_total": 1, "space_free": 1}
        scenario["datasets"][0]["replicas"]["B_DATADISK"] = {"nFiles": 400, "sizeGB": 800}
        decision = decide(scenario)
        assert decision.skipped["A"].detail["localSizeGB"] == 60  # not 120

    def test_check_is_dropped_for_light_io_and_moderate_input_when_nothing_passes(self):
        # ioIntensity 100 ≤ 200 kB/s and 800 GB ≤ 10,000 GB
        decision = decide(self.scenario({}, task={"ioIntensity": 100}))
        assert {c.name for c in decision.candidates} == {"A", "B", "C"}
        stage = next(s for s in decision.stages if s.filter == "data locality")
        assert (stage.before, stage.after) == (3, 3)
        assert stage.note.startswith("disabled: no nucleus passed, ioIntensity 100")

    def test_check_is_dropped_for_high_priority(self):
        decision = decide(self.scenario({}, task={"ioIntensity": 500, "taskPriority": 800}))
        assert len(decision.candidates) == 3
        assert "taskPriority 800 ≥ 800" in decision.stages[-1].note

    def test_check_stays_when_some_nucleus_passes(self):
        decision = decide(self.scenario({"A_DATADISK": (400, 800)}, task={"ioIntensity": 100}))
        assert skipped_codes(decision) == {"B": "insize", "C": "insize"}

    def test_heavy_io_low_priority_task_is_pending_30_minutes(self):
        decision = decide(self.scenario({}, task={"ioIntensity": 500, "taskPriority": 799}))
        assert (decision.outcome, decision.chosen, decision.retry_after_minutes) == ("pending", None, 30)
        assert decision.message.startswith("pending: all 3 nucleus candidates skipped (3 too little input data local)")


class TestWeights:
    def test_plain_formula(self):
        # weight = tapeWeight × (free + expired) × min(cutoff, free) / (max(50, RW) × total)
        #        = 1 × 320,000 × 300,000 / (1,000,000 × 1,000,000) = 0.096
        decision = decide(task_scenario(nucleus("A", free=300_000, expired=20_000, total=1_000_000, rw=1_000_000)))
        candidate = decision.candidates[0]
        assert candidate.weight == pytest.approx(0.096)
        assert candidate.factors["formula"] == "space and RW"
        assert candidate.factors["spaceFreeCutoffGB"] == 1_024_000  # FREE_DISK_CUTOFF 1000 TB

    def test_rw_offset(self):
        # RW 10 < rwOffset 50: 320,000 × 300,000 / (50 × 1,000,000) = 1920
        decision = decide(task_scenario(nucleus("A", free=300_000, expired=20_000, rw=10)))
        assert decision.candidates[0].weight == pytest.approx(1920.0)
        assert decision.candidates[0].factors["rwUsed"] == 50

    def test_free_space_cutoff(self):
        # free 2,000,000 GB counts as at most 1,024,000 GB in min(spaceFreeCutoff, spaceFree)
        decision = decide(task_scenario(nucleus("A", free=2_000_000, total=4_000_000, rw=1_000_000)))
        assert decision.candidates[0].weight == pytest.approx(2_000_000 * 1_024_000 / (1_000_000 * 4_000_000))

    def test_local_input_formula_for_io_intensive_tasks(self):
        # ioIntensity 300 > 200: × localInputSize / totalInputSize = × 400 / 800
        scenario = task_scenario(
            nucleus("A", free=300_000, expired=20_000, rw=1_000_000),
            datasets=[dataset(size=800, files=400, replicas={"A_DATADISK": (200, 400)})],
            task={"ioIntensity": 300},
        )
        candidate = decide(scenario).candidates[0]
        assert candidate.weight == pytest.approx(0.096 * 0.5)
        assert (candidate.factors["localInputGB"], candidate.factors["totalInputGB"]) == (400, 800)

    def test_tape_only_input_weighs_a_thousandth(self):
        scenario = task_scenario(
            nucleus("A", free=300_000, expired=20_000, rw=1_000_000, tape=True),
            nucleus("B", free=300_000, expired=20_000, rw=1_000_000),
            datasets=[dataset(size=0.5, files=5, replicas={"A_DATATAPE": (5, 0.5)})],
        )
        weights = {c.name: c.weight for c in decide(scenario).candidates}
        assert weights["A"] == pytest.approx(0.096 * 0.001)
        assert weights["B"] == pytest.approx(0.096)

    def test_nucleus_without_total_space_weighs_zero(self):
        decision = decide(task_scenario(nucleus("A", total=0, free=200_000)))
        assert decision.candidates[0].weight == 0.0
        assert decision.chosen == "A"  # the only candidate; all-zero weights draw uniformly

    def test_candidates_are_best_first(self):
        decision = decide(task_scenario(nucleus("LOW", rw=4e9), nucleus("HIGH", rw=1e6), nucleus("MID", rw=1e8)))
        assert [c.name for c in decision.candidates] == ["HIGH", "MID", "LOW"]


class TestDraw:
    def test_same_seed_same_choice_and_frequencies_follow_weights(self):
        # weights 3 : 1 (RW 1e6 vs 3e6 with the same storage)
        grid = (nucleus("HEAVY", rw=1_000_000), nucleus("LIGHT", rw=3_000_000))
        picks = Counter(decide(task_scenario(*grid, seed=seed)).chosen for seed in range(2000))
        assert picks["HEAVY"] / 2000 == pytest.approx(0.75, abs=0.03)
        assert decide(task_scenario(*grid, seed=11)).chosen == decide(task_scenario(*grid, seed=11)).chosen


def test_no_nucleus_at_all_is_pending():
    decision = decide(task_scenario())
    assert decision.outcome == "pending"
    assert decision.message == "pending: no nucleus to consider"
