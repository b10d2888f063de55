from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from config import probes
from config.signals import stop_event_on_signals
from config.tracing import configure_tracing
from extraction.execution.scheduler import run_scheduler


class Command(BaseCommand):
    help = "Durable scheduler: reap expired leases, expire deadlines, recover lost ingress, wake workers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="one sweep, then exit")
        parser.add_argument("--interval", type=float, default=None)

    def handle(self, *args: Any, once: bool, interval: float | None, **options: Any) -> None:
        configure_tracing("scheduler")
        probes.start_probe_server()
        run_scheduler(stop=stop_event_on_signals(), interval=interval, once=once)
