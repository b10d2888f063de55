"""Celery tasks on the ``delivery`` queue: thin interfaces over :mod:`delivery.fan_out` and
:mod:`delivery.dispatch`.

``fan_out_event`` takes the relay's completion events (task id = outbox event id), reloads
the event from PostgreSQL and creates the deliveries, then lets Celery ack (acks_late).
``dispatch`` is a hint naming one delivery row: the row decides, so a duplicate hint finds it
claimed and a lost one is re-sent by the scheduler.
"""

from __future__ import annotations

import logging
import uuid

from celery import Task, shared_task
from django.db import DatabaseError, connection

from config.messaging import durable_step, outbox_event, reject_to_dead_letters
from config.outages import Outage
from delivery import dispatch, fan_out, scheduling
from delivery.models import WEBHOOK_TYPES

logger = logging.getLogger("delivery")


@shared_task(name="delivery.fan_out_event", bind=True, acks_late=True, ignore_result=True)
def fan_out_event(self: Task, event: dict) -> str:
    """DLV-1: one delivery per subscribed endpoint, committed before the ack; then hints."""
    event_id, _ = outbox_event(logger, self.request.id, event, event_types=WEBHOOK_TYPES)
    fanned = durable_step(logger, event, lambda: fan_out.fan_out_event(event_id))
    if fanned.outcome != fan_out.FanOutResult.FANNED_OUT:
        raise reject_to_dead_letters(logger, fanned.outcome.value, event)
    scheduling.publish_dispatch_hints(fanned.created)
    return f"{len(fanned.created)} deliveries"


@shared_task(name=dispatch.DISPATCH_TASK, acks_late=True, ignore_result=True)
def dispatch_delivery(delivery_id: str) -> str:
    try:
        parsed = uuid.UUID(str(delivery_id))
    except ValueError as exc:
        raise reject_to_dead_letters(logger, f"malformed delivery id: {exc}", delivery_id) from exc
    try:
        return dispatch.deliver(parsed)
    except DatabaseError as exc:
        # A hint is cheap to lose: the row stays due (or its lease expires) and the scheduler re-hints.
        _database.failed(exc, consequence="deliveries are left to the scheduler's next hint")
        return "database_unavailable"
    finally:
        connection.close()


_database = Outage(logger, "PostgreSQL (webhook deliveries)")
