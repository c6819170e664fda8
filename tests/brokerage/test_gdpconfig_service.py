"""Writing and reading gdpconfig through the database: validation, history, cache invalidation."""

import pytest

from brokerage.gdpconfig import UnknownParameter
from brokerage.models import GdpConfig, GdpConfigChange
from brokerage.selectors.gdpconfig import gdpconfig_get, gdpconfig_parameter_rows, gdpconfig_view
from brokerage.services.gdpconfig import GdpConfigInputError, gdpconfig_delete, gdpconfig_save

pytestmark = pytest.mark.django_db


def test_save_takes_identity_and_type_from_the_registry(superuser):
    row = gdpconfig_save(key="NQUEUED_SAT_CAP", value=" 300 ", user=superuser, comment="busy links")
    assert (row.app, row.component, row.key, row.vo, row.value, row.type) == (
        "jedi",
        "jobbroker",
        "NQUEUED_SAT_CAP",
        "",
        "300",
        "int",
    )
    change = GdpConfigChange.objects.get()
    assert (change.action, change.old_value, change.new_value, change.username, change.comment) == (
        "create",
        "",
        "300",
        "root",
        "busy links",
    )


def test_update_records_old_and_new_and_same_value_records_nothing(superuser):
    gdpconfig_save(key="NW_THRESHOLD", value="1.7", user=superuser)
    gdpconfig_save(key="NW_THRESHOLD", value="2.0", user=superuser)
    gdpconfig_save(key="NW_THRESHOLD", value="2", user=superuser)  # same number, normalised to 2.0
    changes = list(GdpConfigChange.objects.order_by("id").values_list("action", "old_value", "new_value"))
    assert changes == [("create", "", "1.7"), ("update", "1.7", "2.0")]
    assert GdpConfig.objects.get().value == "2.0"


def test_bad_value_names_the_parameter_and_type_and_stores_nothing():
    with pytest.raises(GdpConfigInputError) as caught:
        gdpconfig_save(key="NQUEUED_SAT_CAP", value="abc")
    assert caught.value.field == "value"
    assert "NQUEUED_SAT_CAP: 'abc' is not a valid int" in str(caught.value)
    assert not GdpConfig.objects.exists()
    assert not GdpConfigChange.objects.exists()


def test_unknown_key_needs_the_custom_flag():
    with pytest.raises(GdpConfigInputError, match="tick 'custom'") as caught:
        gdpconfig_save(key="MY_SITE_KNOB", value="1")
    assert caught.value.field == "key"
    with pytest.raises(GdpConfigInputError, match="choose the type") as caught:
        gdpconfig_save(key="MY_SITE_KNOB", value="1", is_custom=True, app="jedi", component="mine")
    assert caught.value.field == "type"
    row = gdpconfig_save(
        key="MY_SITE_KNOB", value='{"a": 1}', is_custom=True, app="jedi", component="mine", value_type="json"
    )
    assert row.typed_value == {"a": 1}
    assert row.is_custom


def test_json_custom_value_must_parse():
    with pytest.raises(GdpConfigInputError, match="MY_JSON: '\\{oops' is not a valid json"):
        gdpconfig_save(key="MY_JSON", value="{oops", is_custom=True, app="jedi", component="x", value_type="json")


def test_lookup_sees_a_change_at_once_despite_the_cache():
    assert gdpconfig_get(key="NQUEUED_SAT_CAP") == 150
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="400")
    assert gdpconfig_get(key="NQUEUED_SAT_CAP") == 400
    gdpconfig_delete(instance=GdpConfig.objects.get(key="NQUEUED_SAT_CAP"))
    assert gdpconfig_get(key="NQUEUED_SAT_CAP") == 150
    assert GdpConfigChange.objects.filter(action="delete", old_value="400").exists()


def test_lookup_precedence_over_stored_rows():
    gdpconfig_save(key="DISK_THRESHOLD", value="80")
    gdpconfig_save(key="DISK_THRESHOLD", value="70", vo="atlas")
    gdpconfig_save(key="DISK_THRESHOLD_Express", value="50")
    assert gdpconfig_get(key="DISK_THRESHOLD") == 80
    assert gdpconfig_get(key="DISK_THRESHOLD", vo="atlas") == 70
    assert gdpconfig_get(key="DISK_THRESHOLD", vo="atlas", gshare="Express") == 50
    assert gdpconfig_get(key="DISK_THRESHOLD", vo="cms", gshare="MC 16") == 80


