"""Delivery's consumer of the outcomes topic (BRK-6, DLV-1): an outcome record becomes one
delivery per subscribed endpoint, committed before the record's offset is; then the dispatch
hints. The record only names the event: the fan-out reloads it from the outbox (OUT-3)."""

from __future__ import annotations

from config.messaging import parse_outbox_event
from delivery.fan_out import FanOutResult, fan_out_event
from delivery.models import WEBHOOK_TYPES
from delivery.scheduling import publish_dispatch_hints
from extraction.eventlog.consumer import EventRecord, Poison


def fan_out_record(record: EventRecord) -> str:
    try:
        event_id, _ = parse_outbox_event(record.envelope(), event_types=WEBHOOK_TYPES)
    except ValueError as exc:
        raise Poison(str(exc)) from exc
    fan_out = fan_out_event(event_id)
    if fan_out.outcome != FanOutResult.FANNED_OUT:
        raise Poison(fan_out.outcome.value)
    publish_dispatch_hints(fan_out.created)
    return "fanned_out"
