"""RabbitMQ topology, declared idempotently by code at every start-up.

Work queues are quorum queues (BRK-1) with at-least-once dead lettering (``x-dead-letter-strategy``,
``x-overflow=reject-publish``, a dead-letter exchange, the broker's ``stream_queue`` flag) and an
explicit ``x-delivery-limit``, so the poison-message bound is ours on 3.10 (no default) and 4.x
(20). The arguments are defined only here, for every declarer, so a redeclaration never differs
("inequivalent arg"); queue arguments override a policy setting the same keys.
"""

from __future__ import annotations

from typing import Any

from kombu import Connection, Exchange, Queue

# A topic exchange: exact routing keys behave as with "direct", and Celery's native delayed
# delivery (enabled for quorum queues) supports it.
WORK_EXCHANGE = Exchange("extraction", type="topic", durable=True)
# Job dead letters (DLQ-2): terminal decisions published from the outbox, for inspection.
DEAD_LETTER_EVENTS_EXCHANGE = Exchange("extraction.dead_letters", type="fanout", durable=True)

INGRESS = "ingress"
LLM = "llm"
DELIVERY = "delivery"

DELIVERY_LIMIT = 10
MAX_LENGTH = 1_000_000


def _dlx(name: str) -> Exchange:
    return Exchange(f"{name}.dlx", type="fanout", durable=True)


def _quorum_args(name: str) -> dict[str, object]:
    return {
        "x-queue-type": "quorum",
        "x-dead-letter-exchange": f"{name}.dlx",
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
        "x-delivery-limit": DELIVERY_LIMIT,
        "x-max-length": MAX_LENGTH,
    }


def work_queue(name: str) -> Queue:
    return Queue(name, WORK_EXCHANGE, routing_key=name, durable=True, queue_arguments=_quorum_args(name))


def dead_letter_queue(name: str) -> Queue:
    return Queue(
        f"{name}.dlq",
        _dlx(name),
        routing_key="",
        durable=True,
        queue_arguments={"x-queue-type": "quorum", "x-max-length": MAX_LENGTH, "x-overflow": "reject-publish"},
    )


WORK_QUEUES = (work_queue(INGRESS), work_queue(LLM), work_queue(DELIVERY))
DEAD_LETTER_QUEUES = tuple(dead_letter_queue(q.name) for q in WORK_QUEUES)
DEAD_LETTER_EVENTS_QUEUE = Queue(
    "extraction.dead_letters",
    DEAD_LETTER_EVENTS_EXCHANGE,
    routing_key="",
    durable=True,
    queue_arguments={"x-queue-type": "quorum", "x-max-length": MAX_LENGTH, "x-overflow": "reject-publish"},
)
ALL_QUEUES = (*WORK_QUEUES, *DEAD_LETTER_QUEUES, DEAD_LETTER_EVENTS_QUEUE)


def declare_topology(connection: Connection) -> None:
    """Declare every exchange, queue and binding; safe to run any number of times."""
    channel = connection.default_channel
    for queue in ALL_QUEUES:
        queue(channel).declare()


def queue_depth(connection: Connection, name: str) -> int:
    """Ready messages in a queue (a passive declare: never creates it)."""
    channel: Any = connection.default_channel  # kombu's StdChannel type omits the AMQP methods
    _, message_count, _ = channel.queue_declare(queue=name, passive=True)
    return int(message_count)
