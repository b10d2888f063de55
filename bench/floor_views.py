"""The accept benchmark's bare-view floor: the two INSERTs of acceptance, and nothing else.

No DRF, no authentication, no validation, no admission: the view writes the job row and its
outbox row in one transaction, for the fixed bench tenant and document, under the same
gunicorn, middleware and database settings as the real API. What the API costs above this view
is the price of DRF, authentication, validation and admission. Mounted only by the
benchmark's own settings (``DJANGO_SETTINGS_MODULE=bench.floor_settings``); the product has no
route to it.

The SQL is shared with the psycopg floor of ``bench/accept_bench.py`` so both floors issue the
same statements with the same parameters.
"""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import dataclass

from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

BENCH_TENANT_SLUG = "bench"
REQUESTED_EVENT = "extraction.requested.v1"
# Not a real hash of anything: the floor skips request normalization on purpose.
FLOOR_REQUEST_HASH = "0" * 64

# Same columns, same ON CONFLICT as extraction.intake.acceptance.accept_job.
INSERT_JOB_SQL = """
    INSERT INTO extraction_jobs (
        id, tenant_id, document_id, document_version, idempotency_key, request_hash,
        schema, model_policy, options, priority_class, state, state_version, attempt,
        max_attempts, fence, lease_owner, available_at, deadline_at, estimated_tokens,
        byte_size, error_class, error_detail, created_at, updated_at)
    VALUES (%s, %s, %s, %s, %s, %s, 'invoice.v1', 'default', '{}', 'batch', 'ACCEPTED', 1, 0,
            5, 0, '', now(), now() + make_interval(secs => 86400), 6000, %s, '', '', now(), now())
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING id
"""

INSERT_OUTBOX_SQL = """
    INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                               publish_attempts, last_error)
    VALUES (%s, %s, %s, %s, %s, now(), 0, '')
"""


@dataclass(frozen=True)
class FloorTarget:
    """The tenant and document every floor job is written for."""

    tenant_id: uuid.UUID
    document_id: uuid.UUID
    document_version: uuid.UUID
    document_size: int


def job_params(target: FloorTarget, *, job_id: uuid.UUID, idempotency_key: str) -> list[object]:
    return [
        job_id,
        target.tenant_id,
        target.document_id,
        target.document_version,
        idempotency_key,
        FLOOR_REQUEST_HASH,
        target.document_size,
    ]


def outbox_params(target: FloorTarget, *, job_id: uuid.UUID) -> list[object]:
    payload = json.dumps({"job_id": str(job_id), "event_version": 1, "state_version": 1})
    return [uuid.uuid4(), job_id, target.tenant_id, REQUESTED_EVENT, payload]


@functools.cache
def _target() -> FloorTarget:
    # Read once per worker process (the warm-up request pays it), so that a measured request
    # issues the two INSERTs and nothing else.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.id, d.id, d.version, d.size
              FROM accounts_tenant t JOIN documents d ON d.tenant_id = t.id
             WHERE t.slug = %s
             ORDER BY d.created_at
             LIMIT 1
            """,
            [BENCH_TENANT_SLUG],
        )
        row = cursor.fetchone()
    if row is None:
        raise LookupError(f"No tenant {BENCH_TENANT_SLUG!r} with a document: run bench/accept_bench.py.")
    return FloorTarget(*row)


@csrf_exempt
@require_POST
def accept_floor(request: HttpRequest) -> HttpResponse:
    """Write a job and its outbox event; 202 when inserted, 200 when the key was seen before."""
    key = request.headers.get("Idempotency-Key")
    if not key:
        return JsonResponse({"detail": "Idempotency-Key required."}, status=400)
    target = _target()
    job_id = uuid.uuid4()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(INSERT_JOB_SQL, job_params(target, job_id=job_id, idempotency_key=key))
        if cursor.fetchone() is None:
            return JsonResponse({"replayed": True}, status=200)
        cursor.execute(INSERT_OUTBOX_SQL, outbox_params(target, job_id=job_id))
    return JsonResponse({"job_id": str(job_id)}, status=202)
