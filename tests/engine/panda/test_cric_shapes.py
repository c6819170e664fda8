"""The PanDA brokers on inputs shaped as CRIC and JEDI write them (issue 49), each rule with worked numbers against
panda-server 1.0.4 (file and line in each test); tests/tools/peer/test_real_shapes.py runs the whole of it against the
real code. Builder defaults (tests/engine/builders.py): an 8-core task at priority 500, ramCount 2000 MBPerCore,
cpuTime 300 HS06 s over 1,000 events, 2,000 MB of input in 2 files; queues of 8 cores, maxwdir 160,000 MB,
maxtime 259,200 s, corepower 10, at site SAT (satellite) or NUC (the nucleus)."""

import pytest

from brokerage.engine.core.scenario import ScenarioError
from tests.engine.builders import anal_scenario, dataset, decide, job_scenario, queue, task_scenario


def under(profile, scenario):
    return decide({**scenario, "profile": profile})


def codes(decision):
    return {name: skip.code for name, skip in decision.skipped.items()}


def kept(decision):
    return {c.name for c in decision.candidates}


def weight(decision, name):
    return next(c.weight for c in decision.candidates if c.name == name)


NUC = queue("N", site="NUC")


class TestOutputSize:
    """AtlasProdJobBroker.py 929-938: outDiskCount in kB is kB of output per MB of input (CoreUtils.
    getEffectiveFileSize gives the input in MB), not per byte."""

    def test_output_is_scaled_by_the_input_in_megabytes(self):
        # 500 kB × 4,096 MB = 2,048,000 kB = 2,000 MB of output (above the 1,500 MB floor), + 4,096 MB copied in =
        # 6,096 MB; a single-core queue of 6,096 MB keeps the job, one of 6,095 MB does not
        task = {"coreCount": 1, "outDiskCount": 500, "outDiskUnit": "kB"}
        scenario = job_scenario(
            queue("FITS", corecount=1, maxwdir=6096),
            queue("SHORT", corecount=1, maxwdir=6095),
            NUC,
            task=task,
            jobs={"inputSizeMB": 4096},
        )
        decision = under("panda", scenario)
        assert "FITS" in kept(decision)
        assert codes(decision)["SHORT"] == "disk"
        assert decision.skipped["SHORT"].detail["neededMB"] == 6096

    def test_a_small_output_takes_the_1500_mb_floor(self):
        # 10 kB a MB of 2,000 MB = 19.5 MB of output, below the 1,500 MB floor: 1,500 + 2,000 = 3,500 MB
        task = {"coreCount": 1, "outDiskCount": 10, "outDiskUnit": "kB"}
        scenario = job_scenario(queue("Q", corecount=1, maxwdir=3499), NUC, task=task)
        assert under("panda", scenario).skipped["Q"].detail["neededMB"] == 3500

    def test_the_work_directory_counts_in_its_unit_with_a_300_mb_margin(self):
        # 2 GB of work directory = 2,048 MB + 300 MB margin; + 1,500 MB output floor + 2,000 MB input = 5,848 MB
        task = {"coreCount": 1, "workDiskCount": 2, "workDiskUnit": "GB"}
        scenario = job_scenario(queue("Q", corecount=1, maxwdir=5847), NUC, task=task)
        assert under("panda", scenario).skipped["Q"].detail["neededMB"] == 5848

    def test_a_unit_jedi_does_not_know_is_bytes(self):
        # JediTaskSpec.getWorkDiskSize: "TB" is none of GB, MB, kB, so 2 bytes + 300 MB; + 1,500 + 2,000 = 3,800 MB
        task = {"coreCount": 1, "workDiskCount": 2, "workDiskUnit": "TB"}
        scenario = job_scenario(queue("Q", corecount=1, maxwdir=3799), NUC, task=task)
        assert under("panda", scenario).skipped["Q"].detail["neededMB"] == 3800

    def test_a_work_disk_unit_must_be_text(self):
        with pytest.raises(ScenarioError, match=r"\$\.task\.workDiskUnit"):
            decide(job_scenario(NUC, task={"workDiskUnit": 5}))


