from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.module_loading import import_string

from config import probes
from config.signals import stop_event_on_signals
from config.tracing import configure_tracing
from extraction.eventlog.consumer import DurablePrefixConsumer


class Command(BaseCommand):
    help = (
        "Consume the event log (EVENT_TRANSPORT=kafka): each record's durable step first, then the "
        "partition's contiguous durable prefix committed. NAME is a key of KAFKA_CONSUMERS."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", choices=sorted(settings.KAFKA_CONSUMERS))
        parser.add_argument("--threads", type=int, default=settings.KAFKA_CONSUMER_THREADS)
        parser.add_argument("--max-in-flight", type=int, default=settings.KAFKA_CONSUMER_MAX_IN_FLIGHT)

    def handle(self, *args: Any, name: str, threads: int, max_in_flight: int, **options: Any) -> None:
        if threads < 1 or max_in_flight < 1:
            raise CommandError("--threads and --max-in-flight must be at least 1")
        spec: dict[str, Any] = settings.KAFKA_CONSUMERS[name]
        configure_tracing(name)
        probes.start_probe_server()
        consumer = DurablePrefixConsumer(
            group_id=spec["group"],
            topics=spec["topics"],
            handler=import_string(spec["handler"]),
            threads=threads,
            max_in_flight=max_in_flight,
            name=name,
        )
        consumer.run(stop_event_on_signals())
