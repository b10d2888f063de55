"""A stand-alone loop of the delivery sweep, for deployments (and tests) whose durable
scheduler does not call :func:`delivery.scheduling.schedule_due_deliveries` itself. Running
both is harmless: the hints are deduplicated by the rows."""

from __future__ import annotations

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection
from kombu import Connection

from config.signals import stop_event_on_signals
from config.sweeps import sweep_forever
from config.tracing import configure_tracing
from delivery.scheduling import schedule_due_deliveries

logger = logging.getLogger("delivery")


class Command(BaseCommand):
    help = "Publish dispatch hints for due webhook deliveries and reap expired delivery leases."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="one sweep, then exit")
        parser.add_argument("--interval", type=float, default=None)

    def handle(self, *args: Any, once: bool, interval: float | None, **options: Any) -> None:
        configure_tracing("delivery-scheduler")
        sweep_forever(_sweep, stop=stop_event_on_signals(), interval=interval, once=once, log=logger, name="delivery")


def _sweep(broker: Connection) -> None:
    try:
        schedule_due_deliveries(broker)
    finally:
        connection.close()  # between sweeps this process holds no database connection
