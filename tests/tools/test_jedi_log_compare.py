"""The normalisation the JEDI log differential compares by (tools/peer/jedi_log_compare.py): what it keeps, what it
drops, and that it tells a changed count, criteria or weight apart."""

from tools.peer.jedi_log_compare import differences, normalise

THEIRS = [
    "<jediTaskID=1001> start currentPriority=100",
    "<jediTaskID=1001> Network weights are ACTIVE!",
    "<jediTaskID=1001>   skip site=Q3_SITE3 due to zero share criteria=-zeroshare",
    "<jediTaskID=1001> 8 candidates passed zero share check",
    "<jediTaskID=1001>   skip site=Q1_SITE1_test without AUTO due to missing SW cache=X criteria=-cache",
    "<jediTaskID=1001>   skip site=Q4_SITE0/SCORE without AUTO due to missing SW cache=X criteria=-cache",
    "<jediTaskID=1001>   use site=Q0_SITE0 with weight=37.27272727272727 nRun=40 nAct=5 criteria=+use",
    "<jediTaskID=1001> ",
    "<jediTaskID=1001> ===== Job brokerage summary =====",
    "<jediTaskID=1001> the number of initial candidates: 9",
    "<jediTaskID=1001>     9 ->   8 candidates,  12% cut : zero share check",
    "<jediTaskID=1001>     8 ->   5 candidates,  38% cut : SW/HW check",
    "<jediTaskID=1001> the number of final candidates: 1",
    "<jediTaskID=1001> ",
    "<jediTaskID=1001> done",
]
# ours: other sentences, the skip lines in another order, no informational lines
OURS = [
    "<jediTaskID=1001> start currentPriority=100",
    "<jediTaskID=1001>   skip site=Q4_SITE0 due to The release check failed criteria=-cache",
    "<jediTaskID=1001>   skip site=Q1_SITE1_test due to The release check failed criteria=-cache",
    "<jediTaskID=1001>   skip site=Q3_SITE3 due to a zero share criteria=-zeroshare",
    "<jediTaskID=1001>   use site=Q0_SITE0 with weight=37.272727272727274 criteria=+use",
    *THEIRS[8:],
]


def test_the_normalised_parts():
    found = normalise(THEIRS)
    assert (found.task, found.start, found.end) == ({"1001"}, "start currentPriority=100", "done")
    # pseudo-queues are named by their unified queue; the sentences are left out
    assert found.skips == {
        ("site", "Q3_SITE3", "-zeroshare"),
        ("site", "Q1_SITE1_test", "-cache"),
        ("site", "Q4_SITE0", "-cache"),
    }
    assert found.used == {"Q0_SITE0": 37.27272727272727}
    assert len(found.summaries) == 1
    assert found.summaries[0][1:] == [
        "the number of initial candidates: 9",
        "    9 ->   8 candidates,  12% cut : zero share check",
        "    8 ->   5 candidates,  38% cut : SW/HW check",
        "the number of final candidates: 1",
    ]


def test_the_same_decision_in_other_words_agrees():
    assert differences(OURS, THEIRS) == []  # the weights differ in the 16th digit: within 1e-6


def test_a_different_count_criteria_weight_or_end_is_told():
    cut = [line.replace("38% cut", "37% cut") for line in OURS]
    assert [d.split(":")[0] for d in differences(cut, THEIRS)] == ["summary"]
    criteria = [line.replace("criteria=-zeroshare", "criteria=-status") for line in OURS]
    assert differences(criteria, THEIRS)[0].startswith("skips only ours [('site', 'Q3_SITE3', '-status')]")
    weight = [line.replace("weight=37.272727272727274", "weight=37.28") for line in OURS]
    assert differences(weight, THEIRS)[0].startswith("use:")
    assert differences(OURS[:-1], THEIRS) == ["end: ours '', theirs 'done'"]
    other_task = [line.replace("1001", "1002") for line in OURS]
    assert differences(other_task, THEIRS)[0].startswith("task prefix")


