"""Durable acceptance of an extraction request (ACC-1..5, BP-1).

``accept_job`` is the whole write path of ``POST /api/v1/extraction-jobs``: one transaction
that inserts the job (or finds the one this idempotency key already made), charges the
tenant's admission budget, and writes the ``extraction.requested.v1`` outbox event.
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from accounts.models import Tenant

from .models import Document, JobState

SCHEMAS = ("invoice.v1",)
REQUESTED_EVENT = "extraction.requested.v1"


@dataclass(frozen=True)
class JobRequest:
    """A normalized request: defaults applied, so equal requests hash equally (ACC-3)."""

    document: Document
    schema: str
    model_policy: str
    options: dict[str, Any]
    priority_class: str
    deadline_seconds: int

    def request_hash(self) -> str:
        canonical = {
            "document_id": str(self.document.pk),
            "document_version": str(self.document.version),
            "schema": self.schema,
            "model_policy": self.model_policy,
            "priority_class": self.priority_class,
            "deadline_seconds": self.deadline_seconds,
            "options": self.options,
        }
        return hashlib.sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Accepted:
    job_id: uuid.UUID
    state: str
    replayed: bool


class IdempotencyConflict(Exception):
    """The key was used before for a different request (ACC-2: 409)."""

    def __init__(self, job_id: uuid.UUID) -> None:
        super().__init__(f"Idempotency-Key already used for job {job_id} with a different request.")
        self.job_id = job_id


class TenantLimitExceeded(Exception):
    """A per-tenant admission limit would be passed (BP-1: 429)."""

    def __init__(self, limit: str, current: int, maximum: int) -> None:
        super().__init__(f"Tenant limit '{limit}' reached ({current} of {maximum}).")
        self.limit, self.current, self.maximum = limit, current, maximum


class AcceptCapacityExhausted(Exception):
    """The durable backlog of all tenants is above the configured bound (BP-1: 503)."""


def accept_job(*, tenant: Tenant, idempotency_key: str, request: JobRequest) -> Accepted:
    """Accept a job durably, exactly once per (tenant, idempotency key).

    1. Refuse new work with 503 when the global pending backlog is above its bound
       (a replay of an existing key is still answered).
    2. In one transaction: ``INSERT … ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
       RETURNING``. A concurrent request with the same key waits here for the first to commit.
    3. Not inserted: load the existing job; same request hash → replay, else 409.
    4. Inserted: charge the tenant's usage row with a guarded UPDATE (0 rows = a limit is hit →
       roll everything back, 429), then write the outbox event and the first job event.
    """
    request_hash = request.request_hash()
    policy = settings.MODEL_POLICIES[request.model_policy]
    tokens = int(policy["reserved_tokens"])
    price_per_1k = int(policy["price_per_1k_tokens_micros"])

    if _global_backlog() >= settings.GLOBAL_MAX_PENDING_JOBS:
        existing = _existing(tenant, idempotency_key)
        if existing is None:
            raise AcceptCapacityExhausted()
        return _replay(existing, request_hash)

    job_id = uuid.uuid4()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO extraction_jobs (
                id, tenant_id, document_id, document_version, idempotency_key, request_hash,
                schema, model_policy, options, priority_class, state, state_version, attempt,
                max_attempts, fence, lease_owner, available_at, deadline_at, estimated_tokens,
                byte_size, error_class, error_detail, created_at, updated_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1, 0, %s, 0, '', now(),
                    now() + make_interval(secs => %s), %s, %s, '', '', now(), now())
            ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
            RETURNING id
            """,
            [
                job_id, tenant.pk, request.document.pk, request.document.version, idempotency_key,
                request_hash, request.schema, request.model_policy, json.dumps(request.options),
                request.priority_class, JobState.ACCEPTED, settings.JOB_MAX_ATTEMPTS,
                request.deadline_seconds, tokens, request.document.size,
            ],
        )
        if cursor.fetchone() is None:
            existing = _existing(tenant, idempotency_key)
            assert existing is not None  # the conflicting row is committed: we waited for it
            return _replay(existing, request_hash)

        _charge_tenant(cursor, tenant, byte_size=request.document.size, tokens=tokens, price=price_per_1k)
        cursor.execute(
            """
            INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                                       publish_attempts, last_error)
            VALUES (%s, %s, %s, %s, %s, now(), 0, '')
            """,
            [uuid.uuid4(), job_id, tenant.pk, REQUESTED_EVENT,
             json.dumps({"job_id": str(job_id), "event_version": 1, "state_version": 1})],
        )
        cursor.execute(
            """
            INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail, created_at)
            VALUES (%s, %s, 1, '', %s, 'accepted', '{}', now())
            """,
            [job_id, tenant.pk, JobState.ACCEPTED],
        )
    return Accepted(job_id=job_id, state=JobState.ACCEPTED, replayed=False)


