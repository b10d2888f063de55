"""The RabbitMQ relay publishes a batch's completion, an outbox row with no job, like any
event: to the delivery queue, confirmed, then marked published."""

from __future__ import annotations

import pytest

from config.topology import DELIVERY
from extraction.events import EventType
from extraction.intake.batch_completion import complete_finished_batches
from extraction.models import OutboxEvent
from extraction.outbox.relay import OutboxRelay
from tests.extraction.intake.batch_support import submit_batch
from tests.system import queue_depth

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_batch_completion_is_published_to_the_delivery_queue(broker, tenant_a):
    submit_batch(tenant_a, documents=0, refused=1)
    (batch_id,) = complete_finished_batches()
    event = OutboxEvent.objects.get(event_type=EventType.BATCH_COMPLETED)

    relay = OutboxRelay(broker_url=broker, confirm_timeout=10)
    try:
        assert relay.relay_once() == 1
        relay.mark_confirmed()
    finally:
        relay.close()

    event.refresh_from_db()
    assert event.job_id is None and event.published_at is not None
    assert event.payload["batch_id"] == str(batch_id)
    assert queue_depth(broker, DELIVERY) == 1