# a task broker's log (AtlasProdTaskBroker, 1.0.4): its job check's site lines between its nucleus lines
TASK_THEIRS = [
    "<jediTaskID=2001> start",
    "<jediTaskID=2001> got 3 candidates",
    "<jediTaskID=2001>   skip nucleus=NUC0 since NUC0_DATADISK has write_wan=TEST criteria=-destination_blacklist",
    "<jediTaskID=2001> 2 candidates passed endpoint check with DISK_THRESHOLD=100 TB",
    "<jediTaskID=2001> ===== start for job check",
    "<jediTaskID=2001>   skip site=NUC1_Q0 due to status=offline criteria=-status",
    "<jediTaskID=2001> ===== done for job check",
    "<jediTaskID=2001>   skip nucleus=NUC1 due to missing ability to run jobs criteria=-job",
    "<jediTaskID=2001> ",
    "<jediTaskID=2001> ===== Task brokerage summary =====",
    "<jediTaskID=2001> the number of initial candidates: 3",
    "<jediTaskID=2001>     3 ->   2 candidates,  34% cut : storage endpoint check",
    "<jediTaskID=2001>     2 ->   1 candidates,  50% cut : job check",
    "<jediTaskID=2001> the number of final candidates: 1",
    "<jediTaskID=2001> ",
    "<jediTaskID=2001>   use nucleus=NUC2 weight=109.5 1/(1 : RW=0<50)*( free_space=146.0 TB ) criteria=+use",
    "<jediTaskID=2001>   set nucleus=NUC2 with True criteria=+set",
]


def test_a_task_log_keeps_its_nucleus_and_job_check_lines_apart():
    found = normalise(TASK_THEIRS, subject="nucleus")
    assert found.skips == {
        ("nucleus", "NUC0", "-destination_blacklist"),
        ("site", "NUC1_Q0", "-status"),
        ("nucleus", "NUC1", "-job"),
    }
    assert (found.used, found.chosen, found.end) == ({"NUC2": 109.5}, "NUC2", "")
    assert [summary[0] for summary in found.summaries] == ["===== Task brokerage summary ====="]


def test_a_nucleus_drawn_among_several_agrees_only_if_used():
    two = [*TASK_THEIRS[:-2], TASK_THEIRS[-2].replace("NUC2", "NUC3"), *TASK_THEIRS[-2:]]
    other_draw = [*two[:-1], two[-1].replace("NUC2", "NUC3")]
    assert differences(other_draw, two, subject="nucleus") == []  # each side's own random draw among the two
    unused = [*two[:-1], two[-1].replace("NUC2", "NUC4")]
    assert differences(unused, two, subject="nucleus") == ["chosen: ours 'NUC4', theirs 'NUC2'"]
    single = [*TASK_THEIRS[:-1], TASK_THEIRS[-1].replace("NUC2", "NUC0")]
    assert differences(single, TASK_THEIRS, subject="nucleus") == ["chosen: ours 'NUC0', theirs 'NUC2'"]


def test_the_error_that_ends_a_brokerage_is_its_last_word():
    ended = ["<jediTaskID=5> start", "<jediTaskID=5> got 2 candidates"]
    missing = [*ended, "<jediTaskID=5> dataset=mc23.7.EVNT is incomplete/missing at online endpoints with read_wan=ON"]
    assert normalise(missing, subject="nucleus").end.startswith("dataset=mc23.7.EVNT is incomplete/missing")
    assert differences(ended, missing, subject="nucleus") == [
        "end: ours '', theirs 'dataset=mc23.7.EVNT is incomplete/missing at online endpoints with read_wan=ON'"
    ]
    assert normalise(["<jediTaskID=5> unknown nucleus NUC9"]).end == "unknown nucleus NUC9"
    job_check_failed = [*ended, "<jediTaskID=5> no candidates", "<jediTaskID=5> no sites can run jobs"]
    assert normalise(job_check_failed, subject="nucleus").end == "no sites can run jobs"
