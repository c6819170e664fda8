"""Our job and task brokerage decisions in JEDI's log grammar (issue 53, brokerage/engine/panda/jedi_grammars.py
and core/jedi_log.py): the summary with counts by unified queue and cuts rounded up, a unified queue named once when
its last pseudo-queue goes, the real broker's abort line, the task broker's job check lines and its ends, the JSON
record. The line-by-line agreement with the real brokers is tests/tools/peer/test_jedi_log_real.py's."""

from __future__ import annotations

from brokerage.engine.core.decision import trace_decode, trace_encode
from brokerage.engine.core.jedi_log import Step
from brokerage.engine.panda.jedi_grammars import GRAMMARS, anal_throttle_line, jedi_lines, jedi_record
from brokerage.engine.panda.job_broker import AtlasProdJobBroker
from tests.engine.builders import anal_scenario, dataset, decide, job_scenario, nucleus, queue, task_scenario


def panda(scenario):
    return decide({**scenario, "profile": "panda"})


def without_prefix(lines, task_id):
    prefix = f"<jediTaskID={task_id}> "  # task_id: "N" or "N datasetID=M"
    assert all(line.startswith(prefix) for line in lines)
    return [line[len(prefix) :] for line in lines]


def test_a_decision_in_the_real_brokers_words():
    # three queues: OFF_Q offline (status check), SMALL_Q's maxrss 1,000 MB under the job's 14,400 (memory check)
    scenario = job_scenario(
        queue("OK_Q"), queue("OFF_Q", status="offline"), queue("SMALL_Q", maxrss=1000),
        task={"currentPriority": 300, "nucleus": ""},
    )  # fmt: skip
    lines = without_prefix(jedi_lines(panda(scenario), task_id=4242, priority=300), 4242)
    assert lines[0] == "start currentPriority=300"
    assert "  skip site=OFF_Q due to Its status is offline, not online criteria=-status" in lines
    assert "  skip site=SMALL_Q due to The job needs 14,400 MB; its maxrss is 1000 MB criteria=-lowmemory" in lines
    assert lines.index("2 candidates passed status check") < lines.index("1 candidates passed memory check")
    assert "  use site=OK_Q with weight=2.8857142857142857 criteria=+use" in lines
    # 3 -> 2 is 33.3 %, written 34 as the real broker rounds up (math.ceil)
    assert lines[lines.index("===== Job brokerage summary =====") :] == [
        "===== Job brokerage summary =====",
        "the number of initial candidates: 3",
        "    3 ->   2 candidates,  34% cut : status check",
        "    2 ->   1 candidates,  50% cut : memory check",
        "the number of final candidates: 1",
        "",
        "done",
    ]


def test_a_unified_queue_is_counted_once_and_named_when_its_last_pseudo_queue_goes():
    # an 8-core unified queue: its 1-core pseudo-queues fail the core count check, its 8-core ones the memory
    # check (maxrss 1,000 MB): nothing is cut at the core count check (U_Q still has two), U_Q goes at the memory
    # check, named once, with the message of its last pseudo-queue (MCORE_HIMEM after MCORE)
    scenario = job_scenario(
        queue("U_Q", type="unified", capability="ucore", corecount=8, maxrss=1000), queue("OK_Q"),
        task={"coreCount": 8, "nucleus": ""},
    )  # fmt: skip
    decision = panda(scenario)
    assert {name: skip.code for name, skip in decision.skipped.items()} == {
        "U_Q/SCORE": "cpucore", "U_Q/SCORE_HIMEM": "cpucore", "U_Q/MCORE": "lowmemory", "U_Q/MCORE_HIMEM": "lowmemory"
    }  # fmt: skip
    lines = without_prefix(jedi_lines(decision, task_id=7), 7)
    assert lines[0] == "start"  # no priority known: not written as None
    assert [line for line in lines if "skip site=" in line] == [
        "  skip site=U_Q due to The job needs 14,400 MB; its maxrss is 1000 MB criteria=-lowmemory"
    ]
    assert [line for line in lines if "% cut :" in line] == ["    2 ->   1 candidates,  50% cut : memory check"]


