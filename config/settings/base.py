"""Settings shared by every environment, read from the environment (12-factor).

Variables: DATABASE_URL, CELERY_BROKER_URL, CACHE_URL, SECRET_KEY, ALLOWED_HOSTS, DJANGO_DEBUG, VAR_DIR, TIME_ZONE.
Without any of them the project runs from files under `var/`: a SQLite database in WAL mode and Celery's
filesystem transport, so nothing has to be installed or started besides the project itself.
"""

import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    """Reads a boolean variable; anything but a clear yes/no word is a configuration error, not a silent False."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use one of {sorted(TRUE_WORDS | FALSE_WORDS)})")


def env_count(name: str, default: int, unit: str = "days") -> int:
    """A count (days of a retention period, rows of a batch): a whole number of at least 1, or a configuration
    error naming the variable."""
    raw = os.environ.get(name, str(default))
    if not raw.strip().isdecimal() or int(raw) < 1:
        raise ImproperlyConfigured(f"{name}={raw!r}: give a whole number of {unit}, at least 1")
    return int(raw)


def env_positive(name: str, default: float, unit: str = "seconds") -> float:
    """A positive number (seconds of a beat interval, a heartbeat or a time budget; a speed), or a configuration
    error naming the variable: `float()` alone let "0", "-5", "nan" and "inf" through to beat and the workers."""
    raw = os.environ.get(name)
    if raw is None:
        return float(default)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not (0 < seconds < float("inf")):
        raise ImproperlyConfigured(f"{name}={raw!r}: give a number of {unit} above 0")
    return seconds


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", False)

# A development key only when DEBUG is on: a deployment without SECRET_KEY refuses to start.
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DJANGO_DEBUG is off")
    SECRET_KEY = "django-insecure-development-only-key-never-used-when-debug-is-off"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")

INSTALLED_APPS = [
    "brokerage.admin_site.BrokerageAdminConfig",  # the admin, its index in sections
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",  # API tokens kept as digests, with an expiry (monitor.api.authentication)
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # the API docs' JavaScript and CSS, served from our own static files
    "brokerage.apps.BrokerageConfig",
    "monitor.apps.MonitorConfig",
    "tools.apps.ToolsConfig",  # `manage.py bench` (the benchmarks live outside the runtime app: tools/)
    "django_prometheus",  # the request side of /metrics (monitor.metrics)
]

MIDDLEWARE = [
    # first and last: every request counted and timed, by view, method and status (django-prometheus, /metrics)
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # static files before anything that reads the session or the database: gzip, a content hash in the name, cached
    # a year (WhiteNoise; a missing file is its 404)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "monitor.security.ContentSecurityPolicyMiddleware",
    "monitor.api.middleware.ApiBodyLimitMiddleware",
    "monitor.request_guard.RequestGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "monitor.access.DashboardAccessMiddleware",
    "monitor.access.DashboardThrottleMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "monitor.middleware.DatabaseWaitMiddleware",  # last of ours: sees the views' exceptions first (after Prometheus's,
    # which only counts them)
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def database_from_url(url: str) -> dict:
    """Parses DATABASE_URL; SQLite gets WAL and a busy timeout so the web server and workers can share the file."""
    config = dj_database_url.parse(url, conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")))
    if config["ENGINE"] == "django.db.backends.postgresql":
        # a connection kept between requests (DB_CONN_MAX_AGE) is tried before a request reuses it: after the server
        # restarted, each gunicorn worker's first request otherwise met the dead connection and answered 503 (the
        # production guide's test, issue 47)
        config["CONN_HEALTH_CHECKS"] = True
    if config["ENGINE"] == "django.db.backends.postgresql" and not env_bool("DB_JIT", False):
        # PostgreSQL compiles a query whose estimated cost is high; our reads are short ones over many rows whose
        # estimates run high (a count grouped by hour), and compiling them cost 23 of a 118 ms count (issue 32)
        options = config.setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} -c jit=off".strip()
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {
            # WAL lets readers go on while a worker writes; IMMEDIATE takes the write lock at BEGIN so two
            # writers queue on the busy timeout instead of failing with "database is locked" mid-transaction.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
    return config


DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'brokerage.sqlite3'}"
DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def cache_from_url(url: str) -> dict:
    """CACHE_URL: redis://… or unix:///socket?db=N (shared by all processes), locmem://, or file:///path (the
    default, under var/)."""
    if url.startswith(("redis://", "rediss://", "unix://")):
        return {"BACKEND": "brokerage.cache_backends.ResilientRedisCache", "LOCATION": url}
    if url.startswith("locmem://"):
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": url[len("locmem://") :]}
    if url.startswith("file://"):
        return {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": url[len("file://") :]}
    raise ImproperlyConfigured(f"CACHE_URL={url!r}: expected redis://, locmem:// or file://")


# The default cache is a directory shared by the web server and the workers on one machine, so a gdpconfig
# change saved in the admin is seen by the next brokerage cycle without waiting for a timeout.
CACHES = {"default": cache_from_url(os.environ.get("CACHE_URL") or f"file://{VAR_DIR / 'cache'}")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# ISO dates and 24-hour times everywhere, the admin included (brokerage/formats/en/formats.py)
FORMAT_MODULE_PATH = ["brokerage.formats"]
# Grid operations run on UTC; every stored time is UTC and shown as such.
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "monitor.staticfiles.PlotlyFinder",  # plotly/plotly.min.js from the installed package, never a CDN
]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
# Collected (`manage.py collectstatic`, which make run does) with a content hash in every name and a gzip copy beside
# it, so WhiteNoise serves them compressed with a year's Cache-Control: immutable. plotly.min.js is 4.8 MB, 1.4 MB
# compressed. DEBUG (config.settings.development) serves them from the source tree through the finders instead.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG
# `manage.py dev_admin` makes a superuser with a generated password: make run's demo and development only
DEV_ADMIN = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "monitor:overview"
LOGOUT_REDIRECT_URL = "monitor:overview"

# Celery: the filesystem transport needs no broker server. Production sets CELERY_BROKER_URL to Redis or RabbitMQ.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        # the exchange tables (kombu's default is `control/` in the working directory: the repository's, in git)
        "control_folder": str(BROKER_DIR / "control"),
    }
    if CELERY_BROKER_URL.startswith("filesystem://")
    # Redis: a message taken by a worker that is then killed comes back after this many seconds (Redis' default
    # of an hour held the work up). A cycle still running when it comes back is not done twice: the second
    # delivery finds the process lock or the task claims held by a live worker. Kombu looks for such messages
    # every interval × throttle seconds (10 × 10 by default, kombu/transport/redis.py 5.7: a killed worker's
    # message came back after 111 s); every 5 s here, so it is back at the head of its queue within
    # visibility + 5 s of being taken (issue 47, finding 10).
    else {
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT_SECONDS", "60")),
        "unacked_restore_interval": 5,
        "unacked_restore_throttle": 1,
    }
)
# Outcomes are stored as domain rows (cycles, decisions), so Celery's own result store is not needed.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# When the broker goes away, a running task finishes (Celery 5's default, chosen: a cycle cut short would hold its
# claims until the heartbeat sweep): its acknowledgement is lost, the message comes back after the visibility
# timeout, and that second delivery finds the work done or claimed.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# A message that cannot be sent because the broker is away (beat's periodic runs, a dispatch's cycles) is sent
# again for about a minute and a half instead of being dropped with "Couldn't apply scheduled task".
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 20, "interval_start": 0.5, "interval_step": 1, "interval_max": 5}
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# How often the active jobs are counted per queue and status for the site and queue lists (selectors.queues)
JOB_COUNTS_INTERVAL_SECONDS = env_positive("JOB_COUNTS_INTERVAL_SECONDS", 60)
CELERY_BEAT_SCHEDULE = {
    "process-lock-expiry": {
        "task": "brokerage.tasks.process_lock_expire_task",
        "schedule": env_positive("PROCESS_LOCK_EXPIRY_INTERVAL_SECONDS", 15),
    },
    "task-brokerage-cycle": {
        "task": "brokerage.tasks.task_brokerage_cycle_task",
        "schedule": env_positive("TASK_BROKERAGE_INTERVAL_SECONDS", 60),
    },
    "task-priority-boost": {
        "task": "brokerage.tasks.task_priority_boost_task",
        "schedule": env_positive("PRIORITY_BOOST_INTERVAL_SECONDS", 600),
    },
    "global-share-snapshot": {
        "task": "brokerage.tasks.global_share_snapshot_task",
        "schedule": env_positive("GLOBAL_SHARE_SNAPSHOT_INTERVAL_SECONDS", 600),
    },
    "task-refine": {
        "task": "brokerage.tasks.task_refine_task",
        "schedule": env_positive("TASK_REFINE_INTERVAL_SECONDS", 60),
    },
    "watchdog": {
        "task": "brokerage.tasks.watchdog_task",
        "schedule": env_positive("WATCHDOG_INTERVAL_SECONDS", 300),
    },
    # one job-generation cycle per work queue is queued each time; the process lock keeps them one at a time
    "job-generation": {
        "task": "brokerage.tasks.job_generation_dispatch_task",
        "schedule": env_positive("JOB_GENERATION_INTERVAL_SECONDS", 60),
    },
    # CMS WMCore (seed 004): the global queue's turn, then each agent's; locations of Available elements
    "wmcore": {
        "task": "brokerage.tasks.wmcore_dispatch_task",
        "schedule": env_positive("WMCORE_INTERVAL_SECONDS", 60),
    },
    "wmcore-locations": {
        "task": "brokerage.tasks.wmcore_locations_task",
        "schedule": env_positive("WMCORE_LOCATION_INTERVAL_SECONDS", 1200),
    },
    "job-counts": {
        "task": "brokerage.tasks.job_counts_refresh_task",
        "schedule": JOB_COUNTS_INTERVAL_SECONDS,
    },
    # archive ended jobs, drop expired history (brokerage.services.housekeeping)
    "housekeeping": {
        "task": "brokerage.tasks.housekeeping_task",
        "schedule": env_positive("HOUSEKEEPING_INTERVAL_SECONDS", 3600),
    },
}

# The demo grid simulator plays the pilots (brokerage.services.simulator); only in demo mode, never in
# production. GRID_SIMULATOR_SPEED grid minutes pass per real minute.
GRID_SIMULATOR = os.environ.get("GRID_SIMULATOR", "off").lower() in ("1", "on", "true", "yes")
GRID_SIMULATOR_SPEED = env_positive("GRID_SIMULATOR_SPEED", 1, unit="times the real pace")
if GRID_SIMULATOR:
    CELERY_BEAT_SCHEDULE["grid-simulator"] = {
        "task": "brokerage.tasks.grid_simulate_task",
        "schedule": env_positive("GRID_SIMULATOR_INTERVAL_SECONDS", 10),
    }

# DIRAC: CPU-time segments of the task queues (seed 003's by default; DIRAC today uses a longer list), the group
# shares the task-queue priorities come from (JSON object group → share; 1000 when a group is missing) and the
# groups as DIRAC's Registry describes them (JSON object group → {share, vo, jobSharing, backgroundTQs}; a share
# in DIRAC_GROUP_SHARES wins).
DIRAC_CPU_SEGMENTS = tuple(float(v) for v in env_list("DIRAC_CPU_SEGMENTS", "500,5000,50000,300000"))
DIRAC_GROUP_SHARES = json.loads(os.environ.get("DIRAC_GROUP_SHARES", "{}"))
DIRAC_GROUPS = json.loads(os.environ.get("DIRAC_GROUPS", "{}"))

# Tasks one job-generation cycle claims at most per work queue, whatever NTASKS (gdpconfig: tasks per resource type,
# 50 by default as JEDI's) asks: the deployment's bound on a cycle's memory and time.
JOB_GENERATION_BATCH = int(os.environ.get("JOB_GENERATION_BATCH", "1000"))

# Tasks one task-brokerage cycle claims at most; several workers share a larger backlog.
TASK_BROKERAGE_BATCH = int(os.environ.get("TASK_BROKERAGE_BATCH", "500"))

# JEDI releases a process lock whose holder stopped refreshing it (seed 002, JEDI_Process_Lock); we expire
# locks older than this many minutes so a killed worker never blocks a work queue for good.
# The cycles' counts of active jobs per queue and status are shared through the cache for this long (0: read by
# every cycle), as PanDA's brokers read a materialized view refreshed now and then (brokerage.adapters.grid).
JOB_STATISTICS_MAX_AGE_SECONDS = float(os.environ.get("JOB_STATISTICS_MAX_AGE_SECONDS", "10"))
PROCESS_LOCK_TIMEOUT_MINUTES = int(os.environ.get("PROCESS_LOCK_TIMEOUT_MINUTES", "30"))
# Holders of locks and claims beat every HEARTBEAT_SECONDS; after HEARTBEAT_STALE_SECONDS without a beat they are
# gone and what they held is free (the sweep runs every PROCESS_LOCK_EXPIRY_INTERVAL_SECONDS): a killed worker
# holds its work up for about a minute, not PROCESS_LOCK_TIMEOUT_MINUTES.
# Issue 31 asks a dead worker's locks and cycles back within 60 s: a beat every 10 s, gone after 30 s without
# one, the sweep every 15 s frees them 30–45 s after the death (a beat that a busy database delays by a few
# seconds is still well inside 30 s).
HEARTBEAT_SECONDS = env_positive("HEARTBEAT_SECONDS", 10)
HEARTBEAT_STALE_SECONDS = env_positive("HEARTBEAT_STALE_SECONDS", 30)
INTEGRITY_CHECK_MINUTES = int(os.environ.get("INTEGRITY_CHECK_MINUTES", "10"))

# History (issue 32; brokerage.services.housekeeping). Jobs that ended move to the archive after
# JOB_ARCHIVE_AFTER_DAYS (PanDA's jobsArchived4 keeps them 3 days) and leave it after JOB_DAYS (PanDA's archive: a
# year). A decision's row is kept DECISION_DAYS, its full trace and its cycle's frame DECISION_TRACE_DAYS (most of
# the bytes). Job status logs go after JOB_STATUS_LOG_DAYS (PanDA: 90), the other status logs after
# STATUS_LOG_DAYS; share snapshots, integrity checks, housekeeping runs, heartbeats and the hourly summaries after
# HISTORY_DAYS. The watchdog's per-pass counts (a row per queue and rule every pass) go after TIMEOUT_SUMMARY_DAYS.
# DIRAC jobs that ended go after DIRAC_JOB_DAYS (DIRAC purges them after 7), with their status logs; WMBS jobs that
# ended, of a subscription that finished, after WMBS_JOB_DAYS (WMCore's JobArchiver cleans them out).
JOB_ARCHIVE_AFTER_DAYS = env_count("JOB_ARCHIVE_AFTER_DAYS", 3)
JOB_DAYS = env_count("JOB_DAYS", 365)
JOB_STATUS_LOG_DAYS = env_count("JOB_STATUS_LOG_DAYS", 90)
STATUS_LOG_DAYS = env_count("STATUS_LOG_DAYS", 400)
DECISION_DAYS = env_count("DECISION_DAYS", 400)
DECISION_TRACE_DAYS = env_count("DECISION_TRACE_DAYS", 30)
HISTORY_DAYS = env_count("HISTORY_DAYS", 400)
TIMEOUT_SUMMARY_DAYS = env_count("TIMEOUT_SUMMARY_DAYS", 30)
DIRAC_JOB_DAYS = env_count("DIRAC_JOB_DAYS", 7)
WMBS_JOB_DAYS = env_count("WMBS_JOB_DAYS", 7)
# A task's event ranges go EVENT_DAYS after it ended (they serve its merges, retries and page while it runs; its
# page shows no event ranges then), its files (inputs and outputs) TASK_FILES_DAYS after, as the jobs that
# used and made them: what grows with every job of a task is bounded by the tasks of those days.
EVENT_DAYS = env_count("EVENT_DAYS", 30)
TASK_FILES_DAYS = env_count("TASK_FILES_DAYS", 365)
# A worker node's entry (panda-server 1.0's update_worker_node) goes WORKER_NODE_DAYS after a pilot last reported it.
WORKER_NODE_DAYS = env_count("WORKER_NODE_DAYS", 90)
if DECISION_TRACE_DAYS > DECISION_DAYS:
    raise ImproperlyConfigured("DECISION_TRACE_DAYS must not exceed DECISION_DAYS: a trace is part of its decision")
if JOB_ARCHIVE_AFTER_DAYS >= JOB_DAYS:
    raise ImproperlyConfigured("JOB_ARCHIVE_AFTER_DAYS must be less than JOB_DAYS: jobs are archived, then dropped")
# Rows one housekeeping transaction moves or drops.
HOUSEKEEPING_BATCH = env_count("HOUSEKEEPING_BATCH", 5000, unit="rows")

# Bounded waits on PostgreSQL (brokerage.db_session), milliseconds, 0 for none. A web request gives up a row lock
# after DB_WEB_LOCK_TIMEOUT_MS (the page or the API answers 409 "busy") and a query after
# DB_WEB_STATEMENT_TIMEOUT_MS (503), well inside gunicorn's 30-s worker timeout; a cycle gives up a row lock after
# DB_CYCLE_LOCK_TIMEOUT_MS (it records itself failed, releases its claims and is retried) and a statement after
# DB_CYCLE_STATEMENT_TIMEOUT_MS. Cycles skip rows others hold wherever they can (SKIP LOCKED), so they rarely wait.
DB_WEB_LOCK_TIMEOUT_MS = int(os.environ.get("DB_WEB_LOCK_TIMEOUT_MS", "3000"))
DB_WEB_STATEMENT_TIMEOUT_MS = int(os.environ.get("DB_WEB_STATEMENT_TIMEOUT_MS", "15000"))
DB_CYCLE_LOCK_TIMEOUT_MS = int(os.environ.get("DB_CYCLE_LOCK_TIMEOUT_MS", "10000"))
DB_CYCLE_STATEMENT_TIMEOUT_MS = int(os.environ.get("DB_CYCLE_STATEMENT_TIMEOUT_MS", "600000"))

# Brokerage plugins, by dotted path: ours, then any an organisation adds (comma-separated in the environment).
BROKERAGE_PLUGINS = [
    "brokerage.engine.panda.task_broker.AtlasProdTaskBroker",
    "brokerage.engine.panda.job_broker.AtlasProdJobBroker",
    "brokerage.engine.panda.analysis_broker.AtlasAnalJobBroker",
    "brokerage.engine.dirac.plugin.DiracMatcher",
    "brokerage.engine.wmcore.plugin.WMCorePull",
    *env_list("BROKERAGE_EXTRA_PLUGINS"),
]

# The API: anonymous reading on for a monitor (API_ANONYMOUS_READ, off in production settings), writes with a
# token or a session (CSRF checked) and the model permission, anonymous clients throttled.
# One policy for anonymous reading (issue 31: the production dashboard showed user names to anyone while the API
# refused them): the dashboard follows the API unless DASHBOARD_ANONYMOUS_READ says otherwise; both are off in
# production settings. Off, a page sends an anonymous visitor to /login/ and the API answers 401/403.
API_ANONYMOUS_READ = env_bool("API_ANONYMOUS_READ", True)
DASHBOARD_ANONYMOUS_READ = env_bool("DASHBOARD_ANONYMOUS_READ", API_ANONYMOUS_READ)
# The pilot's caches (/cache/schedconfig/…, /cache/ddmendpoints.json) are queue and storage configuration, public in
# CRIC and PanDA; the real pilot fetches them without credentials (issue 47), so they are open unless this is off.
PILOT_CACHES_ANONYMOUS_READ = env_bool("PILOT_CACHES_ANONYMOUS_READ", True)
# Costly requests (brokerage.costly; issue 47): a what-if stops replaying after WHAT_IF_SECONDS (well inside the
# web statement timeout and gunicorn's 30 s), each client runs one at a time and the site COSTLY_CONCURRENT at once.
WHAT_IF_SECONDS = env_positive("WHAT_IF_SECONDS", 8)
COSTLY_CONCURRENT = env_count("COSTLY_CONCURRENT", 2, unit="requests")
# Health probes (monitor.health): each check waits this long at most; an answer is kept this long in the process
HEALTH_CHECK_TIMEOUT_SECONDS = env_positive("HEALTH_CHECK_TIMEOUT_SECONDS", 2)
HEALTH_CACHE_SECONDS = env_positive("HEALTH_CACHE_SECONDS", 2)

# Prometheus (issue 53; monitor.metrics, brokerage.metrics, README "Metrics"). Every process (gunicorn's workers,
# Celery's) writes its counters and histograms to files in PROMETHEUS_MULTIPROC_DIR (prometheus-client's
# multiprocess mode: it must be set before prometheus_client is imported, so here), which /metrics sums; the folder
# is emptied when the processes of a host start (scripts/run.sh, the production guide). The grid's state (jobs,
# tasks, shares, Celery's queue) is read from the database at a scrape, kept METRICS_CACHE_SECONDS for every
# process; the jobs' series are at most METRICS_JOB_SERIES (the smallest computingsites' counts folded into
# computingsite="other" past it). /metrics is read with METRICS_BEARER_TOKEN when set, else by the API's read rule.
PROMETHEUS_MULTIPROC_DIR = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(VAR_DIR / "prometheus"))
Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
METRICS_CACHE_SECONDS = env_positive("METRICS_CACHE_SECONDS", 15)
METRICS_JOB_SERIES = env_count("METRICS_JOB_SERIES", 5000, unit="series")
METRICS_BEARER_TOKEN = os.environ.get("METRICS_BEARER_TOKEN", "")
METRICS_BROKER_TIMEOUT_SECONDS = env_positive("METRICS_BROKER_TIMEOUT_SECONDS", 2)
# Request bodies (JSON only): larger ones are a 413 in the API's error shape; Django's own limit is the same.
API_MAX_BODY_BYTES = int(os.environ.get("API_MAX_BODY_BYTES", 2_621_440))
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
REST_FRAMEWORK = {
    "DEFAULT_PARSER_CLASSES": ["monitor.api.parsers.BoundedJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_PERMISSION_CLASSES": ["monitor.api.permissions.ReadOrModelPermission"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # the token first: a refused client is told how to authenticate (401 with WWW-Authenticate: Token)
        "monitor.api.authentication.ApiTokenAuthentication",
        # panda-client's OIDC ID tokens (Authorization: Bearer …), when OIDC_ISSUER is set (monitor.api.oidc)
        "monitor.api.oidc.OidcAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "monitor.api.filters.StrictFilterBackend",
        "monitor.api.ordering.StrictOrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "monitor.api.pagination.NumberedPages",
    "DEFAULT_SCHEMA_CLASS": "monitor.api.schema.ApiAutoSchema",
    # every client is throttled, signed in or not (issue 31: eight costly requests from a user without any
    # permission took the site down); a 429 says when to come back
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_ANON_RATE", "600/minute"),
        "user": os.environ.get("API_USER_RATE", "1200/minute"),
        # dashboard pages and the admin (monitor.access; issue 47), and the pilots' dispatcher (monitor.dispatcher):
        # a fleet of pilots shares an identity and asks for jobs and sends heartbeats all day
        "dashboard_anon": os.environ.get("DASHBOARD_ANON_RATE", "120/minute"),
        "dashboard_user": os.environ.get("DASHBOARD_USER_RATE", "300/minute"),
        "pilot": os.environ.get("PILOT_RATE", "60000/minute"),
    },
    "EXCEPTION_HANDLER": "monitor.api.errors.exception_handler",
}
# API tokens (django-rest-knox): a digest at rest, shown once when made, valid API_TOKEN_DAYS unless the admin sets
# another expiry; "bm_" starts every token so secret scanners and people can tell what it is.
# OIDC ID tokens from the VO's issuer (issue 36: panda-client with PANDA_AUTH=oidc). Off while OIDC_ISSUER is empty.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "")
OIDC_AUDIENCE = os.environ.get("OIDC_AUDIENCE", "")  # the client ids whose tokens are accepted, comma-separated
OIDC_JWKS_URL = os.environ.get("OIDC_JWKS_URL", "")  # the issuer's key set (its jwks_uri) …
OIDC_JWKS_FILE = os.environ.get("OIDC_JWKS_FILE", "")  # … or a copy of it on this machine
OIDC_JWKS_REFRESH_SECONDS = int(os.environ.get("OIDC_JWKS_REFRESH_SECONDS", "600"))
OIDC_VO = os.environ.get("OIDC_VO", "atlas")
OIDC_CREATE_USERS = os.environ.get("OIDC_CREATE_USERS", "1") == "1"
# What a real pilot runs for a job whose transformation is no URL (the demo's name ATLAS transforms): the generic
# pilot downloads transformations from its known hosts only, or copies them from $HARVESTER_WORKDIR (README)
PILOT_PAYLOAD_TRANSFORMATION = os.environ.get(
    "PILOT_PAYLOAD_TRANSFORMATION", "http://pandaserver-doma.cern.ch:25080/trf/user/runGen-00-00-02"
)
PILOT_PAYLOAD_PARAMETERS = os.environ.get("PILOT_PAYLOAD_PARAMETERS", "sleep 5")
DEMO_OIDC_ISSUER = False  # manage.py demo_token: the demo signs its own ID tokens (config.settings.demo only)
API_TOKEN_DAYS = int(os.environ.get("API_TOKEN_DAYS", "90"))
# Our own token model (brokerage.models.ApiToken): a number for a key and a name, so no address or page names a
# token's digest (issue 47).
KNOX_TOKEN_MODEL = "brokerage.ApiToken"
REST_KNOX = {"TOKEN_TTL": timedelta(days=API_TOKEN_DAYS), "AUTH_HEADER_PREFIX": "Token", "TOKEN_PREFIX": "bm_"}
SPECTACULAR_SETTINGS = {
    "TITLE": "Brokerage monitor API",
    "DESCRIPTION": "Brokerage decisions with their traces, and the tasks, jobs, queues and shares behind them.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # the schema and its docs follow the API's read rule (issue 47: public in production while the API was not)
    "SERVE_PERMISSIONS": ["monitor.api.permissions.ReadAccess"],
    # its own `check --deploy` builds the whole schema, which reads tables (a filter's choices): before `migrate`
    # that logged relation errors (issue 47). The schema is checked by the test suite (tests/monitor/test_api_*).
    "ENABLE_DJANGO_DEPLOY_CHECK": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # 3.1: JSON Schema 2020-12, the dialect of docs/scenario.schema.json, which the preview's body embeds
    "OAS_VERSION": "3.1.0",
    "PREPROCESSING_HOOKS": ["monitor.api.schema.without_bare_twins"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "monitor.api.schema.strict_bodies"],
}
CSRF_FAILURE_VIEW = "monitor.api.errors.csrf_failure"

# The brokerage log (issue 53; brokerage/adapters/decision_log.py): BROKERAGE_LOG=jedi writes each job brokerage
# decision as the lines panda-server's AtlasProdJobBroker writes for it, on the logger
# brokerage.jedi.AtlasProdJobBroker; json writes one JSON record a decision on brokerage.jedi.json; both, or off
# (the default: at a million jobs a day the lines cost job generation about a tenth of its rate, bench keepup
# 2026-11-30, docs/benchmarks.md). They go to standard output with the rest, or to BROKERAGE_LOG_FILE (appended,
# reopened when logrotate moves it) for a log shipper to tail.
BROKERAGE_LOG = os.environ.get("BROKERAGE_LOG", "off").strip().lower()
if BROKERAGE_LOG not in ("off", "jedi", "json", "both"):
    raise ImproperlyConfigured(f"BROKERAGE_LOG={BROKERAGE_LOG!r}: give off, jedi, json or both")
BROKERAGE_LOG_FILE = os.environ.get("BROKERAGE_LOG_FILE", "")
_brokerage_handler = (
    {"class": "logging.handlers.WatchedFileHandler", "filename": BROKERAGE_LOG_FILE, "formatter": "jedi"}
    if BROKERAGE_LOG_FILE
    else {"class": "logging.StreamHandler", "formatter": "jedi"}
)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        # JEDI's own layout (panda-common's PandaLogger): time, logger, level, then the <jediTaskID=N> line
        "jedi": {"format": "%(asctime)s %(name)s: %(levelname)s %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}, "brokerage": _brokerage_handler},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "brokerage.jedi": {
            "handlers": ["brokerage"],
            "level": "INFO" if BROKERAGE_LOG in ("jedi", "both") else "WARNING",
            "propagate": False,
        },
        "brokerage.jedi.json": {
            "handlers": ["brokerage"],
            "level": "INFO" if BROKERAGE_LOG in ("json", "both") else "WARNING",
            "propagate": False,
        },
    },
}


def ensure_var_dirs() -> None:
    """Creates the folders the embedded defaults write to (database, cache, broker queue)."""
    for folder in (VAR_DIR, BROKER_DIR / "queue", BROKER_DIR / "processed", BROKER_DIR / "control", VAR_DIR / "cache"):
        folder.mkdir(parents=True, exist_ok=True)


ensure_var_dirs()
