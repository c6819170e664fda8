"""The rules issue 33 found departing from panda-server 1.0.4 on inputs nobody chose (D1-D13 and the switches the
widened differential generator exposed), each with the numbers it compares, under both values of its switch."""

from brokerage.engine.panda.software_panda import match_gpu_spec, task_hardware
from tests.engine.builders import anal_scenario, dataset, decide, job_scenario, nucleus, queue, task_scenario


def codes(decision):
    return {name: skip.code for name, skip in decision.skipped.items()}


def kept(decision):
    return {c.name for c in decision.candidates}


def job(*queues, task=None, **options):
    """A job scenario without a nucleus (its rules are not what these tests look at)."""
    return job_scenario(*queues, task={"nucleus": "", **(task or {})}, **options)


def panda(scenario, **switches):
    """The scenario under the panda profile, with some switches set back (or on) through its gdpconfig."""
    return {**scenario, "profile": "panda", "gdpconfig": {**scenario.get("gdpconfig", {}), **switches}}


# --- production job brokerage ---------------------------------------------------------------------------------


def sw_tags(**over):
    tags = {"cmtconfigs": ["x86_64-el9-gcc13-opt"], "containers": [], "cvmfs": ["atlas"], "architectures": []}
    tags["tags"] = [
        {"cmtconfig": "x86_64-el9-gcc13-opt", "project": "Athena", "release": "24.0.30", "container_name": "",
         "sources": []}
    ]  # fmt: skip
    tags["architectures"] = [{"type": "cpu", "arch": ["x86_64"]}]
    return {**tags, **over}


SOFTWARE_TASK = {"architecture": "x86_64-el9-gcc13-opt", "transUses": "Athena-24.0.30", "transHome": "Athena-24.0.30"}


def software_scenario(task=None, tags=None, **queue_options):
    q = queue("AUTO_Q", releases=("AUTO",), **queue_options)
    return job(q, task={**SOFTWARE_TASK, **(task or {})}, sw_tags={"AUTO_Q": tags or sw_tags()})


def test_d4_without_transhome_the_real_code_checks_no_software_at_all():
    # the queue publishes nothing the task could use (no cvmfs, no tag, an aarch64 CPU)
    tags = sw_tags(cvmfs=[], tags=[], architectures=[{"type": "cpu", "arch": ["aarch64"]}])
    scenario = software_scenario(task={"transHome": ""}, tags=tags)
    assert codes(decide(panda(scenario, SOFTWARE_RULE="seed"))) == {"AUTO_Q": "cache"}
    assert codes(decide(panda(scenario))) == {}  # AtlasProdJobBroker 773: the SW/HW loop needs transHome


def test_d7_a_base_platform_needs_a_container_the_platform_alone_does_not_do():
    # cvmfs atlas and the platform among the cmtconfigs, no container: enough for the seed, not for "@el9"
    tags = sw_tags(tags=[])
    with_base = software_scenario(task={"architecture": "x86_64-el9-gcc13-opt@el9"}, tags=tags)
    assert codes(decide(panda(with_base, SOFTWARE_RULE="seed"))) == {}
    assert codes(decide(panda(with_base))) == {"AUTO_Q": "cache"}
    with_container = software_scenario(
        task={"architecture": "x86_64-el9-gcc13-opt@el9"}, tags=sw_tags(containers=["any"])
    )
    assert codes(decide(panda(with_container))) == {}


def test_nightlies_need_the_nightlies_repository():
    task = {"transUses": "Athena-2026-10-31T2101", "transHome": "Athena-2026-10-31T2101"}
    atlas_only = software_scenario(task=task, tags=sw_tags(containers=["any"]))
    assert codes(decide(panda(atlas_only))) == {"AUTO_Q": "cache"}
    nightlies = software_scenario(task=task, tags=sw_tags(containers=["any"], cvmfs=["nightlies"]))
    assert codes(decide(panda(nightlies))) == {}


