"""Connections to RabbitMQ, for the processes that hold their own (the relay, the sweeps, the
probes and /metrics); Celery's connections read the same settings.

``BROKER_URL`` is one AMQP URL or a ``;``-separated list, one per cluster node. kombu keeps the
list as alternates: a connection starts at the first node and, when connecting fails, moves
round-robin to the next. A node that goes away under an open connection breaks it; its owner
drops it and connects again, which lands on a node that answers.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from kombu import Connection


def broker_connection(url: str | None = None, **options: Any) -> Connection:
    """A kombu connection (not yet connected) to ``url`` or ``BROKER_URL``, failing over
    between the nodes the URL lists, in their order."""
    return Connection(url or settings.BROKER_URL, failover_strategy="round-robin", **options)


def connect_to_a_node(connection: Connection, *, timeout: int | None = None) -> Connection:
    """Connect, trying each listed node once from where the connection stands; raise the last
    node's error if none answers. The caller's own loop decides when to try again."""
    # kombu's count is of retries after the first try; a single URL has no alternates.
    retries = max(0, len(connection.alt) - 1)
    connection.ensure_connection(max_retries=retries, interval_start=0, interval_step=0, timeout=timeout)
    return connection
