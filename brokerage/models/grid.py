"""The grid the brokerage chooses from: sites, PanDA queues (CRIC), storage endpoints, network, software, GPUs."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from . import choices


class Site(models.Model):
    """A CRIC site. Nuclei collect a task's output and are what task brokerage chooses; satellites run jobs."""

    name = models.CharField(max_length=64, unique=True)
    role = models.CharField(max_length=16, choices=choices.SiteRole.choices, default="satellite")
    state = models.CharField(max_length=16, choices=choices.SiteState.choices, default="ACTIVE")
    tier_level = models.PositiveSmallIntegerField(default=2)
    bareNucleus = models.CharField(max_length=8, choices=choices.BareNucleus.choices, blank=True, default="")
    cloud = models.CharField(max_length=32, blank=True, default="")
    country = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        db_table = "sites"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(tier_level__lte=3), name="site_tier_0_to_3"),
            # bareNucleus only means something for a nucleus (seed 000, full-chain)
            models.CheckConstraint(condition=Q(bareNucleus="") | Q(role="nucleus"), name="site_bare_only_nucleus"),
        ]
        indexes = [models.Index(fields=["role", "state"], name="site_role_state")]

    def __str__(self) -> str:
        return self.name


class PandaQueue(models.Model):
    """A PanDA queue as CRIC describes it: typed columns for what the brokers read, the whole record in `cric`.

    Units as in CRIC: maxrss/minrss in MB per slot, maxwdir in MB, maxtime/mintime in seconds, maxdiskio in
    kB/s per core, transtimehi/transtimelo in days. maxrss, maxtime and corecount 0 mean "no limit / any".
    """

    name = models.CharField(max_length=128, unique=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="queues", help_text="CRIC atlas_site.")
    status = models.CharField(max_length=16, choices=choices.QueueStatus.choices, default="online")
    type = models.CharField(max_length=16, choices=choices.QueueType.choices, default="production")
    capability = models.CharField(max_length=16, blank=True, default="")
    resource_type = models.CharField(max_length=16, blank=True, default="GRID")
    cloud = models.CharField(max_length=32, blank=True, default="")
    corecount = models.PositiveIntegerField(default=1)
    corepower = models.FloatField(null=True, blank=True, help_text="HS06 per core.")
    maxrss = models.PositiveIntegerField(default=0)
    minrss = models.PositiveIntegerField(default=0)
    maxwdir = models.PositiveIntegerField(default=0)
    maxinputsize = models.PositiveIntegerField(default=0)
    maxtime = models.PositiveIntegerField(default=0)
    mintime = models.PositiveIntegerField(default=0)
    releases = models.JSONField(default=list, blank=True, help_text='["ANY"], ["AUTO"] or a list of releases.')
    pledgedcpu = models.IntegerField(null=True, blank=True, help_text="-1 marks an opportunistic queue.")
    fairsharepolicy = models.CharField(max_length=512, blank=True, default="")
    catchall = models.CharField(max_length=512, blank=True, default="")
    direct_access_lan = models.BooleanField(default=False)
    direct_access_wan = models.BooleanField(default=False)
    transferringlimit = models.PositiveIntegerField(null=True, blank=True, help_text="Empty or 0: 2000.")
    maxdiskio = models.FloatField(null=True, blank=True)
    wnconnectivity = models.CharField(max_length=32, blank=True, default="")
    jobseed = models.CharField(max_length=16, blank=True, default="std")
    workflow = models.CharField(max_length=32, blank=True, default="")
    harvester = models.CharField(max_length=64, blank=True, default="")
    use_vp = models.BooleanField(default=False, help_text="A virtual-placement (VP) queue.")
    pilot_driven = models.BooleanField(
        default=False,
        help_text="Real pilots fetch this queue's jobs (/server/panda/getJob) and report their states; the demo's "
        "simulated pilots leave it alone.",
    )
    siteClass = models.CharField(
        max_length=3,
        choices=choices.SiteClass.choices,
        blank=True,
        default="",
        help_text="Analysis appropriateness of the queue: hi, mid or lo (seed 000).",
    )
    transtimehi = models.PositiveSmallIntegerField(null=True, blank=True)
    transtimelo = models.PositiveSmallIntegerField(null=True, blank=True)
    cric = models.JSONField(default=dict, blank=True, help_text="The whole CRIC record as imported.")
    last_modified = models.DateTimeField(null=True, blank=True, help_text="CRIC's last modification.")
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "PanDA queue"
        verbose_name_plural = "PanDA queues"
        db_table = "panda_queues"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(maxrss=0) | Q(minrss__lte=F("maxrss")),
                name="queue_memory_range_ordered",
                violation_error_message="minrss must not exceed maxrss (maxrss 0 means no limit)",
            ),
            models.CheckConstraint(
                condition=Q(maxtime=0) | Q(mintime__lte=F("maxtime")),
                name="queue_walltime_range_ordered",
                violation_error_message="mintime must not exceed maxtime (maxtime 0 means no limit)",
            ),
            models.CheckConstraint(
                condition=Q(pledgedcpu__isnull=True) | Q(pledgedcpu__gte=-1),
                name="queue_pledge_valid",
                violation_error_message="pledgedcpu must be -1 (opportunistic), 0 or more",
            ),
            models.CheckConstraint(condition=Q(status__in=choices.QueueStatus.values), name="queue_status_known"),
        ]
        indexes = [
            models.Index(fields=["status", "type"], name="queue_status_type"),
            models.Index(fields=["site"], name="queue_site"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def catchall_options(self) -> dict[str, str]:
        """catchall as key → value (flags without '=' map to ''): 'bareNucleus=only,disableReassign'."""
        options: dict[str, str] = {}
        for item in self.catchall.split(","):
            item = item.strip()
            if item:
                key, _, value = item.partition("=")
                options[key.strip()] = value.strip()
        return options


class StorageEndpoint(models.Model):
    """A DDM (Rucio) storage endpoint. Sizes in GB, the unit of the real tables (REFERENCE.md).

    detailed_status gives each activity (read_lan, write_lan, read_wan, write_wan) ON, OFF or TEST.
    """

    name = models.CharField(max_length=128, unique=True)
    site = models.ForeignKey(Site, null=True, blank=True, on_delete=models.SET_NULL, related_name="endpoints")
    type = models.CharField(max_length=32, blank=True, default="", help_text="DATADISK, DATATAPE, SCRATCHDISK…")
    space_total = models.FloatField(default=0)
    space_free = models.FloatField(default=0)
    space_used = models.FloatField(default=0)
    space_expired = models.FloatField(default=0)
    is_tape = models.BooleanField(default=False)
    blacklisted = models.BooleanField(default=False)
    detailed_status = models.JSONField(default=dict, blank=True)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "ddm_endpoints"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(space_total__gte=0, space_free__gte=0, space_used__gte=0, space_expired__gte=0),
                name="endpoint_space_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def activity(self, name: str) -> str:
        """ON / OFF / TEST for one activity; an endpoint that does not publish it counts as ON."""
        return str(self.detailed_status.get(name, "ON")).upper()


class QueueStorage(models.Model):
    """Which endpoints a queue uses and for what (CRIC astorages): read_lan carries input, write_lan output."""

    queue = models.ForeignKey(PandaQueue, on_delete=models.CASCADE, related_name="storages")
    endpoint = models.ForeignKey(StorageEndpoint, on_delete=models.CASCADE, related_name="queue_roles")
    role = models.CharField(max_length=32, choices=choices.StorageRole.choices)

    class Meta:
        db_table = "panda_queue_storages"
        ordering = ["queue", "role", "endpoint"]
        constraints = [models.UniqueConstraint(fields=["queue", "endpoint", "role"], name="queue_storage_role_unique")]

    def __str__(self) -> str:
        return f"{self.queue} {self.role} {self.endpoint}"


class NetworkLink(models.Model):
    """Network between two sites: CRIC closeness (0 best … 11 worst, −1 blocked) and measured throughput."""

    src = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="links_out")
    dst = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="links_in")
    closeness = models.SmallIntegerField(null=True, blank=True)
    mbps_1h = models.FloatField(null=True, blank=True)
    mbps_1d = models.FloatField(null=True, blank=True)
    mbps_1w = models.FloatField(null=True, blank=True)
    queued = models.PositiveIntegerField(default=0, help_text="Files queued from src to dst.")
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "network_links"
        ordering = ["src", "dst"]
        constraints = [
            models.UniqueConstraint(fields=["src", "dst"], name="network_link_unique"),
            models.CheckConstraint(
                condition=Q(closeness__isnull=True) | Q(closeness__gte=-1, closeness__lte=11),
                name="network_closeness_range",
            ),
            models.CheckConstraint(
                condition=(Q(mbps_1h__isnull=True) | Q(mbps_1h__gte=0))
                & (Q(mbps_1d__isnull=True) | Q(mbps_1d__gte=0))
                & (Q(mbps_1w__isnull=True) | Q(mbps_1w__gte=0)),
                name="network_throughput_not_negative",
            ),
        ]
        indexes = [models.Index(fields=["dst"], name="network_dst")]

    def __str__(self) -> str:
        return f"{self.src} → {self.dst}"


