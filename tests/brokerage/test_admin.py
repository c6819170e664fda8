"""The admin: every page of every model loads, gdpconfig validates and keeps history, statuses move legally."""

import pytest
from django.contrib import admin
from django.urls import reverse
from django.utils import timezone

from brokerage import models
from brokerage.models import GdpConfig, GdpConfigChange, Task, TaskStatusLog
from brokerage.services.gdpconfig import gdpconfig_revision_make, gdpconfig_save
from brokerage.services.housekeeping import housekeeping_run
from brokerage.services.integrity import integrity_check_run
from tests import factories

pytestmark = pytest.mark.django_db


def _owner():
    from django.contrib.auth.models import User

    return User.objects.get_or_create(username="token-owner")[0]


FACTORY_FOR = {
    models.Task: factories.TaskFactory,
    models.TaskStatusLog: factories.TaskStatusLogFactory,
    models.Dataset: factories.DatasetFactory,
    models.DatasetFile: factories.DatasetFileFactory,
    models.Event: factories.EventFactory,
    models.OutputTemplate: lambda: models.OutputTemplate.objects.create(
        task=(dataset := factories.DatasetFactory(type="output")).task,
        dataset=dataset,
        filenameTemplate="HITS.00000001._${SN}.pool.root",
        streamName="OUTPUT0",
        outType="output",
    ),
    models.JobParamsTemplate: lambda: models.JobParamsTemplate.objects.create(
        task=factories.TaskFactory(), jobParamsTemplate="--in=${IN} --out=${OUTPUT0}"
    ),
    models.Job: factories.JobFactory,
    models.JobStatusLog: factories.JobStatusLogFactory,
    models.JobRetryHistory: factories.JobRetryHistoryFactory,
    models.WorkQueue: factories.WorkQueueFactory,
    models.GlobalShare: factories.GlobalShareFactory,
    models.GlobalShareSnapshot: factories.GlobalShareSnapshotFactory,
    models.Site: factories.SiteFactory,
    models.PandaQueue: factories.PandaQueueFactory,
    models.StorageEndpoint: factories.StorageEndpointFactory,
    models.QueueStorage: factories.QueueStorageFactory,
    models.DatasetReplica: factories.DatasetReplicaFactory,
    models.NetworkLink: factories.NetworkLinkFactory,
    models.SoftwareTags: factories.SoftwareTagsFactory,
    models.GpuSummary: factories.GpuSummaryFactory,
    models.ProcessLock: factories.ProcessLockFactory,
    models.QueuePilotStats: factories.QueuePilotStatsFactory,
    models.JobTimeoutSummary: factories.JobTimeoutSummaryFactory,
    models.MergePreassignment: factories.MergePreassignmentFactory,
    models.DiracTaskQueue: factories.DiracTaskQueueFactory,
    models.DiracTaskQueueValue: factories.DiracTaskQueueValueFactory,
    models.DiracJob: factories.DiracJobFactory,
    models.DiracJobStatusLog: factories.DiracJobStatusLogFactory,
    models.DiracMatchRecord: factories.DiracMatchRecordFactory,
    models.WMCoreRequest: factories.WMCoreRequestFactory,
    models.WMCoreRequestStatusLog: factories.WMCoreRequestStatusLogFactory,
    models.WMCoreQueue: factories.WMCoreGlobalQueueFactory,
    models.WMCoreElement: factories.WMCoreElementFactory,
    models.WMCoreElementStatusLog: factories.WMCoreElementStatusLogFactory,
    models.WMCoreBlock: factories.WMCoreBlockFactory,
    models.WMCoreSite: factories.WMCoreSiteFactory,
    models.WMCoreSiteThreshold: factories.WMCoreSiteThresholdFactory,
    models.WMBSSubscription: factories.WMBSSubscriptionFactory,
    models.WMBSJob: factories.WMBSJobFactory,
    models.JobSubmitterCacheEntry: factories.JobSubmitterCacheEntryFactory,
    models.JobSubmitterReport: factories.JobSubmitterReportFactory,
    models.GdpConfig: lambda: gdpconfig_save(key="NQUEUED_SAT_CAP", value="300"),
    models.GdpConfigChange: lambda: gdpconfig_save(key="NW_THRESHOLD", value="2").changes.get(),
    models.GdpConfigRevision: lambda: gdpconfig_revision_make(action="save", summary="NW_THRESHOLD: 2 → 3", user=None),
    models.Decision: factories.stored_decision,
    models.BrokerageCycle: lambda: factories.stored_decision().cycle,
    models.IntegrityCheck: lambda: integrity_check_run(now=timezone.now())[0],
    models.HousekeepingRun: lambda: housekeeping_run(now=timezone.now()),
    models.JobErrorHour: lambda: models.JobErrorHour.objects.create(
        hour=timezone.now().replace(minute=0, second=0, microsecond=0), jobStatus="failed", n=2, example=1
    ),
    models.JobStateHour: lambda: models.JobStateHour.objects.create(
        hour=timezone.now().replace(minute=0, second=0, microsecond=0), new_status="running", n=3
    ),
    models.JobCountNow: lambda: models.JobCountNow.objects.create(computingSite="CERN-PROD", jobStatus="running", n=5),
    models.WorkerNode: lambda: models.WorkerNode.objects.create(
        site="CERN-PROD", host_name="wn1.cern.ch", cpu_model="AMD EPYC 7B12", last_seen=timezone.now()
    ),
    models.WorkerNodeQueue: lambda: models.WorkerNodeQueue.objects.create(
        site="CERN-PROD", host_name="wn1.cern.ch", panda_queue="CERN-PROD_UCORE", last_seen=timezone.now()
    ),
    models.DecisionHour: lambda: models.DecisionHour.objects.create(
        hour=timezone.now().replace(minute=0, second=0, microsecond=0), plugin="atlas_prod_job", outcome="pending", n=4
    ),
    models.SummaryMark: lambda: models.SummaryMark.objects.create(name="job_error_hours", until=timezone.now()),
    models.WorkerHeartbeat: lambda: models.WorkerHeartbeat.objects.create(name="host:1", beat=timezone.now()),
    models.ApiToken: lambda: models.ApiToken.objects.create(user=_owner(), name="pilot factory")[0],
    models.OidcIdentity: lambda: models.OidcIdentity.objects.create(
        issuer="https://idp.example.org/", subject="4711", user=_owner()
    ),
}

