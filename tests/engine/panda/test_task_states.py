"""A Why and a What-to-do for every state (issue 35, finding 1), worked numbers: the sentence of each state with
the figures it names, whose fault the main error is, and the action for it (engine/panda/task_states.py)."""

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from brokerage.engine.core.advice import ACTIONS, DATA, SITE, TASK, WAIT
from brokerage.engine.panda.task_states import MainError, TaskFacts, error_fault, task_state_explain

AT = datetime(2026, 11, 27, 14, 0, tzinfo=UTC)
# the demo's bad release: the transform crashes (pilot 1305, exe 65) at two queues
CRASH = MainError(
    label="pilot:1305 Failed to execute payload",
    component="pilot",
    code=1305,
    count=6,
    queues=(("CERN-PROD_UCORE", 4), ("BNL_PROD", 2)),
)


@pytest.mark.parametrize(
    ("component", "code", "fault"),
    [
        ("pilot", 1305, "task"),
        ("pilot", 1212, "task"),
        ("pilot", 1099, "data"),
        ("pilot", 1361, "data"),
        ("pilot", 1137, "site"),
        ("pilot", 1377, "site"),
        ("taskbuffer", 102, "site"),
        ("exe", 65, "task"),  # the payload's own codes
        ("ddm", 200, "data"),
        ("sup", 9000, "site"),  # unknown: the site's until someone knows better
        ("pilot", None, "site"),
    ],
)
def test_whose_fault_an_error_is(component, code, fault):
    assert error_fault(component, code) == fault


def test_a_failed_task_blames_its_own_crash_not_the_site():
    why, advice = task_state_explain(
        TaskFacts(status="failed", entered_reason="2 inputs failed", jobs_total=6, jobs_ended_badly=6, main_error=CRASH)
    )
    assert why == [
        "Its jobs kept failing until the inputs had no attempt left (2 inputs failed).",
        "The main error, pilot:1305 Failed to execute payload, is the task's own (its release, configuration or "
        "resource requests): 6 of 6 jobs, at CERN-PROD_UCORE (4), BNL_PROD (2).",
    ]
    assert [(a.kind, a.codes) for a in advice] == [(TASK, ("fault_task",)), (TASK, ("state_failed",))]
    assert advice[0].evidence == (
        "6 of the 6 jobs that ended badly: pilot:1305 Failed to execute payload, at CERN-PROD_UCORE (4), BNL_PROD (2)."
    )


def test_a_throttled_task_names_the_input_the_level_and_when_it_comes_back():
    facts = TaskFacts(
        status="throttled",
        old_status="running",
        throttle_level=2,
        top_attempt=11,  # a retry since the throttling: the sentence says both (issue 50: "attempt 7, a multiple of 5")
        top_attempt_file="EVNT.01234._000003.pool.root.1",
        release_at=datetime(2026, 11, 27, 22, 0, tzinfo=UTC),
        jobs_total=20,
        jobs_ended_badly=10,
        main_error=MainError("pilot:1099 Failed to stage-in file", "pilot", 1099, 10, (("RAL_MCORE", 10),)),
    )
    why, advice = task_state_explain(facts)
    assert why[0] == (
        "Input EVNT.01234._000003.pool.root.1 is at attempt 11: when the task's inputs reached 10 attempts, a "
        "multiple of 5, the watchdog throttled it (level 2) until 2026-11-27 22:00 UTC; then it goes back to running."
    )
    assert why[1].startswith("The main error, pilot:1099 Failed to stage-in file, is the data's")
    assert [a.kind for a in advice] == [DATA, WAIT]
    assert advice[1].action == ACTIONS["state_throttled"].text


