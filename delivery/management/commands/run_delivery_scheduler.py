"""A stand-alone loop of the delivery sweep, for deployments (and tests) whose durable
scheduler does not call :func:`delivery.dispatch.schedule_due_deliveries` itself. Running
both is harmless: the hints are deduplicated by the rows."""
from __future__ import annotations

import logging

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection
from kombu import Connection

from config.topology import declare_topology
from delivery.dispatch import schedule_due_deliveries
from extraction.management.commands._signals import stop_event_on_signals

logger = logging.getLogger("delivery")


class Command(BaseCommand):
    help = "Publish dispatch hints for due webhook deliveries and reap expired delivery leases."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one sweep, then exit")
        parser.add_argument("--interval", type=float, default=None)

    def handle(self, *args, once: bool, interval: float | None, **options):
        stop = stop_event_on_signals()
        interval = settings.SCHEDULER_INTERVAL_SECONDS if interval is None else interval
        broker: Connection | None = None
        while not stop.is_set():
            try:
                if broker is None:
                    broker = Connection(settings.BROKER_URL, connect_timeout=5)
                    broker.ensure_connection(max_retries=1)
                    declare_topology(broker)  # the sweep asks the delivery queue's depth
                schedule_due_deliveries(broker)
            except Exception:  # noqa: BLE001 - DB or broker down: keep sweeping once they return
                logger.exception("delivery sweep failed")
                if broker is not None:
                    broker.release()
                broker = None
            finally:
                connection.close()
            if once:
                break
            stop.wait(interval)
        if broker is not None:
            broker.release()
