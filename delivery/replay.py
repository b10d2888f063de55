"""Operators' delivery tools: redeliver by filter, replay the events an endpoint never had,
expedite one pending delivery (DLV-1).

A redelivery keeps the delivery ids (the ``webhook-id``), so an ERP that has them answers 2xx
again without a second effect; a replay creates the deliveries under their deterministic ids.
Neither publishes hints: the caller does, after COMMIT
(:func:`delivery.scheduling.publish_dispatch_hints`). The audited operator action over
:func:`redeliver` (API, admin, management command) is :mod:`delivery.redelivery`.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models.functions import Now

from config.sql import load_statements
from delivery.fan_out import insert_deliveries
from delivery.models import Delivery, DeliveryState, WebhookEndpoint, delivery_id_for

SQL = load_statements(Path(__file__).with_suffix(".sql"))
logger = logging.getLogger("delivery")


@dataclass(frozen=True)
class DeliveryFilter:
    tenant_id: uuid.UUID | None = None
    endpoint_id: uuid.UUID | None = None
    states: tuple[str, ...] = (DeliveryState.FAILED,)
    event_type: str | None = None
    job_id: uuid.UUID | None = None
    since: datetime | None = None
    until: datetime | None = None
    delivery_ids: tuple[uuid.UUID, ...] = field(default=())


def _filter_params(f: DeliveryFilter) -> dict[str, Any]:
    """The parameters of redeliver's statements: a filter not given is NULL ("any")."""
    return {
        "states": list(f.states),
        "tenant": f.tenant_id,
        "endpoint": f.endpoint_id,
        "type": f.event_type,
        "job": f.job_id,
        "since": f.since,
        "until": f.until,
        "ids": list(f.delivery_ids) or None,
    }


def redeliver(f: DeliveryFilter, *, dry_run: bool = False) -> list[uuid.UUID]:
    """Put matching FAILED (or DELIVERED, for a replay) deliveries back to PENDING, due now,
    with a fresh attempt budget. Same delivery ids: an ERP that has them answers 2xx again
    without a second effect. SENDING and PENDING rows are never touched."""
    states = tuple(s for s in f.states if s in (DeliveryState.FAILED, DeliveryState.DELIVERED))
    params = _filter_params(DeliveryFilter(**{**f.__dict__, "states": states}))
    with transaction.atomic(), connection.cursor() as cursor:
        if dry_run:
            cursor.execute(SQL["redeliverable_deliveries"], params)
            return [row[0] for row in cursor.fetchall()]
        cursor.execute(
            SQL["redeliver"],
            {**params, "budget": settings.WEBHOOK_MAX_ATTEMPTS},
        )
        ids = [row[0] for row in cursor.fetchall()]
    logger.info("deliveries put back for redelivery", extra={"count": len(ids)})
    return ids


def replay_events(
    *,
    endpoint_id: uuid.UUID,
    since: datetime | None = None,
    until: datetime | None = None,
    event_type: str | None = None,
    dry_run: bool = False,
) -> list[uuid.UUID]:
    """Create the deliveries an endpoint never had (it was registered, or re-enabled, after
    the events) for its tenant's events in a window, of the types it subscribes to."""
    with transaction.atomic(), connection.cursor() as cursor:
        row = WebhookEndpoint.objects.filter(pk=endpoint_id).values_list("tenant_id", "event_types").first()
        if row is None:
            return []
        tenant_id, types = row
        cursor.execute(
            SQL["events_missing_a_delivery"],
            {
                "tenant": tenant_id,
                "types": list(types),
                "since": since,
                "until": until,
                "type": event_type,
                "endpoint": endpoint_id,
            },
        )
        events = cursor.fetchall()
        if dry_run:
            return [delivery_id_for(event_id, endpoint_id) for event_id, _ in events]
        created: list[uuid.UUID] = []
        for event_id, webhook_type in events:
            created += insert_deliveries(
                cursor, event_id=event_id, tenant_id=tenant_id, webhook_type=webhook_type, endpoint_ids=[endpoint_id]
            )
    return created


def expedite(delivery_id: uuid.UUID) -> bool:
    """Make a PENDING delivery due now (an operator or the demo set-up waiting on it)."""
    due_now = Delivery.objects.filter(pk=delivery_id, state=DeliveryState.PENDING)
    return due_now.update(next_attempt_at=Now(), hinted_at=None) == 1