class SoftwareTags(models.Model):
    """A queue's published software (seed 000, releases=AUTO): cmtconfigs, containers, cvmfs, architectures and
    tags. The entry named "ALL" resolves container names to their source paths for every queue."""

    ALL = "ALL"

    name = models.CharField(max_length=128, unique=True, help_text='The queue name, or "ALL".')
    queue = models.OneToOneField(
        PandaQueue, null=True, blank=True, on_delete=models.CASCADE, related_name="software_tags"
    )
    data = models.JSONField(default=dict)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "sw_tags"
        verbose_name = "software tags"
        verbose_name_plural = "software tags"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(name="ALL", queue__isnull=True) | (~Q(name="ALL") & Q(queue__isnull=False)),
                name="swtags_all_or_one_queue",
            )
        ]

    def __str__(self) -> str:
        return self.name


class GpuSummary(models.Model):
    """GPUs the pilots saw at a queue (MV_WORKER_NODE_GPU_SUMMARY): the second stage of the GPU gate (seed 000)."""

    queue = models.ForeignKey(PandaQueue, on_delete=models.CASCADE, related_name="gpus")
    vendor = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    vram = models.PositiveIntegerField(default=0, help_text="MB; 0 when not reported.")
    microarchitecture = models.CharField(max_length=32, blank=True, default="")
    version = models.CharField(max_length=32, blank=True, default="", help_text="CUDA toolkit version.")
    driver_version = models.CharField(max_length=32, blank=True, default="")
    n_workers = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "gpu_summary"
        verbose_name_plural = "GPU summaries"
        ordering = ["queue", "vendor", "model"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "vendor", "model", "vram", "microarchitecture", "version", "driver_version"],
                name="gpu_summary_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.queue}: {self.vendor} {self.model}"