def _existing(tenant: Tenant, idempotency_key: str) -> tuple[uuid.UUID, str, str] | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, request_hash, state FROM extraction_jobs WHERE tenant_id = %s AND idempotency_key = %s",
            [tenant.pk, idempotency_key],
        )
        return cursor.fetchone()


def _replay(existing: tuple[uuid.UUID, str, str], request_hash: str) -> Accepted:
    job_id, stored_hash, state = existing
    if stored_hash != request_hash:
        raise IdempotencyConflict(job_id)
    return Accepted(job_id=job_id, state=state, replayed=True)


def _charge_tenant(cursor, tenant: Tenant, *, byte_size: int, tokens: int, price: int) -> None:
    """Take one job's share of the tenant's admission budget, or raise TenantLimitExceeded.

    The guarded UPDATE is the check: concurrent accepts serialize on the usage row, so no two
    of them can both take the last slot. The daily spend counts what was spent today plus the
    estimated cost of every pending job (reserved tokens at ``price`` micros per 1,000 tokens).
    """
    cursor.execute(
        """
        UPDATE accounts_tenantusage AS u
           SET pending_jobs = u.pending_jobs + 1,
               pending_bytes = u.pending_bytes + %(bytes)s,
               reserved_tokens = u.reserved_tokens + %(tokens)s,
               spent_today_micros = CASE WHEN u.spend_day = current_date THEN u.spent_today_micros ELSE 0 END,
               spend_day = current_date
          FROM accounts_tenant AS t
         WHERE u.tenant_id = t.id AND t.id = %(tenant)s
           AND u.pending_jobs + 1 <= t.max_pending_jobs
           AND u.pending_bytes + %(bytes)s <= t.max_pending_bytes
           AND u.reserved_tokens + %(tokens)s <= t.max_reserved_tokens
           AND (CASE WHEN u.spend_day = current_date THEN u.spent_today_micros ELSE 0 END)
               + (u.reserved_tokens + %(tokens)s) * %(price)s / 1000 <= t.daily_spend_limit_micros
        RETURNING u.pending_jobs
        """,
        {"tenant": tenant.pk, "bytes": byte_size, "tokens": tokens, "price": price},
    )
    if cursor.fetchone() is not None:
        return
    raise _which_limit(cursor, tenant, byte_size=byte_size, tokens=tokens, price=price)


def _which_limit(cursor, tenant: Tenant, *, byte_size: int, tokens: int, price: int) -> TenantLimitExceeded:
    cursor.execute(
        """
        SELECT u.pending_jobs, t.max_pending_jobs, u.pending_bytes, t.max_pending_bytes,
               u.reserved_tokens, t.max_reserved_tokens,
               (CASE WHEN u.spend_day = current_date THEN u.spent_today_micros ELSE 0 END)
                 + u.reserved_tokens * %(price)s / 1000,
               t.daily_spend_limit_micros
          FROM accounts_tenantusage u JOIN accounts_tenant t ON t.id = u.tenant_id
         WHERE t.id = %(tenant)s
        """,
        {"tenant": tenant.pk, "price": price},
    )
    jobs, max_jobs, pbytes, max_bytes, rtokens, max_tokens, spend, max_spend = cursor.fetchone()
    if jobs + 1 > max_jobs:
        return TenantLimitExceeded("pending_jobs", jobs, max_jobs)
    if pbytes + byte_size > max_bytes:
        return TenantLimitExceeded("pending_bytes", pbytes, max_bytes)
    if rtokens + tokens > max_tokens:
        return TenantLimitExceeded("reserved_tokens", rtokens, max_tokens)
    return TenantLimitExceeded("daily_spend", spend, max_spend)


_backlog_cache: tuple[float, int] = (0.0, 0)


def _global_backlog() -> int:
    """Pending jobs of all tenants, read at most once per GLOBAL_BACKLOG_CACHE_SECONDS per process.

    Inexact by design: the bound is a coarse brake on total intake, and a second-old reading is
    good enough for it while keeping the accept path free of a global aggregate per request.
    """
    global _backlog_cache
    now = time.monotonic()
    read_at, value = _backlog_cache
    if now - read_at < settings.GLOBAL_BACKLOG_CACHE_SECONDS:
        return value
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(pending_jobs), 0) FROM accounts_tenantusage")
        value = int(cursor.fetchone()[0])
    _backlog_cache = (now, value)
    return value