class TestMemoryAndCores:
    def test_a_task_without_ramcount_skips_the_memory_check(self):
        # AtlasProdJobBroker.py 873-874: no requirement, no check (the seed compares base RAM with minrss)
        task = {"ramCount": 0, "baseRamCount": 1000}
        scenario = job_scenario(queue("Q", minrss=4000), NUC, task=task)
        assert "Q" in kept(under("panda", scenario))
        assert codes(under("seed", scenario))["Q"] == "highmemory"

    def test_core_count_0_goes_multicore_only_at_priority_900_or_for_scouts(self):
        # AtlasProdJobBroker.py 289-295: 0 = "either", but MCORE only close to completion or for scouts
        single = queue("S", corecount=1)
        for task, jobs, expected in (
            ({"coreCount": 0, "currentPriority": 900}, {}, "cpucore"),
            ({"coreCount": 0, "currentPriority": 899}, {"isScout": True}, "cpucore"),
            ({"coreCount": 0, "currentPriority": 899}, {}, None),
        ):
            decision = under("panda", job_scenario(single, NUC, task=task, jobs=jobs))
            assert codes(decision).get("S") == expected, (task, jobs)


class TestEventServiceWalltime:
    def test_the_events_are_shared_by_consumers_and_attempts(self):
        # AtlasProdJobBroker.py 1031-1041, 1088: 300 HS06 s × 1,000 events = 300,000, / (2 consumers × (2 + 1)
        # attempts) = 50,000 HS06 s; the queue's limit (1,600 − 600) × 8 cores × 10 × 0.9 = 72,000: kept, where
        # without event service 300,000 > 72,000 is -shortwalltime
        es_queue = queue("E", maxtime=1600, jobseed="all")
        task = {"eventService": True, "nEsConsumers": 2, "maxAttemptEsJob": 2}
        decision = under("panda", job_scenario(es_queue, NUC, task=task))
        assert "E" in kept(decision)
        plain = under("panda", job_scenario(queue("P", maxtime=1600), NUC))
        assert codes(plain)["P"] == "shortwalltime"

    def test_without_attempts_the_default_is_three(self):
        # 300,000 / (1 × 3) = 100,000 > 72,000: skipped
        task = {"eventService": True}
        decision = under("panda", job_scenario(queue("E", maxtime=1600, jobseed="all"), NUC, task=task))
        assert codes(decision)["E"] == "shortwalltime"
        assert decision.skipped["E"].detail["hs06Needed"] == pytest.approx(100_000)


