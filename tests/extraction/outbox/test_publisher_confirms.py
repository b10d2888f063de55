"""The relay's pipelined publisher confirms (extraction.outbox.relay.PublisherConfirms) on a real
RabbitMQ vhost of the test's own: a batch is published whole and its confirms awaited together,
and each row's verdict is its own: a row whose message came back (unroutable) or was nacked (a
full queue that rejects publishes) is not called published, the rows around it are."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import pytest
from kombu import Connection, Queue

from config.topology import DELIVERY, INGRESS, WORK_EXCHANGE
from extraction.outbox.relay import NotConfirmed, OutboxRelay, OutboxRow, Unroutable
from tests.system import ensure_vhost, queue_depth

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def vhost_url() -> Iterator[str]:
    name = f"confirms_{uuid.uuid4().hex[:8]}"
    try:
        yield ensure_vhost(name)
    finally:
        subprocess.run(["rabbitmqctl", "delete_vhost", name], capture_output=True, check=False)


def _rows(event_type: str, count: int) -> list[OutboxRow]:
    return [
        OutboxRow(uuid.uuid4(), event_type, {"job_id": str(uuid.uuid4()), "event_version": 1, "state_version": 2})
        for _ in range(count)
    ]


def _connected(url: str) -> OutboxRelay:
    relay = OutboxRelay(broker_url=url, confirm_timeout=10)
    relay._ensure_producer()  # connects and declares the topology, as the first publish would
    return relay


def _replace_ingress_queue(url: str, *, rejecting: bool) -> None:
    """Delete the ingress queue; ``rejecting``: declare in its place a queue bound the same way
    that holds nothing and rejects every publish (the broker nacks them)."""
    with Connection(url) as conn:
        channel = conn.default_channel
        channel.queue_delete(INGRESS)
        if rejecting:
            Queue(
                INGRESS,
                WORK_EXCHANGE,
                routing_key=INGRESS,
                durable=False,
                queue_arguments={"x-max-length": 0, "x-overflow": "reject-publish"},
            )(channel).declare()


def test_a_batch_is_confirmed_whole(vhost_url):
    relay = _connected(vhost_url)
    try:
        requested, completed = _rows("extraction.requested.v1", 40), _rows("extraction.completed.v1", 25)
        published, refused = relay.publish_batch(requested + completed)
    finally:
        relay.close()
    assert (published, refused) == ([row.event_id for row in requested + completed], {})
    assert (queue_depth(vhost_url, INGRESS), queue_depth(vhost_url, DELIVERY)) == (40, 25)


def test_an_unroutable_row_in_a_batch_is_refused_alone(vhost_url):
    relay = _connected(vhost_url)
    _replace_ingress_queue(vhost_url, rejecting=False)
    try:
        before, after = _rows("extraction.completed.v1", 3), _rows("extraction.completed.v1", 3)
        (unroutable,) = _rows("extraction.requested.v1", 1)
        published, refused = relay.publish_batch([*before, unroutable, *after])
        assert published == [row.event_id for row in before + after]
        assert list(refused) == [unroutable.event_id] and isinstance(refused[unroutable.event_id], Unroutable)
        # The connection is kept, and the next batch is judged on its own.
        again = _rows("extraction.completed.v1", 2)
        assert relay.publish_batch(again) == ([row.event_id for row in again], {})
        with pytest.raises(Unroutable):
            relay.publish(unroutable)
    finally:
        relay.close()
    assert queue_depth(vhost_url, DELIVERY) == 8


def test_a_nacked_row_in_a_batch_is_refused_alone(vhost_url):
    relay = _connected(vhost_url)
    _replace_ingress_queue(vhost_url, rejecting=True)
    try:
        completed = _rows("extraction.completed.v1", 4)
        nacked = _rows("extraction.requested.v1", 2)
        published, refused = relay.publish_batch([completed[0], nacked[0], *completed[1:3], nacked[1], completed[3]])
    finally:
        relay.close()
    assert published == [row.event_id for row in completed]
    assert list(refused) == [row.event_id for row in nacked]
    assert all(isinstance(exc, NotConfirmed) for exc in refused.values())
    assert queue_depth(vhost_url, DELIVERY) == 4


def test_a_task_message_carries_the_origin_celery_would_give_it(vhost_url):
    """The origin header is computed once per process (config.celery.message_origin), and is the
    one Celery's as_task_v2 computes per message when none is passed."""
    from celery.utils.nodenames import anon_nodename

    relay = _connected(vhost_url)
    try:
        (row,) = _rows("extraction.requested.v1", 1)
        assert relay.publish_batch([row]) == ([row.event_id], {})
    finally:
        relay.close()
    with Connection(vhost_url) as conn:
        message = conn.default_channel.basic_get(INGRESS, no_ack=True)
    assert message is not None
    assert (message.headers["id"], message.headers["origin"]) == (str(row.event_id), anon_nodename())
