"""The Kafka ingress (BRK-2, BRK-6): an ``extraction.requested.v1`` record into the durable
inbox, with the job made runnable, in one transaction (with the records the consumer's other
take-in threads hold) — the take-in the RabbitMQ ingress uses, so a record and a message of the
same event are one inbox row. Its offset is committed by the consumer only after this returns."""

from __future__ import annotations

import logging

from config.messaging import parse_outbox_event
from extraction.eventlog.consumer import EventRecord, Poison
from extraction.events import EventType
from extraction.execution import take_ins
from extraction.execution.faults import fault_point
from extraction.execution.lifecycle import Arrival
from extraction.execution.outcomes import TakeIn
from extraction.execution.tasks import wake_for_taken_in

logger = logging.getLogger("extraction.ingress")


def take_in_record(record: EventRecord) -> TakeIn:
    try:
        event_id, payload = parse_outbox_event(record.envelope(), event_types={EventType.REQUESTED})
    except ValueError as exc:
        raise Poison(str(exc)) from exc
    header_id = record.headers.get("event_id")
    if header_id is not None and header_id != str(event_id):
        raise Poison("event_id header differs from the event's id")
    # With the records the consumer's other take-in threads hold, in one statement.
    outcome = take_ins.batcher().submit(Arrival(event_id, payload, (record.topic, record.partition, record.offset)))
    fault_point("ingress_after_commit")
    if outcome == TakeIn.UNKNOWN_JOB:
        raise Poison("no such job")
    if outcome == TakeIn.TAKEN_IN:
        wake_for_taken_in(payload["job_id"])
    return outcome
