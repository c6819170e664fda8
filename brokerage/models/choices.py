"""Every enumerated column's values, in one place. Life-cycle statuses come from brokerage.states."""

from django.db import models

from brokerage import states
from brokerage.engine.wmcore.elements import JOB_TYPES, SITE_STATES
from brokerage.gdpconfig import VALUE_TYPES

TASK_STATUS = states.TASK.choices()
DATASET_STATUS = states.union_choices(states.INPUT_DATASET, states.OUTPUT_DATASET)
FILE_STATUS = states.union_choices(states.INPUT_FILE, states.OUTPUT_FILE)
EVENT_STATUS = states.EVENT.choices()
USE_JUMBO = list(states.USE_JUMBO.items())
JOB_STATUS = states.JOB.choices()
WMCORE_ELEMENT_STATUS = states.WMCORE_ELEMENT.choices()
WMCORE_REQUEST_STATUS = states.WMCORE_REQUEST.choices()
WMBS_JOB_STATUS = states.WMBS_JOB.choices()
DATASET_TYPE = [(name, name) for name in states.DATASET_TYPES]

GDPCONFIG_TYPE = [(name, name) for name in VALUE_TYPES]


class ProdSourceLabel(models.TextChoices):
    """Source labels of tasks and jobs (JEDI_Tasks.PRODSOURCELABEL): production, user analysis, tests."""

    MANAGED = "managed"
    USER = "user"
    PROD_TEST = "prod_test"
    PTEST = "ptest"
    RC_TEST = "rc_test"
    RC_ALRB = "rc_alrb"
    TEST = "test"
    PANDA = "panda"
    INSTALL = "install"


class TaskClass(models.TextChoices):
    """Analysis task classes (seed 000, site & task classification): S and A are the most time-sensitive."""

    NONE = "", "unclassified"
    S = "S"
    A = "A"
    B = "B"
    C = "C"


class SiteClass(models.TextChoices):
    """How appropriate a queue is for analysis (seed 000): hi, mid or lo."""

    NONE = "", "unclassified"
    HI = "hi"
    MID = "mid"
    LO = "lo"


class SiteRole(models.TextChoices):
    """A site's place in the WORLD cloud: a nucleus collects a task's output, satellites only run jobs."""

    NUCLEUS = "nucleus"
    SATELLITE = "satellite"


class SiteState(models.TextChoices):
    """CRIC site state; task brokerage uses only ACTIVE nuclei (seed 000)."""

    ACTIVE = "ACTIVE"
    DISABLED = "DISABLED"
    TEST = "TEST"


class BareNucleus(models.TextChoices):
    """catchall bareNucleus=only|allow marks a nucleus for full-chain workflows (seed 000, full-chain)."""

    NONE = "", "not bare"
    ONLY = "only", "only full-chain"
    ALLOW = "allow", "full-chain and normal"


class QueueStatus(models.TextChoices):
    """CRIC pandaqueue status (REFERENCE.md)."""

    ONLINE = "online"
    OFFLINE = "offline"
    TEST = "test"
    BROKEROFF = "brokeroff"
    PAUSED = "paused"
    # waits for work with pilots on standby: the production job broker of panda-server 1.0.4 takes it as online
    # (AtlasProdJobBroker.py 402; CRIC_QUEUE_RULE panda)
    STANDBY = "standby"


class QueueType(models.TextChoices):
    """CRIC pandaqueue type: which brokerage may send jobs there (REFERENCE.md)."""

    PRODUCTION = "production"
    ANALYSIS = "analysis"
    UNIFIED = "unified"
    SPECIAL = "special"


class StorageRole(models.TextChoices):
    """How a queue uses a storage endpoint (CRIC astorages keys); read_lan carries input, write_lan output."""

    READ_LAN = "read_lan"
    WRITE_LAN = "write_lan"
    WRITE_LAN_ANALYSIS = "write_lan_analysis"
    READ_LAN_ANALYSIS = "read_lan_analysis"
    PR = "pr"
    PW = "pw"
    ES_EVENTS = "es_events"
    ES_EVENTS_READ = "es_events_read"
    ES_FAILOVER = "es_failover"


ENDPOINT_ACTIVITIES = ("read_lan", "write_lan", "read_wan", "write_wan")


class ActivityStatus(models.TextChoices):
    """State of one activity of a storage endpoint (detailed_status)."""

    ON = "ON"
    OFF = "OFF"
    TEST = "TEST"


class WorkQueueType(models.TextChoices):
    """JEDI_Work_Queue.QUEUE_TYPE, mapped to the tasks' prodSourceLabel."""

    PRODUCTION = "production"
    ANALYSIS = "analysis"
    TEST = "test"


class WorkQueueStatus(models.TextChoices):
    ACTIVE = "active"
    INACTIVE = "inactive"


class RetryRelation(models.TextChoices):
    """JEDI_Job_Retry_History.RELATIONTYPE: why the new job exists."""

    RETRY = "retry"
    MERGE = "merge"
    ES_RETRY = "es_retry"
    JOBSET_RETRY = "jobset_retry"
    RETRY_ORIGIN = "retry_origin"


class GdpConfigAction(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


class GdpConfigRevisionAction(models.TextChoices):
    """What made a gdpconfig revision."""

    FIRST = "first", "first revision (the rows as found)"
    SAVE = "save", "a row saved"
    DELETE = "delete", "a row deleted"
    PROFILE = "profile", "a profile applied"
    RESTORE = "restore", "an earlier revision restored"


# --- CMS WMCore (seed 004) ---
WMCORE_SITE_STATE = [(name, name) for name in SITE_STATES]
WMCORE_JOB_TYPE = [(name, name) for name in JOB_TYPES]


class WMCoreQueueKind(models.TextChoices):
    """The global queue takes requests from ReqMgr2; local queues (one per agent) pull from it."""

    GLOBAL = "global"
    LOCAL = "local"


class WMCoreQueueDatabase(models.TextChoices):
    """Each work queue keeps two databases (seed 004): the inbox (whole requests, or elements replicated from the
    parent) and the queue (the elements split from the inbox, the ones that are matched)."""

    INBOX = "inbox"
    QUEUE = "queue"


class BatchStatus(models.TextChoices):
    """Where an executing WMBS job is in the pool."""

    IDLE = "Idle"
    RUNNING = "Running"
