"""The event catalogue is the one declaration of each event type: what the database writes for
an event matches its entry, and the relays, the delivery fan-out and the webhook bodies read
their routing from it."""

from __future__ import annotations

import pytest

from config.topology import DEAD_LETTER_EVENTS_EXCHANGE, DELIVERY, INGRESS
from delivery import fan_out
from delivery.models import SUBSCRIBABLE_TYPES, WEBHOOK_TYPES
from extraction.events import CATALOGUE, WEBHOOK_JOB_STATES, EventType, WebhookType, kafka_topics_for
from extraction.execution import lifecycle
from extraction.intake.batch_completion import complete_finished_batches
from extraction.models import AttemptOutcome, JobState, OutboxEvent
from extraction.outbox import relay
from tests.extraction.intake.batch_support import submit_batch
from tests.factories import TenantContext, make_job


@pytest.mark.django_db(transaction=True)
def test_every_event_the_database_writes_has_the_payload_its_entry_declares(tenant: TenantContext):
    """One job of each ending: the requested event of each, a completed, a review-required, a
    dead-lettered and a split event, written by the real lifecycle statements, and a batch's
    completion by the real sweep."""
    make_job(tenant.tenant, state=JobState.SUCCEEDED)
    make_job(tenant.tenant, state=JobState.REVIEW_REQUIRED)
    failing = make_job(tenant.tenant, state=JobState.READY)
    claim = lifecycle.claim_next_job(worker_id="events-test", policies=["default"])
    assert claim is not None and claim.job_id == failing.pk
    report = lifecycle.AttemptReport(outcome=AttemptOutcome.PERMANENT_ERROR)
    lifecycle.retry_or_fail(claim, report=report, retry=False, delay_seconds=0, error_class="invalid_output")
    bundle = make_job(tenant.tenant, state=JobState.READY)
    claim = lifecycle.claim_next_job(worker_id="events-test", policies=["default"])
    assert claim is not None and claim.job_id == bundle.pk
    split = lifecycle.AttemptReport(outcome=AttemptOutcome.SPLIT)
    assert lifecycle.split_job(claim, [(1, 1), (2, 2)], page_count=2, report=split, detail={})
    submit_batch(tenant, documents=0, refused=1)  # finished at once: nothing to wait for
    assert len(complete_finished_batches()) == 1

    written = {(event.event_type, frozenset(event.payload)) for event in OutboxEvent.objects.all()}
    assert written == {(spec.type.value, spec.payload) for spec in CATALOGUE.values()}


def test_the_relays_route_from_the_catalogue(settings):
    settings.KAFKA_TOPIC_OUTCOMES = "acme.outcomes"
    settings.KAFKA_TOPIC_DEAD_LETTERS = "acme.dead"
    assert relay.ROUTES == {name: spec.routes for name, spec in CATALOGUE.items()}
    assert [(r.exchange.name, r.routing_key, r.task) for r in relay.ROUTES[EventType.DEAD_LETTERED]] == [
        (DEAD_LETTER_EVENTS_EXCHANGE.name, "", None),
        ("extraction", DELIVERY, "delivery.fan_out_event"),
    ]
    assert [(r.routing_key, r.task) for r in relay.ROUTES[EventType.REQUESTED]] == [
        (INGRESS, "extraction.ingest_requested")
    ]
    assert kafka_topics_for(EventType.DEAD_LETTERED) == ("acme.outcomes", "acme.dead")
    assert kafka_topics_for("extraction.unheard_of.v1") == ()


def test_webhook_types_and_the_states_they_report():
    assert dict(WEBHOOK_TYPES) == {
        "extraction.completed.v1": "extraction.completed.v1",
        "extraction.review_required.v1": "extraction.review_required.v1",
        "extraction.dead_lettered.v1": "extraction.failed.v1",
        "extraction.split.v1": "extraction.split.v1",
        "extraction.batch_completed.v1": "extraction.batch_completed.v1",
    }
    assert SUBSCRIBABLE_TYPES == (
        "extraction.batch_completed.v1",
        "extraction.completed.v1",
        "extraction.failed.v1",
        "extraction.review_required.v1",
        "extraction.split.v1",
    )
    # The batch's event reports no job state: it names a batch.
    assert dict(WEBHOOK_JOB_STATES) == {
        WebhookType.COMPLETED: JobState.SUCCEEDED,
        WebhookType.REVIEW_REQUIRED: JobState.REVIEW_REQUIRED,
        WebhookType.FAILED: JobState.FAILED_TERMINAL,
        WebhookType.SPLIT: JobState.SPLIT,
    }


@pytest.mark.django_db(transaction=True)
def test_a_dead_letter_reaches_the_tenant_as_a_failed_extraction(tenant: TenantContext):
    job = make_job(tenant.tenant, state=JobState.READY)
    claim = lifecycle.claim_next_job(worker_id="events-test", policies=["default"])
    assert claim is not None
    report = lifecycle.AttemptReport(outcome=AttemptOutcome.PERMANENT_ERROR)
    lifecycle.retry_or_fail(claim, report=report, retry=False, delay_seconds=0, error_class="invalid_output")
    event = OutboxEvent.objects.get(job_id=job.pk, event_type=EventType.DEAD_LETTERED)

    body = fan_out.event_body(event, WEBHOOK_TYPES[event.event_type])

    assert (body["type"], body["data"]["state"], body["data"]["error"]) == (
        "extraction.failed.v1",
        "FAILED_TERMINAL",
        {"class": "invalid_output"},
    )
