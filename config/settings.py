"""Settings, all from environment variables.

Defaults match the services on a development machine of this project (PostgreSQL, RabbitMQ and
Redis on 127.0.0.1). PostgreSQL is the only supported database: acceptance relies on
``INSERT ... ON CONFLICT``, workers on ``FOR UPDATE SKIP LOCKED`` and partial indexes.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, overload
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


@overload
def env(name: str, default: str) -> str: ...
@overload
def env(name: str, default: None = None) -> str | None: ...
def env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def env_bool(name: str, default: bool = False) -> bool:
    """The switch ``name``: 1/true/yes/on or 0/false/no/off (any case, spaces ignored); unset
    or empty means ``default`` (``FOO=`` in an env file reads as "not set").

    Anything else is ImproperlyConfigured: a misspelt ``DJANGO_DEBUG=ture`` or
    ``POSTGRES_PREPARED_STATEMENTS=of`` must stop the process, not quietly pick a side.
    """
    value = (os.environ.get(name) or "").strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={os.environ[name]!r} is not a boolean: use one of 1/true/yes/on or 0/false/no/off."
    )


def env_int(name: str, default: int) -> int:
    """The whole number ``name``; unset or empty means ``default``; anything else stops the
    process (ImproperlyConfigured names the variable)."""
    value = (os.environ.get(name) or "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={os.environ[name]!r} is not a whole number.") from None


def env_float(name: str, default: float) -> float:
    """The number ``name`` (seconds, shares, rates); unset or empty means ``default``; anything
    else stops the process (ImproperlyConfigured names the variable)."""
    value = (os.environ.get(name) or "").strip()
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={os.environ[name]!r} is not a number.") from None


DEBUG = env_bool("DJANGO_DEBUG", False)
# DJANGO_DEVELOPMENT=1 (set by bin/run and bin/test) allows the well-known development key.
DEVELOPMENT = env_bool("DJANGO_DEVELOPMENT", False)
SECRET_KEY = env("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not (DEVELOPMENT or DEBUG):
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is required outside development (set DJANGO_DEVELOPMENT=1 for a local run)."
        )
    SECRET_KEY = "development-only-insecure-key"

ALLOWED_HOSTS = [h for h in (env("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver") or "").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in (env("DJANGO_CSRF_TRUSTED_ORIGINS", "") or "").split(",") if o]

# HTTPS in production: cookies only over TLS, HSTS, and a redirect for everything but the probes
# and the scraper, which call the process directly over plain HTTP on loopback. Development
# (bin/run on 127.0.0.1) serves plain HTTP.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", not DEVELOPMENT)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEVELOPMENT else 31_536_000)
# Whether every subdomain is HTTPS-only, and whether to ask browsers to preload HSTS, are the
# operator's decisions about the whole domain (preloading is hard to undo): off unless asked.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021"]
SESSION_COOKIE_SECURE = env_bool("DJANGO_SESSION_COOKIE_SECURE", not DEVELOPMENT)
CSRF_COOKIE_SECURE = env_bool("DJANGO_CSRF_COOKIE_SECURE", not DEVELOPMENT)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients).
if env_bool("DJANGO_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "accounts",
    "extraction",
    "delivery",
]
# Development-only commands (the provider simulator, which needs aiohttp): absent in production.
if DEVELOPMENT:
    INSTALLED_APPS.append("tests.devtools")
# The reference ERP receiver at /erp/ with its own tables, a stand-in for an integrator's system:
# only bin/run and the tests turn it on, so a production database never gets its tables.
DEMO_ERP = env_bool("DEMO_ERP", False)
if DEMO_ERP:
    INSTALLED_APPS.append("delivery.erp")

MIDDLEWARE = [
    # First, so the accept latency it measures includes every other middleware.
    "config.request_metrics.AcceptLatencyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # A view that finds the database away answers 503 + Retry-After, not a 500 per request.
    "config.availability.DatabaseUnavailableMiddleware",
    # Static files (admin, API docs) served by the app processes themselves: no separate web server needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

# PostgreSQL past one host (docs/scaling-and-failover.md): POSTGRES_HOST and POSTGRES_PORT
# take comma-separated lists (one port, or one per host), which libpq tries in order, keeping
# the first that accepts POSTGRES_TARGET_SESSION_ATTRS: "read-write" by default when more than
# one host is named, so after a promotion every new connection finds the new primary and
# never settles on a standby. Each dead host costs at most POSTGRES_CONNECT_TIMEOUT.
POSTGRES_HOST = env("POSTGRES_HOST", "127.0.0.1")
POSTGRES_PORT = env("POSTGRES_PORT", "5432")
# Where LISTEN sessions go (config.db.Notifications: the llm workers' dispatchers, the relay)
# when POSTGRES_HOST is a pooler in transaction mode, which cannot hold one: PostgreSQL itself.
# Empty: the same server as every other connection.
POSTGRES_LISTEN_HOST = env("POSTGRES_LISTEN_HOST", "")
POSTGRES_LISTEN_PORT = env("POSTGRES_LISTEN_PORT", "")
POSTGRES_TARGET_SESSION_ATTRS = env("POSTGRES_TARGET_SESSION_ATTRS", "read-write" if "," in POSTGRES_HOST else "")
DATABASES: dict[str, dict[str, Any]] = {
    "default": {
        # Django's, with the pooled-connection check of config/pool_checks.py (POOL_CHECK).
        "ENGINE": "config.postgres_backend",
        "NAME": env("POSTGRES_DB", "extraction"),
        "USER": env("POSTGRES_USER", "postgres"),
        "PASSWORD": env("POSTGRES_PASSWORD", ""),
        "HOST": POSTGRES_HOST,
        "PORT": POSTGRES_PORT,
        # Persistent connections: one per web/worker thread, checked before reuse.
        "CONN_MAX_AGE": env_int("POSTGRES_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            "connect_timeout": env_int("POSTGRES_CONNECT_TIMEOUT", 5),
            # A primary that vanished without closing its sockets (a host cut off, a VM gone)
            # must not hold a connection for the kernel's two hours: keepalives find it in
            # about a minute, and a send unacknowledged for 30 s fails.
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
            "tcp_user_timeout": 30_000,
            # A request or worker step never needs long; a stuck one must not pin the
            # MVCC horizon of the hot queue tables.
            "options": "-c idle_in_transaction_session_timeout=30000 -c statement_timeout=30000",
            # Django turns psycopg's prepared statements off (prepare_threshold None), and then
            # psycopg ignores even an explicit ``prepare=True``. The hot statements (the claim,
            # the completion, the ingress and relay steps) ask for it: planning the claim
            # costs PostgreSQL more than executing it. The threshold is out of reach, so
            # nothing else is prepared by itself (the ORM's client-side cursors never are).
            # Off behind a pooler in transaction mode, where a session's statements do not
            # follow the client.
            "prepare_threshold": 2**31 - 1 if env_bool("POSTGRES_PREPARED_STATEMENTS", True) else None,
        },
        "TEST": {"NAME": env("POSTGRES_TEST_DB", "test_extraction")},
    }
}
if POSTGRES_TARGET_SESSION_ATTRS:
    DATABASES["default"]["OPTIONS"]["target_session_attrs"] = POSTGRES_TARGET_SESSION_ATTRS

REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
# Redis behind Sentinel: REDIS_SENTINELS=host:port,host:port,… and the master's name. The cache
# (and with it the capacity limiter, which reads the cache's connection) and the Channels layer
# then ask the Sentinels for the current master on every new connection, so a failover costs
# the connections it broke. REDIS_URL and CHANNELS_REDIS_URL keep giving the database number
# and the password.
REDIS_SENTINELS = [
    (host.strip(), int(port))
    for host, _, port in (item.rpartition(":") for item in (env("REDIS_SENTINELS", "") or "").split(",") if item)
]
REDIS_SENTINEL_MASTER = env("REDIS_SENTINEL_MASTER", "mymaster")
# The Sentinels' own password, when they have one (Redis's password comes from REDIS_URL).
REDIS_SENTINEL_PASSWORD = env("REDIS_SENTINEL_PASSWORD", "")


def _redis_location(url: str) -> str:
    """``url``'s password and database on the Sentinels' master instead of its host."""
    parsed = urlsplit(url)
    credentials = parsed.netloc.rpartition("@")[0]
    return f"{parsed.scheme}://{credentials + '@' if credentials else ''}{REDIS_SENTINEL_MASTER}{parsed.path}"


_REDIS_TIMEOUTS = {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2}
CACHES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL, "OPTIONS": dict(_REDIS_TIMEOUTS)}
}
if REDIS_SENTINELS:
    CACHES["default"] = {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": _redis_location(REDIS_URL),
        "OPTIONS": {
            **_REDIS_TIMEOUTS,
            "CLIENT_CLASS": "django_redis.client.SentinelClient",
            "CONNECTION_FACTORY": "django_redis.pool.SentinelConnectionFactory",
            "SENTINELS": REDIS_SENTINELS,
            "SENTINEL_KWARGS": {
                "socket_connect_timeout": 2,
                "socket_timeout": 2,
                **({"password": REDIS_SENTINEL_PASSWORD} if REDIS_SENTINEL_PASSWORD else {}),
            },
        },
    }

# RabbitMQ past one node: BROKER_URL may be a ";"-separated list of AMQP URLs, one per cluster
# node. Every connection (Celery's, the relay's, the sweeps') tries the nodes in the list's
# order, from where it is, and moves to the next one that answers when its node goes away.
# BROKER_FAILOVER_STRATEGY "shuffle" starts each process at a random place in the list, so a
# fleet's connections spread over the nodes; "round-robin" starts every process at the first.
BROKER_FAILOVER_STRATEGY = env("BROKER_FAILOVER_STRATEGY", "shuffle")
if BROKER_FAILOVER_STRATEGY not in ("shuffle", "round-robin"):
    raise ImproperlyConfigured(f"BROKER_FAILOVER_STRATEGY={BROKER_FAILOVER_STRATEGY!r}: use shuffle or round-robin")
BROKER_NODES = [
    url.strip() for url in env("BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//").split(";") if url.strip()
]
if BROKER_FAILOVER_STRATEGY == "shuffle":
    _start = random.randrange(len(BROKER_NODES))
    BROKER_NODES = BROKER_NODES[_start:] + BROKER_NODES[:_start]
BROKER_URL = ";".join(BROKER_NODES)

# --- The event transport (BRK-6; docs/kafka.md) ----------------------------------------------
# What carries the outbox's events: "rabbitmq" (the default) or "kafka" (config/kafka.py). With
# Kafka, Celery's wake-ups and delivery hints still ride RabbitMQ: they are hints PostgreSQL
# re-sends, while the events (requested, outcomes, dead letters) become a replayable log.
EVENT_TRANSPORT = env("EVENT_TRANSPORT", "rabbitmq")
if EVENT_TRANSPORT not in ("rabbitmq", "kafka"):
    raise ImproperlyConfigured(f"EVENT_TRANSPORT={EVENT_TRANSPORT!r}: use rabbitmq or kafka")
KAFKA_BOOTSTRAP_SERVERS = env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
# Topic names of the three event families; one job's events share a key (its id), so a
# partition keeps their order.
KAFKA_TOPIC_REQUESTED = env("KAFKA_TOPIC_REQUESTED", "extraction.requested")
KAFKA_TOPIC_OUTCOMES = env("KAFKA_TOPIC_OUTCOMES", "extraction.outcomes")
KAFKA_TOPIC_DEAD_LETTERS = env("KAFKA_TOPIC_DEAD_LETTERS", "extraction.dead_letters")
KAFKA_PARTITIONS = env_int("KAFKA_PARTITIONS", 6)
KAFKA_REPLICATION_FACTOR = env_int("KAFKA_REPLICATION_FACTOR", 1)
# Create missing topics at start-up (where the account may; off when they are provisioned).
KAFKA_CREATE_TOPICS = env_bool("KAFKA_CREATE_TOPICS", True)
KAFKA_INGRESS_GROUP = env("KAFKA_INGRESS_GROUP", "extraction-ingress")
KAFKA_DELIVERY_GROUP = env("KAFKA_DELIVERY_GROUP", "delivery-fan-out")
# Records a consumer takes in at once (its dispatcher threads); past this many unfinished
# records it pauses its partitions and keeps polling.
KAFKA_CONSUMER_THREADS = env_int("KAFKA_CONSUMER_THREADS", 8)
KAFKA_CONSUMER_MAX_IN_FLIGHT = env_int("KAFKA_CONSUMER_MAX_IN_FLIGHT", 64)
KAFKA_SESSION_TIMEOUT_MS = env_int("KAFKA_SESSION_TIMEOUT_MS", 45000)
# How long a broker may hold a Fetch with no new record (librdkafka's fetch.wait.max.ms). Kafka
# answers as soon as a record arrives; a broker that holds the Fetch to the end (Tansu) delays
# every record by up to this much.
KAFKA_FETCH_WAIT_MAX_MS = env_int("KAFKA_FETCH_WAIT_MAX_MS", 500)
KAFKA_MAX_POLL_INTERVAL_MS = env_int("KAFKA_MAX_POLL_INTERVAL_MS", 300000)
# The Kafka consumers a process can run (manage.py run_kafka_consumer NAME): the group, the
# topics and the durable step of each record (a dotted path; apps register here).
KAFKA_CONSUMERS = {
    "ingress": {
        "group": KAFKA_INGRESS_GROUP,
        "topics": [KAFKA_TOPIC_REQUESTED],
        "handler": "extraction.eventlog.ingress.take_in_record",
    },
    "delivery": {
        "group": KAFKA_DELIVERY_GROUP,
        "topics": [KAFKA_TOPIC_OUTCOMES],
        "handler": "delivery.kafka_fan_out.fan_out_record",
    },
}
# librdkafka's security settings, passed through as they are named there.
KAFKA_CLIENT_CONFIG = {
    key: value
    for key, value in {
        "security.protocol": env("KAFKA_SECURITY_PROTOCOL"),
        "sasl.mechanism": env("KAFKA_SASL_MECHANISM"),
        "sasl.username": env("KAFKA_SASL_USERNAME"),
        "sasl.password": env("KAFKA_SASL_PASSWORD"),
        "ssl.ca.location": env("KAFKA_SSL_CA_LOCATION"),
        "ssl.certificate.location": env("KAFKA_SSL_CERTIFICATE_LOCATION"),
        "ssl.key.location": env("KAFKA_SSL_KEY_LOCATION"),
    }.items()
    if value
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
MEDIA_ROOT = Path(env("MEDIA_ROOT", str(BASE_DIR / "var" / "media")))
# Document bytes go to Django storage. Local files by default; an S3-compatible bucket by
# setting DOCUMENT_STORAGE_BACKEND=storages.backends.s3.S3Storage (django-storages) and its
# AWS_* variables.
STORAGES = {
    "default": {"BACKEND": env("DOCUMENT_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage")},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# JSON bodies are small: anything bigger than this is refused with 413 before parsing.
API_MAX_JSON_BODY_BYTES = env_int("API_MAX_JSON_BODY_BYTES", 64 * 1024)
DOCUMENT_MAX_BYTES = env_int("DOCUMENT_MAX_BYTES", 20 * 1024 * 1024)
# The most pages a document may have (a PDF's, a TIFF's frames). Text is extracted page by page
# in the worker, by OCR where a page has no text layer (seconds a page), within one attempt's
# timeout; a bundle of invoices this long is better sent as a batch of its invoices.
DOCUMENT_MAX_PAGES = env_int("DOCUMENT_MAX_PAGES", 300)
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_JSON_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Batches (POST /api/v1/extraction-batches, docs/batches.md). The files of one batch, as
# multipart parts or in one zip archive: a batch is accepted within its request, so this also
# bounds how long the request takes, which must stay well within the web server's worker
# timeout (bench/batch_bench.py measures 1,000 one-page PDFs).
BATCH_MAX_FILES = env_int("BATCH_MAX_FILES", 1000)
# The largest batch body: the files (each also within DOCUMENT_MAX_BYTES) or the archive.
BATCH_MAX_BYTES = env_int("BATCH_MAX_BYTES", 256 * 1024 * 1024)
# An archive's files together, as its directory declares them, checked before any is read.
BATCH_ARCHIVE_MAX_UNCOMPRESSED_BYTES = env_int("BATCH_ARCHIVE_MAX_UNCOMPRESSED_BYTES", 1024 * 1024 * 1024)
# A file of an archive that expands more than this many times is refused as a bomb; documents
# compress far less (a PDF barely, an XML e-invoice some 5 to 20 times).
BATCH_ARCHIVE_MAX_RATIO = env_int("BATCH_ARCHIVE_MAX_RATIO", 100)
# Django's own count of file parts stops a request past it with a bare 400: one above the
# batch's, so a batch over BATCH_MAX_FILES gets the batch's problem instead.
DATA_UPLOAD_MAX_NUMBER_FILES = BATCH_MAX_FILES + 1
# How often the scheduler looks for batches whose every job is finished, to complete them with
# extraction.batch_completed.v1 (extraction/intake/batch_completion.py): the event's bound delay.
BATCH_COMPLETION_SWEEP_SECONDS = env_float("BATCH_COMPLETION_SWEEP_SECONDS", 5.0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.BearerTokenAuthentication",
        "accounts.authentication.TenantSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.IsTenantMember"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "config.problems.problem_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Invoice extraction API",
    "DESCRIPTION": "Durable, asynchronous extraction of supplier invoices.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The interactive docs' assets are served from this installation, not from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # 3.1: the invoice schemas are JSON Schema with nullable types as ["string", "null"].
    "OAS_VERSION": "3.1.0",
    # Request bodies get their own components, so an upload is a binary file there, not the
    # URI a FileField reads back as.
    "COMPONENT_SPLIT_REQUEST": True,
    # The webhook event types: one component, whichever field (a subscription, a filter) names them.
    "ENUM_NAME_OVERRIDES": {"WebhookEventTypeEnum": "delivery.models.SUBSCRIBABLE_TYPES"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "extraction.api.openapi.invoice_schemas",
        # Last: it renders the problem types the hooks before it added.
        "config.openapi.problem_responses_hook",
    ],
}

# --- Jobs -------------------------------------------------------------------------------
JOB_DEFAULT_DEADLINE_SECONDS = env_int("JOB_DEFAULT_DEADLINE_SECONDS", 24 * 3600)
JOB_MIN_DEADLINE_SECONDS = env_int("JOB_MIN_DEADLINE_SECONDS", 60)
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 5)
# Objects one operator action (re-run, cancel by filter) may touch; a broader filter is refused
# with the count to narrow it by, rather than locking half the jobs table.
OPERATOR_ACTION_MAX_OBJECTS = env_int("OPERATOR_ACTION_MAX_OBJECTS", 10_000)
# Model policies a job may name. reserved_tokens is the conservative per-request token
# reservation, price is per 1,000 tokens in micro-units of the tenant's spend currency; both
# feed admission (BP-1) before any real usage is known.
# reading: "model" (the pool's provider alone) or "rules_and_model" (the built-in rules read the
# same text beside it and the two readings make one answer: extraction/validation/readings.py).
# bundle_second_reader: the pool's model also reads a bundle's boundaries where the detector
# decided them narrowly (extraction/execution/splitting.py); ignored for the built-in rules.
MODEL_POLICIES: dict[str, dict[str, Any]] = {
    "default": {
        "provider_pool": "default",
        "reserved_tokens": 6000,
        "price_per_1k_tokens_micros": 2000,
        "reading": env("EXTRACTION_READING", "model"),
        "bundle_second_reader": env_bool("EXTRACTION_BUNDLE_SECOND_READER", False),
    },
}

# --- Admission (BP-1): per-tenant defaults, editable per tenant in the admin ------------------
TENANT_DEFAULT_MAX_PENDING_JOBS = env_int("TENANT_DEFAULT_MAX_PENDING_JOBS", 20_000)
TENANT_DEFAULT_MAX_PENDING_BYTES = env_int("TENANT_DEFAULT_MAX_PENDING_BYTES", 10 * 1024**3)
TENANT_DEFAULT_MAX_RESERVED_TOKENS = env_int("TENANT_DEFAULT_MAX_RESERVED_TOKENS", 200_000_000)
TENANT_DEFAULT_DAILY_SPEND_MICROS = env_int("TENANT_DEFAULT_DAILY_SPEND_MICROS", 500_000_000)
# Global accept capacity: past this many pending jobs across all tenants, new work is 503.
TENANT_DEFAULT_MAX_IN_FLIGHT = env_int("TENANT_DEFAULT_MAX_IN_FLIGHT", 50)
TENANT_DEFAULT_ALLOWED_CURRENCIES = tuple(
    (
        env("TENANT_DEFAULT_ALLOWED_CURRENCIES", "EUR,USD,GBP,CHF,DKK,NOK,SEK,PLN,CZK,HUF,INR,JPY,CAD,AUD,TRY") or ""
    ).split(",")
)
GLOBAL_MAX_PENDING_JOBS = env_int("GLOBAL_MAX_PENDING_JOBS", 1_000_000)
# OPS-4: a new tenant's completion target (Tenant.completion_target_seconds, edited in the admin).
TENANT_DEFAULT_COMPLETION_TARGET_SECONDS = env_int("TENANT_DEFAULT_COMPLETION_TARGET_SECONDS", 900)
# How long a web process trusts its last reading of the global backlog (seconds).
GLOBAL_BACKLOG_CACHE_SECONDS = env_float("GLOBAL_BACKLOG_CACHE_SECONDS", 1.0)
ADMISSION_RETRY_AFTER_SECONDS = env_int("ADMISSION_RETRY_AFTER_SECONDS", 30)

# API tokens: last_used_at is written at most this often per token, so that a busy client does
# not turn every authenticated request into a write.
API_TOKEN_LAST_USED_RESOLUTION_SECONDS = env_int("API_TOKEN_LAST_USED_RESOLUTION_SECONDS", 60)
# A web process trusts a token it has just verified for this long (0 = look it up every time).
API_TOKEN_CACHE_SECONDS = env_float("API_TOKEN_CACHE_SECONDS", 5.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "config.logging.JsonFormatter"}},
    "filters": {"dependency_loss": {"()": "config.logging.DependencyLossFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # One line per HTTP call and per task is noise at hundreds of jobs a second.
        "httpx2": {"level": "WARNING"},
        # psycopg_pool warns at every failed reconnection of every pooled connection while the
        # database is away; the process's own warning says so once (config.outages).
        "psycopg.pool": {"level": "ERROR"},
        "httpx": {"level": "WARNING"},
        # ERROR: a task rejected to the dead letters is logged by us with its reason (ERROR);
        # Celery's own WARNING for it repeats that with a traceback.
        "celery.app.trace": {"level": "ERROR"},
        # A broker node or Redis lost: a warning per process and reconnection, not a traceback
        # per message in hand or per retry (config.logging.DependencyLossFilter).
        "celery.worker.request": {"filters": ["dependency_loss"]},
        "celery.worker.consumer.consumer": {"filters": ["dependency_loss"]},
        "channels_redis.pubsub": {"filters": ["dependency_loss"]},
        "celery.worker.strategy": {"level": "WARNING"},
    },
}

# --- Tracing (OpenTelemetry, config/tracing.py; docs/operations.md) -------------------------
# Off unless the standard variables ask for it: OTEL_TRACES_EXPORTER=otlp or an
# OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, OTLP/HTTP only; OTEL_SDK_DISABLED=true wins. The
# exporter, batching (OTEL_BSP_*), sampler and resource read their own OTEL_* variables; each
# process names its service (web, relay, ingress, worker, ...) unless OTEL_SERVICE_NAME does.
# Requests to these paths get no span (OTEL_PYTHON_DJANGO_EXCLUDED_URLS replaces the list).
TRACING_UNTRACED_URLS = env("OTEL_PYTHON_DJANGO_EXCLUDED_URLS", "") or "/healthz,/readyz,/metrics"

# --- Execution (EXE, RTY) ------------------------------------------------------------------
RETRY_BASE_SECONDS = env_float("RETRY_BASE_SECONDS", 2.0)
RETRY_CAP_SECONDS = env_float("RETRY_CAP_SECONDS", 60.0)
RETRY_AFTER_MAX_SECONDS = env_float("RETRY_AFTER_MAX_SECONDS", 600.0)
# A relay's claim on a batch of outbox rows; a crashed relay's rows are retaken after it.
OUTBOX_CLAIM_SECONDS = env_float("OUTBOX_CLAIM_SECONDS", 30.0)
# EXE-4: the provider deadline of one attempt, the heartbeat interval and a shutdown margin
# make the lease: 45 s + 3 heartbeats of margin → 90 s. A model served on this machine's CPU
# takes tens of seconds per invoice, so its attempts get longer.
EXTRACTION_PROVIDER = env("EXTRACTION_PROVIDER", "builtin")
ATTEMPT_TIMEOUT_SECONDS = env_float("ATTEMPT_TIMEOUT_SECONDS", 300.0 if EXTRACTION_PROVIDER == "local" else 45.0)
LEASE_SECONDS = env_float("LEASE_SECONDS", ATTEMPT_TIMEOUT_SECONDS + 45)
HEARTBEAT_SECONDS = env_float("HEARTBEAT_SECONDS", 15.0)
# Time kept free before a deadline to commit a result: a retry that cannot finish a whole
# attempt plus this margin before the deadline is not scheduled (RTY-1).
COMMIT_MARGIN_SECONDS = env_float("COMMIT_MARGIN_SECONDS", 5.0)
# A consumer retries the step that takes a message into PostgreSQL this long while the database
# is away (a restart, a failover) before it requeues the message (config.messaging.durable_step).
DURABLE_STEP_RETRY_SECONDS = env_float("DURABLE_STEP_RETRY_SECONDS", 60.0)
# An ACCEPTED job whose requested event was published this long ago without reaching the
# inbox is made READY by the scheduler (BRK-4: a lost or purged message loses no job).
INGRESS_RECOVERY_SECONDS = env_float("INGRESS_RECOVERY_SECONDS", 30.0)

# --- Celery on RabbitMQ -----------------------------------------------------------------------
from config.topology import WORK_QUEUES  # noqa: E402

CELERY_BROKER_URL = BROKER_URL
# The list's order is the failover order (shuffled above, if at all).
CELERY_BROKER_FAILOVER_STRATEGY = "round-robin"
CELERY_BROKER_TRANSPORT_OPTIONS = {"confirm_publish": True}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker waits for the broker as long as it is away (Celery's default gives up after 100
# tries, about 50 minutes, and exits).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_POOL_ACQUIRE_TIMEOUT = 10
CELERY_TASK_QUEUES = WORK_QUEUES
CELERY_TASK_CREATE_MISSING_QUEUES = False
CELERY_TASK_DEFAULT_QUEUE = "ingress"
CELERY_TASK_ROUTES = {
    "extraction.ingest_requested": {"queue": "ingress", "routing_key": "ingress"},
    "extraction.run_slot": {"queue": "llm", "routing_key": "llm"},
    "delivery.fan_out_event": {"queue": "delivery", "routing_key": "delivery"},
    "delivery.dispatch": {"queue": "delivery", "routing_key": "delivery"},
}
CELERY_TASK_ACKS_LATE = True  # ack after the work committed
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # bounded by x-delivery-limit + DLX
CELERY_TASK_ACKS_ON_FAILURE = False  # a failed task is rejected without requeue → DLQ
CELERY_TASK_ACKS_ON_TIMEOUT = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Off: the threads pool cannot cancel a running task (Celery logs a traceback per task trying),
# and a task whose message the broker returned with a lost connection is harmless to finish:
# the work is decided in PostgreSQL, and the redelivered message finds it done.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_IGNORE_RESULT = True  # PostgreSQL is the record
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_ENABLE_REMOTE_CONTROL = False
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_WORKER_CONSUMER = "config.celery:DeadLetteringConsumer"

# --- The local model server (extraction/providers/local/, manage.py local_model) --------------------
# llama.cpp's llama-server on loopback with verified weights; built and installed by
# `bin/setup --with-local-model` into LOCAL_MODEL_HOME, a cache that survives a new clone.
LOCAL_MODEL: dict[str, Any] = {
    "home": Path(env("LOCAL_MODEL_HOME", str(Path.home() / ".cache" / "invoice-extraction" / "local-model"))),
    "weights": env("LOCAL_MODEL_WEIGHTS", "qwen2.5-coder-1.5b-instruct-q4_k_m"),
    "host": "127.0.0.1",
    "port": env_int("LOCAL_MODEL_PORT", 8200),
    # Requests served at once; the context is shared, each slot gets context_tokens / slots.
    "slots": env_int("LOCAL_MODEL_SLOTS", 2),
    "context_tokens": env_int("LOCAL_MODEL_CONTEXT_TOKENS", 16384),
    "threads": env_int("LOCAL_MODEL_THREADS", os.cpu_count() or 2),
}

# Provider pools: provider + account/project + model, and their capacity limits.
# EXTRACTION_PROVIDER=openai with OPENAI_BASE_URL / EXTRACTION_MODEL / OPENAI_API_KEY points the
# default pool at any OpenAI-compatible endpoint; EXTRACTION_PROVIDER=local at the local model
# server; the default is the built-in rule extractor.
if EXTRACTION_PROVIDER == "local":
    # One server's capacity: as many calls in flight as it has slots; a minute's tokens never
    # bind (no quota), the slots and each slot's context do.
    _default_pool: dict[str, Any] = {
        "provider": "openai",
        "provider_name": "llama.cpp",
        "model": LOCAL_MODEL["weights"],
        "base_url": f"http://{LOCAL_MODEL['host']}:{LOCAL_MODEL['port']}/v1",
        "api_key_env": "LOCAL_MODEL_API_KEY",
        "token_limit_parameter": "max_tokens",
        "structured_output": "json_schema",
        # Each field's text as printed; values and spans are read by code (quoted_answer.py).
        "answer_format": env("LOCAL_MODEL_ANSWER_FORMAT", "quotes"),
        "sampling": {"temperature": 0, "repeat_penalty": 1.0},
        "max_output_tokens": env_int("PROVIDER_MAX_OUTPUT_TOKENS", 3000),
        "requests_per_minute": env_int("POOL_REQUESTS_PER_MINUTE", 600),
        "tokens_per_minute": env_int("POOL_TOKENS_PER_MINUTE", 10_000_000),
        "max_in_flight": env_int("POOL_MAX_IN_FLIGHT", LOCAL_MODEL["slots"]),
        "reserved_tokens": env_int("POOL_RESERVED_TOKENS", 4000),
        "budget": "requests",
        "kv_cache_tokens": 0,
        # Where its /metrics, /slots and /tokenize are (extraction/providers/local/telemetry.py).
        "local_server": f"http://{LOCAL_MODEL['host']}:{LOCAL_MODEL['port']}",
    }
else:
    _default_pool = {
        "provider": EXTRACTION_PROVIDER,
        "model": env("EXTRACTION_MODEL", "builtin-rules-1"),
        "base_url": env("OPENAI_BASE_URL", "http://127.0.0.1:8100/v1"),
        "api_key_env": "OPENAI_API_KEY",
        "token_limit_parameter": env("OPENAI_TOKEN_LIMIT_PARAMETER", "max_completion_tokens"),
        # openai_strict | json_schema | json_object_schema (extraction/providers/structured_output.py)
        "structured_output": env("OPENAI_STRUCTURED_OUTPUT", "openai_strict"),
        "max_output_tokens": env_int("PROVIDER_MAX_OUTPUT_TOKENS", 2000),
        # The shared budget of this pool (BP-2); the admin's ProviderPool row overrides these.
        "requests_per_minute": env_int("POOL_REQUESTS_PER_MINUTE", 600),
        "tokens_per_minute": env_int("POOL_TOKENS_PER_MINUTE", 600_000),
        "max_in_flight": env_int("POOL_MAX_IN_FLIGHT", 30),
        "reserved_tokens": env_int("POOL_RESERVED_TOKENS", 6000),
        # requests | kv_tokens | unlimited (extraction.models.ProviderPool.Budget)
        "budget": env("POOL_BUDGET", "requests"),
        "kv_cache_tokens": env_int("POOL_KV_CACHE_TOKENS", 0),
    }
PROVIDER_POOLS: dict[str, dict[str, Any]] = {"default": _default_pool}
# --- Capacity limiter (extraction/capacity/limiter.py) ------------------------------------------------
# When Redis is unreachable: "closed" makes no model calls; "local" lets each process spend
# CAPACITY_LOCAL_SHARE of every pool limit (set it to about 1 / number of worker processes).
CAPACITY_FAIL_MODE = env("CAPACITY_FAIL_MODE", "closed")
CAPACITY_LOCAL_SHARE = env_float("CAPACITY_LOCAL_SHARE", 0.25)
# An in-flight permit outlives the longest attempt; a killed worker's permit expires after it.
CAPACITY_PERMIT_TTL_SECONDS = env_float("CAPACITY_PERMIT_TTL_SECONDS", max(60.0, ATTEMPT_TIMEOUT_SECONDS + 15))
# After a 429 cooldown, limits ramp from 10 % to 100 % over this long.
CAPACITY_RAMP_SECONDS = env_float("CAPACITY_RAMP_SECONDS", 10.0)
# A 429 without a usable Retry-After cools the pool down this long.
CAPACITY_DEFAULT_COOLDOWN_SECONDS = env_float("CAPACITY_DEFAULT_COOLDOWN_SECONDS", 5.0)
CAPACITY_IN_FLIGHT_RETRY_SECONDS = env_float("CAPACITY_IN_FLIGHT_RETRY_SECONDS", 0.5)
CAPACITY_UNAVAILABLE_RETRY_SECONDS = env_float("CAPACITY_UNAVAILABLE_RETRY_SECONDS", 5.0)
# A worker slot (one Celery task) runs jobs for at most this long before yielding its thread.
WORKER_SLOT_SECONDS = env_float("WORKER_SLOT_SECONDS", 60.0)
# The most completions an llm-worker process writes in one statement (execution.completions):
# under load, what queued while the previous batch was written; 1 writes each alone.
WORKER_COMPLETION_BATCH = env_int("WORKER_COMPLETION_BATCH", 64)
# The most jobs an llm-worker process claims in one statement for slots claiming at once
# (execution.claims); 1 claims for each alone.
WORKER_CLAIM_BATCH = env_int("WORKER_CLAIM_BATCH", 64)
# How a runnable job reaches an llm worker. notify: the dispatcher of each llm-worker process
# claims for its free slots, woken by PostgreSQL's NOTIFY on runnable_jobs (sent in the take-in's
# transaction) and polling (execution.dispatcher). broker: a wake-up message per job on the llm
# queue, run by one of Celery's slots. The ingress, scheduler and llm workers must agree.
WORKER_WAKE_UPS = env("WORKER_WAKE_UPS", "notify")
if WORKER_WAKE_UPS not in ("notify", "broker"):
    raise ImproperlyConfigured(f"WORKER_WAKE_UPS must be notify or broker, not {WORKER_WAKE_UPS!r}")
# The dispatcher looks for work at least this often (retries coming due, jobs reaped or handed
# back, a notification lost while its LISTEN connection was down).
WORKER_DISPATCH_POLL_SECONDS = env_float("WORKER_DISPATCH_POLL_SECONDS", 1.0)
# The most requested messages an ingress process takes in with one statement (execution.take_ins):
# what arrived while the previous batch was written.
INGRESS_TAKE_IN_BATCH = env_int("INGRESS_TAKE_IN_BATCH", 64)
# SIGTERM to a Celery worker: it claims nothing more and ends within this long. The llm worker
# lets model calls answer until shortly before it ends and hands the rest back at once under a
# new fence (runtime.WorkerRuntime.begin_shutdown); by default every call fits (its timeout plus the commit
# margin). An orchestrator's grace period (terminationGracePeriodSeconds) must exceed it.
WORKER_SHUTDOWN_GRACE_SECONDS = float(
    env("WORKER_SHUTDOWN_GRACE_SECONDS", "") or ATTEMPT_TIMEOUT_SECONDS + COMMIT_MARGIN_SECONDS + 10
)

# Worker processes set POSTGRES_POOL_MAX_SIZE: their threads share a small psycopg pool
# instead of one connection each (pooling requires CONN_MAX_AGE=0).
if env("POSTGRES_POOL_MAX_SIZE"):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A checkout is checked (psycopg_pool's check_connection: an empty query) when the
    # connection sat in the pool longer than POSTGRES_POOL_CHECK_IDLE_SECONDS, so after a
    # database restart or failover a pooled connection that died with the old server is
    # replaced before a step uses it, instead of failing that step; one used a moment ago is
    # not asked again (config/pool_checks.py, set by config.postgres_backend).
    # POSTGRES_POOL_CHECK=0 checks none. Django's CONN_HEALTH_CHECKS (a check at every
    # checkout) stays off.
    from config.pool_checks import check_when_idle, stamp_returned

    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
    if env_bool("POSTGRES_POOL_CHECK", True):
        DATABASES["default"]["POOL_CHECK"] = check_when_idle(env_float("POSTGRES_POOL_CHECK_IDLE_SECONDS", 1.0))
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": env_int("POSTGRES_POOL_MAX_SIZE", 20),
        "timeout": 30,
        "reset": stamp_returned,
    }
    # psycopg_pool tries a failed connection again after 1, 2, 4, 8 and 16 s (AttemptWithBackoff)
    # and makes no other one meanwhile, so a primary back 3 s after a failover could leave every
    # step of a worker waiting 30 s for a connection (seen in tests/cluster/
    # test_postgres_failover.py). It tries every second instead (with its jitter), for as long
    # as its reconnect_timeout (5 minutes). Django builds the pool, so the class is set here.
    from psycopg_pool.base import AttemptWithBackoff

    AttemptWithBackoff.DELAY_BACKOFF = 1.0
SCHEDULER_INTERVAL_SECONDS = env_float("SCHEDULER_INTERVAL_SECONDS", 1.0)
SCHEDULER_WAKE_CAP = env_int("SCHEDULER_WAKE_CAP", 500)
# Sweeps of other apps that the durable scheduler runs in each round (a callable taking the
# broker connection): webhook deliveries are driven by their rows too (reap leases, hint due ones).
SCHEDULER_APP_SWEEPS = ["delivery.scheduling.schedule_due_deliveries", "extraction.operations.audit.audit_sweep"]
# What /metrics reports: each app's collectors, each called with a cursor in the scrape's transaction.
# (The in-process counters and histograms are config/instruments.py's; PROMETHEUS_MULTIPROC_DIR,
# read by prometheus_client itself, makes a scrape sum every process of the host.)
METRICS_COLLECTORS = [
    "extraction.execution.metrics.collect",
    "extraction.outbox.metrics.collect",
    "extraction.capacity.metrics.collect",
    "extraction.review.metrics.collect",
    "delivery.metrics.collect",
    "config.autoscaling.collect",
]
# The autoscaling signal (config/autoscaling.py): each app's demand per pool, read in the
# scrape's transaction like the collectors above; /metrics' extraction_autoscale_replicas.
AUTOSCALE_DEMANDS = ["extraction.capacity.autoscale.llm_worker_demands", "delivery.autoscale.delivery_worker_demands"]
# Arrivals are counted over this window (Little's law's arrival rate).
AUTOSCALE_WINDOW_SECONDS = env_float("AUTOSCALE_WINDOW_SECONDS", 60.0)
# Concurrent calls one replica carries: the Procfile's --concurrency of each worker process.
LLM_WORKER_CONCURRENCY = env_int("LLM_WORKER_CONCURRENCY", 300)
DELIVERY_WORKER_CONCURRENCY = env_int("DELIVERY_WORKER_CONCURRENCY", 16)
# Collectors that read another server over the network; called after the scrape's transaction.
METRICS_SERVICE_COLLECTORS = ["config.broker_metrics.collect", "extraction.providers.local.metrics.collect"]
# A count in /metrics is exact up to this many rows, then the planner's estimate.
METRICS_EXACT_COUNT_CAP = env_int("METRICS_EXACT_COUNT_CAP", 100_000)

# --- Operations: the SLO report and the self-audit (extraction/operations/) -------------------
# OPS-4: a REVIEW_REQUIRED job should be decided by a reviewer within this long of entering review.
REVIEW_TURNAROUND_TARGET_SECONDS = env_int("REVIEW_TURNAROUND_TARGET_SECONDS", 4 * 3600)
# The document classes the completion SLO promises, by the media type intake sniffed (all of
# intake's types by default); jobs of other classes are reported apart, outside the denominator.
SLO_DOCUMENT_CONTENT_TYPES = tuple(
    (
        env(
            "SLO_DOCUMENT_CONTENT_TYPES",
            "application/pdf,image/png,image/jpeg,image/tiff,application/xml,text/plain",
        )
        or ""
    ).split(",")
)
# Sections other apps add to manage.py slo_report, each called with a cursor in the report's
# transaction (where the temporary table slo_window_jobs holds the window's jobs).
SLO_REPORT_SECTIONS = ["delivery.operations.erp_delivery_latency"]
# The self-audit's checks (manage.py audit, and the scheduler's audit sweep), in this order.
AUDIT_CHECKS = [
    "extraction.operations.audit.unpublished_outbox_events",
    "extraction.operations.audit.running_without_live_lease",
    "extraction.operations.audit.leaked_limiter_permits",
    "delivery.operations.overdue_deliveries",
    "extraction.operations.audit.reviews_past_their_slo",
]
# The scheduler runs the audit at most this often (per scheduler process).
AUDIT_INTERVAL_SECONDS = env_float("AUDIT_INTERVAL_SECONDS", 60.0)
# An outbox event still unpublished this long after its commit is a finding (the relay's lag bound).
AUDIT_OUTBOX_LAG_SECONDS = env_float("AUDIT_OUTBOX_LAG_SECONDS", 60.0)
# A sendable webhook delivery still pending this long past its due time is a finding.
AUDIT_DELIVERY_LAG_SECONDS = env_float("AUDIT_DELIVERY_LAG_SECONDS", 300.0)
# Rows one check counts and repairs per run, and ids it names as examples.
AUDIT_LIMIT = env_int("AUDIT_LIMIT", 500)
AUDIT_EXAMPLES = env_int("AUDIT_EXAMPLES", 5)

# Test-only crash points (extraction/execution/faults.py); empty in every real deployment.
FAULT_INJECTION_POINTS = frozenset(p for p in (env("FAULT_INJECTION", "") or "").split(",") if p)
TOKEN_ESTIMATE_CHARS_PER_TOKEN = env_float("TOKEN_ESTIMATE_CHARS_PER_TOKEN", 4.0)
# Fair claiming (BP-4): an interactive job counts as if it had been waiting this much longer
# than a batch job; a batch job that has waited longer than this beats a fresh interactive one.
INTERACTIVE_PRIORITY_BOOST_SECONDS = env_float("INTERACTIVE_PRIORITY_BOOST_SECONDS", 300.0)

# --- Delivery to the ERP (delivery/) ----------------------------------------------------------
# Development switch for the local demo ERP on 127.0.0.1: nothing else relaxes the egress rule.
EGRESS_ALLOW_LOOPBACK = env_bool("EGRESS_ALLOW_LOOPBACK", False)
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 15.0)
WEBHOOK_MAX_RESPONSE_BYTES = env_int("WEBHOOK_MAX_RESPONSE_BYTES", 64 * 1024)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 15)
WEBHOOK_RETRY_BASE_SECONDS = env_float("WEBHOOK_RETRY_BASE_SECONDS", 5.0)
WEBHOOK_RETRY_CAP_SECONDS = env_float("WEBHOOK_RETRY_CAP_SECONDS", 3600.0)
WEBHOOK_SECRET_ROTATION_WINDOW_SECONDS = env_int("WEBHOOK_SECRET_ROTATION_WINDOW_SECONDS", 24 * 3600)
WEBHOOK_CIRCUIT_FAILURES = env_int("WEBHOOK_CIRCUIT_FAILURES", 10)
WEBHOOK_CIRCUIT_OPEN_SECONDS = env_float("WEBHOOK_CIRCUIT_OPEN_SECONDS", 60.0)
WEBHOOK_AUTO_DISABLE_DAYS = env_float("WEBHOOK_AUTO_DISABLE_DAYS", 5.0)
# Key for the endpoint signing secrets at rest; derived from SECRET_KEY when unset (then
# rotating SECRET_KEY makes stored secrets unreadable: set this in production).
WEBHOOK_SECRETS_KEY = env("WEBHOOK_SECRETS_KEY", "")
WEBHOOK_ALLOWED_PORTS = (443, 8443)

# --- Live notifications (Channels over Redis) ---------------------------------------------------


def _channels_redis_host(url: str) -> dict[str, Any]:
    """The Channels layer's Redis: ``url``, or its database and password on the Sentinels' master.

    No socket timeout on these connections (said here, not left to redis-py's default, which
    8.x changed to 5 s): any socket timeout makes redis-py wrap writes in asyncio.wait_for,
    which on Python 3.11 can swallow a consumer's cancellation and leave its receive looping
    for ever."""
    if not REDIS_SENTINELS:
        return {"address": url, "socket_timeout": None}
    parsed = urlsplit(url)
    return {
        "master_name": REDIS_SENTINEL_MASTER,
        "sentinels": REDIS_SENTINELS,
        "sentinel_kwargs": {
            "socket_connect_timeout": 2,
            **({"password": REDIS_SENTINEL_PASSWORD} if REDIS_SENTINEL_PASSWORD else {}),
        },
        "db": int(parsed.path.lstrip("/") or 0),
        "password": parsed.password,
        "socket_timeout": None,
    }


CHANNEL_LAYERS = {
    "default": {
        # Pub/sub: one Redis message per notice per daphne process, fanned out in-process to
        # its sockets (the list-based layer pushes and pops one message per socket). A notice
        # published while a process's subscription is reconnecting to Redis, or the last ones
        # a failed-over master had not replicated, are lost there; open streams re-read the
        # event log every NOTIFY_CATCHUP_SECONDS for such gaps.
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [_channels_redis_host(env("CHANNELS_REDIS_URL", "redis://127.0.0.1:6379/2"))]},
    }
}
# How often an open WebSocket re-checks that its token or membership is still valid (NTF-2).
NOTIFY_REAUTH_SECONDS = env_float("NOTIFY_REAUTH_SECONDS", 5.0)
# How often an open stream re-reads the event log for notices the channel layer lost (at the
# next re-check after this long): the bound on how late a lost notice arrives. Each round is
# two queries per socket, so it is kept well above the re-check interval.
NOTIFY_CATCHUP_SECONDS = env_float("NOTIFY_CATCHUP_SECONDS", 30.0)
NOTIFY_REPLAY_LIMIT = env_int("NOTIFY_REPLAY_LIMIT", 500)
NOTIFY_SNAPSHOT_LIMIT = env_int("NOTIFY_SNAPSHOT_LIMIT", 500)
# The socket browsers open: "" = ws(s)://<page host>:NOTIFY_WS_PORT/ws/jobs/ (the ws process's port).
NOTIFY_WS_URL = env("NOTIFY_WS_URL", "")
NOTIFY_WS_PORT = env_int("WS_PORT", 8001)
NOTIFY_TICKET_SECONDS = 30  # a WebSocket ticket's life: minted just before connecting
NOTIFY_REVOCATION_POLL_SECONDS = 1.0  # how often the notifier looks for revocations to push
NOTIFY_POLL_SECONDS = 1.0  # the notifier's fallback poll when no NOTIFY arrives

# /metrics (Prometheus text format) answers loopback clients, or anyone with this bearer token.
METRICS_TOKEN = env("METRICS_TOKEN", "")
# The liveness and metrics port of the processes that serve no HTTP of their own (relay,
# scheduler, notifier, Kafka consumers, Celery workers; config/probes.py): 0 = none. An
# orchestrator gives each pod its own; on one host the web process's /metrics sums them all.
PROBE_PORT = env_int("PROBE_PORT", 0)
PROBE_ADDRESS = env("PROBE_ADDRESS", "0.0.0.0")