def test_the_architecture_parts_are_read_in_any_order():
    # the GPU part before the base platform: JediTaskSpec's expressions stop at the next marker whatever the order
    hardware = task_hardware("x86_64-el9-gcc13-opt&nvidia:vram>=40960@el9")
    assert hardware.sw_platform == "x86_64-el9-gcc13-opt"
    assert hardware.base_platform == "el9"
    assert dict(hardware.gpu_spec) == {"vendor": "nvidia", "model": "*", "vram": ">=40960"}
    assert hardware.cpu_specs == (("x86_64", "*", "*"),)  # the platform's first part names the CPU


def test_gpu_vram_and_versions_hold_for_every_card_the_model_for_one():
    a100 = {"vendor": "nvidia", "model": "NVIDIA A100-SXM4-40GB", "vram": 40960, "microarchitecture": "Ampere"}
    p100 = {"vendor": "nvidia", "model": "Tesla P100-PCIE-16GB", "vram": 16384, "microarchitecture": "Pascal"}
    assert match_gpu_spec({"vendor": "nvidia", "vram": ">=40960"}, [a100])
    assert not match_gpu_spec({"vendor": "nvidia", "vram": ">=40960"}, [a100, p100])  # 16384 < 40960
    assert match_gpu_spec({"vendor": "nvidia", "model": ".*A100.*"}, [a100, p100])
    assert not match_gpu_spec({"vendor": "nvidia", "model": ("excl", ".*P100.*")}, [a100, p100])
    assert not match_gpu_spec({"vendor": "nvidia"}, [])  # a vendor asked for and no card reported


def test_d6_input_read_directly_only_when_the_task_allows_it():
    # 2,000 MB of input; maxwdir 3,600 MB; output floor 1,500 MB + work 0: with the input 3,500 MB fits, and
    # with direct access the input does not count. A 1,000 MB work dir makes 2,500 + 2,000 = 4,500 > 3,600.
    q = queue("DA_Q", corecount=1, maxwdir=3600, direct_access_lan=True)
    task = {"coreCount": 1, "workDiskCount": 700, "outDiskCount": 0}
    scenario = job(q, task=task)
    assert codes(decide(panda(scenario, DIRECT_IO_RULE="seed"))) == {}  # direct access: 1,500 + 1,000 MB
    assert codes(decide(panda(scenario))) == {"DA_Q": "disk"}  # no allowInputLAN: 4,500 MB > 3,600
    allowed = job(q, task={**task, "allowInputLAN": "use"})
    assert codes(decide(panda(allowed))) == {}


def test_maxinputsize_minus_one_always_reads_directly():
    q = queue("ALWAYS_Q", maxinputsize=-1)
    only = job(q, task={"allowInputLAN": "only"})
    assert codes(decide(panda(only, DIRECT_IO_RULE="seed"))) == {"ALWAYS_Q": "remoteio"}
    assert codes(decide(panda(only))) == {}


def test_merges_are_not_asked_for_memory_or_direct_access():
    small = queue("SMALL_Q", maxrss=1000)  # 2,000 MB per core × 8 would need 14,400 MB
    merge = job(small, task={"allowInputLAN": "only"}, jobs={"isMerge": True})
    assert codes(decide(panda(merge, MEMORY_RULE="seed", DIRECT_IO_RULE="seed"))) == {"SMALL_Q": "lowmemory"}
    assert codes(decide(panda(merge))) == {}


def test_d3_a_nucleus_queue_without_a_complete_copy_must_receive_over_wan():
    down = {
        "NUC_DATADISK": {"site": "NUC", "space_total": 1e6, "space_free": 5e5, "detailed_status": {"write_wan": "OFF"}}
    }
    q = queue("NUC_Q", site="NUC")
    # the complete copy is at SAT: NUC_Q would have to receive it over WAN, and NUC_DATADISK cannot
    elsewhere = [dataset(size=4, files=2, replicas={"SAT_DATADISK": (2, 4)})]
    scenario = job_scenario(q, datasets=elsewhere, endpoints=down)
    assert codes(decide(panda(scenario, JOB_ENDPOINT_RULE="seed"))) == {}
    assert codes(decide(panda(scenario))) == {"NUC_Q": "write_wan_blacklist"}
    # with the complete copy at NUC itself, a nucleus queue needs nothing over WAN
    local = [dataset(size=4, files=2, replicas={"NUC_DATADISK": (2, 4)})]
    assert codes(decide(panda(job_scenario(q, datasets=local, endpoints=down)))) == {}