@pytest.mark.parametrize(
    ("reason", "code", "sentence"),
    [
        (
            "timed out while pending in the brokerage for 72 h",
            "state_exhausted_pending",
            "It timed out while pending in the brokerage for 72 h (TASK_PENDING_TIMEOUT) without a nucleus or queue "
            "that passed.",
        ),
        (
            "scouts' cpuTime 5200 > 2 × the defined 2400",
            "state_exhausted_scout_cpu",
            "Its scout jobs needed more than twice the CPU time the task defines per event (scouts' cpuTime 5200 > 2 × "
            "the defined 2400).",
        ),
        (
            "7 scout jobs ran less than 4 minutes and 1800 jobs are expected: change nFilesPerJob or similar for "
            "longer jobs",
            "state_exhausted_short_jobs",
            "7 scout jobs ran less than 4 minutes and 1800 jobs are expected: change nFilesPerJob or similar for "
            "longer jobs.",
        ),
        (
            "all reattempts done, some inputs unsuccessful",
            "state_exhausted_attempts",
            "Every input had all its attempts and some still failed (all reattempts done, some inputs unsuccessful); "
            "the task is set to wait for a shifter instead of finishing.",
        ),
    ],
)
def test_an_exhausted_task_says_which_rule(reason, code, sentence):
    why, advice = task_state_explain(TaskFacts(status="exhausted", entered_reason=reason))
    assert why == [sentence]
    assert advice[0].codes == (code,)
    assert advice[0].kind == TASK


def test_a_running_task_gets_a_why_only_when_a_fifth_of_its_recent_jobs_fail():
    quiet = TaskFacts(status="running", recent_finished=90, recent_failed=10)
    assert task_state_explain(quiet) == ([], [])
    failing = TaskFacts(
        status="running",
        recent_finished=30,
        recent_failed=10,
        jobs_ended_badly=12,
        main_error=MainError("pilot:1137 Failed to stage-out file", "pilot", 1137, 9, (("IN2P3-CC", 9),)),
    )
    why, advice = task_state_explain(failing)
    assert why[0] == "It runs, but 25 % of its jobs that ended in the last 6 h failed (10 of 40)."
    assert "is a site's" in why[1]
    assert [a.codes for a in advice] == [("fault_site",), ("state_running_failing",)]
    assert advice[0].kind == SITE


def test_scouting_paused_and_finished_with_failures():
    why, advice = task_state_explain(TaskFacts(status="scouting", scouts_wanted=10, scouts_done=4, scouts_failed=1))
    assert why == [
        "10 scout jobs run first (4 finished, 1 failed); the rest are made once their memory, CPU and output "
        "figures are known."
    ]
    assert advice[0].kind == WAIT
    why, advice = task_state_explain(TaskFacts(status="paused", entered_by="shifter:ana", entered_at=AT))
    assert why == [
        "shifter:ana paused it at 2026-11-27 14:00 UTC: nothing is brokered or generated until it is resumed."
    ]
    why, _ = task_state_explain(TaskFacts(status="finished", jobs_total=8, jobs_ended_badly=2))
    assert why == ["It finished, but 2 of its 8 jobs failed, closed or were cancelled: some inputs were not processed."]
    assert task_state_explain(TaskFacts(status="finished", jobs_total=8)) == ([], [])


@pytest.mark.parametrize(
    ("status", "reason", "sentence", "kind"),
    [
        ("topreprocess", "a preprocess job first (preproSpec)",
         "Its preprocess job (a preprocess job first (preproSpec)) is made at the next job generation; its own jobs "
         "come after it.", WAIT),
        ("preprocessing", "1 jobs to SAT_Q",
         "Its preprocess job runs since 2026-11-27 14:00 UTC; its own jobs are made once it has finished (it is tried "
         "once).", WAIT),
        ("aborting", "abort command", "shifter:ana aborted it at 2026-11-27 14:00 UTC: its jobs are being killed.",
         WAIT),
        ("aborted", "4 jobs killed", "shifter:ana aborted it at 2026-11-27 14:00 UTC (4 jobs killed).", TASK),
        ("finishing", "finish command",
         "shifter:ana finished it at 2026-11-27 14:00 UTC: no new jobs, its queued ones cancelled; it closes once its "
         "running jobs end.", WAIT),
        ("passed", "exhausted for 10 days",
         "Passed at 2026-11-27 14:00 UTC (exhausted for 10 days): it closes at the next check as done, finished or "
         "failed by what it processed.", WAIT),
        ("toretry", "retry command",
         "shifter:ana retried it at 2026-11-27 14:00 UTC: its failed inputs get new attempts.", WAIT),
        ("toincexec", "nFilesPerJob=2",
         "shifter:ana resubmitted it at 2026-11-27 14:00 UTC with new parameters (nFilesPerJob=2): they are applied "
         "at the next refining.", WAIT),
        ("rerefine", "nFilesPerJob=2",
         "Its new parameters were applied at 2026-11-27 14:00 UTC (nFilesPerJob=2); its inputs are looked up again "
         "for new files.", WAIT),
    ],
)  # fmt: skip
def test_the_states_a_command_or_a_preprocess_job_brings_are_said_with_who_and_when(status, reason, sentence, kind):
    why, advice = task_state_explain(
        TaskFacts(status=status, entered_by="shifter:ana", entered_at=AT, entered_reason=reason)
    )
    assert why == [sentence]
    assert [a.kind for a in advice] == [kind]


