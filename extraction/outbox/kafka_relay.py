"""The outbox relay to Kafka (BRK-6): the same outbox rows, the same claim, another carrier.

Each row becomes one record per topic of its family, keyed by its job id (a batch's event,
which has no job, by its batch id: :func:`record_key`), with the event id in the ``event_id``
header. The producer is idempotent (``enable.idempotence``, ``acks=all``);
a row counts as published only when every one of its records has a delivery report without
error. A failed or timed-out record leaves its row unpublished for the next round; the re-send
is a duplicate record with the same event id, which every consumer's inbox takes once.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from django.conf import settings

from config import kafka, tracing
from extraction.events import kafka_topics_for
from extraction.execution.faults import fault_point
from extraction.outbox.relay import (
    ConfirmedRows,
    OutboxRow,
    claim_unpublished,
    log_refused,
    publish_span,
    release_failed,
)

logger = logging.getLogger(__name__)


def record_value(row: OutboxRow) -> bytes:
    """The record's value: the same envelope the RabbitMQ tasks receive."""
    return json.dumps(
        {"event_id": str(row.event_id), "event_type": row.event_type, "payload": row.payload},
        separators=(",", ":"),
        sort_keys=True,
    ).encode()


def record_key(row: OutboxRow) -> bytes | None:
    """The record's key: what keeps one job's (or one batch's) records in order on one partition."""
    subject = row.job_id or row.payload.get("batch_id")
    return str(subject).encode() if subject else None


class KafkaOutboxRelay(ConfirmedRows):
    """Publishes claimed outbox rows to their topics and waits for every delivery report."""

    def __init__(self, *, batch_size: int = 200, claim_seconds: float | None = None, delivery_timeout: float = 10.0):
        self.batch_size = batch_size
        self.claim_seconds = settings.OUTBOX_CLAIM_SECONDS if claim_seconds is None else claim_seconds
        self.delivery_timeout = delivery_timeout
        self._producer: Producer | None = None
        self._confirmed = []

    def _ensure_producer(self) -> Producer:
        if self._producer is None:
            kafka.ensure_topics()
            self._producer = Producer(kafka.producer_config(delivery_timeout_ms=int(self.delivery_timeout * 1000)))
        return self._producer

    def close(self) -> None:
        if self._producer is not None:
            # What is still queued is abandoned: its rows were not marked and are re-sent.
            self._producer.purge()
            self._producer.flush(0)
        self._producer = None

    def relay_once(self) -> int:
        """Claim a batch, produce every record, wait for their reports; see OutboxRelay.relay_once."""
        try:
            producer = self._ensure_producer()
        except KafkaException as exc:
            # The broker is away: nothing is claimed, so nothing waits for a claim to lapse.
            # The loop polls again; no traceback per round for an outage the log already names.
            logger.warning("kafka unavailable; publishing waits", extra={"error": str(exc)[:200]})
            self.mark_confirmed()
            return 0
        rows = claim_unpublished(
            batch_size=self.batch_size, claim_seconds=self.claim_seconds, confirmed=self._confirmed
        )
        self._confirmed = []
        if not rows:
            return 0
        outstanding: dict[uuid.UUID, int] = {}
        failures: dict[uuid.UUID, str] = {}
        for row in rows:
            topics = kafka_topics_for(row.event_type)
            if not topics:
                failures[row.event_id] = f"no topic for event type {row.event_type}"
                continue
            outstanding[row.event_id] = len(topics)
            self._produce(producer, row, topics, outstanding, failures)
        remaining = producer.flush(self.delivery_timeout)
        published = [event_id for event_id, left in outstanding.items() if left == 0 and event_id not in failures]
        for event_id, left in outstanding.items():
            if left > 0 and event_id not in failures:
                failures[event_id] = f"no delivery report within {self.delivery_timeout} s"
        if remaining:
            logger.warning("kafka delivery reports missing; rows left for the next round", extra={"records": remaining})
        log_refused(failures, broker="kafka")
        if failures:
            # A fresh producer next round, after the topics are ensured again: a broker that
            # came back empty (or a topic deleted) is set up again instead of failing for ever.
            self.close()
        if published:
            fault_point("relay_after_confirm")
        self._confirmed = published
        release_failed(failures)
        return len(published)

    def _produce(
        self,
        producer: Producer,
        row: OutboxRow,
        topics: tuple[str, ...],
        outstanding: dict[uuid.UUID, int],
        failures: dict[uuid.UUID, str],
    ) -> None:
        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                failures[row.event_id] = f"{message.topic()}: {error.str()}"
            else:
                outstanding[row.event_id] -= 1

        with publish_span(row, system="kafka", destinations=topics):
            headers: list[tuple[str, Any]] = [
                ("event_id", str(row.event_id).encode()),
                ("event_type", row.event_type.encode()),
                *((name, value.encode()) for name, value in tracing.current_trace_context().items()),
            ]
            value = record_value(row)
            key = record_key(row)
            for topic in topics:
                try:
                    producer.produce(topic, value=value, key=key, headers=headers, on_delivery=on_delivery)
                except BufferError:
                    # The local queue is full: serve reports, then try once more.
                    producer.poll(1.0)
                    producer.produce(topic, value=value, key=key, headers=headers, on_delivery=on_delivery)
            producer.poll(0)
