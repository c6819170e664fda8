"""gdpconfig revisions (issue 34): every save, delete or applied profile makes one; two compare; one restores."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User

from brokerage.models import GdpConfig, GdpConfigChange, GdpConfigRevision
from brokerage.selectors.gdpconfig import gdpconfig_revision_diff, gdpconfig_revision_list, gdpconfig_revision_previous
from brokerage.services.decisions import cycle_start
from brokerage.services.gdpconfig import (
    GdpConfigInputError,
    GdpConfigNothingToRestore,
    gdpconfig_delete,
    gdpconfig_profile_apply,
    gdpconfig_revision_restore,
    gdpconfig_save,
)

pytestmark = pytest.mark.django_db


def values() -> dict[str, str]:
    return dict(GdpConfig.objects.values_list("key", "value"))


def test_each_change_makes_a_revision_of_the_whole_configuration():
    admin = User.objects.create_user(username="ops")
    gdpconfig_save(key="NW_THRESHOLD", value="2", user=admin, comment="links are slow")
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="500")
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="500")  # the same value again: no change, no revision
    gdpconfig_profile_apply(profile="panda")
    gdpconfig_delete(instance=GdpConfig.objects.get(key="NW_THRESHOLD"), comment="back to the default")
    revisions = list(GdpConfigRevision.objects.order_by("pk"))
    # the rows as found first (none), then one per change
    assert [r.action for r in revisions] == ["first", "save", "save", "profile", "delete"]
    assert revisions[1].username == "ops"
    assert revisions[1].comment == "links are slow"
    assert revisions[1].summary == "NW_THRESHOLD: — → 2.0"  # stored as its type writes it
    assert sorted(row[2] for row in revisions[3].rows) == ["NQUEUED_SAT_CAP", "NW_THRESHOLD", "PROFILE"]
    assert sorted(row[2] for row in revisions[4].rows) == ["NQUEUED_SAT_CAP", "PROFILE"]
    # each change row names the revision it made
    assert list(GdpConfigChange.objects.order_by("pk").values_list("revision__action", flat=True)) == [
        "save",
        "save",
        "profile",
        "delete",
    ]
    listed = gdpconfig_revision_list()
    assert [r.pk for r in listed] == [r.pk for r in reversed(revisions)]


def test_two_revisions_compare_row_by_row():
    gdpconfig_save(key="NW_THRESHOLD", value="2")
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="500")
    first_change = GdpConfigRevision.objects.get(action="save", summary__startswith="NW_THRESHOLD")
    gdpconfig_save(key="NW_THRESHOLD", value="4")
    gdpconfig_delete(instance=GdpConfig.objects.get(key="NQUEUED_SAT_CAP"))
    last = GdpConfigRevision.objects.order_by("-pk").first()
    rows = gdpconfig_revision_diff(old=first_change, new=last)
    assert [(r["key"], r["before"], r["after"], r["change"]) for r in rows] == [
        ("NW_THRESHOLD", "2.0", "4.0", "changed")
    ]
    middle = gdpconfig_revision_previous(revision=last)
    rows = gdpconfig_revision_diff(old=middle, new=last)
    assert [(r["key"], r["before"], r["after"], r["change"]) for r in rows] == [
        ("NQUEUED_SAT_CAP", "500", None, "removed")
    ]


def test_a_restore_brings_back_every_row_and_records_itself():
    gdpconfig_save(key="NW_THRESHOLD", value="2")
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="500")
    wanted = GdpConfigRevision.objects.order_by("-pk").first()
    gdpconfig_save(key="NW_THRESHOLD", value="9")
    gdpconfig_delete(instance=GdpConfig.objects.get(key="NQUEUED_SAT_CAP"))
    gdpconfig_save(key="DISK_THRESHOLD", value="300")
    assert values() == {"NW_THRESHOLD": "9.0", "DISK_THRESHOLD": "300"}
    admin = User.objects.create_user(username="ops")
    made = gdpconfig_revision_restore(revision_id=wanted.pk, user=admin, comment="the cap was better")
    assert values() == {"NW_THRESHOLD": "2.0", "NQUEUED_SAT_CAP": "500"}
    assert made.action == "restore"
    assert made.digest == wanted.digest
    assert made.username == "ops"
    assert sorted(made.changes.values_list("key", "action")) == [
        ("DISK_THRESHOLD", "delete"),
        ("NQUEUED_SAT_CAP", "create"),
        ("NW_THRESHOLD", "update"),
    ]
    with pytest.raises(GdpConfigNothingToRestore):
        gdpconfig_revision_restore(revision_id=wanted.pk)
    with pytest.raises(GdpConfigInputError) as unknown:
        gdpconfig_revision_restore(revision_id=10**9)
    assert unknown.value.field == "revision"


def test_a_cycle_points_at_the_revision_it_ran_under():
    now = datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert cycle_start(plugin="atlas_prod_task", now=now).revision is None
    gdpconfig_save(key="NW_THRESHOLD", value="2")
    revision = GdpConfigRevision.objects.order_by("-pk").first()
    assert cycle_start(plugin="atlas_prod_task", now=now).revision_id == revision.pk
