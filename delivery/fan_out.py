"""Fan-out (DLV-1): an outbox event becomes one delivery per subscribed endpoint; a new or
re-verified endpoint gets a signed verification event and its one delivery.

The event's webhook body is serialized once, from PostgreSQL (the message is not authority),
into ``webhook_events``; each delivery has the deterministic id uuid5(event, endpoint), so a
repeated or concurrent fan-out creates nothing twice. The ids created are returned for the
dispatch hints published after COMMIT (:func:`delivery.scheduling.publish_dispatch_hints`);
:mod:`delivery.dispatch` sends them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from config import tracing
from config.db import database_now
from config.sql import load_statements
from delivery import signing
from delivery.models import (
    VERIFICATION_TYPE,
    WEBHOOK_TYPES,
    EndpointStatus,
    WebhookEndpoint,
    WebhookEvent,
    delivery_id_for,
)
from extraction.api.serializers import result_body, split_parts
from extraction.events import WEBHOOK_JOB_STATES, WebhookType
from extraction.models import ExtractionBatch, ExtractionJob, OutboxEvent

SQL = load_statements(Path(__file__).with_suffix(".sql"))


class FanOutResult(StrEnum):
    FANNED_OUT = "fanned_out"
    UNKNOWN_EVENT = "unknown_event"  # no outbox event has that id
    # A type tenants do not receive, or a job's event that names no job.
    NOT_A_WEBHOOK_EVENT = "not_a_webhook_event"


@dataclass(frozen=True)
class FanOut:
    outcome: FanOutResult
    created: tuple[uuid.UUID, ...] = ()


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def event_body(outbox: OutboxEvent, webhook_type: str) -> dict[str, Any]:
    """The webhook body of an outbox event, from PostgreSQL (the message is not authority).

    Only a completed event carries invoice data (the result's output and validation); a
    review-required or failed event says which job and which state, nothing more; a split
    event names its parts. A batch's completion names the batch, not a job."""
    if webhook_type == WebhookType.BATCH_COMPLETED:
        return batch_event_body(outbox)
    if outbox.job_id is None:
        raise ValueError(f"outbox event {outbox.event_id} names no job: it has no webhook body")
    job = ExtractionJob.objects.select_related("result").get(pk=outbox.job_id)
    data: dict[str, Any] = {
        "event_id": str(outbox.event_id),
        "job_id": str(job.pk),
        "idempotency_key": job.idempotency_key,
        "state": WEBHOOK_JOB_STATES[webhook_type].value,
        "state_version": int(outbox.payload["state_version"]),
        "schema": job.schema,
        "document": {"id": str(job.document_id), "version": str(job.document_version)},
    }
    if webhook_type == WebhookType.COMPLETED:
        data["result"] = result_body(job)
    elif webhook_type == WebhookType.FAILED:
        data["error"] = {"class": outbox.payload.get("error_class") or job.error_class}
    elif webhook_type == WebhookType.SPLIT:
        data["parts"] = [{"job_id": part["job_id"], "pages": part["pages"]} for part in split_parts(job)]
    return {"type": webhook_type, "timestamp": _iso(outbox.created_at), "data": data}


def batch_event_body(outbox: OutboxEvent) -> dict[str, Any]:
    """``extraction.batch_completed.v1``: the batch as its row says, with the counts by state
    its completion wrote into the event (the jobs' states when it completed)."""
    batch = ExtractionBatch.objects.get(pk=outbox.payload["batch_id"], tenant_id=outbox.tenant_id)
    if batch.completed_at is None:
        raise ValueError(f"outbox event {outbox.event_id} names batch {batch.pk}, which is not completed")
    data: dict[str, Any] = {
        "event_id": str(outbox.event_id),
        "batch_id": str(batch.pk),
        "idempotency_key": batch.idempotency_key,
        "file_count": batch.file_count,
        "counts": dict(outbox.payload["counts"]),
        "completed_at": _iso(batch.completed_at),
        "links": {"self": f"/api/v1/extraction-batches/{batch.pk}"},
    }
    return {"type": WebhookType.BATCH_COMPLETED, "timestamp": _iso(outbox.created_at), "data": data}


def fan_out_event(event_id: uuid.UUID) -> FanOut:
    """One delivery per subscribed endpoint of the event's tenant, idempotently.

    1. Reload the outbox event by id; unknown → ``UNKNOWN_EVENT``.
    2. Serialize its body once into ``webhook_events`` (ON CONFLICT DO NOTHING: a second
       fan-out reuses the first one's bytes).
    3. Insert a delivery per endpoint subscribed to the type and not disabled, with the
       deterministic id uuid5(event, endpoint) (ON CONFLICT DO NOTHING).
    Returns the ids created now, for dispatch hints after COMMIT.

    Traced as a child of the consumer's span (the relay's message carried the job's trace).
    """
    with tracing.step_span("delivery.fan_out", attributes={"extraction.event_id": str(event_id)}) as span:
        fan_out = _fan_out(event_id)
        span.set_attributes({"delivery.fan_out.outcome": fan_out.outcome, "delivery.created": len(fan_out.created)})
    return fan_out


def _fan_out(event_id: uuid.UUID) -> FanOut:
    with transaction.atomic():
        outbox = OutboxEvent.objects.filter(pk=event_id).first()
        if outbox is None:
            return FanOut(FanOutResult.UNKNOWN_EVENT)
        webhook_type = WEBHOOK_TYPES.get(outbox.event_type)
        if webhook_type is None or (outbox.job_id is None and webhook_type != WebhookType.BATCH_COMPLETED):
            return FanOut(FanOutResult.NOT_A_WEBHOOK_EVENT)
        if outbox.job_id is not None:
            tracing.annotate({"extraction.job_id": str(outbox.job_id)})
        else:
            tracing.annotate({"extraction.batch_id": str(outbox.payload.get("batch_id"))})
        with connection.cursor() as cursor:
            if not WebhookEvent.objects.filter(pk=event_id).exists():
                body = signing.serialize_body(event_body(outbox, webhook_type)).decode()
                cursor.execute(
                    SQL["insert_webhook_event"],
                    {
                        "event": event_id,
                        "tenant": outbox.tenant_id,
                        "type": webhook_type,
                        "job": outbox.job_id,
                        "body": body,
                    },
                )
            created = insert_deliveries(
                cursor, event_id=event_id, tenant_id=outbox.tenant_id, webhook_type=webhook_type
            )
    return FanOut(FanOutResult.FANNED_OUT, tuple(created))


def insert_deliveries(
    cursor: CursorWrapper,
    *,
    event_id: uuid.UUID,
    tenant_id: uuid.UUID,
    webhook_type: str,
    endpoint_ids: Sequence[uuid.UUID] | None = None,
    verification: bool = False,
) -> list[uuid.UUID]:
    """One PENDING delivery of the event, due now, per endpoint (by default the tenant's
    endpoints subscribed to the type and not disabled), under its deterministic id; a pair
    that has one already gets none. On the caller's cursor, in its transaction; returns the
    ids created."""
    if endpoint_ids is None:
        subscribed = WebhookEndpoint.objects.filter(tenant_id=tenant_id, event_types__contains=[webhook_type])
        endpoint_ids = list(subscribed.exclude(status=EndpointStatus.DISABLED).values_list("id", flat=True))
    created = []
    for endpoint_id in endpoint_ids:
        cursor.execute(
            SQL["insert_delivery"],
            {
                "id": delivery_id_for(event_id, endpoint_id),
                "event": event_id,
                "endpoint": endpoint_id,
                "tenant": tenant_id,
                "type": webhook_type,
                "verification": verification,
                "max_attempts": settings.WEBHOOK_MAX_ATTEMPTS,
            },
        )
        row = cursor.fetchone()
        if row is not None:
            created.append(row[0])
    return created


def create_verification_delivery(*, endpoint_id: uuid.UUID, tenant_id: uuid.UUID) -> uuid.UUID:
    """A signed ``webhook.verification.v1`` event for one endpoint; its 2xx activates it.
    Call inside the transaction that changes the endpoint."""
    event_id = uuid.uuid4()
    body = {
        "type": VERIFICATION_TYPE,
        "timestamp": None,
        "data": {"endpoint_id": str(endpoint_id), "challenge": uuid.uuid4().hex},
    }
    body["timestamp"] = _iso(database_now())
    WebhookEvent.objects.create(
        event_id=event_id, tenant_id=tenant_id, event_type=VERIFICATION_TYPE, body=signing.serialize_body(body).decode()
    )
    with connection.cursor() as cursor:
        (delivery_id,) = insert_deliveries(
            cursor,
            event_id=event_id,
            tenant_id=tenant_id,
            webhook_type=VERIFICATION_TYPE,
            endpoint_ids=[endpoint_id],
            verification=True,
        )
    return delivery_id