class TestCricRecord:
    def test_a_null_corepower_is_0_and_any_timed_job_is_too_long(self):
        # entity_module.py 1855-1858: corepower null → 0, so (259,200 − 600) × 8 × 0 × 0.9 = 0 HS06 s of limit;
        # the seed counts 10 HS06 a core there
        scenario = job_scenario(queue("Z", corepower=None), queue("T", corepower=0), NUC)
        panda = under("panda", scenario)
        assert codes(panda) == {"Z": "shortwalltime", "T": "shortwalltime"}
        assert {"Z", "T"} <= kept(under("seed", scenario))

    def test_a_production_queue_with_an_empty_cloud_is_not_a_candidate(self):
        # SiteMapper.py 75-79 ("Empty cloud"); a record without the key (hand-written) stays
        scenario = job_scenario(queue("C", cloud=""), queue("W", cloud="WORLD"), queue("A"), NUC)
        assert "C" not in under("panda", scenario).initial
        assert {"W", "A"} <= set(under("panda", scenario).initial)
        assert "C" in under("seed", scenario).initial

    def test_per_core_attributes_are_multiplied_by_the_cores(self):
        # entity_module.py 1980-1988: per_core_attr: maxrss 2,000 a core × 8 = 16,000 MB ≥ the job's 2,000 × 8 × 0.9
        # = 14,400: kept; read as a whole queue's 2,000 MB it would be -lowmemory
        scenario = job_scenario(queue("P", maxrss=2000, catchall="per_core_attr"), queue("W", maxrss=2000), NUC)
        decision = under("panda", scenario)
        assert "P" in kept(decision)
        assert codes(decision)["W"] == "lowmemory"

    def test_a_jumbo_queue_takes_only_jumbo_jobs(self):
        # AtlasProdJobBroker.py 618-635: catchall useJumboJobs, or the same key in params
        scenario = job_scenario(
            queue("J", catchall="zip_time_gap=7200,useJumboJobs"), queue("K", params={"useJumboJobs": True}), NUC
        )
        assert codes(under("panda", scenario)) == {"J": "jumbo", "K": "jumbo"}
        assert codes(under("seed", scenario)) == {}

    @pytest.mark.parametrize("profile", ["seed", "panda"])
    def test_a_task_with_jumbo_jobs_keeps_the_jumbo_queues_for_them(self, profile):
        # AtlasProdJobBroker.py 2083-2092: a task with nJumboJobs weighs the jumbo queues with the others, then keeps
        # them as jumbo candidates; its job set (co-jumbo jobs) is drawn among the rest
        es = {"jobseed": "all"}
        scenario = job_scenario(
            queue("J", catchall="useJumboJobs", **es), queue("Q", **es), queue("N", site="NUC", **es),
            task={"nJumboJobs": 2, "eventService": True},
        )  # fmt: skip
        decision = under(profile, scenario)
        assert decision.chosen in {"Q", "N"}
        assert decision.skipped["J"].code == "jumbo"
        assert decision.skipped["J"].filter == "jumbo jobs"
        assert decision.skipped["J"].detail["nJumboJobs"] == 2
        assert decision.stages[-1].filter == "jumbo jobs"
        assert (decision.stages[-1].before, decision.stages[-1].after) == (3, 2)

    def test_a_task_with_jumbo_jobs_and_only_jumbo_queues_has_no_queue_for_its_job_set(self):
        # the nucleus's queue runs no event service (jobseed std): the jumbo queue is the only one left, kept for jumbo
        scenario = job_scenario(
            queue("J", catchall="useJumboJobs", jobseed="all"), NUC, task={"nJumboJobs": 1, "eventService": True}
        )
        decision = under("panda", scenario)
        assert decision.chosen is None
        assert decision.outcome == "pending"
        assert decision.skipped["N"].code == "es"
        assert decision.skipped["J"].filter == "jumbo jobs"

    def test_a_queue_caps_the_io_intensity_it_takes(self):
        # AtlasProdJobBroker.py 1426-1441: ioIntensity 600 > params.max_io_intensity 500: skipped; 600 ≤ 600 kept
        scenario = job_scenario(
            queue("LOW", params={"max_io_intensity": 500}), queue("EQ", params={"max_io_intensity": 600}), NUC,
            task={"ioIntensity": 600},
        )  # fmt: skip
        decision = under("panda", scenario)
        assert codes(decision)["LOW"] == "max_io_intensity"
        assert decision.skipped["LOW"].detail == {"ioIntensity": 600.0, "maxIOIntensity": 500.0}
        assert "EQ" in kept(decision)

    def test_a_local_data_queue_skips_work_whose_input_would_move(self):
        # AtlasProdJobBroker.py 1850-1858, 1989: 5 files of 0.5 GB at NUC only; SAT's queue would move 512 MB
        data = [dataset(replicas={"NUC_DATADISK": (5, 0.5)})]
        scenario = job_scenario(queue("L", catchall="use_only_local_data"), queue("N", site="NUC"), datasets=data)
        decision = under("panda", scenario)
        assert codes(decision)["L"] == "non_local"
        assert decision.skipped["L"].detail["mbToMove"] == 512
        local = job_scenario(queue("L", site="NUC", catchall="use_only_local_data"), datasets=data)
        assert "L" in kept(under("panda", local))

    def test_a_queues_own_bare_nucleus_setting_counts(self):
        # AtlasProdJobBroker.py 1466-1470 reads the queue's catchall: bareNucleus=only takes full-chain work only
        scenario = job_scenario(queue("B", catchall="bareNucleus=only"), NUC)
        assert codes(under("panda", scenario))["B"] == "not_full_chain"

    def test_params_must_be_an_object(self):
        with pytest.raises(ScenarioError, match=r"\$\.queues\.Q\.params"):
            decide(job_scenario(queue("Q", params=[1, 2]), NUC))