def test_satellites_wait_while_the_nucleus_cannot_receive():
    down = {
        "NUC_DATADISK": {"site": "NUC", "space_total": 1e6, "space_free": 5e5, "detailed_status": {"write_wan": "TEST"}}
    }
    scenario = job_scenario(queue("NUC_Q", site="NUC"), queue("SAT_Q"), endpoints=down)
    decision = decide(panda(scenario))
    assert codes(decision) == {"SAT_Q": "dest_blacklisted"}
    assert decision.skipped["SAT_Q"].detail["write_wan"] == "TEST"


def test_a_full_nucleus_holds_back_only_the_satellites_under_the_real_link_check():
    # 2,500 files queued towards NUC against NQUEUED_NUC_CAP_FOR_JOBS 2,000: seed 000 holds back every queue;
    # AtlasProdJobBroker's link check (465-482) lets the nucleus's own queues pass before any link rule
    grid = (queue("NUC_Q", site="NUC"), queue("SAT_Q"))
    scenario = job_scenario(
        *grid, nucleus_stats={"NUC": {"outputQueued": 2500}}, gdpconfig={"NQUEUED_NUC_CAP_FOR_JOBS": 2000}
    )
    assert codes(decide(panda(scenario))) == {"SAT_Q": "links_full"}
    assert codes(decide(panda(scenario, JOB_ENDPOINT_RULE="seed"))) == {"NUC_Q": "links_full", "SAT_Q": "links_full"}
    below = job_scenario(
        *grid, nucleus_stats={"NUC": {"outputQueued": 1999}}, gdpconfig={"NQUEUED_NUC_CAP_FOR_JOBS": 2000}
    )
    assert codes(decide(panda(below))) == {}


def test_d5_a_job_set_pre_assigned_away_from_the_nucleus_still_knows_it():
    scenario = job_scenario(queue("NUC_Q", site="NUC"), queue("SAT_Q"), jobs={"preassigned": ["SAT_Q"]})
    decision = decide(panda(scenario))
    assert kept(decision) == {"SAT_Q"}  # not unknown_nucleus: NUC has a queue, scanned or not


def test_one_pre_assigned_queue_skips_the_status_and_work_shortage_checks():
    q = queue("OPP_Q", status="brokeroff", pledgedcpu=-1)
    scenario = job(q, jobs={"preassigned": ["OPP_Q"]}, gdpconfig={"WORK_SHORTAGE": True})
    assert codes(decide(panda(scenario, PREASSIGNMENT_RULE="seed"))) == {"OPP_Q": "non_pledged"}
    assert kept(decide(panda(scenario))) == {"OPP_Q"}


def test_a_merge_scans_the_queues_reading_its_output_storage():
    # SAT_A holds the pre-merged outputs; SAT_B reads SAT_DATADISK too; NUC_Q does not
    scenario = job_scenario(
        queue("SAT_A"), queue("SAT_B"), queue("NUC_Q", site="NUC"), jobs={"isMerge": True, "preassigned": ["SAT_A"]}
    )
    assert decide(panda(scenario, PREASSIGNMENT_RULE="seed")).initial == ("SAT_A",)
    assert set(decide(panda(scenario)).initial) == {"SAT_A", "SAT_B"}


def test_a_merge_scans_the_sharing_queues_in_cric_order_and_its_own_queue_last():
    # twelve queues of equal weight read SAT_DATADISK, SAT_00 holds the pre-merged outputs: the real scan lists the
    # other eleven as SiteMapper does (CRIC order), SAT_00 last; the ten best of equal weight are the first ten
    queues = [queue(f"SAT_{n:02d}") for n in range(12)]
    scenario = job(*queues, jobs={"isMerge": True, "preassigned": ["SAT_00"]})
    decision = decide(panda(scenario))
    assert decision.initial == (*(f"SAT_{n:02d}" for n in range(1, 12)), "SAT_00")
    assert len({c.weight for c in decision.candidates}) == 1
    assert [c.name for c in decision.candidates] == [f"SAT_{n:02d}" for n in range(1, 11)]
    assert codes(decision) == {"SAT_11": "low_weight", "SAT_00": "low_weight"}


