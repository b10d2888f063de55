"""The relay when the broker stops confirming: a quorum queue that lost its majority (one of
its two members killed) on a 3-node cluster. RabbitMQ 3.10's channel then confirms nothing, not
even the messages for a queue that kept its majority, and answers no connection.close for
minutes. The batch ends after ``confirm_timeout`` with every row refused (sent again later,
deduplicated by event id), the connection is dropped without the handshake, and the next batch
goes out on a fresh one.

Before, the relay waited out that close for minutes, and logged a warning per row of every
failed batch (212 in one run of the node-loss test, test_rabbitmq_node_loss.py).
"""

from __future__ import annotations

import uuid

import pytest
from kombu import Connection

from config.topology import DELIVERY, INGRESS, declare_topology
from extraction.outbox.relay import NotConfirmed, OutboxRelay, OutboxRow

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CONFIRM_TIMEOUT = 3.0


def _rows(event_type: str, count: int) -> list[OutboxRow]:
    return [
        OutboxRow(uuid.uuid4(), event_type, {"job_id": str(uuid.uuid4()), "event_version": 1, "state_version": 2})
        for _ in range(count)
    ]


def test_a_broker_that_stops_confirming_costs_a_batch_the_confirm_timeout_not_the_relay(rabbitmq):
    vhost = f"confirms-{uuid.uuid4().hex[:6]}"
    rabbitmq.add_vhost(vhost)
    first_node = rabbitmq.urls(vhost)[0]
    with Connection(first_node) as conn:
        declare_topology(conn)
    # The node to kill: not the one the relay talks to, nor the delivery queue's leader (whose
    # election would hold its confirms too). The ingress queue goes down to two members, that
    # node and another, so that killing it takes the ingress queue's majority; the delivery
    # queue keeps two of its three.
    delivery_leader = rabbitmq.leader_of(DELIVERY, vhost)
    doomed = next(node for node in rabbitmq.nodes[1:] if node.name != delivery_leader)
    dropped = next(
        node for node in rabbitmq.nodes if node.name != doomed.name and node.name != rabbitmq.leader_of(INGRESS, vhost)
    )
    rabbitmq._ctl_ok("delete_member", "--vhost", vhost, INGRESS, dropped.nodename, tool="rabbitmq-queues")
    row = rabbitmq._queue_row(INGRESS, vhost, "members")
    assert row is not None and sorted(row["members"]) == sorted(
        n.nodename for n in rabbitmq.nodes if n is not dropped
    ), row

    relay = OutboxRelay(broker_url=first_node, confirm_timeout=CONFIRM_TIMEOUT)
    try:
        relay._ensure_producer()  # connected and declared before the node goes
        rabbitmq.kill(doomed.name)
        completed = _rows("extraction.completed.v1", 4)
        requested = _rows("extraction.requested.v1", 2)
        published, refused = relay.publish_batch(
            [completed[0], requested[0], *completed[1:3], requested[1], completed[3]]
        )
        # Not even the rows for the delivery queue, which kept its majority, were confirmed:
        # the channel stopped answering once a message went to the ingress queue.
        assert published == []
        assert {event_id: str(exc) for event_id, exc in refused.items()} == {
            row.event_id: f"{row.event_type} not confirmed within {CONFIRM_TIMEOUT} s" for row in completed + requested
        }
        assert all(isinstance(exc, NotConfirmed) for exc in refused.values())
        # The stuck connection was dropped without the closing handshake it would not answer;
        # the next batch goes on a fresh one and is judged on its own.
        again = _rows("extraction.completed.v1", 2)
        assert relay.publish_batch(again) == ([row.event_id for row in again], {})
    finally:
        relay.close()
        if not doomed.running():
            rabbitmq.start(doomed.name)
