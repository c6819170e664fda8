"""The numbers in a reason's sentence read as a person writes them (issue 50: "4795286.5938 GB free")."""

from brokerage.engine.core.reasons import explain


def test_the_numbers_of_a_sentence_are_grouped_and_rounded():
    detail = {"neededMB": 12000, "maxwdirPerCore": 2000.0, "storageFreeGB": 4795286.5938, "storageFloorGB": 200.0}
    sentence = explain("disk", detail)
    assert sentence.startswith("The job needs 12,000 MB of work directory and it offers 2000 MB per core")
    assert "4,795,286.6 GB free" in sentence
    assert "(more than 200 GB needed)" in sentence


def test_small_and_middling_values_keep_what_is_compared():
    from brokerage.engine.core.reasons import _readable

    assert _readable(1.2345) == "1.23"
    assert _readable(2.50) == "2.5"
    assert _readable(0.012345) == "0.0123"
    assert _readable(9999) == 9999  # a priority, a core power: no separator under ten thousand
    assert _readable(200000) == "200,000"
    assert _readable(True) is True


def test_every_weight_factor_the_task_broker_writes_is_explained():
    # issue 50: "RW = 0, rwUsed = 50" unexplained on the candidates' table
    from brokerage.engine.core.reasons import factor_meaning

    for name in ("RW", "rwUsed", "rwFactor", "tapeWeight", "spaceFreeGB", "spaceTotalGB", "localInputGB", "freeTB"):
        assert factor_meaning(name), name
    assert factor_meaning("no such factor") == ""
