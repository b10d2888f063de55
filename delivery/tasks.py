"""Celery tasks on the ``delivery`` queue: thin interfaces over :mod:`delivery.dispatch`.

``fan_out_event`` takes the relay's completion events (task id = outbox event id), reloads
the event from PostgreSQL and creates the deliveries, then lets Celery ack (acks_late).
``dispatch`` is a hint naming one delivery row: the row decides, so a duplicate hint finds it
claimed and a lost one is re-sent by the scheduler.
"""
from __future__ import annotations

import logging
import random
import time
import uuid

from celery import shared_task
from celery.exceptions import Reject
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from . import dispatch

logger = logging.getLogger("delivery")

SUPPORTED_EVENT_VERSIONS = {1}


def _reject(reason: str, event: object) -> Reject:
    logger.error("message rejected to the dead-letter queue", extra={"reason": reason, "event": repr(event)[:500]})
    return Reject(reason, requeue=False)


@shared_task(name="delivery.fan_out_event", bind=True, acks_late=True, ignore_result=True)
def fan_out_event(self, event: dict) -> str:
    """DLV-1: one delivery per subscribed endpoint, committed before the ack; then hints."""
    if not isinstance(event, dict) or event.get("event_type") not in dispatch.WEBHOOK_TYPES:
        raise _reject("not a webhook event", event)
    payload = event.get("payload")
    try:
        event_id = uuid.UUID(str(event.get("event_id")))
        if not isinstance(payload, dict) or payload.get("event_version") not in SUPPORTED_EVENT_VERSIONS:
            raise ValueError("unknown event version")
        uuid.UUID(str(payload.get("job_id")))
    except (ValueError, TypeError) as exc:
        raise _reject(f"malformed event: {exc}", event) from exc
    if str(event_id) != str(self.request.id):
        raise _reject("task id differs from event id", event)
    try:
        fan_out = dispatch.fan_out_event(event_id)
    except (OperationalError, InterfaceError) as exc:
        # Transient (DB restarting): back off here, then requeue; the delivery limit bounds it.
        connection.close()
        time.sleep(random.uniform(1, 5))
        raise Reject(f"database unavailable: {exc}", requeue=True) from exc
    except DatabaseError as exc:
        raise _reject(f"database refused the event: {exc}", event) from exc
    finally:
        connection.close()
    if fan_out.outcome != "fanned_out":
        raise _reject(fan_out.outcome, event)
    dispatch.publish_dispatch_hints(fan_out.created)
    return f"{len(fan_out.created)} deliveries"


@shared_task(name=dispatch.DISPATCH_TASK, acks_late=True, ignore_result=True)
def dispatch_delivery(delivery_id: str) -> str:
    try:
        parsed = uuid.UUID(str(delivery_id))
    except ValueError as exc:
        raise _reject(f"malformed delivery id: {exc}", delivery_id) from exc
    try:
        return dispatch.deliver(parsed)
    except DatabaseError:
        # A hint is cheap to lose: the row stays due (or its lease expires) and the scheduler re-hints.
        logger.warning("delivery step failed on the database; left to the scheduler", exc_info=True,
                       extra={"delivery_id": str(delivery_id)})
        return "database_unavailable"
    finally:
        connection.close()
