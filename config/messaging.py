"""Consuming outbox events from the broker: the envelope check and the durable step that
every consumer of an outbox event shares (ingress, delivery fan-out).

The message is never the authority: it carries an event id, a type and a job id, and the
consumer reloads everything else from PostgreSQL (OUT-3).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from celery.exceptions import Reject
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from config.backoff import full_jitter
from config.outages import Outage

SUPPORTED_EVENT_VERSIONS = {1}
T = TypeVar("T")


def reject_to_dead_letters(logger: logging.Logger, reason: str, message: object) -> Reject:
    """A message that can never succeed: rejected without requeue, so the queue's dead-letter
    exchange keeps it for inspection instead of a crash loop."""
    logger.error("message rejected to the dead-letter queue", extra={"reason": reason, "event": repr(message)[:500]})
    return Reject(reason, requeue=False)


def parse_outbox_event(event: Any, *, event_types: Collection[str]) -> tuple[uuid.UUID, dict[str, Any]]:
    """The (event id, payload) of a well-formed outbox event envelope, or ValueError naming what
    is wrong: an unknown type or version, a malformed event id, job id or batch id."""
    if not isinstance(event, dict) or event.get("event_type") not in event_types:
        raise ValueError("unexpected event type")
    payload = event.get("payload")
    try:
        event_id = uuid.UUID(str(event.get("event_id")))
        if not isinstance(payload, dict) or payload.get("event_version") not in SUPPORTED_EVENT_VERSIONS:
            raise ValueError("unknown event version")
        # A job's event names its job; a batch's (extraction.batch_completed.v1) its batch.
        uuid.UUID(str(payload.get("job_id", payload.get("batch_id"))))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"malformed event: {exc}") from exc
    return event_id, payload


def outbox_event(
    logger: logging.Logger, task_id: str | None, event: Any, *, event_types: Collection[str]
) -> tuple[uuid.UUID, dict[str, Any]]:
    """The (event id, payload) of a well-formed outbox event message, or a Reject: a malformed
    envelope (parse_outbox_event), or a task id other than the event id (the id is the message
    id at every hop)."""
    try:
        event_id, payload = parse_outbox_event(event, event_types=event_types)
    except ValueError as exc:
        raise reject_to_dead_letters(logger, str(exc), event) from exc
    if str(event_id) != str(task_id):
        raise reject_to_dead_letters(logger, "task id differs from event id", event)
    return event_id, payload


def durable_step(logger: logging.Logger, message: object, step: Callable[[], T]) -> T:
    """Run the step that moves a message's responsibility into PostgreSQL, before the ack.

    A transient database failure (a restart, a failover, a lost connection) is retried here,
    with backoff, for up to ``DURABLE_STEP_RETRY_SECONDS``: a requeue would count towards the
    quorum queue's delivery limit (RabbitMQ 3.10 counts every return), so a database that moves
    for a while must not dead-letter messages that never failed. Past that the message is
    requeued; a permanent refusal dead-letters it.
    """
    deadline = time.monotonic() + settings.DURABLE_STEP_RETRY_SECONDS
    failures = 0
    try:
        while True:
            try:
                result = step()
            except (OperationalError, InterfaceError) as exc:
                connection.close()
                failures += 1
                _database(logger).failed(
                    exc, consequence="messages are taken in when it is back (retried before the ack)"
                )
                # Paused before a requeue too, so a long outage is not a redelivery loop.
                time.sleep(full_jitter(failures, base=0.5, cap=5.0))
                if time.monotonic() >= deadline:
                    raise Reject(f"database unavailable: {exc}", requeue=True) from exc
            except DatabaseError as exc:
                raise reject_to_dead_letters(logger, f"database refused the event: {exc}", message) from exc
            else:
                _database(logger).succeeded()
                return result
    finally:
        connection.close()


_outages: dict[str, Outage] = {}


def _database(logger: logging.Logger) -> Outage:
    """The database as this consumer's steps see it (one warning per outage, not per message)."""
    return _outages.setdefault(logger.name, Outage(logger, "PostgreSQL"))
