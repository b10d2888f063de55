"""The webhooks of a batch's completion and of a split job, fanned out and sent for real: the
body is built from PostgreSQL, signed, and verifies with the endpoint's secret; the reference
ERP takes the types it does not book with a 2xx."""

from __future__ import annotations

import pytest
from standardwebhooks import Webhook

from delivery import dispatch, fan_out
from delivery.endpoints import register_endpoint
from delivery.erp.models import ErpConnection, ErpInboxEntry, ErpLedgerEntry
from delivery.models import Delivery, WebhookEvent
from extraction.events import EventType, WebhookType
from extraction.intake.batch_completion import complete_finished_batches
from extraction.models import ExtractionBatch, JobState, OutboxEvent
from tests.delivery.support import active_endpoint
from tests.extraction.intake.batch_support import finish, split, submit_batch

pytestmark = [pytest.mark.django_db(transaction=True)]


def _deliver(event: OutboxEvent) -> Delivery:
    fanned = fan_out.fan_out_event(event.event_id)
    assert fanned.outcome == fan_out.FanOutResult.FANNED_OUT and len(fanned.created) == 1
    delivery = Delivery.objects.get(pk=fanned.created[0])
    assert dispatch.deliver(delivery.pk) == "delivered"
    delivery.refresh_from_db()
    return delivery


def test_a_completed_batch_is_sent_signed_with_its_counts(tenant, scripted_erp, loopback):
    _, secret = active_endpoint(tenant, scripted_erp.url, types=[WebhookType.BATCH_COMPLETED])
    key = "march-invoices"
    batch_id, (done, failed) = submit_batch(tenant, documents=2, refused=1, key=key)
    finish(done, JobState.SUCCEEDED)
    finish(failed, JobState.FAILED_TERMINAL)
    complete_finished_batches()
    event = OutboxEvent.objects.get(event_type=EventType.BATCH_COMPLETED)

    delivery = _deliver(event)

    request = scripted_erp.received[-1]
    body = Webhook(secret).verify(request.body, request.headers)
    assert request.headers["webhook-id"] == str(delivery.pk)
    batch = ExtractionBatch.objects.get(pk=batch_id)
    assert body == {
        "type": "extraction.batch_completed.v1",
        "timestamp": event.created_at.isoformat().replace("+00:00", "Z"),
        "data": {
            "event_id": str(event.event_id),
            "batch_id": batch_id,
            "idempotency_key": key,
            "file_count": 3,
            "counts": {"SUCCEEDED": 1, "FAILED_TERMINAL": 1, "refused": 1},
            "completed_at": batch.completed_at.isoformat().replace("+00:00", "Z"),
            "links": {"self": f"/api/v1/extraction-batches/{batch_id}"},
        },
    }
    assert WebhookEvent.objects.get(pk=event.event_id).job_id is None


def test_an_endpoint_not_subscribed_to_batches_gets_no_delivery(tenant, scripted_erp, loopback):
    active_endpoint(tenant, scripted_erp.url, types=[WebhookType.COMPLETED])
    submit_batch(tenant, documents=0, refused=1)
    complete_finished_batches()
    event = OutboxEvent.objects.get(event_type=EventType.BATCH_COMPLETED)

    fanned = fan_out.fan_out_event(event.event_id)

    assert fanned.outcome == fan_out.FanOutResult.FANNED_OUT and fanned.created == ()


def test_a_split_job_is_sent_with_its_parts_in_page_order(tenant, scripted_erp, loopback):
    _, secret = active_endpoint(tenant, scripted_erp.url, types=[WebhookType.SPLIT])
    _, (bundle,) = submit_batch(tenant, documents=1)
    parts = split(bundle, [(1, 2), (3, 3), (4, 6)])
    event = OutboxEvent.objects.get(event_type=EventType.SPLIT, job_id=bundle)

    _deliver(event)

    body = Webhook(secret).verify(scripted_erp.received[-1].body, scripted_erp.received[-1].headers)
    assert body["type"] == "extraction.split.v1"
    assert (body["data"]["job_id"], body["data"]["state"]) == (bundle, "SPLIT")
    assert body["data"]["parts"] == [
        {"job_id": parts[0], "pages": [1, 2]},
        {"job_id": parts[1], "pages": [3, 3]},
        {"job_id": parts[2], "pages": [4, 6]},
    ]


def test_the_reference_erp_takes_a_batch_event_without_booking_it(tenant, live_server, loopback):
    registration = register_endpoint(
        tenant=tenant.tenant,
        url=f"{live_server.url}/erp/{tenant.tenant.slug}/webhooks",
        event_types=[WebhookType.COMPLETED, WebhookType.BATCH_COMPLETED],
    )
    erp = ErpConnection.objects.create(
        slug=tenant.tenant.slug,
        tenant_label="t",
        secrets=[{"key_id": registration.secret.key_id, "secret": registration.secret.secret}],
    )
    assert dispatch.deliver(registration.verification_delivery_id) == "delivered"
    submit_batch(tenant, documents=0, refused=1)
    complete_finished_batches()

    delivery = _deliver(OutboxEvent.objects.get(event_type=EventType.BATCH_COMPLETED))

    assert (delivery.state, delivery.last_status) == ("delivered", 200)
    assert ErpInboxEntry.objects.filter(connection=erp, event_type=WebhookType.BATCH_COMPLETED).count() == 1
    assert not ErpLedgerEntry.objects.filter(connection=erp).exists()
