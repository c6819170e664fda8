"""The gdpconfig registry: typed parsing, bounds, and the precedence of stored rows (no database)."""

import pytest

from brokerage.gdpconfig import REGISTRY, ConfigView, InvalidValue, UnknownParameter, format_value, parse_value


@pytest.mark.parametrize(
    ("key", "default"),
    # REFERENCE.md gdpconfig table
    [
        ("DISK_THRESHOLD", 100),
        ("FREE_DISK_CUTOFF", 1000),
        ("INPUT_SIZE_THRESHOLD", 1),
        ("INPUT_NUM_THRESHOLD", 100),
        ("INPUT_SIZE_FRACTION", 10),
        ("INPUT_NUM_FRACTION", 10),
        ("MIN_IO_INTENSITY_WITH_LOCAL_DATA", 200),
        ("MIN_INPUT_SIZE_WITH_LOCAL_DATA", 10000),
        ("MAX_TASK_PRIO_WITH_LOCAL_DATA", 800),
        ("NQUEUED_NUC_CAP", 2000),
        ("NQUEUED_SAT_CAP", 150),
        ("NQUEUED_NUC_CAP_FOR_JOBS", 10000),
        ("IO_INTENSITY_CUTOFF", 200),
        ("SIZE_CUTOFF_TO_MOVE_INPUT", 10),
        ("NUM_CUTOFF_TO_MOVE_INPUT", 100),
        ("MAX_DISKIO_DEFAULT", None),
        ("NW_THRESHOLD", 1.7),
        ("NW_WEIGHT_MULTIPLIER", 1),
        ("NQUEUELIMITSITE", 20),
        ("WORK_SHORTAGE", False),
        ("CAP_RUNNING_USER_JOBS", None),
        ("CAP_RUNNING_USER_CORES", None),
        ("CAP_RUNNING_GROUP_JOBS", None),
        ("CAP_RUNNING_GROUP_CORES", None),
        ("USER_USAGE_THRESHOLD_A", 1000),
        ("TW_DONE_JOB_STAT", 6),
        ("MIN_BAD_JOBS_TO_SKIP_PQ", 5),
        ("BASE_QUEUE_LENGTH_PER_PQ", 100),
        ("BASE_EXPECTED_WAIT_HOUR_ON_PQ", 8),
        ("BASE_DEFAULT_QUEUE_LENGTH_PER_PQ_USER", 5),
        ("BASE_QUEUE_RATIO_ON_PQ", 0.05),
        ("STATIC_MAX_QUEUE_RUNNING_RATIO", 2.0),
        ("MAX_EXPECTED_WAIT_HOUR", 12.0),
        ("IO_INTENSITY_CUTOFF_USER", None),
        ("DATA_CHECK_TIMEOUT_USER", None),
        ("FAST_REBRO_THRESHOLD_NQNR_RATIO", 3),
        ("FAST_REBRO_THRESHOLD_NQUEUE_FRAC", 0.3),
        ("HEARTBEAT_TIMEOUT", 2),
        ("JUMBO_MAX_TASKS", 1),
        ("JUMBO_MIN_EVENTS_DISABLE", 100000),
        ("JUMBO_PER_TASK", 1),
        ("JUMBO_PER_SITE", 1),
        ("JUMBO_MAX_CURR_PRIO", 500),
    ],
)
def test_defaults_match_the_reference(key, default):
    assert ConfigView({}).get(key) == default


def test_jumbo_defaults_derive_from_other_parameters():
    # seed 002 jumbo table: ENABLE = DISABLE × 10; MAX_EVENTS = MAX_TASKS × ENABLE / 2
    view = ConfigView({})
    assert view.get("JUMBO_MIN_EVENTS_ENABLE") == 1_000_000
    assert view.get("JUMBO_MAX_EVENTS") == 500_000
    tuned = ConfigView({("JUMBO_MIN_EVENTS_DISABLE", ""): 20_000, ("JUMBO_MAX_TASKS", ""): 3})
    assert tuned.get("JUMBO_MIN_EVENTS_ENABLE") == 200_000
    assert tuned.get("JUMBO_MAX_EVENTS") == 300_000