class DatasetReplica(models.Model):
    """Where DDM holds a dataset: files and GB of it at one endpoint. Task brokerage reads it for data locality
    (seed 000) and job brokerage for the data available at each queue."""

    datasetName = models.CharField(max_length=255)
    endpoint = models.ForeignKey(StorageEndpoint, on_delete=models.CASCADE, related_name="replicas")
    nFiles = models.PositiveIntegerField(default=0)
    sizeGB = models.FloatField(default=0)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "ddm_dataset_replicas"
        ordering = ["datasetName", "endpoint"]
        constraints = [
            models.UniqueConstraint(fields=["datasetName", "endpoint"], name="replica_unique"),
            models.CheckConstraint(condition=Q(sizeGB__gte=0), name="replica_size_not_negative"),
        ]
        indexes = [models.Index(fields=["datasetName"], name="replica_dataset")]

    def __str__(self) -> str:
        return f"{self.datasetName} at {self.endpoint}"


class QueuePilotStats(models.Model):
    """What pilots and Harvester report about a queue (PanDA's pilot and worker statistics): pilots that asked for
    a job in the last 3 hours, batch jobs (pilots) present, slots. Job brokerage reads them (seed 000 nopilot,
    the running-jobs bootstrap); the demo grid simulator writes them as it plays the pilots."""

    queue = models.OneToOneField(PandaQueue, on_delete=models.CASCADE, related_name="pilot_stats")
    pilotsLast3h = models.PositiveIntegerField(default=0)
    nBatchJob = models.PositiveIntegerField(default=0, help_text="Pilots in the batch system now.")
    numSlots = models.IntegerField(null=True, blank=True, help_text="Slots granted by Harvester; empty: unknown.")
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "queue pilot statistics"
        verbose_name_plural = "queue pilot statistics"
        db_table = "queue_pilot_stats"

    def __str__(self) -> str:
        return f"{self.queue}: {self.pilotsLast3h} pilots in 3 h"
