"""Kafka as the event log (BRK-6): client settings, the topics of each event family, and
their idempotent creation. Apps name their topics and handlers; this module knows none.

Every record is keyed by its job id, so one job's events share a partition and keep their
order; the outbox event id travels as the ``event_id`` header (and in the value), the key of
every consumer's inbox.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings

logger = logging.getLogger(__name__)


def client_config(**overrides: Any) -> dict[str, Any]:
    """librdkafka's settings for any client: the bootstrap servers, the security settings
    (``KAFKA_CLIENT_CONFIG``) and the caller's own."""
    return {
        "bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS,
        # A broker that is away is retried with a growing pause (up to 10 s) instead of a
        # reconnect, and a log line, every 100 ms; idle connections the broker closes are
        # reopened without a line each.
        "reconnect.backoff.ms": 500,
        "reconnect.backoff.max.ms": 10000,
        "log.connection.close": False,
        **settings.KAFKA_CLIENT_CONFIG,
        **overrides,
    }


def producer_config(*, delivery_timeout_ms: int) -> dict[str, Any]:
    """An idempotent producer: acks from every in-sync replica, no reordering or duplicates on
    its own retries. Its retries are bounded by ``delivery_timeout_ms``: a report arrives for
    every record within it, so no outbox row waits for ever on a record that never left."""
    return client_config(
        **{
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": delivery_timeout_ms,
            "linger.ms": 2,
        }
    )


def consumer_config(group_id: str, **overrides: Any) -> dict[str, Any]:
    """A consumer that commits only what it says: no auto-commit and no automatic offset
    store, so an offset moves only past records that are durable in PostgreSQL."""
    return client_config(
        **{
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": settings.KAFKA_SESSION_TIMEOUT_MS,
            "max.poll.interval.ms": settings.KAFKA_MAX_POLL_INTERVAL_MS,
            "fetch.wait.max.ms": settings.KAFKA_FETCH_WAIT_MAX_MS,
            # A subscribed topic that is missing (not created yet, or a broker that came back
            # empty) is noticed within this, not librdkafka's default five minutes.
            "topic.metadata.refresh.interval.ms": 10000,
            **overrides,
        }
    )


def event_topics() -> tuple[str, ...]:
    return (settings.KAFKA_TOPIC_REQUESTED, settings.KAFKA_TOPIC_OUTCOMES, settings.KAFKA_TOPIC_DEAD_LETTERS)


def ensure_topics(topics: Iterable[str] | None = None, *, timeout: float = 10.0) -> None:
    """Create the missing topics, with ``KAFKA_PARTITIONS`` partitions and
    ``KAFKA_REPLICATION_FACTOR`` replicas; an existing topic is left as it is. An account that
    may not create topics (``KAFKA_CREATE_TOPICS=0``, or refused) uses the provisioned ones."""
    if not settings.KAFKA_CREATE_TOPICS:
        return
    admin = AdminClient(client_config())
    wanted = list(topics or event_topics())
    existing = set(admin.list_topics(timeout=timeout).topics)
    missing = [
        NewTopic(name, num_partitions=settings.KAFKA_PARTITIONS, replication_factor=settings.KAFKA_REPLICATION_FACTOR)
        for name in wanted
        if name not in existing
    ]
    if not missing:
        return
    for name, future in admin.create_topics(missing, operation_timeout=timeout, request_timeout=timeout).items():
        try:
            future.result(timeout=timeout)
            logger.info("kafka topic created", extra={"topic": name})
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            if isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                logger.warning("not allowed to create kafka topic; expecting it provisioned", extra={"topic": name})
                continue
            raise