def test_every_parameter_has_a_component_unit_type_and_meaning():
    for parameter in REGISTRY:
        assert parameter.component, parameter.key
        assert parameter.description, parameter.key
        assert parameter.source, parameter.key
        assert parameter.value_type in {"str", "int", "float", "bool", "json"}


class TestPrecedence:
    def test_stored_value_beats_default(self):
        assert ConfigView({("NQUEUED_SAT_CAP", ""): 300}).get("NQUEUED_SAT_CAP") == 300

    def test_vo_row_beats_vo_less_row_for_that_vo_only(self):
        rows = {("NQUEUED_SAT_CAP", ""): 300, ("NQUEUED_SAT_CAP", "atlas"): 120}
        assert ConfigView(rows, vo="atlas").get("NQUEUED_SAT_CAP") == 120
        assert ConfigView(rows, vo="cms").get("NQUEUED_SAT_CAP") == 300
        assert ConfigView(rows).get("NQUEUED_SAT_CAP") == 300

    def test_per_gshare_key_beats_general_key(self):
        rows = {("DISK_THRESHOLD", ""): 80, ("DISK_THRESHOLD_Express", ""): 50}
        view = ConfigView(rows)
        assert view.explain("DISK_THRESHOLD", gshare="Express") == (50, "DISK_THRESHOLD_Express")
        assert view.explain("DISK_THRESHOLD", gshare="MC 16") == (80, "DISK_THRESHOLD")
        assert ConfigView({}).explain("DISK_THRESHOLD", gshare="Express") == (100, "default")

    def test_throttler_limits_per_work_queue_and_resource_type(self):
        # JEDI's order: work queue + resource type, then the work queue; never a general key
        rows = {("NQUEUELIMIT_MC_16", ""): 4000, ("NQUEUELIMIT_MC_16_MCORE_HIMEM", ""): 300, ("NQUEUELIMIT", ""): 9}
        view = ConfigView(rows)
        assert view.explain("NQUEUELIMIT", workqueue="MC_16_MCORE_HIMEM") == (300, "NQUEUELIMIT_MC_16_MCORE_HIMEM")
        assert view.explain("NQUEUELIMIT", workqueue="MC_16_SCORE") == (4000, "NQUEUELIMIT_MC_16")
        assert view.explain("NQUEUELIMIT", workqueue="MC_16") == (4000, "NQUEUELIMIT_MC_16")
        assert view.explain("NQUEUELIMIT", workqueue="Reprocessing") == (None, "unset")

    def test_per_gshare_key_beats_a_vo_specific_general_key(self):
        # the more specific key wins first, then the VO decides between rows of that key
        rows = {("DISK_THRESHOLD", "atlas"): 70, ("DISK_THRESHOLD_Express", ""): 50}
        assert ConfigView(rows, vo="atlas").get("DISK_THRESHOLD", gshare="Express") == 50

    def test_per_workflow_heartbeat(self):
        rows = {("HEARTBEAT_TIMEOUT_pull_ups", ""): 6}
        assert ConfigView(rows).get("HEARTBEAT_TIMEOUT", workflow="pull_ups") == 6
        assert ConfigView(rows).get("HEARTBEAT_TIMEOUT", workflow="push") == 2

    def test_fast_rebrokerage_needs_the_gshare_row(self):
        # seed 000: "Unless the gshare defines the parameter it doesn't trigger the fast rebrokerage"
        rows = {("FAST_REBRO_THRESHOLD_NQUEUE", ""): 100, ("FAST_REBRO_THRESHOLD_NQUEUE_MC 16", ""): 500}
        view = ConfigView(rows)
        assert view.get("FAST_REBRO_THRESHOLD_NQUEUE", gshare="MC 16") == 500
        assert view.get("FAST_REBRO_THRESHOLD_NQUEUE", gshare="Express") is None

    def test_unknown_key_lookup_names_it(self):
        with pytest.raises(UnknownParameter, match="unknown gdpconfig parameter 'DISK_TRESHOLD'"):
            ConfigView({}).get("DISK_TRESHOLD")


