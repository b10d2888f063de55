"""Settings, all from environment variables.

Defaults match the services on a development machine of this project (PostgreSQL, RabbitMQ and
Redis on 127.0.0.1). PostgreSQL is the only supported database: acceptance relies on
``INSERT ... ON CONFLICT``, workers on ``FOR UPDATE SKIP LOCKED`` and partial indexes.
"""
from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


DEBUG = env_bool("DJANGO_DEBUG", False)
# DJANGO_DEVELOPMENT=1 (set by bin/run and bin/test) allows the well-known development key.
DEVELOPMENT = env_bool("DJANGO_DEVELOPMENT", False)
SECRET_KEY = env("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not (DEVELOPMENT or DEBUG):
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is required outside development (set DJANGO_DEVELOPMENT=1 for a local run)."
        )
    SECRET_KEY = "development-only-insecure-key"

ALLOWED_HOSTS = [h for h in (env("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver") or "").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in (env("DJANGO_CSRF_TRUSTED_ORIGINS", "") or "").split(",") if o]

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
    "channels",
    "accounts",
    "extraction",
    "delivery",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": env("POSTGRES_DB", "extraction"),
        "USER": env("POSTGRES_USER", "postgres"),
        "PASSWORD": env("POSTGRES_PASSWORD", ""),
        "HOST": env("POSTGRES_HOST", "127.0.0.1"),
        "PORT": env("POSTGRES_PORT", "5432"),
        # Persistent connections: one per web/worker thread, checked before reuse.
        "CONN_MAX_AGE": env_int("POSTGRES_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            # A request or worker step never needs long; a stuck one must not pin the
            # MVCC horizon of the hot queue tables.
            "options": "-c idle_in_transaction_session_timeout=30000 -c statement_timeout=30000",
        },
        "TEST": {"NAME": env("POSTGRES_TEST_DB", "test_extraction")},
    }
}

REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2},
    }
}

BROKER_URL = env("BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//")

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
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_JSON_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

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
}

# --- Jobs -------------------------------------------------------------------------------
JOB_DEFAULT_DEADLINE_SECONDS = env_int("JOB_DEFAULT_DEADLINE_SECONDS", 24 * 3600)
JOB_MIN_DEADLINE_SECONDS = env_int("JOB_MIN_DEADLINE_SECONDS", 60)
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 5)
# Model policies a job may name. reserved_tokens is the conservative per-request token
# reservation (the article's 6,000), price is per 1,000 tokens in micro-units of the tenant's
# spend currency; both feed admission (BP-1) before any real usage is known.
MODEL_POLICIES = {
    "default": {"provider_pool": "default", "reserved_tokens": 6000, "price_per_1k_tokens_micros": 2000},
}

# --- Admission (BP-1): per-tenant defaults, editable per tenant in the admin ------------------
TENANT_DEFAULT_MAX_PENDING_JOBS = env_int("TENANT_DEFAULT_MAX_PENDING_JOBS", 20_000)
TENANT_DEFAULT_MAX_PENDING_BYTES = env_int("TENANT_DEFAULT_MAX_PENDING_BYTES", 10 * 1024**3)
TENANT_DEFAULT_MAX_RESERVED_TOKENS = env_int("TENANT_DEFAULT_MAX_RESERVED_TOKENS", 200_000_000)
TENANT_DEFAULT_DAILY_SPEND_MICROS = env_int("TENANT_DEFAULT_DAILY_SPEND_MICROS", 500_000_000)
# Global accept capacity: past this many pending jobs across all tenants, new work is 503.
GLOBAL_MAX_PENDING_JOBS = env_int("GLOBAL_MAX_PENDING_JOBS", 1_000_000)
# How long a web process trusts its last reading of the global backlog (seconds).
GLOBAL_BACKLOG_CACHE_SECONDS = float(env("GLOBAL_BACKLOG_CACHE_SECONDS", "1.0") or 1.0)
ADMISSION_RETRY_AFTER_SECONDS = env_int("ADMISSION_RETRY_AFTER_SECONDS", 30)

# API tokens: last_used_at is written at most this often per token, so that a busy client does
# not turn every authenticated request into a write.
API_TOKEN_LAST_USED_RESOLUTION_SECONDS = env_int("API_TOKEN_LAST_USED_RESOLUTION_SECONDS", 60)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "config.logging.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# The accept benchmark's floor views (bench/floor_urls.py); never on in production.
BENCH_FLOOR_VIEWS = env_bool("BENCH_FLOOR_VIEWS", False)
