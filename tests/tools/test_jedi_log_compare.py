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
    assert found.skips == {("Q3_SITE3", "-zeroshare"), ("Q1_SITE1_test", "-cache"), ("Q4_SITE0", "-cache")}
    assert found.used == {"Q0_SITE0": 37.27272727272727}
    assert found.summary[1:] == [
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
    assert differences(criteria, THEIRS)[0].startswith("skips only ours [('Q3_SITE3', '-status')]")
    weight = [line.replace("weight=37.272727272727274", "weight=37.28") for line in OURS]
    assert differences(weight, THEIRS)[0].startswith("use:")
    assert differences(OURS[:-1], THEIRS) == ["end: ours '', theirs 'done'"]
    other_task = [line.replace("1001", "1002") for line in OURS]
    assert differences(other_task, THEIRS)[0].startswith("task prefix")