def test_a_task_the_real_broker_refuses_before_its_checks_writes_its_error_only():
    scenario = job_scenario(queue("OK_Q"), task={"nucleus": "NOWHERE", "currentPriority": 500})
    assert jedi_lines(panda(scenario), task_id=8, priority=500) == [
        "<jediTaskID=8> start currentPriority=500",
        "<jediTaskID=8> unknown nucleus NOWHERE",
    ]


def test_the_json_record_holds_the_same():
    scenario = job_scenario(
        queue("OK_Q"), queue("OFF_Q", status="offline"), task={"currentPriority": 300, "nucleus": ""}
    )
    record = jedi_record(panda(scenario), task_id=4242, priority=300)
    assert (record["jediTaskID"], record["currentPriority"], record["initial"], record["final"]) == (4242, 300, 2, 1)
    assert record["checks"] == [{"check": "status check", "before": 2, "after": 1, "cut_percent": 50}]
    assert [(s["name"], s["criteria"], s["check"]) for s in record["skipped"]] == [("OFF_Q", "-status", "status check")]
    assert record["skipped"][0]["detail"]["status"] == "offline"
    assert record["used"] == [{"name": "OK_Q", "weight": 2.8857142857142857}]


def test_every_filter_of_the_job_broker_has_its_real_check():
    # a filter of ours missing from the table would be written under its own name, which the real log never has
    named = {name for _, names in GRAMMARS["atlas_prod_job"].checks for name in names}
    aborts = {name for name, _ in GRAMMARS["atlas_prod_job"].aborts}
    ours = {f.name for f in AtlasProdJobBroker.filters} | {AtlasProdJobBroker.late_stage, "best candidates"}
    assert ours <= named | aborts


def test_the_cut_is_rounded_up():
    assert Step("x", 3, 2, ()).cut_percent == 34
    assert Step("x", 8, 7, ()).cut_percent == 13
    assert Step("x", 9, 9, ()).cut_percent == 0
    assert jedi_lines(panda(job_scenario(queue("OK_Q"))), task_id=1)  # a decision with no cut still has its lines
    assert jedi_record(decide(job_scenario(queue("OK_Q"))), task_id=1)["checks"] == []


# --- the task broker (AtlasProdTaskBroker, 1.0.4) ---

TASK = {"coreCount": 8, "ramCount": 2000, "ramUnit": "MBPerCore", "cpuTime": 10, "currentPriority": 500}
EVERYWHERE = {"A_DATADISK": (5, 0.5), "B_DATADISK": (5, 0.5), "C_DATADISK": (5, 0.5)}


def task_with_queues(*queues, datasets=None):
    """Nuclei A, B and C (C with no production queue: no nucleus to the real site mapper), the given queues."""
    scenario = task_scenario(
        nucleus("A"), nucleus("B"), nucleus("C"), task=TASK,
        datasets=datasets if datasets is not None else [dataset(replicas=EVERYWHERE)],
    )  # fmt: skip
    scenario["queues"] = {q["name"]: q["record"] for q in queues}
    scenario["queue_stats"] = {q["name"]: q["stats"] for q in queues}
    scenario["jobs"] = {"nFiles": 1, "nEvents": 100, "inputSizeMB": 1000}
    return scenario


def test_a_task_decision_holds_its_job_checks_own_lines():
    # A's only queue has maxrss 12,000 MB < 2,000 × 8 × 0.9 = 14,400: the job check keeps B's queue only, so A goes
    # (-job); C has no production queue: ours skips it (-job, "no production queue"), the real broker never lists it
    scenario = task_with_queues(queue("A_Q", site="A", maxrss=12000), queue("B_Q", site="B"))
    decision = panda(scenario)
    assert {name: skip.code for name, skip in decision.skipped.items()} == {"A": "job", "C": "job"}
    lines = without_prefix(jedi_lines(decision, task_id=11, priority=500), 11)
    assert lines[0] == "start"
    opening, closing = lines.index("===== start for job check"), lines.index("===== done for job check")
    job_check = lines[opening + 1 : closing]
    assert "  skip site=A_Q due to The job needs 14,400 MB; its maxrss is 12,000 MB criteria=-lowmemory" in job_check
    assert "1 candidates passed memory check" in job_check
    # the job check keeps a queue: no summary of its own, no use lines, no "done"
    assert not any("summary" in line or "criteria=+use" in line or line == "done" for line in job_check)
    after = lines[closing + 1 :]
    assert after[0].startswith("  skip nucleus=A due to Job brokerage keeps none of its 1 production queues")
    assert after[0].endswith("criteria=-job")
    assert not any("nucleus=C" in line for line in lines)
    assert after[after.index("===== Task brokerage summary =====") :] == [
        "===== Task brokerage summary =====",
        "the number of initial candidates: 2",
        "    2 ->   1 candidates,  50% cut : job check",
        "the number of final candidates: 1",
        "",
        # 300,000 GB free of 1,000,000: 1 (RW 0 < 50) × 0.3 × min(1000, floor(300000 / 1024) = 292) = 87.6
        f"  use nucleus=B weight={decision.candidates[0].weight} criteria=+use",
        "  set nucleus=B with True criteria=+set",
    ]
    assert decision.candidates[0].weight == 0.3 * 292


