"""The pages of issue 34 on the `brokered` grid of test_api (SAT2_Q skipped as links_full: 200 files queued on its
link > NQUEUED_SAT_CAP 150; the job set went to SAT_Q): replay, what-if over a cycle and a window, revisions."""

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from brokerage.models import Decision, GdpConfig, GdpConfigRevision
from brokerage.services.gdpconfig import gdpconfig_save
from tests.monitor.test_api import brokered  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db


def test_the_decision_page_offers_replay_and_the_scenario(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    html = client.get(reverse("monitor:decision", args=[decision.pk])).content.decode()
    assert reverse("monitor:decision-replay", args=[decision.pk]) in html
    assert reverse("api:decision-scenario", args=[decision.pk]) in html
    assert 'method="get"' in html.split('id="replay"')[1].split("</section>")[0]


def test_the_replay_page_says_identical_then_shows_what_a_change_brings_back(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    url = reverse("monitor:decision-replay", args=[decision.pk])
    same = client.get(url)
    assert same.status_code == 200
    assert same.context["result"]["identical"] is True
    assert "Identical" in same.content.decode()
    raised = client.get(url, {"set": "NQUEUED_SAT_CAP=300"})
    assert raised.context["result"]["difference"]["gained"] == [{"name": "SAT2_Q", "was": "links_full"}]
    html = raised.content.decode()
    assert "Come back (1)" in html
    assert "links_full" in html
    bad = client.get(url, {"set": "NQUEUED_SAT_CAP=lots"})
    assert bad.status_code == 200
    assert "NQUEUED_SAT_CAP" in bad.context["form"]["error"]
    assert bad.context["result"] is None


def test_what_if_over_the_cycle_and_the_window_count_candidate_changes(client, brokered):  # noqa: F811
    decision = Decision.objects.get()
    page = client.post(reverse("monitor:cycle-what-if", args=[decision.cycle_id]), {"set": "NQUEUED_SAT_CAP=300"})
    assert page.status_code == 200
    result = page.context["result"]
    # SAT2_Q came back: a candidate change (the draw between the two queues may move the choice or not)
    assert (result["changed_candidates"], result["changed_outcome"], result["unchanged"]) == (1, 0, 0)
    html = page.content.decode()
    assert 'id="what-if-changed"' in html
    assert reverse("monitor:decision-replay", args=[decision.pk]) + "?set=NQUEUED_SAT_CAP%3D300" in html
    window = client.post(
        reverse("monitor:what-if") + "?since=2026-11-01T00:00&until=2026-11-02T00:00", {"set": "NQUEUED_SAT_CAP=5"}
    )
    assert window.context["n_cycles"] == 1
    assert window.context["result"]["changed_choice"] == 1
    html = window.content.decode()
    assert 'id="assignments-window-queue"' in html  # SAT_Q 1 → 0: the queues' chart is drawn
    assert "Decisions that chose no queue: 0 stored, 1 with the change." in html  # not a bar called "(none)"
    assert "(none)" not in html
    unrun = client.get(reverse("monitor:what-if"))
    assert unrun.status_code == 200
    assert unrun.context["result"] is None


def test_revisions_list_compare_and_restore_with_permission(client, brokered):  # noqa: F811
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
    wanted = GdpConfigRevision.objects.order_by("-pk").first()
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="5", comment="tighter")
    listing = client.get(reverse("monitor:gdpconfig-revisions")).content.decode()
    assert "tighter" in listing
    assert client.get(reverse("monitor:gdpconfig")).context["revisions"][0].comment == "tighter"
    page = client.get(reverse("monitor:gdpconfig-revision", args=[wanted.pk]))
    assert page.context["restore_overrides"] == {"NQUEUED_SAT_CAP": 300}
    assert "NQUEUED_SAT_CAP%3D300" in page.context["what_if"]
    restore = reverse("monitor:gdpconfig-revision-restore", args=[wanted.pk])
    assert client.post(restore).status_code == 302  # to the sign-in page
    assert GdpConfig.objects.get(key="NQUEUED_SAT_CAP").value == "5"
    reader = User.objects.create_user("reader", password="pw")
    client.force_login(reader)
    assert client.post(restore).status_code == 403
    reader.user_permissions.add(Permission.objects.get(codename="change_gdpconfig"))
    client.force_login(User.objects.get(pk=reader.pk))
    assert client.post(restore, {"comment": "back to 300"}).status_code == 302
    assert GdpConfig.objects.get(key="NQUEUED_SAT_CAP").value == "300"
    assert GdpConfigRevision.objects.order_by("-pk").first().action == "restore"


def test_a_window_that_is_not_a_time_is_named_and_the_last_hour_shown(client, brokered):  # noqa: F811
    page = client.post(reverse("monitor:what-if") + "?since=yesterday")
    assert page.status_code == 200
    assert page.context["window"]["problem"].startswith("since: 'yesterday'")


def test_a_what_if_runs_only_on_its_forms_post(client, brokered):  # noqa: F811
    """Issue 47, finding 3: any value of `run` on a GET started the what-if; a GET now only fills the form."""
    decision = Decision.objects.get()
    url = reverse("monitor:cycle-what-if", args=[decision.cycle_id])
    for run in ("1", "²", "yes"):
        page = client.get(url, {"set": "NQUEUED_SAT_CAP=300", "run": run})
        assert page.status_code == 200
        assert page.context["result"] is None
        assert page.context["form"]["set"] == "NQUEUED_SAT_CAP=300"  # the form, filled from the address
    html = client.get(url).content.decode()
    assert 'method="post"' in html
    assert "csrfmiddlewaretoken" in html


def test_a_what_if_past_its_time_says_how_far_it_got(client, brokered, settings):  # noqa: F811
    decision = Decision.objects.get()
    settings.WHAT_IF_SECONDS = 0  # stops before the first decision
    page = client.post(reverse("monitor:cycle-what-if", args=[decision.cycle_id]), {"set": "NQUEUED_SAT_CAP=300"})
    result = page.context["result"]
    assert (result["stopped_early"], result["looked_at"], result["selected"]) == (True, 0, 1)
    assert "Stopped after 0 s: 0 of the 1 decisions selected were replayed" in page.content.decode()


def test_a_second_what_if_of_the_same_client_is_told_to_wait(client, brokered):  # noqa: F811
    from brokerage.costly import costly_slot

    decision = Decision.objects.get()
    url = reverse("monitor:cycle-what-if", args=[decision.cycle_id])
    with costly_slot(client="address:127.0.0.1", what="what-if"):  # this client's first one, still running
        busy = client.post(url, {"set": "NQUEUED_SAT_CAP=300"})
        assert busy.status_code == 429
        assert busy["Retry-After"] == "5"
        assert "Your previous what-if is still running" in busy.content.decode()
    assert client.post(url, {"set": "NQUEUED_SAT_CAP=300"}).status_code == 200  # the slot was given back


def test_a_restores_what_if_compares_the_revision_with_the_values_in_force(client, brokered):  # noqa: F811
    # the cycle ran under NQUEUED_SAT_CAP 150 (SAT2_Q skipped, 200 files queued); since then 300 is in force. Restoring
    # the revision of 150 compared with the stored decisions changes nothing ("0 would change", issue 50); compared
    # with the values in force now, SAT2_Q drops out again
    from urllib.parse import parse_qs, urlsplit

    gdpconfig_save(key="NQUEUED_SAT_CAP", value="150")
    old = GdpConfigRevision.objects.order_by("-pk").first()
    gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
    page = client.get(reverse("monitor:gdpconfig-revision", args=[old.pk]))
    assert (page.context["restore_overrides"], page.context["in_force"]) == (
        {"NQUEUED_SAT_CAP": 150},
        {"NQUEUED_SAT_CAP": 300},
    )
    query = {key: values[0] for key, values in parse_qs(urlsplit(page.context["what_if"]).query).items()}
    assert query == {"set": "NQUEUED_SAT_CAP=150", "base": "NQUEUED_SAT_CAP=300"}
    window = "?since=2026-11-01T00:00&until=2026-11-02T00:00"
    as_stored = client.post(reverse("monitor:what-if") + window, {"set": query["set"]}).context["result"]
    assert as_stored["changed_candidates"] == 0
    compared = client.post(reverse("monitor:what-if") + window, query)
    assert compared.context["result"]["changed_candidates"] == 1
    assert compared.context["result"]["baseline"] == {"NQUEUED_SAT_CAP": 300}
    assert 'id="what-if-base"' in compared.content.decode()


def test_every_gdpconfig_key_per_gshare_ones_too_has_its_what_if(client, brokered):  # noqa: F811
    gdpconfig_save(key="DISK_THRESHOLD_Express", value="50")
    html = client.get(reverse("monitor:gdpconfig")).content.decode()
    assert reverse("monitor:what-if") + "?set=DISK_THRESHOLD_Express%3D50" in html
    assert reverse("monitor:what-if") + "?set=NQUEUED_SAT_CAP%3D" in html