REGISTERED = [model for model in admin.site._registry if model._meta.app_label == "brokerage"]


def test_every_domain_model_has_an_admin_page():
    from django.apps import apps

    # Dataset status history is shown inline on the dataset page instead of a page of its own; a decision's full
    # trace and its cycle's frame on the decision's page.
    shown_elsewhere = {
        models.DatasetStatusLog,
        models.DecisionTrace,
        models.CycleFrame,
        models.CycleInputs,  # a decision's page: Replay, Download scenario
        models.DiracMatchInputs,  # a DIRAC matching request's page: Replay, Download scenario
        models.ScenarioPart,
    }
    expected = set(apps.get_app_config("brokerage").get_models()) - shown_elsewhere
    assert set(REGISTERED) == expected
    assert set(FACTORY_FOR) == expected


@pytest.mark.parametrize("model", list(FACTORY_FOR), ids=lambda m: m.__name__)
def test_changelist_change_and_add_pages_load(admin_client_logged, model):
    obj = FACTORY_FOR[model]()
    info = model._meta.app_label, model._meta.model_name
    changelist = admin_client_logged.get(reverse("admin:{}_{}_changelist".format(*info)))
    assert changelist.status_code == 200
    assert changelist.context["cl"].result_count == 1
    change = admin_client_logged.get(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
    assert change.status_code == 200
    add = admin_client_logged.get(reverse("admin:{}_{}_add".format(*info)))
    assert add.status_code in (200, 403)  # 403: the read-only change history has no add page
    search = admin_client_logged.get(reverse("admin:{}_{}_changelist".format(*info)), {"q": "x"})
    assert search.status_code == 200


def test_admin_requires_login(client):
    response = client.get(reverse("admin:brokerage_gdpconfig_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


class TestGdpConfigAdmin:
    url_add = staticmethod(lambda: reverse("admin:brokerage_gdpconfig_add"))

    def post(self, client, **data):
        payload = {
            "key": "",
            "vo": "",
            "value": "",
            "type": "",
            "app": "",
            "component": "",
            "descr": "",
            "comment": "",
            "changes-TOTAL_FORMS": "0",
            "changes-INITIAL_FORMS": "0",
        }
        payload.update(data)
        return client.post(self.url_add(), payload)

    def test_int_parameter_refuses_text_naming_parameter_and_type(self, admin_client_logged):
        response = self.post(admin_client_logged, key="NQUEUED_SAT_CAP", value="abc")
        assert response.status_code == 200
        errors = response.context["adminform"].form.errors
        assert errors["value"] == ["NQUEUED_SAT_CAP: 'abc' is not a valid int: expected a whole number"]
        assert not GdpConfig.objects.exists()

    def test_unknown_key_needs_custom(self, admin_client_logged):
        response = self.post(admin_client_logged, key="MY_KNOB", value="1")
        assert "tick 'custom'" in response.context["adminform"].form.errors["key"][0]

    def test_custom_json_must_parse(self, admin_client_logged):
        response = self.post(
            admin_client_logged, key="MY_KNOB", value="{x", is_custom="on", type="json", app="jedi", component="local"
        )
        assert "is not a valid json" in response.context["adminform"].form.errors["value"][0]

    def test_valid_save_fills_identity_and_records_who(self, admin_client_logged):
        response = self.post(admin_client_logged, key="DISK_THRESHOLD_Express", value="50", comment="express room")
        assert response.status_code == 302
        row = GdpConfig.objects.get()
        assert (row.component, row.type, row.value) == ("taskbrokerage", "int", "50")
        change = GdpConfigChange.objects.get()
        assert (change.username, change.new_value, change.comment) == ("root", "50", "express room")

    def test_edit_records_old_and_new_and_shows_history(self, admin_client_logged):
        row = gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
        url = reverse("admin:brokerage_gdpconfig_change", args=[row.pk])
        payload = {
            "key": "NQUEUED_SAT_CAP",
            "vo": "",
            "value": "250",
            "type": "int",
            "app": "jedi",
            "component": "jobbroker",
            "descr": row.descr,
            "comment": "calmer",
            "changes-TOTAL_FORMS": "1",
            "changes-INITIAL_FORMS": "1",
            "changes-MIN_NUM_FORMS": "0",
            "changes-MAX_NUM_FORMS": "1000",
            "changes-0-id": str(row.changes.get().pk),
            "changes-0-parameter": str(row.pk),
        }
        response = admin_client_logged.post(url, payload)
        assert response.status_code == 302, response.context["adminform"].form.errors
        assert list(GdpConfigChange.objects.order_by("id").values_list("old_value", "new_value", "username")) == [
            ("", "300", ""),
            ("300", "250", "root"),
        ]
        page = admin_client_logged.get(url).content.decode()
        assert "calmer" in page
        assert "250" in page

    def test_a_registered_parameters_identity_is_shown_not_editable(self, admin_client_logged):
        # issue 50: Type, App and Component were editable and a change silently put back
        row = gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
        url = reverse("admin:brokerage_gdpconfig_change", args=[row.pk])
        form = admin_client_logged.get(url).context["adminform"].form
        assert all(form.fields[name].disabled for name in ("type", "app", "component"))
        payload = {
            "key": "NQUEUED_SAT_CAP", "vo": "", "value": "250", "type": "str", "app": "mine", "component": "other",
            "descr": row.descr, "comment": "", "changes-TOTAL_FORMS": "0", "changes-INITIAL_FORMS": "0",
        }  # fmt: skip
        assert admin_client_logged.post(url, payload).status_code == 302
        row.refresh_from_db()
        assert (row.type, row.app, row.component, row.value) == ("int", "jedi", "jobbroker", "250")
        # a new row given another type is told so on the field
        response = self.post(admin_client_logged, key="DISK_THRESHOLD_Express", value="50", type="str")
        assert response.context["adminform"].form.errors["type"] == [
            "DISK_THRESHOLD_Express is registered with type 'int', not 'str'"
        ]

    def test_the_change_history_reads_as_sentences_and_revisions_sit_with_gdpconfig(self, admin_client_logged):
        gdpconfig_save(key="DISK_THRESHOLD_Express", value="50")
        change = GdpConfigChange.objects.get()
        assert str(change) == "DISK_THRESHOLD_Express set to 50 by a process (no signed-in user)"
        sections = {
            section["name"]: [m["object_name"] for m in section["models"]]
            for section in admin_client_logged.get(reverse("admin:index")).context["app_list"]
        }
        assert "GdpConfigRevision" in sections["Brokerage"]
        assert "Other" not in sections

    def test_duplicate_row_is_a_form_error(self, admin_client_logged):
        gdpconfig_save(key="NQUEUED_SAT_CAP", value="300", vo="atlas")
        response = self.post(admin_client_logged, key="NQUEUED_SAT_CAP", value="100", vo="atlas")
        assert response.status_code == 200
        assert "already exists" in str(response.context["adminform"].form.errors)

    def test_delete_goes_through_the_service(self, admin_client_logged):
        row = gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
        url = reverse("admin:brokerage_gdpconfig_delete", args=[row.pk])
        assert admin_client_logged.post(url, {"post": "yes"}).status_code == 302
        assert GdpConfigChange.objects.filter(action="delete", old_value="300", username="root").exists()

    def test_changelist_shows_default_beside_effective(self, admin_client_logged):
        gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
        gdpconfig_save(key="NQUEUED_SAT_CAP", value="120", vo="atlas")
        response = admin_client_logged.get(reverse("admin:brokerage_gdpconfig_changelist"))
        rows = {(r.key, r.vo): r for r in response.context["cl"].result_list}
        model_admin = admin.site._registry[GdpConfig]
        assert model_admin.default_display(rows[("NQUEUED_SAT_CAP", "")]) == "150"
        assert model_admin.effective_display(rows[("NQUEUED_SAT_CAP", "")]) == "300"
        assert model_admin.effective_display(rows[("NQUEUED_SAT_CAP", "atlas")]) == "120"

    def test_filter_by_component(self, admin_client_logged):
        gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
        gdpconfig_save(key="DISK_THRESHOLD", value="80")
        response = admin_client_logged.get(reverse("admin:brokerage_gdpconfig_changelist"), {"component": "jobbroker"})
        assert [r.key for r in response.context["cl"].result_list] == ["NQUEUED_SAT_CAP"]

    def test_parameters_page_lists_every_parameter_with_override_links(self, admin_client_logged):
        gdpconfig_save(key="NQUEUED_SAT_CAP", value="300")
        response = admin_client_logged.get(reverse("admin:brokerage_gdpconfig_parameters"), {"component": "jobbroker"})
        rows = {row["key"]: row for row in response.context["rows"]}
        assert rows["NQUEUED_SAT_CAP"]["effective"] == 300
        assert "DISK_THRESHOLD" not in rows
        assert "?key=NQUEUED_SAT_CAP" in rows["NQUEUED_SAT_CAP"]["override_url"]

    def test_override_link_prefills_the_registry_identity(self, admin_client_logged):
        response = admin_client_logged.get(self.url_add(), {"key": "NW_THRESHOLD"})
        initial = response.context["adminform"].form.initial
        assert (initial["component"], initial["type"], initial["value"]) == ("jobbroker", "float", "1.7")


class TestApplyProfile:
    url = staticmethod(lambda: reverse("admin:brokerage_gdpconfig_profile"))

    def test_shows_what_changes_before_applying(self, admin_client_logged):
        page = admin_client_logged.get(self.url(), {"profile": "panda"})
        assert page.status_code == 200
        text = page.content.decode()
        assert "The profile in force" in text
        assert "<strong>seed</strong>" in text
        assert "EXPRESS_MIN_PRIORITY" in text
        assert "profile panda" in text
        assert not models.GdpConfig.objects.exists()  # looking changes nothing

    def test_applying_stores_the_profile_with_history(self, admin_client_logged):
        response = admin_client_logged.post(
            self.url(), {"profile": "panda", "vo": "", "comment": "match the real code"}
        )
        assert response.status_code == 302
        row = models.GdpConfig.objects.get(key="PROFILE")
        assert (row.value, row.vo) == ("panda", "")
        change = row.changes.get()
        assert (change.new_value, change.username, change.comment) == ("panda", "root", "match the real code")
        page = admin_client_logged.get(self.url(), {"profile": "seed"})
        assert "<strong>panda</strong>" in page.content.decode()

    def test_an_unknown_profile_is_named(self, admin_client_logged):
        page = admin_client_logged.get(self.url(), {"profile": "pandas"})
        assert "Unknown profile &#x27;pandas&#x27;." in page.content.decode()
        assert admin_client_logged.post(self.url(), {"profile": "pandas"}).status_code == 200
        assert not models.GdpConfig.objects.exists()

    def test_viewers_may_look_but_not_apply(self, client, django_user_model):
        from django.contrib.auth.models import Permission

        viewer = django_user_model.objects.create_user("viewer", password="a-long-test-password", is_staff=True)
        viewer.user_permissions.add(Permission.objects.get(codename="view_gdpconfig"))
        client.force_login(viewer)
        page = client.get(self.url(), {"profile": "panda"})
        assert page.status_code == 200
        assert "You may look but not apply" in page.content.decode()
        assert client.post(self.url(), {"profile": "panda"}).status_code == 403
        assert not models.GdpConfig.objects.exists()


class TestStatusThroughAdmin:
    def change(self, client, task, **extra):
        url = reverse("admin:brokerage_task_change", args=[task.pk])
        form = client.get(url).context["adminform"].form
        data = {}
        for name, field in form.fields.items():
            value = form.initial.get(name, field.initial)
            if value is None:
                continue
            data[name] = value.pk if hasattr(value, "pk") else value
        data["taskParams"] = "{}"
        data.update({"status_log-TOTAL_FORMS": "0", "status_log-INITIAL_FORMS": "0"})
        data.update(extra)
        return client.post(url, data)

    def test_allowed_move_is_applied_and_logged(self, admin_client_logged):
        task = factories.TaskFactory(status="running")
        response = self.change(admin_client_logged, task, transition_to="paused", transition_reason="site downtime")
        assert response.status_code == 302
        assert Task.objects.get(pk=task.pk).status == "paused"
        log = TaskStatusLog.objects.get()
        assert (log.old_status, log.new_status, log.reason, log.actor) == (
            "running",
            "paused",
            "site downtime",
            "admin:root",
        )

    def test_only_allowed_moves_are_offered(self, admin_client_logged):
        task = factories.TaskFactory(status="aborting")
        form = admin_client_logged.get(reverse("admin:brokerage_task_change", args=[task.pk])).context["adminform"].form
        assert [value for value, _ in form.fields["transition_to"].choices] == ["", "aborted"]

    def test_illegal_move_is_a_form_error_and_changes_nothing(self, admin_client_logged):
        task = factories.TaskFactory(status="done")
        response = self.change(admin_client_logged, task, transition_to="running")
        assert response.status_code == 200
        assert "transition_to" in response.context["adminform"].form.errors
        assert Task.objects.get(pk=task.pk).status == "done"
        assert not TaskStatusLog.objects.exists()

    def test_new_rows_start_in_an_initial_status(self, admin_client_logged):
        response = admin_client_logged.post(
            reverse("admin:brokerage_task_add"),
            {
                "taskName": "t",
                "status": "running",
                "prodSourceLabel": "managed",
                "vo": "atlas",
                "taskPriority": 1,
                "currentPriority": 1,
                "coreCount": 1,
                "numThrottled": 0,
                "eventService": 0,
                "taskParams": "{}",
                "creationDate_0": "2026-11-01",
                "creationDate_1": "00:00:00",
                "modificationTime_0": "2026-11-01",
                "modificationTime_1": "00:00:00",
                "status_log-TOTAL_FORMS": "0",
                "status_log-INITIAL_FORMS": "0",
            },
        )
        assert response.status_code == 200
        assert "starts in registered" in str(response.context["adminform"].form.errors["status"])


class TestRevisionRestoreAction:
    """The admin action restores exactly one selected revision through the service, and says so; two selected is
    an error that changes nothing."""

    URL = "admin:brokerage_gdpconfigrevision_changelist"

    def test_one_selected_revision_is_restored(self, admin_client_logged):
        gdpconfig_save(key="NQUEUED_SAT_CAP", value=300)
        before = models.GdpConfigRevision.objects.order_by("-pk").first()
        gdpconfig_save(key="NQUEUED_SAT_CAP", value=5)
        response = admin_client_logged.post(
            reverse(self.URL), {"action": "restore_revision", "_selected_action": [before.pk]}, follow=True
        )
        made = models.GdpConfigRevision.objects.order_by("-pk").first()
        assert f"Revision {before.pk} restored as revision {made.pk}." in response.content.decode()
        assert GdpConfig.objects.get(key="NQUEUED_SAT_CAP").value == "300"  # stored as text

    def test_two_selected_revisions_change_nothing(self, admin_client_logged):
        gdpconfig_save(key="NQUEUED_SAT_CAP", value=300)
        gdpconfig_save(key="NQUEUED_SAT_CAP", value=5)
        picked = list(models.GdpConfigRevision.objects.order_by("-pk").values_list("pk", flat=True)[:2])
        count = models.GdpConfigRevision.objects.count()
        response = admin_client_logged.post(
            reverse(self.URL), {"action": "restore_revision", "_selected_action": picked}, follow=True
        )
        assert "Select exactly one revision to restore." in response.content.decode()
        assert models.GdpConfigRevision.objects.count() == count
        assert GdpConfig.objects.get(key="NQUEUED_SAT_CAP").value == "5"
