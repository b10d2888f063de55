"""RabbitMQ's queues as ``/metrics`` reports them: a service collector (config.metrics calls
``collect`` after its database transaction, since every figure here is a round trip to the
broker).

The broker only carries work, so these are not the backlog: a queue of depth 0 says nothing
about waiting jobs (``extraction_runnable_jobs`` and ``extraction_oldest_eligible_job_age_seconds``
say that, from PostgreSQL), and the relay's lag behind the outbox is
``extraction_outbox_publish_lag_seconds``. What the broker tells is where messages pile up
between the processes: a deep queue or one nobody consumes names the process that is missing or
slow, and a dead-letter queue with messages names messages a consumer refused.
"""

from __future__ import annotations

from typing import Any

from kombu import Connection
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from config.broker import broker_connection, connect_to_a_node
from config.topology import ALL_QUEUES

# A scrape waits this long at most for each step of the broker's answer (connect, then each
# read): a stalled broker makes the figures missing, not the scrape hang.
BROKER_TIMEOUT_SECONDS = 2


def collect() -> list[Metric]:
    up = GaugeMetricFamily("extraction_broker_up", "1 when RabbitMQ answered this scrape.")
    depth = GaugeMetricFamily(
        "extraction_broker_queue_depth",
        "Messages ready in the queue, not yet delivered to a consumer (RabbitMQ's count).",
        labels=["queue"],
    )
    consumers = GaugeMetricFamily(
        "extraction_broker_queue_consumers", "Consumers subscribed to the queue.", labels=["queue"]
    )
    try:
        with broker_connection(
            connect_timeout=BROKER_TIMEOUT_SECONDS,
            transport_options={"read_timeout": BROKER_TIMEOUT_SECONDS, "write_timeout": BROKER_TIMEOUT_SECONDS},
        ) as broker:
            connect_to_a_node(broker, timeout=BROKER_TIMEOUT_SECONDS)
            for queue in ALL_QUEUES:
                figures = _declared(broker, queue.name)
                if figures is not None:
                    depth.add_metric([queue.name], figures[0])
                    consumers.add_metric([queue.name], figures[1])
    except Exception:  # noqa: BLE001 - unreachable, refused or stalled: no figures, and up says why
        up.add_metric([], 0)
        return [up]
    up.add_metric([], 1)
    return [up, depth, consumers]


def _declared(broker: Connection, name: str) -> tuple[int, int] | None:
    """(ready messages, consumers) of a queue, by a passive declare (never creates it); None if
    the queue does not exist (or may not be read). A channel of its own: the broker closes the channel a missing
    queue was asked on."""
    channel: Any = broker.channel()  # kombu's StdChannel type omits the AMQP methods
    try:
        _, messages, listeners = channel.queue_declare(queue=name, passive=True)
    except broker.channel_errors:
        return None
    finally:
        channel.close()
    return int(messages), int(listeners)