def test_the_table_is_read_once_while_cached(django_assert_num_queries):
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="400")
    with django_assert_num_queries(1):
        for _ in range(5):
            gdpconfig_view(vo="atlas").get("NQUEUED_SAT_CAP")


def test_unknown_key_lookup_raises_naming_it():
    with pytest.raises(UnknownParameter, match="'NO_SUCH_KEY'"):
        gdpconfig_get(key="NO_SUCH_KEY")


def test_a_row_written_around_the_service_falls_back_to_the_default():
    GdpConfig.objects.create(component="jobbroker", key="NQUEUED_SAT_CAP", value="lots", type="int")
    assert gdpconfig_get(key="NQUEUED_SAT_CAP") == 150


def test_parameter_rows_show_default_and_effective_side_by_side():
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="400")
    rows = {row["key"]: row for row in gdpconfig_parameter_rows()}
    assert (rows["NQUEUED_SAT_CAP"]["default"], rows["NQUEUED_SAT_CAP"]["effective"]) == ("150", 400)
    assert rows["NQUEUED_SAT_CAP"]["overridden"]
    # its own stored row is "stored row" (the key column names it); a default is "default"
    assert rows["NQUEUED_SAT_CAP"]["origin"] == "stored row"
    assert rows["FREE_DISK_CUTOFF"]["origin"] == "default"
    assert rows["MAX_DISKIO_DEFAULT"]["effective"] == "unset"
    assert rows["JUMBO_MAX_EVENTS"]["default"] == "JUMBO_MAX_TASKS × JUMBO_MIN_EVENTS_ENABLE / 2"


class TestProfiles:
    def test_applying_a_profile_stores_the_profile_row_with_its_history(self, superuser):
        from brokerage.services.gdpconfig import gdpconfig_profile_apply

        row = gdpconfig_profile_apply(profile="panda", user=superuser)
        assert (row.key, row.value, row.vo) == ("PROFILE", "panda", "")
        change = GdpConfigChange.objects.get(key="PROFILE")
        assert (change.old_value, change.new_value, change.username) == ("", "panda", "root")
        assert "panda-server 1.0.4" in change.comment
        # live values follow the profile: EXPRESS_MIN_PRIORITY is 1000 under seed, 1001 under panda
        assert gdpconfig_get(key="EXPRESS_MIN_PRIORITY") == 1001
        assert gdpconfig_view().explain("EXPRESS_MIN_PRIORITY") == (1001, "profile panda")
        gdpconfig_profile_apply(profile="seed", user=superuser)
        assert gdpconfig_get(key="EXPRESS_MIN_PRIORITY") == 1000
        assert GdpConfigChange.objects.filter(key="PROFILE").count() == 2

    def test_an_unknown_profile_is_refused_by_name(self):
        from brokerage.services.gdpconfig import gdpconfig_profile_apply

        with pytest.raises(GdpConfigInputError, match="unknown profile 'pandas'"):
            gdpconfig_profile_apply(profile="pandas")
        assert not GdpConfig.objects.exists()

    def test_the_effect_lists_each_change_and_the_rows_that_keep_their_value(self):
        from brokerage.gdpconfig.profiles import PROFILES
        from brokerage.selectors.gdpconfig import gdpconfig_profile_effect

        gdpconfig_save(key="EXCLUDE_TEST_QUEUES", value="true")  # a stored row wins over the profile
        effect = {row["key"]: row for row in gdpconfig_profile_effect(profile="panda")}
        assert effect["EXPRESS_MIN_PRIORITY"]["now"] == 1000
        assert effect["EXPRESS_MIN_PRIORITY"]["after"] == 1001
        assert effect["EXPRESS_MIN_PRIORITY"]["origin_after"] == "profile panda"
        kept = effect["EXCLUDE_TEST_QUEUES"]
        assert kept["kept_by_row"] is True
        assert (kept["now"], kept["after"], kept["profile_value"]) == (True, True, False)
        # every value the profile sets is listed: changed, or kept by a row
        assert set(PROFILES["panda"].values) == set(effect)
        assert gdpconfig_profile_effect(profile="seed") == []
