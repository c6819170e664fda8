"""The search box (issue 35, finding 6): an ID that is several things (a task, a PanDA job, a DIRAC job, a job set)
asks which; a name that is a queue and a site asks too; sites, CMS sites, datasets and WMCore requests are found
by name; what only holds the query comes closest first."""

import pytest
from django.urls import reverse

from brokerage.models import Job
from tests import factories

pytestmark = pytest.mark.django_db


def search(client, query):
    return client.get(reverse("monitor:search"), {"q": query})


def test_a_number_that_is_four_things_offers_each(client):
    # a number far past what the sequences give out: the factories' next job must not be given it too (a fresh
    # PostgreSQL database, this test alone, handed PandaID 1 to both)
    number = 987_654
    task = factories.TaskFactory(pk=number, taskName="mc23_13p6TeV.801234.simul")
    factories.JobFactory(pk=number, task=task, jobStatus="running", computingSite="CERN-PROD")
    factories.DiracJobFactory(pk=number, owner="lhcb_mc")
    other = factories.TaskFactory()
    factories.JobFactory.create_batch(3, task=other, jobsetID=number)
    response = search(client, str(number))
    assert response.status_code == 200
    choices = response.context["choices"]
    assert [c["label"] for c in choices] == [
        f"Task {number}",
        f"PanDA job {number}",
        f"DIRAC job {number}",
        f"Job set {number}",
    ]
    urls = [c["url"] for c in choices]
    assert urls[:3] == [
        reverse("monitor:task", args=[number]),
        reverse("monitor:job", args=[number]),
        reverse("monitor:dirac-job", args=[number]),
    ]
    assert urls[3] == f"{reverse('monitor:jobs')}?task={other.pk}&jobset={number}&window=all"
    assert choices[3]["detail"] == f"task {other.pk}, 3 jobs"
    html = response.content.decode()
    assert "is four things. Which one?" in html
    assert "at CERN-PROD, task" in html


def test_a_number_that_is_only_a_dirac_job_or_a_job_set_opens_it(client):
    dirac = factories.DiracJobFactory(pk=987_654)
    assert search(client, "987654")["Location"] == reverse("monitor:dirac-job", args=[dirac.pk])
    task = factories.TaskFactory()
    in_set = factories.JobFactory.create_batch(2, task=task, jobsetID=555_111)
    factories.JobFactory(task=task, jobsetID=555_112)
    location = search(client, "555111")["Location"]
    assert location == f"{reverse('monitor:jobs')}?task={task.pk}&jobset=555111&window=all"
    listed = client.get(location).context["page"]
    assert sorted(row["pk"] for row in listed) == sorted(job.pk for job in in_set)
    assert client.get(reverse("monitor:jobs"), {"jobset": "x"}).status_code == 400


def test_a_name_that_is_a_queue_and_a_site_asks_which(client):
    site = factories.SiteFactory(name="CERN-PROD", role="nucleus", cloud="CERN", country="Switzerland")
    factories.PandaQueueFactory(name="CERN-PROD", site=site)
    choices = search(client, "CERN-PROD").context["choices"]
    assert [(c["label"], c["url"]) for c in choices] == [
        ("PanDA queue CERN-PROD", reverse("monitor:queue", args=["CERN-PROD"])),
        ("Site CERN-PROD", reverse("monitor:site", args=["CERN-PROD"])),
    ]
    assert choices[1]["detail"] == "nucleus, cloud CERN, Switzerland"


def test_cms_sites_and_datasets_are_found_by_name(client):
    agent = factories.WMCoreSiteFactory(name="T2_US_Wisconsin", queue__name="vocms0250.cern.ch")
    factories.WMCoreSiteFactory(name="T2_US_Wisconsin", queue__name="vocms0251.cern.ch")
    factories.WMCoreSiteFactory(name="T1_US_FNAL", queue=agent.queue)
    choices_or_jump = search(client, "T2_US_Wisconsin")
    assert choices_or_jump["Location"] == f"{reverse('monitor:wmcore')}?site=T2_US_Wisconsin#slots"
    page = client.get(reverse("monitor:wmcore"), {"site": "T2_US_Wisconsin"})
    assert {(row["queue"], row["site"]) for row in page.context["slots"]} == {
        ("vocms0250.cern.ch", "T2_US_Wisconsin"),
        ("vocms0251.cern.ch", "T2_US_Wisconsin"),
    }
    dataset = factories.DatasetFactory(datasetName="data24_13p6TeV.00475321.physics_Main.daq.RAW")
    assert search(client, dataset.datasetName)["Location"] == reverse("monitor:task", args=[dataset.task_id])
    factories.DatasetFactory(datasetName=dataset.datasetName)  # read by a second task: which one?
    assert len(search(client, dataset.datasetName).context["choices"]) == 2
    found = search(client, "physics_Main").context
    assert [d["datasetName"] for d in found["datasets"]] == [dataset.datasetName] * 2
    assert [s["name"] for s in search(client, "_US_").context["cms_sites"]] == ["T1_US_FNAL", "T2_US_Wisconsin"]