class TestNucleusStorageSharing:
    """DataServiceUtils.getSitesShareDDM (output_share=True), AtlasProdJobBroker.py 276-281, 1863: a queue writing
    to storage the nucleus's first production queue reads counts as at the nucleus."""

    def test_a_diskless_satellite_writing_to_the_nucleus_gets_the_nucleus_weight(self):
        # t1Weight 3: the sharing queue's weight is 3 × that of an identical queue with its own storage
        shared = queue("D", read_lan="NUC_DATADISK", write_lan="NUC_DATADISK")
        own = queue("O")
        scenario = job_scenario(shared, own, queue("N", site="NUC"), task={"t1Weight": 3})
        panda = under("panda", scenario)
        assert weight(panda, "D") == pytest.approx(3 * weight(panda, "O"))
        seed = under("seed", scenario)
        assert weight(seed, "D") == pytest.approx(weight(seed, "O"))

    def test_with_t1weight_minus_one_the_sharing_queue_stays(self):
        shared = queue("D", read_lan="NUC_DATADISK", write_lan="NUC_DATADISK")
        # O is outside; D and N count as the nucleus's, and of those the first scanned with the most running jobs
        # (100 each: D) is kept (NEGATIVE_T1_WEIGHT_RULE most_running)
        scenario = job_scenario(shared, queue("O"), queue("N", site="NUC"), task={"t1Weight": -1})
        decision = under("panda", scenario)
        assert decision.skipped["O"].filter == "t1 weight"
        assert decision.skipped["N"].filter == "t1 weight most running"
        assert kept(decision) == {"D"}
        assert kept(under("seed", scenario)) == {"N"}  # the seed: the nucleus's own queue only

    def test_a_unified_first_queue_shares_only_with_queues_running_analysis(self):
        # getSitesShareDDM: a unified nucleus queue runs analysis too, and a production-only queue then does not
        # share with it
        shared = queue("D", read_lan="NUC_DATADISK", write_lan="NUC_DATADISK")
        own = queue("O")
        first = queue("N", site="NUC", type="unified", capability="ucore")
        panda = under("panda", job_scenario(shared, own, first, task={"t1Weight": 3}))
        assert weight(panda, "D") == pytest.approx(weight(panda, "O"))


class TestTaskBrokerage:
    def test_a_nucleus_takes_its_bare_mode_from_its_first_queue(self):
        # SiteMapper.collect_nuclei_and_satellites: the first production queue's catchall bareNucleus=only makes
        # the nucleus take full-chain tasks only (-full_chain), whatever the site says
        from tests.engine.builders import nucleus

        data = [dataset(replicas={"NUC1_DATADISK": (5, 0.5), "NUC2_DATADISK": (5, 0.5)})]
        bare_first = queue("Q1", site="NUC1", corecount=1, catchall="bareNucleus=only")
        scenario = task_scenario(
            nucleus("NUC1"),
            nucleus("NUC2"),
            datasets=data,
            task={"coreCount": 1, "cpuTime": 10, "nucleus": ""},
            queues={"Q1": bare_first["record"], "Q2": queue("Q2", site="NUC2", corecount=1)["record"]},
            queue_stats={"Q1": bare_first["stats"], "Q2": queue("Q2", site="NUC2", corecount=1)["stats"]},
        )
        decision = under("panda", scenario)
        assert codes(decision).get("NUC1") == "full_chain"
        assert "NUC2" in kept(decision)