def test_a_job_check_keeping_no_queue_ends_the_task_log_without_its_summary():
    scenario = task_with_queues(queue("A_Q", site="A", maxrss=12000), queue("B_Q", site="B", maxrss=12000))
    lines = without_prefix(jedi_lines(panda(scenario), task_id=12), 12)
    closing = lines.index("===== done for job check")
    # the job broker's summary and last word, then the task broker's error in place of its own summary
    assert lines[closing - 7 : closing] == [
        "",
        "===== Job brokerage summary =====",
        "the number of initial candidates: 2",
        "    2 ->   0 candidates, 100% cut : memory check",
        "the number of final candidates: 0",
        "",
        "no candidates",
    ]
    assert lines[closing + 1 :] == ["no sites can run jobs"]
    assert "===== Task brokerage summary =====" not in lines


def test_an_input_unreadable_over_wan_ends_the_task_log_before_its_checks():
    # 4 of 5 files anywhere: no complete copy readable over WAN
    scenario = task_with_queues(queue("A_Q", site="A"), datasets=[dataset(replicas={"A_DATADISK": (4, 0.4)})])
    assert without_prefix(jedi_lines(panda(scenario), task_id=13), 13) == [
        "start",
        "dataset=data.EVNT is incomplete/missing at online endpoints with read_wan=ON",
    ]


def test_the_task_record_holds_the_job_checks_record():
    scenario = task_with_queues(queue("A_Q", site="A", maxrss=12000), queue("B_Q", site="B"))
    record = jedi_record(panda(scenario), task_id=11, priority=500)
    assert (record["initial"], record["final"], record["chosen"]) == (2, 1, "B")
    assert record["skipped"] == [
        {"name": "A", "criteria": "-job", "check": "job check", "detail": record["skipped"][0]["detail"]}
    ]
    assert record["job check"]["skipped"][0]["name"] == "A_Q"
    assert record["job check"]["skipped"][0]["criteria"] == "-lowmemory"
    assert record["job check"]["final"] == 1


def test_the_job_check_kept_for_the_log_is_never_stored():
    # the job check's own job brokerage rides beside the decision (asides) for the log; the stored trace and the
    # API's form are the decision's own
    decision = panda(task_with_queues(queue("A_Q", site="A", maxrss=12000), queue("B_Q", site="B")))
    assert [c.name for c in decision.asides["job check"].candidates] == ["B_Q"]
    assert decision.asides["no production queue"] == frozenset({"C"})
    assert "extra" not in decision.to_dict()
    stored = trace_decode(trace_encode(decision))
    assert ([c["name"] for c in stored["candidates"]], stored["extra"]) == (["B"], {})


# --- the analysis broker (AtlasAnalJobBroker, 1.0.4) ---


