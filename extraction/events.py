"""The event catalogue: every outbox event type, declared once (OBX-1, BRK-6, DLV-1).

An entry says everything the rest of the system needs to know about one event type: what its
payload carries, where the RabbitMQ relay routes it, which Kafka topics keep it, which webhook
type a tenant receives it as, and which job state it reports. The writers (acceptance and the
job state machine), both relays, the delivery fan-out and the webhook bodies read it here, so
adding an event type is one entry plus the code that writes it and the handler that consumes it.

Webhook types are a second, public vocabulary: a tenant subscribes to ``extraction.failed.v1``,
which the outbox records as ``extraction.dead_lettered.v1`` (a dead letter is how the pipeline
ends a job it gave up on; to the ERP it is a failed extraction).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings
from kombu import Exchange

from config.topology import DEAD_LETTER_EVENTS_EXCHANGE, DELIVERY, INGRESS, WORK_EXCHANGE
from extraction.models import JobState


class EventType(StrEnum):
    """The outbox's ``event_type`` column."""

    REQUESTED = "extraction.requested.v1"
    COMPLETED = "extraction.completed.v1"
    REVIEW_REQUIRED = "extraction.review_required.v1"
    DEAD_LETTERED = "extraction.dead_lettered.v1"
    # The job's document held several invoices; each part has a job of its own (job_state SPLIT).
    SPLIT = "extraction.split.v1"
    # Every job of a batch (and every part of a split one) is terminal; names the batch, no job.
    BATCH_COMPLETED = "extraction.batch_completed.v1"


class WebhookType(StrEnum):
    """The ``type`` of a webhook body, and what an endpoint subscribes to."""

    COMPLETED = "extraction.completed.v1"
    REVIEW_REQUIRED = "extraction.review_required.v1"
    FAILED = "extraction.failed.v1"
    SPLIT = "extraction.split.v1"
    BATCH_COMPLETED = "extraction.batch_completed.v1"
    # Sent once to a new endpoint to prove it holds the secret; never from the outbox.
    VERIFICATION = "webhook.verification.v1"


class KafkaTopic(StrEnum):
    """A topic family; the topic's name is the setting of that name (deployments rename them)."""

    REQUESTED = "KAFKA_TOPIC_REQUESTED"
    OUTCOMES = "KAFKA_TOPIC_OUTCOMES"
    DEAD_LETTERS = "KAFKA_TOPIC_DEAD_LETTERS"


@dataclass(frozen=True)
class Route:
    """Where the RabbitMQ relay publishes an event: a Celery task message, or a plain JSON
    message when ``task`` is None."""

    exchange: Exchange
    routing_key: str
    task: str | None


@dataclass(frozen=True)
class EventSpec:
    type: EventType
    # The keys of the payload the database writes (extraction_append_outbox_event's caller).
    payload: frozenset[str]
    routes: tuple[Route, ...]
    kafka_topics: tuple[KafkaTopic, ...]
    # None: not sent to tenants.
    webhook: WebhookType | None
    # The job state the event reports (None: the job is still on its way).
    job_state: JobState | None


_CORE = frozenset({"job_id", "event_version", "state_version"})
_INGEST = Route(WORK_EXCHANGE, INGRESS, "extraction.ingest_requested")
_FAN_OUT = Route(WORK_EXCHANGE, DELIVERY, "delivery.fan_out_event")

CATALOGUE: Mapping[str, EventSpec] = {
    spec.type.value: spec
    for spec in (
        EventSpec(
            EventType.REQUESTED,
            payload=_CORE,
            routes=(_INGEST,),
            kafka_topics=(KafkaTopic.REQUESTED,),
            webhook=None,
            job_state=None,
        ),
        EventSpec(
            EventType.COMPLETED,
            payload=_CORE,
            routes=(_FAN_OUT,),
            kafka_topics=(KafkaTopic.OUTCOMES,),
            webhook=WebhookType.COMPLETED,
            job_state=JobState.SUCCEEDED,
        ),
        EventSpec(
            EventType.REVIEW_REQUIRED,
            payload=_CORE,
            routes=(_FAN_OUT,),
            kafka_topics=(KafkaTopic.OUTCOMES,),
            webhook=WebhookType.REVIEW_REQUIRED,
            job_state=JobState.REVIEW_REQUIRED,
        ),
        EventSpec(
            EventType.DEAD_LETTERED,
            payload=_CORE | {"error_class", "attempt"},
            # DLQ-2: the dead-letter exchange keeps it for inspection, and the tenant hears of it.
            routes=(Route(DEAD_LETTER_EVENTS_EXCHANGE, "", None), _FAN_OUT),
            # DLQ-3: a dead letter is an outcome that the dead-letter topic keeps too.
            kafka_topics=(KafkaTopic.OUTCOMES, KafkaTopic.DEAD_LETTERS),
            webhook=WebhookType.FAILED,
            job_state=JobState.FAILED_TERMINAL,
        ),
        EventSpec(
            EventType.SPLIT,
            payload=_CORE | {"parts"},
            routes=(_FAN_OUT,),
            kafka_topics=(KafkaTopic.OUTCOMES,),
            webhook=WebhookType.SPLIT,
            job_state=JobState.SPLIT,
        ),
        EventSpec(
            EventType.BATCH_COMPLETED,
            # No job: the batch's id and its jobs' count by state when it completed.
            payload=frozenset({"batch_id", "event_version", "counts"}),
            routes=(_FAN_OUT,),
            kafka_topics=(KafkaTopic.OUTCOMES,),
            webhook=WebhookType.BATCH_COMPLETED,
            job_state=None,
        ),
    )
}

# The outbox event types that fan out to webhook endpoints, and the webhook type each is sent as.
WEBHOOK_TYPES: Mapping[str, WebhookType] = {
    name: spec.webhook for name, spec in CATALOGUE.items() if spec.webhook is not None
}
# What an endpoint may subscribe to (the verification event is sent regardless).
SUBSCRIBABLE_TYPES: tuple[str, ...] = tuple(sorted(WEBHOOK_TYPES.values()))
# The job state a webhook type reports.
WEBHOOK_JOB_STATES: Mapping[str, JobState] = {
    spec.webhook: spec.job_state for spec in CATALOGUE.values() if spec.webhook and spec.job_state
}


def kafka_topics_for(event_type: str) -> tuple[str, ...]:
    """The Kafka topic names an event type is published to (none for an unknown type)."""
    spec = CATALOGUE.get(event_type)
    return tuple(getattr(settings, family.value) for family in spec.kafka_topics) if spec else ()