class TestAnalysis:
    def test_a_merge_needs_twice_its_input_as_scratch(self):
        # AtlasAnalJobBroker.py 1123-1125: 2 × 2,000 MB = 4,000 MB; a 4,000 MB queue keeps it (skipped only above)
        scenario = anal_scenario(
            queue("EQ", corecount=1, maxwdir=4000), queue("LOW", corecount=1, maxwdir=3999), jobs={"isMerge": True}
        )
        decision = under("panda", scenario)
        assert "EQ" in kept(decision)
        assert codes(decision)["LOW"] == "disk"

    def test_analysis_scales_the_output_by_input_megabytes_even_per_event(self):
        # AtlasAnalJobBroker.py 1109-1113: getOutDiskSize × the effective input in MB, with no per-event branch:
        # 1 MB "per event" × 2,000 MB = 2,000 MB, + 2,000 MB copied in = 4,000 MB (production: 1 MB × 1,000 events)
        task = {"outDiskCount": 1, "outDiskUnit": "MBPerEvent"}
        scenario = anal_scenario(queue("Q", corecount=1, maxwdir=3999), task=task)
        assert under("panda", scenario).skipped["Q"].detail["neededMB"] == 4000

    def test_a_task_without_cputime_needs_ten_days_of_walltime(self):
        # AtlasAnalJobBroker.py 1322-1365: no cpuTime, so not HS06: maxtime × cores = 259,200 < 24 h × 10 × 1 =
        # 864,000: -min_walltime; 864,000 s is enough
        scenario = anal_scenario(
            queue("SHORT", corecount=1), queue("LONG", corecount=1, maxtime=864_000), task={"cpuTime": None}
        )
        decision = under("panda", scenario)
        assert codes(decision)["SHORT"] == "min_walltime"
        assert "LONG" in kept(decision)

    def test_merges_get_no_walltime_check(self):
        # AtlasAnalJobBroker.py 1256: not for merges (production sends merges to 24 h queues only)
        scenario = anal_scenario(queue("Q", corecount=1, maxtime=3600), jobs={"isMerge": True})
        assert "Q" in kept(under("panda", scenario))

    def test_hospital_queues_are_the_last_resort(self):
        # AtlasAnalJobBroker.py 1486-1509
        scenario = anal_scenario(queue("A", corecount=1), queue("A_HOSPITAL", corecount=1))
        assert codes(under("panda", scenario)) == {"A_HOSPITAL": "hospital"}
        alone = anal_scenario(queue("A", corecount=1, status="offline"), queue("A_HOSPITAL", corecount=1))
        assert "A_HOSPITAL" in kept(under("panda", alone))

    def test_included_site_auto_falls_back_to_any_queue(self):
        # AtlasAnalJobBroker.py 1405-1437: the named queue if it is left, else the others
        both = anal_scenario(queue("A", corecount=1), queue("B", corecount=1), task={"includedSite": ["A", "AUTO"]})
        assert codes(under("panda", both)) == {"B": "notincluded"}
        gone = anal_scenario(
            queue("A", corecount=1, maxwdir=1), queue("B", corecount=1), task={"includedSite": ["A", "AUTO"]}
        )
        assert kept(under("panda", gone)) == {"B"}

    def test_a_zero_share_skips_analysis_too(self):
        # AtlasAnalJobBroker.py 690-705 (hasZeroShare): gshare=User Analysis:0%
        scenario = anal_scenario(
            queue("Z", corecount=1, fairsharepolicy="gshare=User Analysis:0%"), queue("A", corecount=1)
        )
        assert codes(under("panda", scenario)) == {"Z": "zeroshare"}

    def test_a_local_data_queue_needs_the_input_at_its_storage(self):
        # AtlasAnalJobBroker.py 2303-2362: weighed, then dropped (-fileunavailable) when a complete disk copy exists
        # elsewhere and it reads none
        data = [dataset(replicas={"NUC_DATADISK": (5, 0.5)})]
        scenario = anal_scenario(
            queue("L", corecount=1, catchall="use_only_local_data"),
            queue("N", site="NUC", corecount=1),
            datasets=data,
            task={"taskPriority": 2000},  # no data-locality check
        )
        decision = under("panda", scenario)
        assert codes(decision)["L"] == "fileunavailable"
        assert kept(decision) == {"N"}


