from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from config import probes
from config.tracing import configure_tracing
from extraction.notify.notifier import Notifier


class Command(BaseCommand):
    help = "Notifier: committed job_events rows → 'job changed' notices on the channel layer (LISTEN + poll)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="forward what is there, then exit")
        parser.add_argument("--poll", type=float, default=None, help="fallback poll interval in seconds")

    def handle(self, *args: Any, once: bool, poll: float | None, **options: Any) -> None:
        configure_tracing("notifier")
        probes.start_probe_server()
        asyncio.run(self._run(once=once, poll=poll))

    async def _run(self, *, once: bool, poll: float | None) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        notifier = Notifier(poll_interval=poll if poll is not None else settings.NOTIFY_POLL_SECONDS)
        await notifier.run(stop, once=once)
