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
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Sum
from django.db.models.functions import Coalesce

from accounts.models import Tenant, TenantUsage
from config import tracing
from config.sql import load_statements
from extraction.events import EventType
from extraction.models import Document, ExtractionJob, JobState

# invoice.v2 adds EN 16931's allowances, charges, VAT breakdown and references; a job keeps the
# schema it was accepted with (extraction/validation/schema.py).
SCHEMAS = ("invoice.v1", "invoice.v2")

SQL = load_statements(Path(__file__).with_suffix(".sql"))


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


class _NotCharged(Exception):
    pass


def accept_job(*, tenant: Tenant, idempotency_key: str, request: JobRequest) -> Accepted:
    """Accept a job durably, exactly once per (tenant, idempotency key).

    1. Global pending backlog above its bound → 503 for new work (a replay is still answered).
    2. One statement (``accept_job``): insert unless the key exists, charge the budget, write the events.
    3. Not inserted: load the existing job; same request hash → replay, else 409.
    4. Inserted but not charged: roll everything back and name the limit (429).
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
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                SQL["accept_job"],
                {
                    "job": job_id,
                    "tenant": tenant.pk,
                    "document": request.document.pk,
                    "version": request.document.version,
                    "key": idempotency_key,
                    "hash": request_hash,
                    "schema": request.schema,
                    "policy": request.model_policy,
                    "options": json.dumps(request.options),
                    "priority": request.priority_class,
                    "max_attempts": settings.JOB_MAX_ATTEMPTS,
                    "deadline": request.deadline_seconds,
                    "tokens": tokens,
                    "bytes": request.document.size,
                    "price": price_per_1k,
                    "event": uuid.uuid4(),
                    "event_type": EventType.REQUESTED,
                    "payload": json.dumps({"job_id": str(job_id), "event_version": 1, "state_version": 1}),
                    "trace_context": json.dumps(tracing.current_trace_context()),
                },
            )
            inserted, charged = cursor.fetchone()
            if inserted and not charged:
                raise _NotCharged()  # rolls the job row back: a rejected request writes nothing
    except _NotCharged:
        with connection.cursor() as cursor:
            raise _which_limit(
                cursor, tenant, byte_size=request.document.size, tokens=tokens, price=price_per_1k
            ) from None
    if not inserted:
        existing = _existing(tenant, idempotency_key)
        assert existing is not None  # the conflicting row is committed: we waited for it
        accepted = _replay(existing, request_hash)
    else:
        accepted = Accepted(job_id=job_id, state=JobState.ACCEPTED, replayed=False)
    tracing.annotate({"extraction.job_id": str(accepted.job_id), "extraction.replayed": accepted.replayed})
    return accepted


def _existing(tenant: Tenant, idempotency_key: str) -> tuple[uuid.UUID, str, str] | None:
    existing = ExtractionJob.objects.filter(tenant=tenant, idempotency_key=idempotency_key)
    return existing.values_list("id", "request_hash", "state").first()


def _replay(existing: tuple[uuid.UUID, str, str], request_hash: str) -> Accepted:
    job_id, stored_hash, state = existing
    if stored_hash != request_hash:
        raise IdempotencyConflict(job_id)
    return Accepted(job_id=job_id, state=state, replayed=True)


def _which_limit(
    cursor: CursorWrapper, tenant: Tenant, *, byte_size: int, tokens: int, price: int
) -> TenantLimitExceeded:
    cursor.execute(SQL["tenant_limits"], {"tenant": tenant.pk, "price": price})
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
    value = TenantUsage.objects.aggregate(pending=Coalesce(Sum("pending_jobs"), 0))["pending"]
    _backlog_cache = (now, value)
    return value