def test_a_broken_task_says_what_broke_it():
    why, advice = task_state_explain(TaskFacts(status="broken", entered_reason="no scout job succeeded"))
    assert why == ["It cannot run as defined: no scout job succeeded."]
    assert advice[0].codes == ("state_broken",)


def test_a_task_finishing_on_its_termination_condition_says_so():
    facts = TaskFacts(
        status="finishing", entered_reason="termination condition 90% met: 9 of 10", entered_by="task refiner"
    )
    facts = replace(facts, entered_at=AT)
    why, advice = task_state_explain(facts)
    assert why == [
        "Its termination condition 90% met: 9 of 10 input files finished (2026-11-27 14:00 UTC): no new jobs; it "
        "closes once its running jobs end."
    ]
    assert advice[0].codes == ("state_finishing_terminated",)
    # a finish command is said as before
    commanded = task_state_explain(replace(facts, entered_reason="finished by a shifter", entered_by="shifter:ana"))
    assert commanded[1][0].codes == ("state_finishing",)


def test_a_running_task_with_jobs_merging_says_how_many_and_its_merges():
    # seed 002, "Output merging": 6 jobs merging, 1 merge job active, 2 merge attempts failed
    facts = TaskFacts(
        status="running", recent_finished=12, merging_jobs=6, merge_jobs_active=1, merge_attempts_failed=2
    )
    why, advice = task_state_explain(facts)
    assert why == [
        "Jobs in merging, waiting for their merge: 6 (1 merge job active, 2 merge attempts failed). A queue's merge "
        "job, at priority 5,000, is made once the task's other jobs there are done, and is tried three times."
    ]
    assert [(a.kind, a.codes) for a in advice] == [(WAIT, ("state_running_merging",))]
    # beside a failure rate, both are said, each with its own numbers
    failing = replace(facts, recent_failed=4, merge_jobs_active=2, merge_attempts_failed=1)
    why, _ = task_state_explain(failing)
    assert why[0] == "It runs, but 25 % of its jobs that ended in the last 6 h failed (4 of 16)."
    assert why[1].startswith("Jobs in merging, waiting for their merge: 6 (2 merge jobs active, 1 merge attempt ")


def test_a_running_task_with_jumbo_jobs_says_its_flag_its_jumbo_jobs_and_the_co_jumbo_jobs_waiting():
    # seed 002, "Jumbo jobs and co-jumbo jobs": useJumbo R, 1 jumbo job active, 4 fake co-jumbo jobs waiting
    facts = TaskFacts(
        status="running",
        jumbo_flag="jumbo jobs made, every input given out",  # states.USE_JUMBO["R"]
        jumbo_jobs_active=1,
        fake_co_jumbo_waiting=4,
    )
    why, advice = task_state_explain(facts)
    assert why == [
        "Jumbo jobs: jumbo jobs made, every input given out; 1 active jumbo job; 4 co-jumbo jobs waiting at "
        "WAITING_CO_JUMBO for them. A co-jumbo job whose events jumbo jobs processed is finished by the co-jumbo "
        "check, its events done."
    ]
    assert [(a.kind, a.codes) for a in advice] == [(WAIT, ("state_running_jumbo",))]
    # disabled (D) or never enabled: no flag given, nothing said
    assert task_state_explain(replace(facts, jumbo_flag=""))[0] == []