class TestFlatScenarioView:
    def test_flat_values_are_parsed_and_variants_resolved(self):
        view = ConfigView.from_flat({"NQUEUED_SAT_CAP": 150, "DISK_THRESHOLD_Express": "50"})
        assert view.get("DISK_THRESHOLD", gshare="Express") == 50

    def test_flat_unknown_key_is_refused(self):
        with pytest.raises(UnknownParameter, match="NQUEUED_SAT_CAPP"):
            ConfigView.from_flat({"NQUEUED_SAT_CAPP": 1})

    def test_as_flat_records_effective_values_and_variants(self):
        view = ConfigView({("DISK_THRESHOLD_Express", ""): 50, ("MY_KNOB", ""): "x"})
        flat = view.as_flat(gshares=("Express", "MC 16"))
        assert flat["DISK_THRESHOLD"] == 100
        assert flat["DISK_THRESHOLD_Express"] == 50
        assert "DISK_THRESHOLD_MC 16" not in flat
        assert flat["MY_KNOB"] == "x"


class TestParsing:
    @pytest.mark.parametrize(
        ("value_type", "raw", "expected"),
        [
            ("int", "150", 150),
            ("int", " 7 ", 7),
            ("int", 3.0, 3),
            ("float", "1.7", 1.7),
            ("float", 2, 2.0),
            ("bool", "True", True),
            ("bool", "false", False),
            ("bool", "1", True),
            ("str", "abc", "abc"),
            ("json", '{"a": [1, 2]}', {"a": [1, 2]}),
            ("json", [1], [1]),
        ],
    )
    def test_good_values(self, value_type, raw, expected):
        assert parse_value("K", value_type, raw) == expected

    @pytest.mark.parametrize(
        ("value_type", "raw", "why"),
        [
            ("int", "abc", "whole number"),
            ("int", "1.5", "whole number"),
            ("int", True, "number"),
            ("float", "x", "number"),
            ("float", "nan", "finite"),
            ("bool", "maybe", "True or False"),
            ("json", "{bad", "Expecting"),
            ("str", 5, "text"),
        ],
    )
    def test_bad_values_name_the_parameter_and_type(self, value_type, raw, why):
        with pytest.raises(InvalidValue) as caught:
            parse_value("NQUEUED_SAT_CAP", value_type, raw)
        message = str(caught.value)
        assert message.startswith(f"NQUEUED_SAT_CAP: {raw!r} is not a valid {value_type}")
        assert why in message

    def test_bounds_are_checked(self):
        with pytest.raises(InvalidValue, match=r"INPUT_SIZE_FRACTION: 150\.0 .* at most 100"):
            REGISTRY.get("INPUT_SIZE_FRACTION").parse("150")
        with pytest.raises(InvalidValue, match=r"DISK_THRESHOLD_Express: -1 .* at least 0"):
            REGISTRY.get("DISK_THRESHOLD").parse("-1", "DISK_THRESHOLD_Express")

    @pytest.mark.parametrize(("value_type", "value"), [("int", 5), ("float", 1.5), ("bool", True), ("json", {"a": 1})])
    def test_format_and_parse_round_trip(self, value_type, value):
        assert parse_value("K", value_type, format_value(value_type, value)) == value


def test_registry_resolves_variants_by_longest_prefix():
    assert REGISTRY.find("DISK_THRESHOLD_Express")[1] == "Express"
    assert REGISTRY.find("NQUEUED_NUC_CAP_FOR_JOBS")[0].key == "NQUEUED_NUC_CAP_FOR_JOBS"
    assert REGISTRY.find("NQUEUED_NUC_CAP_X") is None  # NQUEUED_NUC_CAP takes no suffix
    assert "DISK_THRESHOLD_" not in REGISTRY


def test_every_numeric_parameter_is_bounded_and_says_so():
    """Issue 31: NQUEUED_SAT_CAP = 99999999999999999999999 was accepted. Each number has a maximum (its entry's, or
    its unit's ceiling), and the error names it."""
    from brokerage.gdpconfig.registry import REGISTRY, InvalidValue

    numbers = [p for p in REGISTRY if p.value_type in ("int", "float")]
    assert numbers
    assert all(p.maximum is not None for p in numbers)
    cap = REGISTRY.find("NQUEUED_SAT_CAP")[0]
    assert cap.bounds_text == "0 – 10,000,000 files"
    assert cap.parse("10000000") == 10_000_000
    with pytest.raises(InvalidValue, match="must be at most 10,000,000"):
        cap.parse("99999999999999999999999")
    with pytest.raises(InvalidValue, match="must be at least 0"):
        cap.parse("-1")