def test_a_merge_lists_a_unified_queue_as_itself_and_its_pseudo_queues_after():
    # SAT_U (unified) shares SAT_A's storage: the scan has SAT_U itself among the plain queues, then SAT_U's
    # pseudo-queues, then SAT_A (SiteMapper adds the pseudo-queues after every CRIC queue)
    unified = queue("SAT_U", type="unified", capability="ucore")
    scenario = job(queue("SAT_A"), unified, queue("SAT_B"), jobs={"isMerge": True, "preassigned": ["SAT_A"]})
    pseudo = tuple(f"SAT_U/{kind}" for kind in ("SCORE", "MCORE", "SCORE_HIMEM", "MCORE_HIMEM"))  # 8 cores: all four
    assert decide(panda(scenario)).initial == ("SAT_U", "SAT_B", *pseudo, "SAT_A")


def test_connectivity_a_queue_that_says_nothing_takes_no_task_that_asks():
    scenario = job(queue("FULL_Q", wnconnectivity="full"), queue("BLANK_Q", wnconnectivity=""))
    asks = {**scenario, "task": {**scenario["task"], "ipConnectivity": "http"}}
    assert codes(decide(panda(asks, CONNECTIVITY_RULE="seed"))) == {}
    assert codes(decide(panda(asks))) == {"BLANK_Q": "network"}


def test_disk_io_of_a_multi_core_task_is_per_core():
    # the queue runs 600 kB/s per core over its 100 limit; the task asks 200 kB/s, 25 per core of 8
    q = queue("IO_Q", maxdiskio=100, stats={"avgDiskIOPerCore": 600.0})
    scenario = job(q, task={"diskIO": 200})
    assert codes(decide(panda(scenario, DISK_IO_RULE="seed"))) == {"IO_Q": "diskIO"}
    assert codes(decide(panda(scenario))) == {}


# --- production task brokerage ----------------------------------------------------------------------------------


# a complete copy of the input at every nucleus, so that only the full-chain rules tell them apart
EVERYWHERE = [dataset(replicas={f"{n}_DATADISK": (5, 0.5) for n in ("ONLY", "ALLOW", "PLAIN", "OTHER")})]


def test_d8_full_chain_only_takes_an_allow_nucleus_and_capable_an_only_one():
    nuclei = (nucleus("ONLY", bare="only"), nucleus("ALLOW", bare="allow"), nucleus("PLAIN"))
    only = task_scenario(*nuclei, task={"fullChain": "only"}, datasets=EVERYWHERE)
    assert kept(decide(panda(only, FULL_CHAIN_RULE="seed"))) == {"ONLY"}
    assert kept(decide(panda(only))) == {"ONLY", "ALLOW"}
    capable = task_scenario(*nuclei, task={"fullChain": "capable"}, datasets=EVERYWHERE)
    assert kept(decide(panda(capable, FULL_CHAIN_RULE="seed"))) == {"ALLOW", "PLAIN"}
    assert kept(decide(panda(capable))) == {"ONLY", "ALLOW", "PLAIN"}


def test_a_full_chain_task_follows_a_parent_that_ran_at_a_bare_nucleus():
    nuclei = (nucleus("ALLOW", bare="allow"), nucleus("OTHER", bare="allow"))
    task = {"fullChain": "require", "parentNucleus": "OTHER", "parentBareNucleus": "allow"}
    assert kept(decide(panda(task_scenario(*nuclei, task=task, datasets=EVERYWHERE)))) == {"OTHER"}


