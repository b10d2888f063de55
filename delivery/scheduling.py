"""The durable scheduler's part of delivery: the rows decide, the hints only wake consumers.

Each round of the scheduler (``SCHEDULER_APP_SWEEPS``, or ``manage.py run_delivery_scheduler``)
reaps the SENDING leases whose sender vanished and publishes a dispatch hint (the
``delivery.dispatch`` task, which runs :func:`delivery.dispatch.deliver`) for each due delivery
of an endpoint that may be sent to now; a hint that was lost is sent again after
``REHINT_SECONDS``. Fan-out, endpoint verification and redelivery publish their hints here too,
after their COMMIT.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from pathlib import Path

from django.db import connection, transaction
from kombu import Connection

from config.outages import Outage
from config.sql import load_statements
from config.topology import DELIVERY, queue_depth
from delivery.dispatch import DISPATCH_TASK

SQL = load_statements(Path(__file__).with_suffix(".sql"))
logger = logging.getLogger("delivery")

# A hinted delivery is not hinted again for this long (the hint may still be queued).
REHINT_SECONDS = 30.0
SCHEDULE_CAP = 500


def reap_expired_delivery_leases(*, limit: int = 500) -> int:
    """SENDING rows whose sender vanished: the outcome is unknown, so the same delivery (same
    webhook-id) goes again; the receiver's inbox absorbs a duplicate."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["reap_expired_leases"],
            {
                "limit": limit,
            },
        )
        return cursor.rowcount


def take_due_deliveries(*, limit: int) -> list[uuid.UUID]:
    """Due deliveries whose endpoint may be sent to now, not hinted in the last
    ``REHINT_SECONDS``; marks them hinted (uses ``delivery_due_idx``)."""
    if limit <= 0:
        return []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["take_due_deliveries"],
            {
                "rehint": REHINT_SECONDS,
                "limit": limit,
            },
        )
        return [row[0] for row in cursor.fetchall()]


def publish_dispatch_hints(delivery_ids: Iterable[uuid.UUID], *, broker: Connection | None = None) -> int:
    """Publish one ``delivery.dispatch`` message per id. Hints only: a failure is logged and
    the scheduler re-hints from PostgreSQL."""
    from config.celery import app

    sent = 0
    try:
        for delivery_id in delivery_ids:
            app.send_task(
                DISPATCH_TASK,
                kwargs={"delivery_id": str(delivery_id)},
                queue=DELIVERY,
                routing_key=DELIVERY,
                connection=broker,
            )
            sent += 1
    except Exception as exc:  # noqa: BLE001 - Outage.failed logs a bug with its traceback
        _hint_broker.failed(exc, consequence="delivery hints are dropped; the scheduler hints due deliveries again")
    else:
        _hint_broker.succeeded()
    return sent


_hint_broker = Outage(logger, "RabbitMQ (delivery hints)")


def schedule_due_deliveries(broker: Connection) -> int:
    """The scheduler tick's delivery sweep. Returns the hints published.

    1. Reap expired SENDING leases (unknown outcome → PENDING, same id).
    2. Take due deliveries of sendable endpoints, as many as the delivery queue has room for
       (waiting messages count against ``SCHEDULE_CAP``, so an outage's backlog is not
       re-published every tick), and publish a dispatch hint for each.
    """
    reap_expired_delivery_leases()
    room = SCHEDULE_CAP - queue_depth(broker, DELIVERY)
    return publish_dispatch_hints(take_due_deliveries(limit=room), broker=broker)