def test_partial_matches_come_closest_first(client):
    for name in ("XX_BC_LONGER_NAME", "ABC", "BC_Y", "ZBCD"):
        factories.PandaQueueFactory(name=name)
    queues = [q["name"] for q in search(client, "bc").context["queues"]]
    # names starting with it first, then the shorter: fewer characters besides what was typed
    assert queues == ["BC_Y", "ABC", "ZBCD", "XX_BC_LONGER_NAME"]


def test_a_query_is_never_an_error(client):
    for query in ("", " ", "%", "'; drop table", "9" * 40, "x" * 1000):
        assert search(client, query).status_code == 200
    assert Job.objects.count() == 0


def test_the_top_bar_leads_to_jobs_queues_sites_and_the_api(client):
    html = client.get(reverse("monitor:overview")).content.decode()
    nav = html[html.index('<nav aria-label="Pages">') : html.index("</nav>")]
    for name in ("monitor:tasks", "monitor:jobs", "monitor:queues", "monitor:sites", "api-docs"):
        assert f'href="{reverse(name)}"' in nav, name


def test_the_site_list_counts_each_sites_queues_and_jobs(client):
    nucleus = factories.NucleusFactory(name="BNL-ATLAS", cloud="US", country="United States")
    satellite = factories.SiteFactory(name="MWT2")
    for name, site in (("BNL_PROD", nucleus), ("BNL_UCORE", nucleus), ("MWT2_UCORE", satellite)):
        factories.PandaQueueFactory(name=name, site=site)
    task = factories.TaskFactory()
    factories.JobFactory.create_batch(2, task=task, computingSite="BNL_PROD", jobStatus="running")
    factories.JobFactory(task=task, computingSite="BNL_UCORE", jobStatus="running")
    factories.JobFactory(task=task, computingSite="BNL_UCORE", jobStatus="failed")
    response = client.get(reverse("monitor:sites"))
    rows = {row["name"]: row for row in response.context["sites"]}
    assert [row["name"] for row in response.context["sites"]] == ["BNL-ATLAS", "MWT2"]  # nuclei first
    assert rows["BNL-ATLAS"]["n_queues"] == 2
    assert rows["BNL-ATLAS"]["jobs"] == [("running", 3)]  # active jobs: the failed one is on the site's page
    assert rows["MWT2"]["jobs"] == []
    assert [r["name"] for r in client.get(reverse("monitor:sites"), {"role": "satellite"}).context["sites"]] == ["MWT2"]
    bad = client.get(reverse("monitor:sites"), {"role": "bogus"})
    assert bad.status_code == 400
    assert "is not a site role" in bad.content.decode()


def test_error_codes_dirac_sites_and_ces_endpoints_and_users_are_found(client):
    # issue 50, finding 9: the search found ids and names, not these
    from django.utils import timezone

    from brokerage.models import DiracMatchRecord

    opened = client.get("/search/", {"q": "pilot:1305"})
    assert opened.status_code == 302
    assert opened["Location"] == "/jobs/?error=pilot%3A1305&window=1d"
    record = DiracMatchRecord.objects.create(
        at=timezone.now(), site="LCG.CERN.cern", gridCE="ce503.cern.ch", setup="LHCb-Production", matched=False, seed=7
    )
    for name in ("LCG.CERN.cern", "ce503.cern.ch"):
        found = client.get("/search/", {"q": name})
        assert found["Location"] == f"/dirac/matches/{record.pk}/", name
    site = factories.SiteFactory(name="DE-T1-02")
    factories.StorageEndpointFactory(name="DE-T1-02_DATADISK", site=site)
    assert client.get("/search/", {"q": "DE-T1-02_DATADISK"})["Location"] == "/sites/DE-T1-02/"
    factories.TaskFactory(userName="alice")
    assert client.get("/search/", {"q": "alice"})["Location"] == "/users/alice/"
