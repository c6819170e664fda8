"""factory_boy factories for ORM objects: valid rows with realistic PanDA values, overridable per test."""

from __future__ import annotations

import factory
from django.utils import timezone

from brokerage import models


class SiteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Site
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"SITE-{n:03d}")
    role = "satellite"
    state = "ACTIVE"
    tier_level = 2


class NucleusFactory(SiteFactory):
    role = "nucleus"
    tier_level = 1


class PandaQueueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.PandaQueue

    name = factory.Sequence(lambda n: f"QUEUE_{n:03d}")
    site = factory.SubFactory(SiteFactory)
    status = "online"
    type = "unified"
    corecount = 8
    maxrss = 16000
    maxtime = 172800
    maxwdir = 160000
    releases = factory.LazyFunction(lambda: ["AUTO"])
    wnconnectivity = "full#IPv4"


class StorageEndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.StorageEndpoint

    name = factory.Sequence(lambda n: f"SITE-{n:03d}_DATADISK")
    site = factory.SubFactory(SiteFactory)
    type = "DATADISK"
    space_total = 1000.0
    space_free = 400.0
    space_used = 600.0
    detailed_status = factory.LazyFunction(
        lambda: {"read_lan": "ON", "write_lan": "ON", "read_wan": "ON", "write_wan": "ON"}
    )


class QueueStorageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.QueueStorage

    queue = factory.SubFactory(PandaQueueFactory)
    endpoint = factory.SubFactory(StorageEndpointFactory)
    role = "read_lan"


class NetworkLinkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.NetworkLink

    src = factory.SubFactory(SiteFactory)
    dst = factory.SubFactory(NucleusFactory)
    closeness = 5
    mbps_1h = 120.0
    queued = 10


class SoftwareTagsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.SoftwareTags

    queue = factory.SubFactory(PandaQueueFactory)
    name = factory.LazyAttribute(lambda o: o.queue.name)
    data = factory.LazyFunction(lambda: {"cmtconfigs": [], "containers": ["any"], "cvmfs": ["atlas"], "tags": []})


class GpuSummaryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.GpuSummary

    queue = factory.SubFactory(PandaQueueFactory)
    vendor = "nvidia"
    model = "NVIDIA A100-SXM4-40GB"
    vram = 40960
    microarchitecture = "Ampere"
    version = "12.2"
    driver_version = "575.57.08"


class WorkQueueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WorkQueue

    queue_name = factory.Sequence(lambda n: f"wq{n}")
    queue_type = "production"
    queue_order = factory.Sequence(lambda n: 1000 + n)  # clear of the small orders tests choose
    queue_share = 10


class GlobalShareFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.GlobalShare

    name = factory.Sequence(lambda n: f"Share {n}")
    value = 10.0


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Task

    taskName = factory.Sequence(lambda n: f"mc23_13p6TeV.{800000 + n}.simul")
    status = "registered"
    processingType = "simul"
    gshare = "MC 16"
    taskPriority = 500
    currentPriority = 500
    userName = "prodsys"


class TaskStatusLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.TaskStatusLog

    task = factory.SubFactory(TaskFactory)
    timestamp = factory.LazyFunction(timezone.now)
    old_status = "registered"
    new_status = "defined"


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Dataset

    task = factory.SubFactory(TaskFactory)
    datasetName = factory.Sequence(lambda n: f"mc23_13p6TeV.{800000 + n}.EVNT")
    type = "input"
    status = "defined"
    nFiles = 10


class DatasetFileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.DatasetFile

    dataset = factory.SubFactory(DatasetFactory)
    task = factory.LazyAttribute(lambda o: o.dataset.task)
    lfn = factory.Sequence(lambda n: f"EVNT.{n:08d}._000001.pool.root.1")
    type = factory.LazyAttribute(lambda o: o.dataset.type)
    status = "ready"
    fsize = 2 * 1024**3
    maxAttempt = 3


class EventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Event

    file = factory.SubFactory(DatasetFileFactory)
    dataset = factory.LazyAttribute(lambda o: o.file.dataset)
    task = factory.LazyAttribute(lambda o: o.file.task)
    status = "ready"
    def_min_eventID = 0
    def_max_eventID = 99
    PandaID = factory.Sequence(lambda n: 5000000 + n)


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Job

    task = factory.SubFactory(TaskFactory)
    jobStatus = "defined"
    computingSite = "CERN"
    currentPriority = 500
    coreCount = 8


class JobStatusLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.JobStatusLog

    job = factory.SubFactory(JobFactory)
    timestamp = factory.LazyFunction(timezone.now)
    old_status = "defined"
    new_status = "assigned"


class JobRetryHistoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.JobRetryHistory

    task = factory.SubFactory(TaskFactory)
    oldPandaID = factory.Sequence(lambda n: 1000 + 2 * n)
    newPandaID = factory.Sequence(lambda n: 1001 + 2 * n)


class ProcessLockFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.ProcessLock

    prodSourceLabel = "managed"
    vo = "atlas"
    workQueue = factory.SubFactory(WorkQueueFactory)
    lockedBy = "worker-1"
    lockedTime = factory.LazyFunction(timezone.now)


class GdpConfigFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.GdpConfig

    component = "taskbrokerage"
    key = "DISK_THRESHOLD"
    value = "80"
    type = "int"


class BrokerageCycleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.BrokerageCycle

    plugin = "atlas_prod_job"
    started = factory.LazyFunction(timezone.now)
    status = "succeeded"
    finished = factory.LazyAttribute(lambda c: None if c.status == "running" else c.started)


class DecisionFactory(factory.django.DjangoModelFactory):
    """A decision row alone (no trace): for counting and listing; stored_decision makes a real one."""

    class Meta:
        model = models.Decision

    cycle = factory.SubFactory(BrokerageCycleFactory, started=factory.SelfAttribute("..created"))
    plugin = "atlas_prod_job"
    created = factory.LazyFunction(timezone.now)
    outcome = "assigned"
    chosen = factory.LazyAttribute(lambda d: "CERN-PROD" if d.outcome in ("assigned", "matched") else "")
    n_candidates = 10
    n_passed = 4
    message = "decided"


def stored_decision(*, task=None, scenario=None):
    """A real decision stored through the services: a small task brokerage over three nuclei."""
    from brokerage.engine import parse_scenario, run
    from brokerage.services.decisions import DecisionToStore, cycle_finish, cycle_start, decision_store_many
    from tests.engine.builders import nucleus, task_scenario

    task = task or TaskFactory()
    parsed = parse_scenario(scenario or task_scenario(nucleus("A"), nucleus("B", state="DISABLED"), nucleus("C")))
    decision = run(parsed)
    cycle = cycle_start(plugin=decision.plugin, now=parsed.now)
    row = decision_store_many(cycle=cycle, items=[DecisionToStore(decision, task_id=task.pk)])[0]
    cycle_finish(cycle=cycle, now=parsed.now)
    return row


class GlobalShareSnapshotFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.GlobalShareSnapshot

    share = factory.SubFactory(GlobalShareFactory)
    taken_at = factory.LazyFunction(timezone.now)
    normalised_value = 25.0
    executing_hs06 = 1000.0
    target_hs06 = 800.0
    usage = 1.25


class DatasetReplicaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.DatasetReplica

    datasetName = factory.Sequence(lambda n: f"mc23_13p6TeV.{800000 + n}.EVNT")
    endpoint = factory.SubFactory(StorageEndpointFactory)
    nFiles = 10
    sizeGB = 20.0


class QueuePilotStatsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.QueuePilotStats

    queue = factory.SubFactory(PandaQueueFactory)
    pilotsLast3h = 12
    nBatchJob = 40


class JobTimeoutSummaryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.JobTimeoutSummary

    taken_at = factory.LazyFunction(timezone.now)
    computingSite = "CERN"
    rule = "assigned"
    watched = 10
    approaching = 2
    timed_out = 1


class MergePreassignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.MergePreassignment

    task = factory.SubFactory(TaskFactory)
    computingSite = "CERN"
    skipped_since = factory.LazyFunction(timezone.now)


class DiracTaskQueueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.DiracTaskQueue

    ownerDN = "/DC=ch/CN=alice"
    ownerGroup = "lhcb_user"
    setup = "LHCb-Production"
    cpuTime = 5000
    requirementsKey = factory.Sequence(lambda n: f"key-{n}")


class DiracTaskQueueValueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.DiracTaskQueueValue

    task_queue = factory.SubFactory(DiracTaskQueueFactory)
    field = "sites"
    value = "LCG.CERN.cern"


class DiracJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.DiracJob

    task_queue = factory.SubFactory(DiracTaskQueueFactory)
    status = "Waiting"


class DiracJobStatusLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.DiracJobStatusLog

    job = factory.SubFactory(DiracJobFactory)
    timestamp = factory.LazyFunction(timezone.now)
    old_status = "Received"
    new_status = "Waiting"


class DiracMatchRecordFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.DiracMatchRecord

    at = factory.LazyFunction(timezone.now)
    site = "LCG.CERN.cern"
    matched = False
    seed = 7


# --- CMS WMCore (seed 004) ---


class WMCoreRequestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreRequest

    RequestName = factory.Sequence(lambda n: f"pdmvserv_Run2024_ReReco_{n:04d}")
    RequestStatus = "assigned"
    Team = "production"
    SiteWhitelist = factory.LazyFunction(lambda: ["T1_US_FNAL", "T2_CH_CERN"])


class WMCoreRequestStatusLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreRequestStatusLog

    request = factory.SubFactory(WMCoreRequestFactory)
    timestamp = factory.LazyFunction(timezone.now)
    old_status = "assignment-approved"
    new_status = "assigned"


class WMCoreGlobalQueueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreQueue
        django_get_or_create = ("name",)

    name = "global"
    kind = "global"


class WMCoreQueueFactory(factory.django.DjangoModelFactory):
    """A local queue (an agent's), under the global queue."""

    class Meta:
        model = models.WMCoreQueue

    name = factory.Sequence(lambda n: f"vocms{n:04d}.cern.ch")
    kind = "local"
    parent = factory.SubFactory(WMCoreGlobalQueueFactory)


class WMCoreElementFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreElement

    queue = factory.SubFactory(WMCoreGlobalQueueFactory)
    database = "queue"
    element_id = factory.Sequence(lambda n: f"{n:032x}")
    request = factory.SubFactory(WMCoreRequestFactory)
    Status = "Available"
    Priority = 100000
    Jobs = 10
    SiteWhitelist = factory.LazyFunction(lambda: ["T1_US_FNAL", "T2_CH_CERN"])


class WMCoreElementStatusLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreElementStatusLog

    element = factory.SubFactory(WMCoreElementFactory)
    timestamp = factory.LazyFunction(timezone.now)
    old_status = "Available"
    new_status = "Negotiating"


class WMCoreBlockFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreBlock

    dataset = "/JetHT/Run2024C-v1/RAW"
    name = factory.Sequence(lambda n: f"/JetHT/Run2024C-v1/RAW#{n:08x}")
    files = 10
    sites = factory.LazyFunction(lambda: ["T1_US_FNAL"])


class WMCoreSiteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreSite

    queue = factory.SubFactory(WMCoreQueueFactory)
    name = factory.Sequence(lambda n: f"T2_XX_Site{n}")
    pending_slots = 100
    running_slots = 200


class WMCoreSiteThresholdFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMCoreSiteThreshold

    site = factory.SubFactory(WMCoreSiteFactory)
    task_type = "Processing"
    pending_slots = 50
    max_slots = 100


class WMBSSubscriptionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMBSSubscription

    queue = factory.SubFactory(WMCoreQueueFactory)
    element = factory.SubFactory(WMCoreElementFactory, queue=factory.SelfAttribute("..queue"), Status="Running")
    request = factory.SelfAttribute("element.request")
    task_type = "Processing"
    site = "T1_US_FNAL"


class WMBSJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.WMBSJob

    subscription = factory.SubFactory(WMBSSubscriptionFactory)
    state = "created"
    priority = 100000
    task_type = "Processing"
    possible_sites = factory.LazyFunction(lambda: ["T1_US_FNAL"])


class JobSubmitterCacheEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.JobSubmitterCacheEntry

    job = factory.SubFactory(WMBSJobFactory)
    queue = factory.SelfAttribute("job.subscription.queue")
    priority = factory.SelfAttribute("job.priority")
    task_type = "Processing"


class JobSubmitterReportFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.JobSubmitterReport

    queue = factory.SubFactory(WMCoreQueueFactory)
    at = factory.LazyFunction(timezone.now)
    site = "T1_US_FNAL"
    task_type = "Processing"
    condition = "no_pending_slot"
    count = 3


def api_token(user, token: str | None = None, name: str = "") -> str:
    """An API token for `user` (our token model keeps its digest); `token` fixes the string (the fuzzing schema
    is built with its token before any test runs)."""
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS

    from brokerage.models import ApiToken

    if token is None:
        return ApiToken.objects.create(user=user, name=name)[1]
    ApiToken(digest=hash_token(token), token_key=token[: CONSTANTS.TOKEN_KEY_LENGTH], user=user, name=name).save()
    return token


def pilot_driven_queue(name: str = "LOCAL_PILOT", site: str = "LOCAL-SITE"):
    """An online pilot-driven queue at its own site, writing to the site's DATADISK: where real pilots take jobs."""
    site_row = SiteFactory(name=site)
    queue = PandaQueueFactory(name=name, site=site_row, pilot_driven=True, status="online")
    endpoint = StorageEndpointFactory(name=f"{site}_DATADISK", site=site_row)
    QueueStorageFactory(queue=queue, endpoint=endpoint, role="write_lan")
    return queue