def test_an_analysis_decision_writes_both_loops():
    # the input only at HAS, whose queue WITH has too little memory (1,000 MB for 1,800): the loop with the data
    # locality check leaves WITHOUT and OFF out silently (the real input data check names no queue) and keeps none;
    # the loop without it keeps WITHOUT, weighed 1 + 2**-20 and written with 7 decimals as the real broker writes it
    data = [dataset(size=10, files=4, replicas={"HAS_DATADISK": (4, 10)})]
    grid = (
        queue("WITH", site="HAS", maxrss=1000, corecount=1),
        queue("WITHOUT", corecount=1),
        queue("OFF", status="offline", corecount=1),
    )
    scenario = anal_scenario(*grid, datasets=data, sites={"HAS": {"role": "satellite", "state": "ACTIVE"}})
    decision = panda(scenario)
    assert (decision.chosen, decision.candidates[0].weight) == ("WITHOUT", 1 + 2**-20)
    lines = without_prefix(jedi_lines(decision, task_id=5, dataset_id=77), "5 datasetID=77")
    memory = "  skip site=WITH due to The job needs 1800 MB; its maxrss is 1000 MB criteria=-lowmemory"
    assert [line for line in lines if " passed " not in line] == [
        "start",
        "!!! look for candidates WITH data locality check",
        memory,
        "",
        "===== Job brokerage summary =====",
        "data locality check: True",
        "the number of initial candidates: 3",
        "    3 ->   1 candidates,  67% cut : input data check",
        "    1 ->   0 candidates, 100% cut : memory check",
        "the number of final candidates: 0",
        "",
        "no candidates",
        "!!! look for candidates WITHOUT data locality check",
        "  skip site=OFF due to Its status is offline, not online criteria=-status",
        memory,
        "  use site=WITHOUT with weight=1.0000010 criteria=+use",
        "",
        "===== Job brokerage summary =====",
        "data locality check: False",
        "the number of initial candidates: 3",
        "    3 ->   2 candidates,  34% cut : status check",
        "    2 ->   1 candidates,  50% cut : memory check",
        "the number of final candidates: 1",
        "",
        "done",
    ]
    # without the master dataset's id the lines name the task alone
    assert jedi_lines(decision, task_id=5)[0] == "<jediTaskID=5> start"


def test_a_throttled_analysis_task_writes_the_real_error_line():
    # 120 running jobs over CAP_RUNNING_USER_JOBS 100: the real line names the cap, not its value
    grid = (queue("Q", corecount=1),)
    running = anal_scenario(*grid, user_stats={"user": {"running": 120}}, gdpconfig={"CAP_RUNNING_USER_JOBS": 100})
    assert without_prefix(jedi_lines(panda(running), task_id=6), 6) == [
        "start",
        "throttle to generate jobs due to too many running jobs 120 > CAP_RUNNING_USER_JOBS",
    ]
    queued = anal_scenario(*grid, user_stats={"user": {"queued": 201}}, gdpconfig={"CAP_RUNNING_USER_JOBS": 100})
    assert jedi_lines(panda(queued), task_id=6)[-1].endswith("too many queued jobs 201 > 2xCAP_RUNNING_USER_JOBS")
    # the share's usage: classes B and C name their threshold; A the intensity over the user's share of it,
    # 1 / (0.5 + 2**-20) = 1.999996, written to three decimals of a percent
    assert anal_throttle_line({"measure": "gshareUsage", "value": 0.93, "limit": 0.9, "taskClass": "C"}) == (
        "throttle to generate jobs due to gshare User Analysis > 90% of target and task in class C"
    )
    assert anal_throttle_line({"measure": "gshareUsage", "value": 2.5, "ratio": 0.5, "taskClass": "A"}) == (
        "throttle to generate jobs due to gshare User Analysis > 200.000% of target and task in class A"
    )
    # class S counts as A, and the real line says so
    assert anal_throttle_line({"measure": "gshareUsage", "value": 2.5, "ratio": 0.5, "taskClass": "S"}).endswith(
        "and task in class A"
    )


def test_the_analysis_record_holds_its_first_loop():
    data = [dataset(size=10, files=4, replicas={"HAS_DATADISK": (4, 10)})]
    grid = (queue("WITH", site="HAS", maxrss=1000, corecount=1), queue("WITHOUT", corecount=1))
    decision = panda(anal_scenario(*grid, datasets=data, sites={"HAS": {"role": "satellite", "state": "ACTIVE"}}))
    record = jedi_record(decision, task_id=5)
    assert (record["chosen"], record["final"], record["first_loop"]["final"]) == ("WITHOUT", 1, 0)
    first = record["first_loop"]["skipped"]
    assert [(s["name"], s["criteria"], s["check"]) for s in first] == [
        ("WITHOUT", "-fileunavailable", "input data check"),
        ("WITH", "-lowmemory", "memory check"),
    ]
    assert (first[1]["detail"]["neededMB"], first[1]["detail"]["maxrss"]) == (1800, 1000)