def test_es_rule_std_and_eshigh_queues_and_single_core_pseudo_queues():
    grid = (
        queue("STD_Q", jobseed="std"),
        queue("ES_Q", jobseed="es"),
        queue("HIGH_Q", jobseed="eshigh"),
        queue("ALL_Q", jobseed="all"),
    )
    es_task = {"eventService": True, "currentPriority": 500}
    scenario = job(*grid, task=es_task)
    # seed: es, eshigh and all take event service; std does not
    assert codes(decide(panda(scenario, ES_RULE="seed"))) == {"STD_Q": "es"}
    # panda: eshigh only for urgent work (priority 500 < 900, not a scout), with the real criteria -es and -eshigh
    assert codes(decide(panda(scenario))) == {"STD_Q": "es", "HIGH_Q": "eshigh"}
    urgent = job(*grid, task={**es_task, "currentPriority": 900})
    assert codes(decide(panda(urgent))) == {"STD_Q": "es"}
    scouts = job(*grid, task=es_task, jobs={"isScout": True})
    assert codes(decide(panda(scouts))) == {"STD_Q": "es"}
    # a task without event service avoids es queues under both values (panda: "only EventService is allowed",
    # criteria -nones)
    assert codes(decide(panda(job(*grid)))) == {"ES_Q": "nones"}
    assert codes(decide(panda(job(*grid), ES_RULE="seed"))) == {"ES_Q": "es"}


def test_es_rule_leaves_out_the_single_core_pseudo_queues_of_a_unified_queue():
    # an 8-core unified queue taking any jobseed: a 1-core event-service task fits its SCORE pseudo-queue (the
    # MCORE ones have 8 cores, SCORE_HIMEM asks more than 2,000 MB a core), which the real check leaves out
    unified = queue("U_Q", type="unified", capability="ucore", corecount=8, jobseed="all")
    scenario = job(unified, task={"eventService": True, "coreCount": 1})
    assert codes(decide(panda(scenario)))["U_Q/SCORE"] == "es_ucore"  # "EventService on UCORE/SCORE"
    seed = decide(panda(scenario, ES_RULE="seed"))
    assert kept(seed) == {"U_Q/SCORE"}


# --- analysis job brokerage -------------------------------------------------------------------------------------


def aq(name, **options):
    """A single-core analysis queue."""
    return queue(name, corecount=1, **options)


CAPS = {"CAP_RUNNING_USER_JOBS": 1000}
OVER_CAP = {"user": {"running": 1001, "queued": 0}}


def test_d9_the_user_caps_do_not_throttle_merges():
    merge = anal_scenario(aq("ANALY_Q"), gdpconfig=CAPS, jobs={"isMerge": True}, user_stats=OVER_CAP)
    assert decide(panda(merge, ANALYSIS_THROTTLE_RULE="seed")).outcome == "throttled"
    assert decide(panda(merge)).outcome == "assigned"
    normal = anal_scenario(aq("ANALY_Q"), gdpconfig=CAPS, user_stats=OVER_CAP)
    assert decide(panda(normal)).outcome == "throttled"  # 1,001 > 1,000


def test_class_s_counts_as_a_and_without_the_users_evaluation_half_of_usage():
    # usage 250 % of target, no runningSlotsHiSites: 250 × 0.5 = 125 % > 100 %; at 180 %: 90 %, not throttled
    for usage, outcome in ((2.5, "throttled"), (1.8, "assigned")):
        stats = {"gshareUsage": {"User Analysis": usage}}
        scenario = anal_scenario(aq("ANALY_Q"), task={"taskClass": "S"}, user_stats=stats)
        assert decide(panda(scenario)).outcome == outcome
        assert decide(panda(scenario, ANALYSIS_THROTTLE_RULE="seed")).outcome == "assigned"


def test_d12_analysis_asks_for_pilots_even_with_num_slots():
    q = aq("ANALY_Q", stats={"pilotsLast3h": 0, "numSlots": 16})
    assert codes(decide(panda(anal_scenario(q)))) == {"ANALY_Q": "nopilot"}


def test_d12_a_queue_without_pilot_statistics_counts_as_having_none():
    # no pilotsLast3h at all (the statistics list no pilot): skipped as 0 is; 3 pilots pass; a test task passes
    silent, alive = aq("ANALY_SILENT"), aq("ANALY_ALIVE", stats={"pilotsLast3h": 3})
    del silent["stats"]["pilotsLast3h"]
    assert codes(decide(panda(anal_scenario(silent, alive)))) == {"ANALY_SILENT": "nopilot"}
    assert codes(decide(panda(anal_scenario(silent, alive, task={"prodSourceLabel": "test"})))) == {}