class TestTaskLocality:
    def test_a_dbrelease_says_nothing_of_where_the_data_is(self):
        # AtlasProdTaskBroker.py 246-249 (isDBR): the DBRelease at NUC2 alone would give NUC2 100 % of ddo's files;
        # left out, the task's EVNT (all at NUC1) decides: NUC2 holds none of it (-insize)
        from tests.engine.builders import nucleus

        data = [
            dataset(replicas={"NUC1_DATADISK": (5, 500.0)}, size=500.0),
            dataset("ddo.000001.Atlas.Ideal.DBRelease.v330201", master=False, size=500.0, files=5,
                    replicas={"NUC2_DATADISK": (5, 500.0)}),
        ]  # fmt: skip
        scenario = task_scenario(nucleus("NUC1"), nucleus("NUC2"), datasets=data)
        decision = under("panda", scenario)
        assert codes(decision) == {"NUC2": "insize"}
        assert decision.skipped["NUC2"].detail["totalSizeGB"] == pytest.approx(500.0)


def test_a_standby_queue_is_online_for_the_real_production_broker():
    # AtlasProdJobBroker.py 402: status in (online, standby); the seed knows online only
    scenario = job_scenario(queue("S", status="standby"), NUC)
    assert "S" in kept(under("panda", scenario))
    assert codes(under("seed", scenario))["S"] == "status"


def test_a_container_is_distributed_its_copies_may_be_incomplete_and_no_ten_queue_cut():
    # AtlasAnalJobBroker.py 432-458, 2262-2270: a dataset named "…/" is distributed: it needs no complete copy,
    # incomplete ones locate it, VP queues are avoided, and more than ten queues are kept
    queues = [queue(f"A{i}", corecount=1) for i in range(12)] + [queue("VP", corecount=1, use_vp=True)]
    data = [dataset("user.jdoe.cont/", files=10, replicas={"SAT_DATADISK": (4, 0.2)})]
    scenario = anal_scenario(*queues, datasets=data)
    decision = under("panda", scenario)
    assert len(decision.candidates) == 12
    assert codes(decision) == {"VP": "overloaded_vp"}
    # the same dataset as a plain one: the ten best queues only
    plain = anal_scenario(*queues, datasets=[dataset("user.jdoe.plain", files=10, replicas={"SAT_DATADISK": (4, 0.2)})])
    assert len(under("panda", plain).candidates) == 10


def test_a_bare_nucleus_satellite_is_a_candidate_for_a_full_chain_task():
    # AtlasProdTaskBroker.py 224-229: for a full-chain task the satellites in bare-nucleus mode are nuclei too
    from tests.engine.builders import nucleus

    data = [dataset(replicas={"NUC1_DATADISK": (5, 0.5), "SAT_DATADISK": (5, 0.5)})]
    sat_queue = queue("SQ", site="SAT", corecount=1, catchall="bareNucleus=allow")
    nuc_queue = queue("NQ", site="NUC1", corecount=1)
    scenario = task_scenario(
        nucleus("NUC1"),
        datasets=data,
        task={"coreCount": 1, "cpuTime": 10, "nucleus": "", "fullChain": "capable"},
        queues={"SQ": sat_queue["record"], "NQ": nuc_queue["record"]},
        queue_stats={"SQ": sat_queue["stats"], "NQ": nuc_queue["stats"]},
        ddm_endpoints={
            "NUC1_DATADISK": nucleus("NUC1")["endpoints"]["NUC1_DATADISK"],
            "SAT_DATADISK": {**nucleus("SAT")["endpoints"]["SAT_DATADISK"], "site": "SAT"},
        },
    )
    assert under("panda", scenario).initial == ("NUC1", "SAT")
    assert under("seed", scenario).initial == ("NUC1",)
    plain = {**scenario, "task": {**scenario["task"], "fullChain": ""}}
    assert under("panda", plain).initial == ("NUC1",)