def test_d13_bad_jobs_count_only_where_the_stabilizer_can_throttle():
    # 6 failed, 0 finished: over max(2 × 0, 5) = 5; the queue has 40 queued (under BASE_QUEUE_LENGTH_PER_PQ 100)
    bad = {"queues": {"ANALY_Q": {"taskFailed": 6, "taskFinished": 0, "userQueued": 3}}}
    quiet = aq("ANALY_Q", stats={"activated": 40, "starting": 0})
    assert codes(decide(panda(anal_scenario(quiet, user_stats=bad), ANALYSIS_STABILIZER_RULE="seed"))) == {
        "ANALY_Q": "badsite"
    }
    assert codes(decide(panda(anal_scenario(quiet, user_stats=bad)))) == {}
    busy = aq("ANALY_Q", stats={"activated": 150, "starting": 0, "toRunningRate": 1.0})  # 150 ≥ 100, ≥ 8 × 1
    assert codes(decide(panda(anal_scenario(busy, user_stats=bad)))) == {"ANALY_Q": "badsite"}


def test_a_site_naming_a_storage_endpoint_means_the_queues_reading_it():
    grid = (aq("ANALY_A", site="SAT"), aq("ANALY_B", site="NUC"))
    scenario = anal_scenario(*grid, task={"site": "SAT_DATADISK"})
    assert decide(panda(scenario, ANALYSIS_SITES_RULE="seed")).initial == ()
    assert codes(decide(panda(scenario))) == {"ANALY_B": "notincluded"}
    ignored = anal_scenario(*grid, task={"site": "NOWHERE"})
    assert kept(decide(panda(ignored))) == {"ANALY_A", "ANALY_B"}


def test_offline_queues_are_out_whatever_the_task_names():
    grid = (aq("ANALY_OFF", status="offline"), aq("ANALY_TEST", status="test"))
    scenario = anal_scenario(*grid, task={"includedSite": ["ANALY_OFF", "ANALY_TEST"]})
    assert codes(decide(panda(scenario, ANALYSIS_SITES_RULE="seed"))) == {}
    assert codes(decide(panda(scenario))) == {"ANALY_OFF": "status"}


# --- the analysis data check and data weight (AtlasAnalJobBroker 538-640 and 2197-2217, 1.0.4) ---------------

SITES = {"A": {"role": "satellite"}, "B": {"role": "satellite"}}
TAPES = {
    f"{site}_DATATAPE": {"site": site, "is_tape": True, "space_total": 1e7, "space_free": 5e6} for site in ("A", "B")
}


def reading_tape(name, site, **options):
    """An analysis queue at `site` reading its DATADISK and its DATATAPE."""
    q = aq(name, site=site, **options)
    q["record"]["astorages"]["read_lan"].append(f"{site}_DATATAPE")
    return q


def data_scenario(*datasets, vp=False):
    grid = (reading_tape("ANALY_A", "A"), reading_tape("ANALY_B", "B", use_vp=vp))
    return anal_scenario(*grid, datasets=list(datasets), sites=SITES, endpoints=TAPES)


def test_the_data_weight_counts_a_dataset_on_disk_as_1_and_on_tape_only_as_0_001():
    # d1 on A's disk and B's tape, d2 on tape at both: no queue has everything on disk, both have everything
    d1 = dataset("d1", size=4, files=2, replicas={"A_DATADISK": (2, 4), "B_DATATAPE": (2, 4)})
    d2 = dataset("d2", size=8, files=4, replicas={"A_DATATAPE": (4, 8), "B_DATATAPE": (4, 8)})
    decision = decide(panda(data_scenario(d1, d2)))
    weights = {c.name: c.factors["dataWeight"] for c in decision.candidates}
    assert weights == {"ANALY_A": 1.001, "ANALY_B": 0.002}  # A: 1 + 0.001; B: 0.001 + 0.001
    # the seed's weight has no data factor
    seed = decide(panda(data_scenario(d1, d2), ANALYSIS_WEIGHT_RULE="seed", ANALYSIS_LOCALITY_RULE="seed"))
    assert {c.factors["dataWeight"] for c in seed.candidates} == {1.0}


def test_a_queue_with_everything_on_disk_goes_before_those_with_some_on_tape():
    d1 = dataset("d1", size=4, files=2, replicas={"A_DATADISK": (2, 4), "B_DATATAPE": (2, 4)})
    decision = decide(panda(data_scenario(d1)))
    assert kept(decision) == {"ANALY_A"}
    assert codes(decision) == {"ANALY_B": "fileunavailable"}


def test_when_no_queue_has_all_the_data_the_union_is_weighed_by_its_gigabytes_on_disk():
    # A holds d1 (4 GB), B holds d2 (8 GB): the union of both, each weighed 1 + whole GB on disk / 10
    d1 = dataset("d1", size=4, files=2, replicas={"A_DATADISK": (2, 4)})
    d2 = dataset("d2", size=8, files=4, replicas={"B_DATADISK": (4, 8)})
    decision = decide(panda(data_scenario(d1, d2)))
    assert {c.name: c.factors["dataWeight"] for c in decision.candidates} == {"ANALY_A": 1.4, "ANALY_B": 1.8}
    # a VP queue is avoided when the union is taken: the data would be transferred to it
    with_vp = decide(panda(data_scenario(d1, d2, vp=True)))
    assert codes(with_vp) == {"ANALY_B": "overloaded_vp"}
    assert with_vp.skipped["ANALY_B"].detail["unionLocality"] is True


def test_problematic_queues_are_weighed_with_the_others_and_dropped_after():
    # ANALY_BAD: 6 failed, 0 finished over max(2 × 0, 5) at a queue the stabilizer can throttle (150 queued ≥ 100);
    # the real code weighs it, then drops it: the stage "problematic" comes after the weights
    bad = {"queues": {"ANALY_BAD": {"taskFailed": 6, "taskFinished": 0, "userQueued": 3}}}
    busy = {"activated": 150, "starting": 0, "toRunningRate": 1.0}
    grid = (aq("ANALY_BAD", stats=busy), aq("ANALY_OK", stats=busy))
    decision = decide(panda(anal_scenario(*grid, user_stats=bad)))
    assert kept(decision) == {"ANALY_OK"}
    assert codes(decision) == {"ANALY_BAD": "badsite"}
    assert decision.stages[-1].filter == "problematic"
    assert (decision.stages[-1].before, decision.stages[-1].after) == (2, 1)
    seed = decide(panda(anal_scenario(*grid, user_stats=bad), ANALYSIS_STABILIZER_RULE="seed"))
    assert codes(seed) == {"ANALY_BAD": "badsite"}
    assert all(stage.filter != "problematic" for stage in seed.stages)


def test_a_gpu_analysis_queue_needs_the_task_platform_and_published_software():
    # AtlasAnalJobBroker's architecture check at a queue whose catchall says gpu, before the SW/HW check: the task
    # must name a platform and the queue publish its software (AUTO); a CPU queue is not asked
    tags = sw_tags(containers=["any"])
    task = {"architecture": "x86_64-el9-gcc13-opt", "transHome": "AnalysisTransforms-AthAnalysis_24.0.30"}
    auto = (aq("ANALY_GPU", releases=("AUTO",), catchall="gpu"), aq("ANALY_CPU", releases=("AUTO",)))
    auto_tags = {"ANALY_GPU": tags, "ANALY_CPU": tags}
    assert codes(decide(panda(anal_scenario(*auto, task=task, sw_tags=auto_tags)))) == {}
    no_platform = decide(panda(anal_scenario(*auto, task={**task, "architecture": ""}, sw_tags=auto_tags)))
    assert no_platform.skipped["ANALY_GPU"].detail["check"] == "architecture"
    assert "ANALY_CPU" not in no_platform.skipped
    # releases ANY: no published software, so the GPU queue fails the architecture check first; the CPU one fails
    # the SW/HW check (a platform implies a CPU, and ANY passes only a task asking for none)
    anywhere = (aq("ANALY_GPU", releases=("ANY",), catchall="gpu"), aq("ANALY_CPU", releases=("ANY",)))
    decision = decide(panda(anal_scenario(*anywhere, task=task)))
    assert decision.skipped["ANALY_GPU"].detail["check"] == "architecture"
    assert decision.skipped["ANALY_CPU"].detail["check"] == "release"
